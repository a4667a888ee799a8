"""What may leave the process: one scrubber for secrets, one cap for text copied from upstream.

Secrets reach text we did not write: an apiserver echoes a rejected label value (a `secret: true`
configuration value) in its error, a TLS library quotes a certificate, a parser quotes a line of
a kubeconfig. Every such text passes through a `Scrubber` built for the work at hand (the
cluster's kubeconfig, its credential values, its secret configuration values) before it becomes a
failure reason, an API response, a callback or a log line. Work binds its scrubber with
`scrubbing(...)`; the logging set-up applies the bound one to every line written inside it, so a
log call deep in the core cannot leak either.

Values shorter than `MIN_SECRET_LENGTH` are not scrubbed: replacing every `true` or `80` in a
message would destroy it while protecting nothing a guess could not find. Texts of upstream
answers (an apiserver's message, a component reconciler's error) are scrubbed and then cut to
`EXCERPT_LIMIT` characters before they are copied into an error (`excerpt`): in that order, as
a secret longer than the cut would otherwise go out in part. What is left of a secret that
something else cut (its beginning or its end) is redacted too. An answer that is not a
Kubernetes `Status` never has its body copied at all (`kube/client.py`: SSRF read-back).
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
FRAGMENT_LENGTH = 12
"""A run of at least this many characters that begins or ends a secret is redacted wherever it
stands: what an upstream cut (an apiserver, a proxy, a buffer) left of a long secret."""
EXCERPT_LIMIT = 512


def excerpt(text: str, limit: int = EXCERPT_LIMIT, scrub: Scrubber | None = None) -> str:
    """At most `limit` characters of an upstream text, marked when cut. Scrubbed (with `scrub`,
    else the scrubber the work has bound) *before* it is cut: cut first, a long secret would lose
    its end and no longer match, and its first `limit` characters would go out."""
    scrubber = scrub if scrub is not None else active()
    text = scrubber(text)
    return text if len(text) <= limit else scrubber(text[:limit]) + " [truncated]"


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


def _kept(secrets: Iterable[str]) -> tuple[str, ...]:
    return tuple(sorted({s.strip() for s in secrets if len(s.strip()) >= MIN_SECRET_LENGTH}))


def _cut_ends(text: str, secret: str) -> list[tuple[int, int]]:
    """A beginning of `secret` that ends `text`, an end of it that begins `text` (at least
    `MIN_SECRET_LENGTH` long): where a cut left part of it."""
    found: list[tuple[int, int]] = []
    head, tail = secret[:MIN_SECRET_LENGTH], secret[-MIN_SECRET_LENGTH:]
    at = text.find(head, max(0, len(text) - len(secret) + 1))
    while at != -1:
        if secret.startswith(text[at:]):
            found.append((at, len(text)))
            break
        at = text.find(head, at + 1)
    end = text.find(tail, 0, min(len(text), len(secret) - 1))
    while end != -1:
        if secret.endswith(text[: end + MIN_SECRET_LENGTH]):
            found.append((0, end + MIN_SECRET_LENGTH))  # the longest such end is found last
        end = text.find(tail, end + 1, min(len(text), len(secret) - 1))
    return found


class Scrubber:
    """Replaces every known secret (and its escaped spellings) in a text with `REDACTED`, and
    what is left of a secret that something upstream cut: a run of `FRAGMENT_LENGTH` or more
    characters that begins or ends a secret anywhere, and at the very start or end of the text
    (where a cut falls) one of `MIN_SECRET_LENGTH` or more.

    `whole` secrets are replaced only when whole: a kubeconfig's text begins like every other
    kubeconfig (`apiVersion: v1`), and its credentials are listed as secrets of their own."""

    def __init__(self, secrets: Iterable[str] = (), whole: Iterable[str] = ()) -> None:
        self._values, self._whole = _kept(secrets), _kept(whole)
        found = {
            spelling for secret in (*self._values, *self._whole) for spelling in _spellings(secret)
        }
        self.secrets = tuple(sorted(found, key=len, reverse=True))
        self._pattern = (
            re.compile("|".join(re.escape(secret) for secret in self.secrets))
            if self.secrets
            else None
        )
        self._fragments = tuple(
            sorted({spelling for secret in self._values for spelling in _spellings(secret)})
        )
        heads = {f[:FRAGMENT_LENGTH] for f in self._fragments if len(f) > FRAGMENT_LENGTH}
        tails = {f[-FRAGMENT_LENGTH:] for f in self._fragments if len(f) > FRAGMENT_LENGTH}
        self._heads = re.compile("|".join(map(re.escape, sorted(heads)))) if heads else None
        self._tails = re.compile("|".join(map(re.escape, sorted(tails)))) if tails else None

    def __bool__(self) -> bool:
        return self._pattern is not None

    def __add__(self, other: Scrubber) -> Scrubber:
        return Scrubber((*self._values, *other._values), (*self._whole, *other._whole))

    def __call__(self, text: str) -> str:
        if self._pattern is None:
            return text
        text = self._pattern.sub(REDACTED, text)
        spans = self._fragment_spans(text)
        if not spans:
            return text
        out, last = [], 0
        for start, end in spans:
            out += [text[last:start], REDACTED]
            last = end
        return "".join([*out, text[last:]])

    def _fragment_spans(self, text: str) -> list[tuple[int, int]]:
        """Where pieces of a secret stand in `text`, merged, in order."""
        spans: list[tuple[int, int]] = []
        if self._heads is not None:
            for match in self._heads.finditer(text):
                start = match.start()
                spans.append((start, start + self._longest(text, start, forward=True)))
        if self._tails is not None:
            for match in self._tails.finditer(text):
                end = match.end()
                spans.append((end - self._longest(text, end, forward=False), end))
        for secret in self._fragments:  # a cut at either end of the text
            spans += _cut_ends(text, secret)
        merged: list[tuple[int, int]] = []
        for start, end in sorted(spans):
            if merged and start <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
            else:
                merged.append((start, end))
        return merged

    def _longest(self, text: str, at: int, *, forward: bool) -> int:
        """The longest run of `text` from `at` onwards that begins a secret (backwards from
        `at`: that ends one)."""
        best = 0
        for secret in self._fragments:
            limit = min(len(secret), at if not forward else len(text) - at)
            n = 0
            if forward:
                while n < limit and text[at + n] == secret[n]:
                    n += 1
            else:
                while n < limit and text[at - 1 - n] == secret[-1 - n]:
                    n += 1
            if n >= FRAGMENT_LENGTH:
                best = max(best, n)
        return best

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
