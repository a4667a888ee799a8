"""The `sample` module (tests/fixtures/modules/sample-operator), built like the lifecycle
manager's e2e module `template-operator`, and the parts of a cluster it needs to come alive:

- `served(version)`: its raw manifest served over HTTP (a real server on loopback);
- `template`: its ModuleTemplate (a default resource `Sample`, an OCM component name);
- `module_alive(cluster)`: on the remote cluster, the kubelet's part (its operator's Pods get a
  kubelet's status, so the controller-manager makes the Deployment Available) and the module
  controller's part (`SampleController`): what `template-operator`'s controller does with the
  custom resources, without running its image.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from reconciler.devcluster import kubelet as fake_kubelet
from reconciler.errors import KubeApiError
from reconciler.kube.cluster import Cluster
from tests.helpers.http import serving
from tests.operator import modules

MANIFEST = Path(__file__).parents[1] / "fixtures" / "modules" / "sample-operator" / "manifest.yaml"
MODULE = "sample"
COMPONENT = "kyma-project.io/module/sample-operator"
GROUP = "operator.sample.example.com"
VERSION = f"{GROUP}/v1alpha1"
NAMESPACE = "sample-operator-system"
DEPLOYMENT = "sample-operator-controller-manager"
SHIPPED_MANAGED = "sample-operator-managed-resource"
DEFAULT_CR = "sample-yaml"
FINALIZER = f"{GROUP}/finalizer"
OWNER = f"{GROUP}/owner"
MERGE = "application/merge-patch+json"


def manifest(version: str) -> str:
    return MANIFEST.read_text().replace("{version}", version)


@contextlib.contextmanager
def served(versions: list[str]) -> Iterator[str]:
    """Serve `/sample-operator-<version>.yaml` for each version; yield the base URL."""
    files = {f"/sample-operator-{v}.yaml": manifest(v).encode() for v in versions}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = files.get(self.path)
            self.send_response(200 if body else 404)
            payload = body or b"not found"
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: object) -> None:
            pass

    with serving(Handler) as url:
        yield url


def default_resource() -> dict[str, Any]:
    return {
        "apiVersion": VERSION,
        "kind": "Sample",
        "metadata": {"name": DEFAULT_CR},
        "spec": {"resourceFilePath": "./module-data/yaml"},
    }


def template(namespace: str, version: str, link: str) -> dict[str, Any]:
    """The module's ModuleTemplate: its raw manifest at `link`, the default resource `Sample`,
    an OCM component name."""
    body = modules.template(namespace, MODULE, version, Path(link))
    spec = body["spec"]
    spec["descriptor"] = {"component": {"name": COMPONENT, "version": version}}
    spec["data"] = default_resource()
    spec["resources"] = [{"name": "rawManifest", "link": link}]
    return body


def path(kind: str, namespace: str | None = None, name: str | None = None) -> str:
    plural = {"Sample": "samples", "Managed": "manageds"}[kind]
    where = f"/namespaces/{namespace}" if namespace else ""
    return f"/apis/{VERSION}{where}/{plural}" + (f"/{name}" if name else "")


class SampleController:
    """What the module's controller does, played on the remote cluster: a `Sample` gets its
    finalizer, `status.state: Ready` and a child `Managed` (holding the same finalizer); a
    deleted `Sample` (state `Deleting`) deletes its children and then lets go; a deleted
    `Managed` loses this controller's finalizer (others, such as a test's, stay)."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster

    async def _list(self, kind: str) -> list[dict[str, Any]]:
        try:
            listing = await self.cluster.client.request("GET", path(kind))
        except KubeApiError:
            return []  # the module's CRDs are not there (yet, or any more)
        items: list[dict[str, Any]] = listing.get("items") or []
        return items

    async def _patch(self, kind: str, item: dict[str, Any], body: dict[str, Any]) -> None:
        meta = item["metadata"]
        suffix = "/status" if "status" in body else ""
        try:
            await self.cluster.client.request(
                "PATCH",
                path(kind, meta.get("namespace"), meta["name"]) + suffix,
                body=body,
                content_type=MERGE,
            )
        except KubeApiError as exc:
            if exc.status not in (404, 409, 422):
                raise

    async def _let_go(self, kind: str, item: dict[str, Any]) -> None:
        finalizers = item["metadata"].get("finalizers") or []
        if FINALIZER in finalizers:
            kept = [f for f in finalizers if f != FINALIZER]
            meta = {"finalizers": kept, "resourceVersion": item["metadata"]["resourceVersion"]}
            await self._patch(kind, item, {"metadata": meta})

    async def step(self) -> None:
        samples = await self._list("Sample")
        manageds = await self._list("Managed")
        for managed in manageds:
            if managed["metadata"].get("deletionTimestamp"):
                await self._let_go("Managed", managed)
        for sample in samples:
            meta = sample["metadata"]
            children = [
                m
                for m in manageds
                if (m["metadata"].get("labels") or {}).get(OWNER) == meta["name"]
                and m["metadata"].get("namespace") == meta.get("namespace")
            ]
            if meta.get("deletionTimestamp"):
                if (sample.get("status") or {}).get("state") != "Deleting":
                    await self._patch("Sample", sample, {"status": {"state": "Deleting"}})
                for child in children:
                    with contextlib.suppress(KubeApiError):
                        await self.cluster.client.request(
                            "DELETE", path("Managed", meta["namespace"], child["metadata"]["name"])
                        )
                if not children:
                    await self._let_go("Sample", sample)
                continue
            if FINALIZER not in (meta.get("finalizers") or []):
                finalizers = [*(meta.get("finalizers") or []), FINALIZER]
                await self._patch("Sample", sample, {"metadata": {"finalizers": finalizers}})
            if (sample.get("status") or {}).get("state") != "Ready":
                await self._patch("Sample", sample, {"status": {"state": "Ready"}})
            if not children:
                child = {
                    "apiVersion": VERSION,
                    "kind": "Managed",
                    "metadata": {
                        "name": f"{meta['name']}-child",
                        "namespace": meta["namespace"],
                        "labels": {OWNER: meta["name"]},
                        "finalizers": [FINALIZER],
                    },
                }
                with contextlib.suppress(KubeApiError):  # created meanwhile
                    await self.cluster.client.request(
                        "POST", path("Managed", meta["namespace"]), body=child
                    )

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            await self.step()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 0.2)


@contextlib.asynccontextmanager
async def module_alive(cluster: Cluster) -> AsyncIterator[SampleController]:
    """The kubelet's and the module controller's parts on `cluster` during the block."""
    stop = asyncio.Event()
    controller = SampleController(cluster)
    tasks = [
        asyncio.create_task(fake_kubelet.run(cluster.client, namespace=NAMESPACE, stop=stop)),
        asyncio.create_task(controller.run(stop)),
    ]
    try:
        yield controller
    finally:
        stop.set()
        await asyncio.gather(*tasks)
