"""The audit hash chain: each tenant's dispatch records, and each record's hook rows, linked
by SHA-256.

A record's place in its tenant's chain is ``chain_seq`` (1, 2, … in write order). Records
written since schema 17 are hashed in one step over their stored form:

    record_hash = SHA-256(prev_hash ":" chain_seq ":" content detail)

where ``content`` is a JSON array of the record's stored columns (:data:`CHAIN_COLUMNS`, the
JSON columns as their stored text: PostgreSQL keeps them as ``json``, which keeps the text
written, not ``jsonb``, which rewrites it; ``detail`` as its length), then its
``hook_rows``, and ``detail`` (the sealed bytes) follows the array (its length in the array
keeps the split unambiguous). ``hook_rows`` names the record's hook rows
(``hook_executions`` with its ``dispatch_id``) in write order (``seq``), each with the digest
of its stored columns (:func:`hook_row_digest`), so altering, removing, adding or reordering a
hook row changes what the record's hash covers. Records written under schemas 11 to 16 have no
``hook_rows`` (NULL) and keep their first form (:func:`legacy_record_hash`: the content
parsed and re-encoded with sorted keys, its own digest, then the link).

``prev_hash`` is the previous record's hash (:data:`GENESIS` before the first). A head row per
tenant checkpoints the last place and hash, and the base the chain starts from (place 0 and
:data:`GENESIS`, or the last record retention deleted).

A column added to :data:`CHAIN_COLUMNS` (or to the hook rows' columns) after schema 17 must
be NULL in the rows written before it: past the schema-17 columns a NULL is left out of the
hash (a set one is hashed with its name), so older records keep their hashes.

:class:`ChainWalker` checks one tenant's chain in order and stops at the first record that
was altered (its content no longer gives its hash, or a hook row no longer gives its digest),
removed (a place or a hook row is missing, or the head names more than there is) or
reordered (places out of write order, a link that does not follow, a record's hook rows out
of write order; a hook row moved to another record is missing from its own). A hook row that
names a record which does not list it was written after that record (the rerun of an edited
input answered after its dispatch was): it is outside the record's hash, counted apart. The
walk is linear in the number of records and keeps nothing but the last link.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

import orjson

__all__ = [
    "CHAIN_BASE",
    "CHAIN_COLUMNS",
    "GENESIS",
    "HASHED_SELECT",
    "HOOK_ROW_BASE",
    "ChainBreak",
    "ChainEntry",
    "ChainHead",
    "ChainReport",
    "ChainWalker",
    "TenantChain",
    "chain_content",
    "content_digest",
    "hook_row_digest",
    "hook_rows_text",
    "legacy_record_hash",
    "link_hash",
    "record_hash",
    "stored_values",
]

#: The hash "before" the first record of a chain.
GENESIS: Final = "0" * 64

#: The columns a record's hash covers, in this order (the ``dispatch_records`` insert order).
CHAIN_COLUMNS: Final = (
    "id, tenant_id, event, event_id, tool_name, agent_id, session_id, decision, reason, "
    "duration_ms, matched, hooks, approval_id, approval, refused, input_size, input_hash, "
    "input_summary, trace_id, detail, created_at"
)
_NAMES: Final = tuple(name.strip() for name in CHAIN_COLUMNS.split(","))
#: How many of :data:`CHAIN_COLUMNS` schema 17 had: every one is hashed; later ones only
#: when set (see the module's text).
CHAIN_BASE: Final = 21
_LEGACY: Final = _NAMES[:CHAIN_BASE]
_HOOKS: Final = _NAMES.index("hooks")
_APPROVAL: Final = _NAMES.index("approval")
_DETAIL: Final = _NAMES.index("detail")
#: How many of the hook rows' chained columns schema 17 had (see hook_row_digest).
HOOK_ROW_BASE: Final = 22

if len(_NAMES) != CHAIN_BASE:  # pragma: no cover - a guard for whoever adds a column
    raise ImportError(
        "a column past schema 17's is hashed only when set: ChainWalker.walk's fast path and "
        "HASHED_SELECT hash the stored row as it comes and must learn that first"
    )
#: What verification reads of a record after ``seq, chain_seq, prev_hash, record_hash``:
#: the items of the array its hash covers, in order (``detail`` as its length, then
#: ``hook_rows``), then ``detail`` itself, so the array is one slice of the row as it comes.
HASHED_SELECT: Final = (
    ", ".join("length(detail)" if name == "detail" else name for name in _NAMES)
    + ", hook_rows, detail"
)
_ROW_ID: Final = 4
_ROW_HOOKS: Final = _ROW_ID + CHAIN_BASE
_ROW_DETAIL: Final = _ROW_HOOKS + 1

BreakKind = Literal["altered", "removed", "reordered"]

_sha256 = hashlib.sha256
_dumps = orjson.dumps


def _parsed(value: Any) -> Any:
    # JSON columns come back as text (SQLite keeps ours; PostgreSQL's jsonb reformats it):
    # hashing the parsed value makes both backends agree.
    if isinstance(value, str | bytes):
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError:
            return json.loads(value)
    return value


def _dump(items: list[Any], option: int | None = None) -> bytes:
    try:
        return _dumps(items, option=option)
    except TypeError:  # integers past 64 bits: the standard library writes them
        return json.dumps(items, sort_keys=True, separators=(",", ":")).encode()


def content_digest(values: Sequence[Any]) -> bytes:
    """Schema 11's content digest (records without ``hook_rows``): SHA-256 of the record's
    first 21 columns, JSON parsed and re-encoded with sorted keys, ``detail`` as its hex
    SHA-256."""
    items = list(values[:CHAIN_BASE])
    items[_HOOKS] = _parsed(items[_HOOKS])
    if items[_APPROVAL] is not None:
        items[_APPROVAL] = _parsed(items[_APPROVAL])
    detail = items[_DETAIL]
    if detail is not None:
        items[_DETAIL] = hashlib.sha256(bytes(detail)).hexdigest()
    return hashlib.sha256(_dump(items, orjson.OPT_SORT_KEYS)).digest()


def link_hash(prev_hash: str, chain_seq: int, digest: bytes) -> str:
    """Schema 11's link: a content digest bound to its place and the previous hash."""
    return hashlib.sha256(b"%s:%d:%s" % (prev_hash.encode(), chain_seq, digest)).hexdigest()


