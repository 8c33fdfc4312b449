"""Attacks on the boundary layer: ``hookgate scan``, ``hookgate scrub`` and the pre-push guard
(the real CLI as a subprocess, real git repositories, real pushes to a local bare remote).

The attacks on ``content-guard`` (the scanner inside the agent loop) are in
``test_content_guard.py``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.conftest import require_service

BIN = str(Path(sys.executable).parent)  # where the `hookgate` entry point is installed
TOKEN = "gh" + "p_" + "Zq8Lm2Xv4Tp7Wn3Kc6Hb1Yf5Gd0Js8Ra2Ue4"
# Generous: the fixed scanner needs about a second for a megabyte on a busy machine; the
# quadratic one needed hours.
SLOW_S = 90


@pytest.fixture(autouse=True)
def _git() -> None:
    require_service("git", shutil.which("git") is not None, "the boundary attacks run real git")


def run(cwd: Path, *args: str, check: bool = True, stdin: bytes | None = None,
        timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}", "GIT_CONFIG_NOSYSTEM": "1",
           "HOME": str(cwd.parent)}
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, input=stdin,
                          timeout=timeout)
    result = subprocess.CompletedProcess(done.args, done.returncode,
                                         done.stdout.decode("utf-8", "replace"),
                                         done.stderr.decode("utf-8", "replace"))
    if check and done.returncode != 0:
        raise AssertionError(f"{args} failed: {result.stdout}{result.stderr}")
    return result


def commit(repo: Path, name: str, content: str | bytes, message: str,
           mode: int | None = None) -> None:
    path = repo / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    if mode is not None:
        path.chmod(mode)
    run(repo, "git", "add", name)
    run(repo, "git", "commit", "-q", "-m", message)


def head(repo: Path) -> str:
    return run(repo, "git", "rev-parse", "HEAD").stdout.strip()


def remote_head(repo: Path, branch: str = "main") -> str:
    done = run(repo, "git", "ls-remote", "origin", f"refs/heads/{branch}")
    return done.stdout.split()[0] if done.stdout else ""


def new_repo(tmp_path: Path) -> Path:
    remote = tmp_path / "remote.git"
    run(tmp_path, "git", "init", "-q", "--bare", "-b", "main", str(remote))
    work = tmp_path / "work"
    run(tmp_path, "git", "init", "-q", "-b", "main", str(work))
    run(work, "git", "config", "user.email", "dev@example.com")
    run(work, "git", "config", "user.name", "dev")
    run(work, "git", "remote", "add", "origin", str(remote))
    commit(work, "README.md", "hello\n", "start")
    return work


@pytest.fixture()
def guarded(tmp_path: Path) -> Iterator[Path]:
    """A repository with the pre-push guard installed and main pushed."""
    work = new_repo(tmp_path)
    run(work, "hookgate", "pre-push", "install")
    # The old layout asked for the tracked hook to be committed; do it when it exists, so the
    # attacks run against what each release tells its users to do.
    if (work / "hooks" / "pre-push").exists():
        run(work, "git", "add", "hooks/pre-push")
        run(work, "git", "commit", "-q", "-m", "pre-push guard")
    run(work, "git", "push", "-q", "origin", "main")
    yield work


def assert_push_blocked(repo: Path, *expected: str) -> str:
    before = remote_head(repo)
    done = run(repo, "git", "push", "origin", "main", check=False, timeout=SLOW_S)
    assert done.returncode != 0, f"the push went out:\n{done.stderr}"
    assert remote_head(repo) == before
    for text in expected:
        assert text in done.stderr, done.stderr
    assert TOKEN not in done.stderr
    return done.stderr


def hostile_branch(repo: Path, marker: Path) -> None:
    """A branch (a pull request fetched for review) that adds ``hooks/post-checkout``."""
    run(repo, "git", "checkout", "-q", "-b", "pr-123")
    commit(repo, "hooks/post-checkout", f"#!/bin/sh\necho owned > '{marker}'\n",
           "add a helper script", mode=0o755)
    run(repo, "git", "checkout", "-q", "main")


# -- pre-push install: no tracked folder runs code (item 7) ----------------------------------

def test_checkout_of_a_branch_does_not_run_its_hooks(guarded: Path, tmp_path: Path) -> None:
    """repo: a pull request adds `hooks/post-checkout`; `git checkout` of it must not run it
    (core.hooksPath pointed at the tracked `hooks/` folder)."""
    marker = tmp_path / "owned"
    hostile_branch(guarded, marker)
    run(guarded, "git", "checkout", "-q", "pr-123")
    run(guarded, "git", "checkout", "-q", "main")
    assert not marker.exists(), "git ran a hook that a branch brought in"


def test_install_migrates_the_old_tracked_hooks_path(tmp_path: Path) -> None:
    """repo: a clone set up the old way (core.hooksPath=hooks, tracked hooks/pre-push) stays
    exposed after reinstalling; install must take the tracked folder out of git's hands."""
    work = new_repo(tmp_path)
    commit(work, "hooks/pre-push", "#!/bin/sh\n# hookgate pre-push guard (old layout)\n"
           "exec hookgate pre-push run \"$@\"\n", "old guard", mode=0o755)
    run(work, "git", "config", "core.hooksPath", "hooks")
    run(work, "hookgate", "pre-push", "install")
    marker = tmp_path / "owned"
    hostile_branch(work, marker)
    run(work, "git", "checkout", "-q", "pr-123")
    assert not marker.exists(), "git still runs hooks from the work tree"
    assert run(work, "git", "config", "--get", "core.hooksPath", check=False).stdout == ""


