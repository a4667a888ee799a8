"""Help a person reads: `--kubeconfig PATH`, `--output [text|json]`, flags without a value.

typer shows an option's Python type as its value (`<list[str]>`, `<bool>` even on `--help`,
`<float>`). Every command the top-level group loads passes through `readable` once: an option
or argument without a metavar of its own gets one from its name (`--component COMPONENT`,
`RUNTIME_ID`), a choice lists its values, and a flag shows none.
"""

from __future__ import annotations

from typing import Any

import typer
from typer.core import TyperArgument, TyperGroup, TyperOption

_TIMING = ("timeout", "interval", "seconds")


def _metavar(param: TyperOption | TyperArgument) -> str:
    described = param.type_descriptor
    name = param.name or "value"
    if described.is_choice:
        return "[" + "|".join(str(choice) for choice in described.choices or ()) + "]"
    if described.is_path:
        return "PATH"
    if described.annotation in (int, float):
        return "SECONDS" if any(word in name for word in _TIMING) else "N"
    return name.upper().replace("-", "_")


def _readable_argument(argument: TyperArgument) -> None:
    """typer shows an argument's metavar in the name column but still its Python type beside
    it, and a required one as `{NAME}` in the usage line: the conventional `NAME` instead."""
    if argument.metavar is None:
        argument.metavar = _metavar(argument)
    shown = argument.metavar if argument.type_descriptor.is_choice else None
    usage = argument.metavar if argument.required else f"[{argument.metavar}]"
    if argument.nargs != 1:
        usage += "..."
    argument.display_type_rich = lambda ctx: shown  # type: ignore[method-assign]
    argument._usage_display_name = lambda: usage  # type: ignore[method-assign]


def _readable_param(param: Any) -> None:
    if isinstance(param, TyperArgument):
        _readable_argument(param)
    elif isinstance(param, TyperOption) and param.metavar is None:
        param.metavar = "" if param.is_flag or param.count else _metavar(param)


def readable(command: Any, *, recurse: bool = True) -> None:
    """Give every option and argument of `command` (a typer command or group; with `recurse`,
    its subcommands too) a readable value name."""
    for param in command.params:
        _readable_param(param)
    help_option = command.get_help_option(typer.Context(command))
    if help_option is not None:
        help_option.metavar = ""
    if recurse and isinstance(command, TyperGroup):
        for sub in command.commands.values():
            readable(sub)
