"""Secret header values of http hooks: sealed at rest, opened only at dispatch, never shown.

An http hook's ``config.headers`` may hold credentials. ``Authorization``,
``Proxy-Authorization`` and any header named in ``config.secret_headers`` are *secret*:

* :func:`seal_headers` encrypts their values with the :class:`~hookgate.secrets.keyring.Keyring`
  (AES-256-GCM, random nonce, key id in the record) before a hook is stored. The associated
  data binds each value to its hook id and header name, so a ciphertext copied into another
  hook or header does not decrypt.
* :func:`open_headers` decrypts them when the request is sent, and nowhere else.
* :func:`mask_config` / :func:`mask_hook` replace them with :data:`MASK` for every read API
  (``hooks.list``, REST, the panel, ``hookgate check``), whether sealed or not.
* :func:`reseal_headers` re-encrypts under the active key (key rotation).
* :func:`unreadable_headers` is the start-up check: every sealed value the keyring cannot
  open, named by hook and header (a missing or wrong key is reported before any dispatch).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final

from hookgate.secrets.keyring import Keyring, SecretError, is_sealed_text

if TYPE_CHECKING:
    from hookgate.definition import HookDefinition

__all__ = [
    "DEFAULT_SECRET_HEADERS",
    "MASK",
    "header_aad",
    "mask_config",
    "mask_hook",
    "open_headers",
    "reseal_headers",
    "seal_headers",
    "secret_header_names",
    "unreadable_headers",
]

DEFAULT_SECRET_HEADERS: Final = frozenset({"authorization", "proxy-authorization"})
MASK: Final = "[ENCRYPTED]"


def header_aad(hook_id: str, header: str) -> str:
    """Associated data for one header value of one hook."""
    return f"hookgate:http-header:{hook_id}:{header.lower()}"


def secret_header_names(config: Mapping[str, Any]) -> frozenset[str]:
    """Lower-cased names of the headers whose values are secret in this config."""
    listed = config.get("secret_headers") or ()
    extra = {str(name).lower() for name in listed} if isinstance(listed, list | tuple) else set()
    return DEFAULT_SECRET_HEADERS | extra


def _headers(config: Mapping[str, Any]) -> Mapping[str, Any]:
    headers = config.get("headers") or {}
    return headers if isinstance(headers, Mapping) else {}


def seal_headers(config: Mapping[str, Any], hook_id: str, keyring: Keyring) -> dict[str, Any]:
    """A copy of ``config`` with every secret header value sealed (sealed ones kept)."""
    secret = secret_header_names(config)
    headers: dict[str, Any] = {}
    for name, value in _headers(config).items():
        if name.lower() in secret and isinstance(value, str) and not is_sealed_text(value):
            value = keyring.seal_text(value, header_aad(hook_id, name))
        headers[name] = value
    return {**config, "headers": headers} if "headers" in config else dict(config)


def open_headers(
    config: Mapping[str, Any], hook_id: str, keyring: Keyring | None
) -> dict[str, str]:
    """The headers to send, sealed values decrypted. Raise :class:`SecretError` naming the
    header (never its value) when one cannot be opened."""
    out: dict[str, str] = {}
    for name, value in _headers(config).items():
        text = str(value)
        if is_sealed_text(text):
            if keyring is None:
                raise SecretError(
                    f"header {name!r} is encrypted but no key is configured "
                    "(set HOOKGATE_SECRET_KEY or HOOKGATE_SECRET_KEY_FILE)"
                )
            try:
                text = keyring.open_text(text, header_aad(hook_id, name))
            except SecretError as exc:
                raise SecretError(f"header {name!r}: {exc}") from None
        out[name] = text
    return out


def reseal_headers(config: Mapping[str, Any], hook_id: str, keyring: Keyring) -> dict[str, Any]:
    """Re-encrypt sealed values under the keyring's active key; seal plaintext secrets too."""
    headers: dict[str, Any] = {}
    for name, value in _headers(config).items():
        if is_sealed_text(value):
            value = keyring.reseal_text(value, header_aad(hook_id, name))
        headers[name] = value
    return seal_headers({**config, "headers": headers}, hook_id, keyring)


def mask_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of an http hook's config safe to show: secret and sealed values masked."""
    if "headers" not in config:
        return dict(config)
    secret = secret_header_names(config)
    headers = {
        name: MASK if name.lower() in secret or is_sealed_text(value) else value
        for name, value in _headers(config).items()
    }
    return {**config, "headers": headers}


def mask_hook(hook: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a hook as a dict (``HookDefinition.to_dict()``, an API row) with its
    config masked. Safe for any handler type: only header values are touched."""
    config = hook.get("config")
    if not isinstance(config, Mapping):
        return dict(hook)
    return {**hook, "config": mask_config(config)}


def unreadable_headers(hooks: Iterable[HookDefinition], keyring: Keyring | None) -> list[str]:
    """One problem per sealed header value that ``keyring`` cannot open (never the value)."""
    problems: list[str] = []
    for hook in hooks:
        for name, value in _headers(hook.config).items():
            if not is_sealed_text(value):
                continue
            if keyring is None:
                problems.append(f"hook {hook.label!r}: header {name!r} is encrypted, no key set")
                continue
            try:
                keyring.open_text(value, header_aad(hook.id, name))
            except SecretError as exc:
                problems.append(f"hook {hook.label!r}: header {name!r}: {exc}")
    return problems
