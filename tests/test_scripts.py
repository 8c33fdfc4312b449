"""``scripts/run`` and ``scripts/bootstrap`` as a fresh clone meets them, run by the real shell
in a copy of the repository whose ``.venv`` programs are stand-ins (no network, no install):
the gateway is not started without the hook sandbox unless asked, and every install step
prints its line."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ("run", "bootstrap", "ensure-bubblewrap")


@pytest.fixture()
def clone(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    for name in SCRIPTS:
        shutil.copy2(ROOT / "scripts" / name, repo / "scripts" / name)
    (repo / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    venv = repo / ".venv" / "bin"
    venv.mkdir(parents=True)
    _stub(venv / "python", "exit 0")
    _stub(venv / "hookgate", 'echo "hookgate-called: $*"')
    return repo


def _stub(path: Path, body: str) -> None:
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)


def _tools(tmp_path: Path, *, bwrap: bool) -> str:
    """A PATH with the few programs the scripts use, and bubblewrap only when asked (and no
    apt-get, so nothing is installed)."""
    tools = tmp_path / ("tools-bwrap" if bwrap else "tools")
    if tools.exists():
        return str(tools)
    tools.mkdir()
    for name in ("sh", "dirname", "id", "touch", "mkdir", "chmod"):
        found = shutil.which(name)
        assert found, name
        (tools / name).symlink_to(found)
    if bwrap:
        _stub(tools / "bwrap", "exit 0")
    return str(tools)


def _run(repo: Path, path: str, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {"PATH": path, "HOME": str(repo), **env}
    return subprocess.run(
        ["sh", str(repo / "scripts" / "run"), *args], capture_output=True, text=True,
        timeout=60, env=environ, cwd=repo, executable=shutil.which("sh"),
    )


def _installed(repo: Path) -> None:
    stamp = repo / ".venv" / ".hookgate-installed"
    stamp.touch()
    later = (repo / "pyproject.toml").stat().st_mtime + 10
    os.utime(stamp, (later, later))


def test_run_refuses_to_serve_unsandboxed_unless_asked(clone: Path, tmp_path: Path) -> None:
    _installed(clone)
    refused = _run(clone, _tools(tmp_path, bwrap=False))
    assert refused.returncode == 1 and "hookgate-called" not in refused.stdout
    assert "--hook-sandbox off" in refused.stderr and "bubblewrap" in refused.stderr
    off = _run(clone, _tools(tmp_path, bwrap=False), "--hook-sandbox", "off", "--port", "0")
    assert off.returncode == 0
    assert "hookgate-called: serve --hook-sandbox off --port 0" in off.stdout
    by_env = _run(clone, _tools(tmp_path, bwrap=False), HOOKGATE_HOOK_SANDBOX="off")
    assert by_env.returncode == 0 and "hookgate-called: serve" in by_env.stdout


def test_run_serves_when_bubblewrap_is_there(clone: Path, tmp_path: Path) -> None:
    _installed(clone)
    served = _run(clone, _tools(tmp_path, bwrap=True), "--port", "0")
    assert served.returncode == 0, served.stderr
    assert "hookgate-called: serve --port 0" in served.stdout


def test_bootstrap_prints_one_line_per_step(clone: Path, tmp_path: Path) -> None:
    (clone / ".venv" / "bin" / "python").unlink()
    tools = _tools(tmp_path, bwrap=True)
    # A "python3" that makes a .venv of stand-ins, as `python3 -m venv .venv` would.
    _stub(Path(tools) / "python3",
          'mkdir -p .venv/bin; printf "#!/bin/sh\\nexit 0\\n" > .venv/bin/python; '
          "chmod +x .venv/bin/python")
    done = _run(clone, tools)
    assert done.returncode == 0, done.stderr
    steps = [line for line in done.stdout.splitlines() if line.startswith("== ")]
    assert [s.split(" ")[1] for s in steps] == ["creating", "upgrading", "installing",
                                                "installed:", "starting"]
