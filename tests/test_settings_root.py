"""The settings root: one file for every role (the mothership's keys at the top, a section per
other group), the environment variables of before, precedence option > file > environment >
default, unknown keys refused naming them, and the reference page generated from the classes."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from reconciler.cli.main import app
from reconciler.mothership.settings import SettingsError
from reconciler.settings import GROUPS, ReconcilerSettings, env_name, group_class, reference

REPO = Path(__file__).resolve().parents[1]


def _file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "settings.yaml"
    path.write_text(text)
    return path


def test_the_reference_page_is_the_one_the_classes_generate() -> None:
    committed = (REPO / "docs" / "settings.md").read_text()
    assert committed == reference(), (
        "docs/settings.md is out of date: run `reconciler settings reference > docs/settings.md`"
    )
    for name in GROUPS:  # every field of every group has its row
        for key in group_class(name).model_fields:
            assert f"`{env_name(name, key)}`" in committed


def test_file_then_environment_then_default_with_options_over_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RECONCILER_WORKERS", "7")
    monkeypatch.setenv("RECONCILER_PER_CLUSTER", "3")
    monkeypatch.setenv("RECONCILER_API_MAX_BODY_BYTES", "2048")
    monkeypatch.setenv("RECONCILER_API_OIDC_LEEWAY", "5")
    monkeypatch.setenv("RECONCILER_OPERATOR_SHARD_COUNT", "4")
    monkeypatch.setenv("RECONCILER_INFRA_WORKERS", "9")
    path = _file(
        tmp_path,
        f"data_dir: {tmp_path}\n"
        "workers: 12\n"
        "api:\n  auth: none\n  max_body_bytes: 4096\n"
        "operator:\n  workers: 3\n"
        "operator_shard:\n  lease_namespace: leases\n"
        "operator_watcher:\n  listener_url: https://kcp.example.com\n",
    )
    root = ReconcilerSettings.load(path, mothership={"per_cluster": 2, "workspace": None})
    assert root.mothership.workers == 12  # file over environment
    assert root.mothership.per_cluster == 2  # option over environment
    assert root.mothership.data_dir == tmp_path
    assert root.api.auth == "none"  # the API's settings are welcome in the file
    assert root.api.max_body_bytes == 4096
    assert root.api.oidc_leeway == 5  # environment where the file says nothing
    assert root.api.console is True  # default where neither does
    assert root.operator.workers == 3
    assert (root.operator_shard.count, root.operator_shard.lease_namespace) == (4, "leases")
    assert root.operator_watcher.enabled
    assert root.infra.workers == 9

    monkeypatch.setenv("RECONCILER_COMPONENT_TOKEN", "t")
    only_env = ReconcilerSettings.load(None, component={"workers": 3})
    assert (only_env.component.token, only_env.component.workers) == ("t", 3)


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("api:\n  auht: none\n", "unknown key api.auht (did you mean api.auth?)"),
        ("wrokers: 3\n", "unknown key wrokers (did you mean workers?)"),
        ("operator_shard:\n  colour: red\n", "unknown key operator_shard.colour"),
        ("api: none\n", "api must be a mapping of the api settings"),
    ],
)
def test_an_unknown_key_is_refused_naming_it(tmp_path: Path, text: str, named: str) -> None:
    with pytest.raises(SettingsError, match=r"unknown key|must be a mapping") as raised:
        ReconcilerSettings.load(_file(tmp_path, text))
    assert named in str(raised.value)


def test_the_commands_name_a_bad_key_or_value_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner = CliRunner()
    bad_key = _file(tmp_path, f"data_dir: {tmp_path}\napi:\n  auht: none\n")
    result = runner.invoke(app, ["mothership", "migrate", "--config", str(bad_key)])
    assert result.exit_code == 2, result.output
    assert "unknown key api.auht (did you mean api.auth?)" in result.output
    assert len(result.output.strip().splitlines()) == 1, result.output

    bad_value = _file(tmp_path, "api:\n  max_concurrent_reads: 0\n  callback_token: s3cret\n")
    result = runner.invoke(app, ["settings", "check", str(bad_value), "-g", "api"])
    assert result.exit_code == 2, result.output
    assert "api.max_concurrent_reads (RECONCILER_API_MAX_CONCURRENT_READS)" in result.output
    assert "s3cret" not in result.output
    assert "Traceback" not in result.output

    monkeypatch.setenv("RECONCILER_INFRA_WORKERS", "0")
    result = runner.invoke(app, ["settings", "check", "-g", "infra"])
    assert result.exit_code == 2, result.output
    assert "infra.workers (RECONCILER_INFRA_WORKERS)" in result.output

    good = _file(tmp_path, f"data_dir: {tmp_path}\napi:\n  auth: none\n")
    result = runner.invoke(app, ["settings", "check", str(good), "-g", "mothership", "-g", "api"])
    assert result.exit_code == 0, result.output
    assert "settings ok" in result.output
    # by default the groups the file names (and the mothership's): not the invalid infra env,
    # nor the component reconcilers' missing token
    assert runner.invoke(app, ["settings", "check", str(good)]).exit_code == 0
