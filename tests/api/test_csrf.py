"""Cross-site request forgery with ambient credentials: a browser holding an administrator's
client certificate sends it with whatever request another site makes it send. A state-changing
request that is not JSON, or that a browser sent from another site, changes nothing, whatever
the identity; the broker's Go client (JSON without Content-Type, no Origin) still works."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reconciler.api import ApiSettings
from tests.api.pki import TestCa
from tests.api.serving import served_api
from tests.api.support import cluster_body

ADMIN = "spiffe://cluster.local/ns/kcp-system/sa/kcp-kyma-environment-broker"


@pytest.fixture
def ca(tmp_path: Path) -> TestCa:
    return TestCa(tmp_path / "pki")


async def test_forged_cross_site_requests_change_nothing_whatever_the_identity(
    tmp_path: Path, ca: TestCa
) -> None:
    settings = ApiSettings(client_ca_file=ca.file, client_identities={ADMIN: "admin"})
    admin = ca.client("keb", ADMIN)
    body = json.dumps(cluster_body("rt-csrf")).encode()
    async with served_api(tmp_path, ca, settings) as served, served.client(admin) as client:
        own = f"https://{client.base_url.netloc.decode()}"
        forged = [  # (headers, content, expected status)
            ({"Content-Type": "text/plain"}, body, 415),  # a form's enctype=text/plain
            ({"Content-Type": "application/x-www-form-urlencoded"}, b"a=b", 415),
            ({"Content-Type": "multipart/form-data; boundary=x"}, b"--x--", 415),
            ({"Origin": "https://evil.example"}, body, 403),  # fetch of a bare body
            ({"Origin": "null"}, body, 403),  # a sandboxed frame
            ({"Sec-Fetch-Site": "cross-site"}, body, 403),
            ({"Sec-Fetch-Site": "same-site", "Content-Type": "application/json"}, body, 403),
            (
                {"Origin": "https://evil.example", "Content-Type": "application/json"},
                body,
                403,
            ),
            ({"Origin": own, "Sec-Fetch-Site": "same-origin"}, body, 415),  # no Content-Type
        ]
        for headers, content, expected in forged:
            answer = await client.post("/v1/clusters", content=content, headers=headers)
            assert answer.status_code == expected, (headers, answer.text)
        assert (await client.get("/v1/clusters/rt-csrf/status")).status_code == 404

        go_client = await client.post("/v1/clusters", content=body)  # no Content-Type, no Origin
        assert go_client.status_code == 200, go_client.text
        console = await client.post(
            "/v1/clusters/rt-csrf/config/1/restore",
            content=b"{}",
            headers={
                "Origin": own,
                "Sec-Fetch-Site": "same-origin",
                "Content-Type": "application/json",
            },
        )
        assert console.status_code == 201, console.text
        configs_before = (await client.get("/v1/clusters/rt-csrf/configs")).text
        empty_form = await client.post(
            "/v1/clusters/rt-csrf/config/1/restore",
            content=b"",
            headers={
                "Content-Type": "application/x-www-form-urlencoded",
                "Origin": "https://evil.example",
                "Sec-Fetch-Site": "cross-site",
            },
        )
        assert empty_form.status_code == 415
        refused_status = await client.put(
            "/v1/clusters/rt-csrf/status",
            content=b'{"status": "reconcile_disabled"}',
            headers={"Content-Type": "text/plain"},
        )
        assert refused_status.status_code == 415
        assert (await client.get("/v1/clusters/rt-csrf/configs")).text == configs_before
