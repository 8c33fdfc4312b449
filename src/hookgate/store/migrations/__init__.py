"""Versioned, forward-only schema migrations, one SQL file per version and backend.

Files are named ``NNNN_what.sql`` under ``sqlite/`` and ``postgres/``. A migration never
changes once released; a schema change is a new file. Each backend applies the pending ones
inside one transaction while holding a lock (SQLite's write lock, a PostgreSQL advisory
lock), so two processes starting at once apply each migration exactly once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from typing import Final, Literal

__all__ = ["Migration", "load_migrations", "split_statements"]

_NAME: Final = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    sql: str


def load_migrations(backend: Literal["sqlite", "postgres"]) -> list[Migration]:
    """The backend's migrations in version order; a gap or duplicate is a packaging bug."""
    found: list[Migration] = []
    for entry in resources.files(__package__).joinpath(backend).iterdir():
        match = _NAME.match(entry.name)
        if match:
            found.append(Migration(int(match[1]), match[2], entry.read_text(encoding="utf-8")))
    found.sort(key=lambda m: m.version)
    versions = [m.version for m in found]
    # Numbers are handed out ahead of time, so a later one may be released before an
    # earlier one: gaps are allowed (each is applied once, whenever it arrives), but not
    # duplicates or a missing first migration.
    if not versions or versions[0] != 1 or len(set(versions)) != len(versions):
        raise RuntimeError(f"{backend} migrations must start at 1, each once: {versions!r}")
    return found


def split_statements(sql: str) -> list[str]:
    """Split a migration into statements at ``;`` ending a line, dropping ``--`` comments.

    (Python's ``executescript`` would commit the surrounding transaction, so SQLite
    migrations are run statement by statement; they contain no triggers.)
    """
    lines = [line for line in sql.splitlines() if not line.lstrip().startswith("--")]
    statements: list[str] = []
    current: list[str] = []
    for line in lines:
        current.append(line)
        if line.rstrip().endswith(";"):
            statements.append("\n".join(current).strip())
            current = []
    tail = "\n".join(current).strip()
    if tail:
        statements.append(tail)
    return statements
