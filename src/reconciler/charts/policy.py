"""Which sources may be fetched: the rule chart sources and raw manifests share.

A `SourcePolicy` names the URL schemes allowed (`http`, `https`, `oci`, `file`), whether local
files (a path, `file://`) may be read, and where a redirect may lead. Every link is checked
before anything is fetched, and every redirect again (`get_checked` follows them itself): the
target's scheme must be an allowed `http(s)` one, never a downgrade from `https`, and, when
`redirect_hosts` is set, on the original host or one of those. The default allows what the
mothership always fetched (its sources come from its administrators); operator mode builds a
strict one from its settings (ModuleTemplate links).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

import httpx

from reconciler.errors import ChartError

MAX_REDIRECTS = 5
ALL_SCHEMES = frozenset({"http", "https", "oci", "file"})


def redact(url: str) -> str:
    """The URL without user information or query (either may carry credentials)."""
    parts = urlsplit(url)
    netloc = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, netloc, parts.path, "", parts.fragment))


def scheme_of(link: str) -> str:
    """`http`, `https`, `oci`, `file` (a path without a scheme), or the link's own scheme."""
    scheme = urlsplit(link).scheme.lower()
    return scheme if len(scheme) > 1 else "file"


@dataclass(frozen=True)
class SourcePolicy:
    schemes: frozenset[str] = ALL_SCHEMES
    local_files: bool = True
    redirect_hosts: frozenset[str] | None = None
    """Hosts a redirect may lead to besides the original one (None: any)."""

    def check(self, what: str, link: str) -> None:
        """Raise `ChartError` unless `link` may be fetched."""
        scheme = scheme_of(link)
        if scheme not in ALL_SCHEMES:
            raise ChartError(f"{what} {redact(link)}: unsupported scheme {scheme!r}")
        if scheme == "file" and not self.local_files:
            raise ChartError(f"{what} {redact(link)}: local files are not allowed here")
        if scheme not in self.schemes:
            allowed = ", ".join(sorted(self.schemes)) or "none"
            raise ChartError(
                f"{what} {redact(link)}: scheme {scheme!r} is not allowed (allowed: {allowed})"
            )

    def check_redirect(self, what: str, origin: httpx.URL, target: httpx.URL) -> None:
        """Raise `ChartError` unless a redirect from `origin` to `target` may be followed."""
        shown = f"{what} {redact(str(origin))}: redirect to {redact(str(target))}"
        if target.scheme not in ("http", "https") or target.scheme not in self.schemes:
            raise ChartError(f"{shown}: scheme {target.scheme!r} is not allowed")
        if origin.scheme == "https" and target.scheme != "https":
            raise ChartError(f"{shown}: a downgrade from https")
        hosts = self.redirect_hosts
        if hosts is not None and target.host != origin.host and target.host not in hosts:
            raise ChartError(f"{shown}: another host, not in the allowed redirect hosts")

    @asynccontextmanager
    async def get_checked(
        self, client: httpx.AsyncClient, what: str, url: str
    ) -> AsyncIterator[httpx.Response]:
        """A streamed GET of `url`, following at most `MAX_REDIRECTS` redirects, each checked
        (`check_redirect`) before it is requested."""
        self.check(what, url)
        current = origin = httpx.URL(url)
        for _ in range(MAX_REDIRECTS + 1):
            request = client.build_request("GET", current)
            response = await client.send(request, stream=True, follow_redirects=False)
            if not response.has_redirect_location:
                try:
                    yield response
                finally:
                    await response.aclose()
                return
            await response.aclose()
            target = current.join(response.headers["location"])
            self.check_redirect(what, origin, target)
            current = target
        raise ChartError(f"{what} {redact(url)}: more than {MAX_REDIRECTS} redirects")
