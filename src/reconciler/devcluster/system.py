"""Installing Debian packages and running build commands, idempotently.

Only what is missing is installed (never upgraded), `apt-get update` runs only when an install
fails without it, and commands run as root directly or through sudo.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from reconciler.errors import DevClusterError

Reporter = Callable[[str], None]


def report_to_stderr(message: str) -> None:
    """Default progress reporter for long-running test-bed work."""
    print(f"[dev-cluster] {message}", file=sys.stderr, flush=True)


def as_root(cmd: Sequence[str]) -> list[str]:
    """Prefix `cmd` with sudo unless we already are root."""
    if os.geteuid() == 0:
        return list(cmd)
    if shutil.which("sudo"):
        return ["sudo", "-n", *cmd]
    raise DevClusterError(f"root (or sudo) is needed to run: {' '.join(cmd)}")


def run(cmd: Sequence[str], *, cwd: Path | None = None, env: dict[str, str] | None = None) -> None:
    """Run a command, streaming its output; raise DevClusterError naming it when it fails."""
    result = subprocess.run(list(cmd), cwd=cwd, env=env, check=False)
    if result.returncode != 0:
        raise DevClusterError(f"command failed with exit code {result.returncode}: {' '.join(cmd)}")


def is_installed(package: str) -> bool:
    """True when the Debian package is installed."""
    result = subprocess.run(
        ["dpkg-query", "-W", "-f", "${Status}", package],
        capture_output=True,
        text=True,
        check=False,
    )
    return "install ok installed" in result.stdout


def apt_install(packages: Sequence[str], report: Reporter = report_to_stderr) -> None:
    """Install the Debian packages that are missing."""
    missing = [p for p in packages if not is_installed(p)]
    if not missing:
        return
    report(f"apt-get install {' '.join(missing)}")
    apt = ["env", "DEBIAN_FRONTEND=noninteractive", "apt-get"]
    install = as_root([*apt, "install", "-y", "--no-install-recommends", *missing])
    if subprocess.run(install, check=False).returncode == 0:
        return
    run(as_root([*apt, "update"]))
    run(install)
