"""Secrets at rest: AES-256-GCM with a random nonce, a key id and bound associated data.

Keys come from ``HOOKGATE_SECRET_KEY`` (``base64`` of 32 bytes, or ``kid:base64`` entries
separated by commas; the first is the active key and the others can still decrypt, which is
how rotation works) or from a key file (``HOOKGATE_SECRET_KEY_FILE``, or ``secret.key`` in the
data directory, created on first start when ``create=True``).

A sealed value is ``hg1`` + key-id length + key id + 12-byte nonce + ciphertext-and-tag. The
associated data binds it to its owner (a hook id and a field name), so a ciphertext copied to
another hook or field does not decrypt.
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from hookgate.errors import HookgateError

__all__ = ["TEXT_PREFIX", "Keyring", "SecretError", "generate_key_text", "is_sealed_text"]

_MAGIC: Final = b"hg1"
TEXT_PREFIX: Final = "enc:v1:"
KEY_FILE_NAME: Final = "secret.key"


class SecretError(HookgateError):
    """A key is missing or malformed, or a sealed value does not decrypt (wrong key, tampered)."""


def generate_key_text(kid: str = "k1") -> str:
    return f"{kid}:{base64.b64encode(AESGCM.generate_key(bit_length=256)).decode()}"


def _parse_keys(text: str, origin: str) -> list[tuple[str, bytes]]:
    keys: list[tuple[str, bytes]] = []
    for index, part in enumerate(p.strip() for p in text.split(",") if p.strip()):
        kid, sep, encoded = part.partition(":")
        if not sep:
            kid, encoded = f"k{index + 1}", part
        try:
            key = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError):
            raise SecretError(f"{origin}: key {kid!r} is not valid base64") from None
        if len(key) != 32:
            raise SecretError(f"{origin}: key {kid!r} must be 32 bytes (AES-256), not {len(key)}")
        if not kid or len(kid) > 32:
            raise SecretError(f"{origin}: key id must be 1 to 32 characters")
        keys.append((kid, key))
    if not keys:
        raise SecretError(f"{origin}: no key found")
    return keys


class Keyring:
    def __init__(self, keys: list[tuple[str, bytes]]) -> None:
        if not keys:
            raise SecretError("a keyring needs at least one key")
        self.active_kid = keys[0][0]
        self._ciphers = {kid: AESGCM(key) for kid, key in keys}

    @classmethod
    def from_text(cls, text: str, origin: str = "key") -> Keyring:
        return cls(_parse_keys(text, origin))

    @classmethod
    def from_env(
        cls,
        environ: Mapping[str, str] | None = None,
        *,
        data_dir: str | Path | None = None,
        create: bool = False,
    ) -> Keyring:
        """The keyring the environment or the data directory names; raise a clear error."""
        env = os.environ if environ is None else environ
        if env.get("HOOKGATE_SECRET_KEY"):
            return cls.from_text(env["HOOKGATE_SECRET_KEY"], "HOOKGATE_SECRET_KEY")
        path: Path | None = None
        if env.get("HOOKGATE_SECRET_KEY_FILE"):
            path = Path(env["HOOKGATE_SECRET_KEY_FILE"])
        elif data_dir is not None:
            path = Path(data_dir) / KEY_FILE_NAME
        if path is None:
            raise SecretError(
                "no encryption key: set HOOKGATE_SECRET_KEY (base64 of 32 bytes) or "
                "HOOKGATE_SECRET_KEY_FILE, or give a data directory"
            )
        if not path.exists():
            if not create:
                raise SecretError(f"encryption key file {path} does not exist")
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as handle:
                handle.write(generate_key_text() + "\n")
        return cls.from_text(path.read_text().strip(), str(path))

    def seal(self, plaintext: bytes, aad: bytes) -> bytes:
        kid = self.active_kid.encode()
        nonce = os.urandom(12)
        sealed = self._ciphers[self.active_kid].encrypt(nonce, plaintext, aad)
        return _MAGIC + bytes([len(kid)]) + kid + nonce + sealed

    def open(self, blob: bytes, aad: bytes) -> bytes:
        if len(blob) < 4 or not blob.startswith(_MAGIC):
            raise SecretError("not a sealed value")
        kid_len = blob[3]
        kid = blob[4 : 4 + kid_len].decode(errors="replace")
        body = blob[4 + kid_len :]
        cipher = self._ciphers.get(kid)
        if cipher is None:
            raise SecretError(f"sealed with key {kid!r}, which this keyring does not hold")
        try:
            return cipher.decrypt(body[:12], body[12:], aad)
        except InvalidTag:
            raise SecretError("sealed value does not decrypt (wrong key or tampered)") from None

    def seal_text(self, plaintext: str, aad: str) -> str:
        """Seal to a printable string (for JSON columns and config objects)."""
        return TEXT_PREFIX + base64.b64encode(self.seal(plaintext.encode(), aad.encode())).decode()

    def open_text(self, sealed: str, aad: str) -> str:
        if not is_sealed_text(sealed):
            raise SecretError("not a sealed text value")
        blob = base64.b64decode(sealed[len(TEXT_PREFIX) :])
        return self.open(blob, aad.encode()).decode()

    def sealed_with(self, sealed: str) -> str:
        """The key id a sealed text value names (not checked: see :meth:`open_text`)."""
        if not is_sealed_text(sealed):
            raise SecretError("not a sealed text value")
        blob = base64.b64decode(sealed[len(TEXT_PREFIX) :])
        return blob[4 : 4 + blob[3]].decode(errors="replace") if len(blob) > 4 else ""

    def reseal(self, blob: bytes, aad: bytes) -> bytes:
        """Re-encrypt under the active key (key rotation)."""
        return self.seal(self.open(blob, aad), aad)

    def reseal_text(self, sealed: str, aad: str) -> str:
        return self.seal_text(self.open_text(sealed, aad), aad)


def is_sealed_text(value: object) -> bool:
    return isinstance(value, str) and value.startswith(TEXT_PREFIX)
