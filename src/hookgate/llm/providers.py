"""Model providers the gateway's operator configures, and the rules for tenants' hooks.

On a gateway, credentials belong to whoever supplied them. The operator names providers
(``hookgate serve --llm-provider name=work,format=openai,base_url=…,api_key_env=WORK_KEY``);
without any, the two public ones are configured from the operator's environment, as for
the library (``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``, ``HOOKGATE_LLM_*``). A ``prompt`` or
``agent`` hook names one with ``provider`` (or lets its ``model`` choose by format), and may
bring its own key in ``api_key``, sealed at rest like a secret header and sent only to that
hook's provider URL.

What a tenant's hook may not do, checked when it is defined and again when it runs:

* ``api_key_env``: it would read any environment variable of the gateway's process;
* ``base_url`` without its own ``api_key``: the operator's key would follow it to a URL the
  tenant chose.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

from hookgate.llm.aliases import PROVIDERS, resolve_model
from hookgate.secrets.keyring import Keyring, SecretError, is_sealed_text

__all__ = [
    "API_KEY_FIELD",
    "ProviderRegistry",
    "ProviderSpec",
    "api_key_aad",
    "credential_problems",
    "open_api_key",
    "parse_provider",
]

API_KEY_FIELD: Final = "api_key"
_SPEC_KEYS: Final = frozenset({"name", "format", "base_url", "api_key_env", "model"})
ENV_KEY_MESSAGE: Final = (
    "api_key_env is not allowed on the gateway: it would send one of the gateway's own "
    "environment variables; name a provider the operator configured, or give your own api_key"
)
BASE_URL_MESSAGE: Final = (
    "base_url needs your own api_key: the operator's provider keys are only sent to the "
    "operator's provider URLs"
)


def api_key_aad(hook_id: str) -> str:
    """Associated data binding a sealed provider key to its hook."""
    return f"hookgate:llm-api-key:{hook_id}"


def open_api_key(config: Mapping[str, Any], hook_id: str, keyring: Keyring | None) -> str | None:
    """The hook's own provider key in clear (``None`` when it brings none)."""
    value = config.get(API_KEY_FIELD)
    if not isinstance(value, str) or not value:
        return None
    if not is_sealed_text(value):
        return value  # library configs may hold it in clear
    if keyring is None:
        raise SecretError("the hook's api_key is encrypted but no key is configured")
    return keyring.open_text(value, api_key_aad(hook_id))


@dataclass(frozen=True, slots=True)
class ProviderSpec:
    """One provider the operator offers: its wire format, URL and credential."""

    name: str
    format: str
    base_url: str
    #: The environment variable of the gateway's process that holds the key.
    api_key_env: str | None = None
    #: The model a hook gets when it names none.
    model: str | None = None


def parse_provider(text: str) -> ProviderSpec:
    """``name=…,format=openai|anthropic,base_url=…[,api_key_env=…][,model=…]``; ValueError
    saying what is wrong."""
    fields: dict[str, str] = {}
    for part in (p.strip() for p in text.split(",") if p.strip()):
        key, sep, value = part.partition("=")
        key = key.strip()
        if not sep or key not in _SPEC_KEYS:
            raise ValueError(
                f"provider setting {part!r} is not one of {', '.join(sorted(_SPEC_KEYS))}=VALUE"
            )
        fields[key] = value.strip()
    missing = [k for k in ("name", "format", "base_url") if not fields.get(k)]
    if missing:
        raise ValueError(f"provider {text!r} needs {', '.join(missing)}")
    if fields["format"] not in PROVIDERS:
        raise ValueError(f"provider format must be {' or '.join(PROVIDERS)}")
    return ProviderSpec(
        fields["name"],
        fields["format"],
        fields["base_url"].rstrip("/"),
        fields.get("api_key_env") or None,
        fields.get("model") or None,
    )


class ProviderRegistry:
    """The operator's providers, by name; the first of a format serves that format."""

    def __init__(self, specs: Iterable[ProviderSpec]) -> None:
        self.specs: dict[str, ProviderSpec] = {}
        for spec in specs:
            if spec.name in self.specs:
                raise ValueError(f"provider {spec.name!r} is configured twice")
            self.specs[spec.name] = spec

    def __iter__(self) -> Iterator[ProviderSpec]:
        return iter(self.specs.values())

    def find(self, config: Mapping[str, Any]) -> ProviderSpec:
        """The provider a hook config names (or whose format its model needs)."""
        name = config.get("provider")
        if isinstance(name, str) and name in self.specs:
            return self.specs[name]
        wire = name if isinstance(name, str) and name in PROVIDERS else None
        model = config.get("model")
        if wire is None and isinstance(model, str) and model:
            wire = resolve_model(model).provider
        if isinstance(name, str) and wire is None:
            raise ValueError(
                f"no provider named {name!r} on this gateway; configured: "
                f"{', '.join(self.specs) or 'none'}"
            )
        for spec in self.specs.values():
            if wire is None or spec.format == wire:
                return spec
        raise ValueError(
            f"no {wire} provider is configured on this gateway; configured: "
            f"{', '.join(self.specs) or 'none'}"
        )

    def info(self) -> list[dict[str, Any]]:
        """What a tenant may know: names, formats and default models (no URL, no key)."""
        return [{"name": s.name, "format": s.format, "model": s.model} for s in self]


def _model_configs(config: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    # A prompt/agent config is one; a quality gate carries them in its gates list.
    yield config
    gates = config.get("gates")
    if isinstance(gates, list):
        for gate in gates:
            if isinstance(gate, Mapping):
                yield gate


def credential_problems(
    config: Mapping[str, Any], registry: ProviderRegistry | None = None
) -> list[tuple[str, str]]:
    """(field, message) for every way a tenant's config would spend a credential it did not
    supply, or names a provider the gateway does not have."""
    problems: list[tuple[str, str]] = []
    for index, item in enumerate(_model_configs(config)):
        where = "config" if index == 0 else f"config.gates[{index - 1}]"
        if "api_key_env" in item:
            problems.append((f"{where}.api_key_env", ENV_KEY_MESSAGE))
        if item.get("base_url") and not item.get(API_KEY_FIELD):
            problems.append((f"{where}.base_url", BASE_URL_MESSAGE))
        if registry is not None and (item.get("provider") or item.get("model")):
            try:
                registry.find(item)
            except ValueError as exc:
                problems.append((f"{where}.provider", str(exc)))
    return problems
