"""Mothership: scheduling latency and one full sweep of many clusters on PostgreSQL.

Why: the control plane keeps thousands of clusters reconciled. Targets (issue 4): (a) from
`upsert cluster` returning to its first operation `in_progress`, p99 <= 1 s over 200 clusters
upserted one by one; (b) 10,000 clusters x 12 components with a no-op component reconciler, all
`ready` within 5 min, peak RSS <= 1 GiB. Both phases run one engine in this process against a
throw-away PostgreSQL server this script starts; the insert phase of (b) (concurrent upserts
through the Python API, engine loops off) is timed separately from the sweep itself, which starts
with the engine and ends when the last cluster is `ready`. Engine logs (JSON, INFO, as in
production) go to a file, not the terminal. A missed target prints MISS but exits 0.
Results: benchmarks/results/mothership-<timestamp>.json.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import cProfile
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import benchlib
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from reconciler.devcluster import PostgresServer
from reconciler.model.cluster import ClusterSpec, ClusterState
from reconciler.model.operation import Operation
from reconciler.model.status import ClusterStatus
from reconciler.mothership.engine import Engine
from reconciler.mothership.invoker import CallableInvoker, Invoker, InvokeResult
from reconciler.mothership.planner import Planner
from reconciler.mothership.settings import Settings
from reconciler.observability.logging import configure_logging
from reconciler.store.tables import cluster_heads

NAME = "mothership"
TARGET_LATENCY_P99_S = 1.0
TARGET_SWEEP_S = 300.0
TARGET_OPERATIONS = 10_000 * 12
"""The sweep target is 300 s for 120,000 operations; smaller runs are held to the same rate."""
TARGET_RSS_MIB = 1024.0
PREREQUISITES = ("cluster-essentials", "istio", "certificates")
Args = argparse.Namespace


@dataclass
class NoOpInvoker:
    """Succeeds at once; remembers when each cluster's first operation started and how many
    operations ran."""

    expected_clusters: int = 0
    first_start: dict[str, float] = field(default_factory=dict)
    all_started: asyncio.Event = field(default_factory=asyncio.Event)
    invocations: int = 0

    def factory(self, _planner: Planner) -> Invoker:
        async def invoke(op: Operation, _state: ClusterState) -> InvokeResult:
            self.first_start.setdefault(op.runtime_id, time.monotonic())
            self.invocations += 1
            if len(self.first_start) >= self.expected_clusters:
                self.all_started.set()
            return InvokeResult(True)

        return CallableInvoker(invoke)


@dataclass
class DbCounter:
    """SQL statements and pool checkouts (each a transaction or a read, plus a pre-ping round
    trip) of one engine: per operation, a measure of work that machine load does not skew."""

    statements: int = 0
    checkouts: int = 0

    def attach(self, engine: AsyncEngine) -> None:
        def on_statement(*_args: Any) -> None:
            self.statements += 1

        def on_checkout(*_args: Any) -> None:
            self.checkouts += 1

        sa.event.listen(engine.sync_engine, "before_cursor_execute", on_statement)
        sa.event.listen(engine.sync_engine, "checkout", on_checkout)


def component_names(count: int) -> list[str]:
    """The three default prerequisites, then independent components (one parallel group)."""
    names = list(PREREQUISITES[:count])
    names += [f"component-{i:02d}" for i in range(1, count - len(names) + 1)]
    return names


def cluster_spec(runtime_id: str, components: list[str]) -> ClusterSpec:
    return ClusterSpec.model_validate(
        {
            "runtimeID": runtime_id,
            "kubeconfig": "apiVersion: v1\nkind: Config\n",  # never read by the no-op invoker
            "kymaConfig": {
                "version": "2.0.0",
                "profile": "evaluation",
                "components": [{"component": c, "URL": f"file:///charts/{c}"} for c in components],
            },
        }
    )


@contextlib.asynccontextmanager
async def postgres() -> AsyncIterator[PostgresServer]:
    """A throw-away server in its own temporary directory (which, as root, is handed to the
    `postgres` user: it must not sit inside a root-only directory)."""
    server = PostgresServer(Path(tempfile.mkdtemp(prefix="bench-mothership-pg-")))
    try:
        await server.start()
        yield server
    finally:
        await asyncio.shield(server.stop())
        shutil.rmtree(server.directory, ignore_errors=True)


def engine_settings(database_url: str, directory: Path, args: Args) -> Settings:
    key_file = directory / "encryption.key"
    if not key_file.exists():
        directory.mkdir(parents=True, exist_ok=True)
        key_file.write_bytes(base64.b64encode(os.urandom(32)))
    return Settings(
        database_url=database_url,
        encryption_key_file=key_file,
        data_dir=directory,
        workers=args.workers,
        per_cluster=12,
        sweep_interval=5.0,
        bookkeeping_interval=1.0,
        reconcile_interval=24 * 3600.0,  # one sweep: no cluster becomes due again meanwhile
        cleaner_interval=24 * 3600.0,
    )


async def count_ready(engine: Engine) -> int:
    assert engine.db is not None
    async with engine.db.connect() as conn:
        query = sa.select(sa.func.count()).where(cluster_heads.c.status == ClusterStatus.READY)
        return int((await conn.execute(query)).scalar_one())


def percentile(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


async def latency(server: PostgresServer, directory: Path, args: Args) -> dict[str, Any]:
    """(a) Upsert clusters one by one, spaced; time from each upsert's return to the start of
    its first operation (the invoker is called right after the claim set it `in_progress`)."""
    url = await server.create_database("latency")
    settings = engine_settings(url, directory / "latency", args)
    invoker = NoOpInvoker(expected_clusters=args.latency_clusters)
    components = component_names(args.components)
    upserted: dict[str, float] = {}
    async with Engine(settings, invoker=invoker.factory) as engine:
        for i in range(args.latency_clusters):
            runtime_id = f"latency-{i:04d}"
            await engine.service.upsert_cluster(cluster_spec(runtime_id, components))
            upserted[runtime_id] = time.monotonic()
            await asyncio.sleep(args.spacing)  # pacing of the load, not a wait for a result

        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(invoker.all_started.wait(), 60)
    waits = [invoker.first_start[r] - t for r, t in upserted.items() if r in invoker.first_start]
    quarter = max(1, len(waits) // 4)
    by_quarter = [statistics.mean(waits[i : i + quarter]) for i in range(0, len(waits), quarter)]
    missing = len(upserted) - len(waits)
    p50, p99 = statistics.median(waits), percentile(waits, 99)
    return {
        "clusters": len(upserted),
        "spacing_s": args.spacing,
        "missing": missing,
        "p50_ms": round(p50 * 1000, 1),
        "p99_ms": round(p99 * 1000, 1),
        "max_ms": round(max(waits) * 1000, 1),
        "mean_ms_by_quarter": [round(w * 1000, 1) for w in by_quarter],
        "ops_offered_per_s": round(args.components / args.spacing, 1),
        "loadavg_after": [round(v, 2) for v in os.getloadavg()],
        "p99_ok": missing == 0 and p99 <= TARGET_LATENCY_P99_S,
    }


async def insert(engine: Engine, clusters: int, components: list[str], concurrency: int) -> None:
    queue: asyncio.Queue[int] = asyncio.Queue()
    for i in range(clusters):
        queue.put_nowait(i)

    async def worker() -> None:
        while not queue.empty():
            i = queue.get_nowait()
            await engine.service.upsert_cluster(cluster_spec(f"sweep-{i:05d}", components))

    await asyncio.gather(*(worker() for _ in range(concurrency)))


@contextlib.contextmanager
def profiled(path: Path | None) -> Iterator[None]:
    if path is None:
        yield
        return
    profile = cProfile.Profile()
    profile.enable()
    try:
        yield
    finally:
        profile.disable()
        profile.dump_stats(path)
        progress(f"profile of the sweep: {path}")


async def sweep(server: PostgresServer, directory: Path, args: Args) -> dict[str, Any]:
    """(b) Insert N clusters (loops off), then start the engine and time until all are ready."""
    url = await server.create_database("sweep")
    settings = engine_settings(url, directory / "sweep", args)
    components = component_names(args.components)
    began = time.perf_counter()
    async with Engine(settings, run_loops=False) as loader:
        await insert(loader, args.clusters, components, args.insert_concurrency)
    insert_s = time.perf_counter() - began
    progress(f"inserted {args.clusters} clusters in {insert_s:.1f} s")

    invoker = NoOpInvoker(expected_clusters=args.clusters)
    timeline: list[tuple[float, int]] = []
    with profiled(args.profile):
        began = time.perf_counter()
        cpu = benchlib.CpuMeter({})
        db = DbCounter()
        async with Engine(settings, invoker=invoker.factory) as engine:
            assert engine.db is not None
            db.attach(engine.db)
            ready = 0
            deadline = began + args.timeout
            while ready < args.clusters and time.perf_counter() < deadline:
                await asyncio.sleep(1.0)  # sampling period of the progress line
                ready = await count_ready(engine)
                elapsed = time.perf_counter() - began
                timeline.append((round(elapsed, 1), ready))
                if len(timeline) % 10 == 0:
                    progress(f"  {elapsed:6.0f} s: {ready} ready, {invoker.invocations} operations")
            seconds = time.perf_counter() - began
            cores = cpu.cores(seconds)
    operations = args.clusters * len(components)
    target_s = TARGET_SWEEP_S * operations / TARGET_OPERATIONS
    ran = max(invoker.invocations, 1)
    return {
        "clusters": args.clusters,
        "components": len(components),
        "operations": operations,
        "invocations": invoker.invocations,
        "ready": ready,
        "insert_s": round(insert_s, 1),
        "inserts_per_s": round(args.clusters / insert_s, 1),
        "sweep_s": round(seconds, 1),
        "ops_per_s": round(invoker.invocations / seconds, 1),
        "target_s": round(target_s, 1),
        "sweep_ok": ready == args.clusters and seconds <= target_s,
        "cores_benchmark": cores["benchmark"],
        "machine_busy": cores["machine_busy"],
        "cpu_ms_per_op": round(cores["benchmark"] * seconds / ran * 1000, 2),
        "statements_per_op": round(db.statements / ran, 1),
        "checkouts_per_op": round(db.checkouts / ran, 1),
        "loadavg_after": [round(v, 2) for v in os.getloadavg()],
        "timeline": timeline[:: max(1, len(timeline) // 60)],
    }


def source_revision() -> str:
    """The commit measured (`+dirty` when src/ has uncommitted changes)."""
    root = Path(__file__).resolve().parent.parent

    def git(*args: str) -> str:
        result = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)
        return result.stdout.strip()

    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    return commit + ("+dirty" if git("status", "--porcelain", "--", "src") else "")


def progress(message: str) -> None:
    """Progress to stdout: stderr carries the engine's log (redirected to the log file)."""
    print(message, flush=True)


