"""The secret-key check: a process whose key cannot open the store's sealed values is refused."""

from __future__ import annotations

import pytest

from hookgate.secrets.keyring import Keyring, generate_key_text
from hookgate.store.base import Store
from hookgate.store.sql.key_check import SecretKeyMismatch


async def test_the_first_key_is_recorded_and_another_is_refused(store: Store) -> None:
    await store.verify_secret_key(None)  # no key yet: nothing to check, nothing recorded
    first = Keyring.from_text(generate_key_text("k1"))
    await store.verify_secret_key(first)
    await store.verify_secret_key(first)  # the same key, again: fine
    with pytest.raises(SecretKeyMismatch, match="every replica on a store needs the same"):
        await store.verify_secret_key(Keyring.from_text(generate_key_text("k1")))
    with pytest.raises(SecretKeyMismatch, match="this process has none"):
        await store.verify_secret_key(None)


async def test_a_rotated_key_moves_the_check_to_the_new_key(store: Store) -> None:
    old_text, new_text = generate_key_text("k1"), generate_key_text("k2")
    await store.verify_secret_key(Keyring.from_text(old_text))
    # The new key first, the old one still listed: accepted, and the check is resealed.
    await store.verify_secret_key(Keyring.from_text(f"{new_text},{old_text}"))
    await store.verify_secret_key(Keyring.from_text(new_text))  # the old key dropped
    with pytest.raises(SecretKeyMismatch):
        await store.verify_secret_key(Keyring.from_text(old_text))
