"""The merge rule between a control-plane Kyma and the Kyma its remote cluster's users edit.

Control-plane `spec.modules` = the platform's entries + the remote entries whose names the
platform does not list. The names taken from the remote side are recorded in the control-plane
Kyma's annotation `operator.kyma-project.io/remote-modules` (a JSON list): that is how an entry's
origin is known, and why removing an entry on the remote side removes only what the remote side
added (a platform entry of the same name wins and is never removed by a remote user).
Pure functions: the remote sync reads, merges here, and writes.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

from reconciler.model.lifecycle import GROUP, Module
from reconciler.operator.controllers.status import invalid

MAX_REMOTE_MODULES = 200
"""At most this many entries are taken from a remote Kyma's `spec.modules` (the first ones): a
remote cluster admin must not grow the control-plane Kyma towards etcd's object size limit."""
REMOTE_MODULES = f"{GROUP}/remote-modules"
"""Annotation on the control-plane Kyma: names of the modules that came from the remote Kyma."""


def remote_names(kyma: dict[str, Any]) -> list[str]:
    text = ((kyma.get("metadata") or {}).get("annotations") or {}).get(REMOTE_MODULES)
    try:
        names = json.loads(text) if text else []
    except ValueError:
        return []
    return [str(n) for n in names] if isinstance(names, list) else []


def valid_entries(remote_modules: list[Any]) -> tuple[list[dict[str, Any]], list[str]]:
    """The remote user's entries that parse as modules (first of a name wins, at most
    `MAX_REMOTE_MODULES`), and why the others were left out."""
    entries: list[dict[str, Any]] = []
    problems: list[str] = []
    seen: set[str] = set()
    if len(remote_modules) > MAX_REMOTE_MODULES:
        problems.append(
            f"spec.modules: {len(remote_modules)} entries, more than {MAX_REMOTE_MODULES}:"
            f" only the first {MAX_REMOTE_MODULES} are taken"
        )
    for index, raw in enumerate(remote_modules[:MAX_REMOTE_MODULES]):
        try:
            module = Module.model_validate(raw)
        except ValidationError as exc:
            problems.append(invalid(exc, f"spec.modules[{index}]"))
            continue
        if module.name in seen:
            problems.append(f"spec.modules[{index}]: module {module.name} is listed twice")
            continue
        seen.add(module.name)
        entries.append(module.dump())
    return entries, problems


def merge(
    control_modules: list[dict[str, Any]], added: list[str], remote_modules: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], list[str]]:
    """The control plane's new `spec.modules` and the names that came from the remote side."""
    platform = [m for m in control_modules if m.get("name") not in added]
    taken = {m.get("name") for m in platform}
    from_remote = [m for m in remote_modules if m["name"] not in taken]
    return [*platform, *from_remote], [str(m["name"]) for m in from_remote]
