"""What route handlers work with: the engine's service and the app's pluggable checks.

`create_app` stores one `ApiContext` on the app; handlers receive it through the `context`
dependency instead of reaching for globals, so tests build apps with real engines and their
own validators side by side.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import cast

from fastapi import Request

from reconciler.api.settings import ApiSettings
from reconciler.kube.clients import ClientCache
from reconciler.kube.probe import KubeconfigCheck
from reconciler.model.cluster import ClusterSpec
from reconciler.mothership.service import MothershipService

SpecValidator = Callable[[ClusterSpec], Awaitable[None]]
ReadinessProbe = Callable[[], Awaitable[bool]]


@dataclass(frozen=True)
class ApiContext:
    service: MothershipService
    settings: ApiSettings
    validate_spec: SpecValidator
    check_kubeconfig: KubeconfigCheck
    ready: ReadinessProbe
    console_clients: ClientCache = field(
        default_factory=lambda: ClientCache(
            max_idle=1, allow_host_access=True, timeout=10.0, pool=2
        )
    )
    """The console's Kyma view polls its cluster every 5 s: one client (connection, TLS
    session) for all polls and viewers, not a handshake per poll. Closed on shutdown."""

    def base_url(self, request: Request) -> str:
        return self.settings.public_url or str(request.base_url)


def context(request: Request) -> ApiContext:
    return cast(ApiContext, request.app.state.api)
