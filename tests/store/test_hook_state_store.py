"""Hook state in the gateway's store (migration 0005), on SQLite and PostgreSQL."""

from __future__ import annotations

from tests.store.conftest import StoreFactory

from hookgate.state.model import ScopeKey, StateChange
from hookgate.state.shared import SqlStateStore
from hookgate.store.sql import SqlStore


class Clock:
    def __init__(self) -> None:
        self.now = 2_000_000.0

    def __call__(self) -> float:
        return self.now


A = ScopeKey("tenant-a", "memo", "session", "s1")
B = ScopeKey("tenant-b", "memo", "session", "s1")


async def test_set_read_delete_and_expire(make_store: StoreFactory) -> None:
    store = await make_store()
    assert isinstance(store, SqlStore)
    clock = Clock()
    state = SqlStateStore(store, clock=clock)
    await state.apply([StateChange(A, "note", {"v": [1, "two"]}, 60),
                       StateChange(A, "short", "x", 5)])
    assert (await state.load([A]))[A] == {"note": {"v": [1, "two"]}, "short": "x"}
    clock.now += 10
    assert (await state.load([A]))[A] == {"note": {"v": [1, "two"]}}
    await state.apply([StateChange(A, "note", "replaced", 60), StateChange(A, "gone", None, 60)])
    assert (await state.load([A]))[A] == {"note": "replaced"}
    await state.apply([StateChange(A, "note", None, 60)])
    assert (await state.load([A]))[A] == {}
    await state.apply([StateChange(A, "later", 1, 30)])
    clock.now += 31
    assert await state.prune() == 1


async def test_tenants_are_apart_and_a_second_store_object_sees_the_same_rows(
    make_store: StoreFactory,
) -> None:
    first, second = await make_store(), await make_store()
    assert isinstance(first, SqlStore) and isinstance(second, SqlStore)
    await SqlStateStore(first).apply([StateChange(A, "k", "for a", 60)])
    other = SqlStateStore(second)
    assert await other.load([A, B]) == {A: {"k": "for a"}, B: {}}
