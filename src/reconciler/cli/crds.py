"""`install-crds [--print]`, as operator mode and the infrastructure manager both offer it, and
the check their `run` makes first: a control plane without the CRDs is told how to get them
(else the watches retried 404s every second, or kopf said "Unresolved resources")."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml

from reconciler.cli.errors import failures
from reconciler.errors import ApplyError, ReconcilerError
from reconciler.kube.cluster import Cluster

PrintOnly = Annotated[
    bool, typer.Option("--print", help="Print the CRDs as YAML instead of installing them.")
]
"""The `--print` option of every `install-crds` command."""


def print_or_install(
    kubeconfig: Path | None,
    print_only: bool,
    crds: list[dict[str, Any]],
    install: Callable[[Cluster], Awaitable[list[str]]],
) -> None:
    """Print the CRDs as YAML, or install them and name each installed one."""
    if print_only:
        typer.echo(yaml.safe_dump_all(crds, sort_keys=False), nl=False)
        return

    async def run() -> list[str]:
        async with await Cluster.connect(kubeconfig) as cluster:
            return await install(cluster)

    with failures():
        names = asyncio.run(run())
    for name in names:
        typer.echo(f"installed {name}")


class MissingCrdsError(ReconcilerError):
    """The control plane lacks CRDs a long-running command needs."""


async def require_crds(cluster: Cluster, crds: list[dict[str, Any]], command: str) -> None:
    """Raise naming every CRD of `crds` the cluster does not serve, and `command` to install
    them. Asks discovery, which any identity may read (a pod's service account may not read
    CustomResourceDefinitions themselves)."""
    missing = []
    for crd in crds:
        spec = crd["spec"]
        version = next(v["name"] for v in spec["versions"] if v.get("served", True))
        try:
            await cluster.mapper.resolve(f"{spec['group']}/{version}", spec["names"]["kind"])
        except ApplyError:
            missing.append(crd["metadata"]["name"])
    if missing:
        raise MissingCrdsError(
            f"the control plane lacks the CRD{'s' if len(missing) > 1 else ''} "
            f"{', '.join(missing)}: install them with `reconciler {command} --kubeconfig "
            "KUBECONFIG` (or the chart, docs/deploy.md), then start again"
        )
