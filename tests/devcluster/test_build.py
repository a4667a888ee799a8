"""The test-bed build: binaries cached by an older recipe are rebuilt, never served again."""

from __future__ import annotations

from pathlib import Path

import pytest

from reconciler.devcluster import build
from reconciler.errors import DevClusterError
from reconciler.paths import KUBE_BINARIES


def cache_with_binaries(root: Path, record: str | None) -> Path:
    binaries = root / "bin"
    binaries.mkdir(parents=True)
    for name in KUBE_BINARIES:
        path = binaries / name
        path.write_text("#!/bin/sh\n")
        path.chmod(0o755)
    if record is not None:
        (binaries / build.RECIPE_RECORD).write_text(record)
    return binaries


@pytest.mark.parametrize(
    ("record", "current"),
    [
        (None, False),  # no record at all
        ("source: kubernetes-1.20.5\nreflect2: Debian\n", False),  # recipe 1 wrote no number
        ("recipe: 1\nsource: kubernetes-1.20.5\n", False),
        (f"recipe: {build.RECIPE}\nsource: kubernetes-1.20.5\n", True),
    ],
    ids=["no-record", "recipe-1-record", "older-recipe", "current-recipe"],
)
def test_cached_binaries_count_only_when_built_by_the_current_recipe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, record: str | None, current: bool
) -> None:
    monkeypatch.setenv("RECONCILER_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("KUBEBUILDER_ASSETS", raising=False)
    for name in KUBE_BINARIES:
        monkeypatch.delenv("TEST_ASSET_" + name.upper().replace("-", "_"), raising=False)
    cache_with_binaries(tmp_path, record)

    assert build.kube_binaries_present() is current


def test_binaries_given_from_outside_are_never_rebuilt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """envtest's KUBEBUILDER_ASSETS are someone else's: no recipe record is asked of them."""
    assets = cache_with_binaries(tmp_path / "assets", record=None)
    monkeypatch.setenv("RECONCILER_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("KUBEBUILDER_ASSETS", str(assets))

    assert build.kube_binaries_present() is True


def test_a_mend_applies_exactly_once_or_names_what_it_was_for(tmp_path: Path) -> None:
    mend = build.MENDS[0]
    source = tmp_path / mend.path
    source.parent.mkdir(parents=True)
    source.write_text(f"func f() {{\n\t{mend.old}\n\t}}\n}}\n")

    build._apply(mend, tmp_path)

    assert mend.new in source.read_text()
    assert mend.old not in source.read_text()
    with pytest.raises(DevClusterError, match=r"cannot mend .*type\.go.*99804"):
        build._apply(mend, tmp_path)  # already mended: a changed source must not pass silently
