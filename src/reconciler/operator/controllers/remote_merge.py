"""The rule between a control-plane Kyma and the Kyma `kyma-system/default` its remote
cluster's users edit: as the lifecycle manager's "replace spec", the remote Kyma's `channel`
and `modules` are the truth.

The remote Kyma is created with the control plane's spec. From then on the spec both sides
last agreed on is recorded in the control-plane Kyma's annotation
`operator.kyma-project.io/remote-spec` (JSON `{"channel", "modules"}`):

- the remote spec differs from it (a remote user edited, or nothing was agreed yet): the
  control-plane Kyma's `channel` and `modules` are replaced by the remote ones (a module the
  user removed is uninstalled; `fast` resolves on `fast`);
- else the control-plane spec differs from it (the platform edited): the remote Kyma gets the
  control plane's spec, so the user sees what is installed (the lifecycle manager ignores such
  edits; ours keeps them, the remote side still wins when both moved);
- else nothing is written.

Nothing agreed yet (a remote Kyma from before this rule, which held only the users' additions):
the union of both, on the control plane's channel, is written to both once, so an upgrade
uninstalls nothing.

Pure functions: the remote sync reads, decides here, and writes.
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
REMOTE_SPEC = f"{GROUP}/remote-spec"
"""Annotation on the control-plane Kyma: the spec (`channel`, `modules`) both sides agreed on."""
REMOTE_MODULES = f"{GROUP}/remote-modules"
"""The annotation of the merge rule before (names the remote side added): removed when met."""


def agreed(kyma: dict[str, Any]) -> dict[str, Any] | None:
    """The spec last agreed on, None when there is none (or it does not parse)."""
    text = ((kyma.get("metadata") or {}).get("annotations") or {}).get(REMOTE_SPEC)
    try:
        value = json.loads(text) if text else None
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def spec_of(spec: dict[str, Any] | None) -> dict[str, Any]:
    """`{"channel", "modules"}` of a Kyma spec, modules as parsed (defaults filled, invalid
    entries left out), so both sides compare alike."""
    spec = spec or {}
    modules = valid_entries(spec.get("modules") or [])[0]
    for module in modules:  # the CRD's default, missing on objects stored before it
        module.setdefault("customResourcePolicy", "CreateAndDelete")
    return {"channel": str(spec.get("channel") or ""), "modules": modules}


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


def decide(
    control: dict[str, Any], remote: dict[str, Any], last: dict[str, Any] | None
) -> tuple[str, dict[str, Any]]:
    """`("control", spec)`: write the spec to the control-plane Kyma (the remote side moved);
    `("remote", spec)`: write it to the remote Kyma (only the control plane moved);
    `("both", spec)`: write it to both (nothing agreed yet); `("", spec)`: both agree already.
    `control` and `remote` as `spec_of` gives them; a remote Kyma without a channel keeps the
    control plane's."""
    if not remote["channel"]:
        remote = {**remote, "channel": control["channel"]}
    if last is None and remote != control:
        # nothing agreed yet but both differ: a remote Kyma of the merge rule before (it held
        # only the users' additions). Their union, on the control plane's channel, once, so
        # an upgrade uninstalls nothing.
        names = {m["name"] for m in control["modules"]}
        extra = [m for m in remote["modules"] if m["name"] not in names]
        return "both", {**control, "modules": [*control["modules"], *extra]}
    if remote != last:
        return ("" if remote == control else "control"), remote
    if control != last:
        return "remote", control
    return "", control
