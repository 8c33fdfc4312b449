"""Where the store lives: a data directory (SQLite) or a database URL (PostgreSQL)."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Final

__all__ = [
    "DATABASE_URL_ENV",
    "DATA_DIR_ENV",
    "SQLITE_FILE_NAME",
    "default_data_dir",
    "is_postgres_url",
]

DATA_DIR_ENV: Final = "HOOKGATE_DATA_DIR"
DATABASE_URL_ENV: Final = "HOOKGATE_DATABASE_URL"
SQLITE_FILE_NAME: Final = "hookgate.db"


def default_data_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The per-user data directory: ``$XDG_DATA_HOME/hookgate`` (``~/.local/share/hookgate``),
    or ``~/Library/Application Support/hookgate`` on macOS, ``%LOCALAPPDATA%`` on Windows."""
    env = os.environ if environ is None else environ
    if sys.platform == "win32" and env.get("LOCALAPPDATA"):
        return Path(env["LOCALAPPDATA"]) / "hookgate"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "hookgate"
    base = env.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "hookgate"


def is_postgres_url(url: str) -> bool:
    return url.split(":", 1)[0] in ("postgres", "postgresql")
