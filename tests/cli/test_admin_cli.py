"""The admin CLI against a real mothership API served on a port (engine with a no-op invoker)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from typer.testing import CliRunner, Result

from reconciler.api import ApiSettings
from reconciler.api.app import create_app
from reconciler.api.auth import Role
from reconciler.cli.main import app
from reconciler.model.status import ClusterStatus
from reconciler.mothership.engine import Engine
from reconciler.mothership.invoker import Invoker
from reconciler.mothership.planner import Planner
from reconciler.observability.logging import configure_logging
from reconciler.util.polling import poll_until
from tests.api.support import Tokens, accept_kubeconfig, engine_settings, noop_invoker
from tests.remote.support import serve_app

EXAMPLES = Path(__file__).parents[2] / "examples" / "kyma-like"


async def cli(*args: str, env: dict[str, str] | None = None) -> Result:
    return await asyncio.to_thread(CliRunner().invoke, app, list(args), env=env)


@asynccontextmanager
async def served_api(
    tmp_path: Path,
    tokens: Tokens,
    invoker: Callable[[Planner], Invoker] = noop_invoker,
    **overrides: Any,
) -> AsyncIterator[tuple[Engine, str]]:
    """An engine (no-op invoker unless given, engine settings `overrides`) with the API served
    on a port, its audit log in `tmp_path/audit.log`; yields it and the base URL."""
    settings = engine_settings(tmp_path / "data", workspace=EXAMPLES, **overrides)
    engine = Engine(settings, invoker=invoker)
    async with engine:
        api = create_app(
            engine.service,
            settings=ApiSettings(tokens_file=tokens.path, audit_log=str(tmp_path / "audit.log")),
            check_kubeconfig=accept_kubeconfig,
        )
        async with serve_app(api) as url:
            yield engine, url


def as_json(result: Result) -> Any:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


async def test_register_watch_disable_enable_and_inspect_through_the_api(tmp_path: Path) -> None:
    configure_logging(json_lines=True)  # engine logs to stderr: stdout is the CLI's JSON
    tokens = Tokens.write(tmp_path)
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\n")
    async with served_api(tmp_path, tokens) as (engine, url):
        admin = ("--url", url, "--token", tokens.by_role[Role.ADMIN], "-o", "json")
        viewer = ("--url", url, "--token", tokens.by_role[Role.VIEWER])
        registered = as_json(
            await cli(
                "cluster",
                "register",
                "rt-cli",
                "--kubeconfig",
                str(kubeconfig),
                "-w",
                str(EXAMPLES),
                *admin,
            )
        )
        assert registered["status"] == "reconcile_pending"

        async def ready() -> bool:
            status = as_json(await cli("cluster", "status", "rt-cli", *viewer, "-o", "json"))
            return status["status"] == "ready"

        await poll_until(ready, timeout=30, what="rt-cli ready via the admin CLI")
        listed = as_json(await cli("cluster", "list", *viewer, "-o", "json"))
        assert [c["runtimeID"] for c in listed] == ["rt-cli"]

        denied = await cli("cluster", "disable", "rt-cli", *viewer)
        assert denied.exit_code == 1
        assert "403" in denied.output
        operator = ("--url", url, "--token", tokens.by_role[Role.OPERATOR], "-o", "json")
        assert as_json(await cli("cluster", "disable", "rt-cli", *operator))["status"] == (
            "reconcile_disabled"
        )
        assert (await engine.service.cluster("rt-cli")).status is (ClusterStatus.RECONCILE_DISABLED)
        # enabling schedules a run that re-verifies the cluster
        enabled = as_json(await cli("cluster", "enable", "rt-cli", *operator))
        assert enabled["status"] == "reconcile_pending"
        await poll_until(ready, timeout=30, what="rt-cli ready again after enabling")

        history = as_json(await cli("cluster", "history", "rt-cli", *viewer, "-o", "json"))
        assert history["statusChanges"][0]["status"] == "ready"
        assert history["statusChanges"][0]["health"] == "healthy"
        (latest, *_) = as_json(await cli("reconciliation", "list", *viewer, "-o", "json"))
        info = as_json(
            await cli("reconciliation", "info", latest["schedulingID"], *viewer, "-o", "json")
        )
        assert {op["state"] for op in info["operations"]} == {"done"}
        table = await cli("reconciliation", "info", latest["schedulingID"], *viewer)
        assert "istio" in table.stdout


async def test_unreachable_api_is_named() -> None:
    result = await cli("cluster", "list", "--url", "http://127.0.0.1:1")
    assert result.exit_code == 1
    assert "cannot reach http://127.0.0.1:1" in result.output


async def test_token_comes_from_a_file_or_the_environment_not_only_the_command_line(
    tmp_path: Path,
) -> None:
    tokens = Tokens.write(tmp_path)
    viewer = tokens.by_role[Role.VIEWER]
    token_file = tmp_path / "token"
    token_file.write_text(f"  {viewer}\n")
    async with served_api(tmp_path, tokens) as (_, url):
        listed = ("cluster", "list", "--url", url, "-o", "json")
        assert as_json(await cli(*listed, "--token-file", str(token_file))) == []
        assert as_json(await cli(*listed, env={"RECONCILER_TOKEN_FILE": str(token_file)})) == []
        assert as_json(await cli(*listed, env={"RECONCILER_TOKEN": viewer})) == []
        anonymous = await cli(*listed)
        assert anonymous.exit_code == 1
        assert "401" in anonymous.output
    both = await cli(*listed, "--token", viewer, "--token-file", str(token_file))
    assert both.exit_code == 2
    assert "either --token or --token-file" in both.output
    missing = await cli(*listed, "--token-file", str(tmp_path / "nope"))
    assert missing.exit_code == 2
    assert f"token file {tmp_path / 'nope'}" in missing.output.replace("\n", "")
    (tmp_path / "empty").write_text("\n")
    empty = await cli(*listed, "--token-file", str(tmp_path / "empty"))
    assert empty.exit_code == 2
    assert "is empty" in empty.output


async def test_rollback_to_an_earlier_version_and_see_it_in_configs_and_history(
    tmp_path: Path,
) -> None:
    configure_logging(json_lines=True)
    tokens = Tokens.write(tmp_path)
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\n")
    async with served_api(tmp_path, tokens) as (engine, url):
        admin = ("--url", url, "--token", tokens.by_role[Role.ADMIN])
        register = ("cluster", "register", "rt-back", "--kubeconfig", str(kubeconfig))
        for version in ("1.0", "2.0"):
            await cli(*register, "-w", str(EXAMPLES), "--kyma-version", version, *admin)
        operator = ("--url", url, "--token", tokens.by_role[Role.OPERATOR])
        denied = await cli("cluster", "rollback", "rt-back", "--to", "1", *operator)
        assert denied.exit_code == 1
        assert "403" in denied.output

        rolled = as_json(
            await cli("cluster", "rollback", "rt-back", "--to", "1", *admin, "-o", "json")
        )
        assert (rolled["configurationVersion"], rolled["restoredFrom"]) == (3, 1)
        state = await engine.service.cluster("rt-back")
        assert (state.spec.kyma_config.version, state.restored_from) == ("1.0", 1)

        configs = await cli("cluster", "configs", "rt-back", *admin)
        assert configs.exit_code == 0, configs.output
        assert "3 (rollback to 1)" in configs.stdout
        history = await cli("cluster", "history", "rt-back", *admin)
        assert "(rollback to 1)" in history.stdout
        unknown = await cli("cluster", "rollback", "rt-back", "--to", "99", *admin)
        assert unknown.exit_code == 1
        assert "404: configuration version 99 of cluster rt-back not found" in unknown.output
