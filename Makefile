# Two set-up commands for a fresh machine: `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The public benchmark files for tests and benchmarks (never committed; see README).
LEXSEM_TEST_DATA ?= $(abspath ../shared/data)
export LEXSEM_TEST_DATA

.PHONY: demo test test-latest test-lowest lock bench bench-gpu bench-peer train-demo fake-llm lint clean .peer-labelstudio

# Every venv and peer folder is installed from a checked-in lock (requirements.txt for .venv,
# compiled from pyproject.toml and requirements.in; locks/*.txt for the others: exact versions,
# sha256 hashes, one file for x86_64 and aarch64), never resolved on the day: pip installs
# locks/tools.txt (pip, setuptools), then the lock with --require-hashes --no-deps
# --no-build-isolation (a source-only package builds with the locked setuptools), then lexsem
# itself with --no-deps --no-build-isolation. torch and torchvision are a matched pair per
# architecture (requirements.in). `make lock` re-resolves the locks after an input changes;
# `make test-latest` tries the newest releases (docs/testing.md, "The locked environment").
LOCKS := locks
PIP_LOCKED := -m pip install -q --require-hashes --no-deps --no-build-isolation -r

$(STAMP): pyproject.toml Makefile $(LOCKS)/tools.txt requirements.txt
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python $(PIP_LOCKED) $(LOCKS)/tools.txt
	$(BIN)/python $(PIP_LOCKED) requirements.txt
	$(BIN)/python -m pip install -q --no-deps --no-build-isolation -e .
	$(BIN)/python scripts/lock_check.py requirements.txt
	touch $(STAMP)

# eval prints the results table and writes the run to runs/demo (`lexsem report runs/demo`
# prints the table again from it; tests/test_make_demo.py runs this recipe: one table)
demo: $(STAMP)
	HF_HUB_OFFLINE=1 $(BIN)/lexsem eval --model minilm --benchmark synthetic --out runs/demo --force

# The numeric tests (pytest -m numeric) again on other CPU kernel paths, so that a tolerance too
# tight for another CPU fails here (docs/testing.md): ATen's portable kernels, oneDNN capped at
# SSE4.1, MKL on its reproducible path (MKL_ENABLE_INSTRUCTIONS acts on Intel CPUs only),
# numpy's OpenBLAS on its oldest kernels, one thread.
ifeq ($(shell uname -m),aarch64)
OPENBLAS_OLDEST := ARMV8
else
OPENBLAS_OLDEST := Prescott
endif
KERNEL_PATHS := ATEN_CPU_CAPABILITY=default ONEDNN_MAX_CPU_ISA=SSE41 MKL_ENABLE_INSTRUCTIONS=SSE4_2 \
	MKL_CBWR=COMPATIBLE OPENBLAS_CORETYPE=$(OPENBLAS_OLDEST) OMP_NUM_THREADS=1

# The VQAScore reference's own code (t2v_metrics), installed with --no-deps into a folder of its
# own, never into the venv: tests/test_vqa_reference.py and tests/test_vqa_reference_code.py run
# it on tiny models as an oracle (tests/builders/t2v_reference.py finds it).
PEER_T2V := .bench-peer-t2v
$(PEER_T2V)/t2v_metrics: $(STAMP) $(LOCKS)/peer-t2v.txt
	$(BIN)/python $(PIP_LOCKED) $(LOCKS)/peer-t2v.txt --upgrade --target $(PEER_T2V)

# Label Studio (tests/test_labelstudio_real.py drives a real one through its API): its own venv,
# never the one the tests use (it pins its own Django and friends); CI installs it (.ci/run).
# Its version and every package under it come from locks/labelstudio.txt.
PEER_LABELSTUDIO := .peer-labelstudio
.peer-labelstudio: $(PEER_LABELSTUDIO)/.installed
$(PEER_LABELSTUDIO)/.installed: $(LOCKS)/tools.txt $(LOCKS)/labelstudio.txt
	test -x $(PEER_LABELSTUDIO)/bin/python || $(PY) -m venv $(PEER_LABELSTUDIO)
	$(PEER_LABELSTUDIO)/bin/python $(PIP_LOCKED) $(LOCKS)/tools.txt
	$(PEER_LABELSTUDIO)/bin/python $(PIP_LOCKED) $(LOCKS)/labelstudio.txt
	$(PEER_LABELSTUDIO)/bin/python scripts/lock_check.py $(LOCKS)/labelstudio.txt
	touch $@

test: $(STAMP) $(PEER_T2V)/t2v_metrics
	$(BIN)/ruff check src tests bench scripts
	$(BIN)/lint-imports
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest -q
	HF_HUB_OFFLINE=1 $(KERNEL_PATHS) $(BIN)/python -m pytest -q -m numeric

# `make lock`: re-resolve every lock from its inputs (pyproject.toml's extras and locks/*.in),
# keeping each pinned version that still fits; `make lock LOCK_ARGS=--upgrade` moves every
# package to its newest release, `LOCK_ARGS="--upgrade-package sentry-sdk"` one. One lock serves
# x86_64 and aarch64 and every Python from 3.11 (uv's universal resolution, with hashes).
# uv comes from locks/tools.txt, installed into a venv of its own.
LOCK_TOOLS := .lock-tools
LOCK_EXTRAS := --extra test --extra web --extra openclip
UV_COMPILE = UV_PYTHON_DOWNLOADS=never $(LOCK_TOOLS)/bin/uv pip compile -q --universal \
	--python-version 3.11 --generate-hashes --custom-compile-command "make lock" $(LOCK_ARGS)
