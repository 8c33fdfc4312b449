"""Gemini CLI registered with hookgate: ``hookgate gemini`` (its hook) and its
sub-commands."""

from hookgate.integration_registry import Integration

INTEGRATION = Integration(
    name="gemini",
    cli_commands=("hookgate.integrations.gemini.cli",),
    bridge_commands=("gemini",),
    event_aliases="hookgate.integrations.gemini.contract:GEMINI_EVENTS",
)
