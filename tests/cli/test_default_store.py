"""``hookgate keys create`` without ``--data-dir`` writes to the store ``hookgate serve`` uses
by default, and says which store that is (a key made elsewhere would be refused)."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import httpx
from tests.server.gateway_process import HOOKGATE, REPO, free_port, gateway_env


def _env(home: Path) -> dict[str, str]:
    env = gateway_env(XDG_DATA_HOME=str(home / "xdg"))
    env.pop("HOOKGATE_DATA_DIR", None)
    return env


def test_keys_create_uses_the_gateways_default_store_and_names_it(tmp_path: Path) -> None:
    env = _env(tmp_path)
    made = subprocess.run(
        [*HOOKGATE, "keys", "create", "--role", "viewer", "--name", "first-hour"],
        capture_output=True, text=True, timeout=60, cwd=REPO, env=env, check=True,
    )
    expected_db = tmp_path / "xdg" / "hookgate" / "hookgate.db"
    assert str(expected_db) in made.stderr
    key = made.stdout.strip().splitlines()[-1]

    port = free_port()
    server = subprocess.Popen(
        [*HOOKGATE, "serve", "--port", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=REPO, env=env,
    )
    try:
        deadline = time.monotonic() + 30
        answer = None
        while time.monotonic() < deadline:
            try:
                answer = httpx.get(
                    f"http://127.0.0.1:{port}/api/v1/hooks",
                    headers={"Authorization": f"Bearer {key}"}, timeout=2,
                )
                break
            except httpx.HTTPError:
                time.sleep(0.05)
        assert answer is not None, "the gateway did not start"
        assert answer.status_code == 200, answer.text
    finally:
        server.terminate()
        server.wait(timeout=30)
