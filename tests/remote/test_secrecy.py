"""The kubeconfig in a task never leaves the service: not in responses, log lines or callbacks,
whether the task succeeds, cannot reach its cluster, carries a broken kubeconfig or is invalid."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from reconciler.kube.kubeconfig import scrubber
from reconciler.model.remote import CallbackStatus, RemoteTask
from reconciler.model.task import ChartRef, Task
from reconciler.observability.logging import configure_logging
from reconciler.util.secrecy import REDACTED
from tests.helpers.charts import LONG_SECRET, make_chart, pieces_in, secret_label
from tests.remote.support import CallbackReceiver, running_service, settings, task_body

TOKEN_VALUE = "kubeconfig-token-Zm9vYmFyYmF6cXV4"
UNREACHABLE = f"""\
apiVersion: v1
kind: Config
clusters: [{{name: c, cluster: {{server: "https://127.0.0.1:1"}}}}]
users: [{{name: u, user: {{token: {TOKEN_VALUE}}}}}]
contexts: [{{name: x, context: {{cluster: c, user: u}}}}]
current-context: x
"""
MALFORMED = f"""\
apiVersion: v1
kind: Config
users: [{{name: u, user: {{token: {TOKEN_VALUE}}}}}]
current-context: {TOKEN_VALUE}
"""
BROKEN_YAML = f"apiVersion: v1\nusers:\n  - token: {TOKEN_VALUE}\n   bad: [\n"


def secrets_of(kubeconfig: str) -> list[str]:
    values = re.findall(r"(?:-data|token):\s*([A-Za-z0-9+/=_-]{16,})", kubeconfig)
    return [kubeconfig, *values]


async def test_kubeconfig_appears_in_no_response_log_line_or_callback(
    tmp_path: Path,
    receiver: CallbackReceiver,
    kubeconfig_text: str,
    configmaps_chart: Path,
    namespace: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    configure_logging(json_lines=True, level="DEBUG")
    cases = {
        "c-real": kubeconfig_text,
        "c-unreachable": UNREACHABLE,
        "c-malformed": MALFORMED,
    }
    responses: list[str] = []
    async with running_service(settings(tmp_path)) as (_, client):

        async def run(kubeconfig: str, correlation_id: str, **extra: object) -> int:
            response = await client.post(
                "/v1/run",
                json=task_body(
                    chart=configmaps_chart,
                    namespace=namespace,
                    kubeconfig=kubeconfig,
                    callback_url=receiver.callback_url(correlation_id),
                    correlation_id=correlation_id,
                    **extra,
                ),
            )
            responses.append(response.text)
            return response.status_code

        for correlation_id, kubeconfig in cases.items():
            assert await run(kubeconfig, correlation_id) == 200
        assert await run(BROKEN_YAML, "c-yaml") == 400  # refused before it is taken
        assert "kubeconfig" in responses[-1]
        assert await run(kubeconfig_text, "c-invalid", type="upgrade") == 400
        finals = {cid: await receiver.wait_final(cid) for cid in cases}
    assert finals["c-real"].status is CallbackStatus.SUCCESS
    assert finals["c-unreachable"].status is CallbackStatus.ERROR
    assert "component web" in finals["c-unreachable"].error
    assert finals["c-malformed"].status is CallbackStatus.ERROR

    captured = capsys.readouterr()
    logs = captured.out + captured.err
    assert "task finished" in logs  # the logs were captured at all
    everything = "\n".join([*responses, *receiver.raw_bodies, logs])
    for kubeconfig in [*cases.values(), BROKEN_YAML]:
        for secret in secrets_of(kubeconfig):
            assert secret not in everything
    assert TOKEN_VALUE not in everything


def test_scrubber_redacts_the_kubeconfig_and_each_credential_in_it() -> None:
    scrub = scrubber(UNREACHABLE)
    text = f"user {TOKEN_VALUE} failed; config was {UNREACHABLE.strip()}"
    assert scrub(text) == "user <redacted> failed; config was <redacted>"


SECRET_VALUE = "hunter2-secret-value"


@pytest.mark.parametrize("secret", [SECRET_VALUE, LONG_SECRET], ids=["short", "904-characters"])
async def test_a_secret_value_echoed_by_the_apiserver_leaves_in_no_callback_or_log_line(
    secret: str,
    tmp_path: Path,
    receiver: CallbackReceiver,
    kubeconfig_text: str,
    namespace: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    configure_logging(json_lines=True, level="DEBUG")
    chart = make_chart(tmp_path, "leaky", {"cm.yaml": secret_label("db.password")})
    async with running_service(settings(tmp_path)) as (_, client):
        response = await client.post(
            "/v1/run",
            json=task_body(
                chart=chart,
                namespace=namespace,
                kubeconfig=kubeconfig_text,
                callback_url=receiver.callback_url("c-leak"),
                correlation_id="c-leak",
                configuration={"db": {"password": secret}},
                secretKeys=["db.password"],
                componentConfiguration={"maxRetries": 1},
            ),
        )
        assert response.status_code == 200, response.text
        final = await receiver.wait_final("c-leak")
    assert final.status is CallbackStatus.ERROR
    assert "Invalid value" in final.error
    assert REDACTED in final.error
    assert CallbackStatus.FAILED in receiver.statuses("c-leak")  # the retry's callback too
    logs = capsys.readouterr()
    assert "task finished" in logs.err + logs.out
    everything = "\n".join([*receiver.raw_bodies, logs.out, logs.err])
    assert secret not in everything
    assert not pieces_in(secret, everything)


def test_the_mothership_names_the_secret_configuration_keys_in_the_task() -> None:
    task = Task(
        component="web",
        namespace="default",
        version="1",
        source=ChartRef("/charts/web"),
        configuration={"db": {"password": SECRET_VALUE}, "replicas": 2},
        secret_keys=("db.password",),
        correlation_id="c-1",
    )
    remote = RemoteTask.of(task, kubeconfig="k", callback_url="http://m/cb", max_retries=0)
    assert remote.model_dump(by_alias=True)["secretKeys"] == ["db.password"]
    wire = RemoteTask.model_validate_json(remote.model_dump_json(by_alias=True))
    assert wire.secret_values() == [SECRET_VALUE]
    assert wire.to_task().secret_keys == ("db.password",)
