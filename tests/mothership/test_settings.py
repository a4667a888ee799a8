"""Settings that contradict each other are refused at start-up, naming both, instead of
misbehaving at run time (a heartbeat slower than the orphan timeout re-runs live operations)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from reconciler.cli.main import app
from reconciler.mothership.settings import Settings, SettingsError
from reconciler.remote.settings import ComponentSettings


@pytest.mark.parametrize("heartbeat", [60.0, 90.0, 31.0])
def test_a_heartbeat_not_well_inside_the_orphan_timeout_is_refused(
    tmp_path: Path, heartbeat: float
) -> None:
    with pytest.raises(SettingsError) as raised:
        Settings.load(None, data_dir=tmp_path, heartbeat_interval=heartbeat, orphan_timeout=60)
    message = str(raised.value)
    assert "heartbeat_interval" in message
    assert "orphan_timeout" in message
    assert "orphaned" in message


def test_the_defaults_and_a_heartbeat_of_half_the_timeout_are_accepted(tmp_path: Path) -> None:
    assert Settings.load(None, data_dir=tmp_path).heartbeat_interval == 5.0
    Settings.load(None, data_dir=tmp_path, heartbeat_interval=30, orphan_timeout=60)


def test_the_mothership_refuses_to_start_with_a_clear_message(tmp_path: Path) -> None:
    config = tmp_path / "settings.yaml"
    config.write_text(f"data_dir: {tmp_path}\nheartbeat_interval: 60\norphan_timeout: 30\n")
    result = CliRunner().invoke(app, ["mothership", "migrate", "--config", str(config)])
    assert result.exit_code == 2, result.output
    assert "heartbeat_interval (60 s)" in result.output
    assert "orphan_timeout (30 s)" in result.output
    assert "Traceback" not in result.output


def test_a_component_reconcilers_backoff_cap_below_its_first_pause_is_refused(
    tmp_path: Path,
) -> None:
    with pytest.raises(ValueError, match=r"retry_max_delay \(1 s\) is below retry_delay \(5 s\)"):
        ComponentSettings(charts_cache=tmp_path, token="t", retry_delay=5, retry_max_delay=1)
    ComponentSettings(charts_cache=tmp_path, token="t", retry_delay=5, retry_max_delay=5)
