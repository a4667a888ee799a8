"""The manager's side of the control plane: Runtimes (status, finalizer), and per Runtime its
`GardenerCluster` and kubeconfig Secret `kubeconfig-<runtimeID>` (key `config`, labelled as KIM
labels it, so operator mode finds it by `operator.kyma-project.io/kyma-name`).

A new Secret is written before anything uses the new kubeconfig, and the old one stays valid
until it expires: a rotation never leaves a reader without working credentials. Kubeconfigs
never reach a log line or a message.
"""

from __future__ import annotations

import base64
import datetime as dt

from reconciler.errors import KubeApiError
from reconciler.infra.states import EXPIRES_AT, runtime_id
from reconciler.kube.cluster import Cluster
from reconciler.kube.finalizers import finalizer_patch
from reconciler.model.infrastructure import (
    API_VERSION,
    CLUSTER_NAME,
    COPIED_LABELS,
    FIELD_MANAGER,
    FORCE_ROTATION,
    KYMA_NAME,
    LAST_SYNC,
    MANAGED_BY,
    MANAGER,
    RUNTIME_ID,
    SHOOT_NAME,
)
from reconciler.model.kube_object import Body

MERGE_PATCH = "application/merge-patch+json"
INTERNAL = "operator.kyma-project.io/internal"
REGION = "kyma-project.io/region"
PLATFORM_REGION = "kyma-project.io/platform-region"
SKR_DOMAIN = "skr-domain"
"""On the GardenerCluster: the shoot's DNS domain (`spec.dns.domain`), as KIM writes it."""


def secret_name(runtime_id: str) -> str:
    return f"kubeconfig-{runtime_id}"


def _stamp(moment: dt.datetime) -> str:
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def labels_for(runtime: Body, shoot: str) -> dict[str, str]:
    """KIM's labels of the GardenerCluster and the kubeconfig Secret: the Runtime's descriptive
    ones (`COPIED_LABELS`; region and platform region from its spec, as KIM takes them), and
    derived from the Runtime itself the runtime id, the shoot name, the Kyma name (the runtime
    id: a Kyma is named after its runtime), managed-by, `operator.kyma-project.io/internal`,
    cluster-name. The Runtime's own `kyma-name` label is not copied: operator mode picks a
    Kyma's remote cluster by that label, and any author of a Runtime could set it to another
    Kyma's name."""
    meta = runtime["metadata"]
    source = meta.get("labels") or {}
    labels = {k: str(source[k]) for k in COPIED_LABELS if k in source}
    shoot_spec = (runtime.get("spec") or {}).get("shoot") or {}
    for label, field in ((REGION, "region"), (PLATFORM_REGION, "platformRegion")):
        if shoot_spec.get(field):
            labels[label] = str(shoot_spec[field])
    identity = runtime_id(runtime)
    labels.update(
        {
            KYMA_NAME: identity,
            RUNTIME_ID: identity,
            SHOOT_NAME: shoot,
            MANAGED_BY: MANAGER,
            INTERNAL: "true",
            CLUSTER_NAME: identity,
        }
    )
    return labels


def _ref(kind: str, namespace: str, name: str, api_version: str = API_VERSION) -> Body:
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": name, "namespace": namespace},
    }


