"""One headless Chromium (Debian's, through Playwright) per browser-test module; tests open a
fresh context (own sessionStorage) each.

Module scope on purpose: Playwright's synchronous API keeps an event loop running in the test
thread while it is open, which would stop later async tests (and `asyncio.run` in fixtures) of
the session. A module that uses it requests its asyncio-using session fixtures (the test bed)
before `browser`."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, sync_playwright

from reconciler.devcluster.chromium import ensure_installed


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    executable = ensure_installed()
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=str(executable),
            headless=True,
            args=["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"],
        )
        try:
            yield chromium
        finally:
            chromium.close()
