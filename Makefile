# Everything installs what it needs itself (idempotently): a fresh Debian machine needs only make
# and python3. The first run builds the Kubernetes test bed (about 5-15 minutes, cached after).
VENV ?= .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin
# The slowest tests are listed at the end, so CI logs show where the time budget goes.
PYTEST_ARGS ?= --durations=30

.PHONY: help setup testbed lint typecheck test demo demo-infra demo-down clean image

help:
	@echo "make demo   dev cluster + sample component set (CLI), the mothership reconciling it, then"
	@echo "            operator mode: the example catalog + Kyma reconciled by 'reconciler operator run'"
	@echo "make demo-infra  Runtime -> simulated Gardener Shoot -> kubeconfig Secret -> operator installs a module on it"
	@echo "make test   lint, type-check and run the whole test suite against the real test bed"
	@echo "make image  the OCI image (no daemon; docs/deploy.md), IMAGE_PUSH=host:port/repo:tag to push"

$(VENV)/.installed: pyproject.toml constraints.txt examples/actions/pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c constraints.txt -e '.[dev]' -e examples/actions
	touch $@

setup: $(VENV)/.installed

testbed: setup
	$(BIN)/reconciler dev-cluster build
	$(PY) -c "from reconciler.devcluster.postgres import ensure_installed; ensure_installed()"
	$(PY) -c "from reconciler.devcluster.registry import ensure_installed; ensure_installed()"
	$(PY) -c "from reconciler.devcluster.chromium import ensure_installed; ensure_installed()"

lint: setup
	$(BIN)/ruff check src tests benchmarks examples
	$(BIN)/ruff format --check src tests benchmarks examples

typecheck: setup
	$(BIN)/mypy

test: testbed lint typecheck
	$(BIN)/pytest $(PYTEST_ARGS)

DEMO_DIR ?= $(HOME)/.cache/reconciler/dev-cluster

demo: testbed
	BIN=$(BIN) DEMO_DIR=$(DEMO_DIR) scripts/demo.sh

demo-infra: testbed
	BIN=$(BIN) DEMO_DIR=$(DEMO_DIR) scripts/demo-infra.sh

demo-down: setup
	-@for p in mothership operator gardener infra; do if [ -f $(DEMO_DIR)/$$p.pid ]; then kill $$(cat $(DEMO_DIR)/$$p.pid) 2>/dev/null; rm -f $(DEMO_DIR)/$$p.pid; fi; done
	-@if [ -d $(DEMO_DIR)/shoot ]; then $(BIN)/reconciler dev-cluster down --dir $(DEMO_DIR)/shoot; fi
	$(BIN)/reconciler dev-cluster down --dir $(DEMO_DIR)

IMAGE_PUSH ?=
# The OCI image, built without a daemon from Debian packages and wheels, cached by input digest
# in ~/.cache/reconciler/image (an OCI image layout); docs/deploy.md.
image: setup
	$(PY) -m reconciler.devcluster.image $(if $(IMAGE_PUSH),--push $(IMAGE_PUSH))

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache

.PHONY: bench
# Benchmarks (docs/benchmarks.md): each starts its own test-bed cluster and prints its ratios
# and peak memory; results are kept in benchmarks/results/ (git-ignored).
bench: testbed
	$(PY) benchmarks/bench_apply_vs_helm.py
	$(PY) benchmarks/bench_fanout.py
	$(PY) benchmarks/bench_set.py
