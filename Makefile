# One-command set-up: every target builds .venv from pyproject.toml + constraints.txt when needed.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
PIN    := -c constraints.txt
SUDO   := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
LAB_FLAGS := $(if $(CI),--no-browser,)
PYTEST_ARGS ?=

.PHONY: lab test bench lint chromium clean help screenshots

help:
	@echo "make lab    - set up .venv and open JupyterLab on notebooks/00_tour.ipynb"
	@echo "make test   - set up .venv (+ test extras, Chromium) and run the whole suite"
	@echo "make bench  - run benchmarks/ and print ratios against their baselines"
	@echo "make lint   - ruff check + ruff format --check + mypy"
	@echo "make screenshots - regenerate README's images (docs/images) from the browser tests"

$(PY):
	$(PYTHON) -m venv $(VENV)

# torch goes in first and pinned, so nothing later can pull a CUDA build.
$(VENV)/.stamp-lab: pyproject.toml constraints.txt | $(PY)
	$(PIP) install $(PIN) "torch==2.13.0"
	$(PIP) install $(PIN) -e ".[lab]"
	touch $@

$(VENV)/.stamp-test: pyproject.toml constraints.txt | $(PY)
	$(PIP) install $(PIN) "torch==2.13.0"
	$(PIP) install $(PIN) -e ".[lab,test]"
	touch $@

chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "Installing Debian chromium for the browser tests"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq chromium >/dev/null; }

# `inspector lab` adds --allow-root when run as root and --no-browser under CI=true.
lab: $(VENV)/.stamp-lab
	$(PY) -m inspector lab $(LAB_FLAGS)

test: $(VENV)/.stamp-test chromium
	$(PY) -m pytest $(PYTEST_ARGS)

bench: $(VENV)/.stamp-test
	$(PY) benchmarks/run_all.py

# README's images, from the browser tests that take them (one at a time: they are heavy), at a laptop's
# window with the file browser open. Each image gets a <name>.labels.json beside it (its labels and the load
# average it was taken at); the browser tests fail when a tab's labels no longer match its image.
SHOT_TESTS := tests/browser/test_tour.py tests/browser/test_backends_tab.py tests/browser/test_loader_tab.py \
              tests/browser/test_rpc_tab.py
screenshots: $(VENV)/.stamp-test chromium
	@uptime
	@for test in $(SHOT_TESTS); do \
	  INSPECTOR_UPDATE_SCREENSHOTS=1 $(PY) -m pytest -p no:cacheprovider -q $$test || exit 1; done
	@$(PY) -c "import json, pathlib; [print(p.name, 'load average', json.loads(p.read_text())['load_average']) \
	  for p in sorted(pathlib.Path('docs/images').glob('*.labels.json'))]"

lint: $(VENV)/.stamp-test
	$(VENV)/bin/ruff check inspector tests benchmarks
	$(VENV)/bin/ruff format --check inspector tests benchmarks
	$(VENV)/bin/mypy

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
