"""The `reconciler` command: one typer app, one module per command group, each loaded on use.

Command groups pull in very different stacks (the operator kopf and aiohttp, the component
service FastAPI and uvicorn, the admin commands httpx, `deploy` lightkube and the chart
renderer). Importing them all made every invocation, `reconciler --version` included, pay
~1 s of CPU before doing anything, so the top-level group knows its commands by name and
imports a module only when its command runs or its help is shown.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, MutableMapping
from typing import TYPE_CHECKING, Annotated, Any

import typer
import typer.main
from typer.core import TyperGroup

if TYPE_CHECKING:
    from typer import _click

from reconciler.version import __version__

# name -> (module, attribute): a typer app (a command group) or a function (one command).
LAZY_COMMANDS: dict[str, tuple[str, str]] = {
    "deploy": ("reconciler.cli.components", "deploy"),
    "delete": ("reconciler.cli.components", "delete"),
    "template": ("reconciler.cli.components", "template"),
    "diff": ("reconciler.cli.components", "diff"),
    "dev-cluster": ("reconciler.cli.devcluster", "app"),
    "mothership": ("reconciler.cli.mothership", "app"),
    "cluster": ("reconciler.cli.admin", "cluster_app"),
    "reconciliation": ("reconciler.cli.admin", "reconciliation_app"),
    "component": ("reconciler.cli.component", "app"),
    "operator": ("reconciler.cli.operator", "app"),
    "infra": ("reconciler.cli.infra", "app"),
}


def load_command(name: str) -> _click.Command:
    """The click command for `name`, importing its module now."""
    module, attribute = LAZY_COMMANDS[name]
    target: Any = getattr(importlib.import_module(module), attribute)
    if isinstance(target, typer.Typer):
        command: _click.Command = typer.main.get_group(target)
    else:
        single = typer.Typer(add_completion=False)
        single.command(name=name)(target)
        command = typer.main.get_command(single)
    command.name = name
    return command


class _LazyCommands(MutableMapping[str, "_click.Command"]):
    """The group's command table: eager commands as given, the others loaded on first access."""

    def __init__(self, eager: MutableMapping[str, _click.Command]) -> None:
        self._loaded: dict[str, _click.Command] = dict(eager)

    def __getitem__(self, name: str) -> _click.Command:
        if name not in self._loaded:
            if name not in LAZY_COMMANDS:
                raise KeyError(name)
            self._loaded[name] = load_command(name)
        return self._loaded[name]

    def __setitem__(self, name: str, command: _click.Command) -> None:
        self._loaded[name] = command

    def __delitem__(self, name: str) -> None:
        del self._loaded[name]

    def __iter__(self) -> Iterator[str]:
        yield from LAZY_COMMANDS
        yield from (name for name in self._loaded if name not in LAZY_COMMANDS)

    def __len__(self) -> int:
        return len(set(LAZY_COMMANDS) | set(self._loaded))


class LazyGroup(TyperGroup):
    """The top-level group: knows every command's name, imports its module only when needed."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self.commands = _LazyCommands(self.commands)

    def list_commands(self, ctx: _click.Context) -> list[str]:
        return list(self.commands)


app = typer.Typer(
    name="reconciler",
    help="Keep Kyma-style component sets on Kubernetes clusters in their desired state.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    cls=LazyGroup,
)


def _print_version(value: bool) -> None:
    if value:
        typer.echo(__version__)
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Keep Kyma-style component sets on Kubernetes clusters in their desired state."""


@app.command()
def version() -> None:
    """Print the version."""
    typer.echo(__version__)
