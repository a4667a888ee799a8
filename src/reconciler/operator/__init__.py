"""Operator mode: Kyma, ModuleTemplate, ModuleReleaseMeta and Manifest resources, reconciled by
the same component core the CLI and the mothership use (see docs/operator.md).

Its wings, highest first (`docs/architecture.md` lists them; `tests/test_architecture.py`
holds the imports to them): `runtime/` wires `controllers/` and `watcher/` together, which use
`catalog/`, which uses `clusters/`; `settings.py`, `metrics.py` and `settled.py` serve them all."""
