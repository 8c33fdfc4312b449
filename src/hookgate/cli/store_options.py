"""The two options every store-touching command takes: ``--data-dir`` or ``--database-url``.

``--data-dir DIR`` keeps the SQLite file ``DIR/hookgate.db`` (default: the per-user data
directory, ``$XDG_DATA_HOME/hookgate``); ``--database-url postgresql://…`` uses PostgreSQL.
``HOOKGATE_DATA_DIR`` and ``HOOKGATE_DATABASE_URL`` are the environment equivalents.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import click

from hookgate.definition import DefinitionError
from hookgate.store import Store, StoreError, open_store
from hookgate.store.location import DATA_DIR_ENV, DATABASE_URL_ENV

__all__ = ["run_with_store", "store_options"]

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")


def store_options(fn: F) -> F:
    fn = click.option(
        "--database-url",
        envvar=DATABASE_URL_ENV,
        show_envvar=True,
        default=None,
        help="PostgreSQL URL (postgresql://…) instead of SQLite.",
    )(fn)
    fn = click.option(
        "--data-dir",
        envvar=DATA_DIR_ENV,
        show_envvar=True,
        type=click.Path(file_okay=False),
        default=None,
        help="SQLite data directory (default: the per-user data directory).",
    )(fn)
    return fn


def run_with_store(
    data_dir: str | None,
    database_url: str | None,
    action: Callable[[Store], Awaitable[T]],
) -> T:
    """Open (and migrate) the store, run ``action``, close it; store errors become clean
    command-line errors."""

    async def main() -> T:
        try:
            store = await open_store(data_dir=data_dir, database_url=database_url)
        except StoreError as exc:
            raise click.ClickException(str(exc)) from None
        try:
            return await action(store)
        except (StoreError, DefinitionError) as exc:
            raise click.ClickException(str(exc)) from None
        finally:
            await store.close()

    return asyncio.run(main())
