"""The pre-push guard with real git repositories and real pushes to a local bare remote."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tests.conftest import require_service

BIN = str(Path(sys.executable).parent)  # where the `hookgate` entry point is installed
SLACK = "xo" + "xb-" + "2048123456-4096123456789-Ab3Cd5Ef7Gh9Ij1Kl3Mn5Op7"


@pytest.fixture(autouse=True)
def _git() -> None:
    require_service("git", shutil.which("git") is not None, "the pre-push tests run real git")


def run(cwd: Path, *args: str, path: str | None = None,
        check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": path if path is not None else f"{BIN}:{os.environ['PATH']}",
           "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(cwd.parent)}
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=60)
    if check and done.returncode != 0:
        raise AssertionError(f"{args} failed: {done.stdout}{done.stderr}")
    return done


def commit(repo: Path, name: str, text: str, message: str) -> None:
    (repo / name).parent.mkdir(parents=True, exist_ok=True)
    (repo / name).write_text(text)
    run(repo, "git", "add", name)
    run(repo, "git", "commit", "-q", "-m", message)


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    remote = tmp_path / "remote.git"
    run(tmp_path, "git", "init", "-q", "--bare", "-b", "main", str(remote))
    work = tmp_path / "work"
    run(tmp_path, "git", "init", "-q", "-b", "main", str(work))
    run(work, "git", "config", "user.email", "dev@example.com")
    run(work, "git", "config", "user.name", "dev")
    run(work, "git", "remote", "add", "origin", str(remote))
    commit(work, "README.md", "hello\n", "start")
    done = run(work, "hookgate", "pre-push", "install")
    assert "git push --no-verify" in done.stdout
    run(work, "git", "push", "-q", "origin", "main")
    return work


def remote_head(repo: Path, branch: str = "main") -> str:
    done = run(repo, "git", "ls-remote", "origin", f"refs/heads/{branch}")
    return done.stdout.split()[0] if done.stdout else ""


def test_install_writes_the_hook_into_the_repositorys_own_hooks_directory(repo: Path) -> None:
    # Issue 24: the hook no longer lives in a tracked folder with core.hooksPath on it.
    hook = repo / ".git" / "hooks" / "pre-push"
    assert os.access(hook, os.X_OK)
    assert run(repo, "git", "config", "--get", "core.hooksPath", check=False).stdout == ""
    assert "pre-push" not in run(repo, "git", "ls-files").stdout
    assert "git push --no-verify" in hook.read_text()


def test_uninstall_removes_the_hook_and_restores_the_one_it_replaced(repo: Path) -> None:
    hook = repo / ".git" / "hooks" / "pre-push"
    run(repo, "hookgate", "pre-push", "uninstall")
    assert not hook.exists()
    hook.write_text("#!/bin/sh\nexit 0\n")
    refused = run(repo, "hookgate", "pre-push", "install", check=False)
    assert refused.returncode == 1 and "was not written by hookgate" in refused.stderr
    run(repo, "hookgate", "pre-push", "install", "--force")
    assert "hookgate pre-push guard" in hook.read_text()
    run(repo, "hookgate", "pre-push", "uninstall")
    assert hook.read_text() == "#!/bin/sh\nexit 0\n"


def test_clean_push_goes_through(repo: Path) -> None:
    commit(repo, "src/app.py", "print('ok')\n", "clean")
    run(repo, "git", "push", "-q", "origin", "main")
    assert remote_head(repo) == run(repo, "git", "rev-parse", "HEAD").stdout.strip()


def test_push_adding_a_secret_is_blocked_with_location_and_bypass_hint(repo: Path) -> None:
    before = remote_head(repo)
    commit(repo, "config/app.yaml", f"name: x\nslack: {SLACK}\n", "add slack")
    done = run(repo, "git", "push", "origin", "main", check=False)
    assert done.returncode != 0
    assert "config/app.yaml:2:8: critical [slack-token]" in done.stderr
    assert "push blocked by hookgate" in done.stderr and "--no-verify" in done.stderr
    assert SLACK not in done.stderr
    assert remote_head(repo) == before


def test_secret_added_then_removed_is_still_blocked(repo: Path) -> None:
    commit(repo, "a.txt", "db at 192.168.7.7\n", "leak")
    commit(repo, "a.txt", "db at db.example.com\n", "fix leak")
    done = run(repo, "git", "push", "origin", "main", check=False)
    assert done.returncode != 0 and "a.txt:1:7: high [private-ipv4]" in done.stderr


def test_only_the_pushed_commits_are_scanned(repo: Path) -> None:
    # A finding already on the remote (pushed with --no-verify) is not the next push's.
    commit(repo, "old.txt", "old 10.1.1.1\n", "old leak")
    run(repo, "git", "push", "-q", "--no-verify", "origin", "main")
    commit(repo, "new.txt", "nothing to see\n", "clean change")
    done = run(repo, "git", "push", "origin", "main", check=False)
    assert done.returncode == 0, done.stderr


def test_new_branch_is_scanned_from_where_it_left_the_remote(repo: Path) -> None:
    run(repo, "git", "checkout", "-q", "-b", "feature")
    commit(repo, "f1.txt", "step one\n", "f1")
    commit(repo, "f2.txt", "ssh ops@vault.internal\n", "f2")
    commit(repo, "f3.txt", "step three\n", "f3")
    done = run(repo, "git", "push", "origin", "feature", check=False)
    assert done.returncode != 0
    assert "f2.txt:1:9: high [internal-host]" in done.stderr
    assert "README" not in done.stderr  # the commits already on main were not rescanned
    assert remote_head(repo, "feature") == ""


def test_no_verify_bypasses_the_guard(repo: Path) -> None:
    commit(repo, "a.txt", f"{SLACK}\n", "leak")
    run(repo, "git", "push", "-q", "--no-verify", "origin", "main")
    assert remote_head(repo) == run(repo, "git", "rev-parse", "HEAD").stdout.strip()


def test_missing_hookgate_fails_fast_with_a_clear_message(repo: Path) -> None:
    commit(repo, "a.txt", "fine\n", "fine")
    git_dir = str(Path(shutil.which("git") or "/usr/bin/git").parent)
    done = run(repo, "git", "push", "origin", "main", path=f"{git_dir}:/bin", check=False)
    assert done.returncode != 0
    assert "'hookgate' was not found, so this push cannot be scanned" in done.stderr
    assert "git push --no-verify" in done.stderr


def test_branch_deletion_is_not_blocked(repo: Path) -> None:
    run(repo, "git", "push", "-q", "origin", "main:old")
    run(repo, "git", "push", "-q", "origin", "--delete", "old")
    assert remote_head(repo, "old") == ""


def test_policy_and_threshold_from_install(repo: Path) -> None:
    (repo / "guard.yaml").write_text(
        "rules:\n  - {id: ticket, pattern: 'ACME-[0-9]{4}', severity: low}\n")
    run(repo, "hookgate", "pre-push", "install", "--policy", "guard.yaml", "--fail-on", "low")
    commit(repo, "guard.yaml", (repo / "guard.yaml").read_text(), "policy")
    commit(repo, "n.txt", "see ACME-1234\n", "ticket")
    done = run(repo, "git", "push", "origin", "main", check=False)
    assert done.returncode != 0 and "n.txt:1:5: low [ticket]" in done.stderr


def test_install_refuses_to_overwrite_a_foreign_hook(repo: Path) -> None:
    (repo / ".git" / "hooks" / "pre-push").write_text("#!/bin/sh\nexit 0\n")
    done = run(repo, "hookgate", "pre-push", "install", check=False)
    assert done.returncode == 1 and "was not written by hookgate" in done.stderr
    run(repo, "hookgate", "pre-push", "install", "--force")


def test_scan_git_range(repo: Path) -> None:
    start = run(repo, "git", "rev-parse", "HEAD").stdout.strip()
    commit(repo, "a.txt", "one\ntwo 10.2.2.2\n", "leak")
    done = run(repo, "hookgate", "scan", "--git-range", f"{start}..HEAD", "--format", "json",
               check=False)
    assert done.returncode == 1
    (finding,) = json.loads(done.stdout)["findings"]
    head = run(repo, "git", "rev-parse", "HEAD").stdout.strip()
    assert (finding["path"], finding["line"], finding["commit"]) == ("a.txt", 2, head)
    bad = run(repo, "hookgate", "scan", "--git-range", "nope..HEAD", check=False)
    assert bad.returncode == 2 and "nope" in bad.stderr


def test_a_clone_with_the_old_hooks_path_is_warned_at_each_push(repo: Path) -> None:
    # An old-layout clone: git runs hooks from the tracked folder; the guard says so.
    (repo / "hooks").mkdir()
    shutil.copy(repo / ".git" / "hooks" / "pre-push", repo / "hooks" / "pre-push")
    run(repo, "git", "config", "core.hooksPath", "hooks")
    commit(repo, "a.txt", "fine\n", "fine")
    done = run(repo, "git", "push", "origin", "main")
    assert "core.hooksPath is 'hooks', a folder of the work tree" in done.stderr
    assert "hookgate pre-push install" in done.stderr


def test_a_foreign_hooks_path_is_left_alone_without_force(repo: Path) -> None:
    run(repo, "git", "config", "core.hooksPath", ".husky")
    done = run(repo, "hookgate", "pre-push", "install", check=False)
    assert done.returncode == 1 and "every branch you check out" in done.stderr
    assert run(repo, "git", "config", "--get", "core.hooksPath").stdout.strip() == ".husky"
    run(repo, "hookgate", "pre-push", "install", "--force")
    assert run(repo, "git", "config", "--get", "core.hooksPath", check=False).stdout == ""


def test_an_octopus_merge_is_scanned_against_each_parent(repo: Path) -> None:
    base = run(repo, "git", "rev-parse", "HEAD").stdout.strip()
    for name in ("one", "two"):
        run(repo, "git", "checkout", "-q", "-b", name, base)
        commit(repo, f"{name}.txt", f"{name}\n", name)
    run(repo, "git", "checkout", "-q", "main")
    run(repo, "git", "merge", "-q", "--no-commit", "one", "two")
    (repo / "evil.txt").write_text(f"slack {SLACK}\n")
    run(repo, "git", "add", "evil.txt")
    run(repo, "git", "commit", "-q", "-m", "octopus")
    done = run(repo, "git", "push", "origin", "main", check=False)
    assert done.returncode != 0 and "evil.txt:1:7: critical [slack-token]" in done.stderr


def test_inline_allow_counts_in_commits_when_the_policy_says_so(repo: Path) -> None:
    (repo / "guard.yaml").write_text(
        "inline_allow: true\nrules:\n  - {id: slack, detector: slack-token}\n")
    commit(repo, "guard.yaml", (repo / "guard.yaml").read_text(), "policy")
    run(repo, "hookgate", "pre-push", "install", "--policy", "guard.yaml")
    commit(repo, "demo.txt", f"{SLACK}  # hookgate:allow\n", "documented demo token")
    run(repo, "git", "push", "-q", "origin", "main")


def test_a_reviewed_policy_change_is_approved_by_installing_again(repo: Path) -> None:
    policy = "rules:\n  - {id: ticket, pattern: 'ACME-[0-9]{4}', severity: low}\n"
    commit(repo, "guard.yaml", policy, "policy")
    run(repo, "hookgate", "pre-push", "install", "--policy", "guard.yaml", "--fail-on", "low")
    commit(repo, "guard.yaml", policy + "allow:\n  - path: 'docs/**'\n", "allow docs")
    refused = run(repo, "git", "push", "origin", "main", check=False)
    assert refused.returncode != 0 and "run 'hookgate pre-push install" in refused.stderr
    run(repo, "hookgate", "pre-push", "install", "--policy", "guard.yaml", "--fail-on", "low")
    commit(repo, "docs/n.md", "see ACME-1234\n", "ticket in docs")
    run(repo, "git", "push", "-q", "origin", "main")


def test_scan_git_range_fails_on_additions_it_could_not_scan(repo: Path) -> None:
    (repo / "small.yaml").write_text(
        "max_file_bytes: 100\nrules:\n  - {id: slack, detector: slack-token}\n")
    start = run(repo, "git", "rev-parse", "HEAD").stdout.strip()
    commit(repo, "big.txt", "filler\n" * 40, "big")
    done = run(repo, "hookgate", "scan", "--policy", "small.yaml", "--git-range",
               f"{start}..HEAD", check=False)
    assert done.returncode == 1 and "could not be scanned" in done.stderr
    assert "big.txt: adds more than 100 bytes" in done.stdout
