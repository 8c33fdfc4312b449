"""Sealing, opening, rotating and masking secret header values of http hooks."""

from __future__ import annotations

import base64

import pytest

from hookgate.definition import HookDefinition
from hookgate.secrets.headers import (
    MASK,
    mask_config,
    open_headers,
    reseal_headers,
    seal_headers,
    secret_header_names,
    unreadable_headers,
)
from hookgate.secrets.keyring import TEXT_PREFIX, Keyring, SecretError, generate_key_text

CONFIG = {
    "url": "https://hooks.example.com/x",
    "headers": {"Authorization": "Bearer tok-123456", "X-Api-Key": "key-abcdef", "X-Team": "a"},
    "secret_headers": ["x-api-key"],
}


def test_secret_names_are_authorization_and_the_listed_ones() -> None:
    assert secret_header_names(CONFIG) == {"authorization", "proxy-authorization", "x-api-key"}


def test_round_trip_seals_only_secret_headers() -> None:
    keyring = Keyring.from_text(generate_key_text())
    sealed = seal_headers(CONFIG, "hook-1", keyring)
    headers = sealed["headers"]
    assert headers["Authorization"].startswith(TEXT_PREFIX)
    assert headers["X-Api-Key"].startswith(TEXT_PREFIX)
    assert headers["X-Team"] == "a"
    assert "tok-123456" not in repr(sealed)
    assert seal_headers(sealed, "hook-1", keyring) == sealed  # sealing twice is a no-op
    assert open_headers(sealed, "hook-1", keyring) == CONFIG["headers"]
    assert CONFIG["headers"]["Authorization"] == "Bearer tok-123456"  # input untouched


def test_each_seal_uses_a_fresh_nonce() -> None:
    keyring = Keyring.from_text(generate_key_text())
    first = seal_headers(CONFIG, "hook-1", keyring)["headers"]["Authorization"]
    second = seal_headers(CONFIG, "hook-1", keyring)["headers"]["Authorization"]
    assert first != second


def test_tampering_is_detected() -> None:
    keyring = Keyring.from_text(generate_key_text())
    sealed = seal_headers(CONFIG, "hook-1", keyring)
    blob = bytearray(base64.b64decode(sealed["headers"]["Authorization"][len(TEXT_PREFIX) :]))
    blob[-1] ^= 0x01
    tampered = {
        **sealed,
        "headers": {"Authorization": TEXT_PREFIX + base64.b64encode(blob).decode()},
    }
    with pytest.raises(SecretError, match="'Authorization'.*does not decrypt"):
        open_headers(tampered, "hook-1", keyring)


@pytest.mark.parametrize(("hook_id", "header"), [("hook-2", "Authorization"), ("hook-1", "X-Team")])
def test_associated_data_binds_hook_and_header(hook_id: str, header: str) -> None:
    keyring = Keyring.from_text(generate_key_text())
    value = seal_headers(CONFIG, "hook-1", keyring)["headers"]["Authorization"]
    with pytest.raises(SecretError, match="does not decrypt"):
        open_headers({"headers": {header: value}}, hook_id, keyring)


def test_wrong_key_is_a_clear_error() -> None:
    sealed = seal_headers(CONFIG, "hook-1", Keyring.from_text(generate_key_text("old")))
    with pytest.raises(SecretError, match="key 'old'"):
        open_headers(sealed, "hook-1", Keyring.from_text(generate_key_text("new")))


def test_rotation_reseals_under_the_active_key() -> None:
    old_text = generate_key_text("k1")
    new_text = generate_key_text("k2")
    sealed = seal_headers(CONFIG, "hook-1", Keyring.from_text(old_text))
    both = Keyring.from_text(f"{new_text},{old_text}")  # new key active, old one can still open
    rotated = reseal_headers(sealed, "hook-1", both)
    only_new = Keyring.from_text(new_text)
    assert open_headers(rotated, "hook-1", only_new) == CONFIG["headers"]
    with pytest.raises(SecretError):
        open_headers(rotated, "hook-1", Keyring.from_text(old_text))


def test_masking_hides_sealed_and_plaintext_secrets() -> None:
    keyring = Keyring.from_text(generate_key_text())
    for config in (CONFIG, seal_headers(CONFIG, "hook-1", keyring)):
        masked = mask_config(config)
        assert masked["headers"] == {"Authorization": MASK, "X-Api-Key": MASK, "X-Team": "a"}
        assert masked["url"] == CONFIG["url"]
    assert mask_config({"command": "ls"}) == {"command": "ls"}


def test_start_up_check_names_every_unreadable_header() -> None:
    old = Keyring.from_text(generate_key_text("old"))
    good = HookDefinition(
        "pre_tool_use", "http", id="h1", name="ok", config=seal_headers(CONFIG, "h1", old)
    )
    moved = HookDefinition(
        "pre_tool_use", "http", id="h2", name="copied", config=seal_headers(CONFIG, "h1", old)
    )
    assert unreadable_headers([good], old) == []
    problems = unreadable_headers([good, moved], old)
    assert len(problems) == 2 and all("'copied'" in p for p in problems)
    assert "does not decrypt" in problems[0]
    wrong = unreadable_headers([good], Keyring.from_text(generate_key_text("new")))
    assert any("key 'old'" in p for p in wrong)
    assert "no key set" in unreadable_headers([good], None)[0]
    assert not any("tok-123456" in p for p in problems + wrong)
