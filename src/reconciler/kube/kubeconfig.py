"""Every kubeconfig that enters the process passes here: parse, inspect, load, know its secrets.

A kubeconfig from the wire (the mothership's API, a component reconciler's `POST /v1/run`) is
untrusted text. `exec` and `auth-provider` entries would run commands on this host, and
`tokenFile`, `client-certificate`, `client-key` and `certificate-authority` would read local
files (sending a local token to whatever server the kubeconfig names). So content is inspected
and refused with a message naming the field, unless the caller deliberately allows host access.
A kubeconfig the operator names as a file or through the environment (the CLI's own,
`$KUBECONFIG`) is trusted: it may use exec plugins such as cloud login helpers.

Error messages name the problem, never the content. `credential_values` lists what a scrubber
must remove from any message that might quote the kubeconfig, and `scrubber` builds the one for
work on a cluster.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml
from lightkube.config.kubeconfig import (
    DEFAULT_KUBECONFIG,
    SERVICE_ACCOUNT,
    KubeConfig,
    SingleConfig,
)
from lightkube.core.exceptions import ConfigError

from reconciler.errors import KubeconfigError
from reconciler.util.secrecy import Scrubber, secret_strings

KubeconfigSource = str | Path | None
HOST_ACCESS_USER_KEYS = ("exec", "auth-provider", "tokenFile", "client-certificate", "client-key")
HOST_ACCESS_CLUSTER_KEYS = ("certificate-authority",)
_NOT_SECRET = frozenset({"server", "username", "insecure-skip-tls-verify", "tls-server-name"})
_SECRET_NAME = r"(?:[\w.-]*-data|token|id-token|refresh-token|password|client-key|secret)"
_SECRET_VALUE = re.compile(
    rf"(?<![\w-])[\"']?{_SECRET_NAME}[\"']?\s*:\s*[\"']?([^\"'\s,{{}}\[\]]+)", re.IGNORECASE
)


def as_text(kubeconfig: str) -> str:
    """The kubeconfig as multi-line YAML text (a one-line JSON kubeconfig gets a newline), so
    that no layer mistakes it for a file path."""
    return kubeconfig if "\n" in kubeconfig else kubeconfig + "\n"


def parse(kubeconfig: str) -> dict[str, Any]:
    """The kubeconfig text as a mapping (KubeconfigError naming the line when it is not)."""
    try:
        data = yaml.safe_load(kubeconfig)
    except yaml.YAMLError as exc:
        line = getattr(getattr(exc, "problem_mark", None), "line", None)
        where = f" (line {line + 1})" if line is not None else ""
        raise KubeconfigError(f"kubeconfig is not valid YAML{where}") from None
    if not isinstance(data, dict):
        raise KubeconfigError("kubeconfig is not a YAML mapping")
    return data


def _entries(data: dict[str, Any], kind: str, inner: str) -> list[tuple[str, dict[str, Any]]]:
    items = data.get(kind) or []
    if not isinstance(items, list):
        raise KubeconfigError(f"kubeconfig `{kind}` is not a list")
    return [
        (str(item.get("name", "")), item[inner])
        for item in items
        if isinstance(item, dict) and isinstance(item.get(inner), dict)
    ]


def inspect(data: dict[str, Any]) -> None:
    """KubeconfigError naming the entry and field when the kubeconfig would run a command or
    read a file on this host."""
    for name, user in _entries(data, "users", "user"):
        for key in HOST_ACCESS_USER_KEYS:
            if key in user:
                raise KubeconfigError(
                    f"kubeconfig user {name!r} uses `{key}`, which would run a command or read a"
                    " file on this host; give inline credentials instead (token,"
                    " client-certificate-data, client-key-data)"
                )
    for name, cluster in _entries(data, "clusters", "cluster"):
        for key in HOST_ACCESS_CLUSTER_KEYS:
            if key in cluster:
                raise KubeconfigError(
                    f"kubeconfig cluster {name!r} uses `{key}` (a file on this host);"
                    f" give `{key}-data` instead"
                )


def check_text(kubeconfig: str, *, allow_host_access: bool = False) -> None:
    """Parse and (unless allowed) inspect a kubeconfig from a client, before anything uses it."""
    data = parse(kubeconfig)
    if not allow_host_access:
        inspect(data)


def load_kubeconfig(
    source: KubeconfigSource, *, text: bool = False, allow_host_access: bool = False
) -> SingleConfig:
    """Read a kubeconfig from a file path, from YAML text, or (None) from the environment.

    None means lightkube's `KubeConfig.from_env`: the in-cluster service account when the
    process runs in a Pod, else `$KUBECONFIG`, else `~/.kube/config` (a driver running in the
    cluster, such as an operator, needs nothing else). A `str` is a path unless it spans
    lines; with `text=True` it is always content (kubeconfigs that come from API clients must
    never be taken for a path on this host). Content is inspected for host access unless
    `allow_host_access`; files and the environment are the operator's own and are not.
    """
    try:
        if source is None:
            _check_environment_has_one()
            config = KubeConfig.from_env()
        elif isinstance(source, Path) or ("\n" not in source and not text):
            path = Path(source).expanduser()
            if not path.is_file():
                raise KubeconfigError(f"kubeconfig file {path} does not exist")
            config = KubeConfig.from_file(path)
        else:
            data = parse(source)
            if not allow_host_access:
                inspect(data)
            config = KubeConfig.from_dict(data)
        single = config.get()
    except KubeconfigError:
        raise
    except yaml.YAMLError as exc:
        line = getattr(getattr(exc, "problem_mark", None), "line", None)
        where = f" (line {line + 1})" if line is not None else ""
        raise KubeconfigError(f"kubeconfig is not valid YAML{where}") from None
    except (ConfigError, KeyError, TypeError, ValueError, AttributeError) as exc:
        # the exception text may quote the kubeconfig: name only what kind of problem it is
        what = f"missing {exc}" if isinstance(exc, KeyError) else type(exc).__name__
        raise KubeconfigError(f"kubeconfig is malformed ({what})") from None
    if single is None or single.cluster is None or not single.cluster.server:
        raise KubeconfigError("kubeconfig has no current context with a cluster server")
    return single


def _check_environment_has_one() -> None:
    """Name what is missing when no kubeconfig was given and the environment has none, in the
    order lightkube's `from_env` looks (else its error reads as a malformed file)."""
    if (Path(SERVICE_ACCOUNT) / "token").is_file():
        return  # in a Pod: its service account
    configured = os.environ.get("KUBECONFIG")
    path = Path(configured or DEFAULT_KUBECONFIG).expanduser()
    if path.is_file():
        return
    if configured:
        raise KubeconfigError(f"kubeconfig file {path} (from KUBECONFIG) does not exist")
    raise KubeconfigError(
        f"no kubeconfig: pass --kubeconfig PATH or set KUBECONFIG ({path} does not exist)"
    )


