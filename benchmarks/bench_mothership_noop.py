"""Mothership with real components: a first sweep installs them, a second sweep is the no-op.

Why: steady state is the control plane's hot path (issue 11 B): every cluster is reconciled
again every few minutes and almost always nothing changed. Target: the second sweep of N clusters
x 12 components, in-process workers, is >= 5x faster than the first (stated for 1,000 clusters).
Every "cluster" is the same test-bed apiserver reached with its own kubeconfig copy; each cluster's
12 components (the podinfo-like chart, headless Service, 0 replicas so readiness needs no kubelet)
live in that cluster's own namespace, so nothing is shared between clusters but the apiserver.
The first sweep starts with the engine; the second one by re-posting every (unchanged) cluster,
which makes it `reconcile_pending` again, as a broker's retry or the interval would. SQLite store.
A missed target prints MISS but exits 0. Results: benchmarks/results/mothership-noop-<ts>.json.
Each sweep also prints the CPU milliseconds per component operation of the benchmark process
(the engine) and of the test bed's servers: on a shared machine wall times swing with the load,
CPU per operation is what extrapolates to 1,000 clusters.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path
from typing import Any

import benchlib
import sqlalchemy as sa

from reconciler.model.cluster import ClusterSpec
from reconciler.model.status import ClusterStatus
from reconciler.mothership.engine import Engine
from reconciler.mothership.settings import Settings
from reconciler.store.tables import cluster_heads

NAME = "mothership-noop"
CHART = benchlib.CHARTS_DIR / "podinfo"
TARGET_SPEEDUP = 5.0
VALUES = [
    {"key": "service.headless", "value": True},
    {"key": "replicas", "value": 0},
]


def spec(i: int, kubeconfig: str, components: int) -> ClusterSpec:
    return ClusterSpec.model_validate(
        {
            "runtimeID": f"noop-{i:04d}",
            "kubeconfig": kubeconfig,
            "kymaConfig": {
                "version": "1.0.0",
                "components": [
                    {
                        "component": f"comp-{c:02d}",
                        "namespace": f"noop-{i:04d}",
                        "URL": str(CHART),
                        "configuration": VALUES,
                    }
                    for c in range(1, components + 1)
                ],
            },
        }
    )


async def statuses(engine: Engine) -> dict[str, int]:
    assert engine.db is not None
    async with engine.db.connect() as conn:
        rows = await conn.execute(
            sa.select(cluster_heads.c.status, sa.func.count()).group_by(cluster_heads.c.status)
        )
        return {str(status): int(count) for status, count in rows}


async def until_all_ready(engine: Engine, clusters: int, timeout: float) -> dict[str, int]:
    started = time.perf_counter()
    deadline, reported = started + timeout, started
    while True:
        try:
            found = await statuses(engine)
        except (sa.exc.OperationalError, sa.exc.TimeoutError) as exc:
            # SQLite under a saturated machine: the engine's writers wait for the database lock
            # and hold the pool; that is the engine's weather, not the end of the benchmark
            print(f"status poll failed, polling again: {type(exc).__name__}", file=sys.stderr)
            await asyncio.sleep(1.0)
            continue
        settled = found.get(ClusterStatus.READY, 0) + found.get(ClusterStatus.ERROR, 0)
        if settled >= clusters or time.perf_counter() > deadline:
            return found
        if time.perf_counter() - reported >= 60:  # a 1,000-cluster sweep takes many minutes
            reported = time.perf_counter()
            print(f"  {reported - started:.0f} s: {found}", file=sys.stderr, flush=True)
        await asyncio.sleep(0.25)


def cpu_now(pids: dict[str, int]) -> dict[str, float]:
    """CPU seconds used so far by this process (`engine`) and by the test bed's servers."""
    return {"engine": benchlib.self_cpu_seconds()} | {
        name: benchlib.cpu_seconds(pid) for name, pid in pids.items()
    }


