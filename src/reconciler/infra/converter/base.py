"""What every provider module shares: the conversion error, the provider-config objects'
envelope, CIDR arithmetic for zone subnets, and the signature each provider module implements."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any, Protocol

from reconciler.errors import ReconcilerError

Config = dict[str, Any]

MIN_PREFIX, MAX_PREFIX = 16, 24
"""KIM's bounds for the nodes CIDR a provider's zone subnets are cut from."""


class ConversionError(ReconcilerError):
    """The Runtime cannot become a Shoot Gardener would accept; the Runtime is `Failed` with this
    message (KIM's `ConversionErr`) and nothing is sent."""


class Infrastructure(Protocol):
    def __call__(
        self, nodes: str, zones: list[str], *, dual_stack: bool, existing: Config | None
    ) -> Config: ...


class ControlPlane(Protocol):
    def __call__(self, zones: list[str], *, dual_stack: bool) -> Config: ...


@dataclass(frozen=True)
class ProviderConverter:
    """One provider's part of the Shoot: `spec.provider.infrastructureConfig` and
    `controlPlaneConfig` (for a new Shoot, or merged over the existing one's when zones are
    added), its cloud profile, and whether it reconfigures on a patch (`patches_infrastructure`:
    AWS and Azure keep what Gardener filled in; the others are regenerated)."""

    api_version: str
    cloud_profile: str
    infrastructure: Infrastructure
    control_plane: ControlPlane
    patches_infrastructure: bool = False


def envelope(api_version: str, kind: str, **fields: Any) -> Config:
    return {"apiVersion": api_version, "kind": kind, **fields}


def network(cidr: str, *, name: str = "nodes") -> ipaddress.IPv4Network:
    """`cidr` as an IPv4 network of prefix 16 to 24 (else a ConversionError naming it)."""
    try:
        net = ipaddress.ip_network(cidr, strict=False)
    except ValueError:
        raise ConversionError(f"{name} CIDR {cidr!r} is not a CIDR") from None
    if not isinstance(net, ipaddress.IPv4Network):
        raise ConversionError(f"{name} CIDR {cidr} is not IPv4")
    if not MIN_PREFIX <= net.prefixlen <= MAX_PREFIX:
        raise ConversionError(
            f"{name} CIDR {cidr}: prefix length must be between {MIN_PREFIX} and {MAX_PREFIX}"
        )
    return net


def subnet(base: int, prefix: int, within: ipaddress.IPv4Network) -> str:
    """The subnet of `prefix` bits starting at address `base`, which must lie in `within`."""
    address = ipaddress.IPv4Address(base)
    if address not in within:
        raise ConversionError(f"subnet {address}/{prefix} is not within {within}")
    return f"{address}/{prefix}"


def unique(zones: list[str]) -> list[str]:
    seen: set[str] = set()
    for zone in zones:
        if zone in seen:
            raise ConversionError(f"zone {zone} is listed twice")
        seen.add(zone)
    return zones


def equally_split(
    nodes: str, zones: list[str], *, most: int, least: int = 0
) -> list[tuple[str, str]]:
    """Each zone a consecutive subnet 3 bits longer than `nodes` (8 at most): Azure's and
    Alibaba's layout."""
    if not least <= len(zones) <= most:
        raise ConversionError(f"{len(zones)} zones: between {least} and {most} are supported")
    net = network(nodes)
    prefix = net.prefixlen + 3
    size = 1 << (32 - prefix)
    base = int(net.network_address)
    return [
        (zone, subnet(base + index * size, prefix, net)) for index, zone in enumerate(unique(zones))
    ]


_UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0}


def seconds_of(text: str) -> float:
    """A Go duration (`15m`, `720h`, `1h30m`) in seconds."""
    total, number = 0.0, ""
    for char in text.strip():
        if char.isdigit() or char == ".":
            number += char
        elif char in _UNITS and number:
            total += float(number) * _UNITS[char]
            number = ""
        else:
            raise ConversionError(f"duration {text!r} is not like 15m or 1h30m")
    if number or not text.strip():
        raise ConversionError(f"duration {text!r} lacks a unit")
    return total


def go_duration(seconds: float) -> str:
    """Seconds as Kubernetes serialises a `metav1.Duration` (900 -> `15m0s`)."""
    hours, rest = divmod(int(seconds), 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes}m{secs}s"
    if minutes:
        return f"{minutes}m{secs}s"
    return f"{secs}s"
