"""The v1 routes, one module per resource; `errors(...)` documents error answers uniformly."""

from __future__ import annotations

from typing import Any

from reconciler.api.schemas import ErrorBody

_DESCRIPTIONS = {
    400: "Bad request (invalid input, unknown component, kubeconfig not accepted)",
    401: "Missing or invalid bearer token",
    403: "The caller's role does not allow this",
    404: "Not found",
    409: "Conflicts with the current state",
    413: "Request body too large",
    500: "Internal error (retry later)",
    503: "Not ready / tokens cannot be verified right now",
}


def errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI `responses` for the given error codes, all with the `{"error": ...}` body."""
    return {code: {"model": ErrorBody, "description": _DESCRIPTIONS[code]} for code in codes}


AUTHED = (401, 403, 500)
