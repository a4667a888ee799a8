"""REST mapping from discovery: which URL serves a given apiVersion + kind on this cluster.

Discovery is read lazily and cached per client; a miss (e.g. right after a CRD was applied)
refreshes the cache once before failing with a message that names the kind, the version asked
for and the versions of that group the cluster does serve.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass

from reconciler.errors import ApplyError, KubeApiError
from reconciler.kube.client import METADATA_LIST, KubeClient


@dataclass(frozen=True)
class ResourceInfo:
    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(self, namespace: str | None = None, name: str | None = None) -> str:
        """Collection (or, with `name`, object) URL; `namespace=None` lists across namespaces."""
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        return f"{base}/{name}" if name else base


class RestMapper:
    """Discovery cache of one cluster."""

    def __init__(self, client: KubeClient) -> None:
        self._client = client
        self._lock = asyncio.Lock()
        self._groups: dict[str, list[str]] | None = None
        self._resources: dict[str, dict[str, ResourceInfo]] = {}
        self._loading: dict[str, asyncio.Task[dict[str, ResourceInfo]]] = {}
        self._fingerprint: str | None = None
        self._fingerprint_lock = asyncio.Lock()

    def invalidate(self) -> None:
        self._groups = None
        self._resources.clear()
        self._loading.clear()
        self._fingerprint = None

    def invalidate_groups(self, groups: Iterable[str]) -> None:
        """Forget what new or changed CRDs of `groups` may have changed: the served groups and
        versions and those groups' resources. Not `invalidate`: Helm's capabilities list every
        group version's kinds, so a full reset after each CRD batch cost the next render one
        discovery request per group version of the cluster (~45), not one per new group."""
        for group in set(groups):
            self._invalidate_group(group)

    def _invalidate_group(self, group: str) -> None:
        """Forget what may have changed for a kind of `group` that was not found: the served
        groups and versions and that group's resources (a new CRD adds nothing elsewhere).
        Every other group version stays cached: an unserved kind (a chart for a newer
        Kubernetes) used to cost a full re-discovery for every resolve running at that time."""
        self._groups = None
        self._fingerprint = None
        prefix = f"{group}/" if group else ""
        for key in [k for k in (*self._resources, *self._loading) if _in_group(k, prefix)]:
            self._resources.pop(key, None)
            self._loading.pop(key, None)

    async def fingerprint(self) -> str:
        """Changes whenever `api_versions` may, for 4 requests instead of one per group version:
        the served groups and versions, and the generation of every CRD and APIService (the
        only ways a cluster gains kinds). The no-op fast path digests this, not the full list."""
        async with self._fingerprint_lock:
            if self._fingerprint is None:
                self._fingerprint = await self._compute_fingerprint()
            return self._fingerprint

    async def revalidate(self) -> bool:
        """Keep the cached discovery only if the cluster's fingerprint did not move since it was
        read: a mapper shared by the operations of one cluster (`kube.clients`) then answers
        `api_versions` as a fresh one would, for 4 requests instead of one per group version.
        Returns whether the cache was kept. A fingerprint that cannot be read (no permission
        to list CRDs) forgets everything: discovery is then read afresh, as without sharing."""
        kept = self._fingerprint
        async with self._fingerprint_lock:
            self._fingerprint = None
            async with self._lock:
                self._groups = None  # the fingerprint's groups are read afresh
            try:
                fresh = await self._compute_fingerprint()
            except KubeApiError:
                self.invalidate()
                return False
            if fresh == kept:
                self._fingerprint = fresh
                return True
            groups = self._groups
            self.invalidate()
            self._groups, self._fingerprint = groups, fresh
            return False

    async def _compute_fingerprint(self) -> str:
        groups = await self._load_groups()
        crds, services = await asyncio.gather(
            self._generations("/apis/apiextensions.k8s.io/v1/customresourcedefinitions"),
            self._generations("/apis/apiregistration.k8s.io/v1/apiservices"),
        )
        text = json.dumps([groups, crds, services], sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()

    async def _generations(self, path: str) -> list[tuple[str, int]]:
        try:
            listing = await self._client.request("GET", path, accept=METADATA_LIST)
        except KubeApiError as exc:
            if exc.status == 404:
                return []
            raise
        found = [
            (str(meta.get("name", "")), int(meta.get("generation") or 0))
            for meta in (item.get("metadata") or {} for item in listing.get("items") or [])
        ]
        return sorted(found)

    async def _load_groups(self) -> dict[str, list[str]]:
        async with self._lock:
            if self._groups is None:
                core, apis = await asyncio.gather(
                    self._client.request("GET", "/api"), self._client.request("GET", "/apis")
                )
                groups = {"": list(core.get("versions", []))}
                for group in apis.get("groups", []):
                    preferred = group.get("preferredVersion", {}).get("version")
                    versions = [v["version"] for v in group.get("versions", [])]
                    if preferred in versions:
                        versions.remove(preferred)
                        versions.insert(0, preferred)
                    groups[group["name"]] = versions
                self._groups = groups
            return self._groups

    async def _load_resources(self, group: str, version: str) -> dict[str, ResourceInfo]:
        """One group version's kinds; concurrent callers share one request (single flight)."""
        key = f"{group}/{version}" if group else version
        if key in self._resources:
            return self._resources[key]
        task = self._loading.get(key)
        if task is None:
            task = asyncio.ensure_future(self._fetch_resources(group, version, key))
            self._loading[key] = task
        try:
            return await asyncio.shield(task)
        finally:
            if task.done() and self._loading.get(key) is task:
                del self._loading[key]

    async def _fetch_resources(self, group: str, version: str, key: str) -> dict[str, ResourceInfo]:
        path = f"/apis/{key}" if group else f"/api/{version}"
        try:
            listing = await self._client.request("GET", path)
        except KubeApiError as exc:
            if exc.status in (404, 503):  # not served (yet), or an unavailable APIService
                return {}
            raise
        found = {
            r["kind"]: ResourceInfo(group, version, r["kind"], r["name"], r["namespaced"])
            for r in listing.get("resources", [])
            if "/" not in r["name"]  # skip subresources such as deployments/status
        }
        if self._loading.get(key) is asyncio.current_task():  # not invalidated meanwhile
            self._resources[key] = found
        return found

    async def resolve(self, api_version: str, kind: str) -> ResourceInfo:
        """The resource serving `kind` in `api_version`; ApplyError when the cluster has none."""
        group, _, version = api_version.rpartition("/")
        for attempt in range(2):
            groups = await self._load_groups()
            if version in groups.get(group, []):
                found = (await self._load_resources(group, version)).get(kind)
                if found is not None:
                    return found
            if attempt == 0:
                self._invalidate_group(group)
        raise ApplyError(
            f"kind {kind} in {api_version} is not served by this cluster; "
            + await self._served_instead(group, kind)
        )

    async def _served_instead(self, group: str, kind: str) -> str:
        """What the cluster serves in place of an unserved kind: the kind in other versions of
        its group (a chart written for a newer Kubernetes), else the group's versions."""
        served = (await self._load_groups()).get(group)
        if not served:
            return f"the cluster does not serve API group {group or 'core'!r} at all"
        versions = f"{group or 'core'} versions {', '.join(served)}"
        prefix = f"{group}/" if group else ""
        elsewhere = [v for v in served if kind in await self._load_resources(group, v)]
        if elsewhere:
            where = ", ".join(prefix + v for v in elsewhere)
            return f"the cluster serves {kind} in {where} ({versions})"
        return f"the cluster serves {versions}, none with kind {kind}"

    async def api_versions(self) -> list[str]:
        """Helm's `.Capabilities.APIVersions`: every `group/version` and `group/version/Kind`."""
        groups = await self._load_groups()
        pairs = [(g, v) for g, versions in groups.items() for v in versions]
        listings = await asyncio.gather(*(self._load_resources(g, v) for g, v in pairs))
        result: list[str] = []
        for (group, version), resources in zip(pairs, listings, strict=True):
            gv = f"{group}/{version}" if group else version
            result.append(gv)
            result.extend(f"{gv}/{kind}" for kind in resources)
        return sorted(result)

    async def namespaced_resources(self) -> list[ResourceInfo]:
        """One (preferred-version) resource per namespaced kind: for emptiness checks."""
        groups = await self._load_groups()
        listings = await asyncio.gather(
            *(self._load_resources(g, versions[0]) for g, versions in groups.items() if versions)
        )
        return [r for listing in listings for r in listing.values() if r.namespaced]


def _in_group(key: str, prefix: str) -> bool:
    """`key` (a discovery key: "v1" or "group/version") belongs to the group of `prefix`."""
    return key.startswith(prefix) if prefix else "/" not in key
