"""Persistence for the gateway: hooks, executions, budgets and API keys.

``await open_store(data_dir=...)`` gives an opened and migrated SQLite store (the default);
``await open_store(database_url="postgresql://...")`` a PostgreSQL one. Both implement
:class:`hookgate.store.base.Store`. With neither argument the environment
(``HOOKGATE_DATABASE_URL``, ``HOOKGATE_DATA_DIR``) decides, then the per-user data directory.
"""

from __future__ import annotations

import os
from pathlib import Path

from hookgate.store.base import (
    ApiKey,
    BreakerSnapshot,
    BudgetExceeded,
    Caller,
    DispatchPage,
    DispatchQuery,
    DispatchRow,
    ExecutionPage,
    ExecutionQuery,
    ExecutionRow,
    ExecutionTiming,
    Forbidden,
    HookFilter,
    HookRecord,
    HookRevision,
    NotFound,
    ReadOnlyHook,
    SeedReport,
    Store,
    StoreError,
    TenantBudget,
    VersionConflict,
    hash_api_key,
    new_api_key,
)
from hookgate.store.location import (
    DATA_DIR_ENV,
    DATABASE_URL_ENV,
    default_data_dir,
    is_postgres_url,
)

__all__ = [
    "ApiKey",
    "BreakerSnapshot",
    "BudgetExceeded",
    "Caller",
    "DispatchPage",
    "DispatchQuery",
    "DispatchRow",
    "ExecutionPage",
    "ExecutionQuery",
    "ExecutionTiming",
    "ExecutionRow",
    "Forbidden",
    "HookFilter",
    "HookRecord",
    "HookRevision",
    "NotFound",
    "ReadOnlyHook",
    "SeedReport",
    "Store",
    "StoreError",
    "TenantBudget",
    "VersionConflict",
    "create_store",
    "hash_api_key",
    "new_api_key",
    "open_store",
]


def create_store(
    data_dir: str | Path | None = None,
    database_url: str | None = None,
    *,
    pool_size: int | None = None,
) -> Store:
    """A store object, not yet opened. Giving both a data directory and a URL is an error.
    ``pool_size``: the most PostgreSQL connections for requests (default 10; SQLite has its
    own two connections and ignores it)."""
    if data_dir is not None and database_url:
        raise StoreError("give either a data directory or a database URL, not both")
    if data_dir is None and not database_url:
        database_url = os.environ.get(DATABASE_URL_ENV) or None
        if database_url is None:
            data_dir = os.environ.get(DATA_DIR_ENV) or default_data_dir()
    if database_url:
        if not is_postgres_url(database_url):
            raise StoreError(
                f"unsupported database URL scheme in {database_url.split(':', 1)[0]!r}; "
                "use postgresql://... (or --data-dir for SQLite)"
            )
        from hookgate.store.postgres import PostgresStore

        if pool_size is None:
            return PostgresStore(database_url)
        if pool_size < 1:
            raise StoreError(f"the connection pool needs at least 1 connection, got {pool_size}")
        return PostgresStore(database_url, max_pool=pool_size)
    from hookgate.store.sqlite import SqliteStore

    assert data_dir is not None
    return SqliteStore(Path(data_dir))


async def open_store(
    data_dir: str | Path | None = None,
    database_url: str | None = None,
    *,
    pool_size: int | None = None,
) -> Store:
    """An opened store with every migration applied. Close it with ``await store.close()``
    (or use ``async with``)."""
    store = create_store(data_dir, database_url, pool_size=pool_size)
    await store.open()
    try:
        await store.migrate()
    except BaseException:
        await store.close()
        raise
    return store
