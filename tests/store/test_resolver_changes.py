"""The resolver follows hook changes one hook at a time; the PostgreSQL LISTEN connection
comes back after it was cut, with a resync of everything; an approval waiter never depends on
a notification."""

from __future__ import annotations

import asyncio
import time

import asyncpg
import pytest
from tests.store.conftest import PG_URL, StoreFactory, hook
from tests.support.waiting import wait_until_async

from hookgate.server.approvals import GatewayApprovals
from hookgate.store import Caller
from hookgate.store.approvals import ApprovalRow, ApprovalStoreMixin
from hookgate.store.base import Store
from hookgate.store.postgres import PostgresStore
from hookgate.store.resolver import StoreHookSource

A = Caller.for_tenant("tenant-a")


def _names(source: StoreHookSource, event: str = "pre_tool_use") -> list[str]:
    return [h.definition.name or "" for h in source.resolve(event, "tenant-a", None)]


async def test_each_change_reads_only_its_hook(store: Store) -> None:
    source = StoreHookSource(store, poll_interval_s=0)
    await source.start()
    try:
        created = [await store.create_hook(A, hook(name=f"h{i}", priority=i)) for i in range(20)]
        await source.catch_up()
        assert _names(source) == [f"h{i}" for i in reversed(range(20))]
        first, last = created[0].id, created[-1].id
        await store.update_hook(A, first, {"priority": 99})  # reordered
        await source.catch_up()
        assert _names(source)[0] == "h0"
        await store.update_hook(A, last, {"event": "post_tool_use"})  # moved to another event
        await source.catch_up()
        assert "h19" not in _names(source) and _names(source, "post_tool_use") == ["h19"]
        await store.set_enabled(A, last, False)
        await source.catch_up()
        assert not source.has_event("post_tool_use")
        await store.set_enabled(A, last, True)
        await store.delete_hook(A, first)
        await source.catch_up()
        assert "h0" not in _names(source) and _names(source, "post_tool_use") == ["h19"]
        # 25 changes, 25 row reads, and the one full load at start.
        assert source.full_reloads == 1
        assert source.version == await store.hooks_version()
    finally:
        await source.close()


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
async def test_listen_comes_back_after_pg_terminate_backend_and_resyncs(
    make_store: StoreFactory, backend: str
) -> None:
    replica = await make_store()
    other = await make_store()  # another replica
    assert isinstance(replica, PostgresStore)
    source = StoreHookSource(replica, poll_interval_s=0)  # no polling: only LISTEN and resync
    await source.start()
    revoked: list[str] = []
    resyncs: list[bool] = []
    replica.add_key_listener(revoked.append)
    replica.add_resync_listener(lambda: resyncs.append(True))
    try:
        notifications = replica.notifications
        assert notifications is not None and replica.listening
        pid = notifications.server_pid
        admin = await asyncpg.connect(PG_URL)
        try:
            assert await admin.fetchval("SELECT pg_terminate_backend($1)", pid)
        finally:
            await admin.close()
        # A change made now may land while the connection is down: the resync covers it.
        await other.create_hook(A, hook(name="while-down"))
        await wait_until_async(lambda: notifications.reconnects == 1, "LISTEN re-made", 10)
        await wait_until_async(lambda: _names(source) == ["while-down"], "hook served", 10)
        assert resyncs == [True] and source.full_reloads >= 2
        assert replica.listening
        # Listening again: a key revocation and a hook change by the other replica arrive.
        key, _token = await other.create_api_key(
            Caller.master_scope(), tenant_id="tenant-a", role="viewer"
        )
        await other.revoke_api_key(Caller.master_scope(), key.id)
        await wait_until_async(lambda: revoked == [key.id], "revocation heard", 10)
        full = source.full_reloads
        await other.create_hook(A, hook(name="after"))
        await wait_until_async(lambda: "after" in _names(source), "change heard", 10)
        assert source.full_reloads == full  # read one hook, not everything
    finally:
        await source.close()


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
async def test_an_approval_decided_by_another_process_reaches_the_waiter_unannounced(
    make_store: StoreFactory, backend: str
) -> None:
    """Two processes on one SQLite file hear nothing from each other: the waiter's check of
    the row (every 0.5 s) still answers it within a second."""
    waiting, deciding = await make_store(), await make_store()
    assert isinstance(waiting, ApprovalStoreMixin) and isinstance(deciding, ApprovalStoreMixin)
    gateway = GatewayApprovals(waiting)
    await gateway.start()
    try:
        now = time.time()
        row = ApprovalRow(id="apr_elsewhere", tenant_id="tenant-a", event="pre_tool_use",
                          created_at=now, expires_at=now + 600)
        await waiting.create_approval(row)
        waiter = asyncio.create_task(gateway.wait(row.id, None))
        await wait_until_async(lambda: row.id in gateway._waiters, "the waiter waits", 5)
        decided_at = time.monotonic()
        await deciding.decide_approval(Caller.master_scope(), row.id, status="approved",
                                       decided_by="someone", now=time.time())
        decision = await asyncio.wait_for(waiter, 5)
        assert decision.status == "approved" and decision.decided_by == "someone"
        assert time.monotonic() - decided_at < 1.0
    finally:
        await gateway.close()


class _FreezingProxy:
    """A TCP proxy to PostgreSQL that can stop forwarding on the connections that sent
    ``LISTEN`` without closing them: a network that drops packets silently."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.frozen = asyncio.Event()
        self.port = 0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        listens = [False]  # this connection sent LISTEN: it freezes with the network

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter, out: bool) -> None:
            try:
                while data := await src.read(65536):
                    # (pool connections send "UNLISTEN *" when released: not these)
                    if out and b'LISTEN "hookgate_hooks"' in data:
                        listens[0] = True
                    if listens[0] and self.frozen.is_set():
                        await asyncio.Event().wait()  # never forwarded, never closed
                    dst.write(data)
                    await dst.drain()
            finally:
                dst.close()

        tasks = [asyncio.create_task(pipe(reader, up_writer, True)),
                 asyncio.create_task(pipe(up_reader, writer, False))]
        self._tasks.update(tasks)
        await asyncio.gather(*tasks, return_exceptions=True)


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
async def test_a_silent_network_is_noticed_by_the_check_and_listen_is_made_again(
    make_store: StoreFactory, backend: str
) -> None:
    other = await make_store()  # creates the schema; writes go straight to the server
    assert isinstance(other, PostgresStore) and other.schema is not None
    proxy = _FreezingProxy(5432)
    await proxy.start()
    via_proxy = PG_URL.replace("127.0.0.1:5432", f"127.0.0.1:{proxy.port}")
    replica = PostgresStore(via_proxy, schema=other.schema, listen_check_s=0.3)
    await replica.open()
    source = StoreHookSource(replica, poll_interval_s=0)
    try:
        await source.start()
        notifications = replica.notifications
        assert notifications is not None
        proxy.frozen.set()  # the LISTEN connection stays open but hears nothing
        await other.create_hook(A, hook(name="during-the-blip"))
        await wait_until_async(lambda: not notifications.up, "the check noticed", 10)
        proxy.frozen.clear()  # the network is back for new connections
        await wait_until_async(lambda: notifications.reconnects == 1, "LISTEN re-made", 15)
        await wait_until_async(lambda: _names(source) == ["during-the-blip"], "resynced", 10)
    finally:
        await source.close()
        await replica.close()
        await proxy.close()
