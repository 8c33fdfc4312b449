"""``hookgate scan`` and ``hookgate scrub`` as real subprocesses on real files."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from bench.secret_corpus import make_secret

ROOT = Path(__file__).resolve().parents[2]
GITHUB = "gh" + "p_" + "Zq8Lm2Xv4Tp7Wn3Kc6Hb1Yf5Gd0Js8Ra2Ue4"
STRIPE = "sk" + "_live_" + "4eC39HqLyjWDarjtT1zdp7dc"


def hookgate(*args: str, cwd: Path, stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "hookgate", *args], cwd=cwd, input=stdin,
                          capture_output=True, timeout=60)
    return subprocess.CompletedProcess(done.args, done.returncode, done.stdout.decode(),
                                       done.stderr.decode())


@pytest.fixture()
def tree(tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text(
        f'import os\nTOKEN = "{GITHUB}"\nHOST = "10.20.30.40"\n')
    (tmp_path / "src" / "clean.py").write_text("print('hello')\n")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "notes.md").write_text("staging box is build7.corp\n")
    return tmp_path


def test_text_report_names_file_line_and_masks_the_value(tree: Path) -> None:
    done = hookgate("scan", ".", cwd=tree)
    assert done.returncode == 1, done.stderr
    assert "src/app.py:2:10: critical [github-token]" in done.stdout
    assert "src/app.py:3:9: high [private-ipv4]" in done.stdout
    assert "docs/notes.md:1:16: high [internal-host]" in done.stdout
    assert "3 file(s) scanned, 3 finding(s)" in done.stdout
    for value in (GITHUB, "10.20.30.40", "build7.corp"):
        assert value not in done.stdout + done.stderr


def test_json_and_sarif_carry_findings_but_no_values(tree: Path) -> None:
    as_json = hookgate("scan", "src", "--format", "json", cwd=tree)
    document = json.loads(as_json.stdout)
    assert as_json.returncode == 1 and document["failed"] is True
    assert {(f["path"], f["line"], f["rule"]) for f in document["findings"]} == {
        ("src/app.py", 2, "github-token"), ("src/app.py", 3, "private-ipv4")}
    sarif = json.loads(hookgate("scan", "src", "--format", "sarif", cwd=tree).stdout)
    run = sarif["runs"][0]
    assert sarif["version"] == "2.1.0"
    results = {(r["ruleId"], r["level"],
                r["locations"][0]["physicalLocation"]["region"]["startLine"])
               for r in run["results"]}
    assert results == {("github-token", "error", 2), ("private-ipv4", "error", 3)}
    rule_ids = [rule["id"] for rule in run["tool"]["driver"]["rules"]]
    assert all(rule_ids[r["ruleIndex"]] == r["ruleId"] for r in run["results"])
    for text in (as_json.stdout, json.dumps(sarif)):
        assert GITHUB not in text and "10.20.30.40" not in text
    written = hookgate("scan", "src", "--format", "sarif", "-o", "report.sarif", cwd=tree)
    assert written.returncode == 1 and written.stdout == ""
    assert json.loads((tree / "report.sarif").read_text())["runs"][0]["results"]


def test_fail_on_threshold_and_exit_codes(tree: Path) -> None:
    policy = tree / "policy.yaml"
    policy.write_text("rules:\n  - {id: ip, detector: private-ipv4, severity: medium}\n")
    assert hookgate("scan", "src", "--policy", str(policy), cwd=tree).returncode == 1
    above = hookgate("scan", "src", "--policy", str(policy), "--fail-on", "high", cwd=tree)
    assert above.returncode == 0
    assert "(below --fail-on)" in above.stdout
    assert hookgate("scan", "src/clean.py", cwd=tree).returncode == 0


def test_stdin_is_scanned(tree: Path) -> None:
    done = hookgate("scan", "--stdin", "--format", "json", cwd=tree,
                    stdin=f"pay with {STRIPE}\n".encode())
    assert done.returncode == 1
    (finding,) = json.loads(done.stdout)["findings"]
    assert (finding["path"], finding["rule"]) == ("<stdin>", "stripe-key")
    binary = hookgate("scan", "--stdin", cwd=tree, stdin=b"\x00\x01" + STRIPE.encode())
    assert binary.returncode == 0 and "note: skipped <stdin>: binary" in binary.stdout


def test_binary_and_huge_files_are_skipped_with_a_note(tree: Path) -> None:
    (tree / "blob.bin").write_bytes(b"\x00\x01" + GITHUB.encode())
    policy = tree / "small.json"
    policy.write_text(json.dumps({"max_file_bytes": 64, "rules": [
        {"id": "gh", "detector": "github-token"}]}))
    (tree / "big.txt").write_text("x" * 100 + GITHUB)
    done = hookgate("scan", "blob.bin", "big.txt", "--policy", str(policy), cwd=tree)
    assert done.returncode == 0, done.stdout
    assert "note: skipped blob.bin: binary" in done.stdout
    assert "note: skipped big.txt: larger than 64 bytes (140)" in done.stdout


def test_allow_list_by_path_glob_and_fingerprint(tree: Path) -> None:
    first = json.loads(hookgate("scan", ".", "--format", "json", cwd=tree).stdout)
    ip_print = next(f["fingerprint"] for f in first["findings"] if f["rule"] == "private-ipv4")
    policy = tree / "policy.yaml"
    policy.write_text(
        "rules:\n"
        "  - {id: private-ipv4, detector: private-ipv4}\n"
        "  - {id: github-token, detector: github-token}\n"
        "  - {id: internal-host, detector: internal-host}\n"
        "allow:\n"
        "  - {path: 'docs/**'}\n"
        f"  - {{fingerprint: {ip_print}, reason: lab address}}\n"
    )
    done = hookgate("scan", ".", "--policy", str(policy), "--format", "json", cwd=tree)
    assert [f["rule"] for f in json.loads(done.stdout)["findings"]] == ["github-token"]


def test_git_ignored_files_are_not_scanned_unless_named(tree: Path) -> None:
    subprocess.run(["git", "init", "-q"], cwd=tree, check=True)
    (tree / ".gitignore").write_text("docs/\n")
    done = hookgate("scan", ".", "--format", "json", cwd=tree)
    assert "docs/notes.md" not in {f["path"] for f in json.loads(done.stdout)["findings"]}
    # An ignored staging directory named on the command line is scanned (and scrubbed) whole.
    named = hookgate("scan", "docs", "--format", "json", cwd=tree)
    assert [f["path"] for f in json.loads(named.stdout)["findings"]] == ["docs/notes.md"]
    assert "build7.corp" not in hookgate("scrub", "docs", "--apply", cwd=tree).stdout
    assert (tree / "docs" / "notes.md").read_text() == "staging box is bu*********\n"


def test_bad_policy_is_exit_2_with_each_problem_named(tree: Path) -> None:
    policy = tree / "bad.yaml"
    policy.write_text("rules:\n  - {id: a, pattern: '(unclosed'}\n  - {id: b, detector: nope}\n"
                      "  - {id: c, detector: email, severity: urgent}\nfail_on: sometimes\n")
    done = hookgate("scan", "src", "--policy", str(policy), cwd=tree)
    assert done.returncode == 2
    assert "rules[0] (a).pattern: not a valid RE2 pattern" in done.stderr
    assert "rules[1] (b).detector: unknown detector 'nope'" in done.stderr
    assert "rules[2] (c).severity: 'urgent' is not one of" in done.stderr
    assert "fail_on: 'sometimes' is not one of" in done.stderr


def test_scrub_previews_without_writing_then_applies_atomically(tree: Path) -> None:
    app = tree / "src" / "app.py"
    app.chmod(0o640)
    before = app.read_bytes()
    preview = hookgate("scrub", "src", cwd=tree)
    assert preview.returncode == 0, preview.stderr
    assert app.read_bytes() == before
    assert "--- a/src/app.py" in preview.stdout and "+++ b/src/app.py" in preview.stdout
    assert '-TOKEN = "[ghp_… 40 chars]"' in preview.stdout
    assert '+TOKEN = "ghp_************************************"' in preview.stdout
    assert GITHUB not in preview.stdout and "10.20.30.40" not in preview.stdout
    assert "2 replacement(s) in 1 file(s) would be made" in preview.stderr
    shown = hookgate("scrub", "src", "--show-values", cwd=tree)
    assert f'-TOKEN = "{GITHUB}"' in shown.stdout

    applied = hookgate("scrub", "src", "--apply", cwd=tree)
    assert applied.returncode == 0, applied.stderr
    assert app.read_text() == ('import os\nTOKEN = "ghp_************************************"\n'
                               'HOST = "10*********"\n')
    assert oct(app.stat().st_mode & 0o777) == oct(0o640)
    assert sorted(os.listdir(tree / "src")) == ["app.py", "clean.py"]  # no temp files left
    assert hookgate("scan", "src", cwd=tree).returncode == 0  # scrubbed output is clean


def test_scrub_uses_the_rule_replacement(tree: Path) -> None:
    policy = tree / "policy.yaml"
    policy.write_text("rules:\n  - {id: ip, detector: private-ipv4, replace: 192.0.2.1}\n"
                      "  - {id: host, detector: internal-host, replace: host.example}\n")
    done = hookgate("scrub", ".", "--apply", "--policy", str(policy), cwd=tree)
    assert done.returncode == 0, done.stderr
    assert 'HOST = "192.0.2.1"' in (tree / "src" / "app.py").read_text()
    assert (tree / "docs" / "notes.md").read_text() == "staging box is host.example\n"


def test_scrub_keeps_line_numbers_of_multi_line_secrets(tmp_path: Path) -> None:
    key = make_secret("private-key", random.Random(3))
    (tmp_path / "k.pem").write_text("\n".join(["a", *key, "b"]) + "\n")
    hookgate("scrub", ".", "--apply", cwd=tmp_path)
    lines = (tmp_path / "k.pem").read_text().splitlines()
    assert len(lines) == len(key) + 2 and lines[-1] == "b"
    assert "PRIVATE KEY" not in "".join(lines[1:])


def _modules_after(argv: list[str], cwd: Path) -> str:
    probe = (f"import sys; sys.argv = {['hookgate', *argv]!r}\n"
             "from hookgate.cli import main\n"
             "try:\n    main()\nexcept SystemExit:\n    pass\n"
             "heavy = [m for m in ('hookgate.engine', 'hookgate.server', 'hookgate.store',"
             " 'hookgate.handlers') if m in sys.modules]\n"
             "print('heavy:', heavy, 'scanner:', 'hookgate.boundary.scanner' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", probe], cwd=cwd, input="", capture_output=True,
                          text=True, timeout=60)
    return done.stdout.splitlines()[-1] if done.stdout else done.stderr


def test_scan_loads_neither_the_engine_nor_the_gateway(tmp_path: Path) -> None:
    # `hookgate scan` runs on every push: its import path stays on the scanner package.
    assert _modules_after(["scan", "--help"], tmp_path) == "heavy: [] scanner: False"
    assert _modules_after(["scan", "--stdin"], tmp_path) == "heavy: [] scanner: True"
