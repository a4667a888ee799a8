"""`reconciler deploy | delete | template | diff`: one cluster, one component set, one shot."""

from __future__ import annotations

import asyncio
import json
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from reconciler.charts import yamlio
from reconciler.charts.render import Capabilities
from reconciler.charts.sources import ChartCache
from reconciler.charts.values import check_profile, read_values_file
from reconciler.charts.workspace import Workspace
from reconciler.cli import summary
from reconciler.cli.errors import BAD_INPUT, FAILED, INTERRUPTED, err, fail, failures
from reconciler.cli.options import Command, output_option, shared_options
from reconciler.cli.summary import LogLines
from reconciler.core.actions import ActionRegistry
from reconciler.core.charts import HelmChartProvider
from reconciler.core.deploy import DeployOptions, build_tasks, plan_for, run_component_set
from reconciler.core.diff import diff_component_set
from reconciler.core.executor import StepState
from reconciler.core.runner import ComponentReconciler
from reconciler.kube.cluster import Cluster
from reconciler.model.component import CRDS_COMPONENT, ComponentSet
from reconciler.model.plan import Plan
from reconciler.model.task import Task, TaskType
from reconciler.model.values import layer, parse_assignment
from reconciler.observability.logging import configure_logging
from reconciler.paths import cache_dir

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
Profile = Annotated[
    str | None,
    typer.Option(
        "--profile",
        metavar="NAME",
        help="Values profile the charts define (profile-NAME.yaml), e.g. evaluation or "
        "production; one no chart defines is refused.",
    ),
]
Values = Annotated[
    list[str] | None,
    typer.Option(
        "--value",
        metavar="KEY=VALUE",
        help="Override a value (repeatable); COMPONENT.KEY=VALUE for one component.",
    ),
]
ValuesFiles = Annotated[
    list[Path] | None,
    typer.Option("--values", "-f", metavar="FILE", help="YAML file of overrides (repeatable)."),
]
Timeout = Annotated[float, typer.Option("--timeout", help="Seconds per component.")]
Output = Annotated[
    str,
    output_option(
        ("table", "json"),
        "table: progress and a summary for people (stderr; `text`, its old name, still works);"
        " json: one JSON summary (stdout).",
    ),
]
Version = Annotated[
    str,
    typer.Option(
        "--kyma-version",
        metavar="VERSION",
        help="The Kyma version the set is deployed as: the version label of every applied object"
        " (`reconciler --version` prints the program's own version).",
    ),
]
OldVersion = Annotated[
    str | None,
    typer.Option(
        "--version",
        metavar="VERSION",
        hidden=True,
        help="Deprecated spelling of --kyma-version (kept so scripts keep working).",
    ),
]
Verbose = Annotated[
    bool,
    typer.Option(
        "--verbose",
        "-v",
        help="Show every warning and log line (by default: a summary at the end).",
    ),
]


def _overrides(values: list[str], files: list[Path]) -> dict[str, Any]:
    """`-f` files (read as chart values files are read), then `--value`s, later winning."""
    layers = [read_values_file(path, missing_ok=False) for path in files]
    layers.append(dict(parse_assignment(v) for v in values))
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


def _check_profile(ws: Workspace, component_set: ComponentSet, profile: str) -> None:
    """A profile no local chart of the set defines is a typo, unless a chart comes from
    elsewhere (a URL, a registry), which only its render can ask."""
    sources = [ws.chart_source(spec) for spec in component_set.all()]
    if sources and all(Path(source).is_dir() for source in sources):
        check_profile([Path(source) for source in sources], profile)


def _reconciler() -> ComponentReconciler:
    provider = HelmChartProvider(ChartCache(cache_dir() / "charts"))
    return ComponentReconciler(provider, ActionRegistry.from_entry_points())


@dataclass(frozen=True)
class Run:
    """What one command will do: the tasks and the plan that orders them."""

    tasks: dict[str, Task]
    plan: Plan


@dataclass(frozen=True)
class SetOptions:
    """The options the component-set commands share (each command shows the ones it reads)."""

    workspace: Path = Path(".")
    components: Path | None = None
    component: list[str] | None = None
    profile: str | None = None
    value: list[str] | None = None
    values: list[Path] | None = None
    version: str = "local"
    old_version: str | None = None
    """`--version`, the old name of `--kyma-version` (a warning says so)."""
    kubeconfig: Path | None = None
    timeout: float = 300.0
    output: str = "table"
    verbose: bool = False

    def run(
        self,
        task_type: TaskType,
        *,
        wait: bool = True,
        force: bool = False,
        regenerate: str = "",
    ) -> Run:
        """Read workspace, component set and overrides into tasks and a plan (bad input: 2)."""
        version = self.version
        if self.old_version is not None:
            if version != "local" and version != self.old_version:
                raise fail("--version is the old name of --kyma-version: give one", BAD_INPUT)
            err.print(
                "warning: --version is deprecated here: use --kyma-version (`reconciler"
                " --version` prints the program's version)",
                highlight=False,
                soft_wrap=True,
            )
            version = self.old_version
        with failures(BAD_INPUT):
            ws, component_set, with_crds = _selection(
                self.workspace, self.components, self.component
            )
            settings = DeployOptions(
                profile=self.profile,
                values=_flatten(_overrides(self.value or [], self.values or [])),
                version=version,
                timeout=self.timeout,
                wait=wait,
                with_crds=with_crds,
                force=force,
                regenerate=regenerate,
            )
            ws.check_local_charts(component_set)
            if self.profile:
                _check_profile(ws, component_set, self.profile)
            tasks = build_tasks(ws, component_set, task_type, settings)
        return Run(tasks, plan_for(component_set, task_type, settings))


