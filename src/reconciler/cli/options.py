"""Options every long-running command shares, declared once."""

from __future__ import annotations

from typing import Annotated, Literal

import typer

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
