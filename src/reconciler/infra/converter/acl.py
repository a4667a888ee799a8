"""The kube-apiserver ACL extension (`acl`), as KIM builds it: when the manager has it switched
on (`RECONCILER_INFRA_API_SERVER_ACL_ENABLED`, KIM's `--api-server-acl-enabled`) and an AWS or
Azure Runtime lists `kubeAPIServer.acl.allowedCIDRs`, the Shoot's API server admits only the
Runtime's CIDRs, the operators' addresses and the control plane's NAT address, in that order
and as given (KIM neither sorts nor de-duplicates). The last two come from a ConfigMap in the
control plane (`kubernetes.kubeApiServer.acl.configMapName` of the converter configuration),
read by the state machine and handed in as `AclAddresses`; reading it is `infra/acl.py`, the
rest is pure."""

from __future__ import annotations

import json
from dataclasses import dataclass

from reconciler.infra.converter.base import Config, ConversionError
from reconciler.model.infrastructure import RuntimeSpec

ACL = "acl"
OPERATOR_IPS_KEY = "acl-list.json"
KCP_IP_KEY = "kcp-external-nat-ip.json"
PROVIDERS = frozenset({"aws", "azure"})
"""KIM sets the extension only for these providers."""


class AclConfigError(ConversionError):
    """The ACL ConfigMap is missing or unreadable: the Runtime is `Failed` (`ConversionErr`), as
    KIM fails it."""


@dataclass(frozen=True)
class AclAddresses:
    """What the ACL ConfigMap holds: the operators' CIDRs and the control plane's NAT address."""

    operator_ips: tuple[str, ...]
    kcp_ip: str


def allowed_cidrs(spec: RuntimeSpec) -> list[str]:
    kubernetes = spec.shoot.kubernetes
    server = kubernetes.kube_api_server if kubernetes is not None else None
    acl = server.acl if server is not None else None
    return list(acl.allowed_cidrs or []) if acl is not None else []


def acl_needed(spec: RuntimeSpec, enabled: bool) -> bool:
    """KIM's `AclNeedsToBeEnabled`: switched on, AWS or Azure, and the Runtime lists CIDRs."""
    return enabled and spec.shoot.provider.type in PROVIDERS and bool(allowed_cidrs(spec))


def addresses_of(name: str, data: dict[str, str] | None) -> AclAddresses:
    """The ConfigMap `name`'s data: `acl-list.json`, a JSON list of CIDRs, and
    `kcp-external-nat-ip.json`, a JSON string (KIM's keys); else an error naming both."""
    data = data or {}
    try:
        operators = json.loads(data[OPERATOR_IPS_KEY])
        kcp = json.loads(data[KCP_IP_KEY])
    except KeyError as exc:
        raise AclConfigError(f"ACL ConfigMap {name}: key {exc.args[0]} is missing") from None
    except ValueError as exc:
        raise AclConfigError(f"ACL ConfigMap {name}: not JSON: {exc}") from None
    if not isinstance(operators, list) or not all(isinstance(o, str) for o in operators):
        raise AclConfigError(f"ACL ConfigMap {name}: {OPERATOR_IPS_KEY} is not a list of strings")
    if not isinstance(kcp, str):
        raise AclConfigError(f"ACL ConfigMap {name}: {KCP_IP_KEY} is not a string")
    return AclAddresses(tuple(operators), kcp)


def acl_extension(
    spec: RuntimeSpec, addresses: AclAddresses | None, existing: list[Config] | None
) -> Config | None:
    """The `acl` extension the Shoot gets: enabled with the CIDRs when `addresses` are given
    (the caller read them because `acl_needed`) and the Runtime still qualifies; otherwise
    disabled if the Shoot has one (a Runtime that dropped its ACL), else none."""
    cidrs = allowed_cidrs(spec)
    if addresses is not None and acl_needed(spec, True):
        rule = {
            "action": "ALLOW",
            "cidrs": [*cidrs, *addresses.operator_ips, addresses.kcp_ip],
            "type": "remote_ip",
        }
        return {"type": ACL, "providerConfig": {"rule": rule}, "disabled": False}
    if any(e.get("type") == ACL for e in existing or []):
        return {"type": ACL, "disabled": True}
    return None
