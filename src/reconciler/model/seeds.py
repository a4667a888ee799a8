"""Gardener's `Seed`s (cluster-scoped, `core.gardener.cloud/v1beta1`) as the infrastructure
manager and the Gardener simulator read them: which seeds can take a shoot, in which regions,
and how Gardener's scheduler words a shoot it could not place. Pure functions over the plain
bodies; no I/O.
"""

from __future__ import annotations

import re
from typing import Any

SEED_REGION_LABEL = "seed.gardener.cloud/region"
SEED_PROVIDER_LABEL = "seed.gardener.cloud/provider"
GARDENLET_READY = "GardenletReady"
BACKUP_BUCKETS_READY = "BackupBucketsReady"
NO_MATCHING_PROVIDER = (
    "Failed to schedule Shoot: none out of the {count} seeds has a matching provider for {provider}"
)
"""Gardener's scheduler's description of a Shoot no seed's provider matches (`{provider}`
quoted as Go's `%q` quotes)."""
_NO_MATCHING_PROVIDER = re.compile(
    r"^Failed to schedule Shoot: none out of the \d+ seeds has a matching provider for "
    r'"(?:[^"\\]|\\.)*"'
)


def _condition_true(seed: dict[str, Any], kind: str) -> bool:
    conditions = (seed.get("status") or {}).get("conditions") or []
    return any(c.get("type") == kind and c.get("status") == "True" for c in conditions)


def seed_usable(seed: dict[str, Any]) -> bool:
    """KIM's test of a seed a shoot may land on: not being deleted, visible to the scheduler,
    reconciled once (`status.lastOperation`), its gardenlet ready and, when it has a backup,
    its backup buckets ready."""
    meta, spec = seed.get("metadata") or {}, seed.get("spec") or {}
    status = seed.get("status") or {}
    scheduling = (spec.get("settings") or {}).get("scheduling") or {}
    return (
        not meta.get("deletionTimestamp")
        and scheduling.get("visible") is True
        and bool(status.get("lastOperation"))
        and _condition_true(seed, GARDENLET_READY)
        and (not spec.get("backup") or _condition_true(seed, BACKUP_BUCKETS_READY))
    )


def seed_provider(seed: dict[str, Any]) -> tuple[str, str]:
    """(provider type, region) of a seed."""
    provider = (seed.get("spec") or {}).get("provider") or {}
    return str(provider.get("type") or ""), str(provider.get("region") or "")


def seed_regions(seeds: list[dict[str, Any]], provider_type: str) -> list[str]:
    """The regions of the usable seeds of `provider_type`, each once, in the order listed."""
    regions: dict[str, None] = {}
    for seed in seeds:
        kind, region = seed_provider(seed)
        if kind == provider_type and region and seed_usable(seed):
            regions[region] = None
    return list(regions)


def no_matching_seeds(shoot: dict[str, Any] | None) -> bool:
    """Gardener could not schedule the Shoot: no seed's provider matches it (its
    `status.lastOperation.description`, as KIM reads it)."""
    last = ((shoot or {}).get("status") or {}).get("lastOperation") or {}
    return bool(_NO_MATCHING_PROVIDER.match(str(last.get("description") or "")))
