"""Gemini CLI registered with hookgate: ``hookgate gemini`` (its hook) and its
sub-commands (``import gemini`` too), and its hook-script contract for command hooks
(``format: gemini``)."""

from hookgate.integration_registry import Integration

INTEGRATION = Integration(
    name="gemini",
    command_formats={"gemini": "hookgate.integrations.gemini.script_contract"},
    cli_commands=("hookgate.integrations.gemini.cli",),
    bridge_commands=("gemini",),
    event_aliases="hookgate.integrations.gemini.contract:GEMINI_EVENTS",
)
