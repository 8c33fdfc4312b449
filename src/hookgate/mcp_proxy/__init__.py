"""``hookgate mcp-proxy``: hooks for any MCP client and server, on the official ``mcp`` SDK.

Needs the optional extra: ``pip install 'hookgate[mcp]'``.
"""

from hookgate.mcp_proxy.proxy import Evaluate, McpProxy, Wants
from hookgate.mcp_proxy.upstream import Upstream, UpstreamError, UpstreamSpec

__all__ = ["Evaluate", "McpProxy", "Upstream", "UpstreamError", "UpstreamSpec", "Wants"]
