"""Who is calling: roles, the authenticated principal and the errors of authentication.

Kept apart from the authenticators (static tokens, OIDC, client identities) so each of them
depends on these types only, never on one another.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Protocol

from reconciler.errors import ReconcilerError


class Role(enum.IntEnum):
    NONE = 0
    VIEWER = 1
    OPERATOR = 2
    ADMIN = 3

    @classmethod
    def parse(cls, name: str) -> Role:
        try:
            role = cls[name.strip().upper()]
        except KeyError:
            raise ValueError(f"unknown role {name!r}: expected viewer, operator or admin") from None
        if role is Role.NONE:
            raise ValueError("role 'none' cannot be granted")
        return role

    @property
    def label(self) -> str:
        return self.name.lower()


@dataclass(frozen=True)
class Principal:
    subject: str
    role: Role


class AuthError(ReconcilerError):
    """The caller is not authenticated (missing, malformed, expired or unknown credentials)."""


class AuthUnavailable(ReconcilerError):
    """Credentials cannot be verified right now (e.g. the JWKS cannot be fetched)."""


class Authenticator(Protocol):
    """Turns a bearer token (None when the request has none) into a principal."""

    async def authenticate(self, token: str | None) -> Principal: ...
