"""Remote mode configured from the docs: `reconciler mothership serve` and `reconciler component
serve` as real processes, started with exactly the settings of docs/mothership.md's remote-mode
table (placeholders filled in), reconcile a cluster on the test bed to `ready`; and
`mothership serve` refuses to start, naming the setting, for each one of them left out."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import yaml
from typer.testing import CliRunner

from reconciler.cli.main import app
from reconciler.devcluster.ports import free_ports
from reconciler.devcluster.processes import tied_to_parent
from reconciler.util.polling import poll_until
from tests.conftest import KubeTarget
from tests.helpers.charts import CONFIGMAPS, make_chart
from tests.remote.support import serve_command

REPO_ROOT = Path(__file__).resolve().parents[2]
DOC = REPO_ROOT / "docs" / "mothership.md"
TOKEN = "doc-driven-shared-token-5c1e"
ADMIN = "doc-driven-admin-token-77aa"


@dataclass(frozen=True)
class Documented:
    process: str
    env: str
    key: str
    value: str


def documented() -> list[Documented]:
    """The rows of the remote-settings table in docs/mothership.md."""
    text = DOC.read_text()
    start = text.index("<!-- remote-settings")
    table = text[start : text.index("<!-- /remote-settings -->")]
    rows = []
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 5 and cells[1].startswith("`RECONCILER_"):
            process, env, key, value, _ = cells
            rows.append(Documented(process, env.strip("`"), key, value.strip("`")))
    return rows


def environment(process: str, mothership: str, component: str) -> dict[str, str]:
    """The documented settings of one process, placeholders filled in."""
    filled = {}
    for row in documented():
        if row.process == process:
            value = row.value.replace("SHARED-TOKEN", TOKEN)
            value = value.replace("MOTHERSHIP-HOST:8080", mothership)
            filled[row.env] = value.replace("COMPONENT-HOST:8090", component)
    return filled


def base_env(tmp_path: Path) -> dict[str, str]:
    """What every process of the test needs apart from remote mode: our sources, a data
    directory and the API's authentication (admin token)."""
    tokens = tmp_path / "tokens.yaml"
    tokens.write_text(yaml.safe_dump({ADMIN: {"subject": "doc-test", "role": "admin"}}))
    env = {k: v for k, v in os.environ.items() if not k.startswith("RECONCILER_")}
    env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(REPO_ROOT / "src"), str(REPO_ROOT), os.environ.get("PYTHONPATH")])
    )
    env["RECONCILER_DATA_DIR"] = str(tmp_path / "data")
    env["RECONCILER_API_TOKENS_FILE"] = str(tokens)
    return env