# -- pre-push: nothing unscanned goes out (item 8) ----------------------------------------

def test_gitattributes_cannot_hide_a_file_from_the_guard(guarded: Path) -> None:
    """repo: a committed `.gitattributes` with `*.env -diff` makes git call the file binary;
    the token in it must still stop the push."""
    commit(guarded, ".gitattributes", "*.env -diff\n", "attributes")
    commit(guarded, "prod.env", f"GITHUB_TOKEN={TOKEN}\n", "env")
    assert_push_blocked(guarded, "prod.env:1:", "[github-token]")


def test_a_secret_added_only_by_a_merge_commit_is_scanned(guarded: Path) -> None:
    """repo: an "evil merge" adds a token that neither parent has; the merge commit must be
    scanned."""
    run(guarded, "git", "checkout", "-q", "-b", "side")
    commit(guarded, "side.txt", "side work\n", "side")
    run(guarded, "git", "checkout", "-q", "main")
    commit(guarded, "main.txt", "main work\n", "main")
    run(guarded, "git", "merge", "-q", "--no-commit", "side")
    (guarded / "main.txt").write_text(f"main work\ntoken {TOKEN}\n")
    run(guarded, "git", "add", "main.txt")
    run(guarded, "git", "commit", "-q", "-m", "merge side")
    assert_push_blocked(guarded, "main.txt:2:", "[github-token]")


def test_a_nul_byte_does_not_make_a_file_unscanned(guarded: Path) -> None:
    """repo: a NUL byte at the top makes the file "binary" and skipped; the token after it
    must still stop the push."""
    commit(guarded, "data.bin", b"\0\0header\n" + f"key={TOKEN}\n".encode(), "data")
    assert_push_blocked(guarded, "data.bin:2:", "[github-token]")


def test_additions_too_large_to_scan_block_the_push(guarded: Path) -> None:
    """repo: additions above the policy's size limit were skipped and the push went out;
    what cannot be scanned must not leave."""
    policy = "version: 1\nmax_file_bytes: 4000\nrules:\n  - {id: gh, detector: github-token}\n"
    commit(guarded, "guard.yaml", policy, "policy")
    run(guarded, "hookgate", "pre-push", "install", "--policy", "guard.yaml")
    if (guarded / "hooks" / "pre-push").exists():  # the old layout's tracked hook
        run(guarded, "git", "commit", "-q", "-am", "guard with policy")
    run(guarded, "git", "push", "-q", "origin", "main")
    commit(guarded, "big.txt", "filler line\n" * 500 + f"{TOKEN}\n", "big")
    assert_push_blocked(guarded, "big.txt", "could not be scanned")


def test_an_inline_allow_marker_in_a_commit_does_not_open_the_guard(guarded: Path) -> None:
    """repo: an agent that commits code writes `# hookgate:allow` after the token; the
    shipped policy must not take a marker in the scanned text as permission."""
    commit(guarded, "settings.py", f'TOKEN = "{TOKEN}"  # hookgate:allow\n', "settings")
    assert_push_blocked(guarded, "settings.py:1:", "[github-token]")


def test_a_branch_cannot_loosen_the_policy_that_scans_it(guarded: Path) -> None:
    """repo: a pull request edits the tracked policy file to accept every path and adds a
    token; the guard read the policy from the work tree, so pushing the branch let it out."""
    strict = "version: 1\nrules:\n  - {id: gh, detector: github-token}\n"
    commit(guarded, "guard.yaml", strict, "policy")
    run(guarded, "hookgate", "pre-push", "install", "--policy", "guard.yaml")
    if (guarded / "hooks" / "pre-push").exists():  # the old layout's tracked hook
        run(guarded, "git", "commit", "-q", "-am", "guard with policy")
    run(guarded, "git", "push", "-q", "origin", "main")
    commit(guarded, "guard.yaml", strict + "allow:\n  - path: '**'\n", "tidy the policy")
    commit(guarded, "deploy.sh", f"export GITHUB_TOKEN={TOKEN}\n", "deploy script")
    assert_push_blocked(guarded, "not the one 'hookgate pre-push install' approved")


