"""Secret header values on write: sealed with the hook id, kept when sent back as null."""

from __future__ import annotations

import pytest

from hookgate.secrets.headers import open_headers
from hookgate.secrets.keyring import Keyring, generate_key_text, is_sealed_text
from hookgate.server.errors import ApiError
from hookgate.server.hook_secrets import prepare_secret_headers


@pytest.fixture()
def keyring() -> Keyring:
    return Keyring.from_text(generate_key_text(), "test key")


def test_secret_values_are_sealed_and_plain_ones_left(keyring: Keyring) -> None:
    config = {
        "url": "https://example.com/hook",
        "headers": {"Authorization": "Bearer s3cret", "X-Token": "t0k", "X-Trace": "on"},
        "secret_headers": ["X-Token"],
    }
    sealed = prepare_secret_headers(config, "hook-1", keyring)
    headers = sealed["headers"]
    assert is_sealed_text(headers["Authorization"]) and is_sealed_text(headers["X-Token"])
    assert "s3cret" not in headers["Authorization"] and headers["X-Trace"] == "on"
    assert open_headers(sealed, "hook-1", keyring)["Authorization"] == "Bearer s3cret"
    assert config["headers"]["Authorization"] == "Bearer s3cret"  # the input is not mutated


def test_null_keeps_the_stored_value(keyring: Keyring) -> None:
    stored = prepare_secret_headers(
        {"url": "https://a.example/v1", "headers": {"Authorization": "Bearer old"}}, "h", keyring
    )
    edited = prepare_secret_headers(
        {"url": "https://A.example:443/v2", "headers": {"authorization": None}}, "h", keyring,
        stored,
    )
    assert edited["headers"]["authorization"] == stored["headers"]["Authorization"]
    assert open_headers(edited, "h", keyring)["authorization"] == "Bearer old"
    fresh = {"url": "https://b.example", "headers": {"Authorization": "Bearer new"}}
    replaced = prepare_secret_headers(fresh, "h", keyring, stored)
    assert open_headers(replaced, "h", keyring)["Authorization"] == "Bearer new"


def test_a_partial_config_keeps_the_sealed_headers(keyring: Keyring) -> None:
    stored = prepare_secret_headers(
        {"url": "https://a.example/v1", "headers": {"X-Key": "k", "X-Trace": "on"},
         "secret_headers": ["X-Key"]}, "h", keyring,
    )
    edited = prepare_secret_headers({"url": "https://a.example/v2"}, "h", keyring, stored)
    assert edited["headers"] == stored["headers"]
    assert edited["secret_headers"] == ["X-Key"]
    assert open_headers(edited, "h", keyring)["X-Key"] == "k"


@pytest.mark.parametrize("headers", [None, {"Authorization": None}])
def test_a_new_host_does_not_take_the_stored_secrets(
    keyring: Keyring, headers: dict[str, None] | None
) -> None:
    stored = prepare_secret_headers(
        {"url": "https://a.example/hook", "headers": {"Authorization": "Bearer old"}}, "h",
        keyring,
    )
    config: dict[str, object] = {"url": "https://attacker.example/hook"}
    if headers is not None:
        config["headers"] = headers
    with pytest.raises(ApiError) as caught:
        prepare_secret_headers(config, "h", keyring, stored)
    message = caught.value.message
    assert "https://attacker.example:443" in message and "give them again" in message
    assert "Authorization" in message and "old" not in message


def test_null_without_a_stored_value_names_the_header(keyring: Keyring) -> None:
    with pytest.raises(ApiError) as caught:
        prepare_secret_headers({"url": "u", "headers": {"Authorization": None}}, "h", keyring)
    assert caught.value.details == {
        "problems": [
            {
                "field": "config.headers.Authorization",
                "message": "no stored value to keep; give the value",
            }
        ]
    }


def test_without_a_key_secret_values_are_refused_not_stored_in_clear() -> None:
    config = {"url": "u", "headers": {"Authorization": "Bearer s3cret", "X-Trace": "on"}}
    with pytest.raises(ApiError) as caught:
        prepare_secret_headers(config, "h", None)
    assert "HOOKGATE_SECRET_KEY" in caught.value.message
    assert "s3cret" not in caught.value.message
    # Without secret values there is nothing to seal, and no key is needed.
    plain = {"url": "u", "headers": {"X-Trace": "on"}}
    assert prepare_secret_headers(plain, "h", None) == plain
    assert prepare_secret_headers({"command": "true"}, "h", None) == {"command": "true"}
