"""Encryption at rest for kubeconfigs and secret configuration values (AES-256-GCM).

The key is 32 random bytes in a file (created with mode 0600 on first start for the embedded
default). Every value gets a fresh 96-bit nonce and is bound to where it is stored (associated
data naming the column and the runtime ID), so a ciphertext copied into another cluster's row or
column no longer decrypts. The stored blob is `RCv1 || nonce || ciphertext+tag`; blobs written
before binding existed (`nonce || ciphertext+tag`, no associated data) are still read.
`fingerprint` gives a keyed digest (HMAC-SHA256) so the store can tell whether a secret changed
without keeping anything that could be checked against a guessed plaintext.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from reconciler.errors import ReconcilerError

KEY_BYTES = 32
NONCE_BYTES = 12
BOUND = b"RCv1"
"""Prefix of blobs encrypted with associated data."""


class CryptoError(ReconcilerError):
    """The key is missing or wrong, or stored data was tampered with."""


class Cipher:
    def __init__(self, key: bytes) -> None:
        if len(key) != KEY_BYTES:
            raise CryptoError(f"encryption key must be {KEY_BYTES} bytes, got {len(key)}")
        self._aead = AESGCM(key)
        self._mac_key = hashlib.sha256(b"reconciler-fingerprint" + key).digest()

    @classmethod
    def from_file(cls, path: Path, *, create: bool = False) -> Cipher:
        """Load the key; with `create`, generate it first when the file does not exist."""
        if not path.exists():
            if not create:
                raise CryptoError(
                    f"encryption key file {path} does not exist: set encryption_key_file "
                    "(RECONCILER_ENCRYPTION_KEY_FILE) to the key every instance shares, or make "
                    f"one with: head -c32 /dev/urandom | base64 > {path}"
                )
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write(base64.b64encode(os.urandom(KEY_BYTES)))
        raw = path.read_bytes().strip()
        try:
            key = base64.b64decode(raw, validate=True)
        except ValueError:
            key = raw
        return cls(key)

    def encrypt(self, plaintext: bytes, context: str) -> bytes:
        """Encrypt `plaintext` for the place `context` names (`clusters.kubeconfig:rt-1`)."""
        nonce = os.urandom(NONCE_BYTES)
        return BOUND + nonce + self._aead.encrypt(nonce, plaintext, context.encode())

    def decrypt(self, blob: bytes, context: str) -> bytes:
        """Decrypt a blob written for `context`; a blob of another place fails like tampering."""
        try:
            if blob.startswith(BOUND):
                body = blob[len(BOUND) :]
                try:
                    return self._aead.decrypt(
                        body[:NONCE_BYTES], body[NONCE_BYTES:], context.encode()
                    )
                except InvalidTag:
                    pass  # a legacy blob whose random nonce happens to start with the prefix
            return self._aead.decrypt(blob[:NONCE_BYTES], blob[NONCE_BYTES:], None)
        except InvalidTag:
            raise CryptoError(
                f"stored secret ({context.partition(':')[0]}) cannot be decrypted: wrong key,"
                " tampered data, or data of another row"
            ) from None

    def encrypt_text(self, text: str, context: str) -> str:
        return base64.b64encode(self.encrypt(text.encode(), context)).decode()

    def decrypt_text(self, token: str, context: str) -> str:
        return self.decrypt(base64.b64decode(token), context).decode()

    def fingerprint(self, text: str) -> str:
        return hmac.new(self._mac_key, text.encode(), hashlib.sha256).hexdigest()
