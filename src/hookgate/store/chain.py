"""The audit hash chain: each tenant's dispatch records, linked by SHA-256.

A record's place in its tenant's chain is ``chain_seq`` (1, 2, … in write order). Its hash is

    record_hash = SHA-256(prev_hash ":" chain_seq ":" SHA-256(canonical content))

where the canonical content is the record's stored columns (:data:`CHAIN_COLUMNS`, JSON
columns parsed and written back with sorted keys, the sealed ``detail`` as its SHA-256) and
``prev_hash`` is the previous record's hash (:data:`GENESIS` before the first). A head row per
tenant checkpoints the last place and hash, and the base the chain starts from (place 0 and
:data:`GENESIS`, or the last record retention deleted).

:class:`ChainWalker` checks one tenant's chain in order and stops at the first record that
was altered (its content no longer gives its hash), removed (a place is missing, or the head
names more than there is) or reordered (places out of write order, or a link that does not
follow). The walk is linear in the number of records and keeps nothing but the last link.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

import orjson

__all__ = [
    "CHAIN_COLUMNS",
    "GENESIS",
    "ChainBreak",
    "ChainEntry",
    "ChainHead",
    "ChainReport",
    "ChainWalker",
    "TenantChain",
    "content_digest",
    "link_hash",
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
_HOOKS: Final = _NAMES.index("hooks")
_APPROVAL: Final = _NAMES.index("approval")
_DETAIL: Final = _NAMES.index("detail")

BreakKind = Literal["altered", "removed", "reordered"]


def _parsed(value: Any) -> Any:
    # JSON columns come back as text (SQLite keeps ours; PostgreSQL's jsonb reformats it):
    # hashing the parsed value makes both backends agree.
    if isinstance(value, str | bytes):
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError:
            return json.loads(value)
    return value


def _dump(items: list[Any]) -> bytes:
    try:
        return orjson.dumps(items, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # integers past 64 bits: the standard library writes them
        return json.dumps(items, sort_keys=True, separators=(",", ":")).encode()


def content_digest(values: Sequence[Any]) -> bytes:
    """SHA-256 of a record's canonical content; ``values`` in :data:`CHAIN_COLUMNS` order."""
    items = list(values)
    items[_HOOKS] = _parsed(items[_HOOKS])
    if items[_APPROVAL] is not None:
        items[_APPROVAL] = _parsed(items[_APPROVAL])
    detail = items[_DETAIL]
    if detail is not None:
        items[_DETAIL] = hashlib.sha256(bytes(detail)).hexdigest()
    return hashlib.sha256(_dump(items)).digest()


def link_hash(prev_hash: str, chain_seq: int, digest: bytes) -> str:
    """A record's hash: its content digest bound to its place and the previous hash."""
    return hashlib.sha256(b"%s:%d:%s" % (prev_hash.encode(), chain_seq, digest)).hexdigest()


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

    @property
    def intact(self) -> bool:
        return self.problem is None

    def to_dict(self) -> dict[str, Any]:
        return {
            "tenant_id": self.tenant_id,
            "intact": self.intact,
            "records": self.records,
            "unchained": self.unchained,
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
        self.problem: ChainBreak | None = None
        self._seq = head.base_seq
        self._hash = head.base_hash
        self._write_seq = 0
        self._last_id: str | None = None

    def feed(self, entry: ChainEntry) -> bool:
        """Check the next entry; False once the chain is broken (stop feeding)."""
        return self.feed_record(
            entry.chain_seq,
            entry.prev_hash,
            entry.record_hash,
            entry.record_id,
            entry.write_seq,
            entry.values,
        )

    def feed_record(
        self,
        place: int,
        prev_hash: str | None,
        record_hash: str | None,
        record_id: str | None,
        write_seq: int,
        values: Sequence[Any] | None,
    ) -> bool:
        """:meth:`feed` without building a :class:`ChainEntry` (the verify loop's path)."""
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
            if record_hash != link_hash(prev_hash, place, content_digest(values)):
                return self._break(
                    place,
                    record_id,
                    "altered",
                    f"{_name(place, record_id)}: its content no longer gives its stored hash",
                )
            self.records += 1
            self._write_seq = write_seq
            self._last_id = record_id
        self._seq = place
        self._hash = record_hash or ""
        return True

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
