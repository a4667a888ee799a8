"""Per-task callback secrets: issued when an operation is handed to a component reconciler,
checked on each of its callbacks.

The fleet-wide callback token only says "some component reconciler"; any holder of it could
otherwise report `success` for any operation. A secret is 32 random bytes, travels once in the
task body and comes back in the `X-Callback-Secret` header; the database keeps only its SHA-256
(a random 256-bit value needs no slow hash), so a database dump cannot forge callbacks. Every
hand-over issues a new secret, which also shuts out the callbacks of an earlier, orphaned run.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

from sqlalchemy.ext.asyncio import AsyncEngine

from reconciler.store.tables import operations


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


class CallbackSecrets:
    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine

    async def issue(self, key: tuple[str, str]) -> str:
        """A new secret for the operation `key`, replacing the previous one; returns it."""
        secret = secrets.token_urlsafe(32)
        async with self.engine.begin() as conn:
            await conn.execute(
                operations.update()
                .where(operations.c.scheduling_id == key[0])
                .where(operations.c.correlation_id == key[1])
                .values(callback_secret_hash=_digest(secret))
            )
        return secret

    async def verify(self, key: tuple[str, str], secret: str) -> bool:
        """Whether `secret` is the current one of `key` (False when none was ever issued)."""
        async with self.engine.connect() as conn:
            stored = await conn.scalar(
                operations.select()
                .with_only_columns(operations.c.callback_secret_hash)
                .where(operations.c.scheduling_id == key[0])
                .where(operations.c.correlation_id == key[1])
            )
        if not stored or not secret:
            return False
        return hmac.compare_digest(_digest(secret), stored)
