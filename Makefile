# Two set-up commands for a fresh machine: `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The public benchmark files for tests and benchmarks (never committed; see README).
LEXSEM_TEST_DATA ?= $(abspath ../shared/data)
export LEXSEM_TEST_DATA

.PHONY: demo test bench lint clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	# torch first and pinned: on the development machines this is the local CPU build;
	# elsewhere it is the regular PyPI wheel.
	$(BIN)/python -m pip install -q "torch==2.13.0"
	$(BIN)/python -m pip install -q -e ".[test,web]"
	touch $(STAMP)

demo: $(STAMP)
	HF_HUB_OFFLINE=1 $(BIN)/lexsem eval --model minilm --benchmark synthetic --out runs/demo
	$(BIN)/lexsem report runs/demo

test: $(STAMP)
	$(BIN)/ruff check src tests bench
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest -q

bench: $(STAMP)
	HF_HUB_OFFLINE=1 $(BIN)/python bench/text_bench.py

lint: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench

clean:
	rm -rf $(VENV) runs .pytest_cache
