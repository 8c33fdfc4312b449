"""Secret header values on the way into the store: sealed on every write, kept when omitted.

Reads already hide sealed values (``methods.hook_view`` shows them as ``null``), so a client
that edits a hook sends ``null`` for a secret header it did not change. Here that ``null``
becomes the stored ciphertext again, and every plain secret value (``Authorization``,
``Proxy-Authorization`` and the headers listed in ``secret_headers``) is sealed with the
gateway's keyring, bound to the hook id, before the definition is validated and stored.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hookgate.header_secrets import seal_headers, secret_header_names
from hookgate.secrets import Keyring, is_sealed_text
from hookgate.server.errors import ApiError

__all__ = ["prepare_secret_headers"]

NO_KEY_MESSAGE = (
    "secret header values need an encryption key: start the gateway with "
    "HOOKGATE_SECRET_KEY or HOOKGATE_SECRET_KEY_FILE (or a --data-dir, which keeps a key file)"
)


def _problem(field: str, message: str) -> ApiError:
    return ApiError(
        "INVALID_REQUEST",
        f"{field}: {message}",
        details={"problems": [{"field": field, "message": message}]},
    )


def prepare_secret_headers(
    config: Any,
    hook_id: str,
    keyring: Keyring | None,
    stored: Mapping[str, Any] | None = None,
) -> Any:
    """``config`` with ``null`` secret headers restored from ``stored`` and secrets sealed.

    Anything that is not a config with a headers object is returned unchanged, for the
    definition's validation to report.
    """
    if not isinstance(config, Mapping) or not isinstance(config.get("headers"), Mapping):
        return config
    secret = secret_header_names(config)
    stored_headers = stored.get("headers") if stored else None
    previous = (
        {str(k).lower(): v for k, v in stored_headers.items()}
        if isinstance(stored_headers, Mapping)
        else {}
    )
    headers: dict[str, Any] = {}
    for name, value in config["headers"].items():
        if value is None and str(name).lower() in secret:
            kept = previous.get(str(name).lower())
            if not isinstance(kept, str):
                raise _problem(f"config.headers.{name}", "no stored value to keep; give the value")
            value = kept
        headers[name] = value
    prepared = {**config, "headers": headers}
    unsealed = [
        name
        for name, value in headers.items()
        if str(name).lower() in secret and isinstance(value, str) and not is_sealed_text(value)
    ]
    if not unsealed:
        return prepared
    if keyring is None:
        raise _problem("config.headers", NO_KEY_MESSAGE)
    return seal_headers(prepared, hook_id, keyring)
