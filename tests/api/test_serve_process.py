"""`reconciler mothership serve` as a real process: mutual TLS on the API, `/metrics` on a
listener of its own, and SIGTERM stopping both listeners and then the engine (uvicorn's own
signal handling used to end the process before the engine could hand operations back)."""

from __future__ import annotations

import asyncio
import os
import signal
import ssl
import subprocess
import sys
from pathlib import Path

import httpx

from reconciler.devcluster.ports import free_ports
from reconciler.util.polling import poll_until
from tests.api.pki import Pair, TestCa
from tests.helpers.logs import log_lines

REPO_ROOT = Path(__file__).resolve().parents[2]


async def test_serve_answers_over_mtls_serves_metrics_apart_and_stops_gracefully(
    tmp_path: Path,
) -> None:
    ca = TestCa(tmp_path / "pki")
    server, dashboard = ca.server(), ca.client("dashboard")
    api_port, metrics_port = free_ports(2)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(REPO_ROOT / "src"), str(REPO_ROOT), env.get("PYTHONPATH")])
    )
    env.update(
        {
            "RECONCILER_DATA_DIR": str(tmp_path / "data"),
            "RECONCILER_API_CLIENT_CA_FILE": str(ca.file),
            "RECONCILER_API_CLIENT_IDENTITIES": '{"dashboard": "viewer"}',
            "RECONCILER_API_METRICS_PORT": str(metrics_port),
        }
    )
    log = tmp_path / "serve.log"
    command = [str(Path(sys.executable).parent / "reconciler"), "mothership", "serve"]
    command += ["--port", str(api_port), "--cert-file", str(server.cert)]
    command += ["--key-file", str(server.key)]
    with log.open("wb") as output:
        process = await asyncio.create_subprocess_exec(
            *command, stdout=output, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
    try:
        api = f"https://127.0.0.1:{api_port}"
        async with (
            httpx.AsyncClient(base_url=api, verify=_context(ca, dashboard)) as client,
            httpx.AsyncClient(base_url=f"http://127.0.0.1:{metrics_port}") as scraper,
        ):

            async def live() -> bool:
                if process.returncode is not None:
                    raise AssertionError(f"serve exited:\n{log.read_text()[-4000:]}")
                try:
                    return (await client.get("/health/live")).status_code == 200
                except httpx.TransportError:
                    return False

            await poll_until(live, timeout=60, what="mothership serve to answer")
            assert (await client.get("/v1/reconciliations")).status_code == 200
            assert (await client.get("/metrics")).status_code == 404  # not on the API
            metrics = await scraper.get("/metrics")
            assert metrics.status_code == 200
            assert "reconciler_worker_occupancy_ratio" in metrics.text

        process.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(process.wait(), timeout=60)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    output = log.read_text()
    assert code == 0, output[-4000:]
    assert "mothership stopped" in output
    assert any(line["event"] == "mothership stopped" for line in log_lines(output))


def _context(ca: TestCa, pair: Pair) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(ca.file))
    context.load_cert_chain(str(pair.cert), str(pair.key))
    return context
