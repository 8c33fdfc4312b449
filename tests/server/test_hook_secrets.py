"""Secret header values on write: sealed with the hook id, kept when sent back as null while
the URL stays, dropped when it changes (issue 24, item 15)."""

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
    sealed = prepare_secret_headers(config, "hook-1", keyring).config
    headers = sealed["headers"]
    assert is_sealed_text(headers["Authorization"]) and is_sealed_text(headers["X-Token"])
    assert "s3cret" not in headers["Authorization"] and headers["X-Trace"] == "on"
    assert open_headers(sealed, "hook-1", keyring)["Authorization"] == "Bearer s3cret"
    assert config["headers"]["Authorization"] == "Bearer s3cret"  # the input is not mutated


def test_null_keeps_the_stored_value(keyring: Keyring) -> None:
    stored = prepare_secret_headers(
        {"url": "https://a.example/v1", "headers": {"Authorization": "Bearer old"}}, "h", keyring
    ).config
    # The same URL written differently (host case, the default port, a fragment).
    edited, dropped = prepare_secret_headers(
        {"url": "https://A.example:443/v1#top", "headers": {"authorization": None}}, "h",
        keyring, stored,
    )
    assert dropped == ()
    assert edited["headers"]["authorization"] == stored["headers"]["Authorization"]
    assert open_headers(edited, "h", keyring)["authorization"] == "Bearer old"
    fresh = {"url": "https://b.example", "headers": {"Authorization": "Bearer new"}}
    replaced = prepare_secret_headers(fresh, "h", keyring, stored).config
    assert open_headers(replaced, "h", keyring)["Authorization"] == "Bearer new"


def test_a_partial_config_keeps_the_sealed_headers(keyring: Keyring) -> None:
    stored = prepare_secret_headers(
        {"url": "https://a.example/v1", "headers": {"X-Key": "k", "X-Trace": "on"},
         "secret_headers": ["X-Key"]}, "h", keyring,
    ).config
    edited = prepare_secret_headers(
        {"url": "https://a.example/v1", "method": "PUT"}, "h", keyring, stored
    ).config
    assert edited["headers"] == stored["headers"]
    assert edited["secret_headers"] == ["X-Key"]
    assert open_headers(edited, "h", keyring)["X-Key"] == "k"


@pytest.mark.parametrize("headers", [None, {"Authorization": None}])
@pytest.mark.parametrize(
    "url",
    ["https://attacker.example/hook", "https://a.example/attacker/hook", "http://a.example/hook",
     "https://a.example:8443/hook", "https://a.example/hook?to=attacker"],
)
def test_a_new_url_drops_the_stored_secrets(
    keyring: Keyring, headers: dict[str, None] | None, url: str
) -> None:
    stored = prepare_secret_headers(
        {"url": "https://a.example/hook", "headers": {"Authorization": "Bearer old",
                                                      "X-Trace": "on"}}, "h", keyring,
    ).config
    config: dict[str, object] = {"url": url}
    if headers is not None:
        config["headers"] = headers
    moved, dropped = prepare_secret_headers(config, "h", keyring, stored)
    assert dropped == ("Authorization",)
    assert "Authorization" not in moved["headers"]
    assert open_headers(moved, "h", keyring) == ({"X-Trace": "on"} if headers is None else {})
    # Its ciphertext sent back verbatim does not follow the URL either.
    carried = {"url": url, "headers": {"Authorization": stored["headers"]["Authorization"]}}
    assert prepare_secret_headers(carried, "h", keyring, stored).config["headers"] == {}


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
    assert prepare_secret_headers(plain, "h", None).config == plain
    assert prepare_secret_headers({"command": "true"}, "h", None).config == {"command": "true"}
