"""Where the project keeps its cache on this machine and finds the external binaries it runs.

A neutral module below every layer: the chart renderer (helm), the services' settings (chart
caches) and the test bed (kube-apiserver, etcd) all ask here, so production code never has to
import the test bed to learn a path.

Binary precedence follows envtest: `TEST_ASSET_<NAME>` for one binary, then `KUBEBUILDER_ASSETS`
for a directory holding them, then our own build cache (`$RECONCILER_CACHE_DIR` or
`~/.cache/reconciler`), and for etcd/helm/kubectl finally the `PATH`.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

KUBE_BINARIES = ("kube-apiserver", "kube-controller-manager")


def cache_dir() -> Path:
    """Root of everything the project caches on this machine."""
    configured = os.environ.get("RECONCILER_CACHE_DIR")
    return Path(configured) if configured else Path.home() / ".cache" / "reconciler"


def bin_dir() -> Path:
    """Where `build` installs the binaries it produces."""
    return cache_dir() / "bin"


def _env_asset(name: str) -> Path | None:
    specific = os.environ.get("TEST_ASSET_" + name.upper().replace("-", "_"))
    if specific:
        return Path(specific)
    assets = os.environ.get("KUBEBUILDER_ASSETS")
    if assets and (Path(assets) / name).is_file():
        return Path(assets) / name
    return None


def find_binary(name: str) -> Path | None:
    """Locate `name` (kube-apiserver, etcd, helm, ...) or return None when it is not available."""
    found = _env_asset(name)
    if found is not None:
        return found
    cached = bin_dir() / name
    if cached.is_file() and os.access(cached, os.X_OK):
        return cached
    if name in KUBE_BINARIES:
        return None
    on_path = shutil.which(name)
    return Path(on_path) if on_path else None


def deploy_chart() -> Path:
    """The Helm chart that installs Reconciler in a cluster: bundled into the wheel as
    `reconciler/_deploy_chart` (pyproject.toml), else `deploy/chart` of this source checkout."""
    package = Path(__file__).resolve().parent
    bundled = package / "_deploy_chart"
    return bundled if bundled.is_dir() else package.parent.parent / "deploy" / "chart"
