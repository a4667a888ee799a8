"""Runtime -> Shoot, as KIM's converter builds it: one module per provider for what its Gardener
extension needs (`aws`, `azure`, `gcp`, `openstack`, `alicloud`, `gdch`), the parts every Shoot
has (`common`), the worker pools (`workers`), and the configuration (`config`). All pure
functions of the Runtime, the configuration and, on an update, the existing Shoot;
`infra/shoot.py` assembles them."""

from __future__ import annotations

from reconciler.infra.converter import alicloud as alicloud
from reconciler.infra.converter import aws, azure, gcp, gdch, openstack
from reconciler.infra.converter.base import ConversionError, ProviderConverter
from reconciler.infra.converter.config import ConverterConfig

STATIC = {
    "aws": aws.CONVERTER,
    "azure": azure.CONVERTER,
    "gcp": gcp.CONVERTER,
    "openstack": openstack.CONVERTER,
    "alicloud": alicloud.CONVERTER,
}


def provider_converter(provider: str, config: ConverterConfig) -> ProviderConverter:
    if provider == "gdch":
        return gdch.infrastructure_for(config.provider.gdch)
    try:
        return STATIC[provider]
    except KeyError:
        raise ConversionError(f"provider {provider!r} is not supported") from None


__all__ = ["ConversionError", "ProviderConverter", "provider_converter"]
