"""N real ``hookgate serve`` replicas on one fresh PostgreSQL database (and optionally Redis).

The multi-replica tests start real gateway processes on free loopback ports, all sharing one
database made for the test (created and dropped here) and one ``HOOKGATE_SECRET_KEY``::

    with fresh_database() as url, ReplicaSet(tmp_path, url, count=3) as replicas:
        replicas.start_all()                   # launched at once, then waited for
        a, b, c = replicas
        a.rest("POST", "/api/v1/hooks", replicas.master_key, json={...})
        b.kill()                               # SIGKILL
        b.restart()                            # same port, same settings
        c.terminate()                          # SIGTERM, waits for the exit
        replicas.terminate_backends("hookgate-listen")   # cut every LISTEN connection
        replicas.allow_connections(False)      # and keep it from coming back

Each replica's stdout (the banner, the master key) and stderr (JSON log lines) go to files,
so a replica that died can still be read; :meth:`Replica.events` parses the log.
``RedisServer`` runs a private ``redis-server`` on a free port, for tests that stop it.
"""

from __future__ import annotations

import asyncio
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import orjson
from tests.conftest import require_service
from tests.server.gateway_process import HOOKGATE, REPO, free_port, gateway_env
from tests.store.conftest import PG_URL, need_postgres
from tests.support.waiting import wait_until

__all__ = [
    "REPLICA_SECRET_KEY",
    "RedisServer",
    "Replica",
    "ReplicaSet",
    "elapsed_until",
    "fresh_database",
    "run_sql",
]

#: The key every replica of a set shares (base64 of 32 bytes; for tests only).
REPLICA_SECRET_KEY = "aG9va2dhdGUtcmVwbGljYS10ZXN0cy1vbmx5LTMyLWI="
#: The banner line ``hookgate serve`` prints once it listens.
_LISTENING = "listening on"


def run_sql(database_url: str, sql: str, *args: Any) -> list[dict[str, Any]]:
    """Run one statement on ``database_url`` (a connection of its own) and return its rows."""

    async def run() -> list[dict[str, Any]]:
        conn = await asyncpg.connect(database_url)
        try:
            return [dict(row) for row in await conn.fetch(sql, *args)]
        finally:
            await conn.close()

    return asyncio.run(run())


