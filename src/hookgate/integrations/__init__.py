"""Integrations: everything hookgate needs to stand in for another agent system's own hooks,
one package per system."""
