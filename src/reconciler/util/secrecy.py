"""What may leave the process: one scrubber for secrets, one cap for text copied from upstream.

Secrets reach text we did not write: an apiserver echoes a rejected label value (a `secret: true`
configuration value) in its error, a TLS library quotes a certificate, a parser quotes a line of
a kubeconfig. Every such text passes through a `Scrubber` built for the work at hand (the
cluster's kubeconfig, its credential values, its secret configuration values) before it becomes a
failure reason, an API response, a callback or a log line. Work binds its scrubber with
`scrubbing(...)`; the logging set-up applies the bound one to every line written inside it, so a
log call deep in the core cannot leak either.

Values shorter than `MIN_SECRET_LENGTH` are not scrubbed: replacing every `true` or `80` in a
message would destroy it while protecting nothing a guess could not find. Bodies of upstream
answers (an apiserver, a component reconciler, any URL a kubeconfig names) are cut to
`EXCERPT_LIMIT` characters before they are copied into an error, so an error never reads back
an internal page (SSRF).
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

REDACTED = "<redacted>"
MIN_SECRET_LENGTH = 6
EXCERPT_LIMIT = 512


def excerpt(text: str, limit: int = EXCERPT_LIMIT) -> str:
    """At most `limit` characters of an upstream text, marked when cut."""
    return text if len(text) <= limit else text[:limit] + " [truncated]"


def secret_strings(value: object) -> list[str]:
    """The text forms of every leaf of a (nested) value: what an error could quote of it."""
    if isinstance(value, Mapping):
        return [s for item in value.values() for s in secret_strings(item)]
    if isinstance(value, list | tuple | set):
        return [s for item in value for s in secret_strings(item)]
    if value is None or isinstance(value, bool):
        return []
    return [str(value)]


def _spellings(secret: str) -> set[str]:
    """The secret as written and as JSON/Go quoting escapes it inside a message."""
    return {
        secret,
        json.dumps(secret)[1:-1],
        json.dumps(secret, ensure_ascii=False)[1:-1],
    }


class Scrubber:
    """Replaces every known secret (and its escaped spellings) in a text with `REDACTED`."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        found = {
            spelling
            for secret in secrets
            if len(secret.strip()) >= MIN_SECRET_LENGTH
            for spelling in _spellings(secret.strip())
        }
        self.secrets = tuple(sorted(found, key=len, reverse=True))
        self._pattern = (
            re.compile("|".join(re.escape(secret) for secret in self.secrets))
            if self.secrets
            else None
        )

    def __bool__(self) -> bool:
        return self._pattern is not None

    def __add__(self, other: Scrubber) -> Scrubber:
        return Scrubber((*self.secrets, *other.secrets))

    def __call__(self, text: str) -> str:
        if self._pattern is None:
            return text
        return self._pattern.sub(REDACTED, text)

    def data(self, value: Any) -> Any:
        """A copy of nested data (a log event, a JSON body) with every string scrubbed."""
        if isinstance(value, str):
            return self(value)
        if isinstance(value, Mapping):
            return {key: self.data(item) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return [self.data(item) for item in value]
        return value


NOTHING = Scrubber()
_active: contextvars.ContextVar[Scrubber] = contextvars.ContextVar("scrubber", default=NOTHING)


def active() -> Scrubber:
    """The scrubber bound by the innermost `scrubbing` block of this task (or one that does
    nothing)."""
    return _active.get()


@contextlib.contextmanager
def scrubbing(scrubber: Scrubber) -> Iterator[Scrubber]:
    """Bind `scrubber` (added to any outer one) for the work inside; asyncio tasks started
    inside inherit it."""
    combined = active() + scrubber if active() else scrubber
    token = _active.set(combined)
    try:
        yield combined
    finally:
        _active.reset(token)
