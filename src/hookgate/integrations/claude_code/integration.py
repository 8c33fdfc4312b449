"""Claude Code registered with hookgate: its settings as a hooks file, its hook-script
contract for command hooks (``format: claude_code``), ``hookgate claude-code`` and its
sub-commands, and the gateway's ``POST /api/v1/claude-code/hook``."""

from hookgate.integration_registry import Integration

INTEGRATION = Integration(
    name="claude_code",
    config_formats=("hookgate.integrations.claude_code.settings_format:CLAUDE_CODE",),
    command_formats={"claude_code": "hookgate.integrations.claude_code.contract"},
    cli_commands=("hookgate.integrations.claude_code.cli",),
    bridge_commands=("claude-code",),
    routes=("hookgate.integrations.claude_code.endpoint:claude_code_routes",),
    event_aliases="hookgate.integrations.claude_code.contract:CLAUDE_TO_HOOKGATE",
)
