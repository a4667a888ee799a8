"""Infrastructure manager at fleet scale: N Runtimes to Ready through the Gardener simulator.

One test-bed apiserver is the control plane and the garden, a second one every shoot; the
simulator runs as its own process (`reconciler dev-cluster gardener`), so this process's CPU and
RSS are the manager's. Phase (a), Gardener's rate limit lifted: wall time to all Ready, manager
CPU per Runtime, peak RSS (target <= 500 MiB). Phase (b), a fresh set of Runtimes with the limit at
`--rate` requests/s: the Gardener request rate the manager achieved while it had work, as a share
of the limit (target >= 95 %: the limit, not the manager, is the bottleneck).
Results: benchmarks/results/infra-<timestamp>.json.
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

from reconciler.infra.install import install_crds
from reconciler.infra.manager import InfraManager
from reconciler.infra.settings import InfraSettings
from reconciler.kube.client import KubeClient
from reconciler.kube.cluster import Cluster
from reconciler.model.infrastructure import API_VERSION, KYMA_NAME, RUNTIME_ID
from reconciler.observability.logging import configure_logging
from reconciler.util.polling import poll_until

NAME = "infra"
PROJECT = "bench"
TARGET_RSS_MIB = 500.0
TARGET_RATE_SHARE = 0.95


def _runtime(name: str, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "Runtime",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {RUNTIME_ID: name, KYMA_NAME: name},
        },
        "spec": {
            "shoot": {
                "name": f"s-{namespace.rsplit('-', 1)[-1][:3]}-{name}",  # one Shoot per phase
                "purpose": "production",
                "region": "eu-central-1",
                "platformRegion": "cf-eu10",
                "secretBindingName": "aws",
                "provider": {
                    "type": "aws",
                    "workers": [
                        {"name": "w", "machine": {"type": "m6i.large"}, "minimum": 1, "maximum": 3}
                    ],
                },
                "networking": {
                    "pods": "100.64.0.0/12",
                    "nodes": "10.250.0.0/16",
                    "services": "100.104.0.0/13",
                },
            },
            "security": {
                "administrators": ["admin@example.com"],
                "networking": {"filter": {"egress": {"enabled": False}}},
            },
        },
    }


def _ready(manager: InfraManager, namespace: str) -> int:
    """Runtimes the manager has reported Ready (its metrics: listing them all every second
    would cost this process, whose CPU is the manager's, more than the manager itself)."""
    samples = [
        sample for metric in manager.metrics.runtime_state.collect() for sample in metric.samples
    ]
    return sum(
        1
        for sample in samples
        if sample.labels["namespace"] == namespace
        and sample.labels["state"] == "Ready"
        and sample.value == 1
    )


async def _phase(
    control: Cluster, garden_kubeconfig: Path, count: int, namespace: str, rate: float | None
) -> dict[str, Any]:
    """One manager, `count` new Runtimes in their own `namespace`, until all are Ready."""
    await control.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    settings = InfraSettings(
        gardener_project=PROJECT, gardener_rate=rate, workers=25, poll_interval=1.0
    )
    garden = KubeClient.from_kubeconfig(garden_kubeconfig)
    manager = InfraManager(control, garden, settings)
    stop, ready = asyncio.Event(), asyncio.Event()
    running = asyncio.create_task(manager.run(namespace=namespace, stop=stop, ready=ready))
    try:
        await ready.wait()
        cpu_before, started = benchlib.self_cpu_seconds(), time.monotonic()
        gate = asyncio.Semaphore(16)

        async def create(i: int) -> None:
            async with gate:
                await control.apply(_runtime(f"r{i}", namespace))

        await asyncio.gather(*(create(i) for i in range(count)))
        requests: list[tuple[float, float]] = []  # (time, Gardener requests so far)

        async def all_ready() -> bool:
            requests.append((time.monotonic(), _requests(manager)))
            return _ready(manager, namespace) == count

        await poll_until(
            all_ready, timeout=7200, what=f"{count} Runtimes Ready", interval=1.0, max_interval=1.0
        )
        wall = time.monotonic() - started
        cpu = benchlib.self_cpu_seconds() - cpu_before
    finally:  # also when cancelled: the manager must not outlive the clusters
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)
        await garden.aclose()
    total = _requests(manager)
    result: dict[str, Any] = {
        "runtimes": count,
        "seconds_to_all_ready": round(wall, 1),
        "manager_cpu_ms_per_runtime": round(1000 * cpu / count, 1),
        "gardener_requests": int(total),
        "gardener_requests_per_runtime": round(total / count, 2),
    }
    if rate is not None:
        # Overall: every request over the time until the last one. While saturated: until 90 %
        # of them were sent (the tail is the last few Runtimes waiting for the simulated
        # Gardener, when there is nothing left to send).
        last = next(t for t, n in requests if n >= total) - started
        n90, t90 = next((n, t) for t, n in requests if n >= 0.9 * total)
        result["rate_limit"] = rate
        result["achieved_rate"] = round(total / last, 2)
        result["rate_share"] = round(total / last / rate, 3)
        result["rate_share_saturated"] = round(n90 / (t90 - started) / rate, 3)
    return result


