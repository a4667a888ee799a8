"""Accepting a client's kubeconfig: parse it, refuse what would act on the mothership's own host,
and prove its cluster answers, before anything is stored (as the original did: 400 otherwise).

A kubeconfig from the wire is untrusted text. `exec`/`auth-provider` entries would run commands
here and `tokenFile`/`client-certificate`/`certificate-authority` would read local files (and
send a local token to whatever server the kubeconfig names), so only inline credentials are
accepted unless `kubeconfig_allow_host_access` says otherwise. A single-line kubeconfig is given
a trailing newline so that no layer mistakes it for a file path. Error messages name the
problem, never the content; `scrub` removes credential values from any message that might
quote them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import yaml

from reconciler.errors import ClusterUnreachable, KubeconfigError, ReconcilerError
from reconciler.kube.cluster import Cluster

KubeconfigCheck = Callable[[str], Awaitable[None]]
HOST_ACCESS_USER_KEYS = ("exec", "auth-provider", "tokenFile", "client-certificate", "client-key")
HOST_ACCESS_CLUSTER_KEYS = ("certificate-authority",)
MIN_SECRET_LENGTH = 6


def as_text(kubeconfig: str) -> str:
    """The kubeconfig as multi-line YAML text (a one-line JSON kubeconfig gets a newline)."""
    return kubeconfig if "\n" in kubeconfig else kubeconfig + "\n"


def _load(kubeconfig: str) -> dict[str, Any]:
    try:
        data = yaml.safe_load(kubeconfig)
    except yaml.YAMLError:
        raise KubeconfigError("kubeconfig is not valid YAML") from None
    if not isinstance(data, dict):
        raise KubeconfigError("kubeconfig is not a YAML mapping")
    return data


def _entries(data: dict[str, Any], kind: str, inner: str) -> list[tuple[str, dict[str, Any]]]:
    items = data.get(kind) or []
    if not isinstance(items, list):
        raise KubeconfigError(f"kubeconfig `{kind}` is not a list")
    found = []
    for item in items:
        if isinstance(item, dict) and isinstance(item.get(inner), dict):
            found.append((str(item.get("name", "")), item[inner]))
    return found


def inspect_kubeconfig(kubeconfig: str, *, allow_host_access: bool = False) -> None:
    """KubeconfigError when the text is not a kubeconfig mapping or (unless allowed) would run a
    command or read a file on this host."""
    data = _load(kubeconfig)
    if allow_host_access:
        return
    for name, user in _entries(data, "users", "user"):
        for key in HOST_ACCESS_USER_KEYS:
            if key in user:
                raise KubeconfigError(
                    f"kubeconfig user {name!r} uses `{key}`, which would run a command or read a"
                    " file on the mothership's host; give inline credentials instead (token,"
                    " client-certificate-data, client-key-data)"
                )
    for name, cluster in _entries(data, "clusters", "cluster"):
        for key in HOST_ACCESS_CLUSTER_KEYS:
            if key in cluster:
                raise KubeconfigError(
                    f"kubeconfig cluster {name!r} uses `{key}` (a file on the mothership's"
                    f" host); give `{key}-data` instead"
                )


def credential_values(kubeconfig: str) -> list[str]:
    """The credential strings in a kubeconfig (user fields, certificate data), longest first."""
    try:
        data = _load(kubeconfig)
        entries = _entries(data, "users", "user") + _entries(data, "clusters", "cluster")
    except KubeconfigError:
        return []
    values = {
        value
        for _, fields in entries
        for key, value in fields.items()
        if isinstance(value, str) and len(value) >= MIN_SECRET_LENGTH and key != "server"
    }
    return sorted(values, key=len, reverse=True)


def scrub(message: str, secrets: list[str]) -> str:
    for secret in secrets:
        message = message.replace(secret, "<redacted>")
    return message


def connect_check(timeout: float) -> KubeconfigCheck:
    """The default check: build a client from the kubeconfig and ask the apiserver for its
    version (ClusterUnreachable / KubeconfigError naming the reason)."""

    async def check(kubeconfig: str) -> None:
        try:
            cluster = await asyncio.wait_for(
                Cluster.connect(kubeconfig, text=True, timeout=timeout), timeout
            )
        except TimeoutError:
            raise ClusterUnreachable(
                f"the cluster's apiserver did not answer within {timeout:g}s"
            ) from None
        except ReconcilerError:
            raise
        except Exception as exc:  # TLS material that does not load, bad URLs, ...
            detail = str(exc)[:200]  # the caller scrubs credential values from messages
            raise KubeconfigError(
                f"kubeconfig is not usable: {type(exc).__name__}{': ' + detail if detail else ''}"
            ) from None
        await cluster.aclose()

    return check
