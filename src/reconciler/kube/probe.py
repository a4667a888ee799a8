"""Proving a client's kubeconfig reaches a cluster, without reading back what answered.

The server a kubeconfig names is chosen by the client and may be any internal URL; fetching it
is the point of the check, returning its page is not (SSRF with read-back). So the outcome says
only whether an apiserver answered, and otherwise the status code and its standard reason
phrase, or the kind of connection failure.
"""

from __future__ import annotations

import asyncio
import http
import json
from collections.abc import Awaitable, Callable

from reconciler.errors import ClusterUnreachable, KubeApiError, KubeconfigError, ReconcilerError
from reconciler.kube.cluster import Cluster
from reconciler.util.secrecy import excerpt

KubeconfigCheck = Callable[[str], Awaitable[None]]


def _phrase(status: int) -> str:
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return "unknown status"


def connect_check(timeout: float, *, allow_host_access: bool = False) -> KubeconfigCheck:
    """The default check: build a client from the kubeconfig and ask the apiserver for its
    version (ClusterUnreachable / KubeconfigError naming the reason, never the answer)."""

    async def check(kubeconfig: str) -> None:
        try:
            cluster = await asyncio.wait_for(
                Cluster.connect(
                    kubeconfig, text=True, timeout=timeout, allow_host_access=allow_host_access
                ),
                timeout,
            )
        except TimeoutError:
            raise ClusterUnreachable(
                f"the cluster's apiserver did not answer within {timeout:g}s"
            ) from None
        except KubeApiError as exc:
            if exc.status < 400:  # a success that is no apiserver's answer (kube/client.py)
                raise ClusterUnreachable(
                    "the kubeconfig's server did not answer like a Kubernetes apiserver"
                ) from None
            raise ClusterUnreachable(
                f"the kubeconfig's server answered {exc.status} {_phrase(exc.status)}"
            ) from None
        except ReconcilerError:  # not reachable (no body involved), kubeconfig refused
            raise
        except (json.JSONDecodeError, KeyError, TypeError):
            raise ClusterUnreachable(
                "the kubeconfig's server did not answer like a Kubernetes apiserver"
            ) from None
        except Exception as exc:  # TLS material that does not load, bad URLs, ...
            detail = excerpt(str(exc), 200)  # the caller scrubs credential values
            raise KubeconfigError(
                f"kubeconfig is not usable: {type(exc).__name__}{': ' + detail if detail else ''}"
            ) from None
        await cluster.aclose()

    return check
