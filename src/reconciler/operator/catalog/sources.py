"""Where a module's objects come from, as its Manifest or ModuleTemplate names it: a Helm chart
or a raw manifest (`rawManifest`: one YAML document stream at a local path, an http(s) URL, or
an OCI artifact's layer). The Manifest controller puts the answer into the Task as its typed
source (`model/task.py` `ChartRef` | `RawManifest`); the core's chart provider fetches it.
"""

from __future__ import annotations

from typing import Any


def install_link(name: str, source: dict[str, Any]) -> tuple[str | None, bool]:
    """The link a Manifest's `spec.install` names, and whether it is a raw manifest.

    Ours: `{"type": "helm-chart" | "raw-manifest", "url": link}`. lifecycle-manager's ImageSpec
    `{"type": "oci-ref", "repo", "name", "ref"}` names a raw-manifest layer `repo/name@ref` (only
    raw rendering is supported for those layers)."""
    if source.get("type") == "oci-ref" and source.get("repo") and source.get("ref"):
        repo = str(source["repo"]).removeprefix("oci://").strip("/")
        component = str(source.get("name") or "").strip("/")
        ref = str(source["ref"])
        path = f"{repo}/{component}" if component else repo
        return f"oci://{path}{'@' if ref.startswith('sha256:') else ':'}{ref}", True
    url = source.get("url") or source.get("repo")
    raw = source.get("type") == "raw-manifest" or name == "rawManifest"
    return (str(url) if url else None), raw


def descriptor_source(descriptor: dict[str, Any]) -> tuple[str, str] | None:
    """`("rawManifest" | "chart", link)` from a ModuleTemplate's OCM component descriptor.

    The descriptor's `raw-manifest` resource (or a `helmChart` resource) with `ociArtifact` /
    `ociRegistry` access names its artifact by `imageReference`; with `localBlob` access the
    raw-manifest layer sits in the component's own repository,
    `<baseUrl>[/<subPath>]/component-descriptors/<name>`, as OCM's `urlPath` name mapping stores
    it (the lifecycle manager's reading: no `localReference` means the component's version)."""
    component = descriptor.get("component")
    if not isinstance(component, dict):
        return None
    for resource in component.get("resources") or []:
        if not isinstance(resource, dict):
            continue
        if resource.get("name") == "raw-manifest":
            install = "rawManifest"
        elif resource.get("type") == "helmChart":
            install = "chart"
        else:
            continue
        access = resource.get("access") or {}
        kind = str(access.get("type", "")).partition("/")[0]
        if kind in ("ociArtifact", "ociRegistry") and access.get("imageReference"):
            return install, f"oci://{str(access['imageReference']).removeprefix('oci://')}"
        if kind in ("localBlob", "localOciBlob") and install == "rawManifest":
            blob = _local_blob(component, access)
            if blob is not None:
                return install, blob
    return None


def _local_blob(component: dict[str, Any], access: dict[str, Any]) -> str | None:
    contexts = component.get("repositoryContexts") or [{}]
    context = contexts[-1] if isinstance(contexts[-1], dict) else {}
    if context.get("componentNameMapping", "urlPath") != "urlPath":
        return None  # `sha256-digest` mapping: not supported (the lifecycle manager's default)
    base = str(context.get("baseUrl", "")).removeprefix("oci://").strip("/")
    sub_path = str(context.get("subPath") or "").strip("/")
    if sub_path:
        base = f"{base}/{sub_path}"
    if not base or not component.get("name"):
        return None
    repo = f"{base}/component-descriptors/{component['name']}"
    reference = str(access.get("localReference") or "")
    if reference:
        return f"oci://{repo}@{reference}"
    version = str(component.get("version") or "")
    return f"oci://{repo}:{version}" if version else None
