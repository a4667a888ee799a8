"""Fan-out: the podinfo-like chart as N releases (one per namespace), concurrently, in one process.

Why: a control plane reconciles many small releases at once; the target is 1,000 releases in
<= 60 s and <= 300 MiB peak RSS on 2 cores. This drives the Python API (`ComponentReconciler`)
directly, so process start-up is not measured, with bounded concurrency and without waiting for
readiness, then repeats the same N as a no-op pass (one shared live index per pass, as one
control-plane run over the cluster: target <= 3 s per 1,000 releases and <= 0.1 requests per
release); `--passes ... upgrade` adds a pass with a changed value over the existing releases.
Besides wall time and objects per second it prints where the time goes: CPU used by this process
and by each of the cluster's servers (all on the same 2 cores), the summed render time and the
renders per release, and the number and mean latency of API requests.
A missed target prints MISS but exits 0. Results: benchmarks/results/fanout-<timestamp>.json.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import benchlib

from reconciler.charts.render import Capabilities
from reconciler.charts.sources import ChartCache
from reconciler.core.charts import HelmChartProvider
from reconciler.core.results import Outcome
from reconciler.core.runner import ComponentReconciler
from reconciler.kube.client import KubeClient
from reconciler.kube.cluster import Cluster
from reconciler.kube.kubeconfig import load_kubeconfig
from reconciler.kube.live import LiveIndex
from reconciler.model.kube_object import KubeObject
from reconciler.model.task import ChartRef, Task

NAME = "fanout"
CHART = benchlib.CHARTS_DIR / "podinfo"
TARGET_RELEASES = 1000
TARGET_SECONDS = 60.0
TARGET_RATE = TARGET_RELEASES / TARGET_SECONDS
TARGET_RSS_MIB = 300.0
TARGET_NOOP_RATE = TARGET_RELEASES / 3.0
TARGET_NOOP_REQUESTS = 0.1
PASSES = ("first", "no-op", "upgrade")
DEFAULT_PASSES = ("first", "no-op")
HEADLESS = {"service": {"headless": True}}
"""The test bed's service range has 254 addresses: 1,000 ClusterIP Services would not fit."""
UPGRADE = {**HEADLESS, "message": "upgraded"}
"""The `upgrade` pass's values: new inputs over existing objects (one Deployment changes), the
full path with stable generated values looking for generated paths."""


