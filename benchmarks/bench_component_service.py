"""Sizing numbers for docs/remote.md: one `reconciler component serve` process under load.

Run: `.venv/bin/python -m benchmarks.bench_component_service [--tasks 200] [--workers 1,4,16,64]`
(from the repository root).
Starts a throw-away test-bed apiserver, a stand-in mothership (callback receiver) and, per pool
size, one service process; submits trivial tasks (a chart with one ConfigMap, no readiness
wait needed) as fast as the service takes them (backing off on 429) and reports: tasks/s from
the first submission to the last final callback, latency from submission to the first heartbeat
(p50/p99), and the service's resident memory idle and at its peak (VmRSS/VmHWM).
Not a test (no `test_` prefix); it prints one line per pool size.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.helpers.charts import make_chart
from tests.remote.support import TOKEN, CallbackReceiver, serve_app, task_body

from reconciler.devcluster import DevCluster
from reconciler.devcluster.build import build_all
from reconciler.devcluster.ports import free_ports
from reconciler.model.remote import CallbackStatus, RemoteTask
from reconciler.remote.client import ComponentReconcilerClient, RunStatus
from reconciler.util.polling import poll_until

ONE_CONFIGMAP = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}
data:
  greeting: hello
"""


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def machine_busy_seconds() -> float:
    """CPU seconds all processes on this machine spent so far (all cores)."""
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    idle = values[3] + values[4]
    return (sum(values[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def memory_kib(pid: int) -> dict[str, int]:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0])
    return fields


def start_service(port: int, workers: int, tmp: Path) -> subprocess.Popen[bytes]:
    (tmp / "token").write_text(TOKEN)
    env = {
        **os.environ,
        "RECONCILER_COMPONENT_CHARTS_CACHE": str(tmp / "cache"),
        "RECONCILER_COMPONENT_HEARTBEAT_INTERVAL": "2",
    }
    command = "from reconciler.cli.component import app; app()"
    options = ["--port", str(port), "--workers", str(workers), "--token-file", str(tmp / "token")]
    return subprocess.Popen(
        [sys.executable, "-c", command, "serve", *options, "--log-level", "warning"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        start_new_session=True,
    )


def stop_service(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


async def measure(
    workers: int, tasks: int, kubeconfig: str, chart: Path, receiver: CallbackReceiver, tmp: Path
) -> str:
    (port,) = free_ports(1)
    process = start_service(port, workers, tmp)
    url = f"http://127.0.0.1:{port}"
    try:
        async with ComponentReconcilerClient(url, TOKEN) as client:
            await poll_until(client.ready, timeout=30, what="the service to start")
            idle = memory_kib(process.pid)["VmRSS"]
            prefix = f"w{workers}-"
            submitted: dict[str, float] = {}
            busy_answers = 0
            cpu_before, machine_before = cpu_seconds(process.pid), machine_busy_seconds()
            started = time.monotonic()
            for i in range(tasks):
                cid = f"{prefix}{i}"
                body = task_body(
                    chart=chart,
                    namespace="bench",
                    component=f"c{workers}x{i}",
                    kubeconfig=kubeconfig,
                    callback_url=receiver.callback_url(cid),
                    correlation_id=cid,
                )
                task = RemoteTask.model_validate(body)
                while True:
                    submitted[cid] = time.monotonic()
                    result = await client.run(task)
                    if result.status is RunStatus.ACCEPTED:
                        break
                    assert result.status is RunStatus.BUSY, result
                    busy_answers += 1
                    await asyncio.sleep(0.02)  # backoff of a busy answer, as the mothership
            for cid in submitted:
                final = await receiver.wait_final(cid, timeout=600)
                assert final.status is CallbackStatus.SUCCESS, final.error
            elapsed = time.monotonic() - started
            cpu = cpu_seconds(process.pid) - cpu_before
            machine = machine_busy_seconds() - machine_before
            memory = memory_kib(process.pid)
    finally:
        await asyncio.to_thread(stop_service, process)
    latencies = sorted(
        next(r.at for r in receiver.of(cid) if r.message.status is CallbackStatus.RUNNING) - t
        for cid, t in submitted.items()
    )
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
    return (
        f"workers={workers:3d} tasks={tasks} {tasks / elapsed:6.1f} tasks/s "
        f"first heartbeat p50={statistics.median(latencies) * 1000:.0f} ms "
        f"p99={p99 * 1000:.0f} ms  429s={busy_answers} "
        f"rss idle={idle / 1024:.0f} MiB peak={memory['VmHWM'] / 1024:.0f} MiB  "
        f"service cpu={cpu / tasks * 1000:.0f} ms/task "
        f"machine cpu={machine / elapsed:.2f} of {os.cpu_count()} cores"
    )


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--workers", default="1,4,16,64")
    args = parser.parse_args()
    build_all()
    with tempfile.TemporaryDirectory(prefix="measure-remote-") as scratch:
        tmp = Path(scratch)
        cluster = DevCluster(tmp / "kube", controller_manager=False, kubelet=False)
        try:
            info = await cluster.start()
            kubeconfig = info.kubeconfig.read_text()
            chart = make_chart(tmp, "one", {"cm.yaml": ONE_CONFIGMAP})
            receiver = CallbackReceiver()
            async with serve_app(receiver.app()) as url:
                receiver.url = url
                for workers in (int(w) for w in args.workers.split(",")):
                    run_dir = tmp / f"w{workers}"
                    run_dir.mkdir()
                    print(await measure(workers, args.tasks, kubeconfig, chart, receiver, run_dir))
        finally:
            with contextlib.suppress(Exception):
                await asyncio.shield(cluster.stop())


if __name__ == "__main__":
    asyncio.run(main())
