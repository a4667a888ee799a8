"""The console's Kyma / Manifest view: per-module state of the operator-mode resources in the
cluster the console is pointed at (`ApiSettings.console_kubeconfig`), read only.

Two LISTs per refresh (Kyma and Manifest, all namespaces) over one client shared by every
refresh and viewer (`ApiContext.console_clients`; dropped after a connection or authentication
error, so the next refresh starts afresh). A cluster without the operator's CRDs answers 404,
which the view shows as "no operator-mode resources" rather than an error.
Only names, states, versions, channels and condition messages are read out of the objects.
The ModuleRollouts (a third LIST; none when the kind is not installed) show each release's waves
as a bar and the Kymas that block it, with their Manifest.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reconciler.errors import KubeApiError, ReconcilerError
from reconciler.kube.clients import ClientCache
from reconciler.model.lifecycle import API_VERSION, MODULE_NAME, KymaKind, ManifestKind
from reconciler.model.rollout import ModuleRolloutKind


@dataclass(frozen=True)
class ModuleRow:
    name: str
    state: str
    version: str
    channel: str
    message: str


@dataclass(frozen=True)
class KymaRow:
    namespace: str
    name: str
    state: str
    channel: str
    modules: list[ModuleRow]


@dataclass(frozen=True)
class ManifestRow:
    namespace: str
    name: str
    module: str
    version: str
    state: str
    message: str


@dataclass(frozen=True)
class WaveSegment:
    name: str
    size: int
    ready: int
    failing: int
    stage: str
    """`done`, `current`, `failed` (the current wave of a stopped release) or `pending`."""
    span: int
    """1-20: its share of the bar (CSS classes `span-N`; the console allows no inline style)."""


@dataclass(frozen=True)
class BlockedRow:
    kyma: str
    manifest: str
    message: str


@dataclass(frozen=True)
class RolloutRow:
    namespace: str
    name: str
    module: str
    channel: str
    version: str
    previous: str
    phase: str
    message: str
    since: str
    waves: tuple[WaveSegment, ...]
    blocked: tuple[BlockedRow, ...]


@dataclass(frozen=True)
class KymaView:
    configured: bool
    installed: bool = False
    kymas: tuple[KymaRow, ...] = ()
    manifests: tuple[ManifestRow, ...] = ()
    rollouts: tuple[RolloutRow, ...] = ()
    error: str = ""


STOPPED = frozenset({"Halted", "RolledBack", "Aborted"})


def _stage(index: int, current: int, phase: str) -> str:
    if phase == "Complete" or index < current:
        return "done"
    if index == current:
        return "failed" if phase in STOPPED else "current"
    return "pending"


def _rollouts(item: dict[str, Any]) -> list[RolloutRow]:
    meta, status = item["metadata"], item.get("status") or {}
    rows = []
    for release in status.get("releases") or ():
        waves = [w for w in release.get("waves") or () if isinstance(w, dict)]
        total = sum(int(w.get("size") or 0) for w in waves) or 1
        phase, current = str(release.get("phase") or ""), int(release.get("wave") or 0)
        segments = tuple(
            WaveSegment(
                name=str(w.get("name") or ""),
                size=int(w.get("size") or 0),
                ready=int(w.get("ready") or 0),
                failing=int(w.get("failing") or 0),
                stage=_stage(i, current, phase),
                span=max(1, min(20, round(20 * int(w.get("size") or 0) / total))),
            )
            for i, w in enumerate(waves)
        )
        blocked = tuple(
            BlockedRow(
                str(b.get("kyma") or ""), str(b.get("manifest") or ""), str(b.get("message") or "")
            )
            for b in release.get("failing") or ()
            if isinstance(b, dict)
        )
        rows.append(
            RolloutRow(
                namespace=str(meta.get("namespace", "")),
                name=str(meta["name"]),
                module=str(release.get("module") or ""),
                channel=str(release.get("channel") or ""),
                version=str(release.get("version") or ""),
                previous=str(release.get("previous") or ""),
                phase=phase,
                message=str(release.get("message") or ""),
                since=str(release.get("since") or ""),
                waves=segments,
                blocked=blocked,
            )
        )
    return rows


def _message(status: dict[str, Any]) -> str:
    for condition in status.get("conditions") or ():
        if condition.get("status") != "True" and condition.get("message"):
            return str(condition["message"])
    return str((status.get("lastOperation") or {}).get("operation") or "")


def _kyma(item: dict[str, Any]) -> KymaRow:
    meta, spec, status = item["metadata"], item.get("spec") or {}, item.get("status") or {}
    modules = [
        ModuleRow(
            name=str(module.get("name", "")),
            state=str(module.get("state", "")),
            version=str(module.get("version") or ""),
            channel=str(module.get("channel") or ""),
            message=str(module.get("message") or ""),
        )
        for module in status.get("modules") or ()
    ]
    return KymaRow(
        namespace=meta.get("namespace", ""),
        name=meta["name"],
        state=str(status.get("state") or "Unknown"),
        channel=str(status.get("activeChannel") or spec.get("channel") or ""),
        modules=modules,
    )


def _manifest(item: dict[str, Any]) -> ManifestRow:
    meta, spec, status = item["metadata"], item.get("spec") or {}, item.get("status") or {}
    return ManifestRow(
        namespace=meta.get("namespace", ""),
        name=meta["name"],
        module=(meta.get("labels") or {}).get(MODULE_NAME, ""),
        version=str(spec.get("version") or ""),
        state=str(status.get("state") or "Unknown"),
        message=_message(status),
    )


async def read_kyma_view(kubeconfig: Path | None, clients: ClientCache) -> KymaView:
    if kubeconfig is None:
        return KymaView(configured=False)
    try:
        async with clients.client(kubeconfig) as client:
            try:
                kymas = await client.request("GET", f"/apis/{API_VERSION}/{KymaKind.plural}")
                manifests = await client.request(
                    "GET", f"/apis/{API_VERSION}/{ManifestKind.plural}"
                )
            except KubeApiError as exc:
                if exc.status == 404:
                    return KymaView(configured=True, installed=False)
                raise
            try:
                rollouts = await client.request(
                    "GET", f"/apis/{API_VERSION}/{ModuleRolloutKind.plural}"
                )
            except KubeApiError as exc:
                if exc.status != 404:  # an older set of CRDs: no rollouts
                    raise
                rollouts = {"items": []}
    except ReconcilerError as exc:
        return KymaView(configured=True, error=f"cannot read the cluster: {exc}")
    return KymaView(
        configured=True,
        installed=True,
        kymas=tuple(sorted((_kyma(i) for i in kymas["items"]), key=lambda k: k.name)),
        manifests=tuple(
            sorted((_manifest(i) for i in manifests["items"]), key=lambda m: (m.module, m.name))
        ),
        rollouts=tuple(row for item in rollouts["items"] for row in _rollouts(item)),
    )
