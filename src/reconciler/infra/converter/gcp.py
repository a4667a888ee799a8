"""GCP (`gcp.provider.extensions.gardener.cloud/v1alpha1`): the workers network is the nodes
CIDR (`workers` and its older name `worker`); the control plane lives in the first zone."""

from __future__ import annotations

from reconciler.infra.converter.base import Config, ConversionError, ProviderConverter, envelope

API_VERSION = "gcp.provider.extensions.gardener.cloud/v1alpha1"


def infrastructure(
    nodes: str, zones: list[str], *, dual_stack: bool, existing: Config | None
) -> Config:
    return envelope(
        API_VERSION, "InfrastructureConfig", networks={"workers": nodes, "worker": nodes}
    )


def control_plane(zones: list[str], *, dual_stack: bool) -> Config:
    if not zones:
        raise ConversionError("GCP needs at least one zone (the control plane's)")
    return envelope(API_VERSION, "ControlPlaneConfig", zone=zones[0])


CONVERTER = ProviderConverter(API_VERSION, "gcp", infrastructure, control_plane)
