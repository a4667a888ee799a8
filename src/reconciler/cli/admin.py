"""`reconciler cluster ...` and `reconciler reconciliation ...`: the admin CLI of the mothership's
REST API (what the KCP CLI does for the original), with human tables, `-o wide` or `-o json`.

Tables show the cluster's health beside its status (a failing cluster reads `failing` while its
retries run, though its status reads `reconciling`), and never cut an identifier a person pastes
into the next command: runtime, scheduling and correlation IDs are shown whole, the table grows
wider than the terminal rather than shortening them.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.measure import Measurement
from rich.table import Table

from reconciler.cli.errors import BAD_INPUT, fail
from reconciler.cli.options import Command, output_option, shared_options
from reconciler.errors import ReconcilerError
from reconciler.model.status import ClusterStatus

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
Output = Annotated[
    str, output_option(("table", "wide", "json"), "table, wide (more columns) or json.")
]
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


@dataclass(frozen=True)
class Connection:
    """Where the mothership's API is and how to authenticate: the options every admin command
    shares (`api_command`)."""

    url: str = DEFAULT_URL
    token: str | None = None
    token_file: Path | None = None
    ca_file: str | None = None

    def call(self, method: str, path: str, **kwargs: Any) -> Any:
        """The JSON answer of `method path` (an error answer or no answer: exit 1, named)."""
        bearer = _bearer(self.token, self.token_file)
        return _call(method, self.url, path, bearer, self.ca_file, **kwargs)


_CONNECTION = {"url": Url, "token": Token, "token_file": TokenFile, "ca_file": CaFile}


def api_command(command: Command) -> Command:
    """Give `command(..., api: Connection)` the connection options (`--url`, `--token`,
    `--token-file`, `--ca-file`, after its own), declared once, here."""
    return shared_options(Connection, _CONNECTION, _CONNECTION, param="api", first=False)(command)


WHOLE = frozenset(
    {
        "runtime",
        "scheduling id",
        "correlation id",
        "status",
        "health",
        "component",
        "state",
        "config v",
    }
)
"""Columns whose values are shown whole, never wrapped or shortened (people paste them)."""
BAD = ("failing", "unreachable")


def _print(data: Any, output: str, table: Table | None) -> None:
    if output == "json" or table is None:
        typer.echo(json.dumps(data, indent=2))
    else:
        _show(table)


def _show(table: Table) -> None:
    """Print `table` with its identifier columns whole: as wide as they need, the others
    wrapping, the table wider than the terminal when it has to be."""
    for column in table.columns:
        if str(column.header) in WHOLE:
            column.no_wrap = True
            column.min_width = max((len(str(cell)) for cell in column.cells), default=0)
    options = console.options.update(max_width=100_000)
    need = Measurement.get(console, options, table).minimum
    if need <= console.width:
        console.print(table)
    else:
        Console(width=need, force_terminal=console.is_terminal).print(table)


def _health(item: dict[str, Any]) -> dict[str, Any]:
    return item.get("health") or {}


def _since(health: dict[str, Any]) -> str:
    """`since 2026-11-27 08:12:01 (3 runs)` for a failing cluster, else ''."""
    if health.get("health") not in BAD:
        return ""
    runs = health.get("consecutiveFailures", 0)
    text = f"since {_when(health.get('failingSince'))} ({runs} run{'' if runs == 1 else 's'})"
    return text + ("; delete cannot finish" if health.get("deleting") else "")


def _when(text: str | None) -> str:
    if not text:
        return ""
    return dt.datetime.fromisoformat(text).astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%S")


def _cause(health: dict[str, Any]) -> str:
    if health.get("health") not in BAD:
        return ""
    return ": ".join(p for p in (health.get("component"), health.get("reason")) if p)


@cluster_app.command("list")
@api_command
def cluster_list(
    api: Connection,
    output: Output = "table",
) -> None:
    """All clusters with health, status and versions (failing ones with their root cause)."""
    data = api.call("GET", "/v1/clusters")
    wide = output == "wide"
    columns = ["runtime", "health", "status", "config v", "status since", "failing"]
    table = Table(*columns, *(["root cause", "last success"] if wide else []))
    for item in data:
        health = _health(item)
        row = [
            item["runtimeID"],
            health.get("health", ""),
            item["status"],
            str(item["configurationVersion"]),
            _when(item["statusChanged"]),
            _since(health),
        ]
        if wide:
            row += [_cause(health), _when(health.get("lastSuccess"))]
        table.add_row(*row)
    _print(data, output, table)


@cluster_app.command("register")
@api_command
def cluster_register(
    api: Connection,
    runtime_id: str,
    kubeconfig: Annotated[Path, typer.Option("--kubeconfig", help="Kubeconfig of the cluster.")],
    workspace: Annotated[
        Path, typer.Option("--workspace", "-w", help="Take the component list from here.")
    ],
    kyma_version: Annotated[
        str,
        typer.Option(
            "--kyma-version",
            metavar="VERSION",
            help="The Kyma version the cluster gets (a version the mothership's workspace has).",
        ),
    ] = "local",
    profile: Annotated[
        str,
        typer.Option(
            "--profile",
            metavar="NAME",
            help="Values profile the charts define (profile-NAME.yaml).",
        ),
    ] = "evaluation",
    output: Output = "table",
    wait: Annotated[
        bool,
        typer.Option(
            "--wait",
            help="Wait until a run of this configuration finished: exit 0 when healthy, 1 when"
            " failing.",
        ),
    ] = False,
    timeout: Annotated[float, typer.Option(help="Seconds --wait waits at most.")] = 900.0,
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
    data = api.call("POST", "/v1/clusters", json=body)
    if wait:
        version = data["configurationVersion"]
        data = _wait_checked(api, runtime_id, version, _evidence(data), timeout)
    table = Table("runtime", "health", "status", "config v", "status URL")
    table.add_row(
        data["cluster"],
        _health(data).get("health", ""),
        data["status"],
        str(data["configurationVersion"]),
        data["statusURL"],
    )
    _print(data, output, table)
    if wait and _health(data).get("health") in BAD:
        raise fail(f"cluster {runtime_id} is {_health(data).get('summary', 'failing')}")


def _evidence(data: Any) -> tuple[Any, ...]:
    """What changes when a run finishes: its configuration, the failures in a row, the last
    success."""
    health = _health(data)
    keys = ("checkedConfigVersion", "consecutiveFailures", "lastSuccess")
    return tuple(health.get(key) for key in keys)


def _wait_checked(
    api: Connection,
    runtime_id: str,
    config_version: int,
    before: tuple[Any, ...],
    timeout: float,
    interval: float = 2.0,
) -> Any:
    """Poll the cluster until a run on `config_version` (or a later one) has finished since
    the evidence was `before` (a re-registration of an unchanged configuration waits for its
    new run too): its health is then healthy, failing or unreachable. The last answer."""
    deadline = time.monotonic() + timeout
    path = f"/v1/clusters/{runtime_id}/status"
    while True:
        data = api.call("GET", path)
        health = _health(data)
        checked = health.get("checkedConfigVersion") or 0
        finished = checked >= config_version and _evidence(data) != before
        if finished and health.get("health") in ("healthy", *BAD):
            return data
        if health.get("health") == "disabled":
            raise fail(f"cluster {runtime_id} is disabled: nothing will run until it is enabled")
        if time.monotonic() >= deadline:
            raise fail(
                f"cluster {runtime_id}: no run of configuration {config_version} finished within"
                f" {timeout:g}s (status {data['status']}, health {health.get('health')})"
            )
        time.sleep(interval)


@cluster_app.command("status")
@api_command
def cluster_status(
    api: Connection,
    runtime_id: str,
    output: Output = "table",
    watch: Annotated[
        bool, typer.Option("--watch", "-w", help="Keep polling; print a line at each change.")
    ] = False,
    interval: Annotated[float, typer.Option(help="Seconds between polls of --watch.")] = 2.0,
    until: Annotated[
        str | None,
        typer.Option(help="With --watch: stop (exit 0) at this health or status, e.g. healthy."),
    ] = None,
    timeout: Annotated[
        float | None,
        typer.Option(help="With --watch: give up (exit 1) after this many seconds."),
    ] = None,
) -> None:
    """Health and status of one cluster: a failing one with since when, how many runs in a
    row and the root cause; `--watch` prints a line at each change until stopped."""
    path = f"/v1/clusters/{runtime_id}/status"
    if not watch:
        data = api.call("GET", path)
        _print(data, output, _status_table(data, wide=output == "wide"))
        return
    deadline = None if timeout is None else time.monotonic() + timeout
    seen: tuple[Any, ...] | None = None
    while True:
        data = api.call("GET", path)
        health = _health(data)
        now = (data["status"], health.get("health"), health.get("consecutiveFailures"))
        if now != seen:
            seen = now
            if output == "json":
                typer.echo(json.dumps(data))
            else:
                stamp = dt.datetime.now(dt.UTC).strftime("%H:%M:%S")
                typer.echo(f"{stamp}  {data['status']:<26} {health.get('summary', '')}")
        if until and until in (data["status"], health.get("health")):
            return
        if deadline is not None and time.monotonic() >= deadline:
            raise fail(f"cluster {runtime_id}: not {until} within {timeout:g}s")
        time.sleep(interval)


def _status_table(data: Any, *, wide: bool) -> Table:
    health = _health(data)
    table = Table("runtime", "health", "status", "config v", "failing", "root cause")
    if wide:
        table.add_column("last success")
        table.add_column("failures of the latest run")
    row = [
        data["cluster"],
        health.get("health", ""),
        data["status"],
        str(data["configurationVersion"]),
        _since(health),
        _cause(health),
    ]
    if wide:
        failures = "; ".join(f"{f['component']}: {f['reason']}" for f in data.get("failures") or [])
        row += [_when(health.get("lastSuccess")), failures]
    table.add_row(*row)
    return table


@cluster_app.command("history")
@api_command
def cluster_history(
    api: Connection,
    runtime_id: str,
    offset: Annotated[str, typer.Option(help="How far back, e.g. 24h, 168h.")] = "168h",
    output: Output = "table",
) -> None:
    """Status changes of one cluster, newest first."""
    data = api.call("GET", f"/v1/clusters/{runtime_id}/statusChanges", params={"offset": offset})
    table = Table("started", "health", "status", "duration", "config v")
    for change in data["statusChanges"]:
        table.add_row(
            _when(change["started"]),
            change.get("health") or "",
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
@api_command
def cluster_configs(
    api: Connection,
    runtime_id: str,
    last: Annotated[int, typer.Option(help="Only the newest N.")] = 20,
    output: Output = "table",
) -> None:
    """Configuration versions of one cluster, newest first; rollbacks name their source."""
    data = api.call("GET", f"/v1/clusters/{runtime_id}/configs", params={"last": last})
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
@api_command
def cluster_rollback(
    api: Connection,
    runtime_id: str,
    to: Annotated[
        int, typer.Option("--to", min=1, help="The configuration version to go back to.")
    ],
    output: Output = "table",
) -> None:
    """Reconcile a cluster to an earlier configuration version (stored as a new version that
    names it; admin role). See `cluster configs` for the versions."""
    data = api.call("POST", f"/v1/clusters/{runtime_id}/config/{to}/restore")
    table = Table("runtime", "status", "config v", "status URL")
    table.add_row(
        data["cluster"],
        data["status"],
        _config_version(data["configurationVersion"], data["restoredFrom"]),
        data["statusURL"],
    )
    _print(data, output, table)


def _set_status(runtime_id: str, status: str, api: Connection, output: str) -> None:
    data = api.call("PUT", f"/v1/clusters/{runtime_id}/status", json={"status": status})
    table = Table("runtime", "status", "health")
    table.add_row(data["cluster"], data["status"], _health(data).get("summary", ""))
    _print(data, output, table)


def _status_command(status: str, help_text: str) -> Callable[..., None]:
    """One of `disable` / `enable` / `reconcile`: PUT /v1/clusters/{id}/status."""

    def command(
        api: Connection,
        runtime_id: str,
        output: Output = "table",
    ) -> None:
        _set_status(runtime_id, status, api, output)

    command.__doc__ = help_text
    return api_command(command)


for _name, _status, _help in (
    ("disable", "reconcile_disabled", "Stop reconciling a cluster (until enabled)."),
    (
        "enable",
        "ready",
        "Reconcile a disabled cluster again: a run re-verifies it at once (its health stays"
        " what the last run proved until then).",
    ),
    ("reconcile", "reconcile_pending", "Reconcile a cluster now."),
):
    cluster_app.command(_name)(_status_command(_status, _help))


@cluster_app.command("delete")
@api_command
def cluster_delete(
    api: Connection,
    runtime_id: str,
    forget: Annotated[
        bool,
        typer.Option(
            "--forget",
            help="The cluster's infrastructure is gone: remove it from the inventory without"
            " uninstalling anything (admin role; audited).",
        ),
    ] = False,
    yes: Annotated[
        bool,
        typer.Option(
            "--yes", help="With --forget: forget it even though it is healthy (it answers)."
        ),
    ] = False,
    output: Output = "table",
) -> None:
    """Delete a cluster: uninstall its components (a delete run), or with --forget remove a
    cluster whose infrastructure is gone (refused while it is healthy, unless --yes)."""
    if forget:
        data = api.call("POST", f"/v1/clusters/{runtime_id}/forget", json={"confirm": yes})
    else:
        data = api.call("DELETE", f"/v1/clusters/{runtime_id}")
    table = Table("runtime", "status", "health")
    table.add_row(data["cluster"], data["status"], _health(data).get("summary", ""))
    _print(data, output, table)


@reconciliation_app.command("list")
@api_command
def reconciliation_list(
    api: Connection,
    runtime_id: Annotated[
        list[str] | None, typer.Option("--runtime-id", help="Only this cluster's (repeatable).")
    ] = None,
    status: Annotated[
        list[ClusterStatus] | None,
        typer.Option(
            "--status", help="Only reconciliations of clusters in this status (repeatable)."
        ),
    ] = None,
    last: Annotated[int | None, typer.Option(help="Only the newest N.")] = None,
    output: Output = "table",
) -> None:
    """Reconciliations, newest first."""
    params: list[tuple[str, str]] = [("runtimeID", r) for r in runtime_id or []]
    params += [("status", s.value) for s in status or []]
    if last:
        params.append(("last", str(last)))
    data = api.call("GET", "/v1/reconciliations", params=params)
    table = Table("scheduling id", "runtime", "status", "finished", "created")
    for item in data:
        table.add_row(
            item["schedulingID"],
            item["runtimeID"],
            item["status"],
            str(item["finished"]),
            _when(item["created"]),
        )
    _print(data, output, table)


@reconciliation_app.command("info")
@api_command
def reconciliation_info(
    api: Connection,
    scheduling_id: str,
    output: Output = "table",
) -> None:
    """One reconciliation with its operations: state, duration, retries; for a component
    still running or failed, why (reason) and the object that keeps it from being ready
    ("blocked by"). `-o wide` adds the correlation IDs."""
    data = api.call("GET", f"/v1/reconciliations/{scheduling_id}/info")
    wide = output == "wide"
    if output != "json":
        typer.echo(f"{data['schedulingID']}  {data['status']}  finished={data['finished']}")
    columns = ["priority", "component", "type", "state", "duration", "retries", "reason"]
    table = Table(*columns, "blocked by", *(["correlation id"] if wide else []))
    for op in data["operations"]:
        row = [
            str(op["priority"]),
            op["component"],
            op["type"],
            op["state"],
            f"{op.get('duration', 0.0):.1f}s",
            str(op.get("retries", 0)),
            op["reason"],
            op.get("blocker", ""),
        ]
        table.add_row(*row, *([op["correlationID"]] if wide else []))
    _print(data, output, table)
