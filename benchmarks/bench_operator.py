"""Operator at fleet scale: N Kymas x M modules -> N*M Manifests, one operator process.

Remote clusters are simulated by one namespace per Kyma on one real test-bed apiserver (module
namespace `{kyma}`); the control plane is a second one. Prints the time from creating the Kymas
to all Ready, the operator's CPU while the fleet idles, its peak RSS, and the latency from adding
a module to one Kyma to that module's object on its cluster (p50/p99 over samples). Issue 13's
target: 5,000 x 5 with p99 <= 1 s and RSS <= 1 GiB; `--kymas` scales the run down.
Results: benchmarks/results/operator-<timestamp>.json.

`--rollout` (issue 31) measures a ModuleRollout instead, one module per Kyma, waves 1 %, 10 %,
50 %, 100 % (`--soak` seconds each): a broken release (a Deployment that never becomes ready):
how many Kymas ever got it (target: at most the first wave's size) and the time from release
to halt (target: the gate's deadline + 5 s); then a good release: the time to 100 % against the
sum of the waves' soak times (target: at most 10 % more). Results: rollout-<timestamp>.json.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import re
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/ helpers
import benchlib
from tests.operator.modules import plain_chart

from reconciler.charts.sources import ChartCache
from reconciler.kube.client import KubeClient
from reconciler.kube.cluster import Cluster
from reconciler.model.lifecycle import API_VERSION
from reconciler.operator.clusters.install import install_crds
from reconciler.operator.runtime.wiring import Operator
from reconciler.operator.settings import OperatorSettings
from reconciler.util.polling import poll_until

NAME = "operator"
NS = "kcp-system"
TARGET_P99 = 1.0
TARGET_RSS_MIB = 1024.0
CREATE_CONCURRENCY = 32

REQUESTS: Counter[str] = Counter()
"""Requests of every KubeClient in this process, by verb and resource (the operator's, and the
benchmark's own, which it keeps out of the windows it measures)."""
_RESOURCE = re.compile(
    r"/(?:api/v1|apis/[^/]+/[^/]+)(?:/namespaces/[^/]+)?/([a-z]+)(/[^/]+)?(/status)?"
)


def _count_requests() -> None:
    original = KubeClient.request

    async def counted(self: KubeClient, method: str, path: str, **kwargs: Any) -> Any:
        found = _RESOURCE.match(path)
        if found:
            resource, named, status = found.groups()
            verb = method if named or method != "GET" else "LIST"
            REQUESTS[f"{verb} {resource}{'/status' if status else ''}"] += 1
        else:
            REQUESTS[f"{method} other"] += 1
        return await original(self, method, path, **kwargs)

    KubeClient.request = counted  # type: ignore[method-assign]


async def _bounded(n: int, make: Callable[[int], Awaitable[Any]]) -> None:
    limit = asyncio.Semaphore(CREATE_CONCURRENCY)

    async def one(i: int) -> None:
        async with limit:
            await make(i)

    await asyncio.gather(*(one(i) for i in range(n)))


def _chart(root: Path, module: str) -> Path:
    chart = root / module
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text(f"apiVersion: v2\nname: {module}\nversion: 1.0.0\n")
    (chart / "templates" / "cm.yaml").write_text(
        f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {module}\ndata:\n  module: {module}\n"
    )
    return chart


def _kyma(name: str, modules: list[str]) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "Kyma",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"channel": "regular", "modules": [{"name": m, "managed": True} for m in modules]},
    }


def _template(module: str, version: str, chart: Path) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "ModuleTemplate",
        "metadata": {"name": f"{module}-{version}", "namespace": NS},
        "spec": {
            "moduleName": module,
            "version": version,
            "descriptor": {},
            "resources": [{"name": "chart", "link": str(chart)}],
        },
    }


def _release_meta(module: str, version: str) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "ModuleReleaseMeta",
        "metadata": {"name": module, "namespace": NS},
        "spec": {"moduleName": module, "channels": [{"channel": "regular", "version": version}]},
    }


async def _secrets(control: Cluster, kymas: int, config: str) -> None:
    """Each Kyma's kubeconfig Secret (all name the one "remote" apiserver)."""
    await _bounded(
        kymas,
        lambda i: control.apply(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {
                    "name": f"kubeconfig-k{i}",
                    "namespace": NS,
                    "labels": {"operator.kyma-project.io/kyma-name": f"k{i}"},
                },
                "data": {"config": config},
            }
        ),
    )


async def _states(control: Cluster) -> list[str]:
    info = await control.mapper.resolve(API_VERSION, "Kyma")
    return [
        str((k.raw.get("status") or {}).get("state", ""))
        for k in await control.list(info, namespace=NS)
    ]