# -- scan and scrub (items 4, 6, 9) -------------------------------------------------------

def test_git_range_cannot_be_an_option(tmp_path: Path) -> None:
    """repo: `scan --git-range=--output=FILE` was passed to git as an option: git wrote the
    history (token included) to FILE and the scan reported clean."""
    work = new_repo(tmp_path)
    commit(work, "a.txt", f"{TOKEN}\n", "leak")
    leaked = tmp_path / "history.txt"
    done = run(work, "hookgate", "scan", f"--git-range=--output={leaked}", check=False)
    assert done.returncode == 2, done.stdout + done.stderr
    assert not leaked.exists(), "git took the range for an option"
    for bad in ("--all", "-p", "^--output=x"):
        refused = run(work, "hookgate", "scan", "--git-range", bad, check=False)
        assert refused.returncode == 2 and "not a revision" in refused.stderr


def test_stdin_scan_ignores_an_inline_allow_marker(tmp_path: Path) -> None:
    """tool: output piped into `hookgate scan --stdin` ends its line with `hookgate:allow`;
    the token must still be reported."""
    done = run(tmp_path, "hookgate", "scan", "--stdin",
               stdin=f"export T={TOKEN}  # hookgate:allow\n".encode(), check=False)
    assert done.returncode == 1 and "[github-token]" in done.stdout, done.stdout


def test_scrub_ignores_an_inline_allow_marker(tmp_path: Path) -> None:
    """tool: a staged artifact written by an agent carries `hookgate:allow`; `scrub --apply`
    must still remove the token."""
    staging = tmp_path / "staging"
    staging.mkdir()
    artifact = staging / "report.md"
    artifact.write_text(f"deploy key {TOKEN} <!-- hookgate:allow -->\n")
    run(tmp_path, "hookgate", "scrub", "--apply", str(staging), check=False)
    assert TOKEN not in artifact.read_text()


def test_a_megabyte_line_of_findings_scans_in_linear_time(tmp_path: Path) -> None:
    """repo: a 1 MB line of private addresses made the scanner quadratic (hours), hanging
    `hookgate scan` and the pre-push guard."""
    line = " ".join(f"10.{i % 200}.{i % 250}.{i % 199 + 1}" for i in range(80_000))
    (tmp_path / "dump.txt").write_text(line[:1_000_000] + f" {TOKEN}\n")
    done = run(tmp_path, "hookgate", "scan", "--format", "json", "dump.txt", check=False,
               timeout=SLOW_S)
    assert done.returncode == 1
    assert '"rule": "github-token"' in done.stdout and TOKEN not in done.stdout


def test_a_file_of_private_key_headers_scans_in_linear_time(tmp_path: Path) -> None:
    """repo: 2 MB of `BEGIN PRIVATE KEY` lines with no END: after each header the block
    pattern looked for its END to the end of the file (quadratic: minutes per file)."""
    (tmp_path / "keys.pem").write_text("-----BEGIN RSA PRIVATE KEY-----\n" * 64_000)
    done = run(tmp_path, "hookgate", "scan", "--format", "json", "keys.pem", check=False,
               timeout=SLOW_S)
    assert done.returncode == 1 and done.stdout.count('"rule": "private-key"') == 64_000


def test_terminal_escapes_in_a_scanned_file_reach_the_terminal_as_text(tmp_path: Path) -> None:
    """repo: a file (and its name) carries terminal escape sequences next to a token; printed
    raw, they erase the report's lines ("cursor up, erase line") so the scan looks clean."""
    tree = tmp_path / "tree"
    tree.mkdir()
    hide = "\x1b[1A\x1b[2K\r"
    (tree / f"notes{hide}.txt").write_text(f"token {TOKEN} {hide}{hide}all clean\n")
    done = run(tmp_path, "hookgate", "scan", str(tree), check=False)
    assert done.returncode == 1 and "[github-token]" in done.stdout
    # click drops ESC sequences when stdout is a pipe, not on a terminal; the carriage
    # returns (which overwrite the line on any terminal) it always passes on.
    assert "\x1b" not in done.stdout + done.stderr and "\r" not in done.stdout, done.stdout
    assert "\\x1b[2K" in done.stdout and "\\x0d" in done.stdout
