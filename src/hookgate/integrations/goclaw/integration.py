"""GoClaw registered with hookgate: its quality gates as a handler type and as a hooks-file
format."""

from hookgate.integration_registry import Integration

INTEGRATION = Integration(
    name="goclaw",
    config_formats=("hookgate.integrations.goclaw.config:QUALITY_GATES",),
    handler_types={"quality_gate": "hookgate.integrations.goclaw.handler:QualityGateHandler"},
)
