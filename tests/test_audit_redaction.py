"""Readable audit columns (error, reason, input summary, metadata) never keep a credential of
a well-known shape: each is replaced before the text is cut."""

from __future__ import annotations

import pytest

from hookgate.audit import redact, summarize_input

# Shapes built at run time so this file itself holds no credential-looking literal.
GITHUB = "ghp_" + "Zq8Lm2Xv4Tp7Wn3Kc6Hb1Yf5Gd0Js8Ra2Ue4"
SAMPLES = {
    "github": GITHUB,
    "github-fine-grained": "github_pat_" + "11ABCDEFG0abcdefghijkl_mnopqrstuvwxyz0123456789",
    "gitlab": "glpat-" + "abcdefghijklmnopqrst",
    "slack": "xoxb-" + "123456789012-abcdefghijkl",
    "aws-access-key-id": "AKIA" + "IOSFODNN7EXAMPL3",
    "stripe": "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc",
    "google-api-key": "AIza" + "SyA1234567890abcdefghijklmnopqrstu",
    "jwt": "eyJhbGciOiJIUzI1NiJ9." + "eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N",
    "openai": "sk-" + "proj-abcdefghijklmnopqrstuv",
    "bearer": "Bearer " + "abc.def.ghi",
    "e-mail": "alice" + "@example.com",
    "private-key": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n"
    "-----END OPENSSH PRIVATE KEY-----",
}


@pytest.mark.parametrize("kind", sorted(SAMPLES))
def test_redact_hides_each_credential_shape(kind: str) -> None:
    secret = SAMPLES[kind]
    text = redact(f"curl https://x.example -d {secret} && echo done")
    assert secret not in text and "[REDACTED]" in text
    assert text.endswith("&& echo done")  # only the credential goes


def test_input_summary_of_a_tool_call_hides_the_token() -> None:
    summary = summarize_input({"command": f"git push https://{GITHUB}@github.com/o/r"})
    assert summary is not None and GITHUB not in summary


def test_plain_text_is_left_alone() -> None:
    text = "ls -la /workspace && grep -r TODO src"
    assert redact(text) == text


@pytest.mark.timeout(30)
def test_redaction_is_linear_in_a_long_run_of_letters() -> None:
    """A hook's reason of a megabyte of letters (no "@") once took the e-mail pattern a time
    quadratic in its length (16 KB: seconds; 64 KB: most of a minute) on the audit writer's
    path; scanned once per run, a megabyte is done well within the test's timeout."""
    text = "reason " + "r" * 1_000_000 + " mail me at someone@example.com"
    redacted = redact(text)
    assert redacted.endswith("mail me at [REDACTED]")
    assert redact("x.y+tag@example.org and (a@b.io)") == "[REDACTED] and ([REDACTED])"
