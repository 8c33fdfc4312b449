"""Secrets at rest: the AES-256-GCM `Keyring` (`keyring`) and sealed http-hook headers
(`headers`). Modules here import the standard library's ``secrets`` absolutely."""
