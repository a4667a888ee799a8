# Everything installs what it needs itself (idempotently): a fresh Debian machine needs only make
# and python3. The first run builds the Kubernetes test bed (about 5-15 minutes, cached after).
VENV ?= .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin
PYTEST_ARGS ?=

.PHONY: help setup testbed lint typecheck test demo demo-down clean

help:
	@echo "make demo   start a local dev cluster and deploy the sample component set to it"
	@echo "make test   lint, type-check and run the whole test suite against the real test bed"

$(VENV)/.installed: pyproject.toml constraints.txt examples/actions/pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c constraints.txt -e '.[dev]' -e examples/actions
	touch $@

setup: $(VENV)/.installed

testbed: setup
	$(BIN)/reconciler dev-cluster build
	$(PY) -c "from reconciler.devcluster.postgres import ensure_installed; ensure_installed()"

lint: setup
	$(BIN)/ruff check src tests
	$(BIN)/ruff format --check src tests

typecheck: setup
	$(BIN)/mypy

test: testbed lint typecheck
	$(BIN)/pytest $(PYTEST_ARGS)

DEMO_DIR ?= $(HOME)/.cache/reconciler/dev-cluster

demo: testbed
	$(BIN)/reconciler dev-cluster up --dir $(DEMO_DIR)
	$(BIN)/reconciler deploy --kubeconfig $(DEMO_DIR)/kubeconfig --workspace examples/kyma-like --profile evaluation
	@echo "Deployed. Try: $(BIN)/reconciler diff --kubeconfig $(DEMO_DIR)/kubeconfig -w examples/kyma-like"
	@echo "Stop with: make demo-down"

demo-down: setup
	$(BIN)/reconciler dev-cluster down --dir $(DEMO_DIR)

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