def cpu_ms_per_operation(
    before: dict[str, float], after: dict[str, float], operations: int
) -> dict[str, float]:
    """Milliseconds of CPU per operation: the engine, the test bed (all servers) and both."""
    engine = (after["engine"] - before["engine"]) * 1000 / operations
    bed = sum(after[n] - before[n] for n in after if n != "engine") * 1000 / operations
    return {"engine": round(engine, 1), "test_bed": round(bed, 1), "total": round(engine + bed, 1)}


async def run(args: argparse.Namespace) -> dict[str, Any]:
    env = benchlib.environment()
    with benchlib.scratch_dir("reconciler-bench-mothership-noop-") as root:
        async with benchlib.dev_cluster(root / "cluster", controller_manager=True) as info:
            kubeconfig = await asyncio.to_thread(Path(info.kubeconfig).read_text)
            settings = Settings(
                data_dir=root / "data",
                charts_cache=root / "charts",
                workers=args.workers,
                per_cluster=12,
                prerequisites=[],
                sweep_interval=1.0,
                bookkeeping_interval=0.5,
                reconcile_interval=24 * 3600.0,
                full_reconcile_after=24 * 3600.0,
                cleaner_interval=24 * 3600.0,
                operation_timeout=300.0,
            )
            specs = [spec(i, kubeconfig, args.components) for i in range(args.clusters)]
            sweeps = []
            async with Engine(settings) as engine:
                for label in ("first", "no-op"):
                    cpu = benchlib.CpuMeter(info.pids)
                    cpu_before = cpu_now(info.pids)
                    began = time.perf_counter()
                    for cluster in specs:  # the first upsert creates, the second re-posts
                        await engine.service.upsert_cluster(cluster)
                    found = await until_all_ready(engine, args.clusters, args.timeout)
                    seconds = time.perf_counter() - began
                    per_op = cpu_ms_per_operation(
                        cpu_before, cpu_now(info.pids), args.clusters * args.components
                    )
                    sweeps.append(
                        {
                            "pass": label,
                            "seconds": round(seconds, 2),
                            "statuses": found,
                            "cpu_cores": cpu.cores(seconds),
                            "cpu_ms_per_operation": per_op,
                        }
                    )
                    print(f"{label}: {seconds:.1f} s, {found}, {per_op}", file=sys.stderr)
    first, noop = sweeps[0]["seconds"], sweeps[1]["seconds"]
    speedup = first / noop if noop else 0.0
    return {
        "benchmark": NAME,
        "clusters": args.clusters,
        "components": args.components,
        "workers": args.workers,
        "environment": env,
        "sweeps": sweeps,
        "speedup": round(speedup, 1),
        "target": benchlib.verdict(speedup >= TARGET_SPEEDUP),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--clusters", type=int, default=1000)
    parser.add_argument("--components", type=int, default=12)
    parser.add_argument("--workers", type=int, default=16, help="engine workers")
    parser.add_argument("--timeout", type=float, default=3600.0, help="per sweep")
    args = parser.parse_args()
    results = benchlib.run_async(run(args))
    rows = [
        [
            s["pass"],
            f"{s['seconds']:.1f}",
            s["statuses"],
            f"{s['cpu_ms_per_operation']['engine']:.0f}",
            f"{s['cpu_ms_per_operation']['test_bed']:.0f}",
            f"{s['cpu_cores']['machine_busy']:.2f}",
        ]
        for s in results["sweeps"]
    ]
    headers = ["sweep", "wall s", "clusters by status", "engine CPU ms/op", "test bed CPU ms/op"]
    print(benchlib.format_table([*headers, "machine busy"], rows))
    print(f"load average at the end: {os.getloadavg()}")
    print(f"speedup {results['speedup']}x (target >= {TARGET_SPEEDUP:g}x): {results['target']}")
    print(f"results: {benchlib.save_results(NAME, results)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