class Kubeconfigs:
    def __init__(self, kcp: Cluster) -> None:
        self.kcp = kcp

    async def get_runtime(self, namespace: str, name: str) -> Body | None:
        live = await self.kcp.get(_ref("Runtime", namespace, name))
        return None if live is None else live.raw

    async def _patch(self, body: Body, patch: Body, *, status: bool = False) -> Body | None:
        """The object as patched (None: it is gone)."""
        meta = body["metadata"]
        info = await self.kcp.mapper.resolve(body["apiVersion"], body["kind"])
        path = info.path(meta["namespace"], meta["name"]) + ("/status" if status else "")
        try:
            answer = await self.kcp.client.request(
                "PATCH", path, body=patch, content_type=MERGE_PATCH
            )
        except KubeApiError as exc:
            if exc.status != 404:
                raise
            return None
        return answer if isinstance(answer, dict) else None

    async def set_status(self, runtime: Body, status: Body) -> None:
        """Write the status; the Runtime's resourceVersion and finalizers follow the answer, so
        a finalizer patch in the same pass is guarded by what the status write returned (not
        refused with 409 because of our own write)."""
        if runtime.get("status") == status:
            return
        answer = await self._patch(runtime, {"status": status}, status=True)
        runtime["status"] = status
        if answer is not None:
            meta, fresh = runtime["metadata"], answer.get("metadata") or {}
            meta["resourceVersion"] = fresh.get("resourceVersion", meta.get("resourceVersion"))
            meta["finalizers"] = list(fresh.get("finalizers") or [])

    async def set_finalizer(self, runtime: Body, finalizer: str, present: bool) -> None:
        """Add or remove one finalizer, guarded by the resourceVersion (409 when it moved)."""
        meta = runtime["metadata"]
        patch = finalizer_patch(meta, finalizer, present)
        if patch is None:
            return
        await self._patch(runtime, patch)
        meta["finalizers"] = patch["metadata"]["finalizers"]

    async def read(self, runtime: Body) -> tuple[Body | None, Body | None]:
        """The kubeconfig Secret and the GardenerCluster of a Runtime (None: missing)."""
        namespace, name = runtime["metadata"]["namespace"], runtime_id(runtime)
        secret = await self.kcp.get(_ref("Secret", namespace, secret_name(name), "v1"))
        cluster = await self.kcp.get(_ref("GardenerCluster", namespace, name))
        return (secret.raw if secret else None), (cluster.raw if cluster else None)

    async def write(
        self,
        runtime: Body,
        shoot: Body,
        kubeconfig: str,
        now: dt.datetime,
        expires: dt.datetime,
        *,
        rotated: bool,
    ) -> None:
        """The GardenerCluster (named after the runtime id, annotated with the shoot's domain),
        then the Secret with the new kubeconfig; a force-rotation annotation that asked for it
        is removed afterwards, and the GardenerCluster reports the Secret as KIM does."""
        namespace, name = runtime["metadata"]["namespace"], runtime_id(runtime)
        shoot_name = str(shoot["metadata"]["name"])
        labels = labels_for(runtime, shoot_name)
        secret_ref = {"name": secret_name(name), "namespace": namespace, "key": "config"}
        cluster = {
            **_ref("GardenerCluster", namespace, name),
            "spec": {"kubeconfig": {"secret": secret_ref}, "shoot": {"name": shoot_name}},
        }
        cluster["metadata"]["labels"] = labels
        domain = ((shoot.get("spec") or {}).get("dns") or {}).get("domain")
        if domain:
            cluster["metadata"]["annotations"] = {SKR_DOMAIN: str(domain)}
        live = await self.kcp.apply(cluster, field_manager=FIELD_MANAGER)
        secret = {
            **_ref("Secret", namespace, secret_name(name), "v1"),
            "type": "Opaque",
            "data": {"config": base64.b64encode(kubeconfig.encode()).decode()},
        }
        secret["metadata"]["labels"] = labels
        secret["metadata"]["annotations"] = {LAST_SYNC: _stamp(now), EXPIRES_AT: _stamp(expires)}
        await self.kcp.apply(secret, field_manager=FIELD_MANAGER)
        for owner in (live.raw, runtime):
            if (owner["metadata"].get("annotations") or {}).get(FORCE_ROTATION) is not None:
                await self._patch(owner, {"metadata": {"annotations": {FORCE_ROTATION: None}}})
        reason = "KubeconfigSecretRotated" if rotated else "KubeconfigSecretCreated"
        message = "Secret rotated successfully." if rotated else "Secret created successfully."
        condition = {
            "type": "KubeconfigManagement",
            "status": "True",
            "reason": reason,
            "message": message,
            "lastTransitionTime": _stamp(now),
        }
        status = {"state": "Ready", "conditions": [condition]}
        await self._patch(live.raw, {"status": status}, status=True)

    async def delete(self, runtime: Body) -> None:
        namespace, name = runtime["metadata"]["namespace"], runtime_id(runtime)
        await self.kcp.delete(_ref("Secret", namespace, secret_name(name), "v1"))
        await self.kcp.delete(_ref("GardenerCluster", namespace, name))
