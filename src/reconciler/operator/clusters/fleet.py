"""What the operator was already told about its fleet: each Kyma's Manifests and kubeconfig
Secrets, and the catalog (ModuleTemplates, ModuleReleaseMetas), kept from kopf's events so that a
reconcile does not ask the apiserver again.

At 25,000 Manifests in one namespace, "the Manifests of Kyma k" as a label-selected LIST makes
the apiserver read and filter every Manifest of the namespace for each Kyma reconcile (and the
Secret LIST per Manifest reconcile does the same to every Secret): quadratic in the fleet. The
index answers both from memory. Like an informer's cache it may lag the apiserver by an event;
its users treat an entry that is missing as "ask the apiserver" and an entry that is there as
what the watch last said, which the next event corrects (level-triggered controllers converge).
It is only touched from the operator's loop.
"""

from __future__ import annotations

from collections import defaultdict

from reconciler.model.kube_object import Body
from reconciler.model.lifecycle import kyma_of

KymaKey = tuple[str, str]
"""(namespace, Kyma name)."""


def _kept(body: Body) -> Body:
    """The body without `metadata.managedFields`: nobody reads them from the index, and at
    25,000 Manifests (each written by two field managers) they were most of its memory."""
    meta = body.get("metadata")
    if not isinstance(meta, dict) or "managedFields" not in meta:
        return body
    return {**body, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}


class _ByKyma:
    """Objects labelled with their Kyma's name, by (namespace, Kyma) and then by name."""

    def __init__(self) -> None:
        self._items: dict[KymaKey, dict[str, Body]] = defaultdict(dict)
        self._owner: dict[tuple[str, str], str] = {}

    def observe(self, body: Body, deleted: bool) -> Body | None:
        """Record an event; the object's previous body (None: not seen before)."""
        meta = body.get("metadata", {})
        namespace, name = str(meta.get("namespace", "")), str(meta.get("name", ""))
        before_kyma = self._owner.pop((namespace, name), None)
        before = None
        if before_kyma is not None:
            group = self._items.get((namespace, before_kyma), {})
            before = group.pop(name, None)
            if not group:
                self._items.pop((namespace, before_kyma), None)
        kyma = kyma_of(body)
        if not deleted and kyma:
            self._items[(namespace, kyma)][name] = _kept(body)
            self._owner[(namespace, name)] = kyma
        return before

    def of(self, namespace: str, kyma: str) -> list[Body]:
        return list(self._items.get((namespace, kyma), {}).values())

    def knows(self, namespace: str, name: str) -> bool:
        return (namespace, name) in self._owner


class FleetIndex:
    def __init__(self) -> None:
        self._manifests = _ByKyma()
        self._secrets = _ByKyma()
        self._catalog: dict[tuple[str, str], dict[str, Body]] = defaultdict(dict)
        """(namespace, kind) -> name -> body of the catalog's resources."""
        self._catalog_primed = False

    def prime_catalog(self, items: list[Body]) -> None:
        """The catalog as listed once before the watches start: from then on the index is
        complete (events only keep it current), never half-filled by a watch's first listing
        (a Kyma resolved against templates whose release metadata had not arrived yet would
        pick another version)."""
        for body in items:
            self.catalog_item(body)
        self._catalog_primed = True

    def catalog_item(self, body: Body, *, deleted: bool = False) -> bool:
        """Record a catalog event; True when it changes what was known (not a re-listing)."""
        meta = body.get("metadata", {})
        items = self._catalog[(str(meta.get("namespace", "")), str(body.get("kind", "")))]
        name = str(meta.get("name", ""))
        before = items.pop(name, None)
        if not deleted:
            items[name] = _kept(body)
        if before is None:
            return not deleted
        version = meta.get("resourceVersion")
        return deleted or before.get("metadata", {}).get("resourceVersion") != version

    def catalog(self, namespace: str, kind: str) -> list[Body] | None:
        """The namespace's catalog resources of `kind` as last watched (None: not primed)."""
        if not self._catalog_primed:
            return None
        return list(self._catalog.get((namespace, kind), {}).values())

    def manifest(self, body: Body, *, deleted: bool = False) -> None:
        self._manifests.observe(body, deleted)

    def listed_manifest(self, body: Body) -> None:
        """A Manifest from a listing of our own: recorded unless a watch event (as new or
        newer) already was."""
        meta = body.get("metadata", {})
        if not self._manifests.knows(str(meta.get("namespace", "")), str(meta.get("name", ""))):
            self._manifests.observe(body, False)

    def manifests(self, namespace: str, kyma: str) -> list[Body]:
        """The Kyma's Manifests as last watched (possibly not yet the newest)."""
        return self._manifests.of(namespace, kyma)

    def secret(self, body: Body, *, deleted: bool = False) -> bool:
        """Record a Secret event; True when it changes a Secret seen before (a new kubeconfig
        for a known Kyma), False for the first sight (the initial listing) or no change."""
        before = self._secrets.observe(body, deleted)
        if before is None:
            return False
        version = body.get("metadata", {}).get("resourceVersion")
        return deleted or before.get("metadata", {}).get("resourceVersion") != version

    def secrets(self, namespace: str, kyma: str) -> list[Body]:
        """The Secrets labelled with the Kyma's name, as last watched."""
        return self._secrets.of(namespace, kyma)
