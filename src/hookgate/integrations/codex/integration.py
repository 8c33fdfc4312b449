"""OpenAI Codex CLI registered with hookgate: ``hookgate codex`` (its hook) and its
sub-commands."""

from hookgate.integration_registry import Integration

INTEGRATION = Integration(
    name="codex",
    cli_commands=("hookgate.integrations.codex.cli",),
    bridge_commands=("codex",),
    event_aliases="hookgate.integrations.codex.contract:CODEX_EVENTS",
)
