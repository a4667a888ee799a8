"""The ACL ConfigMap read from the control plane, for the API-server ACL extension
(`converter/acl.py` builds it): only when a Runtime needs the extension, from the Runtime's
namespace (KIM: `kcp-system`, where its Runtimes live), under the name the converter
configuration gives. Missing or malformed, it fails the Runtime with a message naming it, as KIM
does; an unreachable control plane is an error the state machine retries."""

from __future__ import annotations

from reconciler.infra.converter.acl import AclAddresses, AclConfigError, acl_needed, addresses_of
from reconciler.infra.converter.config import ConverterConfig, ConverterConfigError
from reconciler.kube.cluster import Cluster
from reconciler.model.infrastructure import RuntimeSpec

ENABLED = "RECONCILER_INFRA_API_SERVER_ACL_ENABLED"
NAME_FIELD = "kubernetes.kubeApiServer.acl.configMapName"


def check_acl_configured(config: ConverterConfig, enabled: bool) -> None:
    """At start-up, as KIM: with the ACL switched on the ConfigMap must be named."""
    if enabled and not config.kubernetes.kube_api_server.acl.config_map_name:
        raise ConverterConfigError(
            f"{ENABLED} is on but the converter configuration names no ACL ConfigMap ({NAME_FIELD})"
        )


async def acl_addresses(
    kcp: Cluster, spec: RuntimeSpec, namespace: str, enabled: bool, config: ConverterConfig
) -> AclAddresses | None:
    """The addresses of the ACL ConfigMap when the Runtime needs the extension, else None."""
    if not acl_needed(spec, enabled):
        return None
    name = config.kubernetes.kube_api_server.acl.config_map_name
    if not name:
        raise AclConfigError(f"{ENABLED} is on but {NAME_FIELD} is not set")
    ref = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
    }
    live = await kcp.get(ref)
    if live is None:
        raise AclConfigError(f"ACL ConfigMap {namespace}/{name} not found")
    return addresses_of(f"{namespace}/{name}", live.raw.get("data"))
