"""`reconciler dev-cluster up|status|down` by hand, as the README describes it."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from typer.testing import CliRunner

from reconciler.cli.main import app
from reconciler.paths import find_binary


def test_up_prints_a_working_kubeconfig_and_down_leaves_no_process(tmp_path: Path) -> None:
    runner = CliRunner()
    directory = tmp_path / "dev"
    up = runner.invoke(app, ["dev-cluster", "up", "--dir", str(directory)])
    assert up.exit_code == 0, up.output
    printed = re.search(r"kubeconfig: (\S+)", up.output)
    assert printed is not None
    kubectl = find_binary("kubectl")
    assert kubectl is not None
    namespaces = subprocess.run(
        [str(kubectl), "--kubeconfig", printed.group(1), "get", "ns", "-o", "name"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "namespace/default" in namespaces

    status = runner.invoke(app, ["dev-cluster", "status", "--dir", str(directory), "-o", "json"])
    pids = json.loads(status.output)["running"]
    assert all(pids.values()), pids

    down = runner.invoke(app, ["dev-cluster", "down", "--dir", str(directory)])
    assert down.exit_code == 0, down.output
    for pid in pids.values():
        assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text()
    after = runner.invoke(app, ["dev-cluster", "status", "--dir", str(directory)])
    assert after.exit_code == 1
    assert "kube-apiserver: not running" in after.output