def legacy_record_hash(prev_hash: str, chain_seq: int, values: Sequence[Any]) -> str:
    """The hash of a record written under schemas 11 to 16."""
    return link_hash(prev_hash, chain_seq, content_digest(values))


def _extras(names: Sequence[str], values: Sequence[Any], base: int) -> list[Any]:
    # Columns added after schema 17: set ones only, each with its name.
    extra: list[Any] = []
    for index in range(base, len(values)):
        if values[index] is not None:
            extra += (names[index], values[index])
    return extra


def chain_content(values: Sequence[Any], hook_rows: str) -> bytes:
    """What a record's hash covers after its place (``values`` in :data:`CHAIN_COLUMNS`
    order, JSON columns as their stored text): one JSON array, then ``detail``."""
    items = list(values)
    detail = items[_DETAIL]
    if detail is not None:
        detail = bytes(detail)
        items[_DETAIL] = len(detail)
    if len(items) > CHAIN_BASE:
        items[CHAIN_BASE:] = _extras(_NAMES, values, CHAIN_BASE)
    items.append(hook_rows)
    body = _dump(items)
    return body + detail if detail is not None else body


def record_hash(prev_hash: str, chain_seq: int, content: bytes) -> str:
    """A record's hash (schema 17 on): its content bound to its place and the previous hash."""
    return _sha256(b"%s:%d:%s" % (prev_hash.encode(), chain_seq, content)).hexdigest()


def hook_row_digest(values: Sequence[Any], names: Sequence[str], detail_index: int) -> str:
    """The digest of one hook row as stored: its chained columns (``names``; ``error_detail``
    at ``detail_index``, hashed after the array). Its place among its record's rows is
    where :func:`hook_rows_text` lists it."""
    items = list(values)
    detail = values[detail_index]
    if detail is not None:
        detail = bytes(detail)
        items[detail_index] = len(detail)
    if len(values) > HOOK_ROW_BASE:
        items[HOOK_ROW_BASE:] = _extras(names, values, HOOK_ROW_BASE)
    body = _dump(items)
    return _sha256(body + detail if detail is not None else body).hexdigest()


