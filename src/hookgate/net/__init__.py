"""Outbound networking: the one HTTP client for hook requests (`outbound`) and the SSRF guard
that decides which addresses it may reach (`ssrf`)."""
