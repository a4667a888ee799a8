"""Fixtures for the API tests: a token file, an engine with the API in front, the reference spec."""

from __future__ import annotations

import os
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
    """The reference OpenAPI document. Skipped where `../shared` is absent, except when
    RECONCILER_REQUIRE_REFERENCE is set (CI sets it: there the contract test must run)."""
    spec = reference_spec()
    if spec is None:
        message = f"reference OpenAPI document not found at {REFERENCE} (shared/ not checked out)"
        if os.environ.get("RECONCILER_REQUIRE_REFERENCE"):
            pytest.fail(message + "; RECONCILER_REQUIRE_REFERENCE is set")
        pytest.skip(message)
    return spec