class CountingKubeClient(KubeClient):
    """A KubeClient that counts its requests (GETs of collections as LIST), the objects the
    LISTs returned, and sums the requests' latency."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.requests: Counter[str] = Counter()
        self.request_seconds = 0.0

    async def request(self, method: str, path: str, **kwargs: Any) -> Any:
        started = time.perf_counter()
        verb = method
        try:
            result = await super().request(method, path, **kwargs)
            if method == "GET" and isinstance(result, dict) and "items" in result:
                verb = "LIST"
                self.requests["listed objects"] += len(result["items"] or [])
            return result
        finally:
            self.request_seconds += time.perf_counter() - started
            self.requests[verb] += 1


@dataclass
class TimedProvider:
    """The chart provider, timing each render (worker-thread queueing included)."""

    inner: HelmChartProvider
    seconds: float = 0.0
    renders: int = 0

    async def render(self, task: Task, capabilities: Capabilities | None) -> list[KubeObject]:
        started = time.perf_counter()
        try:
            return await self.inner.render(task, capabilities)
        finally:
            self.seconds += time.perf_counter() - started
            self.renders += 1

    async def digest(self, task: Task, cluster: str) -> str:
        return await self.inner.digest(task, cluster)

    async def may_vary(self, task: Task) -> bool:
        return await self.inner.may_vary(task)


@dataclass
class Probe:
    """What a pass reads besides its outcomes: request counts and render time."""

    client: CountingKubeClient
    provider: TimedProvider
    _start: dict[str, float] = field(default_factory=dict)
    _requests: Counter[str] = field(default_factory=Counter)

    def start(self) -> None:
        self._start = {
            "request_s": self.client.request_seconds,
            "render_s": self.provider.seconds,
            "renders": self.provider.renders,
        }
        self._requests = Counter(self.client.requests)

    def read(self) -> dict[str, Any]:
        requests = self.client.requests - self._requests
        total = sum(v for k, v in requests.items() if k != "listed objects")
        request_s = self.client.request_seconds - self._start["request_s"]
        return {
            "requests": dict(sorted(requests.items())),
            "requests_total": total,
            "request_mean_ms": round(1000 * request_s / total, 2) if total else 0.0,
            "render_s_summed": round(self.provider.seconds - self._start["render_s"], 2),
            "renders": self.provider.renders - int(self._start["renders"]),
        }


async def one_pass(
    reconciler: ComponentReconciler,
    cluster: Cluster,
    probe: Probe,
    pids: dict[str, int],
    *,
    n: int,
    concurrency: int,
    label: str,
) -> dict[str, Any]:
    limit = asyncio.Semaphore(concurrency)
    live = LiveIndex()  # one pass = one run on this cluster: one metadata LIST per kind

    async def release(i: int) -> Outcome:
        task = Task(
            component="podinfo",
            namespace=f"fan{n}-{i:04d}",
            version="bench",
            source=ChartRef(str(CHART)),
            configuration=UPGRADE if label == "upgrade" else HEADLESS,
            wait=False,
        )
        async with limit:
            return await reconciler.run(task, cluster, live=live)

    probe.start()
    meter = benchlib.CpuMeter(pids)
    started = time.perf_counter()
    outcomes = await asyncio.gather(*(release(i) for i in range(n)))
    wall = time.perf_counter() - started
    cores = meter.cores(wall)
    errors = [o.error for o in outcomes if not o.ok]
    applied = sum(o.applied for o in outcomes)
    latencies = sorted(o.seconds for o in outcomes)
    return {
        "key": f"n={n}/{label}",
        "n": n,
        "pass": label,
        "wall_s": round(wall, 2),
        "releases_per_s": round(n / wall, 1),
        "objects_applied": applied,
        "objects_per_s": round(applied / wall, 1),
        "objects_changed": sum(len(o.changed) for o in outcomes),
        "errors": len(errors),
        "first_errors": errors[:3],
        "release_latency_s": {
            "p50": round(latencies[len(latencies) // 2], 3),
            "p95": round(latencies[int(len(latencies) * 0.95)], 3),
            "max": round(latencies[-1], 3),
        },
        "cpu_cores": cores,
        "cpu_ms_per_release": {
            name: round(1000 * used * wall / n, 1)
            for name, used in cores.items()
            if name != "machine_busy"
        },
        "cpu_floor_s": round(
            sum(used for name, used in cores.items() if name != "machine_busy")
            * wall
            / (os.cpu_count() or 1),
            1,
        ),
        "other_cores": benchlib.other_cores(cores),
        "benchmark_peak_rss_mib": round(benchlib.self_peak_rss_mib(), 1),
        "servers_memory_mib": {name: benchlib.memory_mib(pid) for name, pid in pids.items()},
        **probe.read(),
    }


def with_verdicts(row: dict[str, Any]) -> dict[str, Any]:
    """Targets are stated for 1,000 releases; other N are judged by the same release rate.
    The no-op pass has its own: <= 3 s per 1,000 releases and <= 0.1 requests per release."""
    if row["pass"] == "no-op":
        row["target_time"] = benchlib.verdict(
            row["releases_per_s"] >= TARGET_NOOP_RATE
            and row["requests_total"] / row["n"] <= TARGET_NOOP_REQUESTS
        )
    else:
        row["target_time"] = benchlib.verdict(row["releases_per_s"] >= TARGET_RATE)
    row["target_memory"] = benchlib.verdict(row["benchmark_peak_rss_mib"] <= TARGET_RSS_MIB)
    return row


def report(rows: list[dict[str, Any]], previous: dict[str, Any] | None) -> str:
    before = {r["key"]: r for r in previous["rows"]} if previous else {}
    main = []
    where = []
    for row in rows:
        prev = before.get(row["key"], {})
        cpu = row["cpu_cores"]
        api = row["servers_memory_mib"].get("kube-apiserver", {})
        main.append(
            [
                row["n"],
                row["pass"],
                f"{row['wall_s']:.1f}",
                f"{row['releases_per_s']:.1f}",
                f"{row['objects_per_s']:.0f}",
                row["objects_changed"],
                row["errors"],
                f"{row['release_latency_s']['p50']:.2f}/{row['release_latency_s']['p95']:.2f}",
                f"{row['benchmark_peak_rss_mib']:.0f}",
                f"{api.get('rss_mib', 0):.0f} (peak {api.get('peak_rss_mib', 0):.0f})",
                f"{row['target_time']}/{row['target_memory']}",
                benchlib.change(row["wall_s"], prev.get("wall_s")),
            ]
        )
        ms = row["cpu_ms_per_release"]
        where.append(
            [
                row["n"],
                row["pass"],
                *(
                    f"{cpu.get(name, 0):.2f} ({ms.get(name, 0):.0f})"
                    for name in ("benchmark", "kube-apiserver", "etcd", "kube-controller-manager")
                ),
                f"{row['other_cores']:.2f}",
                f"{row['cpu_floor_s']:.1f}",
                f"{row['requests_total'] / row['n']:.1f}",
                f"{row['requests'].get('listed objects', 0) / row['n']:.0f}",
                f"{row['request_mean_ms']:.0f}",
                f"{1000 * row['render_s_summed'] / row['n']:.0f}",
                f"{row['renders'] / row['n']:.2f}",
            ]
        )
    text = benchlib.format_table(
        [
            "N",
            "pass",
            "wall s",
            "releases/s",
            "objects/s",
            "changed",
            "errors",
            "latency p50/p95 s",
            "peak RSS MiB",
            "apiserver RSS MiB",
            f"target {TARGET_SECONDS:.0f}s/{TARGET_RSS_MIB:.0f}MiB",
            "vs previous",
        ],
        main,
    )
    text += (
        f"\n\nwhere the time goes: CPU cores used on average over the pass ({os.cpu_count()} in "
        "all) and, in brackets, CPU ms per release; 'others': every other process on the "
        "machine; 'CPU floor': the wall time our processes' CPU would need on idle cores\n"
    )
    text += benchlib.format_table(
        [
            "N",
            "pass",
            "this process",
            "apiserver",
            "etcd",
            "ctrl-manager",
            "others",
            "CPU floor s",
            "requests/release",
            "LISTed objects/release",
            "request ms",
            "render ms",
            "renders/release",
        ],
        where,
    )
    if previous:
        text += f"\n(previous run: {previous['_file']}; 'vs previous' is wall s now/then)"
    return text


async def run(args: argparse.Namespace) -> dict[str, Any]:
    env = benchlib.environment()
    rows = []
    with benchlib.scratch_dir("reconciler-bench-fanout-") as root:
        async with benchlib.dev_cluster(
            root / "cluster", controller_manager=args.controller_manager
        ) as info:
            client = CountingKubeClient(load_kubeconfig(info.kubeconfig), pool=args.pool)
            async with Cluster(client) as cluster:
                provider = TimedProvider(HelmChartProvider(ChartCache(root / "charts")))
                reconciler = ComponentReconciler(provider)
                probe = Probe(client, provider)
                for n in sorted(set(args.n)):  # ascending: each peak RSS belongs to its own N
                    for label in args.passes:
                        row = await one_pass(
                            reconciler,
                            cluster,
                            probe,
                            info.pids,
                            n=n,
                            concurrency=args.concurrency,
                            label=label,
                        )
                        rows.append(with_verdicts(row))
                        print(
                            f"N={n} {label}: {row['wall_s']} s, {row['errors']} errors",
                            file=sys.stderr,
                        )
    return {
        "benchmark": NAME,
        "chart": str(CHART.relative_to(Path(benchlib.BENCH_DIR).parent)),
        "concurrency": args.concurrency,
        "pool": args.pool,
        "controller_manager": args.controller_manager,
        "environment": env,
        "rows": rows,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--n", type=int, nargs="+", default=[100, 1000], help="release counts")
    parser.add_argument("--concurrency", type=int, default=32, help="releases in flight")
    parser.add_argument(
        "--passes",
        nargs="+",
        choices=PASSES,
        default=list(DEFAULT_PASSES),
        help="first install, then the same N again unchanged; 'upgrade': again with a changed "
        "value (after the first pass)",
    )
    parser.add_argument("--pool", type=int, default=64, help="HTTP connections to the apiserver")
    parser.add_argument(
        "--controller-manager",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="run kube-controller-manager (Deployments get ReplicaSets and Pods, as in a cluster)",
    )
    args = parser.parse_args()
    previous = benchlib.previous_results(NAME)
    results = benchlib.run_async(run(args))
    print(report(results["rows"], previous))
    print(f"results: {benchlib.save_results(NAME, results)}")
    failed = sum(row["errors"] for row in results["rows"])
    if failed:
        print(f"{failed} releases failed: the numbers above are not valid", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
