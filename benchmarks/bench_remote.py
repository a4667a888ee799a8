"""Mothership + component reconciler processes, end to end: throughput and heartbeat latency.

Why (issue 6): operations handed to `reconciler component serve` processes must scale with their
number and start fast. For 1 and for 2 component reconciler processes (`--pools 1 2`), one
engine in this process (remote invoker, REST API on a real port for callbacks, PostgreSQL)
reconciles N clusters x 2 components (a one-ConfigMap chart, so no readiness wait) into a real
test-bed apiserver: operations/s from the first upsert to the last `ready`. Then each cluster
gets a new configuration, one at a time: latency from that upsert to the first `running`
heartbeat its operation receives (target p99 <= 1 s). A miss prints MISS and exits 0.
Run from the repository root: `.venv/bin/python benchmarks/bench_remote.py [--clusters 40]`.
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/ harness, benchlib

import benchlib
from tests.helpers.charts import CONFIGMAPS, make_chart
from tests.remote.support import serve_process
from tests.remote.test_mothership_remote import mothership, spec

from reconciler.devcluster import PostgresServer
from reconciler.model.remote import CallbackMessage, CallbackStatus
from reconciler.model.status import ClusterStatus
from reconciler.util.polling import poll_until

TARGET_P99_MS = 1000.0


async def one_setup(
    pools: int, clusters: int, work: Path, db_url: str, kubeconfig: str, chart: Path
) -> dict[str, Any]:
    with contextlib.ExitStack() as stack:
        processes = []
        for i in range(pools):
            (work / f"pool{i}").mkdir()
            processes.append(stack.enter_context(serve_process(work / f"pool{i}")))
        for process in processes:
            await process.live()
        async with mothership(work, db_url, [p.url for p in processes]) as ms:
            service = ms.engine.service
            first_heartbeat: dict[str, float] = {}
            original = service.callback

            async def timed(
                scheduling_id: str, correlation_id: str, message: CallbackMessage, **kw: Any
            ) -> Any:
                runtime_id = scheduling_id.split("--")[0]
                if message.status is CallbackStatus.RUNNING:
                    first_heartbeat.setdefault(runtime_id, time.monotonic())
                return await original(scheduling_id, correlation_id, message, **kw)

            service.callback = timed  # type: ignore[method-assign]
            ids = [f"bench-{pools}-{i}" for i in range(clusters)]

            async def all_ready() -> bool:
                states = [await service.cluster(r) for r in ids]
                return all(s.status is ClusterStatus.READY for s in states)

            started = time.monotonic()
            for runtime_id in ids:
                await service.upsert_cluster(spec(runtime_id, kubeconfig, chart, runtime_id))
            await poll_until(all_ready, timeout=600, what="all clusters ready")
            sweep = time.monotonic() - started

            latencies = []
            for runtime_id in ids:  # a configuration change, one cluster at a time
                first_heartbeat.pop(runtime_id, None)
                base = spec(runtime_id, kubeconfig, chart, runtime_id)
                changed = base.model_copy(
                    update={
                        "runtime_input": base.runtime_input.model_copy(
                            update={"description": f"changed {time.monotonic()}"}
                        )
                    }
                )
                upserted = time.monotonic()
                await service.upsert_cluster(changed)

                async def heartbeat(r: str = runtime_id) -> float | None:
                    return first_heartbeat.get(r)

                seen = await poll_until(heartbeat, timeout=60, what="first heartbeat")
                latencies.append((seen - upserted) * 1000)
            await poll_until(all_ready, timeout=600, what="all clusters ready again")
    ops = clusters * 2
    cut = statistics.quantiles(latencies, n=100) if len(latencies) > 1 else latencies * 99
    return {
        "pools": pools,
        "clusters": clusters,
        "operations": ops,
        "sweep_s": round(sweep, 2),
        "ops_per_s": round(ops / sweep, 1),
        "heartbeat_p50_ms": round(cut[49], 1),
        "heartbeat_p99_ms": round(cut[98], 1),
    }


async def main(args: argparse.Namespace) -> None:
    rows = []
    with benchlib.scratch_dir("reconciler-bench-remote-") as work:
        pg_dir = Path(tempfile.mkdtemp(prefix="reconciler-bench-pg-"))  # postgres user enters
        postgres = PostgresServer(pg_dir)
        await postgres.start()
        try:
            async with benchlib.dev_cluster(work / "cluster", controller_manager=True) as info:
                kubeconfig = info.kubeconfig.read_text()
                chart = make_chart(work, "cms", {"cms.yaml": CONFIGMAPS}, {"configmaps": ["x"]})
                for pools in args.pools:
                    db_url = await postgres.create_database(f"remote_{uuid.uuid4().hex[:8]}")
                    (work / f"run{pools}").mkdir()
                    rows.append(
                        await one_setup(
                            pools, args.clusters, work / f"run{pools}", db_url, kubeconfig, chart
                        )
                    )
        finally:
            await postgres.stop()
            shutil.rmtree(pg_dir, ignore_errors=True)
    previous = benchlib.previous_results("remote")
    before = {r["pools"]: r for r in (previous or {}).get("rows", [])}
    print(
        benchlib.format_table(
            [
                "processes",
                "operations",
                "sweep s",
                "ops/s",
                "heartbeat p50 ms",
                "p99 ms",
                "p99 <= 1 s",
                "vs previous",
            ],
            [
                [
                    r["pools"],
                    r["operations"],
                    r["sweep_s"],
                    r["ops_per_s"],
                    r["heartbeat_p50_ms"],
                    r["heartbeat_p99_ms"],
                    benchlib.verdict(r["heartbeat_p99_ms"] <= TARGET_P99_MS),
                    benchlib.change(r["sweep_s"], before.get(r["pools"], {}).get("sweep_s")),
                ]
                for r in rows
            ],
        )
    )
    path = benchlib.save_results("remote", {"rows": rows, "environment": benchlib.environment()})
    print(f"results: {path}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--clusters", type=int, default=40)
    parser.add_argument("--pools", type=int, nargs="+", default=[1, 2])
    benchlib.run_async(main(parser.parse_args()))