_OPTIONS: dict[str, Any] = {
    "kubeconfig": Kubeconfig,
    "workspace": WorkspaceOpt,
    "components": ComponentsFile,
    "component": Only,
    "profile": Profile,
    "value": Values,
    "values": ValuesFiles,
    "timeout": Timeout,
    "output": Output,
    "version": Version,
    "old_version": OldVersion,
    "verbose": Verbose,
}
SELECTION = (
    "workspace",
    "components",
    "component",
    "profile",
    "value",
    "values",
    "version",
    "old_version",
)
ON_CLUSTER = ("kubeconfig", *SELECTION, "timeout", "output", "verbose")


def set_command(*shared: str) -> Callable[[Command], Command]:
    """Give `command(options: SetOptions, ...own options)` the shared options named `shared`
    (in `_OPTIONS`' order, before its own), so deploy and delete declare their common options
    once, here."""
    return shared_options(SetOptions, _OPTIONS, shared, param="options")


def _run_set(
    task_type: TaskType,
    options: SetOptions,
    *,
    wait: bool,
    force: bool,
    regenerate: bool = False,
) -> None:
    output = options.output
    people = output != "json"
    logged = LogLines()
    if people and options.verbose:
        configure_logging(json_lines=False, level="INFO")
    elif people:
        configure_logging(level="WARNING", sink=logged)
    else:
        configure_logging(json_lines=True, level="WARNING")
    token = uuid.uuid4().hex if regenerate else ""  # a new token: regenerate this time
    run = options.run(task_type, wait=wait, force=force, regenerate=token)
    plan, tasks = run.plan, run.tasks
    mode = "live" if people and sys.stderr.isatty() else ("lines" if people else "quiet")
    from reconciler.cli.progress import ProgressView

    view = ProgressView(plan.names(), err, mode)

    async def go() -> tuple[dict[str, Any], dict[str, Any]]:
        async with await Cluster.connect(options.kubeconfig) as cluster:
            return await run_component_set(cluster, _reconciler(), plan, tasks, report=view.event)

    started = time.monotonic()
    with failures():
        try:
            with view:
                results, outcomes = asyncio.run(go())
                for name, result in results.items():
                    if result.state is StepState.SKIPPED:
                        view.skipped(name, result.detail)
        except KeyboardInterrupt:
            stopped = view.interrupted()
            if people:
                summary.interrupted(err, stopped)
            raise typer.Exit(INTERRUPTED) from None
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
        summary.tell(
            err,
            plan.names(),
            results,
            outcomes,
            deleting=task_type is TaskType.DELETE,
            seconds=time.monotonic() - started,
            logged=logged,
            verbose=options.verbose,
        )
    if not ok:
        raise typer.Exit(FAILED)


@set_command(*ON_CLUSTER)
def deploy(
    options: SetOptions,
    wait: Annotated[bool, typer.Option(help="Wait until workloads are ready.")] = True,
    force: Annotated[
        bool,
        typer.Option(
            help="Render and apply every object even when nothing changed since the last run."
        ),
    ] = False,
    regenerate: Annotated[
        bool,
        typer.Option(
            help="Apply values the charts generate (certificates, passwords) as rendered now "
            "instead of keeping the ones on the cluster."
        ),
    ] = False,
) -> None:
    """Install or upgrade the component set on the cluster (exit 0 only when all is ready)."""
    _run_set(TaskType.RECONCILE, options, wait=wait, force=force, regenerate=regenerate)


@set_command(*ON_CLUSTER)
def delete(options: SetOptions) -> None:
    """Delete the component set from the cluster, in reverse order."""
    _run_set(TaskType.DELETE, options, wait=True, force=False)


@set_command(*SELECTION)
def template(
    options: SetOptions,
    kube_version: Annotated[
        str,
        typer.Option(
            "--kube-version",
            metavar="VERSION",
            help="Kubernetes version the charts see as .Capabilities.KubeVersion (e.g. v1.30.0).",
        ),
    ] = "v1.20.2",
    api_versions: Annotated[
        list[str] | None,
        typer.Option(
            "--api-versions",
            metavar="GROUP/VERSION",
            help="An API version the charts see in .Capabilities.APIVersions beside the "
            "built-in ones (repeatable), e.g. monitoring.coreos.com/v1.",
        ),
    ] = None,
) -> None:
    """Print the manifests the components render to (no cluster needed)."""
    run = options.run(TaskType.RECONCILE)
    provider = HelmChartProvider(ChartCache(cache_dir() / "charts"))
    capabilities = Capabilities(kube_version, tuple(api_versions or ()))

    async def go() -> list[str]:
        documents = []
        for name in run.plan.names():
            for obj in await provider.render(run.tasks[name], capabilities):
                documents.append(f"# component: {name}\n" + yamlio.dump(obj.raw))
        return documents

    with failures():
        documents = asyncio.run(go())
    typer.echo("---\n".join(documents), nl=False)


@set_command("kubeconfig", *SELECTION)
def diff(options: SetOptions) -> None:
    """Show what deploy would change (server-side dry-run); exit 1 when something differs."""
    run = options.run(TaskType.RECONCILE)

    async def go() -> list[str]:
        async with await Cluster.connect(options.kubeconfig) as cluster:
            return await diff_component_set(cluster, _reconciler(), run.plan, run.tasks)

    with failures():
        found = asyncio.run(go())
    typer.echo("".join(found), nl=False)
    if found:
        raise typer.Exit(FAILED)
