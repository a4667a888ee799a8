"""An example module manager: a module team's own operator, run in the control plane.

It reads the ModuleConfigs of its module (the operator's copy of each remote cluster's module
custom resource `spec`) and writes one SyncResource per ModuleConfig holding what the remote
cluster should get: here a ConfigMap `<module>-settings` with the custom resource's top-level
spec fields as its data. The reconciler operator applies it to the Kyma's remote cluster. The
SyncResource is owned by its ModuleConfig, so it goes when the ModuleConfig goes.

    KUBECONFIG=<control plane> MODULE_NAME=alpha kopf run --standalone -n <ns> manager.py
"""

from __future__ import annotations

import json
import os
from typing import Any

import kopf
from lightkube import AsyncClient
from lightkube.generic_resource import create_namespaced_resource

GROUP, VERSION = "operator.kyma-project.io", "v1beta2"
MODULE = os.environ.get("MODULE_NAME", "alpha")
FIELD_MANAGER = f"{MODULE}-module-manager"
SyncResource = create_namespaced_resource(GROUP, VERSION, "SyncResource", "syncresources")


def sync_resource(config: kopf.Body) -> dict[str, Any]:
    """The SyncResource for one ModuleConfig: a pure function of it."""
    spec = config["spec"]
    settings = {
        key: value if isinstance(value, str) else json.dumps(value)
        for key, value in sorted((spec.get("config") or {}).items())
    }
    configmap = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": f"{MODULE}-settings", "labels": {"app.kubernetes.io/name": MODULE}},
        "data": settings,
    }
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "SyncResource",
        "metadata": {
            "name": f"{config.metadata.name}-sync",
            "namespace": config.metadata.namespace,
            "ownerReferences": [
                {
                    "apiVersion": f"{GROUP}/{VERSION}",
                    "kind": "ModuleConfig",
                    "name": config.metadata.name,
                    "uid": config.metadata.uid,
                }
            ],
        },
        "spec": {"kyma": spec["kyma"], "module": spec["module"], "objects": [configmap]},
    }


@kopf.on.startup()
async def startup(settings: kopf.OperatorSettings, memo: kopf.Memo, **_: Any) -> None:
    settings.posting.enabled = False
    memo.client = AsyncClient()


@kopf.on.cleanup()
async def cleanup(memo: kopf.Memo, **_: Any) -> None:
    await memo.client.close()


@kopf.on.event(GROUP, VERSION, "moduleconfigs", labels={f"{GROUP}/module-name": MODULE})
async def module_config_changed(
    type: str | None, body: kopf.Body, memo: kopf.Memo, logger: kopf.Logger, **_: Any
) -> None:
    if type == "DELETED":
        return  # its SyncResource is garbage-collected with it
    wanted = SyncResource.from_dict(sync_resource(body))
    await memo.client.apply(wanted, field_manager=FIELD_MANAGER, force=True)
    logger.info(f"SyncResource {wanted.metadata.name} written")
