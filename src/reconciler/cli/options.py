"""Options every long-running command shares, declared once."""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

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


Command = Callable[..., None]


def shared_options(
    bundle: Callable[..., Any],
    options: Mapping[str, Any],
    names: Iterable[str],
    *,
    param: str,
    first: bool = True,
) -> Callable[[Command], Command]:
    """Give `command(<param>: bundle, ...own options)` the shared options `names`.

    typer reads a command's options from its signature: the one returned has the shared options
    (their annotations from `options`, their defaults from the dataclass `bundle`, in `options`'
    order) before (`first`) or after the command's own, and the call hands the shared ones over
    as one `bundle`, so commands that share options declare them once. The component-set
    commands (`SetOptions`) and the admin commands (`Connection`) use it."""
    defaults = {f.name: f.default for f in dataclasses.fields(bundle)}  # type: ignore[arg-type]
    chosen = [name for name in options if name in set(names)]

    def decorate(command: Command) -> Command:
        own = [
            p.replace(kind=inspect.Parameter.KEYWORD_ONLY)
            for p in inspect.signature(command, eval_str=True).parameters.values()
            if p.name != param
        ]
        common = [
            inspect.Parameter(
                name,
                inspect.Parameter.KEYWORD_ONLY,
                default=defaults[name],
                annotation=options[name],
            )
            for name in chosen
        ]

        @functools.wraps(command)
        def wrapper(**given: Any) -> None:
            picked = {name: given.pop(name) for name in chosen}
            command(**{param: bundle(**picked)}, **given)

        parameters = [*common, *own] if first else [*own, *common]
        wrapper.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
        return wrapper

    return decorate


OUTPUT_ALIASES = {"text": "table"}
"""Old names of `-o` values, still accepted so scripts keep working (`deploy -o text`)."""


def output_option(choices: tuple[str, ...], what: str) -> Any:
    """`--output/-o`, one vocabulary for every command: `table` for people, `json` for
    programs (`wide`: a table with more columns); `what` says what each gives. An old name
    (`text`) is read as its new one."""

    def check(value: str) -> str:
        value = OUTPUT_ALIASES.get(value, value)
        if value not in choices:
            raise typer.BadParameter(f"{value!r} is not one of {', '.join(choices)}")
        return value

    return typer.Option(
        "--output",
        "-o",
        metavar=f"[{'|'.join(choices)}]",
        callback=check,
        help=what,
        show_default=True,
    )
