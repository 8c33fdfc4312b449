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
    expected = list(range(1, len(found) + 1))
    if [m.version for m in found] != expected:
        raise RuntimeError(f"{backend} migrations are not numbered 1..n: {found!r}")
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