async def main(
    kymas: int, modules: int, samples: int, idle: float, success: float, root: Path
) -> dict[str, Any]:
    names = [f"m{i}" for i in range(modules + 1)]  # the last one is added during the samples
    async with (
        benchlib.dev_cluster(root / "control", controller_manager=False) as control_info,
        benchlib.dev_cluster(root / "remote", controller_manager=False) as remote_info,
    ):
        control = await Cluster.connect(control_info.kubeconfig)
        remote = await Cluster.connect(remote_info.kubeconfig)
        await install_crds(control)
        await control.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
        kubeconfig = await asyncio.to_thread(Path(remote_info.kubeconfig).read_bytes)
        config = base64.b64encode(kubeconfig).decode()
        for module in names:
            await control.apply(_template(module, "1.0.0", _chart(root / "charts", module)))
            await control.apply(_release_meta(module, "1.0.0"))
        await _secrets(control, kymas, config)
        # every Kyma's "remote" cluster is the same apiserver: no remote Kyma to share
        settings = OperatorSettings(
            module_namespace="{kyma}",
            busy_interval=1,
            success_interval=success,
            workers=16,
            remote_sync=False,
            source_local_files=True,  # the modules are charts on this host
        )
        operator = Operator(control, ChartCache(root / "cache"), settings)
        stop = asyncio.Event()
        running = asyncio.create_task(
            operator.run(Path(control_info.kubeconfig), namespace=NS, stop=stop)
        )
        started, cpu_started = time.monotonic(), benchlib.self_cpu_seconds()
        requests_before = Counter(REQUESTS)
        await _bounded(kymas, lambda i: control.apply(_kyma(f"k{i}", names[:modules])))
        created = time.monotonic() - started
        poll, reported = max(0.5, kymas / 1000), started
        while True:
            states = await _states(control)
            ready = sum(s == "Ready" for s in states)
            if len(states) == kymas and ready == kymas:
                break
            if time.monotonic() - reported >= 30:
                reported = time.monotonic()
                print(
                    f"  {reported - started:.0f} s: {ready}/{kymas} Kymas Ready",
                    file=sys.stderr,
                    flush=True,
                )
            await asyncio.sleep(poll)
        to_ready = time.monotonic() - started
        cpu_to_ready = benchlib.self_cpu_seconds() - cpu_started
        install_requests = REQUESTS - requests_before
        # steady state: the fleet idles (timers, watches); the benchmark sends nothing meanwhile
        servers = {f"control-{k}": v for k, v in control_info.pids.items()}
        servers |= {f"remote-{k}": v for k, v in remote_info.pids.items()}
        meter, idle_started = benchlib.CpuMeter(servers), time.monotonic()
        requests_before = Counter(REQUESTS)
        await asyncio.sleep(idle)
        idle_wall = time.monotonic() - idle_started
        idle_cpu = meter.cores(idle_wall)
        idle_requests = REQUESTS - requests_before
        latencies = []
        extra = names[-1]
        for i in range(min(samples, kymas)):
            changed = time.monotonic()
            await control.apply(_kyma(f"k{i}", names))
            target = {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": extra, "namespace": f"k{i}"},
            }
            await poll_until(
                lambda target=target: remote.get(target), timeout=60, what="module", interval=0.01
            )
            latencies.append(time.monotonic() - changed)
        clients = len(operator.targets)
        reconciles = {
            kind: operator.metrics.registry.get_sample_value(
                "reconciler_operator_reconcile_duration_seconds_count",
                {"kind": kind, "result": "ok"},
            )
            for kind in ("Kyma", "Manifest")
        }
        stop.set()
        await running
        await control.aclose()
        await remote.aclose()
    latencies.sort()
    p99 = latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))]
    return {
        "kymas": kymas,
        "manifests": kymas * modules,
        "seconds_to_all_ready": round(to_ready, 1),
        "seconds_to_create_kymas": round(created, 1),
        # CPU of this process (operator + the benchmark's polling) per Manifest until all Ready:
        # what a shared machine's load does not distort, unlike the wall-clock time above
        "cpu_ms_per_manifest": round(1000 * cpu_to_ready / (kymas * modules), 1),
        "requests_per_manifest_to_ready": round(
            sum(install_requests.values()) / (kymas * modules), 2
        ),
        "install_requests": dict(install_requests.most_common()),
        "idle_seconds": round(idle_wall, 1),
        "idle_cores": idle_cpu["benchmark"],
        "idle_cores_all": idle_cpu,
        "idle_requests_per_s": round(sum(idle_requests.values()) / idle_wall, 2),
        "idle_requests": dict(idle_requests.most_common()),
        "peak_rss_mib": round(benchlib.self_peak_rss_mib(), 1),
        "change_p50_s": round(latencies[len(latencies) // 2], 3),
        "change_p99_s": round(p99, 3),
        "remote_clients": clients,
        "kyma_reconciles": reconciles["Kyma"],
        "manifest_reconciles": reconciles["Manifest"],
        "environment": benchlib.environment(),
    }


async def rollout_main(kymas: int, soak: float, deadline: float, root: Path) -> dict[str, Any]:
    module = "m0"
    waves = [{"name": f"p{p}", "percent": p, "soakSeconds": soak} for p in (1, 10, 50, 100)]
    async with (
        benchlib.dev_cluster(root / "control", controller_manager=False) as control_info,
        benchlib.dev_cluster(root / "remote", controller_manager=False) as remote_info,
    ):
        control = await Cluster.connect(control_info.kubeconfig)
        await install_crds(control)
        await control.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
        kubeconfig = await asyncio.to_thread(Path(remote_info.kubeconfig).read_bytes)
        config = base64.b64encode(kubeconfig).decode()
        charts = {
            "1.0.0": plain_chart(root / "charts", module, "1.0.0"),
            "1.1.0": plain_chart(root / "charts", module, "1.1.0", broken=True),
            "1.2.0": plain_chart(root / "charts", module, "1.2.0"),
        }
        for version, chart in charts.items():
            await control.apply(_template(module, version, chart))

        async def publish(version: str) -> None:
            await control.apply(_release_meta(module, version))

        async def policy(gate_deadline: float) -> None:
            await control.apply(
                {
                    "apiVersion": API_VERSION,
                    "kind": "ModuleRollout",
                    "metadata": {"name": module, "namespace": NS},
                    "spec": {
                        "module": module,
                        "waves": waves,
                        "gate": {"deadlineSeconds": gate_deadline},
                    },
                }
            )

        await publish("1.0.0")
        await policy(deadline)
        await _secrets(control, kymas, config)
        settings = OperatorSettings(
            module_namespace="{kyma}",
            busy_interval=1,
            workers=16,
            remote_sync=False,
            source_local_files=True,
        )
        operator = Operator(control, ChartCache(root / "cache"), settings)
        stop = asyncio.Event()
        running = asyncio.create_task(
            operator.run(Path(control_info.kubeconfig), namespace=NS, stop=stop)
        )
        started = time.monotonic()
        await _bounded(kymas, lambda i: control.apply(_kyma(f"k{i}", [module])))

        def versions() -> dict[str, tuple[str, str]]:
            out = {}
            for i in range(kymas):
                for m in operator.fleet.manifests(NS, f"k{i}"):
                    state = str((m.get("status") or {}).get("state") or "")
                    out[f"k{i}"] = (str(m["spec"].get("version")), state)
            return out

        async def release(version: str) -> dict[str, Any]:
            body = await control.get(
                {
                    "apiVersion": API_VERSION,
                    "kind": "ModuleRollout",
                    "metadata": {"name": module, "namespace": NS},
                }
            )
            found = ((body.raw if body else {}).get("status") or {}).get("releases") or []
            return next((r for r in found if r["version"] == version), {})

        async def all_on(version: str) -> bool:
            on = versions()
            return len(on) == kymas and all(v == (version, "Ready") for v in on.values())

        await poll_until(lambda: all_on("1.0.0"), timeout=3600, what="fleet on 1.0.0")
        installed = time.monotonic() - started
        print(f"  fleet on 1.0.0 after {installed:.0f} s", file=sys.stderr, flush=True)

        # a broken release: only the first wave may get it, and the gate halts it
        released, ever = time.monotonic(), set()
        await publish("1.1.0")
        while True:
            ever |= {k for k, (v, _) in versions().items() if v == "1.1.0"}
            halted = await release("1.1.0")
            if halted.get("phase") in ("Halted", "RolledBack"):
                break
            if time.monotonic() - released > deadline + 120:
                raise RuntimeError(f"the broken release did not halt: {halted}")
            await asyncio.sleep(0.2)
        to_halt = time.monotonic() - released
        settle_until = time.monotonic() + 5  # nobody else switches after the halt
        while time.monotonic() < settle_until:
            ever |= {k for k, (v, _) in versions().items() if v == "1.1.0"}
            await asyncio.sleep(0.2)
        stopped_in = int(halted["wave"])
        first_wave = halted["waves"][stopped_in]["size"]  # the first wave with Kymas in it
        assert all(w["size"] == 0 for w in halted["waves"][:stopped_in])
        print(f"  broken release halted after {to_halt:.1f} s", file=sys.stderr, flush=True)

        # a good release (the fix) through all waves
        await policy(max(deadline, 600.0))
        released = time.monotonic()
        await publish("1.2.0")
        wave_times: list[float] = []
        while True:
            good = await release("1.2.0")
            if good and good.get("wave", 0) >= len(wave_times):
                wave_times.append(round(time.monotonic() - released, 1))
            if good.get("phase") == "Complete":
                break
            if good.get("phase") in ("Halted", "RolledBack"):
                raise RuntimeError(f"the good release halted: {good.get('message')}")
            await asyncio.sleep(0.2)
        to_complete = time.monotonic() - released
        await poll_until(lambda: all_on("1.2.0"), timeout=600, what="fleet on 1.2.0")
        to_all_ready = time.monotonic() - released
        soaks = soak * len(waves)
        stop.set()
        await running
        await control.aclose()
    return {
        "kymas": kymas,
        "waves_percent": [w["percent"] for w in waves],
        "soak_seconds": soak,
        "gate_deadline_seconds": deadline,
        "seconds_to_install_fleet": round(installed, 1),
        "broken_halted_in_wave": stopped_in,
        "broken_first_wave_size": first_wave,
        "broken_kymas_ever_on_it": len(ever),
        "broken_seconds_release_to_halt": round(to_halt, 1),
        "good_wave_started_at_s": wave_times,
        "good_seconds_to_complete": round(to_complete, 1),
        "good_seconds_to_all_ready": round(to_all_ready, 1),
        "good_sum_of_soaks_s": soaks,
        "good_overhead_percent": round(100 * (to_complete - soaks) / soaks, 1),
        "peak_rss_mib": round(benchlib.self_peak_rss_mib(), 1),
        "environment": benchlib.environment(),
    }


def rollout_cli(args: argparse.Namespace) -> None:
    with benchlib.scratch_dir("bench-rollout-") as root:
        result = benchlib.run_async(rollout_main(args.kymas, args.soak, args.deadline, root))
    for key, value in result.items():
        print(f"{key}: {value}")
    ever, first = result["broken_kymas_ever_on_it"], result["broken_first_wave_size"]
    print(f"broken release on <= first wave ({first}): {benchlib.verdict(ever <= first)}")
    halt_ok = result["broken_seconds_release_to_halt"] <= args.deadline + 5
    print(f"halt <= deadline + 5 s: {benchlib.verdict(halt_ok)}")
    print(
        f"good release overhead <= 10 %: {benchlib.verdict(result['good_overhead_percent'] <= 10)}"
    )
    print(f"saved {benchlib.save_results('rollout', result)}")


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kymas", type=int, default=20)
    parser.add_argument("--modules", type=int, default=5)
    parser.add_argument("--samples", type=int, default=20)
    parser.add_argument(
        "--idle",
        type=float,
        default=10.0,
        help="seconds of steady state measured after all Ready (longer than the success "
        "interval to include the periodic re-runs)",
    )
    parser.add_argument(
        "--success-interval",
        type=float,
        default=300.0,
        help="the operator's requeue after success (production: 300 s); shorter makes the "
        "periodic re-checks of a settled fleet visible within --idle",
    )
    parser.add_argument("--rollout", action="store_true", help="measure a ModuleRollout")
    parser.add_argument(
        "--soak",
        type=float,
        default=60.0,
        help="--rollout: soak per wave (at 1,000 Kymas the last wave, ~500 of them, needs ~70 s "
        "to install on 2 cores: a wave passes only once soaked and healthy)",
    )
    parser.add_argument("--deadline", type=float, default=20.0, help="--rollout: gate deadline")
    args = parser.parse_args()
    if args.rollout:
        rollout_cli(args)
        return
    _count_requests()
    with benchlib.scratch_dir("bench-operator-") as root:
        result = benchlib.run_async(
            main(args.kymas, args.modules, args.samples, args.idle, args.success_interval, root)
        )
    for key, value in result.items():
        print(f"{key}: {value}")
    print(f"p99 <= {TARGET_P99} s: {benchlib.verdict(result['change_p99_s'] <= TARGET_P99)}")
    print(
        f"RSS <= {TARGET_RSS_MIB} MiB: {benchlib.verdict(result['peak_rss_mib'] <= TARGET_RSS_MIB)}"
    )
    print(f"saved {benchlib.save_results(NAME, result)}")


if __name__ == "__main__":
    cli()
