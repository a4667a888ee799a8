"""The Shoot's worker pools from the Runtime's: the main pool (exactly one) and the additional
ones, with what KIM fills in (machine image defaults, machine-controller-manager settings,
maxPods within what the pods network holds, gVisor's `net-raw`, AWS IMDSv2) and, on an update,
what Gardener changed kept: the pools' order, their zones' order, higher machine image
versions, an update strategy."""

from __future__ import annotations

import copy
import ipaddress
from typing import Any

from reconciler.infra.converter.base import Config, ConversionError, go_duration, seconds_of
from reconciler.infra.converter.config import ConverterConfig
from reconciler.infra.converter.versions import newer

PER_NODE_MAX_PODS = 254
"""What a node's /24 pods range holds (256 addresses less network and broadcast)."""
GVISOR_API_VERSION = "gvisor.os.extensions.gardener.cloud/v1alpha1"


def _machine_image(worker: Config, config: ConverterConfig) -> None:
    machine = worker.setdefault("machine", {})
    image = machine.get("image") or {}
    image["name"] = image.get("name") or config.machine_image.default_name
    image["version"] = image.get("version") or config.machine_image.default_version
    machine["image"] = image


def _machine_controller(worker: Config, config: ConverterConfig) -> None:
    settings = worker.setdefault("machineControllerManager", {})
    settings.setdefault("maxEvictRetries", config.provider.worker.default_max_evict_retries)
    settings.setdefault(
        "machineDrainTimeout",
        go_duration(seconds_of(config.provider.worker.default_machine_drain_timeout)),
    )


def _gvisor(worker: Config) -> None:
    for runtime in (worker.get("cri") or {}).get("containerRuntimes") or []:
        if runtime.get("type") != "gvisor":
            continue
        provider = runtime.get("providerConfig") or {
            "apiVersion": GVISOR_API_VERSION,
            "kind": "GVisorConfiguration",
        }
        provider.setdefault("configFlags", {}).setdefault("net-raw", "true")
        runtime["providerConfig"] = provider


def _max_pods(workers: list[Config], pods: str) -> None:
    """Each pool's `kubernetes.kubelet.maxPods` at most a /24's worth, and all of them together
    at most what the pods network holds (taken from the last pools first)."""
    limited = [
        w for w in workers if ((w.get("kubernetes") or {}).get("kubelet") or {}).get("maxPods")
    ]
    for worker in limited:
        kubelet = worker["kubernetes"]["kubelet"]
        kubelet["maxPods"] = min(int(kubelet["maxPods"]), PER_NODE_MAX_PODS)
    if not pods or not limited:
        return
    try:
        network = ipaddress.IPv4Network(pods, strict=False)
    except ValueError:
        raise ConversionError(f"pods CIDR {pods!r} is not an IPv4 CIDR") from None
    total = max(network.num_addresses - 2, 1) if network.prefixlen < 31 else network.num_addresses
    excess = sum(int(w["kubernetes"]["kubelet"]["maxPods"]) for w in limited) - total
    for worker in reversed(limited):
        if excess <= 0:
            break
        kubelet = worker["kubernetes"]["kubelet"]
        cut = min(excess, int(kubelet["maxPods"]) - 1)
        kubelet["maxPods"] = int(kubelet["maxPods"]) - cut
        excess -= cut
    if excess > 0:
        raise ConversionError(f"the pools' maxPods cannot fit the pods network {pods}")


def zones_of(workers: list[Config]) -> list[str]:
    """Every zone the pools name, first appearance first."""
    zones: list[str] = []
    for worker in workers:
        for zone in worker.get("zones") or []:
            if zone not in zones:
                zones.append(zone)
    return zones


def _align(worker: Config, existing: Config) -> None:
    """Gardener's choices kept: its zone order (new zones appended), a higher machine image
    version of the same image, the update strategy it holds when the Runtime names none."""
    if "updateStrategy" not in worker and "updateStrategy" in existing:
        worker["updateStrategy"] = existing["updateStrategy"]
    zones = list(existing.get("zones") or [])
    if worker.get("zones") != zones:
        worker["zones"] = zones + [z for z in worker.get("zones") or [] if z not in zones]
    mine = worker["machine"]["image"]
    theirs = (existing.get("machine") or {}).get("image") or {}
    if theirs.get("name") == mine.get("name") and theirs.get("version"):
        mine["version"] = newer(str(mine["version"]), str(theirs["version"]))


def shoot_workers(
    main: list[dict[str, Any]],
    additional: list[dict[str, Any]],
    provider: str,
    pods: str,
    config: ConverterConfig,
    existing: list[Config] | None,
    worker_config: Config | None,
) -> list[Config]:
    """The Shoot's pools. `existing`: the Shoot's current pools (an update), else None."""
    if len(main) != 1:
        raise ConversionError(
            f"exactly one main worker pool is required, the Runtime has {len(main)}"
        )
    workers = [copy.deepcopy(w) for w in [*main, *additional]]
    if existing:
        order = {w.get("name"): i for i, w in enumerate(existing)}
        workers.sort(key=lambda w: order.get(w.get("name"), len(order)))
    for worker in workers:
        _machine_image(worker, config)
        if worker_config is not None:
            worker["providerConfig"] = copy.deepcopy(worker_config)
        _gvisor(worker)
    _max_pods(workers, pods)
    for worker in workers:
        _machine_controller(worker, config)
    if existing:
        by_name = {w.get("name"): w for w in existing}
        for worker in workers:
            if worker.get("name") in by_name:
                _align(worker, by_name[worker["name"]])
    return workers
