"""`reconciler component serve` as a real process: health, a task over real HTTP, and the
`failed` callback for a running task when the process is stopped with SIGTERM."""

from __future__ import annotations

import signal
from pathlib import Path

from typer.testing import CliRunner

from reconciler.cli.component import app as component_app
from reconciler.model.remote import CallbackStatus, RemoteTask
from reconciler.remote.client import ComponentReconcilerClient, RunStatus
from tests.helpers.logs import log_lines
from tests.remote.support import TOKEN, CallbackReceiver, serve_process, task_body


async def test_serve_process_runs_a_task_and_reports_running_tasks_on_sigterm(
    tmp_path: Path,
    receiver: CallbackReceiver,
    kubeconfig_text: str,
    configmaps_chart: Path,
    deployment_chart: Path,
    namespace: str,
) -> None:
    def task(chart: Path, component: str, correlation_id: str) -> RemoteTask:
        return RemoteTask.model_validate(
            task_body(
                chart=chart,
                namespace=namespace,
                component=component,
                kubeconfig=kubeconfig_text,
                callback_url=receiver.callback_url(correlation_id),
                correlation_id=correlation_id,
                timeout=120,
            )
        )

    with serve_process(tmp_path, "--workers", "4") as serve:
        await serve.live()
        async with ComponentReconcilerClient(serve.url, TOKEN) as client:
            ok = await client.run(task(configmaps_chart, "web", "p-ok"))
            assert ok.status is RunStatus.ACCEPTED
            assert (await receiver.wait_final("p-ok")).status is CallbackStatus.SUCCESS
            slow = await client.run(task(deployment_chart, "slow", "p-slow"))
            assert slow.status is RunStatus.ACCEPTED
        await receiver.wait_status("p-slow", CallbackStatus.RUNNING)

        serve.process.send_signal(signal.SIGTERM)
        # uvicorn shuts down gracefully, then re-raises the signal: the exit status says SIGTERM
        assert await serve.exited() == -signal.SIGTERM
        output = serve.log.read_text()

    last = receiver.of("p-slow")[-1].message
    assert last.status is CallbackStatus.FAILED
    assert last.error == "component reconciler shutting down"
    assert "component reconciler stopped" in output
    lines = log_lines(output)  # one schema for every line; no access or request lines
    assert not any("HTTP/1.1" in line["event"] for line in lines)
    assert kubeconfig_text.strip() not in output
    assert "client-key-data" not in output


def test_serve_refuses_to_start_without_a_token(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        component_app,
        ["serve", "--port", "1"],
        env={"RECONCILER_COMPONENT_TOKEN": "", "RECONCILER_COMPONENT_CHARTS_CACHE": str(tmp_path)},
    )
    assert result.exit_code == 2
    assert "no token configured" in result.output


def test_serve_reports_an_unreadable_token_file(tmp_path: Path) -> None:
    missing = tmp_path / "missing-token"
    result = CliRunner().invoke(component_app, ["serve", "--token-file", str(missing)])
    assert result.exit_code == 2
    assert f"token file {missing}" in result.output
