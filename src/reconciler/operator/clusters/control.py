"""The operator's resources on the control-plane cluster: read, list, apply, status, finalizers.

Plain REST through the core's `Cluster` (the same client, discovery and error mapping), so the
controllers need no second Kubernetes library: kopf only watches and dispatches.
"""

from __future__ import annotations

from reconciler.errors import KubeApiError
from reconciler.kube.cluster import Cluster
from reconciler.kube.discovery import ResourceInfo
from reconciler.kube.finalizers import finalizer_patch
from reconciler.model.kube_object import Body
from reconciler.model.lifecycle import API_VERSION, FIELD_MANAGER

MERGE_PATCH = "application/merge-patch+json"


class ControlPlane:
    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster

    async def _info(self, kind: str, api_version: str = API_VERSION) -> ResourceInfo:
        return await self.cluster.mapper.resolve(api_version, kind)

    async def get(self, kind: str, namespace: str, name: str) -> Body | None:
        info = await self._info(kind)
        try:
            body = await self.cluster.client.request("GET", info.path(namespace, name))
        except KubeApiError as exc:
            if exc.status == 404:
                return None
            raise
        return dict(body)

    async def list(
        self,
        kind: str,
        namespace: str,
        selector: str | None = None,
        api_version: str = API_VERSION,
    ) -> list[Body]:
        info = await self._info(kind, api_version)
        params = {"labelSelector": selector} if selector else None
        listing = await self.cluster.client.request("GET", info.path(namespace), params=params)
        return [dict(item) for item in listing.get("items", [])]

    async def apply(self, body: Body) -> Body:
        """Server-side apply of one of our resources (create or update its spec and labels)."""
        live = await self.cluster.apply(body, field_manager=FIELD_MANAGER)
        return live.raw

    async def delete(self, kind: str, namespace: str, name: str) -> None:
        await self.cluster.delete(
            {
                "apiVersion": API_VERSION,
                "kind": kind,
                "metadata": {"namespace": namespace, "name": name},
            }
        )

    async def patch(
        self, kind: str, namespace: str, name: str, patch: Body, *, status: bool = False
    ) -> None:
        info = await self._info(kind)
        path = info.path(namespace, name) + ("/status" if status else "")
        try:
            await self.cluster.client.request("PATCH", path, body=patch, content_type=MERGE_PATCH)
        except KubeApiError as exc:
            if exc.status != 404:  # gone meanwhile: nothing left to report on
                raise

    async def set_status(self, body: Body, status: Body) -> None:
        """Replace the status when it changed (a no-op write would still cost a request)."""
        if body.get("status") == status:
            return
        meta = body["metadata"]
        await self.patch(
            body["kind"], meta["namespace"], meta["name"], {"status": status}, status=True
        )
        body["status"] = status

    async def set_finalizer(self, body: Body, finalizer: str, present: bool) -> None:
        """Add or remove one finalizer, guarded by the resourceVersion (409 when it moved)."""
        meta = body["metadata"]
        patch = finalizer_patch(meta, finalizer, present)
        if patch is None:
            return
        await self.patch(body["kind"], meta["namespace"], meta["name"], patch)
        meta["finalizers"] = patch["metadata"]["finalizers"]
