"""`reconciler deploy | delete | template | diff`: one cluster, one component set, one shot."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
import yaml
from rich.console import Console

from reconciler.charts.render import Capabilities
from reconciler.charts.sources import ChartCache
from reconciler.charts.workspace import Workspace
from reconciler.core.actions import ActionRegistry
from reconciler.core.charts import HelmChartProvider
from reconciler.core.deploy import DeployOptions, build_tasks, plan_for, run_component_set
from reconciler.core.executor import StepState
from reconciler.core.runner import ComponentReconciler
from reconciler.errors import ReconcilerError
from reconciler.kube.apply import prepare_all
from reconciler.kube.cluster import Cluster
from reconciler.kube.diff import diff_object
from reconciler.model.component import CRDS_COMPONENT, ComponentSet
from reconciler.model.plan import Plan
from reconciler.model.task import Task, TaskType
from reconciler.model.values import ValuesError, layer, parse_assignment
from reconciler.observability.logging import configure_logging
from reconciler.paths import cache_dir

T = TypeVar("T")
err = Console(stderr=True)

Kubeconfig = Annotated[
    Path | None,
    typer.Option("--kubeconfig", envvar="KUBECONFIG", help="Kubeconfig of the target cluster."),
]
WorkspaceOpt = Annotated[
    Path,
    typer.Option(
        "--workspace",
        "-w",
        help="Kyma-style source tree: resources/<component>/ and "
        "installation/resources/components.yaml.",
    ),
]
ComponentsFile = Annotated[
    Path | None, typer.Option("--components", help="Component set file (default: workspace's).")
]
Only = Annotated[list[str] | None, typer.Option("--component", "-c", help="Only these components.")]
Profile = Annotated[str | None, typer.Option("--profile", help="evaluation | production")]
Values = Annotated[
    list[str] | None,
    typer.Option("--value", help="Override KEY=VALUE; COMPONENT.KEY for one component."),
]
ValuesFiles = Annotated[
    list[Path] | None, typer.Option("--values", "-f", help="YAML file of overrides.")
]
Timeout = Annotated[float, typer.Option("--timeout", help="Seconds per component.")]
Output = Annotated[str, typer.Option("--output", "-o", help="text | json")]
Version = Annotated[str, typer.Option("--version", help="Version label for applied objects.")]


def _fail(message: str, code: int = 1) -> typer.Exit:
    err.print(f"[red]error:[/] {message}", highlight=False, soft_wrap=True)
    return typer.Exit(code)


def _run(coro: Callable[[], Awaitable[T]]) -> T:
    try:
        return asyncio.run(coro())  # type: ignore[arg-type]
    except ReconcilerError as exc:
        raise _fail(str(exc)) from None


def _overrides(values: list[str] | None, files: list[Path] | None) -> dict[str, Any]:
    layers: list[dict[str, Any]] = []
    for path in files or []:
        try:
            loaded = yaml.safe_load(path.read_text()) or {}
        except FileNotFoundError:
            raise ValuesError(f"values file {path} does not exist") from None
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            line = f" at line {mark.line + 1}" if mark is not None else ""
            raise ValuesError(f"values file {path} is not valid YAML{line}") from None
        if not isinstance(loaded, dict):
            raise ValuesError(f"values file {path} must hold a mapping")
        layers.append(loaded)
    layers.append(dict(parse_assignment(v) for v in values or []))
    return layer(layers)


def _flatten(values: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in values.items():
        if isinstance(value, dict) and value:
            flat.update(_flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def _selection(
    workspace: Path, components: Path | None, only: list[str] | None
) -> tuple[Workspace, ComponentSet, bool]:
    ws = Workspace(workspace)
    component_set = ws.component_set(components)
    names = [n for n in only or [] if n != CRDS_COMPONENT]
    with_crds = not only or CRDS_COMPONENT in only
    if names:
        component_set = component_set.select(names)
    elif only:
        component_set = component_set.select([])
    return ws, component_set, with_crds


def _reconciler() -> ComponentReconciler:
    provider = HelmChartProvider(ChartCache(cache_dir() / "charts"))
    return ComponentReconciler(provider, ActionRegistry.from_entry_points())


@dataclass(frozen=True)
class Run:
    """What one command will do: the tasks and the plan that orders them."""

    tasks: dict[str, Task]
    plan: Plan


def _prepare(
    task_type: TaskType,
    workspace: Path,
    components: Path | None,
    only: list[str] | None,
    profile: str | None,
    values: list[str] | None,
    values_files: list[Path] | None,
    version: str,
    **options: Any,
) -> Run:
    """Read workspace, component set and overrides; bad input exits with code 2."""
    try:
        ws, component_set, with_crds = _selection(workspace, components, only)
        settings = DeployOptions(
            profile=profile,
            values=_flatten(_overrides(values, values_files)),
            version=version,
            with_crds=with_crds,
            **options,
        )
        tasks = build_tasks(ws, component_set, task_type, settings)
    except ReconcilerError as exc:
        raise _fail(str(exc), 2) from None
    return Run(tasks, plan_for(component_set, task_type, settings))


def _run_set(
    task_type: TaskType,
    kubeconfig: Path | None,
    workspace: Path,
    components: Path | None,
    only: list[str] | None,
    profile: str | None,
    values: list[str] | None,
    values_files: list[Path] | None,
    timeout: float,
    output: str,
    version: str,
    wait: bool,
    force: bool = False,
) -> None:
    configure_logging(json_lines=True, level="WARNING")
    run = _prepare(
        task_type,
        workspace,
        components,
        only,
        profile,
        values,
        values_files,
        version,
        timeout=timeout,
        wait=wait,
        force=force,
    )
    plan, tasks = run.plan, run.tasks
    mode = "quiet" if output == "json" else ("live" if sys.stderr.isatty() else "lines")
    from reconciler.cli.progress import ProgressView

    view = ProgressView(plan.names(), err, mode)

    async def go() -> tuple[dict[str, Any], dict[str, Any]]:
        async with await Cluster.connect(kubeconfig) as cluster:
            with view:
                return await run_component_set(
                    cluster, _reconciler(), plan, tasks, report=view.event
                )

    results, outcomes = _run(go)
    for name, result in results.items():
        if result.state is StepState.SKIPPED:
            view.skipped(name, result.detail)
    ok = all(r.state is StepState.DONE for r in results.values())
    if output == "json":
        typer.echo(
            json.dumps(
                {
                    "ok": ok,
                    "components": [
                        {
                            "name": name,
                            "state": results[name].state.value,
                            "applied": o.applied if (o := outcomes.get(name)) else 0,
                            "changed": [str(k) for k in o.changed] if o else [],
                            "pruned": [str(k) for k in o.pruned] if o else [],
                            "deleted": [str(k) for k in o.deleted] if o else [],
                            "warnings": o.warnings if o else [],
                            "error": o.error if o else results[name].detail,
                            "seconds": round(o.seconds, 3) if o else 0,
                        }
                        for name in plan.names()
                    ],
                },
                indent=2,
            )
        )
    else:
        for name in plan.names():
            outcome = outcomes.get(name)
            if outcome and outcome.error:
                err.print(f"[red]✗[/] {outcome.error}", highlight=False, soft_wrap=True)
            elif (
                outcome
                and outcome.changed
                and len(outcome.changed) < outcome.applied  # not a fresh install: say what
                and task_type is TaskType.RECONCILE
            ):
                shown = ", ".join(str(k) for k in outcome.changed[:5])
                err.print(f"{name}: changed {shown}", highlight=False, markup=False, soft_wrap=True)
    if not ok:
        raise typer.Exit(1)


def deploy(
    kubeconfig: Kubeconfig = None,
    workspace: WorkspaceOpt = Path("."),
    components: ComponentsFile = None,
    component: Only = None,
    profile: Profile = None,
    value: Values = None,
    values: ValuesFiles = None,
    timeout: Timeout = 300.0,
    output: Output = "text",
    version: Version = "local",
    wait: Annotated[bool, typer.Option(help="Wait until workloads are ready.")] = True,
    force: Annotated[
        bool,
        typer.Option(
            help="Render and apply every object even when nothing changed since the last run."
        ),
    ] = False,
) -> None:
    """Install or upgrade the component set on the cluster (exit 0 only when all is ready)."""
    _run_set(
        TaskType.RECONCILE,
        kubeconfig,
        workspace,
        components,
        component,
        profile,
        value,
        values,
        timeout,
        output,
        version,
        wait,
        force,
    )


def delete(
    kubeconfig: Kubeconfig = None,
    workspace: WorkspaceOpt = Path("."),
    components: ComponentsFile = None,
    component: Only = None,
    profile: Profile = None,
    value: Values = None,
    values: ValuesFiles = None,
    timeout: Timeout = 300.0,
    output: Output = "text",
    version: Version = "local",
) -> None:
    """Delete the component set from the cluster, in reverse order."""
    _run_set(
        TaskType.DELETE,
        kubeconfig,
        workspace,
        components,
        component,
        profile,
        value,
        values,
        timeout,
        output,
        version,
        True,
    )


def template(
    workspace: WorkspaceOpt = Path("."),
    components: ComponentsFile = None,
    component: Only = None,
    profile: Profile = None,
    value: Values = None,
    values: ValuesFiles = None,
    kube_version: Annotated[str, typer.Option("--kube-version")] = "v1.20.2",
    api_versions: Annotated[list[str] | None, typer.Option("--api-versions")] = None,
    version: Version = "local",
) -> None:
    """Print the manifests the components render to (no cluster needed)."""
    run = _prepare(
        TaskType.RECONCILE, workspace, components, component, profile, value, values, version
    )
    provider = HelmChartProvider(ChartCache(cache_dir() / "charts"))
    capabilities = Capabilities(kube_version, tuple(api_versions or ()))

    async def go() -> list[str]:
        documents = []
        for name in run.plan.names():
            for obj in await provider.render(run.tasks[name], capabilities):
                documents.append(
                    f"# component: {name}\n" + yaml.safe_dump(obj.raw, sort_keys=False)
                )
        return documents

    typer.echo("---\n".join(_run(go)), nl=False)


def diff(
    kubeconfig: Kubeconfig = None,
    workspace: WorkspaceOpt = Path("."),
    components: ComponentsFile = None,
    component: Only = None,
    profile: Profile = None,
    value: Values = None,
    values: ValuesFiles = None,
    version: Version = "local",
) -> None:
    """Show what deploy would change (server-side dry-run); exit 1 when something differs."""
    run = _prepare(
        TaskType.RECONCILE, workspace, components, component, profile, value, values, version
    )
    reconciler = _reconciler()

    async def go() -> list[str]:
        diffs: list[str] = []
        async with await Cluster.connect(kubeconfig) as cluster:
            capabilities = await reconciler.capabilities(cluster)
            for name in run.plan.names():
                task = run.tasks[name]
                rendered = await reconciler.charts.render(task, capabilities)
                objects, _ = await prepare_all(
                    cluster,
                    rendered,
                    namespace=task.namespace,
                    version=task.version,
                    component=name,
                )
                for obj in objects:
                    text = await diff_object(cluster, obj)
                    if text:
                        diffs.append(text)
        return diffs

    found = _run(go)
    typer.echo("".join(found), nl=False)
    if found:
        raise typer.Exit(1)
