"""Operator mode: Kyma, ModuleTemplate, ModuleReleaseMeta and Manifest resources, reconciled by
the same component core the CLI and the mothership use (see docs/operator.md)."""
