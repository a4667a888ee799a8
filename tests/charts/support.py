"""Helpers for the chart tests: fixture chart locations, archive builders, a test HTTP server."""

from __future__ import annotations

import io
import socket
import tarfile
import threading
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

FIXTURE_CHARTS = Path(__file__).resolve().parents[1] / "fixtures" / "charts"


def tgz_of(chart_dir: Path, *, arcname: str | None = None) -> bytes:
    """A chart archive as `helm package` lays it out: `<name>/Chart.yaml`, ..."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        tar.add(chart_dir, arcname=arcname or chart_dir.name)
    return buffer.getvalue()


def tgz_with(members: dict[str, bytes]) -> bytes:
    """An archive holding exactly `members` (names taken literally, even unsafe ones)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def closed_port() -> int:
    """A port on 127.0.0.1 nobody listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@dataclass
class ChartServer:
    """A real HTTP server; `routes` maps a path to (status, body), `requests` counts GETs."""

    base_url: str
    routes: dict[str, tuple[int, bytes]] = field(default_factory=dict)
    truncated: set[str] = field(default_factory=set)
    requests: Counter[str] = field(default_factory=Counter)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def url(self, path: str) -> str:
        return self.base_url + path
