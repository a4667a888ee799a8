"""The one shared-bearer-token check: component reconcilers present the fleet token on
`POST /v1/run` and on callbacks to the mothership.

Both services use this one check. The token is compared in constant time
(`hmac.compare_digest`), so a timing difference cannot reveal how much of a guess was right. A
missing or non-bearer `Authorization` header is 401 (with a `WWW-Authenticate: Bearer`
challenge), a wrong token 403.
"""

from __future__ import annotations

import hmac

from starlette.types import Scope

from reconciler.errors import ReconcilerError

CHALLENGE = {"WWW-Authenticate": "Bearer"}


def bearer_token(scope: Scope) -> str | None:
    """The token of an `Authorization: Bearer <token>` header (None when absent/other)."""
    for name, value in scope.get("headers", []):
        if name == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            token = token.strip()
            return token if scheme.lower() == "bearer" and token else None
    return None


class BearerRefused(ReconcilerError):
    """The request does not carry the expected token: `status` is 401 or 403."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status

    @property
    def headers(self) -> dict[str, str]:
        return dict(CHALLENGE) if self.status == 401 else {}


class SharedToken:
    """Exactly one expected bearer token."""

    def __init__(self, expected: str, *, refused: str = "invalid token") -> None:
        if not expected:
            raise ValueError("a shared token must not be empty")
        self._expected = expected.encode()
        self.refused = refused

    def check(self, scope: Scope) -> None:
        """Return when the request carries the token; raise BearerRefused otherwise."""
        given = bearer_token(scope)
        if given is None:
            raise BearerRefused(401, "missing bearer token")
        if not hmac.compare_digest(given.encode(), self._expected):
            raise BearerRefused(403, self.refused)
