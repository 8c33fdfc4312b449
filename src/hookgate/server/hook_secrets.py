"""Sealed values on the way into the store: sealed on every write, kept when omitted, and
never carried to a new destination.

Reads hide sealed values (``methods.hook_view`` shows them as ``null``), so a client that
edits a hook sends ``null`` for a secret header it did not change, or leaves ``headers`` out
of a partial ``config`` update. Here either becomes the stored ciphertext again, and every
plain secret value (``Authorization``, ``Proxy-Authorization`` and the headers listed in
``secret_headers``) is sealed with the gateway's keyring, bound to the hook id, before the
definition is validated and stored.

A prompt or agent hook's own provider key (``config.api_key``) is handled the same way:
sealed on write, bound to the hook id, ``null`` or left out keeps it, ``""`` removes it.

A stored secret belongs to the destination it was given for, whoever changes the hook
(tenant admin or master). An http hook's destination is its whole ``url`` but the fragment:
scheme, host, port, path and query. The path counts because one host often serves many
owners (a shared ingress, a webhook relay, a functions host: ``/tenant-a/hook`` and
``/attacker/hook`` are different people). An update that changes it drops every secret
header it does not give again (sent as ``null`` or left out): the update is applied, the
answer names the dropped headers, and nothing sealed reaches the new URL. A model hook's own
``api_key`` does not follow a change of host (``base_url``) or provider either; that update
is refused with a message asking for the key again.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, NamedTuple
from urllib.parse import urlsplit

from hookgate.llm.aliases import resolve_model
from hookgate.llm.providers import API_KEY_FIELD, api_key_aad
from hookgate.log import log_event
from hookgate.secrets.headers import seal_headers, secret_header_names
from hookgate.secrets.keyring import Keyring, is_sealed_text
from hookgate.server.errors import ApiError

__all__ = [
    "PreparedHeaders",
    "destination",
    "header_destination",
    "prepare_api_key",
    "prepare_secret_headers",
]

NO_KEY_MESSAGE = (
    "secret header values need an encryption key: start the gateway with "
    "HOOKGATE_SECRET_KEY or HOOKGATE_SECRET_KEY_FILE (or a --data-dir, which keeps a key file)"
)
_DEFAULT_PORTS = {"http": 80, "https": 443}


def _problem(field: str, message: str) -> ApiError:
    return ApiError(
        "INVALID_REQUEST",
        f"{field}: {message}",
        details={"problems": [{"field": field, "message": message}]},
    )


def destination(config: Mapping[str, Any]) -> str | None:
    """Where a config's secrets are sent: ``scheme://host:port`` of its ``url`` (http
    hooks); ``None`` when it names no URL."""
    url = config.get("url") or config.get("base_url")
    if not isinstance(url, str):
        return _provider_destination(config)
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return url.strip().lower()
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    return f"{scheme}://{host}:{port or _DEFAULT_PORTS.get(scheme, 0)}"


def header_destination(config: Mapping[str, Any]) -> str | None:
    """Where an http hook's secret headers go: its ``url`` without the fragment (which is
    never sent), scheme and host lower-cased, the default port made explicit, the path and
    query as given; ``None`` when it names no URL."""
    url = config.get("url")
    if not isinstance(url, str):
        return None
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return url.strip()
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    origin = f"{scheme}://{host}:{port or _DEFAULT_PORTS.get(scheme, 0)}"
    return origin + (parts.path or "/") + (f"?{parts.query}" if parts.query else "")


def _provider_destination(config: Mapping[str, Any]) -> str | None:
    provider, model = config.get("provider"), config.get("model")
    if not provider and isinstance(model, str):
        try:
            provider = resolve_model(model).provider
        except ValueError:
            provider = None
    return f"provider {provider}" if provider else None


def prepare_api_key(
    config: Any,
    hook_id: str,
    keyring: Keyring | None,
    stored: Mapping[str, Any] | None = None,
) -> Any:
    """A model hook's own ``api_key``: sealed, kept, removed or refused (see above)."""
    if not isinstance(config, Mapping):
        return config
    before = stored.get(API_KEY_FIELD) if stored else None
    kept = before if is_sealed_text(before) else None
    if API_KEY_FIELD not in config or config[API_KEY_FIELD] is None:
        if kept is None:
            if API_KEY_FIELD in config:
                raise _problem("config.api_key", "no stored value to keep; give the value")
            return config
        if destination(config) != destination(stored or {}):
            raise _problem(
                "config.api_key",
                f"the hook's destination changes from {destination(stored or {})} to "
                f"{destination(config)}; its stored api_key is not sent to a new "
                'destination: give it again (or "" to use the provider\'s own key)',
            )
        return {**config, API_KEY_FIELD: kept}
    value = config[API_KEY_FIELD]
    if value == "":
        return {k: v for k, v in config.items() if k != API_KEY_FIELD}
    if not isinstance(value, str) or is_sealed_text(value):
        return config  # validation reports a bad type; a foreign ciphertext will not open
    if keyring is None:
        raise _problem("config.api_key", NO_KEY_MESSAGE.replace("secret header values", "keys"))
    return {**config, API_KEY_FIELD: keyring.seal_text(value, api_key_aad(hook_id))}


