"""The two options every store-touching command takes: ``--data-dir`` or ``--database-url``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from hookgate.store.location import DATA_DIR_ENV, DATABASE_URL_ENV

__all__ = ["store_options"]

F = TypeVar("F", bound=Callable[..., Any])


def store_options(fn: F) -> F:
    fn = click.option(
        "--database-url",
        envvar=DATABASE_URL_ENV,
        default=None,
        help=f"PostgreSQL URL (postgresql://…); env {DATABASE_URL_ENV}.",
    )(fn)
    fn = click.option(
        "--data-dir",
        envvar=DATA_DIR_ENV,
        type=click.Path(file_okay=False),
        default=None,
        help=f"SQLite data directory (default: the per-user data directory); env {DATA_DIR_ENV}.",
    )(fn)
    return fn
