"""A realistic platform set (examples/platform): `reconciler deploy` against sequential Helm.

Why: this is the workload the reconciler exists for, with the traits real platforms have (15
charts, ~420 objects, CRDs over 300 KB, conversion webhooks, generated certificates and
passwords, emoji, nulls, duplicate env entries, a kind Kubernetes 1.20 does not serve). Helm
installs the same charts one after another (`helm upgrade --install`, no `--wait`, dependency
order); the reconciler runs its CLI as a user would (process start-up included), once without
waiting (`--no-wait`, comparable with Helm) and once waiting for readiness (`deploy`'s default).

Each contender gets a fresh test-bed cluster of its own, one after the other: CRDs, webhook
configurations and cluster roles are cluster-scoped, so two installs of the set cannot share one.
The kubelet stand-in runs, so workloads become ready as in a real cluster. Per contender: first
deploy, `--noop-runs` unchanged re-runs (median), delete (`reconciler delete` waits until objects
are gone; `helm uninstall` runs without `--wait`). Printed: times, ratios, objects reported changed,
failures per chart (first line of the error) and peak RSS of the CLI processes. A missed target
prints MISS but exits 0. Results: benchmarks/results/set-<timestamp>.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import benchlib
import yaml

from reconciler.model.component import ComponentSet
from reconciler.model.plan import plan_components

NAME = "set"
REPO = benchlib.BENCH_DIR.parent
COPY_TOOL = REPO / "examples" / "tools" / "make_platform_crds.py"
FIRST_DEPLOY_TARGET = 0.4
"""Reconciler first deploy (--no-wait) / sequential helm upgrade --install."""
NOOP_TARGET_S = 1.5
"""Wall time of an unchanged `reconciler deploy`, process start-up included."""
CONTENDERS = ("reconciler-no-wait", "reconciler", "helm")
SCENARIOS = ("first deploy", "no-op", "delete")
SKIPPED = "not run:"  # how the CLI's report marks a step skipped because another one failed


@dataclass
class Pass:
    """One scenario of one contender: wall time, peak RSS, what changed, what failed."""

    seconds: float
    peak_rss_mib: float
    cpu_seconds: float
    changed: int = 0
    failures: dict[str, str] = field(default_factory=dict)


@dataclass
class Contender:
    name: str
    passes: dict[str, list[Pass]] = field(default_factory=dict)

    def add(self, scenario: str, run: Pass) -> None:
        self.passes.setdefault(scenario, []).append(run)

    def seconds(self, scenario: str) -> float:
        return benchlib.median([p.seconds for p in self.passes[scenario]])


def first_line(text: str, limit: int = 160) -> str:
    line = next((ln for ln in text.strip().splitlines() if ln.strip()), "")
    return line if len(line) <= limit else line[: limit - 1] + "…"


class Runner:
    """Runs the CLIs against one cluster, with caches and state inside the scratch directory."""

    def __init__(self, root: Path, kubeconfig: Path, workspace: Path) -> None:
        tools = benchlib.clis(root)
        self.helm_bin, self.reconciler_cli = tools.helm, tools.reconciler
        self.cli_env, self.helm_env = tools.reconciler_env, tools.helm_env
        self.kubeconfig = kubeconfig
        self.workspace = workspace
        self.components = component_set(workspace)

    async def reconciler(self, command: str, *flags: str) -> Pass:
        run = await benchlib.run_measured(
            [
                self.reconciler_cli,
                command,
                "--kubeconfig",
                str(self.kubeconfig),
                "--workspace",
                str(self.workspace),
                "--output",
                "json",
                "--timeout",
                "180",
                *flags,
            ],
            env=self.cli_env,
        )
        try:
            report = json.loads(run.stdout)
        except json.JSONDecodeError:
            raise RuntimeError(f"reconciler {command} printed no report:\n{run.stderr}") from None
        failures = {
            c["name"]: first_line(c["error"] or c["state"])
            for c in report["components"]
            if c["state"] != "done"
        }
        changed = sum(len(c["changed"]) for c in report["components"])
        return Pass(run.seconds, run.peak_rss_mib, run.cpu_seconds, changed, failures)

    async def helm(self, names: Sequence[str], *, uninstall: bool = False) -> Pass:
        """`helm upgrade --install` (or `helm uninstall`) of each chart, one after another."""
        total, peak, cpu, failures = 0.0, 0.0, 0.0, {}
        for name in names:
            namespace = self.components.namespace_of(self.components.get(name))
            if uninstall:
                cmd = [self.helm_bin, "uninstall", name]
            else:
                chart = self.workspace / "resources" / name
                cmd = [
                    self.helm_bin,
                    "upgrade",
                    "--install",
                    name,
                    str(chart),
                    "--create-namespace",
                ]
            cmd += ["--namespace", namespace, "--kubeconfig", str(self.kubeconfig)]
            run = await benchlib.run_measured(cmd, env=self.helm_env)
            total += run.seconds
            cpu += run.cpu_seconds
            peak = max(peak, run.peak_rss_mib)
            if run.returncode != 0:
                failures[name] = first_line(run.stderr.removeprefix("Error: "))
        return Pass(total, peak, cpu, 0, failures)


def component_set(workspace: Path) -> ComponentSet:
    raw = (workspace / "installation" / "resources" / "components.yaml").read_text()
    return ComponentSet.model_validate(yaml.safe_load(raw))


def install_order(components: ComponentSet) -> list[str]:
    """Component names in an order that keeps prerequisites and `dependsOn` (Helm's order)."""
    plan = plan_components(components, with_crds=False)
    return [name for group in plan.groups() for name in group]


def copy_set(workspace: Path) -> None:
    """A complete copy of the set, its generated CRDs included (see the tool's docstring)."""
    subprocess.run(
        [sys.executable, str(COPY_TOOL), "--copy-to", str(workspace)],
        check=True,
        capture_output=True,
    )


def count_objects(helm: str, workspace: Path) -> tuple[dict[str, int], str]:
    """Objects per chart as `helm template` renders them (CRDs included; every chart of the set
    starts each top-level object with a `kind:` line at column 0), and helm's version."""
    components = component_set(workspace)
    counts = {}
    for name in install_order(components):
        namespace = components.namespace_of(components.get(name))
        chart = workspace / "resources" / name
        done = subprocess.run(
            [
                helm,
                "template",
                name,
                str(chart),
                "--namespace",
                namespace,
                "--include-crds",
                "--kube-version",
                "v1.20.2",
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        counts[name] = sum(1 for line in done.stdout.splitlines() if line.startswith("kind:"))
    version = subprocess.run([helm, "version", "--short"], capture_output=True, text=True)
    return counts, version.stdout.strip()


async def measure(runner: Runner, contender: str, noop_runs: int) -> Contender:
    result = Contender(contender)
    if contender == "helm":
        order = install_order(runner.components)
        result.add("first deploy", await runner.helm(order))
        for _ in range(noop_runs):
            result.add("no-op", await runner.helm(order))
        result.add("delete", await runner.helm(order[::-1], uninstall=True))
        return result
    flags = ("--no-wait",) if contender == "reconciler-no-wait" else ()
    result.add("first deploy", await runner.reconciler("deploy", *flags))
    for _ in range(noop_runs):
        result.add("no-op", await runner.reconciler("deploy", *flags))
    result.add("delete", await runner.reconciler("delete"))
    return result


async def run(args: argparse.Namespace) -> dict[str, Any]:
    env = benchlib.environment()
    contenders: list[Contender] = []
    cores: dict[str, dict[str, float]] = {}
    with benchlib.scratch_dir("reconciler-bench-set-") as root:
        workspace = root / "platform"
        await asyncio.to_thread(copy_set, workspace)
        for name in args.contenders:
            async with benchlib.dev_cluster(
                root / name / "cluster", controller_manager=True, kubelet=True
            ) as info:
                runner = Runner(root / name, info.kubeconfig, workspace)
                meter = benchlib.CpuMeter(info.pids)
                started = time.perf_counter()
                contenders.append(await measure(runner, name, args.noop_runs))
                cores[name] = meter.cores(time.perf_counter() - started)
        objects, helm_version = await asyncio.to_thread(count_objects, runner.helm_bin, workspace)
    return {
        "benchmark": NAME,
        "noop_runs": args.noop_runs,
        "objects": objects,
        "environment": {**env, "helm": helm_version},
        "cpu_cores": cores,
        "other_cores": {name: benchlib.other_cores(used) for name, used in cores.items()},
        "contenders": {
            c.name: {scenario: [asdict(p) for p in runs] for scenario, runs in c.passes.items()}
            for c in contenders
        },
    }


def summarize(results: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per contender and scenario: median seconds, ratio to Helm, worst RSS, failures."""
    by_name = results["contenders"]
    rows = []
    for name, passes in by_name.items():
        for scenario in SCENARIOS:
            runs = passes.get(scenario, [])
            if not runs:
                continue
            seconds = benchlib.median([r["seconds"] for r in runs])
            helm_runs = by_name.get("helm", {}).get(scenario, [])
            helm_s = benchlib.median([r["seconds"] for r in helm_runs]) if helm_runs else None
            row: dict[str, Any] = {
                "key": f"{name}/{scenario}",
                "contender": name,
                "scenario": scenario,
                "seconds": round(seconds, 3),
                "cpu_seconds": round(
                    benchlib.median([r.get("cpu_seconds", float("nan")) for r in runs]), 3
                ),
                "ratio": round(seconds / helm_s, 3) if helm_s and name != "helm" else None,
                "changed": max(r["changed"] for r in runs),
                "failures": runs[-1]["failures"],
                "peak_rss_mib": round(max(r["peak_rss_mib"] for r in runs), 1),
                "samples": [r["seconds"] for r in runs],
            }
            # a time only counts when the reconciler finished every chart that Helm finished
            complete = not helm_runs or len(row["failures"]) <= len(helm_runs[-1]["failures"])
            if name == "reconciler-no-wait" and scenario == "first deploy" and row["ratio"]:
                row["target"] = f"<= {FIRST_DEPLOY_TARGET}x helm"
                row["verdict"] = benchlib.verdict(complete and row["ratio"] <= FIRST_DEPLOY_TARGET)
            if name.startswith("reconciler") and scenario == "no-op":
                row["target"] = f"<= {NOOP_TARGET_S} s"
                row["verdict"] = benchlib.verdict(complete and seconds <= NOOP_TARGET_S)
            rows.append(row)
    return rows


def report(results: dict[str, Any], previous: dict[str, Any] | None) -> str:
    rows = summarize(results)
    before = {r["key"]: r for r in summarize(previous)} if previous else {}
    table = [
        [
            row["contender"],
            row["scenario"],
            f"{row['seconds']:.2f}",
            f"{row['cpu_seconds']:.2f}",
            f"{row['ratio']:.2f}" if row["ratio"] is not None else "-",
            f"{row['verdict']} ({row['target']})" if "verdict" in row else "-",
            row["changed"] if row["contender"] != "helm" else "-",
            len(row["failures"]),
            f"{row['peak_rss_mib']:.0f}",
            benchlib.change(row["seconds"], before.get(row["key"], {}).get("seconds")),
        ]
        for row in rows
    ]
    headers = [
        "contender",
        "scenario",
        "seconds",
        "CPU s",
        "vs helm",
        "target",
        "changed",
        "failed",
        "peak RSS MiB",
        "vs previous",
    ]
    objects = results["objects"]
    lines = [
        f"set: {len(objects)} charts, {sum(objects.values())} objects "
        f"({', '.join(f'{k} {v}' for k, v in objects.items())})",
        benchlib.format_table(headers, table),
        "seconds: median wall time; CPU s: user + system CPU of the CLI process (helm: of all its "
        "processes), which other load on the machine barely moves; helm: the sum over its charts; "
        "changed: objects the reconciler reported changed; failed: charts that did not finish "
        "(a target is MISSed when more failed than with Helm); peak RSS: largest CLI process",
    ]
    for row in rows:
        where = f"  {row['contender']} {row['scenario']}:"
        skipped = [chart for chart, error in row["failures"].items() if error.startswith(SKIPPED)]
        for chart, error in row["failures"].items():
            if chart not in skipped:
                lines.append(f"{where} {chart}: {error}")
        if skipped:
            lines.append(f"{where} not run (an earlier step failed): {', '.join(skipped)}")
    if previous:
        lines.append(f"(previous run: {previous['_file']})")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--noop-runs", type=int, default=3, help="unchanged re-runs (median)")
    parser.add_argument(
        "--contenders",
        nargs="+",
        choices=CONTENDERS,
        default=list(CONTENDERS),
        help="who installs the set (each on a fresh cluster)",
    )
    args = parser.parse_args()
    previous = benchlib.previous_results(NAME)
    results = benchlib.run_async(run(args))
    print(report(results, previous))
    print(
        f"CPU over each contender's run (cores of {os.cpu_count()}): {results['cpu_cores']}; "
        f"other processes: {results['other_cores']} (they skew the numbers when high)"
    )
    print(f"results: {benchlib.save_results(NAME, results)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
