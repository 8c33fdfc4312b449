"""Bridges: hookgate speaking other agents' hook contracts (Claude Code, …)."""