async def run(args: Args, log_file: Path) -> dict[str, Any]:
    env = benchlib.environment()
    env["revision"] = source_revision()
    directory = Path(tempfile.mkdtemp(prefix="bench-mothership-"))
    configure_logging(json_lines=True)
    try:
        with log_file.open("a") as log, contextlib.redirect_stderr(log):
            async with postgres() as server:
                results: dict[str, Any] = {"benchmark": NAME, "environment": env}
                results["latency"] = await latency(server, directory, args)
                lat = results["latency"]
                progress(f"latency: p50 {lat['p50_ms']} ms, p99 {lat['p99_ms']} ms")
                if args.clusters:
                    results["sweep"] = await sweep(server, directory, args)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    results["peak_rss_mib"] = round(benchlib.self_peak_rss_mib(), 1)
    results["rss_ok"] = results["peak_rss_mib"] <= TARGET_RSS_MIB
    results["settings"] = {
        "workers": args.workers,
        "per_cluster": 12,
        "insert_concurrency": args.insert_concurrency,
    }
    return results


def report(results: dict[str, Any], previous: dict[str, Any] | None) -> str:
    lat, prev_lat = results["latency"], (previous or {}).get("latency", {})
    rows: list[list[object]] = [
        [
            f"latency p50 ({lat['clusters']} clusters)",
            f"{lat['p50_ms']} ms",
            "",
            benchlib.change(lat["p50_ms"], prev_lat.get("p50_ms")),
        ],
        [
            "latency p99",
            f"{lat['p99_ms']} ms",
            f"{benchlib.verdict(lat['p99_ok'])} (<= {TARGET_LATENCY_P99_S * 1000:.0f} ms)",
            benchlib.change(lat["p99_ms"], prev_lat.get("p99_ms")),
        ],
    ]
    if "sweep" in results:
        sw = results["sweep"]
        prev_sw = (previous or {}).get("sweep", {})
        comparable = prev_sw.get("operations") == sw["operations"]
        prev_ops = prev_sw.get("ops_per_s") if comparable else None
        rows += [
            [
                f"insert {sw['clusters']} clusters",
                f"{sw['insert_s']} s",
                f"{sw['inserts_per_s']}/s",
                benchlib.change(sw["insert_s"], prev_sw.get("insert_s") if comparable else None),
            ],
            [
                f"sweep {sw['clusters']} x {sw['components']}",
                f"{sw['sweep_s']} s",
                f"{benchlib.verdict(sw['sweep_ok'])} (<= {sw['target_s']:g} s)",
                benchlib.change(sw["sweep_s"], prev_sw.get("sweep_s") if comparable else None),
            ],
            [
                "throughput",
                f"{sw['ops_per_s']} ops/s",
                f"{TARGET_OPERATIONS / TARGET_SWEEP_S:.0f} ops/s",
                benchlib.change(1 / sw["ops_per_s"], 1 / prev_ops if prev_ops else None),
            ],
            [
                "CPU during the sweep",
                f"{sw['cores_benchmark']} cores (engine)",
                f"machine {sw['machine_busy'] * 100:.0f}% busy",
                "",
            ],
            [
                "engine CPU per operation",
                f"{sw['cpu_ms_per_op']} ms",
                f"<= {TARGET_SWEEP_S / TARGET_OPERATIONS * 1000:.1f} ms (one core)",
                benchlib.change(sw["cpu_ms_per_op"], prev_sw.get("cpu_ms_per_op")),
            ],
            [
                "SQL per operation",
                f"{sw['statements_per_op']} statements",
                f"{sw['checkouts_per_op']} pool checkouts",
                benchlib.change(sw["statements_per_op"], prev_sw.get("statements_per_op")),
            ],
        ]
    rows.append(
        [
            "peak RSS",
            f"{results['peak_rss_mib']} MiB",
            f"{benchlib.verdict(results['rss_ok'])} (<= {TARGET_RSS_MIB:.0f} MiB)",
            benchlib.change(results["peak_rss_mib"], (previous or {}).get("peak_rss_mib")),
        ]
    )
    header = f"vs {previous['_file']}" if previous else "vs -"
    return benchlib.format_table(["measure", "value", "target", header], rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--clusters", type=int, default=10_000, help="clusters of the sweep")
    parser.add_argument("--components", type=int, default=12, help="components per cluster")
    parser.add_argument("--latency-clusters", type=int, default=200, help="clusters of (a)")
    parser.add_argument("--spacing", type=float, default=0.02, help="seconds between upserts (a)")
    parser.add_argument("--workers", type=int, default=64, help="engine workers")
    parser.add_argument("--insert-concurrency", type=int, default=32, help="upserts in flight")
    parser.add_argument("--timeout", type=float, default=1800.0, help="give up the sweep after")
    parser.add_argument("--profile", type=Path, help="write a cProfile of the sweep here")
    parser.add_argument("--log-file", type=Path, help="engine log (default: a temporary file)")
    args = parser.parse_args()
    previous = benchlib.previous_results(NAME)
    with tempfile.NamedTemporaryFile(prefix="bench-mothership-", suffix=".log") as tmp:
        log_file = args.log_file or Path(tmp.name)
        results = asyncio.run(run(args, log_file))
    print(report(results, previous))
    print(f"results: {benchlib.save_results(NAME, results)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
