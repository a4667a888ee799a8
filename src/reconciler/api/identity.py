"""Callers identified by who they are instead of by a token: the subject CN or a subject
alternative name of a verified TLS client certificate (mutual TLS served by the mothership
itself), or the identity a trusted fronting proxy (a service-mesh sidecar) asserts in a header.

This is how the environment broker calls: it sends no `Authorization` header; the mesh checked
its certificate. A name gets a role only through `client_identities`. The identity header is
believed only when the request's direct peer is one of `trusted_proxies` (addresses or CIDRs),
because anyone else could set it. The TLS server (`api/server.py`) puts the verified peer
certificate into the request state under `PEER_CERT`.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from typing import Any

from starlette.types import Scope

from reconciler.api.principal import AuthError, Principal, Role
from reconciler.api.routing import scope_state
from reconciler.api.settings import ApiConfigError, ApiSettings
from reconciler.web.tls import PEER_CERT

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def certificate_names(cert: dict[str, Any]) -> list[str]:
    """The subject CN and the DNS/URI/e-mail/IP subject alternative names of a certificate."""
    names = [value for rdn in cert.get("subject", ()) for key, value in rdn if key == "commonName"]
    names += [
        value
        for kind, value in cert.get("subjectAltName", ())
        if kind in ("DNS", "URI", "email", "IP Address")
    ]
    return names


def _split(text: str, separator: str) -> list[str]:
    """Split on `separator` outside double quotes (XFCC quotes values holding `,` and `;`)."""
    parts, current, quoted = [], "", False
    for char in text:
        if char == '"':
            quoted = not quoted
        if char == separator and not quoted:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return parts


def header_names(value: str) -> list[str]:
    """Names a proxy asserts: from Envoy's `X-Forwarded-Client-Cert` (the element the nearest
    proxy added: its `URI`, `DNS` and the subject's CN; `By` is the proxy itself), or the whole
    value of a plain identity header (`X-Remote-User: keb`)."""
    value = value.strip()
    if "=" not in value:
        return [value] if value else []
    names: list[str] = []
    for pair in _split(_split(value, ",")[-1], ";"):
        key, _, raw = pair.partition("=")
        text = raw.strip().strip('"')
        key = key.strip().lower()
        if key in ("uri", "dns") and text:
            names.append(text)
        elif key == "subject":
            names += [
                part.partition("=")[2].strip()
                for part in _split(text, ",")
                if part.strip().upper().startswith("CN=")
            ]
    return names


class ClientIdentities:
    """Maps certificate or proxy-asserted names to roles (first mapped name wins)."""

    def __init__(
        self, roles: dict[str, Role], *, trusted_proxies: Iterable[Network] = (), header: str = ""
    ) -> None:
        self.roles = roles
        self.trusted_proxies = tuple(trusted_proxies)
        self.header = header.lower().encode("latin-1")

    @classmethod
    def from_settings(cls, settings: ApiSettings) -> ClientIdentities | None:
        """None when no client identity is configured. Refuses identities nobody could prove
        (no client CA and no trusted proxy) and a client CA without any identity."""
        if not settings.client_identities:
            if settings.client_ca_file is not None or settings.trusted_proxies:
                raise ApiConfigError(
                    "client_ca_file / trusted_proxies need client_identities (name -> role)"
                )
            return None
        if settings.client_ca_file is None and not settings.trusted_proxies:
            raise ApiConfigError(
                "client_identities need client_ca_file (mutual TLS) or trusted_proxies (an"
                " identity header from a fronting proxy)"
            )
        try:
            roles = {name: Role.parse(role) for name, role in settings.client_identities.items()}
            proxies = [ipaddress.ip_network(p, strict=False) for p in settings.trusted_proxies]
        except ValueError as exc:
            raise ApiConfigError(f"client identities: {exc}") from None
        return cls(roles, trusted_proxies=proxies, header=settings.proxy_identity_header)

    def _trusted_peer(self, scope: Scope) -> bool:
        client = scope.get("client")
        if not client or not self.trusted_proxies:
            return False
        try:
            address = ipaddress.ip_address(client[0])
        except ValueError:
            return False
        return any(address in network for network in self.trusted_proxies)

    def _asserted(self, scope: Scope) -> list[str]:
        if not self._trusted_peer(scope):
            return []  # a header from anyone else proves nothing
        return [
            name
            for key, value in scope.get("headers", [])
            if key == self.header
            for name in header_names(value.decode("latin-1"))
        ]

    def identify(self, scope: Scope) -> Principal | None:
        """The principal of the request's certificate or trusted header; None when it carries
        neither; AuthError when it carries one whose names are not mapped to a role."""
        cert = scope_state(scope).get(PEER_CERT)
        presented = certificate_names(cert) if isinstance(cert, dict) else []
        presented += self._asserted(scope)
        for name in presented:
            if name in self.roles:
                return Principal(name, self.roles[name])
        if presented:
            raise AuthError(f"client identity {presented[0]!r} is not mapped to a role")
        return None