def _under_secret_keys(node: object, inside: bool = False) -> list[str]:
    if isinstance(node, dict):
        return [
            found
            for key, value in node.items()
            for found in _under_secret_keys(
                value, inside or bool(re.fullmatch(_SECRET_NAME, str(key), re.IGNORECASE))
            )
        ]
    if isinstance(node, list):
        return [found for item in node for found in _under_secret_keys(item, inside)]
    return [str(node)] if inside and isinstance(node, str | int) else []


def credential_values(kubeconfig: str) -> list[str]:
    """Every credential string in a kubeconfig: user fields, certificate data, anything under a
    credential-like key (also found by pattern when the text does not parse)."""
    values = set(_SECRET_VALUE.findall(kubeconfig))
    try:
        data = parse(kubeconfig)
        entries = _entries(data, "users", "user") + _entries(data, "clusters", "cluster")
    except KubeconfigError:
        return sorted(values)
    values.update(_under_secret_keys(data))
    for _, fields in entries:
        for key, value in fields.items():
            if key not in _NOT_SECRET:
                values.update(secret_strings(value))
    return sorted(values)


def scrubber(kubeconfig: str, secret_values: Iterable[object] = ()) -> Scrubber:
    """The scrubber for work on one cluster: the kubeconfig itself, each credential in it, and
    each given secret configuration value."""
    values = credential_values(kubeconfig)
    values += [text for value in secret_values for text in secret_strings(value)]
    return Scrubber(values, whole=[kubeconfig])
