"""``GET /api/v1/executions/export``: the filtered audit rows as CSV or JSON, streamed.

Takes the ``hooks.history`` filters (no cursor: every matching row, newest first) and
``format=csv|json``. Rows are read from the store a page at a time and written out as they
come, so an export of a long history never sits in memory. Viewers may export (they may read
the history); the sealed full error is never exported, not even to admins.
"""

from __future__ import annotations

import csv
import io
from collections.abc import AsyncIterator
from typing import Any, Final

import orjson
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from hookgate.server import schemas
from hookgate.server.auth import Principal, require_role
from hookgate.server.errors import ApiError
from hookgate.server.gateway import Gateway
from hookgate.server.methods import history_query, parse_params
from hookgate.server.rest import API_PREFIX, authenticate, error_response
from hookgate.server.timestamps import iso
from hookgate.store import ExecutionPage, ExecutionRow, StoreError

__all__ = ["EXPORT_COLUMNS", "export_routes"]

EXPORT_PAGE: Final = 500
EXPORT_COLUMNS: Final = (
    "id",
    "created_at",
    "tenant_id",
    "hook_ref",
    "hook_name",
    "event",
    "tool_name",
    "decision",
    "reason",
    "error",
    "agent_id",
    "session_id",
    "duration_ms",
    "input_summary",
)
# A spreadsheet runs a cell that starts like a formula; agent input must not get that far.
_FORMULA_START: Final = ("=", "+", "-", "@", "\t", "\r")


def _record(row: ExecutionRow) -> dict[str, Any]:
    data = row.to_dict()
    data["created_at"] = iso(row.created_at)
    return {column: data.get(column) for column in EXPORT_COLUMNS}


def _cell(value: Any) -> Any:
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return "" if value is None else value


async def _first_page(
    gateway: Gateway, who: Principal, params: schemas.HistoryParams
) -> ExecutionPage:
    query = history_query(who, params.model_copy(update={"cursor": None, "limit": EXPORT_PAGE}))
    return await gateway.store.query_executions(who.caller, query)


async def _rows(
    gateway: Gateway, who: Principal, params: schemas.HistoryParams, page: ExecutionPage
) -> AsyncIterator[ExecutionRow]:
    while True:
        for row in page.items:
            yield row
        if not page.next_cursor:
            return
        query = history_query(
            who, params.model_copy(update={"cursor": page.next_cursor, "limit": EXPORT_PAGE})
        )
        page = await gateway.store.query_executions(who.caller, query)


async def _csv(rows: AsyncIterator[ExecutionRow]) -> AsyncIterator[bytes]:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(EXPORT_COLUMNS)
    count = 0
    async for row in rows:
        writer.writerow([_cell(value) for value in _record(row).values()])
        count += 1
        if count % 100 == 0:
            yield buffer.getvalue().encode()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue().encode()


async def _json(rows: AsyncIterator[ExecutionRow]) -> AsyncIterator[bytes]:
    yield b"["
    first = True
    async for row in rows:
        yield (b"" if first else b",\n") + orjson.dumps(_record(row))
        first = False
    yield b"]\n"


async def export_executions(request: Request) -> Response:
    gateway: Gateway = request.app.state.gateway
    try:
        who = await authenticate(request)
        require_role(who, "viewer", "exporting the audit log")
        raw = {key: request.query_params[key] for key in request.query_params}
        kind = raw.pop("format", "csv")
        if kind not in ("csv", "json"):
            raise ApiError("INVALID_REQUEST", f"format: csv or json, not {kind!r}")
        raw.pop("cursor", None)
        raw.pop("limit", None)
        params: schemas.HistoryParams = parse_params(schemas.HistoryParams, raw)
        # The first page is read before answering: bad filters, another tenant's scope or a
        # store error are a clean error response, not a cut-off download.
        first = await _first_page(gateway, who, params)
    except ApiError as exc:
        return error_response(exc)
    except StoreError as exc:
        return error_response(ApiError("INVALID_REQUEST", str(exc)))
    rows = _rows(gateway, who, params, first)
    body = _csv(rows) if kind == "csv" else _json(rows)
    media = "text/csv; charset=utf-8" if kind == "csv" else "application/json"
    return StreamingResponse(
        body,
        media_type=media,
        headers={"Content-Disposition": f'attachment; filename="hookgate-audit.{kind}"'},
    )


def export_routes() -> list[Route]:
    return [Route(API_PREFIX + "/executions/export", export_executions, methods=["GET"])]
