"""Helpers for the web panel's browser tests: a real ``hookgate serve`` and a Chromium.

:class:`ServedGateway` runs the gateway as a subprocess on a free loopback port with its own
data directory, creates API keys with ``hookgate keys create`` and talks REST for checks.
:func:`find_chromium` locates Debian's Chromium (``scripts/ensure-chromium`` installs it);
Playwright drives it, never a browser of its own.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[2]
SCREENSHOTS = REPO / "artifacts" / "screenshots"
DOC_SCREENSHOTS = REPO / "docs" / "screenshots"
#: Chromium flags for a headless run on a loopback-only machine.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
_LISTENING = re.compile(r"listening on (http://127\.0\.0\.1:\d+)")
#: A fixed test-only AES-256 key (base64 of 32 bytes), so sealed headers can be opened.
TEST_SECRET_KEY = "aG9va2dhdGUtcGFuZWwtdGVzdHMtb25seS0zMi1ieXQ="


def find_chromium() -> str | None:
    for candidate in (os.environ.get("HOOKGATE_CHROMIUM"), "/usr/bin/chromium"):
        if candidate and Path(candidate).exists():
            return candidate
    return shutil.which("chromium") or shutil.which("chromium-browser")


def hookgate_cli() -> list[str]:
    script = Path(sys.executable).parent / "hookgate"
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "from hookgate.cli import main; main()"]


class ServedGateway:
    """``hookgate serve`` in a subprocess, ready once it prints its address."""

    def __init__(self, data_dir: Path, *, edition: str = "lite", audit_mode: str = "sync") -> None:
        self.data_dir = data_dir
        self.edition = edition
        # sync: a dispatch answers once its history row is committed, so a page reload
        # right after it must show the row.
        self.audit_mode = audit_mode
        self.url = ""
        self.output: list[str] = []
        self.env = {
            **os.environ,
            "HOOKGATE_SSRF_ALLOWLIST": "127.0.0.1",  # the test webhook listens on loopback
            "HOOKGATE_SECRET_KEY": TEST_SECRET_KEY,
            "PYTHONUNBUFFERED": "1",
        }
        self.env.pop("HOOKGATE_DATABASE_URL", None)
        self._proc: subprocess.Popen[str] | None = None

    def start(self, timeout_s: float = 30.0) -> ServedGateway:
        cmd = [
            *hookgate_cli(),
            "serve",
            "--port",
            "0",
            "--data-dir",
            str(self.data_dir),
            "--edition",
            self.edition,
            "--audit-mode",
            self.audit_mode,
        ]
        self._proc = subprocess.Popen(
            cmd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=self.env,
            start_new_session=True,
        )
        ready = threading.Event()

        def pump() -> None:
            assert self._proc is not None and self._proc.stdout is not None
            for line in self._proc.stdout:
                self.output.append(line.rstrip("\n"))
                match = _LISTENING.search(line)
                if match and not self.url:
                    self.url = match.group(1)
                    ready.set()
            ready.set()

        threading.Thread(target=pump, daemon=True).start()
        ready.wait(timeout_s)
        if not self.url:
            self.stop()
            raise RuntimeError("hookgate serve did not start:\n" + "\n".join(self.output))
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                if httpx.get(self.url + "/healthz", timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise RuntimeError("hookgate serve never answered /healthz:\n" + "\n".join(self.output))

    def stop(self) -> None:
        proc = self._proc
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)

    def create_key(self, *, tenant: str, role: str, master: bool = False, name: str = "") -> str:
        cmd = [*hookgate_cli(), "keys", "create", "--data-dir", str(self.data_dir)]
        cmd += ["--tenant", tenant, "--role", role, "--name", name or f"{role}@{tenant}"]
        if master:
            cmd.append("--master")
        done = subprocess.run(cmd, capture_output=True, text=True, env=self.env, timeout=60)
        if done.returncode != 0:
            raise RuntimeError(f"hookgate keys create failed: {done.stderr or done.stdout}")
        return done.stdout.strip().splitlines()[-1].strip()

    def rest(self, method: str, path: str, key: str, **kwargs: Any) -> Any:
        response = httpx.request(
            method,
            f"{self.url}/api/v1{path}",
            headers={"Authorization": f"Bearer {key}"},
            timeout=30,
            **kwargs,
        )
        if response.status_code >= 400:
            raise AssertionError(f"{method} {path} -> {response.status_code}: {response.text}")
        return response.json()
