"""Where a module goes: `module_namespace` with `{kyma}` (many Kymas on one cluster)."""

from __future__ import annotations

from reconciler.operator.controllers.manifests import ManifestController
from reconciler.operator.settings import OperatorSettings


def _controller(module_namespace: str) -> ManifestController:
    settings = OperatorSettings(module_namespace=module_namespace)
    return ManifestController(None, None, None, settings)  # type: ignore[arg-type]


def test_the_module_namespace_may_name_the_kyma() -> None:
    body = {"metadata": {"labels": {"operator.kyma-project.io/kyma-name": "k7"}}}
    assert _controller("{kyma}")._namespace(body) == "k7"
    assert _controller("kyma-system")._namespace(body) == "kyma-system"
