"""`reconciler operator rollout status|pause|resume|abort`: a ModuleRollout's releases, and the
hand on its brake (docs/operator.md, "Progressive rollout")."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from reconciler.errors import ReconcilerError
from reconciler.kube.cluster import Cluster
from reconciler.model.kube_object import Body
from reconciler.model.rollout import ModuleRolloutSpec, ModuleRolloutStatus, Phase
from reconciler.operator.clusters.control import ControlPlane

app = typer.Typer(help="Progressive rollout of module versions (ModuleRollout).")

Kubeconfig = Annotated[
    Path | None,
    typer.Option("--kubeconfig", envvar="KUBECONFIG", help="Kubeconfig of the control plane."),
]
Namespace = Annotated[
    str, typer.Option("--namespace", "-n", help="Namespace of the ModuleRollouts.")
]
Name = Annotated[str, typer.Argument(help="The ModuleRollout's name.")]
Output = Annotated[Literal["text", "json"], typer.Option("--output", "-o", help="text or json.")]
T = TypeVar("T")
RUNNING = (Phase.PROGRESSING, Phase.PAUSED)
COLUMNS = ("rollout", "module", "version", "phase", "wave", "ready/failing/pending", "since")


def _run(kubeconfig: Path | None, work: Callable[[ControlPlane], Awaitable[T]]) -> T:
    async def go() -> T:
        async with await Cluster.connect(kubeconfig) as cluster:
            return await work(ControlPlane(cluster))

    try:
        return asyncio.run(go())
    except ReconcilerError as exc:
        typer.secho(f"error: {exc}", fg=typer.colors.RED, err=True)
        raise typer.Exit(1) from None


async def _get(control: ControlPlane, namespace: str, name: str) -> Body:
    body = await control.get("ModuleRollout", namespace, name)
    if body is None:
        raise ReconcilerError(f"no ModuleRollout {name} in namespace {namespace}")
    return body


def _summary(body: Body) -> dict[str, Any]:
    spec = body.get("spec") or {}
    status = ModuleRolloutStatus.model_validate(body.get("status") or {})
    out: dict[str, Any] = {
        "name": body["metadata"]["name"],
        "namespace": body["metadata"]["namespace"],
        "module": spec.get("module") or "",
        "paused": bool(spec.get("paused")),
        "onFailure": spec.get("onFailure") or "Halt",
        "waves": [w.get("name") for w in spec.get("waves") or []],
        "releases": [r.dump() for r in status.releases],
    }
    if status.message:
        out["message"] = status.message
    return out


def _show(rollouts: list[dict[str, Any]]) -> None:
    console = Console(highlight=False)
    table = Table()
    for column in COLUMNS:  # folded, never cut: people paste names and versions
        table.add_column(column, overflow="fold")
    blocked: list[tuple[str, dict[str, Any]]] = []
    for r in rollouts:
        if r.get("message"):
            console.print(Text(f"{r['name']}: {r['message']}", style="red"))
        for rel in r["releases"]:
            waves = rel.get("waves") or []
            wave = f"{rel.get('wave', 0) + 1}/{len(r['waves'])} {r['waves'][rel.get('wave', 0)]}"
            phase = str(rel["phase"]) + (
                " (paused)" if r["paused"] and rel["phase"] in RUNNING else ""
            )
            style = {"Halted": "red", "RolledBack": "red", "Aborted": "red", "Complete": "green"}
            counts = [sum(w.get(k, 0) for w in waves) for k in ("ready", "failing", "pending")]
            table.add_row(
                Text(r["name"]),
                Text(f"{rel['module']} ({rel['channel']})"),
                Text(f"{rel.get('previous') or '-'} -> {rel['version']}"),
                Text(phase, style=style.get(str(rel["phase"]), "")),
                Text(wave),
                "/".join(str(c) for c in counts),
                Text(str(rel.get("since", ""))[:19].replace("T", " ")),
            )
            blocked += [(f"{rel['module']} {rel['version']}", b) for b in rel.get("failing") or []]
            if rel["phase"] not in ("Complete",) and rel.get("message"):
                blocked.insert(
                    0, (f"{rel['module']} {rel['version']}", {"message": rel["message"]})
                )
    console.print(table)
    for release, item in blocked:
        where = f" {item['kyma']}" if item.get("kyma") else ""
        manifest = f" (Manifest {item['manifest']})" if item.get("manifest") else ""
        console.print(Text(f"{release}{where}{manifest}: {item['message']}"))


@app.command()
def status(
    name: Annotated[str | None, typer.Argument(help="One ModuleRollout (default: all).")] = None,
    namespace: Namespace = "kcp-system",
    kubeconfig: Kubeconfig = None,
    output: Output = "text",
) -> None:
    """Each release's wave, counts (ready, failing, pending), phase, and what blocks it."""

    async def read(control: ControlPlane) -> list[Body]:
        if name:
            return [await _get(control, namespace, name)]
        return await control.list("ModuleRollout", namespace)

    rollouts = [_summary(b) for b in _run(kubeconfig, read)]
    if output == "json":
        typer.echo(json.dumps(rollouts if name is None else rollouts[0], indent=2))
    else:
        _show(rollouts)


def _set(kubeconfig: Path | None, namespace: str, name: str, change: Callable[[Body], Body]) -> str:
    async def write(control: ControlPlane) -> str:
        body = await _get(control, namespace, name)
        patch = change(body)
        ModuleRolloutSpec.model_validate({**(body.get("spec") or {}), **patch})
        await control.patch("ModuleRollout", namespace, name, {"spec": patch})
        return str(body["metadata"]["name"])

    return _run(kubeconfig, write)


@app.command()
def pause(name: Name, namespace: Namespace = "kcp-system", kubeconfig: Kubeconfig = None) -> None:
    """No further wave starts; Kymas of the started waves keep the new version."""
    _set(kubeconfig, namespace, name, lambda _: {"paused": True})
    typer.echo(f"paused {namespace}/{name}")


@app.command()
def resume(name: Name, namespace: Namespace = "kcp-system", kubeconfig: Kubeconfig = None) -> None:
    """Go on (the current wave's soak and deadline count from now)."""
    _set(kubeconfig, namespace, name, lambda _: {"paused": False})
    typer.echo(f"resumed {namespace}/{name}")


@app.command()
def abort(
    name: Name,
    namespace: Namespace = "kcp-system",
    kubeconfig: Kubeconfig = None,
    version: Annotated[
        str | None, typer.Option(help="The version to stop (default: every running release's).")
    ] = None,
) -> None:
    """Stop a release as a failed gate would: no further Kyma switches; with onFailure Rollback
    the started waves go back to the previous version. A newer version starts afresh."""
    stopped: list[str] = []

    def change(body: Body) -> Body:
        status = ModuleRolloutStatus.model_validate(body.get("status") or {})
        running = [r.version for r in status.releases if r.phase in RUNNING]
        versions = [version] if version else running
        if not versions:
            raise ReconcilerError(f"ModuleRollout {name} has no running release to abort")
        stopped.extend(versions)
        before = list((body.get("spec") or {}).get("aborted") or [])
        return {"aborted": before + [v for v in versions if v not in before]}

    _set(kubeconfig, namespace, name, change)
    typer.echo(f"aborted {', '.join(stopped)} of {namespace}/{name}")
