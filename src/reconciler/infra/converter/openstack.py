"""OpenStack / SAP Converged Cloud (`openstack.provider.extensions.gardener.cloud/v1alpha1`):
the workers network is the nodes CIDR, floating IPs from Kyma's external pool, F5 load
balancers. Exposed through the `converged-cloud-internet` exposure class (see `shoot.py`)."""

from __future__ import annotations

from reconciler.infra.converter.base import Config, ProviderConverter, envelope

API_VERSION = "openstack.provider.extensions.gardener.cloud/v1alpha1"
FLOATING_POOL = "FloatingIP-external-kyma-01"
LOAD_BALANCER_PROVIDER = "f5"
EXPOSURE_CLASS = "converged-cloud-internet"


def infrastructure(
    nodes: str, zones: list[str], *, dual_stack: bool, existing: Config | None
) -> Config:
    return envelope(
        API_VERSION,
        "InfrastructureConfig",
        floatingPoolName=FLOATING_POOL,
        networks={"workers": nodes},
    )


def control_plane(zones: list[str], *, dual_stack: bool) -> Config:
    return envelope(API_VERSION, "ControlPlaneConfig", loadBalancerProvider=LOAD_BALANCER_PROVIDER)


CONVERTER = ProviderConverter(API_VERSION, "converged-cloud-kyma", infrastructure, control_plane)
