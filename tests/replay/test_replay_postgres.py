"""``hookgate replay --database-url``: a real gateway on PostgreSQL recorded the traffic; the
key comes from HOOKGATE_SECRET_KEY, as the gateway's did."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.replay.replay_support import SECRET_KEY, recording_gateway, replay_cli, write_candidate
from tests.replay.test_replay_cli import CANDIDATE
from tests.support.replicas import fresh_database

pytestmark = pytest.mark.timeout(180)


def test_replay_from_postgresql(tmp_path: Path) -> None:
    with fresh_database("hg_replay") as url, recording_gateway(tmp_path, database_url=url) as rec:
        candidate = write_candidate(tmp_path / "candidate", CANDIDATE)
        result = replay_cli("--config", str(candidate), "--database-url", url, "--format",
                            "json", HOOKGATE_SECRET_KEY=SECRET_KEY)
        assert result.returncode == 0, result.stderr
        report = json.loads(result.stdout)
        assert report["replayed"] == 5 and report["unreadable"] == 0
        changes = {c["dispatch_id"]: c for c in report["changes"]}
        push, read = rec.dispatch_ids[3], rec.dispatch_ids[4]
        assert changes[push]["after"] == "block" and changes[read]["after"] == "unknown"
        assert report["changed"] == 1 and report["unknown"] == 1
        # Without the key nothing is opened (and nothing is guessed).
        keyless = replay_cli("--config", str(candidate), "--database-url", url)
        assert keyless.returncode == 1 and "HOOKGATE_SECRET_KEY" in keyless.stderr
        # One tenant's records only.
        other = replay_cli("--config", str(candidate), "--database-url", url, "--tenant",
                           "other", HOOKGATE_SECRET_KEY=SECRET_KEY)
        assert other.returncode == 1 and "has no dispatch records" in other.stderr
