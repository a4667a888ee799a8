"""`import reconciler` is the public surface: the action plug-in API, loaded only when asked for."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import reconciler


def test_every_exported_name_is_the_object_of_its_home_module() -> None:
    for name in reconciler.__all__:
        if name == "__version__":
            continue
        home = importlib.import_module(reconciler._EXPORTS[name])
        assert getattr(reconciler, name) is getattr(home, name), name
    assert set(reconciler.__all__) == {"__version__", *reconciler._EXPORTS}
    assert set(reconciler.__all__) <= set(dir(reconciler))


def test_importing_the_package_loads_only_the_version() -> None:
    """The CLI imports the package at every start; the plug-in API must not come with it."""
    probe = (
        "import sys, reconciler; "
        "print(sorted(m for m in sys.modules if m.startswith('reconciler.') or m == 'typing'))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    assert loaded.strip() == "['reconciler.version']"


def test_an_unknown_name_is_an_attribute_error_naming_it() -> None:
    with pytest.raises(AttributeError, match="'ActionContxt'"):
        _ = reconciler.ActionContxt  # type: ignore[attr-defined]
