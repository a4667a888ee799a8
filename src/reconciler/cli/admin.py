"""`reconciler cluster ...` and `reconciler reconciliation ...`: the admin CLI of the mothership's
REST API (what the KCP CLI does for the original), with human tables or `--output json`."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from reconciler.cli.errors import BAD_INPUT, fail
from reconciler.errors import ReconcilerError

console = Console()

Url = Annotated[
    str,
    typer.Option("--url", envvar="RECONCILER_URL", help="Base URL of the mothership API."),
]
Token = Annotated[
    str | None,
    typer.Option(
        "--token",
        envvar="RECONCILER_TOKEN",
        help="Bearer token. Visible to other local users in `ps`: prefer --token-file or the"
        " environment variable.",
        show_default=False,
    ),
]
TokenFile = Annotated[
    Path | None,
    typer.Option(
        "--token-file",
        envvar="RECONCILER_TOKEN_FILE",
        help="File holding the bearer token (surrounding whitespace ignored).",
        show_default=False,
    ),
]
CaFile = Annotated[
    str | None, typer.Option("--ca-file", envvar="RECONCILER_CA_FILE", help="CA bundle (TLS).")
]
Output = Annotated[str, typer.Option("--output", "-o", help="table | json")]
DEFAULT_URL = "http://127.0.0.1:8080"

cluster_app = typer.Typer(help="Clusters known to the mothership.", no_args_is_help=True)
reconciliation_app = typer.Typer(help="Reconciliations and their operations.", no_args_is_help=True)


def _bearer(token: str | None, token_file: Path | None) -> str | None:
    """The token from `--token`/`RECONCILER_TOKEN` or from `--token-file`; not both."""
    if token_file is None:
        return token
    if token:
        raise fail("give either --token or --token-file, not both", BAD_INPUT)
    try:
        text = token_file.read_text().strip()
    except OSError as exc:
        raise fail(f"token file {token_file}: {exc.strerror}", BAD_INPUT) from None
    if not text:
        raise fail(f"token file {token_file} is empty", BAD_INPUT)
    return text


def _call(
    method: str, url: str, path: str, token: str | None, ca_file: str | None, **kwargs: Any
) -> Any:
    import httpx  # only the admin commands talk HTTP: keep other commands' start-up lean

    async def go() -> httpx.Response:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        async with httpx.AsyncClient(
            base_url=url, headers=headers, verify=ca_file or True, timeout=30
        ) as client:
            return await client.request(method, path, **kwargs)

    try:
        response = asyncio.run(go())
    except httpx.HTTPError as exc:
        raise fail(f"cannot reach {url}: {exc}") from None
    if response.status_code >= 400:
        try:
            message = response.json().get("error", response.text)
        except (ValueError, AttributeError):
            message = response.text
        raise fail(f"{response.status_code}: {message}")
    return response.json() if response.content else None


def _print(data: Any, output: str, table: Table | None) -> None:
    if output == "json" or table is None:
        typer.echo(json.dumps(data, indent=2))
    else:
        console.print(table)


@cluster_app.command("list")
def cluster_list(
    url: Url = DEFAULT_URL,
    token: Token = None,
    token_file: TokenFile = None,
    ca_file: CaFile = None,
    output: Output = "table",
) -> None:
    """All clusters with status and versions."""
    data = _call("GET", url, "/v1/clusters", _bearer(token, token_file), ca_file)
    table = Table("runtime", "status", "cluster v", "config v", "since")
    for item in data:
        table.add_row(
            item["runtimeID"],
            item["status"],
            str(item["clusterVersion"]),
            str(item["configurationVersion"]),
            item["statusChanged"],
        )
    _print(data, output, table)


@cluster_app.command("register")
def cluster_register(
    runtime_id: str,
    kubeconfig: Annotated[Path, typer.Option("--kubeconfig", help="Kubeconfig of the cluster.")],
    workspace: Annotated[
        Path, typer.Option("--workspace", "-w", help="Take the component list from here.")
    ],
    kyma_version: Annotated[str, typer.Option("--kyma-version")] = "local",
    profile: Annotated[str, typer.Option("--profile")] = "evaluation",
    url: Url = DEFAULT_URL,
    token: Token = None,
    token_file: TokenFile = None,
    ca_file: CaFile = None,
    output: Output = "table",
) -> None:
    """Register (or update) a cluster with every component of a workspace, as KEB would."""
    from reconciler.charts.workspace import Workspace

    try:
        components = Workspace(workspace).component_set()
        text = kubeconfig.read_text()
    except (ReconcilerError, OSError) as exc:
        raise fail(str(exc), BAD_INPUT) from None
    body = {
        "runtimeID": runtime_id,
        "runtimeInput": {"name": runtime_id, "description": "registered by reconciler cluster"},
        "kymaConfig": {
            "version": kyma_version,
            "profile": profile,
            "administrators": [],
            "components": [
                {"component": spec.name, "namespace": components.namespace_of(spec)}
                for spec in components.all()
            ],
        },
        "metadata": {},
        "kubeconfig": text,
    }
    data = _call("POST", url, "/v1/clusters", _bearer(token, token_file), ca_file, json=body)
    table = Table("runtime", "status", "cluster v", "config v", "status URL")
    table.add_row(
        data["cluster"],
        data["status"],
        str(data["clusterVersion"]),
        str(data["configurationVersion"]),
        data["statusURL"],
    )
    _print(data, output, table)


@cluster_app.command("status")
def cluster_status(
    runtime_id: str,
    url: Url = DEFAULT_URL,
    token: Token = None,
    token_file: TokenFile = None,
    ca_file: CaFile = None,
    output: Output = "table",
) -> None:
    """Current status of one cluster, with the failures of its last reconciliation."""
    data = _call(
        "GET", url, f"/v1/clusters/{runtime_id}/status", _bearer(token, token_file), ca_file
    )
    table = Table("runtime", "status", "cluster v", "config v", "failures")
    failures = "; ".join(f"{f['component']}: {f['reason']}" for f in data.get("failures") or [])
    table.add_row(
        data["cluster"],
        data["status"],
        str(data["clusterVersion"]),
        str(data["configurationVersion"]),
        failures,
    )
    _print(data, output, table)


@cluster_app.command("history")
def cluster_history(
    runtime_id: str,
    offset: Annotated[str, typer.Option(help="How far back, e.g. 24h, 168h.")] = "168h",
    url: Url = DEFAULT_URL,
    token: Token = None,
    token_file: TokenFile = None,
    ca_file: CaFile = None,
    output: Output = "table",
) -> None:
    """Status changes of one cluster, newest first."""
    data = _call(
        "GET",
        url,
        f"/v1/clusters/{runtime_id}/statusChanges",
        _bearer(token, token_file),
        ca_file,
        params={"offset": offset},
    )
    table = Table("started", "status", "duration", "config v")
    for change in data["statusChanges"]:
        table.add_row(
            change["started"],
            change["status"],
            f"{change['duration'] / 1e9:.1f}s",
            _config_version(change.get("configVersion"), change.get("restoredFrom")),
        )
    _print(data, output, table)


def _config_version(version: int | None, restored_from: int | None) -> str:
    """`7`, or `7 (rollback to 3)` for a version a rollback stored."""
    text = "" if version is None else str(version)
    return f"{text} (rollback to {restored_from})" if restored_from else text


@cluster_app.command("configs")
def cluster_configs(
    runtime_id: str,
    last: Annotated[int, typer.Option(help="Only the newest N.")] = 20,
    url: Url = DEFAULT_URL,
    token: Token = None,
    token_file: TokenFile = None,
    ca_file: CaFile = None,
    output: Output = "table",
) -> None:
    """Configuration versions of one cluster, newest first; rollbacks name their source."""
    data = _call(
        "GET",
        url,
        f"/v1/clusters/{runtime_id}/configs",
        _bearer(token, token_file),
        ca_file,
        params={"last": last},
    )
    table = Table("config v", "created", "kyma version", "profile", "cluster v")
    for item in data:
        table.add_row(
            _config_version(item["version"], item.get("restoredFrom")),
            item["created"],
            item["kymaVersion"],
            item["kymaProfile"],
            str(item["clusterVersion"]),
        )
    _print(data, output, table)


@cluster_app.command("rollback")
def cluster_rollback(
    runtime_id: str,
    to: Annotated[
        int, typer.Option("--to", min=1, help="The configuration version to go back to.")
    ],
    url: Url = DEFAULT_URL,
    token: Token = None,
    token_file: TokenFile = None,
    ca_file: CaFile = None,
    output: Output = "table",
) -> None:
    """Reconcile a cluster to an earlier configuration version (stored as a new version that
    names it; admin role). See `cluster configs` for the versions."""
    data = _call(
        "POST",
        url,
        f"/v1/clusters/{runtime_id}/config/{to}/restore",
        _bearer(token, token_file),
        ca_file,
    )
    table = Table("runtime", "status", "config v", "status URL")
    table.add_row(
        data["cluster"],
        data["status"],
        _config_version(data["configurationVersion"], data["restoredFrom"]),
        data["statusURL"],
    )
    _print(data, output, table)


def _set_status(
    runtime_id: str, status: str, url: str, token: str | None, ca_file: str | None, output: str
) -> None:
    data = _call(
        "PUT", url, f"/v1/clusters/{runtime_id}/status", token, ca_file, json={"status": status}
    )
    table = Table("runtime", "status")
    table.add_row(data["cluster"], data["status"])
    _print(data, output, table)


def _status_command(status: str, help_text: str) -> Callable[..., None]:
    """One of `disable` / `enable` / `reconcile`: PUT /v1/clusters/{id}/status."""

    def command(
        runtime_id: str,
        url: Url = DEFAULT_URL,
        token: Token = None,
        token_file: TokenFile = None,
        ca_file: CaFile = None,
        output: Output = "table",
    ) -> None:
        _set_status(runtime_id, status, url, _bearer(token, token_file), ca_file, output)

    command.__doc__ = help_text
    return command


for _name, _status, _help in (
    ("disable", "reconcile_disabled", "Stop reconciling a cluster (until enabled)."),
    ("enable", "ready", "Reconcile a disabled cluster again."),
    ("reconcile", "reconcile_pending", "Reconcile a cluster now."),
):
    cluster_app.command(_name)(_status_command(_status, _help))


@reconciliation_app.command("list")
def reconciliation_list(
    runtime_id: Annotated[list[str] | None, typer.Option("--runtime-id")] = None,
    status: Annotated[list[str] | None, typer.Option("--status")] = None,
    last: Annotated[int | None, typer.Option(help="Only the newest N.")] = None,
    url: Url = DEFAULT_URL,
    token: Token = None,
    token_file: TokenFile = None,
    ca_file: CaFile = None,
    output: Output = "table",
) -> None:
    """Reconciliations, newest first."""
    params: list[tuple[str, str]] = [("runtimeID", r) for r in runtime_id or []]
    params += [("status", s) for s in status or []]
    if last:
        params.append(("last", str(last)))
    data = _call(
        "GET", url, "/v1/reconciliations", _bearer(token, token_file), ca_file, params=params
    )
    table = Table("scheduling id", "runtime", "status", "finished", "created")
    for item in data:
        table.add_row(
            item["schedulingID"],
            item["runtimeID"],
            item["status"],
            str(item["finished"]),
            item["created"],
        )
    _print(data, output, table)


@reconciliation_app.command("info")
def reconciliation_info(
    scheduling_id: str,
    url: Url = DEFAULT_URL,
    token: Token = None,
    token_file: TokenFile = None,
    ca_file: CaFile = None,
    output: Output = "table",
) -> None:
    """One reconciliation with its operations; for a component still running or failed, the
    object that keeps it from being ready ("blocked by")."""
    data = _call(
        "GET", url, f"/v1/reconciliations/{scheduling_id}/info", _bearer(token, token_file), ca_file
    )
    table = Table(
        "priority",
        "component",
        "type",
        "state",
        "reason",
        "blocked by",
        title=(f"{data['schedulingID']}  {data['status']}  finished={data['finished']}"),
    )
    for op in data["operations"]:
        table.add_row(
            str(op["priority"]),
            op["component"],
            op["type"],
            op["state"],
            op["reason"],
            op.get("blocker", ""),
        )
    _print(data, output, table)