$(LOCK_TOOLS)/.installed: $(LOCKS)/tools.txt
	test -x $(LOCK_TOOLS)/bin/python || $(PY) -m venv $(LOCK_TOOLS)
	$(LOCK_TOOLS)/bin/python $(PIP_LOCKED) $(LOCKS)/tools.txt
	touch $@

lock: $(LOCK_TOOLS)/.installed
	$(UV_COMPILE) $(LOCKS)/tools.in -o $(LOCKS)/tools.txt
	$(UV_COMPILE) pyproject.toml requirements.in $(LOCK_EXTRAS) -o requirements.txt
	$(UV_COMPILE) $(LOCKS)/labelstudio.in -o $(LOCKS)/labelstudio.txt
	$(UV_COMPILE) --no-deps $(LOCKS)/peer-t2v.in -o $(LOCKS)/peer-t2v.txt
	$(UV_COMPILE) --no-deps $(LOCKS)/peer-clip-benchmark.in -o $(LOCKS)/peer-clip-benchmark.txt

# `make test-latest`: the suite in throwaway venvs (under $(LATEST_DIR)) resolved on the day from
# the newest releases within pyproject.toml's ranges (and Label Studio's own requirements), then
# which packages moved against the locks and which tests broke. Not part of `make test` or CI.
# Narrow it with `make test-latest LATEST_ARGS="-- tests/test_labelstudio_real.py"`.
LATEST_DIR ?= $(abspath .latest)
test-latest: $(PEER_T2V)/t2v_metrics
	$(PY) scripts/test_latest.py --work $(LATEST_DIR) $(LATEST_ARGS)

# `make test-lowest`: the same on the lower bounds of pyproject.toml's ranges (uv's
# lowest-direct resolution), the run that keeps those bounds honest (docs/testing.md).
LOWEST_DIR ?= $(abspath .lowest)
test-lowest: $(PEER_T2V)/t2v_metrics .peer-labelstudio $(LOCK_TOOLS)/.installed
	$(PY) scripts/test_latest.py --lowest --work $(LOWEST_DIR) $(LATEST_ARGS)

bench: $(STAMP)
	HF_HUB_OFFLINE=1 $(BIN)/python bench/text_bench.py
	HF_HUB_OFFLINE=1 $(BIN)/python bench/image_bench.py --device cpu
	HF_HUB_OFFLINE=1 $(BIN)/python bench/floor_bench.py
	HF_HUB_OFFLINE=1 $(BIN)/python bench/vqa_bench.py
	HF_HUB_OFFLINE=1 $(BIN)/python bench/train_bench.py
	HF_HUB_OFFLINE=1 $(BIN)/python bench/annotate_bench.py
	HF_HUB_OFFLINE=1 $(BIN)/python bench/build_bench.py
	HF_HUB_OFFLINE=1 $(BIN)/python bench/sweep_bench.py
	HF_HUB_OFFLINE=1 $(BIN)/python bench/spread_bench.py
	HF_HUB_OFFLINE=1 $(BIN)/python bench/explore_bench.py
	HF_HUB_OFFLINE=1 $(BIN)/python bench/publish_bench.py

# on a machine with a CUDA GPU: 5000 generated JPEGs, ViT-B/32-size tower, bf16; then the text
# generation of `lexsem build` (chat:), and its image generation where a diffusers: backend
# exists (bench/build_gpu.py; docs/performance.md)
bench-gpu: $(STAMP)
	HF_HUB_OFFLINE=1 $(BIN)/python bench/image_bench.py --device cuda
	HF_HUB_OFFLINE=1 $(BIN)/python bench/build_gpu.py

# lexsem vs LAION's CLIP_benchmark on its own SugarCrepe task, all 7 subsets (~30 min on 2 cores;
# bench/peer_bench.py says what it compares). clip-benchmark is installed for this target only:
# into .bench-peer/ (with the few packages it needs that the venv lacks), never into the venv
# the tests use; only the CLIP_benchmark process has it on its path.
# A quick check: make bench-peer PEER_ARGS="--subsets swap_obj --limit 100"
PEER_SITE := .bench-peer
bench-peer: $(STAMP)
	test -d $(PEER_SITE)/clip_benchmark || $(BIN)/python $(PIP_LOCKED) \
		$(LOCKS)/peer-clip-benchmark.txt --target $(PEER_SITE)
	HF_HUB_OFFLINE=1 LEXSEM_PEER_SITE=$(abspath $(PEER_SITE)) $(BIN)/python bench/peer_bench.py \
		$(PEER_ARGS)

# a tiny CLIP trained on rendered scenes under three regimes, judged on synthetic and
# synthetic_bi (docs/training.md); CPU, offline, a few minutes
train-demo: $(STAMP)
	HF_HUB_OFFLINE=1 $(BIN)/python scripts/train_demo.py --out runs/train-demo-$$(date +%Y%m%d-%H%M%S)

# a fake OpenAI-compatible chat server on 127.0.0.1 whose answers are rules, not a model: the
# LLM recipes run offline with --generator 'openai:lexsem-fake?base_url=http://127.0.0.1:8001/v1'
# (docs/building.md, "Running the LLM recipes"); `make fake-llm FAKE_LLM_PORT=8002` for another
FAKE_LLM_PORT ?= 8001
fake-llm: $(STAMP)
	$(BIN)/python -m lexsem.fake_llm --port $(FAKE_LLM_PORT)

lint: $(STAMP)
	$(BIN)/ruff check src tests bench scripts
	$(BIN)/ruff format --check src tests bench scripts

clean:
	rm -rf $(VENV) $(PEER_SITE) $(PEER_T2V) $(PEER_LABELSTUDIO) $(LOCK_TOOLS) .latest .lowest runs .pytest_cache