@contextmanager
def fresh_database(prefix: str = "hg_replicas") -> Iterator[str]:
    """A new, empty PostgreSQL database for one test; dropped (connections forced out)
    afterwards. Skips locally without PostgreSQL, fails under CI=true."""
    need_postgres()
    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    run_sql(PG_URL, f'CREATE DATABASE "{name}"')
    try:
        yield PG_URL.rsplit("/", 1)[0] + "/" + name
    finally:
        run_sql(PG_URL, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@dataclass
class Replica:
    """One ``hookgate serve`` process of a :class:`ReplicaSet` (a new port on first launch,
    the same port on restart)."""

    name: str
    directory: Path
    database_url: str
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    port: int = 0
    proc: subprocess.Popen[bytes] | None = None
    #: How many times this replica was launched (log files are per launch).
    launches: int = 0

    # -- where it is ---------------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/ws"

    @property
    def out_path(self) -> Path:
        return self.directory / f"{self.name}-{self.launches}.out"

    @property
    def err_path(self) -> Path:
        return self.directory / f"{self.name}-{self.launches}.log"

    @property
    def pid(self) -> int:
        assert self.proc is not None, f"{self.name} was never launched"
        return self.proc.pid

    # -- lifecycle -----------------------------------------------------------------------

    def launch(self) -> Replica:
        """Start the process without waiting for it (see :meth:`wait_ready`)."""
        assert not self.alive, f"{self.name} is already running"
        if not self.port:
            self.port = free_port()
        self.launches += 1
        self.directory.mkdir(parents=True, exist_ok=True)
        command = [
            *HOOKGATE,
            "serve",
            "--port",
            str(self.port),
            "--database-url",
            self.database_url,
            "--log-format",
            "json",
            *self.args,
        ]
        # The child writes to its own copies of the files; ours close at once.
        with open(self.out_path, "wb") as out, open(self.err_path, "wb") as err:
            self.proc = subprocess.Popen(
                command, stdout=out, stderr=err, cwd=REPO, env=gateway_env(**self.env)
            )
        return self

    def wait_ready(self, timeout: float = 60.0) -> Replica:
        """Wait until the banner says it listens and ``/healthz`` answers 200; fail with the
        replica's output if it exits first."""

        def ready() -> bool:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise AssertionError(
                    f"{self.name} exited with {self.proc.returncode} before it was ready:\n"
                    f"{self.stdout()}\n{self.log()}"
                )
            if _LISTENING not in self.stdout():
                return False
            try:
                return httpx.get(self.url + "/healthz", timeout=1).status_code == 200
            except httpx.HTTPError:
                return False

        wait_until(ready, f"{self.name} ready", seconds=timeout, poll_s=0.05)
        return self

    def start(self, timeout: float = 60.0) -> Replica:
        return self.launch().wait_ready(timeout)

    def kill(self) -> int:
        """SIGKILL: no shutdown at all. Returns the exit status."""
        return self.signal(signal.SIGKILL)

    def terminate(self, timeout: float = 60.0) -> int:
        """SIGTERM, then wait for the process to exit (SIGKILL after ``timeout``)."""
        return self.signal(signal.SIGTERM, timeout)

    def signal(self, sig: int, timeout: float = 60.0) -> int:
        """Send ``sig`` and wait for the exit; returns the exit status."""
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()

    def restart(self, timeout: float = 60.0) -> Replica:
        """Stop (SIGTERM) if running, start again on the same port, wait until ready."""
        if self.alive:
            self.terminate()
        return self.start(timeout)

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    # -- what it said --------------------------------------------------------------------

    def stdout(self) -> str:
        """This launch's standard output (the banner, a first-start master key)."""
        return _read(self.out_path)

    def log(self) -> str:
        """This launch's standard error: JSON log lines (``--log-format json``)."""
        return _read(self.err_path)

    def events(self, key: str | None = None) -> list[dict[str, Any]]:
        """This launch's log records (every JSON line of stderr), or those with ``key``."""
        records = []
        for line in self.log().splitlines():
            if not line.startswith("{"):
                continue
            try:
                record = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if isinstance(record, dict) and (key is None or record.get("key") == key):
                records.append(record)
        return records

    @property
    def master_key(self) -> str | None:
        """The master key this launch created and printed, if it did."""
        for line in self.stdout().splitlines():
            if line.startswith("  hg-"):
                return line.strip()
        return None

    # -- talking to it -------------------------------------------------------------------

    def rest(self, method: str, path: str, key: str, **kwargs: Any) -> httpx.Response:
        kwargs.setdefault("headers", {"Authorization": f"Bearer {key}"})
        kwargs.setdefault("timeout", 30)
        return httpx.request(method, self.url + path, **kwargs)


def _read(path: Path) -> str:
    return path.read_text(errors="replace") if path.exists() else ""


class ReplicaSet:
    """``count`` replicas of one configuration on ``database_url`` (and ``redis_url``),
    sharing ``HOOKGATE_SECRET_KEY``. Use as a context manager: leaving it stops every
    replica still running (SIGTERM, then SIGKILL)."""

    def __init__(
        self,
        directory: Path,
        database_url: str,
        *,
        count: int = 3,
        redis_url: str | None = None,
        args: Sequence[str] = (),
        env: dict[str, str] | None = None,
        secret_key: str = REPLICA_SECRET_KEY,
    ) -> None:
        self.database_url = database_url
        self.redis_url = redis_url
        self.secret_key = secret_key
        shared_env = {"HOOKGATE_SECRET_KEY": secret_key, **(env or {})}
        extra = ("--redis-url", redis_url) if redis_url else ()
        self.replicas = [
            Replica(
                name=f"replica-{'abcdefghij'[index]}",
                directory=directory,
                database_url=database_url,
                args=(*args, *extra),
                env=dict(shared_env),
            )
            for index in range(count)
        ]

    def __enter__(self) -> ReplicaSet:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop_all()

    def __iter__(self) -> Iterator[Replica]:
        return iter(self.replicas)

    def __len__(self) -> int:
        return len(self.replicas)

    def __getitem__(self, index: int) -> Replica:
        return self.replicas[index]

    def start_all(self, timeout: float = 90.0) -> ReplicaSet:
        """Launch every replica at once (a concurrent first start), then wait for each."""
        for replica in self.replicas:
            replica.launch()
        for replica in self.replicas:
            replica.wait_ready(timeout)
        return self

    def stop_all(self) -> None:
        for replica in self.replicas:
            if replica.alive:
                assert replica.proc is not None
                replica.proc.send_signal(signal.SIGTERM)
        for replica in self.replicas:
            replica.terminate(timeout=30)

    @property
    def master_key(self) -> str:
        """The master key printed by the replica that created it (exactly one may)."""
        printed = [key for key in (r.master_key for r in self.replicas) if key]
        assert len(printed) == 1, f"expected one printed master key, got {len(printed)}"
        return printed[0]

    def create_key(self, tenant: str, role: str, *, master: bool = False) -> str:
        """A new API key, made with ``hookgate keys create`` on the shared database."""
        args = ["keys", "create", "--tenant", tenant, "--role", role]
        if master:
            args.append("--master")
        result = subprocess.run(
            [*HOOKGATE, *args, "--database-url", self.database_url],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
            cwd=REPO,
            env=gateway_env(HOOKGATE_SECRET_KEY=self.secret_key),
        )
        return result.stdout.strip().splitlines()[-1]

    def sql(self, sql: str, *args: Any) -> list[dict[str, Any]]:
        """Run one statement on the shared database."""
        return run_sql(self.database_url, sql, *args)

    @property
    def database_name(self) -> str:
        return self.database_url.rsplit("/", 1)[-1]

    def backends(self, application_name: str | None = None) -> list[dict[str, Any]]:
        """The server processes connected to the shared database (``pg_stat_activity``,
        read from the server's own database, so this works while the shared one refuses
        connections)."""
        rows = run_sql(
            PG_URL,
            "SELECT pid, application_name, state, query FROM pg_stat_activity "
            "WHERE datname = $1 AND pid <> pg_backend_pid()",
            self.database_name,
        )
        if application_name is not None:
            rows = [row for row in rows if row["application_name"] == application_name]
        return rows

    def terminate_backends(self, application_name: str) -> int:
        """``pg_terminate_backend`` every connection of the shared database with this
        ``application_name`` (``hookgate-listen``: every replica's LISTEN connection);
        returns how many were ended."""
        rows = run_sql(
            PG_URL,
            "SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity "
            "WHERE datname = $1 AND application_name = $2",
            self.database_name,
            application_name,
        )
        return sum(1 for row in rows if row["ended"])

    def allow_connections(self, allowed: bool) -> None:
        """Let the shared database accept new connections or refuse them (connections
        already open keep working): a way to keep a lost connection from coming back."""
        value = "true" if allowed else "false"
        run_sql(PG_URL, f'ALTER DATABASE "{self.database_name}" WITH ALLOW_CONNECTIONS {value}')


class RedisServer:
    """A private ``redis-server`` on a free loopback port (no persistence), which a test
    may stop and start again on the same port. Skips locally without redis-server, fails
    under CI=true."""

    def __init__(self, directory: Path) -> None:
        binary = shutil.which("redis-server")
        require_service("redis-server", binary is not None, "redis-server is not on PATH")
        assert binary is not None
        self.binary = binary
        self.directory = directory
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout: float = 20.0) -> RedisServer:
        self.directory.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(
            [
                self.binary,
                "--port", str(self.port),
                "--bind", "127.0.0.1",
                "--save", "",
                "--appendonly", "no",
                "--dir", str(self.directory),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_until(self.answers, "redis-server answers PING", seconds=timeout, poll_s=0.05)
        return self

    def answers(self) -> bool:
        import socket

        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def restart(self) -> RedisServer:
        self.stop()
        return self.start()

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def elapsed_until(condition: Any, seconds: float = 10.0, poll_s: float = 0.005) -> float:
    """Seconds until ``condition()`` held (fails after ``seconds``): propagation delays."""
    began = time.monotonic()
    wait_until(condition, "condition", seconds=seconds, poll_s=poll_s)
    return time.monotonic() - began

