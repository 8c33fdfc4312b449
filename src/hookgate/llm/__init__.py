"""Model providers for prompt and agent hooks: one protocol, two wire formats.

:mod:`.base` holds the protocol (:class:`ChatProvider`) and its data; :mod:`.openai` speaks
Chat Completions, :mod:`.anthropic` the Messages API, both over the SSRF-guarded
:class:`~hookgate.net.outbound.OutboundClient`; :mod:`.aliases` maps ``haiku``/``gpt-4o-mini``…
to a provider; :mod:`.select` picks provider, model, endpoint and key for a hook.
"""

from hookgate.llm.aliases import ALIASES, resolve_model
from hookgate.llm.base import (
    ChatProvider,
    ChatReply,
    ChatRequest,
    ProviderError,
    ToolCall,
    ToolSpec,
    Usage,
)
from hookgate.llm.select import ProviderChoice, choose_provider, make_provider

__all__ = [
    "ALIASES",
    "ChatProvider",
    "ChatReply",
    "ChatRequest",
    "ProviderChoice",
    "ProviderError",
    "ToolCall",
    "ToolSpec",
    "Usage",
    "choose_provider",
    "make_provider",
    "resolve_model",
]
