"""Options every long-running command shares, declared once."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal, TypeVar

import typer

from reconciler.cli.errors import BAD_INPUT, failures

if TYPE_CHECKING:  # every role's settings module: imported when a command reads settings
    from reconciler.settings import ReconcilerSettings

T = TypeVar("T")

Level = Literal["debug", "info", "warning", "error"]
LogLevel = Annotated[
    Level,
    typer.Option(
        "--log-level",
        envvar="RECONCILER_LOG_LEVEL",
        help="Lowest level of the JSON log lines written to stderr.",
    ),
]
"""`--log-level` (env `RECONCILER_LOG_LEVEL`) of `mothership serve|run`, `component serve`,
`operator run`, `operator watcher serve` and `infra run`."""

ConfigFile = Annotated[
    Path | None,
    typer.Option(
        "--config",
        envvar="RECONCILER_CONFIG",
        metavar="FILE",
        help="YAML settings file: the mothership's keys at the top level, a section per other"
        " role (api, component, operator, operator_shard, operator_watcher, infra). It wins"
        " over RECONCILER_* variables; options win over both (docs/settings.md).",
        show_default=False,
    ),
]
"""`--config` (env `RECONCILER_CONFIG`) of every command that reads settings."""


def load_settings(config: Path | None, **overrides: dict[str, object] | None) -> ReconcilerSettings:
    """The settings root of `config` and per-group `overrides`; a bad file or key exits 2 with
    one line naming it (the groups' values are checked when a command reads its group, inside
    `settings_of`)."""
    from reconciler.settings import ReconcilerSettings

    with failures(BAD_INPUT):
        return ReconcilerSettings.load(config, **overrides)


def settings_of(read: Callable[[], T]) -> T:
    """`read()` (a group of the root, `lambda: root.api`), an invalid value exiting 2 with one
    line naming its config key and environment variable."""
    with failures(BAD_INPUT):
        return read()