def hook_rows_text(rows: Sequence[tuple[str, str]]) -> str:
    """A record's ``hook_rows``: ``id=digest`` per hook row in write order, ``;`` between."""
    return ";".join(f"{row_id}={digest}" for row_id, digest in rows)


def stored_values(row: Sequence[Any]) -> tuple[Any, ...]:
    """A record's :data:`CHAIN_COLUMNS` values from a row read with :data:`HASHED_SELECT`
    (after its four link columns): ``detail`` back in its place."""
    content = row[_ROW_ID:_ROW_HOOKS]
    return (*content[:_DETAIL], row[_ROW_DETAIL], *content[_DETAIL + 1 :])


def _hook_map(text: str) -> dict[str, str]:
    return dict(part.split("=", 1) for part in text.split(";") if "=" in part) if text else {}


@dataclass(frozen=True, slots=True)
class ChainHead:
    """A tenant's checkpoint: the last place and hash written, and the chain's base."""

    tenant_id: str
    seq: int
    hash: str
    base_seq: int = 0
    base_hash: str = GENESIS

    def to_dict(self) -> dict[str, Any]:
        return {
            "tenant_id": self.tenant_id,
            "seq": self.seq,
            "hash": self.hash,
            "base_seq": self.base_seq,
            "base_hash": self.base_hash,
        }


@dataclass(frozen=True, slots=True)
class ChainEntry:
    """One place of a chain as stored: a record (``values`` set) or a gap retention left
    (``values`` None: only its links are kept)."""

    chain_seq: int
    prev_hash: str | None
    record_hash: str | None
    record_id: str | None = None
    #: The table's insertion order (``dispatch_records.seq``); 0 for a gap.
    write_seq: int = 0
    values: Sequence[Any] | None = None
    #: The record's stored ``hook_rows`` (None: written before schema 17, or a gap).
    hook_rows: str | None = None


@dataclass(frozen=True, slots=True)
class ChainBreak:
    """The first place where a chain does not hold, and why."""

    chain_seq: int
    record_id: str | None
    kind: BreakKind
    why: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "chain_seq": self.chain_seq,
            "record_id": self.record_id,
            "kind": self.kind,
            "why": self.why,
        }


@dataclass(frozen=True, slots=True)
class TenantChain:
    """The verdict on one tenant's chain."""

    tenant_id: str
    #: Records whose hashes were checked (gaps not counted).
    records: int
    head: ChainHead | None
    problem: ChainBreak | None = None
    #: Records written before the chain existed (schema 11), outside it.
    unchained: int = 0
    #: Hook rows whose digests were checked (those of records written since schema 17).
    hook_rows: int = 0
    #: Hook rows naming a record that does not list them (written after it: outside its hash).
    unlisted_hook_rows: int = 0

    @property
    def intact(self) -> bool:
        return self.problem is None

    def to_dict(self) -> dict[str, Any]:
        return {
            "tenant_id": self.tenant_id,
            "intact": self.intact,
            "records": self.records,
            "unchained": self.unchained,
            "hook_rows": self.hook_rows,
            "unlisted_hook_rows": self.unlisted_hook_rows,
            "head": self.head.to_dict() if self.head else None,
            "problem": self.problem.to_dict() if self.problem else None,
        }


@dataclass(frozen=True, slots=True)
class ChainReport:
    tenants: tuple[TenantChain, ...]
    elapsed_s: float = 0.0

    @property
    def intact(self) -> bool:
        return all(tenant.intact for tenant in self.tenants)

    @property
    def records(self) -> int:
        return sum(tenant.records for tenant in self.tenants)

    def to_dict(self) -> dict[str, Any]:
        return {
            "intact": self.intact,
            "records": self.records,
            "elapsed_s": round(self.elapsed_s, 6),
            "tenants": [tenant.to_dict() for tenant in self.tenants],
        }


