"""Two operator processes, two shards: every Kyma is reconciled by exactly one of them; a module
release rolls out through a ModuleRollout's waves across both shards (each process computes the
same waves); and when one is killed with SIGKILL the other takes its shard over once the Lease
expires and continues its Kymas. Which process reconciled a Kyma is read from each process's own
metrics."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from reconciler.kube.cluster import Cluster
from reconciler.model.lifecycle import API_VERSION, KYMA_NAME, MODULE_NAME, SYNC
from reconciler.model.rollout import ModuleRolloutSpec
from reconciler.operator.clusters.control import ControlPlane
from reconciler.operator.clusters.install import install_crds
from reconciler.operator.rollout.plan import wave_of
from reconciler.operator.runtime.shards import ShardGate, shard_of
from reconciler.operator.settings import ShardSettings
from reconciler.util.polling import poll_until
from tests.conftest import KubeTarget
from tests.operator import modules
from tests.operator.conftest import LOCAL_SOURCES_ENV

KYMAS = int(os.environ.get("SHARD_TEST_KYMAS", "200"))
LEASE = 20.0
RENEW = 4.0
"""A standby sees the expiry at its next round: takeover within LEASE + RENEW (+ a round)."""
KYMA_SERIES = re.compile(r'^reconciler_operator_kyma_state\{[^}]*kyma="([^"]+)"', re.M)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def _operator(
    kubeconfig: Path, namespace: str, identity: str, port: int, log: Path
) -> asyncio.subprocess.Process:
    env = {
        **os.environ,
        "RECONCILER_OPERATOR_SHARD_COUNT": "2",
        "RECONCILER_OPERATOR_SHARD_LEASE_NAMESPACE": namespace,
        "RECONCILER_OPERATOR_SHARD_LEASE_DURATION": str(LEASE),
        "RECONCILER_OPERATOR_SHARD_RENEW_INTERVAL": str(RENEW),
        "RECONCILER_OPERATOR_SHARD_IDENTITY": identity,
        "RECONCILER_OPERATOR_MODULE_NAMESPACE": "{kyma}",
        **LOCAL_SOURCES_ENV,
    }
    reconciler = Path(sys.executable).with_name("reconciler")
    return await asyncio.create_subprocess_exec(
        str(reconciler), "operator", "run", "--kubeconfig", str(kubeconfig),
        "--namespace", namespace, "--metrics-port", str(port), "--log-level", "info",
        env=env, stdout=log.open("ab"), stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip


async def _reconciled(port: int) -> set[str]:
    async with httpx.AsyncClient(timeout=10) as client:
        text = (await client.get(f"http://127.0.0.1:{port}/metrics")).text
    return set(KYMA_SERIES.findall(text))


async def _holders(control: Cluster, namespace: str) -> dict[str, str]:
    listing = await control.client.request(
        "GET", f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"
    )
    return {
        item["metadata"]["name"]: (item.get("spec") or {}).get("holderIdentity") or ""
        for item in listing["items"]
        if "-shard-" in item["metadata"]["name"]
    }


def test_the_shard_of_a_kyma_is_stable_spread_and_may_be_chosen_by_label() -> None:
    settings = ShardSettings(count=2, label="example.com/shard")
    names = [f"kyma-{i:03d}" for i in range(KYMAS)]
    first = [shard_of(n, None, settings) for n in names]
    assert first == [shard_of(n, {}, settings) for n in names]  # same answer everywhere
    assert 60 < first.count(0) < 140  # spread
    assert shard_of("kyma-000", {"example.com/shard": "1"}, settings) == 1
    assert shard_of("kyma-000", {"example.com/shard": "7"}, settings) == first[0]  # not a shard


async def test_a_takeover_enqueues_the_sync_resources_of_the_shards_kymas(
    kube_cluster: KubeTarget, namespace: str
) -> None:
    settings = ShardSettings(count=2, lease_namespace=namespace)
    kymas = {shard_of(f"kyma-{i}", None, settings): f"kyma-{i}" for i in range(20)}
    async with await Cluster.connect(kube_cluster.kubeconfig) as control:
        await install_crds(control)
        for kyma in kymas.values():
            await control.apply(
                {
                    "apiVersion": API_VERSION,
                    "kind": "SyncResource",
                    "metadata": {"name": f"{kyma}-sync", "namespace": namespace},
                    "spec": {"kyma": kyma, "module": "alpha", "objects": []},
                }
            )
        enqueued: list[tuple[str, str, str]] = []
        gate = ShardGate(settings, ControlPlane(control), enqueued.append, drain_timeout=1)
        gate.namespace = namespace
        await gate._acquired(0)
    assert ("SyncResource", namespace, f"{kymas[0]}-sync") in enqueued
    assert ("SyncResource", namespace, f"{kymas[1]}-sync") not in enqueued


ROLLED = "shardmod"
WAVES = [{"name": "half", "percent": 50, "soakSeconds": 2}, {"name": "rest", "soakSeconds": 0}]


async def _versions(control: Cluster, namespace: str) -> dict[str, tuple[str, str]]:
    """Kyma -> (its ROLLED Manifest's version, state)."""
    listing = await control.client.request(
        "GET",
        f"/apis/{API_VERSION}/namespaces/{namespace}/manifests",
        params={"labelSelector": f"{MODULE_NAME}={ROLLED}"},
    )
    return {
        item["metadata"]["labels"][KYMA_NAME]: (
            str(item["spec"].get("version")),
            str((item.get("status") or {}).get("state") or ""),
        )
        for item in listing["items"]
    }


async def _rollout_across_shards(
    control: Cluster, namespace: str, charts: Path, ports: dict[str, int]
) -> None:
    """Six Kymas, three in each shard, take a release through two waves: no Kyma switches before
    its wave (as the status says it), the status counts the waves this process computes from
    the salt, and both processes switched some."""
    shards = ShardSettings(count=2)
    names = [f"ro-{i:02d}" for i in range(40)]
    kymas = [n for n in names if shard_of(n, None, shards) == 0][:3]
    kymas += [n for n in names if shard_of(n, None, shards) == 1][:3]
    for version in ("1.0.0", "1.1.0"):
        chart = modules.plain_chart(charts, ROLLED, version)
        await control.apply(modules.template(namespace, ROLLED, version, chart, data=False))
    await control.apply(modules.release_meta(namespace, ROLLED, {"regular": "1.0.0"}))
    rollout = {
        "apiVersion": API_VERSION,
        "kind": "ModuleRollout",
        "metadata": {"name": ROLLED, "namespace": namespace},
        "spec": {"module": ROLLED, "waves": WAVES, "gate": {"deadlineSeconds": 120}},
    }
    created = (await control.apply(rollout)).raw
    spec = ModuleRolloutSpec.model_validate(created["spec"])
    salt = created["metadata"]["uid"]
    wave = {k: wave_of(spec, salt, namespace, k, {}) for k in kymas}
    for name in kymas:
        body = modules.kyma(namespace, name, "regular", [{"name": ROLLED}])
        body["metadata"]["labels"] = {SYNC: "false"}
        await control.apply(body)

    async def all_on(version: str) -> bool:
        on = await _versions(control, namespace)
        return len(on) == len(kymas) and set(on.values()) == {(version, "Ready")}

    await poll_until(lambda: all_on("1.0.0"), timeout=120, what="the module on 1.0.0")
    await control.apply(modules.release_meta(namespace, ROLLED, {"regular": "1.1.0"}))
    switched: set[str] = set()

    async def complete() -> dict[str, Any] | None:
        on = await _versions(control, namespace)  # before the status: the status only advances
        live = await control.get(rollout)
        releases = ((live.raw if live else {}).get("status") or {}).get("releases") or []
        release = next((r for r in releases if r["version"] == "1.1.0"), None)
        now = {k for k, (v, _) in on.items() if v == "1.1.0"}
        admitted = (release or {}).get("wave", -1) if release else -1
        if release and release["phase"] != "Complete":
            early = {k for k in now if wave[k] > admitted}
            assert not early, f"{sorted(early)} switched before their wave ({release})"
        switched.update(now)
        return release if release and release["phase"] == "Complete" else None

    done = await poll_until(complete, timeout=120, what="1.1.0 complete", interval=0.1)
    await poll_until(lambda: all_on("1.1.0"), timeout=120, what="the module on 1.1.0")
    sizes = [sum(w == i for w in wave.values()) for i in range(len(WAVES))]
    assert [w["size"] for w in done["waves"]] == sizes
    assert [w["ready"] for w in done["waves"]] == sizes
    a, b = await _reconciled(ports["op-a"]), await _reconciled(ports["op-b"])
    assert set(kymas) & a
    assert set(kymas) & b
    assert not set(kymas) & a & b


async def test_two_operators_split_the_kymas_and_one_continues_when_the_other_is_killed(
    kube_cluster: KubeTarget, namespace: str, tmp_path: Path
) -> None:
    ports = {"op-a": _free_port(), "op-b": _free_port()}
    async with await Cluster.connect(kube_cluster.kubeconfig) as control:
        await install_crds(control)
        processes = {
            identity: await _operator(
                kube_cluster.kubeconfig, namespace, identity, port, tmp_path / f"{identity}.log"
            )
            for identity, port in ports.items()
        }
        try:

            async def one_each() -> bool:
                holders = await _holders(control, namespace)
                return len(holders) == 2 and set(holders.values()) == set(ports)

            await poll_until(one_each, timeout=90, what="each operator holding one shard")
            limit = asyncio.Semaphore(16)

            async def create(i: int) -> None:
                body = modules.kyma(namespace, f"kyma-{i:03d}", "regular", [])
                body["metadata"]["labels"] = {SYNC: "false"}
                async with limit:
                    await control.apply(body)

            await asyncio.gather(*(create(i) for i in range(KYMAS)))
            everyone = {f"kyma-{i:03d}" for i in range(KYMAS)}

            async def all_reconciled() -> tuple[set[str], set[str]] | None:
                a, b = await _reconciled(ports["op-a"]), await _reconciled(ports["op-b"])
                return (a, b) if a | b == everyone else None

            split = await poll_until(all_reconciled, timeout=600, what="all Kymas reconciled")
            a, b = split
            assert not a & b, f"reconciled by both: {sorted(a & b)[:5]}"
            assert a
            assert b
            print(f"\nop-a reconciled {len(a)} Kymas, op-b {len(b)}")
            await _rollout_across_shards(control, namespace, tmp_path / "charts", ports)
            everyone = await _reconciled(ports["op-a"]) | await _reconciled(ports["op-b"])

            holders = await _holders(control, namespace)
            victim = "op-a"
            processes[victim].send_signal(signal.SIGKILL)
            await processes[victim].wait()
            killed = time.monotonic()

            async def taken_over() -> bool:
                return set((await _holders(control, namespace)).values()) == {"op-b"}

            await poll_until(taken_over, timeout=60, what="op-b holding both shards", interval=0.2)
            takeover = time.monotonic() - killed

            async def continued() -> bool:
                return await _reconciled(ports["op-b"]) == everyone

            await poll_until(continued, timeout=300, what="op-b reconciling op-a's Kymas")
            done = time.monotonic() - killed
            print(
                f"lease {LEASE:.0f} s: shard taken over {takeover:.1f} s after kill -9, "
                f"its {len(a)} Kymas reconciled by op-b {done:.1f} s after"
            )
            assert holders  # both were held before the kill
            assert takeover <= LEASE + 2 * RENEW, f"takeover took {takeover:.1f} s"
        finally:
            for process in processes.values():
                if process.returncode is None:
                    process.terminate()
                    await asyncio.wait_for(process.wait(), 60)
