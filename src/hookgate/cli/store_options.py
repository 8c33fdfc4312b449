"""The two options every store-touching command takes: ``--data-dir`` or ``--database-url``.

``--data-dir DIR`` keeps the SQLite file ``DIR/hookgate.db`` (default: the per-user data
directory, ``$XDG_DATA_HOME/hookgate``); ``--database-url postgresql://…`` uses PostgreSQL.
``HOOKGATE_DATA_DIR`` and ``HOOKGATE_DATABASE_URL`` are the environment equivalents.
A data directory named with ``--data-dir`` (or ``HOOKGATE_DATA_DIR``) that does not exist is
refused (a typo would otherwise create an empty store and act on it) unless ``--init`` says
to create it; the per-user default is created on first use.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from hookgate.definition import DefinitionError
from hookgate.store import Store, StoreError, open_store
from hookgate.store.location import DATA_DIR_ENV, DATABASE_URL_ENV

__all__ = ["location_options", "run_with_store", "store_options"]

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")


_INIT = "hookgate.init_data_dir"


def _remember_init(ctx: click.Context, param: click.Parameter, value: bool) -> bool:
    ctx.meta[_INIT] = value
    return value


def store_options(fn: F) -> F:
    """``--data-dir`` / ``--database-url``, and ``--init`` (the commands that use
    :func:`run_with_store`)."""
    fn = click.option(
        "--init",
        is_flag=True,
        expose_value=False,
        callback=_remember_init,
        help="Create the data directory (and its database) when it does not exist yet.",
    )(fn)
    return location_options(fn)


def location_options(fn: F) -> F:
    """``--data-dir`` / ``--database-url`` alone (``serve`` creates its store itself)."""
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
    command-line errors. A data directory that does not exist is refused unless the command
    was given ``--init``."""
    _check_data_dir(data_dir, database_url)

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


def _check_data_dir(data_dir: str | None, database_url: str | None) -> None:
    # The per-user default is made on first use (a key may be created before the first
    # `serve`); a directory someone named must exist, or be asked for with --init.
    if database_url or data_dir is None or Path(data_dir).exists():
        return
    context = click.get_current_context(silent=True)
    if context is not None and context.meta.get(_INIT):
        return
    raise click.ClickException(
        f"the data directory {data_dir} does not exist: check the path (it must be the one "
        "`hookgate serve` uses), or pass --init to create a new store there"
    )
