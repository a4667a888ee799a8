"""The end of a `deploy` / `delete` run for people: each failure once, the warnings in plain
words, one closing line; never a log line.

Log lines are gathered while the set runs (`LogLines`), not printed between the progress rows:
the ones that repeat a component's warnings or error are dropped, the rest are counted and
shown with `--verbose`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import structlog
from rich.console import Console
from rich.markup import escape

from reconciler.core.executor import StepResult, StepState
from reconciler.core.results import Outcome
from reconciler.util.text import count

_REPEATS_OUTCOME = {"transformed", "failed"}
"""Log events that only repeat what the component's outcome says (its warnings, its error)."""
_SHOWN_PER_COMPONENT = 2


@dataclass
class LogLines:
    """A structlog sink that keeps the warnings and errors logged during a run."""

    kept: list[dict[str, Any]] = field(default_factory=list)

    def __call__(self, event: structlog.typing.EventDict) -> None:
        if event.get("level") in ("warning", "error", "critical") and not (
            event.get("event") in _REPEATS_OUTCOME and event.get("component")
        ):
            self.kept.append(dict(event))


def _plain(event: dict[str, Any]) -> str:
    details = ", ".join(
        f"{key}={value}"
        for key, value in event.items()
        if key not in ("event", "level", "timestamp", "exception") and value not in (None, "")
    )
    text = str(event.get("event", ""))
    return f"{text} ({details})" if details else text


def tell(
    console: Console,
    names: list[str],
    results: Mapping[str, StepResult],
    outcomes: Mapping[str, Outcome],
    *,
    deleting: bool,
    seconds: float,
    logged: LogLines,
    verbose: bool,
) -> None:
    """Print the summary of a finished run (all of it on `console`, meant for stderr)."""

    def say(text: str, style: str = "") -> None:
        line = f"[{style}]{escape(text)}[/]" if style else escape(text)
        console.print(line, highlight=False, soft_wrap=True)

    cut = False
    for name in names:
        outcome = outcomes.get(name)
        if outcome is None:
            continue
        shown = outcome.warnings if verbose else outcome.warnings[:_SHOWN_PER_COMPONENT]
        for warning in shown:
            say(f"! {name}: {warning}", "yellow")
        if len(shown) < len(outcome.warnings):
            cut = True
            say(f"! {name}: {count(len(outcome.warnings) - len(shown), 'more warning')}", "yellow")
    if logged.kept:
        if verbose:
            for event in logged.kept:
                say(f"! {_plain(event)}", "yellow")
        else:
            cut = True
            say(f"! {count(len(logged.kept), 'more warning')} logged", "yellow")
    if cut:
        say("  (--verbose shows every warning)", "dim")
    for name in names:
        outcome = outcomes.get(name)
        if outcome is not None and outcome.error:
            say(f"✗ {outcome.error}", "red")
        elif (
            not deleting
            and outcome is not None
            and outcome.changed
            and len(outcome.changed) < outcome.applied  # not a fresh install: say what
        ):
            changed = ", ".join(str(k) for k in outcome.changed[:5])
            more = len(outcome.changed) - 5
            say(f"{name}: changed {changed}" + (f" and {more} more" if more > 0 else ""))
    say(_closing(names, results, outcomes, deleting=deleting, seconds=seconds), "")


def _closing(
    names: list[str],
    results: Mapping[str, StepResult],
    outcomes: Mapping[str, Outcome],
    *,
    deleting: bool,
    seconds: float,
) -> str:
    took = f"in {seconds:.1f} s"
    failed = [n for n in names if results[n].state is StepState.FAILED]
    skipped = [n for n in names if results[n].state is StepState.SKIPPED]
    if failed or skipped:
        text = f"✗ {len(failed)} of {count(len(names), 'component')} failed {took}"
        if failed:
            text += f": {', '.join(failed)}"
        if skipped:
            text += f"; {len(skipped)} skipped (they wait for a failed one): {', '.join(skipped)}"
        return text
    done = list(outcomes.values())
    if deleting:
        deleted = sum(len(o.deleted) for o in done)
        objects = f"{count(deleted, 'object')} deleted" if deleted else "nothing was there"
        return f"✓ {count(len(names), 'component')} deleted {took}: {objects}"
    applied = sum(o.applied for o in done)
    changed = sum(len(o.changed) for o in done)
    if not applied:
        return f"✓ {count(len(names), 'component')} ready {took}, nothing changed"
    return (
        f"✓ {count(len(names), 'component')} ready {took}: "
        f"{count(applied, 'object')} applied, {changed} changed"
    )


def interrupted(console: Console, stopped: list[str]) -> None:
    """What a person needs after Ctrl-C: what was cut short, and that a re-run finishes it."""
    running = f" ({', '.join(stopped)} stopped)" if stopped else ""
    console.print(
        f"[yellow]interrupted{escape(running)}:[/] what was applied stays; "
        "run the same command again to finish.",
        highlight=False,
        soft_wrap=True,
    )
