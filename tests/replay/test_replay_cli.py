"""``hookgate replay`` against a real gateway's recorded traffic (SQLite data dir).

The gateway recorded five dispatches through a callable hook and a webhook; the candidates
change the callable, keep the webhook (answered from its recording: the webhook server sees
no new request), and add an http hook that was never recorded (reported unknown)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.replay.replay_support import Recorded, recording_gateway, replay_cli, write_candidate

pytestmark = pytest.mark.timeout(180)

CANDIDATE = """
hooks:
  - name: no-rm
    event: pre_tool_use
    handler_type: callable
    matcher: "^exec$"
    priority: 10
    config: {callable: "candidate_guards:no_rm_or_push"}
  - name: network-check
    event: pre_tool_use
    handler_type: http
    matcher: "^exec$"
    config: {url: "http://127.0.0.1:9/never-called"}
  - name: file-check
    event: pre_tool_use
    handler_type: http
    matcher: "^read_file$"
    config: {url: "http://127.0.0.1:9/never-called"}
"""


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Recorded]:
    with recording_gateway(tmp_path_factory.mktemp("replay-cli")) as found:
        yield found


def _json(result: Any) -> dict[str, Any]:
    assert result.returncode == 0, result.stderr + result.stdout
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def test_replay_reports_what_the_candidate_changes(recorded: Recorded, tmp_path: Path) -> None:
    candidate = write_candidate(tmp_path, CANDIDATE)
    calls_before = len(recorded.webhook.requests)
    result = replay_cli(
        "--config", str(candidate), "--data-dir", str(recorded.gateway.data_dir),
        "--format", "json",
    )
    report = _json(result)
    assert report["replayed"] == 5 and report["unreadable"] == 0, report
    by_id = {c["dispatch_id"]: c for c in report["changes"]}
    ls, rm, curl, push, read = recorded.dispatch_ids
    # git push: allowed then, blocked by the candidate's callable.
    assert by_id[push]["before"] == "allow" and by_id[push]["after"] == "block"
    assert by_id[push]["reason"] == "rm and git push are not allowed"
    assert by_id[push]["event"] == "pre_tool_use" and by_id[push]["tool_name"] == "exec"
    # read_file: a new http hook with no recording is unknown, never an allow.
    assert by_id[read]["after"] == "unknown" and "file-check" in by_id[read]["reason"]
    # curl: still blocked, from the webhook's recorded answer; ls and rm unchanged.
    assert curl not in by_id and ls not in by_id and rm not in by_id, by_id
    assert report["changed"] == 1 and report["unknown"] == 1
    assert report["after"] == {"allow": 1, "block": 3, "unknown": 1}
    assert len(recorded.webhook.requests) == calls_before  # nothing was called
    assert "replay:" in result.stderr  # progress on stderr, the report alone on stdout


def test_the_unchanged_policy_replays_to_no_change(recorded: Recorded, tmp_path: Path) -> None:
    same = CANDIDATE.replace("no_rm_or_push", "no_rm").split("  - name: file-check")[0]
    (tmp_path / "candidate_guards.py").write_text(
        (Path(__file__).parent / "replay_guards.py").read_text()
    )
    candidate = tmp_path / "same.yaml"
    candidate.write_text(same)
    report = _json(replay_cli(
        "--config", str(candidate), "--data-dir", str(recorded.gateway.data_dir),
        "--format", "json",
    ))
    assert report["replayed"] == 5 and report["changed"] == 0 and report["unknown"] == 0


def test_text_report_has_a_summary_and_a_table(recorded: Recorded, tmp_path: Path) -> None:
    candidate = write_candidate(tmp_path, CANDIDATE)
    result = replay_cli("--config", str(candidate), "--data-dir", str(recorded.gateway.data_dir))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("replayed 5 dispatches") and "1 would change" in lines[0]
    assert lines[1].split()[:6] == ["DISPATCH", "WHEN", "EVENT", "TOOL", "BEFORE", "AFTER"]
    push = recorded.dispatch_ids[3]
    assert any(line.startswith(push) and " allow " in line and " block " in line for line in lines)


def test_tenant_and_window_filters(recorded: Recorded, tmp_path: Path) -> None:
    candidate = write_candidate(tmp_path, CANDIDATE)
    data_dir = str(recorded.gateway.data_dir)
    mine = _json(replay_cli("--config", str(candidate), "--data-dir", data_dir,
                            "--tenant", recorded.tenant, "--since", "1h", "--format", "json"))
    assert mine["replayed"] == 5
    later = _json(replay_cli("--config", str(candidate), "--data-dir", data_dir,
                             "--until", "1h", "--format", "json"))
    assert later["replayed"] == 0
    other = replay_cli("--config", str(candidate), "--data-dir", data_dir, "--tenant", "nobody")
    assert other.returncode == 1 and "tenant 'nobody' has no dispatch records" in other.stderr


def test_clear_errors(recorded: Recorded, tmp_path: Path) -> None:
    candidate = write_candidate(tmp_path, CANDIDATE)
    # No key: the data directory without its key file (and no key in the environment).
    keyless = tmp_path / "keyless"
    shutil.copytree(recorded.gateway.data_dir, keyless)
    (keyless / "secret.key").unlink()
    result = replay_cli("--config", str(candidate), "--data-dir", str(keyless))
    assert result.returncode == 1 and "no key to open the recorded inputs" in result.stderr
    # The wrong key: every record is counted unreadable, none is replayed as an empty event.
    (keyless / "secret.key").write_text("k1:" + "A" * 43 + "=\n")
    report = _json(replay_cli("--config", str(candidate), "--data-dir", str(keyless),
                              "--format", "json"))
    assert report["replayed"] == 0 and report["unreadable"] == 5
    assert all("does not open" in r["why"] for r in report["unreadable_records"])
    # A bad candidate names the file and the problem.
    bad = tmp_path / "bad.yaml"
    bad.write_text("hooks:\n  - name: x\n    event: no_such_event\n    handler_type: callable\n")
    result = replay_cli("--config", str(bad), "--data-dir", str(recorded.gateway.data_dir))
    assert result.returncode == 1 and "bad.yaml" in result.stderr
    # A data dir that does not exist is refused, not created.
    result = replay_cli("--config", str(candidate), "--data-dir", str(tmp_path / "typo"))
    assert result.returncode == 1 and not (tmp_path / "typo").exists()
    # A bad --since is a usage error.
    result = replay_cli("--config", str(candidate), "--data-dir", str(recorded.gateway.data_dir),
                        "--since", "last week")
    assert result.returncode == 1 and "neither a duration" in result.stderr


def _export(recorded: Recorded, key: str, path: Path) -> Path:
    answer = recorded.gateway.rest(
        "GET", "/api/v1/dispatches/export", key, params={"format": "jsonl"}
    )
    assert answer.status_code == 200, answer.text
    path.write_bytes(answer.content)
    return path


def test_replay_from_an_export_needs_the_key(recorded: Recorded, tmp_path: Path) -> None:
    candidate = write_candidate(tmp_path, CANDIDATE)
    exported = _export(recorded, recorded.gateway.master_key or "", tmp_path / "d.jsonl")
    text = exported.read_text()
    lines = text.splitlines()
    assert len(lines) == 5
    # Oldest first, and no input in plain text: the commands are only in the sealed blob.
    assert [json.loads(line)["id"] for line in lines] == recorded.dispatch_ids
    for secret_text in ("git push origin main", "rm -rf", "notes.txt", "example.com"):
        assert secret_text not in text
    key_file = str(recorded.gateway.data_dir / "secret.key")
    report = _json(replay_cli("--config", str(candidate), "--from", str(exported),
                              "--format", "json", HOOKGATE_SECRET_KEY_FILE=key_file))
    assert report["replayed"] == 5 and report["changed"] == 1 and report["unknown"] == 1
    without = replay_cli("--config", str(candidate), "--from", str(exported))
    assert without.returncode == 1 and "no key to open the recorded inputs" in without.stderr
    # --from is a file, not a store: naming both is a usage error.
    both = replay_cli("--config", str(candidate), "--from", str(exported), "--data-dir",
                      str(recorded.gateway.data_dir), HOOKGATE_SECRET_KEY_FILE=key_file)
    assert both.returncode == 1


def test_the_replay_export_is_for_admins(recorded: Recorded) -> None:
    viewer = recorded.gateway.create_key(recorded.tenant, "viewer")
    for key in (viewer, recorded.operator):
        answer = recorded.gateway.rest(
            "GET", "/api/v1/dispatches/export", key, params={"format": "jsonl"}
        )
        assert answer.status_code == 403, answer.text
    # The readable exports stay open to viewers.
    csv = recorded.gateway.rest("GET", "/api/v1/dispatches/export", viewer)
    assert csv.status_code == 200
