"""The rules of the store, written once over a tiny SQL interface both backends provide.

Backends supply connections (:class:`Sql`: ``fetch``/``fetchrow``/``fetchval``/``execute``/
``executemany`` with ``?`` placeholders), a serialized write transaction, a lock clause
(``FOR UPDATE`` on PostgreSQL; SQLite's write transaction already excludes other writers) and
the few dialect details; everything about scope, versions, builtins and budgets lives here.
"""

from __future__ import annotations

from hookgate.store.approvals import ApprovalStoreMixin
from hookgate.store.base import Store
from hookgate.store.sql.base import Row, Sql
from hookgate.store.sql.budgets import BudgetTable
from hookgate.store.sql.chain_verify import ChainVerify
from hookgate.store.sql.executions import ExecutionTable
from hookgate.store.sql.hooks import HookTable
from hookgate.store.sql.key_check import SecretKeyCheck
from hookgate.store.sql.keys import ApiKeyTable

__all__ = ["Row", "Sql", "SqlStore"]


# The tables come first: their SqlBackend defines the connections the approval mixin uses.
class SqlStore(
    HookTable,
    ExecutionTable,
    ChainVerify,
    BudgetTable,
    ApiKeyTable,
    SecretKeyCheck,
    ApprovalStoreMixin,
    Store,
):
    """The shared implementation of :class:`~hookgate.store.base.Store`, one table per
    module: ``hooks``, ``executions``, ``dispatches``, ``budgets``, ``keys`` (and approvals in
    :mod:`hookgate.store.approvals`)."""

    def __init__(self) -> None:
        super().__init__()
        self._approval_listeners = []

    async def __aenter__(self) -> SqlStore:
        await self.open()
        try:
            await self.migrate()
        except BaseException:
            await self.close()
            raise
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()
