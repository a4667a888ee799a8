"""Async access to one cluster as raw REST on top of lightkube's connection set-up.

lightkube parses the kubeconfig and builds the authenticated, TLS-verified HTTP client (client
certificates, tokens, exec plugins, in-cluster service accounts). On top of it this module speaks
plain REST with dict objects: the reconciler handles arbitrary kinds (custom resources included)
discovered at run time, so typed models would only add conversions and a process-global
resource registry that two clusters with different CRDs could fight over.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import httpx2
import yaml
from lightkube.config.client_adapter import ConnectionParams
from lightkube.config.kubeconfig import KubeConfig, SingleConfig
from lightkube.core.exceptions import ConfigError

from reconciler.errors import ClusterUnreachable, KubeconfigError, ReconcilerError

FIELD_MANAGER = "reconciler"
KubeconfigSource = str | Path | None


class KubeApiError(ReconcilerError):
    """The apiserver answered with an error status."""

    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason


def load_kubeconfig(source: KubeconfigSource, *, text: bool = False) -> SingleConfig:
    """Read a kubeconfig from a file path, from YAML text, or (None) from the environment.

    None means: `$KUBECONFIG` / `~/.kube/config`, else the in-cluster service account. A `str`
    is a path unless it spans lines; with `text=True` it is always content (kubeconfigs that
    come from API clients must never be taken for a path on this host). Errors name the problem,
    never the content (a kubeconfig is a secret).
    """
    try:
        if source is None:
            config = KubeConfig.from_env()
        elif isinstance(source, Path) or ("\n" not in source and not text):
            path = Path(source).expanduser()
            if not path.is_file():
                raise KubeconfigError(f"kubeconfig file {path} does not exist")
            config = KubeConfig.from_file(path)
        else:
            data = yaml.safe_load(source)
            if not isinstance(data, dict):
                raise KubeconfigError("kubeconfig is not a YAML mapping")
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


def _error_from(response: httpx2.Response) -> KubeApiError:
    try:
        body = response.json()
        message = str(body.get("message") or response.text)
        reason = str(body.get("reason") or "")
    except (json.JSONDecodeError, AttributeError):
        message, reason = response.text.strip() or response.reason_phrase, ""
    return KubeApiError(response.status_code, reason, message)


class KubeClient:
    """One cluster. Create with `from_kubeconfig`; close with `aclose` (or `async with`)."""

    def __init__(self, config: SingleConfig, *, timeout: float = 30.0, pool: int = 64) -> None:
        self.server = config.cluster.server
        params = ConnectionParams(timeout=httpx2.Timeout(timeout), trust_env=False).httpx_params(
            config
        )
        params["transport"] = httpx2.AsyncHTTPTransport(
            verify=params["verify"],
            limits=httpx2.Limits(max_connections=pool, max_keepalive_connections=pool),
        )
        self._http = httpx2.AsyncClient(**params)

    @classmethod
    def from_kubeconfig(
        cls, source: KubeconfigSource, *, text: bool = False, **kwargs: Any
    ) -> KubeClient:
        return cls(load_kubeconfig(source, text=text), **kwargs)

    async def __aenter__(self) -> KubeClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, str] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        accept: str | None = None,
    ) -> Any:
        """Send one request; return the decoded JSON body; raise KubeApiError on error status."""
        # UTF-8 as is: the apiserver's YAML decoder of apply patches rejects the surrogate-pair
        # escapes (`\ud83d\ude80`) json.dumps writes for characters outside the BMP by default
        content = None if body is None else json.dumps(body, ensure_ascii=False).encode("utf-8")
        headers = {"Content-Type": content_type} if content is not None else {}
        if accept is not None:
            headers["Accept"] = accept
        try:
            response = await self._http.request(
                method, path, params=params, content=content, headers=headers
            )
        except httpx2.HTTPError as exc:
            raise ClusterUnreachable(
                f"cannot reach the apiserver at {self.server}: {type(exc).__name__}: {exc}"
            ) from None
        if response.status_code >= 400:
            raise _error_from(response)
        return response.json() if response.content else None

    async def version(self) -> str:
        """The cluster's Kubernetes version, e.g. v1.20.2 (also proves it is reachable)."""
        info = await self.request("GET", "/version")
        return str(info["gitVersion"])


def in_cluster() -> bool:
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST"))
