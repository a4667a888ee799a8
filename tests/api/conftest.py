"""Fixtures for the API tests: a token file, an engine with the API in front, the reference spec."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from reconciler.api import ApiSettings
from reconciler.api.auth import Role
from tests.api.support import REFERENCE, Api, Tokens, reference_spec, running_api


@pytest.fixture
def tokens(tmp_path: Path) -> Tokens:
    return Tokens.write(tmp_path)


@pytest.fixture
async def api(tmp_path: Path, tokens: Tokens) -> AsyncIterator[Api]:
    """Static-token API over a running engine (no-op invoker); the client is an admin."""
    settings = ApiSettings(tokens_file=tokens.path)
    async with running_api(tmp_path, settings, headers=tokens.header(Role.ADMIN)) as running:
        yield running


@pytest.fixture(scope="session")
def reference() -> dict[str, Any]:
    spec = reference_spec()
    if spec is None:
        pytest.skip(
            f"reference OpenAPI document not found at {REFERENCE} (shared/ not checked out)"
        )
    return spec
