# One-command set-up: every target builds .venv from pyproject.toml + constraints.txt when needed.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
PIN    := -c constraints.txt
SUDO   := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
LAB_FLAGS := $(if $(CI),--no-browser,)
PYTEST_ARGS ?=

.PHONY: lab test bench lint chromium clean help

help:
	@echo "make lab    - set up .venv and open JupyterLab on notebooks/00_tour.ipynb"
	@echo "make test   - set up .venv (+ test extras, Chromium) and run the whole suite"
	@echo "make bench  - run benchmarks/ and print ratios against their baselines"
	@echo "make lint   - ruff + mypy on inspector/"

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

lint: $(VENV)/.stamp-test
	$(VENV)/bin/ruff check inspector tests benchmarks
	$(VENV)/bin/mypy

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