def _requests(manager: InfraManager) -> float:
    return sum(
        sample.value
        for metric in manager.metrics.gardener_requests.collect()
        for sample in metric.samples
        if sample.name.endswith("_total")
    )


async def main(count: int, limited: int, rate: float, root: Path) -> dict[str, Any]:
    configure_logging(level="WARNING")
    async with (
        benchlib.dev_cluster(root / "control", controller_manager=False) as control_info,
        benchlib.dev_cluster(root / "shoot", controller_manager=False) as shoot_info,
    ):
        control = await Cluster.connect(control_info.kubeconfig)
        await install_crds(control)
        workdir = root / "garden"
        simulator = await asyncio.create_subprocess_exec(
            *[
                str(Path(sys.executable).with_name("reconciler")),
                "dev-cluster",
                "gardener",
                "--garden",
                str(control_info.kubeconfig),
                "--shoot",
                str(shoot_info.kubeconfig),
                "--workdir",
                str(workdir),
                "--project",
                PROJECT,
            ],
            env=dict(os.environ),
        )
        try:
            kubeconfig = workdir / "garden-kubeconfig"
            await poll_until(
                lambda: asyncio.to_thread(kubeconfig.is_file),
                timeout=60,
                what="the Gardener simulator",
            )
            await asyncio.sleep(1)  # its project namespace
            unlimited = await _phase(control, kubeconfig, count, "kcp-unlimited", None)
            peak = benchlib.self_peak_rss_mib()
            at_limit = (
                await _phase(control, kubeconfig, limited, "kcp-limited", rate) if limited else {}
            )
        finally:
            simulator.terminate()
            await asyncio.wait_for(simulator.wait(), 30)
            await control.aclose()
    return {
        "unlimited": unlimited,
        "peak_rss_mib": round(peak, 1),
        "rate_limited": at_limit,
        "environment": benchlib.environment(),
    }


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runtimes", type=int, default=1000, help="phase (a), no rate limit")
    parser.add_argument("--limited", type=int, default=100, help="phase (b), at --rate")
    parser.add_argument("--rate", type=float, default=5.0)
    args = parser.parse_args()
    with benchlib.scratch_dir("bench-infra-") as root:
        result = benchlib.run_async(main(args.runtimes, args.limited, args.rate, root))
    for key, value in result.items():
        print(f"{key}: {value}")
    print(
        f"RSS <= {TARGET_RSS_MIB} MiB: {benchlib.verdict(result['peak_rss_mib'] <= TARGET_RSS_MIB)}"
    )
    share = result["rate_limited"].get("rate_share_saturated")
    if share is not None:
        print(f"rate share >= {TARGET_RATE_SHARE}: {benchlib.verdict(share >= TARGET_RATE_SHARE)}")
    print(f"saved {benchlib.save_results(NAME, result)}")


if __name__ == "__main__":
    cli()
