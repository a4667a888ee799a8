"""Anonymous pulls from a registry with token authentication (as Docker Hub and ghcr.io serve
public artifacts): the real registry answers 401 with a Bearer challenge, a token server on
loopback issues anonymous tokens, and both Helm's chart pulls and our layer pulls get through."""

from __future__ import annotations

import base64
import json
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import jwt
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from reconciler.charts.layers import RawManifestLayers
from reconciler.charts.sources import ChartCache
from reconciler.devcluster.pki import generate_pki
from reconciler.devcluster.registry import OciRegistry, TokenAuth
from reconciler.errors import ChartError
from tests.charts.support import FIXTURE_CHARTS
from tests.helpers.http import serving
from tests.helpers.oci import push_chart

SERVICE, ISSUER = "test-registry", "test-token-issuer"


@dataclass
class TokenServer:
    realm: str
    scopes: list[str] = field(default_factory=list)
    refuse: bool = False


@pytest.fixture
def token_server(tmp_path: Path) -> Iterator[tuple[TokenServer, Path]]:
    """Issues an anonymous token for whatever scope is asked (unless told to refuse)."""
    pki = generate_pki(tmp_path / "pki")  # its CA signs the tokens
    key = serialization.load_pem_private_key(pki.ca_key.read_bytes(), password=None)
    certificate = x509.load_pem_x509_certificate(pki.ca_cert.read_bytes())
    chain = [base64.b64encode(certificate.public_bytes(serialization.Encoding.DER)).decode()]
    state: list[TokenServer] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            server = state[0]
            query = parse_qs(urlsplit(self.path).query)
            scope = query.get("scope", [""])[0]
            server.scopes.append(scope)
            if server.refuse:
                self.send_response(403)
                self.end_headers()
                return
            kind, _, rest = scope.partition(":")
            name, _, actions = rest.rpartition(":")
            now = int(time.time())
            claims = {
                "iss": ISSUER,
                "sub": "",
                "aud": query.get("service", [""])[0],
                "iat": now,
                "nbf": now - 60,
                "exp": now + 600,
                "jti": uuid.uuid4().hex,
                "access": [{"type": kind, "name": name, "actions": actions.split(",")}],
            }
            token = jwt.encode(claims, key, algorithm="ES256", headers={"x5c": chain})
            body = json.dumps({"token": token}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    with serving(Handler) as url:
        state.append(TokenServer(f"{url}/token"))
        yield state[0], pki.ca_cert


@pytest.fixture
async def registry(
    token_server: tuple[TokenServer, Path], tmp_path: Path
) -> AsyncIterator[tuple[OciRegistry, TokenServer]]:
    server, bundle = token_server
    auth = TokenAuth(realm=server.realm, service=SERVICE, issuer=ISSUER, root_certificates=bundle)
    registry = OciRegistry(tmp_path / "registry", die_with_parent=True, token_auth=auth)
    await registry.start()
    try:
        yield registry, server
    finally:
        await registry.stop()


async def test_charts_and_layers_are_pulled_anonymously_with_a_token(
    registry: tuple[OciRegistry, TokenServer], tmp_path: Path
) -> None:
    oci, tokens = registry
    push_chart(oci.host, FIXTURE_CHARTS / "plain", "charts", tmp_path / "pkg")
    chart = await ChartCache(tmp_path / "cache").fetch(f"oci://{oci.host}/charts/plain:0.1.0")
    assert (chart / "Chart.yaml").is_file()

    tokens.scopes.clear()
    layers = RawManifestLayers()
    with pytest.raises(ChartError, match="is a Helm chart"):  # got past the 401 to read it
        await layers.text(f"oci://{oci.host}/charts/plain:0.1.0")
    assert "repository:charts/plain:pull" in tokens.scopes


async def test_a_refused_token_is_an_error_saying_anonymous_pulls_are_refused(
    registry: tuple[OciRegistry, TokenServer],
) -> None:
    oci, tokens = registry
    tokens.refuse = True
    link = f"oci://{oci.host}/modules/x:1.0"
    with pytest.raises(ChartError, match=rf"{link}: the registry answered HTTP 401"):
        await RawManifestLayers().text(link)
