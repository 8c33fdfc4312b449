"""``GET /api/v1/executions/export`` and ``GET /api/v1/dispatches/export``: the filtered
audit rows (or dispatch records) as CSV or JSON, streamed.

Takes the ``hooks.history`` (or ``dispatches.list``) filters (no cursor: every matching row,
newest first) and ``format=csv|json`` (dispatches also ``jsonl``: the replay export, admins
only, see :mod:`hookgate.replay.sources`). Rows are read from the store a page at a time and
written out as they come, so an export of a long history never sits in memory. Viewers may
export (they may read the history); the sealed full error (or payload) is never exported in
plain text: the replay export carries the payload only as the sealed blob, which needs the
gateway's key.
"""

from __future__ import annotations

import csv
import io
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final

import orjson
from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from hookgate.replay.sources import export_line, store_rows
from hookgate.server import schemas
from hookgate.server.auth import Principal, require_role
from hookgate.server.dispatch_methods import dispatch_query, dispatch_view
from hookgate.server.errors import ApiError
from hookgate.server.gateway import Gateway
from hookgate.server.methods import history_query, parse_params
from hookgate.server.rest import API_PREFIX, authenticate, error_response
from hookgate.server.timestamps import iso
from hookgate.store import DispatchPage, DispatchRow, ExecutionPage, ExecutionRow, StoreError

__all__ = ["DISPATCH_EXPORT_COLUMNS", "EXPORT_COLUMNS", "export_routes"]

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
DISPATCH_EXPORT_COLUMNS: Final = (
    "id",
    "created_at",
    "tenant_id",
    "event",
    "tool_name",
    "decision",
    "reason",
    "agent_id",
    "session_id",
    "duration_ms",
    "matched",
    "hooks",
    "approval_id",
    "approval_status",
    "decided_by",
    "decided_at",
    "refused",
    "input_size",
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


@dataclass(frozen=True, slots=True)
class _Export:
    """One exportable log: its filters, how a page is read, and how a row is written."""

    name: str
    params: type[BaseModel]
    columns: tuple[str, ...]
    page: Callable[[Gateway, Principal, Any, str | None], Awaitable[Any]]
    record: Callable[[Any], dict[str, Any]]


async def _execution_page(
    gateway: Gateway, who: Principal, params: schemas.HistoryParams, cursor: str | None
) -> ExecutionPage:
    query = history_query(who, params.model_copy(update={"cursor": cursor, "limit": EXPORT_PAGE}))
    return await gateway.store.query_executions(who.caller, query)


async def _dispatch_page(
    gateway: Gateway, who: Principal, params: schemas.DispatchListParams, cursor: str | None
) -> DispatchPage:
    query = dispatch_query(who, params.model_copy(update={"cursor": cursor, "limit": EXPORT_PAGE}))
    return await gateway.store.query_dispatches(who.caller, query)


def _dispatch_record(row: DispatchRow) -> dict[str, Any]:
    data = dispatch_view(row)
    approval = data["approval"] or {}
    data["hooks"] = "; ".join(f"{hook['hook_name']}: {hook['decision']}" for hook in row.hooks)
    data["approval_id"] = approval.get("id")
    data["approval_status"] = approval.get("status")
    data["decided_by"] = approval.get("decided_by")
    data["decided_at"] = approval.get("decided_at")
    return {column: data.get(column) for column in DISPATCH_EXPORT_COLUMNS}


_EXPORTS: Final = (
    _Export("executions", schemas.HistoryParams, EXPORT_COLUMNS, _execution_page, _record),
    _Export(
        "dispatches",
        schemas.DispatchListParams,
        DISPATCH_EXPORT_COLUMNS,
        _dispatch_page,
        _dispatch_record,
    ),
)


async def _rows(
    gateway: Gateway, who: Principal, export: _Export, params: Any, page: Any
) -> AsyncIterator[Any]:
    while True:
        for row in page.items:
            yield row
        if not page.next_cursor:
            return
        page = await export.page(gateway, who, params, page.next_cursor)


async def _csv(export: _Export, rows: AsyncIterator[Any]) -> AsyncIterator[bytes]:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(export.columns)
    count = 0
    async for row in rows:
        writer.writerow([_cell(value) for value in export.record(row).values()])
        count += 1
        if count % 100 == 0:
            yield buffer.getvalue().encode()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue().encode()


async def _replay_lines(export: _Export, rows: AsyncIterator[Any]) -> AsyncIterator[bytes]:
    """The replay export (:mod:`hookgate.replay.sources`): a record per line, the input only
    sealed."""
    lines: list[bytes] = []
    async for row in rows:
        lines.append(export_line(row))
        if len(lines) == 100:
            yield b"".join(lines)
            lines.clear()
    yield b"".join(lines)


_MEDIA: Final = {
    "csv": "text/csv; charset=utf-8",
    "json": "application/json",
    "jsonl": "application/jsonl",
}


async def _json(export: _Export, rows: AsyncIterator[Any]) -> AsyncIterator[bytes]:
    yield b"["
    first = True
    async for row in rows:
        yield (b"" if first else b",\n") + orjson.dumps(export.record(row))
        first = False
    yield b"]\n"


def _endpoint(export: _Export) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        return await _export(request, export)

    endpoint.__name__ = f"export_{export.name}"
    return endpoint


async def _export(request: Request, export: _Export) -> Response:
    gateway: Gateway = request.app.state.gateway
    try:
        who = await authenticate(request)
        require_role(who, "viewer", "exporting the audit log")
        raw = {key: request.query_params[key] for key in request.query_params}
        kind = raw.pop("format", "csv")
        if kind == "jsonl" and export.name == "dispatches":
            # The replay export carries the sealed input: useless without the key, still
            # for admins only.
            require_role(who, "admin", "exporting dispatches for replay (format=jsonl)")
        elif kind not in ("csv", "json"):
            raise ApiError("INVALID_REQUEST", f"format: csv or json, not {kind!r}")
        raw.pop("cursor", None)
        raw.pop("limit", None)
        params = parse_params(export.params, raw)
        # The first page is read before answering: bad filters, another tenant's scope or a
        # store error are a clean error response, not a cut-off download.
        first = await export.page(gateway, who, params, None)
    except ApiError as exc:
        return error_response(exc)
    except StoreError as exc:
        return error_response(ApiError("INVALID_REQUEST", str(exc)))
    rows = _rows(gateway, who, export, params, first)
    if kind == "jsonl":  # oldest first: replay runs the records in the order they happened
        rows = store_rows(gateway.store, who.caller, dispatch_query(who, params))
    body = {"csv": _csv, "json": _json, "jsonl": _replay_lines}[kind](export, rows)
    media = _MEDIA[kind]
    # The executions' file keeps its old name; dispatches get their own.
    filename = "hookgate-audit" if export.name == "executions" else "hookgate-dispatches"
    return StreamingResponse(
        body,
        media_type=media,
        headers={"Content-Disposition": f'attachment; filename="{filename}.{kind}"'},
    )


def export_routes() -> list[Route]:
    return [
        Route(f"{API_PREFIX}/{export.name}/export", _endpoint(export), methods=["GET"])
        for export in _EXPORTS
    ]
