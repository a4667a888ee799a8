"""What every component-set command has in common: one option list, one error convention."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer.main
from typer.core import TyperOption
from typer.testing import CliRunner

from reconciler.cli import components
from reconciler.cli.main import app
from reconciler.version import __version__
from tests.cli.test_deploy_cli import EXAMPLES, invoke


def options_of(command: str) -> dict[str, tuple[str, ...]]:
    found = typer.main.get_command(app).commands[command]  # type: ignore[attr-defined]
    return {p.name: tuple(p.opts) for p in found.params if isinstance(p, TyperOption)}


def test_deploy_and_delete_share_one_option_list() -> None:
    deploy, delete = options_of("deploy"), options_of("delete")
    assert set(deploy) - set(delete) == {"wait", "force", "regenerate"}
    assert {name: deploy[name] for name in delete} == delete
    assert set(options_of("diff")) < set(delete)
    assert set(options_of("template")) - set(delete) == {"kube_version", "api_versions"}


def test_missing_values_file_is_bad_input_for_every_command(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    for command in ("deploy", "delete", "diff", "template"):
        result = invoke(command, "-w", str(EXAMPLES), "-f", str(missing))
        assert result.exit_code == 2, (command, result.output)
        assert f"values file {missing} does not exist" in result.output


def test_error_messages_keep_brackets_they_quote(tmp_path: Path) -> None:
    values = tmp_path / "values.yaml"
    values.write_text("[a, b]\n")
    result = invoke("template", "-w", str(EXAMPLES), "-f", str(values))
    assert result.exit_code == 2
    assert "holds a list, not a map of values" in result.output


def test_version_option_prints_the_version_alone() -> None:
    """The image's entry point is `reconciler`; `--version` is how an image is checked."""
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output == f"{__version__}\n"


def test_one_output_vocabulary_with_the_old_name_still_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`-o table|json` everywhere (`wide` too for the admin tables); `text`, what deploy and
    dev-cluster called their table before, is read as `table` so scripts keep working."""
    seen: list[str] = []
    monkeypatch.setattr(
        components, "_run_set", lambda _type, options, **_: seen.append(options.output)
    )
    for given, read in (("text", "table"), ("table", "table"), ("json", "json")):
        assert invoke("deploy", "-w", str(EXAMPLES), "-o", given).exit_code == 0
        assert seen.pop() == read
    refused = invoke("delete", "-w", str(EXAMPLES), "-o", "yaml")
    assert refused.exit_code == 2
    assert "'yaml' is not one of table, json" in refused.output
    for path in (("deploy",), ("dev-cluster", "status"), ("cluster", "list")):
        shown = CliRunner().invoke(app, [*path, "--help"], terminal_width=200).output
        assert "[table|" in shown, path
        assert "[text|" not in shown, path


def test_the_kyma_version_is_not_the_programs_version() -> None:
    shown = CliRunner().invoke(app, ["template", "--help"], terminal_width=200).output
    assert "--kyma-version" in shown
    assert "--version " not in shown  # the old spelling works, but is not offered
    old = invoke("template", "-w", str(EXAMPLES), "-c", "istio", "--version", "1.2.3")
    assert old.exit_code == 0, old.output
    assert "--version is deprecated here: use --kyma-version" in old.output
    new = invoke("template", "-w", str(EXAMPLES), "-c", "istio", "--kyma-version", "1.2.3")
    assert new.exit_code == 0
    assert "deprecated" not in new.output
    both = invoke("template", "-w", str(EXAMPLES), "--version", "1", "--kyma-version", "2")
    assert both.exit_code == 2
    assert "give one" in both.output