@contextmanager
def started(
    command: list[str], env: dict[str, str], log: Path
) -> Iterator[subprocess.Popen[bytes]]:
    with log.open("wb") as output:
        process = subprocess.Popen(
            tied_to_parent(command),
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
    try:
        yield process
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def test_the_table_names_all_four_settings_and_the_component_token() -> None:
    names = {(row.process, row.env) for row in documented()}
    assert {
        ("mothership", "RECONCILER_INVOKER"),
        ("mothership", "RECONCILER_COMPONENT_RECONCILERS"),
        ("mothership", "RECONCILER_COMPONENT_RECONCILER_TOKEN"),
        ("mothership", "RECONCILER_CALLBACK_URL"),
        ("mothership", "RECONCILER_API_CALLBACK_TOKEN"),
        ("component reconciler", "RECONCILER_COMPONENT_TOKEN"),
    } == names


@pytest.mark.slow
async def test_both_processes_started_from_the_documented_settings_reach_ready(
    kube_cluster: KubeTarget, tmp_path: Path, namespace: str
) -> None:
    api_port, component_port = free_ports(2)
    mothership = f"127.0.0.1:{api_port}"
    component = f"127.0.0.1:{component_port}"
    env = base_env(tmp_path)
    binary = str(Path(sys.executable).parent / "reconciler")
    component_env = {
        **env,
        "RECONCILER_COMPONENT_CHARTS_CACHE": str(tmp_path / "component-cache"),
        **environment("component reconciler", mothership, component),
    }
    mothership_env = {**env, **environment("mothership", mothership, component)}
    chart = make_chart(tmp_path, "cms", {"cms.yaml": CONFIGMAPS}, {"configmaps": ["from-docs"]})
    body = {
        "runtimeID": "rt-docs",
        "kymaConfig": {
            "version": "1.0",
            "components": [{"component": "cms", "namespace": namespace, "URL": str(chart)}],
        },
        "kubeconfig": kube_cluster.kubeconfig.read_text(),
    }
    with (
        started(
            [*serve_command(), "--port", str(component_port)],
            component_env,
            tmp_path / "component.log",
        ),
        started(
            [binary, "mothership", "serve", "--port", str(api_port)],
            mothership_env,
            tmp_path / "mothership.log",
        ) as serving,
    ):
        async with httpx.AsyncClient(
            base_url=f"http://{mothership}", headers={"Authorization": f"Bearer {ADMIN}"}
        ) as client:

            async def live() -> bool:
                if serving.poll() is not None:
                    log = (tmp_path / "mothership.log").read_text()[-3000:]
                    raise AssertionError(f"mothership exited: {log}")
                try:
                    return (await client.get("/health/ready")).status_code == 200
                except httpx.TransportError:
                    return False

            await poll_until(live, timeout=60, what="mothership serve to answer")
            created = await client.post("/v1/clusters", json=body)
            assert created.status_code in (200, 201), created.text

            async def ready() -> bool:
                status = (await client.get("/v1/clusters/rt-docs/status")).json()
                assert status["health"]["health"] not in ("failing", "unreachable"), (
                    status,
                    (tmp_path / "component.log").read_text()[-3000:],
                )
                return bool(status["status"] == "ready")

            await poll_until(ready, timeout=120, what="rt-docs ready through remote mode")
    assert "callbackURL" not in (tmp_path / "mothership.log").read_text()


REMOTE_SETTINGS = [
    "RECONCILER_COMPONENT_RECONCILERS",
    "RECONCILER_COMPONENT_RECONCILER_TOKEN",
    "RECONCILER_CALLBACK_URL",
    "RECONCILER_API_CALLBACK_TOKEN",
]


@pytest.mark.parametrize("left_out", REMOTE_SETTINGS)
def test_serve_refuses_to_start_without_each_remote_setting(
    tmp_path: Path, left_out: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = environment("mothership", "127.0.0.1:8080", "127.0.0.1:8090")
    for name in [k for k in os.environ if k.startswith("RECONCILER_")]:
        monkeypatch.delenv(name)
    env.pop(left_out)
    env["RECONCILER_DATA_DIR"] = str(tmp_path / "data")
    env["RECONCILER_API_AUTH"] = "none"
    result = CliRunner().invoke(app, ["mothership", "serve", "--port", "1"], env=env)
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert lines[0].startswith("error: invoker=remote needs ")
    assert left_out in lines[0]
    key = {row.env: row.key for row in documented()}[left_out]
    assert re.findall(r"`([^`]+)`", key)[0] in lines[0]  # the config key too
    assert not (tmp_path / "data" / "reconciler.db").exists()  # nothing was started


def test_a_callback_url_that_is_not_http_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = environment("mothership", "127.0.0.1:8080", "127.0.0.1:8090")
    for name in [k for k in os.environ if k.startswith("RECONCILER_")]:
        monkeypatch.delenv(name)
    env["RECONCILER_CALLBACK_URL"] = "mothership:8080"
    env["RECONCILER_DATA_DIR"] = str(tmp_path / "data")
    env["RECONCILER_API_AUTH"] = "none"
    result = CliRunner().invoke(app, ["mothership", "serve"], env=env)
    assert result.exit_code == 2
    assert "callback_url (RECONCILER_CALLBACK_URL) must be an http(s) URL" in result.output
