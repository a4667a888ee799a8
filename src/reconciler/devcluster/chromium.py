"""Debian's headless Chromium for the console's browser tests.

Playwright's own browser download is not available on the machines this project runs on (only
package registries are), so the tests drive the distribution's `chromium` through Playwright's
`executable_path`. Installs the package when missing, like the PostgreSQL test bed does.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from reconciler.devcluster.system import Reporter, apt_install, report_to_stderr
from reconciler.errors import DevClusterError


def find_chromium() -> Path | None:
    """$CHROMIUM, else Debian's `chromium` on the PATH."""
    configured = os.environ.get("CHROMIUM")
    if configured:
        return Path(configured)
    found = shutil.which("chromium")
    return Path(found) if found else None


def ensure_installed(report: Reporter = report_to_stderr) -> Path:
    binary = find_chromium()
    if binary is None:
        apt_install(["chromium"], report)
        binary = find_chromium()
    if binary is None:
        raise DevClusterError("chromium not found after installing Debian's 'chromium' package")
    return binary
