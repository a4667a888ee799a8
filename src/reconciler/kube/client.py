"""Async access to one cluster as raw REST on top of lightkube's connection set-up.

`kube/kubeconfig.py` reads and inspects the kubeconfig; lightkube builds the authenticated,
TLS-verified HTTP client (client certificates, tokens, exec plugins, in-cluster service
accounts). On top of it this module speaks
plain REST with dict objects: the reconciler handles arbitrary kinds (custom resources included)
discovered at run time, so typed models would only add conversions and a process-global
resource registry that two clusters with different CRDs could fight over.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx2
from lightkube.config.client_adapter import ConnectionParams
from lightkube.config.kubeconfig import SingleConfig

from reconciler.errors import ClusterUnreachable, KubeApiError
from reconciler.kube.kubeconfig import KubeconfigSource, load_kubeconfig
from reconciler.kube.transport import cheap_liveness_checks
from reconciler.util.secrecy import excerpt

FIELD_MANAGER = "reconciler"
METADATA_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
"""Accept header of a LIST that returns only each item's metadata."""


def _status_of(response: httpx2.Response) -> dict[str, Any] | None:
    """The body when it is a Kubernetes `Status` (what an apiserver answers an error with)."""
    if "json" not in response.headers.get("content-type", ""):
        return None
    try:
        body = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    if isinstance(body, dict) and body.get("kind") == "Status" and body.get("apiVersion") == "v1":
        return body
    return None


def not_kubernetes(response: httpx2.Response, server: str) -> str:
    """What is said of an answer that is not an apiserver's: its HTTP status only. Whatever
    answers at a kubeconfig's server may be an internal service, and its page must never be
    read back through an error, a status or a failure reason (SSRF)."""
    return (
        f"HTTP {response.status_code} {response.reason_phrase} from {server}: "
        "the answer is not from a Kubernetes apiserver (no Kubernetes Status)"
    )


def _error_from(response: httpx2.Response, server: str) -> KubeApiError:
    """The apiserver's own message (scrubbed, then capped) from its `Status`; of any other
    answer nothing but the HTTP status."""
    body = _status_of(response)
    if body is None:
        return KubeApiError(response.status_code, "NotKubernetes", not_kubernetes(response, server))
    message = str(body.get("message") or response.reason_phrase)
    return KubeApiError(response.status_code, str(body.get("reason") or ""), excerpt(message))


CONNECT_TIMEOUT = 10.0
"""Seconds for the TCP connection and the TLS handshake (client-go's TLSHandshakeTimeout)."""


def unreachable_reason(exc: httpx2.HTTPError) -> str:
    """Why a request got no answer, in words: a timeout's own text is empty."""
    if isinstance(exc, httpx2.ConnectTimeout):
        return (
            f"no connection and TLS handshake within {CONNECT_TIMEOUT:g} s (ConnectTimeout: "
            "nothing answers there, or something accepts connections but never speaks TLS)"
        )
    if isinstance(exc, httpx2.TimeoutException):
        return f"no answer in time ({type(exc).__name__}: the apiserver is overloaded or stuck)"
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class KubeClient:
    """One cluster. Create with `from_kubeconfig`; close with `aclose` (or `async with`)."""

    def __init__(
        self, config: SingleConfig, *, timeout: float = 30.0, pool: int = 64, http2: bool = True
    ) -> None:
        """`http2=False`: plain requests over HTTP/1.1 too, a connection each (as watches)."""
        self.server = config.cluster.server
        # connecting includes the TLS handshake: client-go gives that 10 s, not the whole budget
        bounded = httpx2.Timeout(timeout, connect=min(CONNECT_TIMEOUT, timeout))
        params = ConnectionParams(timeout=bounded, trust_env=False).httpx_params(config)
        params.pop("transport", None)  # ours below, one per protocol
        limits = httpx2.Limits(max_connections=pool, max_keepalive_connections=pool)
        # Requests: HTTP/2 where the server offers it (the apiserver does; client-go speaks it
        # too), so the requests of every task on this cluster share one connection, where
        # HTTP/1.1 needed a connection (TLS handshake) per concurrent request and its pool
        # scanned every idle one for each request, the largest CPU cost of a mothership sweep
        # (docs/benchmarks.md). Watches stay on HTTP/1.1, a connection each, as before: on the
        # shared HTTP/2 connection an operator's watch-driven update never arrived
        # (tests/operator/clusters/test_catalog_index.py), and a long-lived stream has nothing
        # to gain.
        requests = httpx2.AsyncHTTPTransport(verify=params["verify"], http2=http2, limits=limits)
        watches = httpx2.AsyncHTTPTransport(verify=params["verify"], limits=limits)
        for transport in (requests, watches):  # the pool probes every idle connection
            cheap_liveness_checks(transport)
        self._http = httpx2.AsyncClient(**params, transport=requests)
        self._watch_http = httpx2.AsyncClient(**params, transport=watches)

    @classmethod
    def from_kubeconfig(
        cls,
        source: KubeconfigSource,
        *,
        text: bool = False,
        allow_host_access: bool = False,
        **kwargs: Any,
    ) -> KubeClient:
        """A client from a kubeconfig source as `load_kubeconfig` reads (and inspects) it."""
        return cls(
            load_kubeconfig(source, text=text, allow_host_access=allow_host_access), **kwargs
        )

    async def __aenter__(self) -> KubeClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()
        await self._watch_http.aclose()

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
                f"cannot reach the apiserver at {self.server}: {unreachable_reason(exc)}"
            ) from None
        if response.status_code >= 400:
            raise _error_from(response, self.server)
        if not response.content:
            return None
        try:
            return response.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise KubeApiError(
                response.status_code, "NotKubernetes", not_kubernetes(response, self.server)
            ) from None

    async def watch(
        self, path: str, params: dict[str, str], *, accept: str | None = None
    ) -> AsyncIterator[dict[str, Any]]:
        """Stream one watch (`?watch=1`): each event as decoded JSON until the server ends it.
        No read timeout: a quiet watch is not a dead one (`timeoutSeconds` bounds it)."""
        try:
            async with self._watch_http.stream(
                "GET",
                path,
                params={**params, "watch": "1"},
                headers={"Accept": accept} if accept else None,
                timeout=httpx2.Timeout(30.0, read=None),
            ) as response:
                if response.status_code >= 400:
                    await response.aread()
                    raise _error_from(response, self.server)
                async for line in response.aiter_lines():
                    if line.strip():
                        yield json.loads(line)
        except httpx2.HTTPError as exc:
            raise ClusterUnreachable(
                f"watch at {self.server} failed: {unreachable_reason(exc)}"
            ) from None

    async def version(self) -> str:
        """The cluster's Kubernetes version, e.g. v1.20.2 (also proves it is reachable)."""
        info = await self.request("GET", "/version")
        return str(info["gitVersion"])
