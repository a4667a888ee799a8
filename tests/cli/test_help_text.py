"""Every command's help is for people: value names, not Python types; choices listed."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from reconciler.cli.main import LAZY_COMMANDS, app, load_command

PYTHON_TYPES = re.compile(r"<(str|bool|int|float|Path|list\[[^\]]*\]|[a-z_]+\[.*?\])>")


def every_command_path() -> list[tuple[str, ...]]:
    paths: list[tuple[str, ...]] = [()]
    for name in LAZY_COMMANDS:
        command = load_command(name)
        paths.append((name,))
        for sub in getattr(command, "commands", {}):
            paths.append((name, sub))
    return paths


@pytest.mark.parametrize("path", every_command_path(), ids=lambda p: " ".join(p) or "reconciler")
def test_help_names_values_not_python_types(path: tuple[str, ...]) -> None:
    result = CliRunner().invoke(app, [*path, "--help"], terminal_width=200)

    assert result.exit_code == 0, result.output
    assert not PYTHON_TYPES.findall(result.output), result.output
    assert "{" not in re.sub(r"\{\{.*?\}\}", "", result.output), result.output  # `{name}`


def test_choices_and_value_names_are_shown() -> None:
    result = CliRunner().invoke(app, ["deploy", "--help"], terminal_width=200)

    assert "[text|json]" in result.output
    assert re.search(r"--kubeconfig\s+PATH", result.output)
    assert re.search(r"--value\s+KEY=VALUE", result.output)
    assert re.search(r"--help\s+Show this message", result.output)  # a flag: no value
