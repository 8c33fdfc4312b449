"""Run a real ``hookgate serve`` process on a free loopback port, for the gateway tests."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[2]
HOOKGATE = [str(Path(sys.executable).parent / "hookgate")]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def run_cli(
    *args: str, data_dir: Path | None, check: bool = True
) -> subprocess.CompletedProcess[str]:
    store = ["--data-dir", str(data_dir)] if data_dir is not None else []
    if data_dir is not None and not data_dir.exists():
        store.append("--init")  # a test's new store (a named data dir must exist otherwise)
    return subprocess.run(
        [*HOOKGATE, *args, *store],
        capture_output=True,
        text=True,
        timeout=60,
        check=check,
        cwd=REPO,
        env=gateway_env(),
    )


def gateway_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.pop("HOOKGATE_DATABASE_URL", None)
    env.update(extra)
    return env


@dataclass
class GatewayProcess:
    data_dir: Path
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    port: int = 0
    proc: subprocess.Popen[str] | None = None
    master_key: str | None = None
    stdout_lines: list[str] = field(default_factory=list)
    log_path: Path | None = None
    #: PostgreSQL instead of SQLite in ``data_dir`` (which then only holds the log).
    database_url: str | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/ws"

    def start(self, timeout: float = 20.0) -> GatewayProcess:
        self.port = free_port()
        self.data_dir.parent.mkdir(parents=True, exist_ok=True)
        self.log_path = self.data_dir.parent / f"{self.data_dir.name}-{self.port}.log"
        where = (
            ["--database-url", self.database_url]
            if self.database_url
            else ["--data-dir", str(self.data_dir)]
        )
        # The child writes to its own copy of the file; ours is closed once it started.
        with open(self.log_path, "w") as log:
            self.proc = subprocess.Popen(
                [
                    *HOOKGATE,
                    "serve",
                    "--port",
                    str(self.port),
                    *where,
                    "--log-format",
                    "json",
                    *self.args,
                ],
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
                cwd=REPO,
                env=gateway_env(**self.env),
            )
        try:
            return self._wait_until_healthy(timeout)
        except BaseException:
            self.stop()  # reaped here, not left running (or unwaited) for the GC to find
            raise

    def _wait_until_healthy(self, timeout: float) -> GatewayProcess:
        assert self.proc is not None and self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        # The banner: optional master key lines, then "listening on".
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError(f"hookgate serve exited early:\n{self.log()}")
            self.stdout_lines.append(line.rstrip("\n"))
            if line.startswith("  hg-"):
                self.master_key = line.strip()
            if "listening on" in line:
                break
        while time.monotonic() < deadline:
            try:
                if httpx.get(self.url + "/healthz", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"hookgate serve did not become healthy:\n{self.log()}")

    def log(self) -> str:
        return self.log_path.read_text() if self.log_path and self.log_path.exists() else ""

    def create_key(self, tenant: str, role: str, *, master: bool = False) -> str:
        args = ["keys", "create", "--tenant", tenant, "--role", role]
        if master:
            args.append("--master")
        if self.database_url:
            args += ["--database-url", self.database_url]
        result = run_cli(*args, data_dir=None if self.database_url else self.data_dir)
        return result.stdout.strip().splitlines()[-1]

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30.0) -> int:
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        return code

    def stopped_gracefully(self) -> bool:
        """uvicorn re-raises SIGTERM after its graceful shutdown, so the exit code says
        little; the gateway's own last log line says it closed everything."""
        log = self.log()
        return ('"key":"hookgate.gateway.stopped"' in log
                and '"key":"hookgate.gateway.close_step_timeout"' not in log)

    def headers(self, key: str | None = None) -> dict[str, str]:
        return {"Authorization": f"Bearer {key or self.master_key}"}

    def rest(self, method: str, path: str, key: str | None = None, **kwargs: Any) -> httpx.Response:
        kwargs.setdefault("headers", self.headers(key))
        return httpx.request(method, self.url + path, timeout=30, **kwargs)