class ChainWalker:
    """Check one tenant's chain entry by entry, in ``chain_seq`` order."""

    def __init__(self, head: ChainHead) -> None:
        self.head = head
        self.records = 0
        self.hook_rows = 0
        self.unlisted_hook_rows = 0
        self.problem: ChainBreak | None = None
        self._seq = head.base_seq
        self._hash = head.base_hash
        self._write_seq = 0
        self._last_id: str | None = None

    def walk(self, rows: Sequence[Sequence[Any]], found: Mapping[str, str]) -> bool:
        """Check a page of records in place order, without gaps: each row is ``seq,
        chain_seq, prev_hash, record_hash`` then :data:`HASHED_SELECT` (the hashed array's
        items, then ``detail``); ``found`` maps a record's id to its hook rows as they are
        now (:func:`hook_rows_text`). False once the chain is broken (stop walking)."""
        if self.problem is not None:
            return False
        place, prev, write_seq = self._seq, self._hash, self._write_seq
        prev_bytes = prev.encode()
        sha, dumps, get = _sha256, _dumps, found.get
        checked = hooks = 0
        last_id = self._last_id
        for row in rows:
            stored_hooks = row[_ROW_HOOKS]
            body = None
            if (
                stored_hooks is not None  # None: an older record, its own form (feed_record)
                and row[1] == place + 1
                and row[2] == prev
                and row[0] > write_seq
                and get(row[_ROW_ID], "") == stored_hooks
            ):
                detail = row[_ROW_DETAIL]
                try:
                    body = dumps(row[_ROW_ID:_ROW_DETAIL])
                    if detail is not None:
                        body += detail
                except TypeError:  # a wide integer, or a detail that is not bytes
                    body = None
            if body is None:
                self._seq, self._hash, self._write_seq, self._last_id = (
                    place,
                    prev,
                    write_seq,
                    last_id,
                )
                self.records += checked
                self.hook_rows += hooks
                checked = hooks = 0
                values = stored_values(row)
                if not self.feed_record(
                    row[1], row[2], row[3], values[0], row[0], values, stored_hooks, found
                ):
                    return False
                place, prev, write_seq, last_id = (
                    self._seq,
                    self._hash,
                    self._write_seq,
                    self._last_id,
                )
                prev_bytes = prev.encode()
                continue
            place += 1
            current = sha(b"%s:%d:%s" % (prev_bytes, place, body)).hexdigest()
            if current != row[3]:
                self._seq, self._hash, self._write_seq, self._last_id = (
                    place - 1,
                    prev,
                    write_seq,
                    last_id,
                )
                self.records += checked
                self.hook_rows += hooks
                return self._break(
                    place,
                    row[_ROW_ID],
                    "altered",
                    f"{_name(place, row[_ROW_ID])}: its content no longer gives its stored hash",
                )
            if stored_hooks:
                hooks += stored_hooks.count(";") + 1
            checked += 1
            prev, prev_bytes, write_seq, last_id = current, current.encode(), row[0], row[_ROW_ID]
        self._seq, self._hash, self._write_seq, self._last_id = place, prev, write_seq, last_id
        self.records += checked
        self.hook_rows += hooks
        return True

    def feed(self, entry: ChainEntry, found: Mapping[str, str] | None = None) -> bool:
        """Check the next entry; False once the chain is broken (stop feeding)."""
        return self.feed_record(
            entry.chain_seq,
            entry.prev_hash,
            entry.record_hash,
            entry.record_id,
            entry.write_seq,
            entry.values,
            entry.hook_rows,
            found or {},
        )

    def feed_record(
        self,
        place: int,
        prev_hash: str | None,
        stored_hash: str | None,
        record_id: str | None,
        write_seq: int,
        values: Sequence[Any] | None,
        hook_rows: str | None = None,
        found: Mapping[str, str] | None = None,
    ) -> bool:
        """:meth:`feed` without building a :class:`ChainEntry`."""
        if self.problem is not None:
            return False
        if place != self._seq + 1:
            return self._out_of_place(place, record_id)
        if prev_hash != self._hash:
            before = f"record {self._last_id}" if self._last_id else f"place {self._seq}"
            return self._break(
                place,
                record_id,
                "reordered",
                f"{_name(place, record_id)} does not follow {before}: the record before it "
                "was altered and rehashed, or records were removed or reordered",
            )
        if values is not None:
            if write_seq <= self._write_seq:
                return self._break(
                    place,
                    record_id,
                    "reordered",
                    f"{_name(place, record_id)} was written before {self._last_id} but sits "
                    "after it in the chain",
                )
            try:
                expected: str | None = (
                    legacy_record_hash(prev_hash, place, values)
                    if hook_rows is None
                    else record_hash(prev_hash, place, chain_content(values, hook_rows))
                )
            except TypeError:  # a column rewritten with a type it never holds (text detail)
                expected = None
            if stored_hash != expected:
                return self._break(
                    place,
                    record_id,
                    "altered",
                    f"{_name(place, record_id)}: its content no longer gives its stored hash",
                )
            if hook_rows is not None:
                now = (found or {}).get(str(record_id), "")
                listed = _hook_map(hook_rows)
                if now != hook_rows:
                    present = _hook_map(now)
                    kept = {row: digest for row, digest in present.items() if row in listed}
                    if hook_rows_text(list(kept.items())) != hook_rows:
                        return self._hook_break(place, str(record_id), listed, kept)
                    # Rows written after their record (an edited input's rerun answered
                    # after the dispatch was) are outside its hash: counted, not checked.
                    self.unlisted_hook_rows += len(present) - len(kept)
                self.hook_rows += len(listed)
            self.records += 1
            self._write_seq = write_seq
            self._last_id = record_id
        self._seq = place
        self._hash = stored_hash or ""
        return True

    def _hook_break(
        self, place: int, record_id: str, listed: Mapping[str, str], present: Mapping[str, str]
    ) -> bool:
        """Name the first hook row a record lists that is not as it says."""
        record = f"record {record_id} (place {place})"
        for row_id, digest in listed.items():
            if row_id not in present:
                return self._break(
                    place, record_id, "removed", f"hook row {row_id} of {record} is missing"
                )
            if present[row_id] != digest:
                return self._break(
                    place,
                    record_id,
                    "altered",
                    f"hook row {row_id} of {record}: its content no longer gives its digest",
                )
        return self._break(
            place,
            record_id,
            "reordered",
            f"the hook rows of {record} are not in the order they were written",
        )

    def _out_of_place(self, place: int, record_id: str | None) -> bool:
        name = _name(place, record_id)
        if place <= self._seq:
            return self._break(
                place,
                record_id,
                "reordered",
                f"{name} repeats place {place} (the chain is past {self._seq})",
            )
        missing = f"{self._seq + 1}" if place == self._seq + 2 else f"{self._seq + 1}–{place - 1}"
        return self._break(
            place,
            record_id,
            "removed",
            f"place {missing} is missing before {name}: record(s) removed",
        )

    def finish(self) -> ChainBreak | None:
        """After the last entry: the chain must end exactly at the head."""
        if self.problem is None:
            if self._seq > self.head.seq:
                self.problem = ChainBreak(
                    self.head.seq + 1,
                    None,
                    "altered",
                    f"the head says the chain ends at place {self.head.seq} but records go on "
                    f"to {self._seq}: the head was rewritten",
                )
            elif self._seq < self.head.seq:
                missing = (
                    f"{self._seq + 1}"
                    if self._seq + 1 == self.head.seq
                    else f"{self._seq + 1}–{self.head.seq}"
                )
                self.problem = ChainBreak(
                    self._seq + 1,
                    None,
                    "removed",
                    f"place {missing} is missing at the end: the head says the chain reaches "
                    f"{self.head.seq}",
                )
            elif self._hash != self.head.hash:
                self.problem = ChainBreak(
                    self._seq,
                    self._last_id,
                    "altered",
                    f"the last record ({self._last_id or f'place {self._seq}'}) does not end "
                    "in the head's hash: it was altered and rehashed",
                )
        return self.problem

    def _break(self, place: int, record_id: str | None, kind: BreakKind, why: str) -> bool:
        self.problem = ChainBreak(place, record_id, kind, why)
        return False


def _name(place: int, record_id: str | None) -> str:
    if record_id is None:
        return f"place {place} (a record retention removed)"
    return f"record {record_id} (place {place})"
