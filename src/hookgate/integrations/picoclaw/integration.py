"""PicoClaw registered with hookgate: its config file read as a hooks file. (Its hook
programs run through the generic ``process`` handler; its runtime event kinds live in
:mod:`hookgate.runtime_kinds`.)"""

from hookgate.integration_registry import Integration

INTEGRATION = Integration(
    name="picoclaw",
    config_formats=("hookgate.integrations.picoclaw.config:PICOCLAW",),
)
