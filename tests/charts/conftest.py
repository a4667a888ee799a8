"""Worlds for the chart tests: a real HTTP server serving charts, writable chart copies."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from tests.charts.support import FIXTURE_CHARTS, ChartServer
from tests.helpers.http import serving


@pytest.fixture
def chart_server() -> Iterator[ChartServer]:
    server_state: list[ChartServer] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            state = server_state[0]
            with state.lock:
                state.requests[self.path] += 1
            status, body = state.routes.get(self.path, (404, b"not found"))
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.path in state.truncated:
                self.wfile.write(body[: len(body) // 2])  # then the connection closes
                self.close_connection = True
                return
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    with serving(Handler) as url:
        server_state.append(ChartServer(url))
        yield server_state[0]


@pytest.fixture
def chart_copy(tmp_path: Path) -> Path:
    """A writable copy of the `plain` fixture chart."""
    target = tmp_path / "charts" / "plain"
    shutil.copytree(FIXTURE_CHARTS / "plain", target)
    return target
