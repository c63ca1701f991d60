# Two set-up commands for a fresh machine: `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The public benchmark files for tests and benchmarks (never committed; see README).
LEXSEM_TEST_DATA ?= $(abspath ../shared/data)
export LEXSEM_TEST_DATA

.PHONY: demo test bench bench-gpu bench-peer train-demo lint clean .peer-labelstudio

# torch and torchvision first, as a matching pair, so that every backend (open_clip needs
# torchvision) is installed and tested: a CPU-only torch build cannot load PyPI's torchvision.
# Override with `make TORCH_PKGS="torch==X torchvision==Y" test`.
ifeq ($(shell uname -m),aarch64)
TORCH_PKGS ?= torch==2.9.1 torchvision==0.24.1
else
TORCH_PKGS ?= torch==2.14.1 torchvision==0.29.1
endif

$(STAMP): pyproject.toml Makefile
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q $(TORCH_PKGS)
	$(BIN)/python -m pip install -q -e ".[test,web,openclip]"
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
T2V_METRICS ?= t2v-metrics==3.0 qwen-vl-utils==0.0.14
PEER_T2V := .bench-peer-t2v
$(PEER_T2V)/t2v_metrics: $(STAMP)
	$(BIN)/python -m pip install -q --no-deps --target $(PEER_T2V) $(T2V_METRICS)

# Label Studio (tests/test_labelstudio_real.py drives a real one through its API): its own venv,
# never the one the tests use (it pins its own Django and friends); CI installs it (.ci/run)
LABEL_STUDIO ?= label-studio==1.23.2
PEER_LABELSTUDIO := .peer-labelstudio
.peer-labelstudio: $(PEER_LABELSTUDIO)/bin/label-studio
$(PEER_LABELSTUDIO)/bin/label-studio:
	test -x $(PEER_LABELSTUDIO)/bin/python || $(PY) -m venv $(PEER_LABELSTUDIO)
	$(PEER_LABELSTUDIO)/bin/python -m pip install -q $(LABEL_STUDIO)

test: $(STAMP) $(PEER_T2V)/t2v_metrics
	$(BIN)/ruff check src tests bench scripts
	$(BIN)/lint-imports
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest -q
	HF_HUB_OFFLINE=1 $(KERNEL_PATHS) $(BIN)/python -m pytest -q -m numeric

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
CLIP_BENCHMARK ?= clip-benchmark==1.6.2 pycocoevalcap pycocotools webdataset braceexpand
PEER_SITE := .bench-peer
bench-peer: $(STAMP)
	test -d $(PEER_SITE)/clip_benchmark || $(BIN)/python -m pip install -q --no-deps \
		--target $(PEER_SITE) $(CLIP_BENCHMARK)
	HF_HUB_OFFLINE=1 LEXSEM_PEER_SITE=$(abspath $(PEER_SITE)) $(BIN)/python bench/peer_bench.py \
		$(PEER_ARGS)

# a tiny CLIP trained on rendered scenes under three regimes, judged on synthetic and
# synthetic_bi (docs/training.md); CPU, offline, a few minutes
train-demo: $(STAMP)
	HF_HUB_OFFLINE=1 $(BIN)/python scripts/train_demo.py --out runs/train-demo-$$(date +%Y%m%d-%H%M%S)

lint: $(STAMP)
	$(BIN)/ruff check src tests bench scripts
	$(BIN)/ruff format --check src tests bench scripts

clean:
	rm -rf $(VENV) $(PEER_SITE) $(PEER_LABELSTUDIO) runs .pytest_cache
