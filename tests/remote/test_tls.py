"""TLS both ways: the service serves HTTPS and may require client certificates; callbacks go to
an HTTPS mothership verified with a private CA, with a client certificate (mTLS)."""

from __future__ import annotations

import ssl
from pathlib import Path

from reconciler.devcluster.pki import Pki, generate_pki
from reconciler.model.remote import CallbackStatus, RemoteTask
from reconciler.remote.client import ComponentReconcilerClient, RunStatus
from tests.remote.support import (
    TOKEN,
    CallbackReceiver,
    running_service,
    serve_app,
    serve_process,
    settings,
    task_body,
)
from tests.remote.test_client import UNREACHABLE


def client_context(pki: Pki, *, with_certificate: bool) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(pki.ca_cert))
    if with_certificate:
        context.load_cert_chain(str(pki.admin_cert), str(pki.admin_key))
    return context


def unreachable_task(receiver: CallbackReceiver, correlation_id: str) -> RemoteTask:
    return RemoteTask.model_validate(
        task_body(
            chart="/nonexistent",
            namespace="ns",
            kubeconfig=UNREACHABLE,
            callback_url=receiver.callback_url(correlation_id),
            correlation_id=correlation_id,
        )
    )


async def test_callbacks_reach_an_https_mothership_with_a_client_certificate(
    tmp_path: Path,
) -> None:
    pki = generate_pki(tmp_path / "pki")
    receiver = CallbackReceiver()
    mtls = {
        "ssl_certfile": str(pki.path("server.crt")),
        "ssl_keyfile": str(pki.path("server.key")),
        "ssl_ca_certs": str(pki.ca_cert),
        "ssl_cert_reqs": ssl.CERT_REQUIRED,
    }
    async with serve_app(receiver.app(), **mtls) as url:
        receiver.url = url
        service_settings = settings(
            tmp_path,
            ca_file=pki.ca_cert,
            client_cert_file=pki.admin_cert,
            client_key_file=pki.admin_key,
        )
        async with running_service(service_settings) as (_, client):
            task = unreachable_task(receiver, "t-mtls")
            body = task.model_dump(mode="json", by_alias=True)
            assert (await client.post("/v1/run", json=body)).status_code == 200
            final = await receiver.wait_final("t-mtls")
    assert url.startswith("https://")
    assert final.status is CallbackStatus.ERROR
    assert "cannot reach the apiserver" in final.error


async def test_serve_over_https_requiring_client_certificates(
    tmp_path: Path, receiver: CallbackReceiver
) -> None:
    pki = generate_pki(tmp_path / "pki")
    env = {"RECONCILER_COMPONENT_CLIENT_CA_FILE": str(pki.ca_cert)}
    options = (
        "--cert-file",
        str(pki.path("server.crt")),
        "--key-file",
        str(pki.path("server.key")),
    )
    with serve_process(tmp_path, *options, env=env, scheme="https") as serve:
        trusted = client_context(pki, with_certificate=True)
        await serve.live(verify=trusted)
        async with ComponentReconcilerClient(serve.url, TOKEN, verify=trusted) as client:
            assert await client.ready()
            accepted = await client.run(unreachable_task(receiver, "t-https"))
            assert accepted.status is RunStatus.ACCEPTED
            assert (await receiver.wait_final("t-https")).status is CallbackStatus.ERROR
        anonymous = client_context(pki, with_certificate=False)
        async with ComponentReconcilerClient(serve.url, TOKEN, verify=anonymous) as client:
            refused = await client.run(unreachable_task(receiver, "t-nocert"))
        assert refused.status is RunStatus.UNAVAILABLE
        assert receiver.of("t-nocert") == []
