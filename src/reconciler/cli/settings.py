"""`reconciler settings reference | check`: the settings of every role, as a page and as a
checked file."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from reconciler.cli.errors import BAD_INPUT, fail
from reconciler.cli.options import load_settings, settings_of

app = typer.Typer(help="The settings of every role: reference and file check.")


@app.callback()
def _group() -> None:
    """The settings of every role: reference and file check."""


@app.command()
def reference() -> None:
    """Print the settings reference (markdown; docs/settings.md is this output)."""
    from reconciler.settings import reference as page

    typer.echo(page(), nl=False)


@app.command()
def check(
    config: Annotated[
        Path | None,
        typer.Argument(metavar="[FILE]", help="YAML settings file (default: none, the env only)."),
    ] = None,
    group: Annotated[
        list[str] | None,
        typer.Option(
            "--group",
            "-g",
            metavar="NAME",
            help="Check this group (repeatable): mothership, api, component, operator,"
            " operator_shard, operator_watcher or infra. Default: the mothership's and every"
            " group the file has a section for.",
        ),
    ] = None,
) -> None:
    """Check a settings file and the RECONCILER_* variables as the processes would read them
    (exit 2 with one line naming the first problem)."""
    from reconciler.settings import GROUPS, MOTHERSHIP

    root = load_settings(config)
    for name in group or dict.fromkeys([MOTHERSHIP, *root.given]):
        if name not in GROUPS:
            raise fail(f"unknown group {name}: one of {', '.join(GROUPS)}", BAD_INPUT)
        settings_of(lambda name=name: getattr(root, name))  # type: ignore[misc]
    typer.echo("settings ok")
