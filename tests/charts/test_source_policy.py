"""What module links may fetch (issue 26 item 17): operator mode's policy refuses local files,
schemes it does not allow, and redirects to another host or scheme, each redirect checked again,
for raw manifests and chart archives alike, against real HTTP servers on loopback; the
mothership's default policy keeps fetching what it always did."""

from __future__ import annotations

from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from reconciler.charts.policy import SourcePolicy
from reconciler.charts.raw import RawManifests
from reconciler.charts.sources import ChartCache
from reconciler.errors import ChartError
from reconciler.operator.settings import OperatorSettings
from tests.helpers.http import serving

MANIFEST = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-the-target\n"
OPERATOR = OperatorSettings(source_schemes=["https", "http", "oci"]).source_policy()
"""The operator's default, with plain http allowed for the loopback servers."""


@pytest.fixture
def target() -> Iterator[str]:
    """An "internal" host: answers anything, counting what it was asked."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", str(len(MANIFEST)))
            self.end_headers()
            self.wfile.write(MANIFEST)

        def log_message(self, format: str, *args: object) -> None:
            pass

    with serving(Handler) as url:
        yield url.replace("127.0.0.1", "localhost")  # another host name for the same loopback


@pytest.fixture
def redirector(target: str) -> Iterator[str]:
    """`/same` redirects on its own host, `/away` to the target host, `/file` to a local path."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path == "/m.yaml":
                self.send_response(200)
                self.send_header("Content-Length", str(len(MANIFEST)))
                self.end_headers()
                self.wfile.write(MANIFEST)
                return
            where = {"/same": "/m.yaml", "/away": f"{target}/m.yaml", "/file": "file:///etc/hosts"}
            self.send_response(302)
            self.send_header("Location", where[self.path])
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            pass

    with serving(Handler) as url:
        yield url


async def test_a_redirect_to_another_host_is_refused_on_the_same_host_followed(
    redirector: str, tmp_path: Path
) -> None:
    raw = RawManifests(policy=OPERATOR)
    assert "from-the-target" in await raw.text(f"{redirector}/same")
    with pytest.raises(ChartError, match="another host"):
        await raw.text(f"{redirector}/away")
    with pytest.raises(ChartError, match="scheme 'file' is not allowed"):
        await raw.text(f"{redirector}/file")
    with pytest.raises(ChartError, match="another host"):  # chart archives: the same rule
        await ChartCache(tmp_path / "cache").fetch(f"{redirector}/away", OPERATOR)
    # the mothership's default: as before
    assert "from-the-target" in await RawManifests().text(f"{redirector}/away")


async def test_local_files_and_unlisted_schemes_are_refused_unless_configured(
    tmp_path: Path,
) -> None:
    local = tmp_path / "m.yaml"
    local.write_bytes(MANIFEST)
    raw = RawManifests(policy=OPERATOR)
    for link in (str(local), f"file://{local}", "file:///etc/passwd"):
        with pytest.raises(ChartError, match="local files are not allowed"):
            await raw.text(link)
    strict = RawManifests(policy=OperatorSettings().source_policy())
    with pytest.raises(ChartError, match="scheme 'http' is not allowed"):
        await strict.text("http://127.0.0.1:1/m.yaml")
    with pytest.raises(ChartError, match="local files are not allowed"):
        await ChartCache(tmp_path / "cache").fetch(str(tmp_path), OPERATOR)
    allowed = OperatorSettings(source_local_files=True).source_policy()
    assert "from-the-target" in await RawManifests(policy=allowed).text(str(local))
    assert "from-the-target" in await RawManifests(policy=SourcePolicy()).text(f"file://{local}")
