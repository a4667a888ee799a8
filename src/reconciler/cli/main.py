"""The `reconciler` command: one typer app, one module per command group, each loaded on use.

Command groups pull in very different stacks (the operator kopf and aiohttp, the component
service FastAPI and uvicorn, the admin commands httpx, `deploy` lightkube and the chart
renderer). Importing them all made every invocation, `reconciler --version` included, pay
~1 s of CPU before doing anything, so the top-level group knows its commands by name and
imports a module only when its command runs or its help is shown. `reconciler --help` (and a
bare `reconciler`) lists every command from the one-line help kept here, importing none.

The process ends without tearing the interpreter down (`main`): freeing every module and object
and joining idle worker threads took ~0.25 s of a ~1.1 s no-op `reconciler deploy`.
"""

from __future__ import annotations

import atexit
import importlib
import os
import sys
from collections.abc import Iterator, MutableMapping
from typing import TYPE_CHECKING, Annotated, Any, NamedTuple

import typer
import typer.main
from typer.core import TyperCommand, TyperGroup

if TYPE_CHECKING:
    from typer import _click

from reconciler.cli.helptext import readable
from reconciler.version import __version__


class Lazy(NamedTuple):
    module: str
    attribute: str
    """A typer app (a command group) or a function (one command)."""
    help: str
    """The command's help line for `reconciler --help`, which must not import `module`; the
    same as the command's own (`tests/cli/test_cli_startup.py` compares them)."""


LAZY_COMMANDS: dict[str, Lazy] = {
    "deploy": Lazy(
        "reconciler.cli.components",
        "deploy",
        "Install or upgrade the component set on the cluster (exit 0 only when all is ready).",
    ),
    "delete": Lazy(
        "reconciler.cli.components",
        "delete",
        "Delete the component set from the cluster, in reverse order.",
    ),
    "template": Lazy(
        "reconciler.cli.components",
        "template",
        "Print the manifests the components render to (no cluster needed).",
    ),
    "diff": Lazy(
        "reconciler.cli.components",
        "diff",
        "Show what deploy would change (server-side dry-run); exit 1 when something differs.",
    ),
    "dev-cluster": Lazy(
        "reconciler.cli.devcluster",
        "app",
        "A local kube-apiserver + etcd + controller-manager for trying things out.",
    ),
    "mothership": Lazy(
        "reconciler.cli.mothership",
        "app",
        "The control plane (mothership): storage, scheduler, workers.",
    ),
    "cluster": Lazy("reconciler.cli.admin", "cluster_app", "Clusters known to the mothership."),
    "reconciliation": Lazy(
        "reconciler.cli.admin", "reconciliation_app", "Reconciliations and their operations."
    ),
    "component": Lazy(
        "reconciler.cli.component",
        "app",
        "Component reconciler service (worker side of the internal API).",
    ),
    "operator": Lazy(
        "reconciler.cli.operator",
        "app",
        "Operator mode: Kyma, ModuleTemplate, ModuleReleaseMeta, Manifest.",
    ),
    "infra": Lazy(
        "reconciler.cli.infra",
        "app",
        "Infrastructure manager: Runtime -> Gardener Shoot -> kubeconfig Secret.",
    ),
    "settings": Lazy(
        "reconciler.cli.settings",
        "app",
        "The settings of every role: reference and file check.",
    ),
}

_LISTING = "reconciler.listing"
"""`ctx.meta` key set while the top-level help is written (commands are only listed)."""


def load_command(name: str) -> _click.Command:
    """The click command for `name`, importing its module now."""
    module, attribute, _ = LAZY_COMMANDS[name]
    target: Any = getattr(importlib.import_module(module), attribute)
    if isinstance(target, typer.Typer):
        command: _click.Command = typer.main.get_group(target)
    else:
        single = typer.Typer(add_completion=False)
        single.command(name=name)(target)
        command = typer.main.get_command(single)
    command.name = name
    readable(command)
    return command


class _LazyCommands(MutableMapping[str, "_click.Command"]):
    """The group's command table: eager commands as given, the others loaded on first access."""

    def __init__(self, eager: MutableMapping[str, _click.Command]) -> None:
        self._loaded: dict[str, _click.Command] = dict(eager)

    def loaded(self, name: str) -> bool:
        return name in self._loaded

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

    def get_command(self, ctx: _click.Context, cmd_name: str) -> _click.Command | None:
        """While the help lists the commands: a stand-in with the help line for a command
        not loaded yet (importing every group cost `reconciler --help` about a second)."""
        lazy = LAZY_COMMANDS.get(cmd_name)
        commands = self.commands
        if (
            ctx.meta.get(_LISTING)
            and lazy is not None
            and isinstance(commands, _LazyCommands)
            and not commands.loaded(cmd_name)
        ):
            return TyperCommand(cmd_name, help=lazy.help)
        return super().get_command(ctx, cmd_name)

    def format_help(self, ctx: _click.Context, formatter: _click.HelpFormatter) -> None:
        readable(self, recurse=False)  # its commands are made readable as they load
        ctx.meta[_LISTING] = True
        try:
            super().format_help(ctx, formatter)
        finally:
            del ctx.meta[_LISTING]


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


def main() -> None:
    """The `reconciler` command: run it, then end the process at once. What a normal exit does
    that matters is done first: exit handlers (temporary directories removed, logging flushed)
    and standard output and error flushed. Skipped: tearing down modules and objects, and
    joining threads, which by then have nothing left to do. An exception that escapes the
    command ends the process the normal way, with its traceback."""
    try:
        app()
        code: object = 0
    except SystemExit as exc:
        code = exc.code
    status = code if isinstance(code, int) else (0 if code is None else 1)
    atexit._run_exitfuncs()  # what the interpreter would run at exit, in the same order
    try:
        if isinstance(code, str):  # `sys.exit("message")`: printed, status 1
            print(code, file=sys.stderr)
        sys.stdout.flush()
        sys.stderr.flush()
    except OSError:  # a reader that went away (`| head`): nothing more to tell it
        pass
    os._exit(status)
