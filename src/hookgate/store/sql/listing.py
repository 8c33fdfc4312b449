"""Listing queries of the audit tables: the WHERE terms a reader's filters make, the
opaque page cursor, and one newest-first page. Executions and dispatch records are read
the same way, so both readers build their queries here."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from typing import Any, Final, TypeVar

from hookgate.store.base import Caller, StoreError
from hookgate.store.sql.base import Row, Sql

__all__ = ["MAX_PAGE", "Where", "decode_cursor", "encode_cursor", "newest_first_page"]

#: The most rows one page holds, whatever the caller asks for.
MAX_PAGE: Final = 1000

T = TypeVar("T")


def encode_cursor(seq: int) -> str:
    return base64.urlsafe_b64encode(f"s{seq}".encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> int:
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        if not text.startswith("s"):
            raise ValueError(text)
        return int(text[1:])
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise StoreError(f"invalid history cursor {cursor!r}") from None


class Where:
    """WHERE terms and their ``?`` arguments, in order; a term is only added for a filter
    the caller set."""

    __slots__ = ("args", "terms")

    def __init__(self) -> None:
        self.terms: list[str] = []
        self.args: list[Any] = []

    def add(self, term: str, *args: Any) -> None:
        self.terms.append(term)
        self.args.extend(args)

    def tenant(self, caller: Caller, asked: str | None) -> None:
        """Scope to the caller's tenant; a master key sees the tenant it asks for, or all."""
        tenant = asked if caller.master else caller.tenant_id
        if tenant is not None:
            self.add("tenant_id = ?", tenant)

    def equal(self, *pairs: tuple[str, Any]) -> None:
        """``column = value`` for each pair whose value is set."""
        for column, value in pairs:
            if value is not None:
                self.add(f"{column} = ?", value)

    def window(self, since: float | None, until: float | None) -> None:
        """``created_at`` in ``[since, until)``, each bound only when given."""
        if since is not None:
            self.add("created_at >= ?", float(since))
        if until is not None:
            self.add("created_at < ?", float(until))

    def clause(self) -> str:
        return f" WHERE {' AND '.join(self.terms)}" if self.terms else ""


async def newest_first_page(
    sql: Sql,
    select: str,
    where: Where,
    cursor: str | None,
    limit: int,
    from_row: Callable[[Row], T],
    seq_of: Callable[[T], int],
) -> tuple[tuple[T, ...], str | None]:
    """One page of ``select`` (``SELECT … FROM table``, ``seq`` among its columns), newest
    first, starting after ``cursor``; the rows and the next page's cursor (None at the end)."""
    if cursor:
        where.add("seq < ?", decode_cursor(cursor))
    size = max(1, min(int(limit), MAX_PAGE))
    rows = await sql.fetch(
        f"{select}{where.clause()} ORDER BY seq DESC LIMIT {size + 1}", *where.args
    )
    items = tuple(from_row(row) for row in rows[:size])
    more = len(rows) > size and bool(items)
    return items, encode_cursor(seq_of(items[-1])) if more else None
