"""`POST /v1/run` refuses a task whose kubeconfig would run a command or read a file on the
service's host (400 naming the field): the command is not run, the file is not read and sent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from tests.remote.support import CallbackReceiver, running_service, serve_app, settings, task_body


def recorder(seen: list[str]) -> FastAPI:
    """A stand-in for the kubeconfig's server: records every request's Authorization header."""
    app = FastAPI()

    @app.api_route("/{path:path}", methods=["GET", "POST", "PATCH", "PUT", "DELETE"])
    async def anything(request: Request, path: str) -> JSONResponse:
        seen.append(request.headers.get("authorization", ""))
        return JSONResponse({"gitVersion": "v1.20.2"} if path == "version" else {})

    return app


def kubeconfig(server: str, user: dict[str, Any]) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "c", "cluster": {"server": server}}],
            "users": [{"name": "u", "user": user}],
            "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
            "current-context": "x",
        }
    )


@pytest.mark.parametrize("field", ["exec", "tokenFile", "auth-provider"])
async def test_a_task_kubeconfig_with_host_access_is_refused_and_nothing_runs_or_is_read(
    tmp_path: Path, receiver: CallbackReceiver, configmaps_chart: Path, field: str
) -> None:
    marker = tmp_path / "marker"
    token_file = tmp_path / "token"
    token_file.write_text("host-token-from-a-local-file")
    users: dict[str, dict[str, Any]] = {
        "exec": {
            "exec": {
                "apiVersion": "client.authentication.k8s.io/v1beta1",
                "command": "/bin/sh",
                "args": ["-c", f"touch {marker}; echo '{{}}'"],
            }
        },
        "tokenFile": {"tokenFile": str(token_file)},
        "auth-provider": {"auth-provider": {"name": "x", "config": {"cmd-path": "/bin/sh"}}},
    }
    seen: list[str] = []
    async with (
        serve_app(recorder(seen)) as server,
        running_service(settings(tmp_path)) as (app, client),
    ):
        response = await client.post(
            "/v1/run",
            json=task_body(
                chart=configmaps_chart,
                namespace="default",
                kubeconfig=kubeconfig(server, users[field]),
                callback_url=receiver.callback_url("c-host"),
                correlation_id="c-host",
            ),
        )
        assert response.status_code == 400, response.text
        error = response.json()["error"]
        assert error.startswith("kubeconfig:")
        assert f"`{field}`" in error
        assert app.state.service.pool.busy == 0  # nothing was taken to run later
    assert not marker.exists()
    assert seen == []  # the file's token never went to the kubeconfig's server
    assert receiver.of("c-host") == []
