"""The API sits above the engine: no module of `reconciler.mothership` imports `reconciler.api`
(process wiring lives in `api/server.py`), and the authenticators depend on `api.principal`,
never on `api.auth`, which combines them (no cycle)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "reconciler"


def imports_of(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def test_the_engine_never_imports_the_api() -> None:
    offenders = {
        str(path.relative_to(SRC)): sorted(
            i for i in imports_of(path) if i.startswith("reconciler.api")
        )
        for path in (SRC / "mothership").rglob("*.py")
    }
    assert {k: v for k, v in offenders.items() if v} == {}


@pytest.mark.parametrize("module", ["oidc", "identity", "principal", "settings", "routing"])
def test_authenticators_do_not_import_the_module_that_combines_them(module: str) -> None:
    assert "reconciler.api.auth" not in imports_of(SRC / "api" / f"{module}.py")
