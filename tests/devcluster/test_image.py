"""The OCI image: built here without a daemon, pushed to a real registry, pulled back and its
entry point run as the image says (user, environment) in a chroot of the pulled layers.

The build is cached by input digest (`~/.cache/reconciler/image`): the first run on a machine
takes about two minutes, later ones seconds (only the project layer changes with the code).
Needs root (chroot, and apt-get for mmdebstrap when it is missing).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from reconciler.devcluster.image import USER, build, compressed_size, layer_keys
from reconciler.devcluster.ocilayout import pull_rootfs, push
from reconciler.version import __version__

REPO = Path(__file__).resolve().parents[2]
CHROOT = shutil.which("chroot") or "/usr/sbin/chroot"  # the image's PATH is not ours
root_only = pytest.mark.skipif(os.geteuid() != 0, reason="chroot and apt-get need root")


@pytest.mark.slow
@root_only
def test_pushed_image_runs_its_entry_point_as_non_root_without_a_shell(
    oci_registry: str, tmp_path: Path
) -> None:
    layout, name = build(REPO)
    assert compressed_size(layout, name) <= 200_000_000
    digest = push(layout, name, oci_registry, "kyma/reconciler", __version__)
    assert digest.startswith("sha256:")

    rootfs = tmp_path / "rootfs"
    config = pull_rootfs(oci_registry, "kyma/reconciler", __version__, rootfs)["config"]
    assert config["User"] == f"{USER}:{USER}"
    assert not any((rootfs / p).exists() for p in ("bin/sh", "usr/bin/sh", "bin/bash"))
    files_before = sorted(rootfs.rglob("*"))

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [CHROOT, f"--userspec={config['User']}", str(rootfs), *config["Entrypoint"], *args],
            env=dict(entry.split("=", 1) for entry in config["Env"]),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert result.returncode == 0, result.stderr
        return result

    assert run("--version").stdout.strip() == __version__
    assert sorted(rootfs.rglob("*")) == files_before  # nothing written: a read-only root works
    # the chart is in the image and the helm library renders it there
    assert "kind: ClusterRole\n" in run("operator", "deploy", "--print", "--image", "r:1").stdout


def test_only_the_project_layer_depends_on_the_source(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "src" / "pkg").mkdir(parents=True)
    for name in ("pyproject.toml", "constraints.txt", "README.md"):
        (repo / name).write_text((REPO / name).read_text())
    module = repo / "src" / "pkg" / "module.py"
    module.write_text("A = 1\n")
    before = layer_keys(repo)
    module.write_text("A = 2\n")
    after = layer_keys(repo)
    assert before["project"] != after["project"]
    assert before["base"] == after["base"]
    assert before["dependencies"] == after["dependencies"]