def _sealed_headers(stored: Mapping[str, Any] | None) -> dict[str, str]:
    headers = stored.get("headers") if stored else None
    if not isinstance(headers, Mapping):
        return {}
    return {str(k): v for k, v in headers.items() if is_sealed_text(v)}


class PreparedHeaders(NamedTuple):
    """A config ready to store, and the secret headers dropped because the URL changed."""

    config: Any
    dropped: tuple[str, ...] = ()


def prepare_secret_headers(
    config: Any,
    hook_id: str,
    keyring: Keyring | None,
    stored: Mapping[str, Any] | None = None,
) -> PreparedHeaders:
    """``config`` with stored secrets restored where kept, and new secrets sealed.

    ``stored`` is the hook's current config on an update. A config without ``headers`` keeps
    the stored headers; a ``null`` secret header keeps its stored value; when the update
    changes the URL (:func:`header_destination`) neither keeps a secret: it is dropped and
    named in ``dropped``. Anything that is not a config mapping is returned unchanged, for
    the definition's validation to report.
    """
    if not isinstance(config, Mapping):
        return PreparedHeaders(config)
    sealed_before = _sealed_headers(stored)
    moved = bool(sealed_before) and header_destination(config) != header_destination(
        stored or {}
    )
    config, dropped = _stored_headers_kept(config, stored, moved, sealed_before)
    if not isinstance(config.get("headers"), Mapping):
        return PreparedHeaders(config)
    headers, also_dropped = _kept_secrets_restored(config, moved, sealed_before)
    dropped += also_dropped
    if dropped:
        log_event(
            "security.hook.secret_dropped",
            level=logging.WARNING,
            hook_id=hook_id,
            headers=dropped,
            before=destination(stored or {}),
            after=destination(config),
        )
    prepared = {**config, "headers": headers}
    secret = secret_header_names(config)
    unsealed = [
        name
        for name, value in headers.items()
        if str(name).lower() in secret and isinstance(value, str) and not is_sealed_text(value)
    ]
    if not unsealed:
        return PreparedHeaders(prepared, tuple(dropped))
    if keyring is None:
        raise _problem("config.headers", NO_KEY_MESSAGE)
    return PreparedHeaders(seal_headers(prepared, hook_id, keyring), tuple(dropped))


def _stored_headers_kept(
    config: Mapping[str, Any],
    stored: Mapping[str, Any] | None,
    moved: bool,
    sealed_before: Mapping[str, str],
) -> tuple[Mapping[str, Any], list[str]]:
    """A partial config update (no ``headers``) keeps the stored headers, and which of them
    are secret, but their secrets only while the URL stays; the dropped ones named."""
    stored_headers = stored.get("headers") if stored is not None else None
    if not isinstance(stored_headers, Mapping) or "headers" in config:
        return config, []
    headers_left = {
        name: value
        for name, value in stored_headers.items()
        if not (moved and name in sealed_before)
    }
    dropped = [str(name) for name in stored_headers if name not in headers_left]
    config = {**config, "headers": headers_left}
    if stored and "secret_headers" in stored and "secret_headers" not in config:
        config["secret_headers"] = stored["secret_headers"]
    return config, dropped


def _kept_secrets_restored(
    config: Mapping[str, Any], moved: bool, sealed_before: Mapping[str, str]
) -> tuple[dict[str, Any], list[str]]:
    """The headers with each ``null`` secret replaced by its stored ciphertext; when the URL
    moved, a kept (``null``) or carried-over secret is dropped instead, and named."""
    secret = secret_header_names(config)
    previous = {name.lower(): value for name, value in sealed_before.items()}
    headers: dict[str, Any] = {}
    dropped: list[str] = []
    for name, value in config["headers"].items():
        lowered = str(name).lower()
        kept = value is None or is_sealed_text(value)
        if moved and kept and lowered in secret and lowered in previous:
            # Kept (null) or carried over as its ciphertext: either would follow the URL.
            dropped.append(str(name))
            continue
        if value is None and lowered in secret:
            value = previous.get(lowered)
            if not isinstance(value, str):
                raise _problem(f"config.headers.{name}", "no stored value to keep; give the value")
        headers[name] = value
    return headers, dropped
