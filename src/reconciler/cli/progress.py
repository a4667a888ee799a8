"""How the CLI shows a component set being reconciled: a live table at a terminal, one line per
state change otherwise, or nothing but the final JSON with `--output json`.

While it runs, a failed component shows the first line of its error; the whole error is told
once, in the summary at the end (`Summary`), with the warnings gathered in plain words (every
one of them with `--verbose`) and one closing line.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from types import TracebackType

from rich.console import Console
from rich.live import Live
from rich.table import Table

from reconciler.model.task import ProgressEvent, ProgressState

_STYLE = {
    "pending": "dim",
    "running": "cyan",
    "success": "green",
    "error": "red",
    "failed": "yellow",
    "skipped": "yellow",
    "interrupted": "yellow",
}
SHORT = 100
"""Characters of a message shown while the set runs (the summary at the end has all of it)."""


def short(message: str, width: int = SHORT) -> str:
    """The first line of `message`, cut to `width` characters."""
    first = message.strip().splitlines()[0] if message.strip() else ""
    return first if len(first) <= width else first[: width - 1] + "…"


@dataclass
class Row:
    state: str = "pending"
    message: str = ""
    started: float | None = None
    ended: float | None = None
    printed: str = ""

    def elapsed(self) -> str:
        if self.started is None:
            return ""
        return f"{(self.ended or time.monotonic()) - self.started:5.1f}s"


@dataclass
class ProgressView:
    """Receives progress events; renders them according to the mode."""

    names: list[str]
    console: Console
    mode: str = "live"  # live | lines | quiet
    rows: dict[str, Row] = field(default_factory=dict)
    _live: Live | None = None

    def __post_init__(self) -> None:
        self.rows = {name: Row() for name in self.names}

    def __enter__(self) -> ProgressView:
        if self.mode == "live":
            self._live = Live(
                self._table(), console=self.console, refresh_per_second=8, transient=False
            )
            self._live.__enter__()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._live is not None:
            self._live.update(self._table())
            self._live.__exit__(exc_type, exc, tb)

    def event(self, event: ProgressEvent) -> None:
        row = self.rows.setdefault(event.component, Row())
        if row.started is None:
            row.started = time.monotonic()
        previous = row.state
        row.state = event.state.value
        row.message = short(event.message)
        if event.state in (ProgressState.SUCCESS, ProgressState.ERROR):
            row.ended = time.monotonic()
        self._changed(event.component, previous)

    def skipped(self, component: str, reason: str) -> None:
        row = self.rows.setdefault(component, Row())
        previous, row.state, row.message = row.state, "skipped", reason
        self._changed(component, previous)

    def interrupted(self) -> list[str]:
        """Mark what was still running as interrupted (Ctrl-C); the names of those."""
        stopped = [name for name, row in self.rows.items() if row.state == "running"]
        for name in stopped:
            row = self.rows[name]
            previous, row.state, row.ended = row.state, "interrupted", time.monotonic()
            self._changed(name, previous)
        return stopped

    def _changed(self, component: str, previous: str) -> None:
        row = self.rows[component]
        if self._live is not None:
            self._live.update(self._table())
        elif self.mode == "lines" and (row.state != previous or row.message != row.printed):
            row.printed = row.message
            self.console.print(
                f"{component}: {row.state} {row.elapsed()} {row.message}".rstrip(),
                highlight=False,
                markup=False,
                soft_wrap=True,
            )

    def _table(self) -> Table:
        table = Table(box=None, show_header=True, header_style="bold")
        table.add_column("component")
        table.add_column("state")
        table.add_column("time", justify="right")
        table.add_column("doing / result", overflow="fold")
        for name, row in self.rows.items():
            style = _STYLE.get(row.state, "")
            table.add_row(name, f"[{style}]{row.state}[/]", row.elapsed(), row.message)
        return table
