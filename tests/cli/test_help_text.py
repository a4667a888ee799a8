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

    assert "[table|json]" in result.output
    assert re.search(r"--kubeconfig\s+PATH", result.output)
    assert re.search(r"--value\s+KEY=VALUE", result.output)
    assert re.search(r"--help\s+Show this message", result.output)  # a flag: no value


@pytest.mark.parametrize(
    "command",
    [
        ["mothership", "serve"],
        ["mothership", "run"],
        ["component", "serve"],
        ["operator", "run"],
        ["infra", "run"],
    ],
    ids=" ".join,
)
def test_every_long_running_command_takes_a_log_level_and_names_the_valid_ones(
    command: list[str],
) -> None:
    result = CliRunner().invoke(app, [*command, "--help"], terminal_width=200)
    assert re.search(r"--log-level\s+\[debug\|info\|warning\|", result.output), result.output
    refused = CliRunner().invoke(app, command, env={"RECONCILER_LOG_LEVEL": "loud"})
    assert refused.exit_code == 2
    assert "'loud' is not one of" in refused.output
