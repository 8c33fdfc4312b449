"""What a new user meets in the first hour: the help and the docs name every setting, in
plain words."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from tests.server.gateway_process import HOOKGATE, REPO, gateway_env

# Every environment variable the gateway process reads for its own settings.
GATEWAY_ENVIRONMENT = (
    "HOOKGATE_SSRF_ALLOWLIST",
    "HOOKGATE_SECRET_KEY",
    "HOOKGATE_SECRET_KEY_FILE",
    "HOOKGATE_RETENTION_DAYS",
    "HOOKGATE_DATA_DIR",
    "HOOKGATE_DATABASE_URL",
    "HOOKGATE_EDITION",
    "HOOKGATE_HOOK_SANDBOX",
    "HOOKGATE_TENANT_HOST_CODE",
)


def _serve_help() -> str:
    return subprocess.run(
        [*HOOKGATE, "serve", "--help"], capture_output=True, text=True, timeout=60,
        cwd=REPO, env=gateway_env(), check=True,
    ).stdout


def test_serve_help_and_gateway_docs_name_every_environment_setting() -> None:
    shown = _serve_help()
    docs = (REPO / "docs" / "gateway.md").read_text()
    for name in GATEWAY_ENVIRONMENT:
        assert name in shown, f"serve --help does not mention {name}"
        assert name in docs, f"docs/gateway.md does not mention {name}"


def test_user_facing_text_has_no_design_document_jargon() -> None:
    assert not re.search(r"\bseed'?s?\b", _serve_help(), re.IGNORECASE)
    for doc in ("gateway.md", "engine.md"):
        text = (REPO / "docs" / doc).read_text()
        # "seeded builtins" (what the gateway does at start) is plain English; "the seed's
        # keys" (a design document) is not.
        assert not re.search(r"\bthe seed'?s?\b", text, re.IGNORECASE), doc


def test_every_environment_variable_the_source_reads_is_documented() -> None:
    """A variable read in src/ but named in no doc is a setting nobody can find."""
    read = set()
    for path in (REPO / "src" / "hookgate").rglob("*.py"):
        read.update(re.findall(r"\"(HOOKGATE_[A-Z0-9_]+)\"", path.read_text()))
    docs = "\n".join(p.read_text() for p in Path(REPO / "docs").glob("*.md"))
    missing = sorted(name for name in read if name not in docs)
    assert not missing, f"environment variables read but not documented: {missing}"
