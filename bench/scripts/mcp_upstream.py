"""The upstream MCP server of the mcp-proxy benchmark: one small tool, over stdio."""

from mcp.server.mcpserver import MCPServer

server = MCPServer("bench-upstream")


@server.tool(structured_output=False)
def add(a: int, b: int) -> str:
    """Add two numbers."""
    return str(a + b)


if __name__ == "__main__":
    server.run()
