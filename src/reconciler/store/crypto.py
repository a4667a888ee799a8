"""Encryption at rest for kubeconfigs and secret configuration values (AES-256-GCM).

The key is 32 random bytes in a file (created with mode 0600 on first start for the embedded
default). Every value gets a fresh 96-bit nonce; the stored blob is `nonce || ciphertext+tag`.
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
                raise CryptoError(f"encryption key file {path} does not exist")
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

    def encrypt(self, plaintext: bytes) -> bytes:
        nonce = os.urandom(NONCE_BYTES)
        return nonce + self._aead.encrypt(nonce, plaintext, None)

    def decrypt(self, blob: bytes) -> bytes:
        try:
            return self._aead.decrypt(blob[:NONCE_BYTES], blob[NONCE_BYTES:], None)
        except InvalidTag:
            raise CryptoError(
                "stored secret cannot be decrypted: wrong key or tampered data"
            ) from None

    def encrypt_text(self, text: str) -> str:
        return base64.b64encode(self.encrypt(text.encode())).decode()

    def decrypt_text(self, token: str) -> str:
        return self.decrypt(base64.b64decode(token)).decode()

    def fingerprint(self, text: str) -> str:
        return hmac.new(self._mac_key, text.encode(), hashlib.sha256).hexdigest()
