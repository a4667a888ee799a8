"""`install-crds [--print]`, as operator mode and the infrastructure manager both offer it."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml

from reconciler.cli.errors import failures
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
