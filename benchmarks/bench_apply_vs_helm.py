"""Install and no-op re-run of one chart: `reconciler deploy` against `helm upgrade --install`.

Why: the reconciler replaces Helm releases, so installing a chart must not cost more than Helm
does (target: apply <= 0.3x helm's wall time). Both run without waiting for readiness, into fresh
namespaces of the same test-bed cluster, alternating which goes first. Two ways of running the
reconciler are timed: the CLI as a user runs it (process start-up included), and the Python API
in a warm, long-running process (what the mothership does: discovery and chart already loaded).
The no-op re-run repeats the same install unchanged. A missed target prints MISS but exits 0: the
numbers are the point. Results: benchmarks/results/apply-vs-helm-<timestamp>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import benchlib

from reconciler.charts.sources import ChartCache
from reconciler.core.charts import HelmChartProvider
from reconciler.core.runner import ComponentReconciler
from reconciler.kube.cluster import Cluster
from reconciler.model.task import ChartRef, Task

NAME = "apply-vs-helm"
TARGET = 0.3
"""Reconciler wall time / helm wall time for the same install."""
CHARTS = ("podinfo", "platform")
SCENARIOS = ("install", "no-op")


@dataclass
class Samples:
    seconds: list[float] = field(default_factory=list)
    peak_rss_mib: list[float] = field(default_factory=list)
    changed: list[int] = field(default_factory=list)

    def add(self, seconds: float, rss: float, changed: int = -1) -> None:
        self.seconds.append(seconds)
        self.peak_rss_mib.append(rss)
        self.changed.append(changed)


@dataclass
class ChartSamples:
    """Per scenario: reconciler CLI, reconciler in-process, helm."""

    cli: dict[str, Samples] = field(default_factory=lambda: {s: Samples() for s in SCENARIOS})
    api: dict[str, Samples] = field(default_factory=lambda: {s: Samples() for s in SCENARIOS})
    helm: dict[str, Samples] = field(default_factory=lambda: {s: Samples() for s in SCENARIOS})


class Runners:
    """The three contenders, each able to install `chart` into a namespace."""

    def __init__(self, root: Path, kubeconfig: Path, reconciler: ComponentReconciler) -> None:
        self.root = root
        self.kubeconfig = kubeconfig
        self.reconciler = reconciler
        tools = benchlib.clis(root)
        self.helm, self.reconciler_cli = tools.helm, tools.reconciler
        self.cli_env, self.helm_env = tools.reconciler_env, tools.helm_env

    def _components_file(self, chart: str, namespace: str) -> Path:
        path = self.root / "components" / f"{namespace}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        chart_dir = benchlib.CHARTS_DIR / chart
        path.write_text(
            f"defaultNamespace: {namespace}\nprerequisites: []\n"
            f"components:\n  - name: {chart}\n    url: {chart_dir}\n"
        )
        return path

    async def cli(self, chart: str, namespace: str) -> benchlib.ProcessRun:
        components = self._components_file(chart, namespace)
        run = await benchlib.run_measured(
            [
                self.reconciler_cli,
                "deploy",
                "--kubeconfig",
                str(self.kubeconfig),
                "--workspace",
                str(self.root),
                "--components",
                str(components),
                "--component",
                chart,
                "--no-wait",
                "--output",
                "json",
            ],
            env=self.cli_env,
        )
        if run.returncode != 0:
            raise RuntimeError(f"reconciler deploy {chart} -> {namespace} failed:\n{run.stderr}")
        return run

    async def helm_install(self, chart: str, namespace: str) -> benchlib.ProcessRun:
        run = await benchlib.run_measured(
            [
                self.helm,
                "upgrade",
                "--install",
                chart,
                str(benchlib.CHARTS_DIR / chart),
                "--namespace",
                namespace,
                "--create-namespace",
                "--kubeconfig",
                str(self.kubeconfig),
            ],
            env=self.helm_env,
        )
        if run.returncode != 0:
            raise RuntimeError(
                f"helm upgrade --install {chart} -> {namespace} failed:\n{run.stderr}"
            )
        return run

    async def api(self, cluster: Cluster, chart: str, namespace: str) -> tuple[float, int]:
        task = Task(
            component=chart,
            namespace=namespace,
            version="bench",
            source=ChartRef(str(benchlib.CHARTS_DIR / chart)),
            wait=False,
        )
        started = time.perf_counter()
        outcome = await self.reconciler.run(task, cluster)
        seconds = time.perf_counter() - started
        if not outcome.ok:
            raise RuntimeError(outcome.error)
        return seconds, len(outcome.changed)


def _cli_changed(run: benchlib.ProcessRun) -> int:
    report = json.loads(run.stdout)
    return sum(len(c["changed"]) for c in report["components"])


async def measure_chart(
    runners: Runners, cluster: Cluster, chart: str, repeat: int
) -> ChartSamples:
    samples = ChartSamples()
    # warm-up of the in-process reconciler: discovery, capabilities and the loaded chart are
    # cached from here on, as they are in a long-running control plane
    await runners.api(cluster, chart, f"warm-{chart}")
    for i in range(repeat):
        rec_ns, helm_ns, api_ns = f"cli-{chart}-{i}", f"helm-{chart}-{i}", f"api-{chart}-{i}"
        for scenario in SCENARIOS:
            order = ("cli", "helm") if i % 2 == 0 else ("helm", "cli")  # no first-mover bias
            for who in order:
                if who == "cli":
                    run = await runners.cli(chart, rec_ns)
                    samples.cli[scenario].add(run.seconds, run.peak_rss_mib, _cli_changed(run))
                else:
                    run = await runners.helm_install(chart, helm_ns)
                    samples.helm[scenario].add(run.seconds, run.peak_rss_mib)
            seconds, changed = await runners.api(cluster, chart, api_ns)
            samples.api[scenario].add(seconds, benchlib.self_peak_rss_mib(), changed)
    return samples


async def startup_floor(runners: Runners, repeat: int) -> benchlib.ProcessRun:
    """`reconciler version`: what the CLI costs before it does any work."""
    runs = [
        await benchlib.run_measured([runners.reconciler_cli, "version"], env=runners.cli_env)
        for _ in range(repeat)
    ]
    return sorted(runs, key=lambda r: r.seconds)[len(runs) // 2]


def summarize(
    by_chart: Mapping[str, ChartSamples], startup: benchlib.ProcessRun
) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for chart, samples in by_chart.items():
        for scenario in SCENARIOS:
            helm = samples.helm[scenario]
            helm_s = benchlib.median(helm.seconds)
            for mode, own in (
                ("cli", samples.cli[scenario]),
                ("in-process", samples.api[scenario]),
            ):
                reconciler_s = benchlib.median(own.seconds)
                ratio = reconciler_s / helm_s
                rows.append(
                    {
                        "key": f"{chart}/{scenario}/{mode}",
                        "chart": chart,
                        "scenario": scenario,
                        "mode": mode,
                        "reconciler_s": round(reconciler_s, 4),
                        "helm_s": round(helm_s, 4),
                        "ratio": round(ratio, 3),
                        "target": TARGET,
                        "verdict": benchlib.verdict(ratio <= TARGET),
                        "reconciler_peak_rss_mib": round(max(own.peak_rss_mib), 1),
                        "helm_peak_rss_mib": round(max(helm.peak_rss_mib), 1),
                        "changed_objects": own.changed,
                        "samples": {"reconciler_s": own.seconds, "helm_s": helm.seconds},
                    }
                )
    rows.append(
        {
            "key": "cli/start-up",
            "chart": "-",
            "scenario": "reconciler version",
            "mode": "cli",
            "reconciler_s": round(startup.seconds, 4),
            "reconciler_peak_rss_mib": round(startup.peak_rss_mib, 1),
        }
    )
    return rows


def report(rows: list[dict[str, Any]], previous: dict[str, Any] | None) -> str:
    before = {r["key"]: r for r in previous["rows"]} if previous else {}
    table = []
    for row in rows:
        prev = before.get(row["key"], {})
        table.append(
            [
                row["chart"],
                row["scenario"],
                row["mode"],
                f"{row['reconciler_s']:.3f}",
                f"{row['helm_s']:.3f}" if "helm_s" in row else "-",
                f"{row['ratio']:.2f}" if "ratio" in row else "-",
                f"{row['verdict']} (<= {TARGET})" if "verdict" in row else "-",
                f"{row['reconciler_peak_rss_mib']:.0f}",
                f"{row['helm_peak_rss_mib']:.0f}" if "helm_peak_rss_mib" in row else "-",
                max(row["changed_objects"]) if "changed_objects" in row else "-",
                benchlib.change(row["reconciler_s"], prev.get("reconciler_s")),
            ]
        )
    headers = [
        "chart",
        "scenario",
        "reconciler",
        "reconciler s",
        "helm s",
        "ratio",
        "target",
        "peak RSS MiB",
        "helm RSS MiB",
        "changed",
        "vs previous",
    ]
    text = benchlib.format_table(headers, table)
    text += (
        "\npeak RSS: of the CLI process, or for in-process of this whole benchmark process; "
        "changed: most objects the reconciler reported changed in one run"
    )
    if previous:
        text += f"\n(previous run: {previous['_file']}; 'vs previous' is reconciler s now/then)"
    return text


async def run(args: argparse.Namespace) -> dict[str, Any]:
    env = benchlib.environment()
    with benchlib.scratch_dir("reconciler-bench-helm-") as root:
        async with benchlib.dev_cluster(root / "cluster", controller_manager=True) as info:
            provider = HelmChartProvider(ChartCache(root / "charts"))
            runners = Runners(root, info.kubeconfig, ComponentReconciler(provider))
            meter = benchlib.CpuMeter(info.pids)
            started = time.perf_counter()
            async with await Cluster.connect(info.kubeconfig) as cluster:
                by_chart = {
                    chart: await measure_chart(runners, cluster, chart, args.repeat)
                    for chart in args.charts
                }
            startup = await startup_floor(runners, args.repeat)
            cores = meter.cores(time.perf_counter() - started)
            helm_version = await benchlib.run_measured(
                [runners.helm, "version", "--short"], env=runners.helm_env
            )
    return {
        "benchmark": NAME,
        "repeat": args.repeat,
        "environment": {**env, "helm": helm_version.stdout.strip()},
        "cpu_cores": cores,
        "other_cores": benchlib.other_cores(cores),
        "rows": summarize(by_chart, startup),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repeat", type=int, default=5, help="measurements per cell (median)")
    parser.add_argument(
        "--charts", nargs="+", choices=CHARTS, default=list(CHARTS), help="charts to install"
    )
    args = parser.parse_args()
    previous = benchlib.previous_results(NAME)
    results = benchlib.run_async(run(args))
    print(report(results["rows"], previous))
    print(
        f"CPU over the run (cores of {os.cpu_count()}): {results['cpu_cores']}; other processes "
        f"on the machine: {results['other_cores']} (they skew the numbers when high)"
    )
    print(f"results: {benchlib.save_results(NAME, results)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
