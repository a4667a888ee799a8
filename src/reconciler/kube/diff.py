"""What a deploy would change, computed by the apiserver itself (server-side dry-run apply).

For each prepared object the dry-run result is compared with the live object after removing
what the server manages on its own (resourceVersion, managedFields, timestamps, status), so the
diff shows exactly the fields a real apply would change.
"""

from __future__ import annotations

import difflib
from typing import Any

from reconciler.charts import yamlio
from reconciler.kube.cluster import Cluster
from reconciler.model.kube_object import KubeObject

_VOLATILE_META = ("resourceVersion", "managedFields", "generation", "uid", "creationTimestamp")


def _comparable(obj: KubeObject | None) -> dict[str, Any]:
    if obj is None:
        return {}
    raw = {k: v for k, v in obj.raw.items() if k != "status"}
    meta = {k: v for k, v in (raw.get("metadata") or {}).items() if k not in _VOLATILE_META}
    return {**raw, "metadata": meta}


def _yaml(data: dict[str, Any]) -> list[str]:
    if not data:
        return []
    return yamlio.dump(data, sort_keys=True).splitlines(keepends=True)


async def diff_object(cluster: Cluster, obj: KubeObject) -> str:
    """Unified diff live → would-be for one prepared object ('' when nothing would change)."""
    live = await cluster.get(obj)
    would_be = await cluster.apply(obj, dry_run=True)
    before, after = _comparable(live), _comparable(would_be)
    if before == after:
        return ""
    label = str(obj)
    return "".join(
        difflib.unified_diff(
            _yaml(before), _yaml(after), fromfile=f"live {label}", tofile=f"desired {label}"
        )
    )
