"""Framework adapters: hookgate's events and outcomes mapped onto each framework's own hooks.

One module per framework, each needing its optional extra::

    module                               object                          extra
    hookgate.adapters.langchain          HookgateMiddleware              [langchain]
    hookgate.adapters.openai_agents      HookgateRunHooks, guard_tools   [openai-agents]
    hookgate.adapters.adk                HookgatePlugin                  [adk]
    hookgate.adapters.pydantic_ai        HookgateCapability              [pydantic-ai]
    hookgate.adapters.claude_agent_sdk   hook_matchers                   [claude-agent-sdk]
    hookgate.adapters.smolagents         guard                           [smolagents]

``pip install 'hookgate[adapters]'`` installs every framework.

Each takes a :class:`hookgate.Engine` or a gateway client. What each framework can express is
in its module docstring and in ``docs/adapters.md``.
"""

from hookgate.adapters._gate import Gate, Target
from hookgate.adapters._mapping import HookgateAbort

__all__ = ["Gate", "HookgateAbort", "Target"]
