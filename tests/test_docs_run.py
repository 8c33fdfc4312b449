"""Docs that run: every fenced ``sh``, ``python`` and ``yaml`` block of README.md and docs/*.md
is executed (sh, python) or validated (yaml) here, as written.

A block that cannot run here is marked on the line before it with
``<!-- docs-test: skip (why) -->``; the reason is required and the skips are counted (the
count is printed, and may not grow past :data:`MAX_SKIPPED`). Other markers:

* ``<!-- docs-test: gateway -->``: the block talks to a running gateway. The test starts one
  (``hookgate serve``, SQLite in ``./hookgate-data`` of the doc's directory, which is also the
  per-user data directory there); ``http://127.0.0.1:8787`` in the block means that gateway,
  and ``HOOKGATE_API_KEY`` holds its master key.
* ``<!-- docs-test: fragment (what it belongs to) -->``: a YAML piece of a larger document,
  only parsed.

Blocks of one doc run in order in one scratch directory (a block may use the files an earlier
one wrote), with ``examples/`` and ``.venv`` of the repository in it, ``hookgate`` on PATH and
HOME there; the ``export`` lines of a doc's earlier ``sh`` blocks are run before each later one
(as in one terminal). In ``sh`` blocks a command followed by ``# exit N`` must exit N; every
other command must succeed.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LANGUAGES = ("sh", "python", "yaml")
#: The most blocks that may be marked skip (each with its reason).
MAX_SKIPPED = 24
GATEWAY_URL = "http://127.0.0.1:8787"
BLOCK_TIMEOUT_S = 120

_FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<lang>[A-Za-z0-9_+-]*)[ \t]*$")
_MARK = re.compile(r"^\s*<!--\s*docs-test:\s*(?P<kind>[a-z-]+)\s*(?:\((?P<why>.*)\))?\s*-->\s*$")
_EXIT = re.compile(r"#\s*exit\s+(\d+)\b")


@dataclass(frozen=True)
class Block:
    doc: Path
    line: int
    lang: str
    code: str
    mark: str | None
    why: str | None

    @property
    def name(self) -> str:
        return f"{self.doc.relative_to(ROOT)}:{self.line}"


def blocks(doc: Path) -> list[Block]:
    """The doc's fenced blocks in the three languages, with the marker before each."""
    lines = doc.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        indent, lang = opening["indent"], opening["lang"]
        end = index + 1
        while end < len(lines) and lines[end].strip() != "```":
            end += 1
        if lang in LANGUAGES:
            previous = index - 1
            while previous >= 0 and not lines[previous].strip():
                previous -= 1
            mark = _MARK.match(lines[previous]) if previous >= 0 else None
            body = "\n".join(
                line[len(indent):] if line.startswith(indent) else line
                for line in lines[index + 1 : end]
            )
            found.append(
                Block(doc, index + 1, lang, textwrap.dedent(body) + "\n",
                      mark["kind"] if mark else None, mark["why"] if mark else None)
            )
        index = end + 1
    return found


ALL_BLOCKS = [block for doc in DOCS for block in blocks(doc)]


def test_the_docs_have_blocks_and_skips_are_few_and_explained() -> None:
    assert len(ALL_BLOCKS) > 30
    skipped = [block for block in ALL_BLOCKS if block.mark == "skip"]
    for block in skipped:
        assert block.why and block.why.strip(), f"{block.name}: a skip needs its reason"
    for block in ALL_BLOCKS:
        assert block.mark in (None, "skip", "gateway", "fragment"), (block.name, block.mark)
    print(f"\ndocs blocks: {len(ALL_BLOCKS)}, skipped: {len(skipped)}")
    for block in skipped:
        print(f"  skipped {block.name}: {block.why}")
    assert len(skipped) <= MAX_SKIPPED


# -- running -----------------------------------------------------------------------------------


@dataclass
class Workspace:
    """One doc's scratch directory, its environment and (started on demand) its gateway."""

    path: Path
    env: dict[str, str]
    gateway: object = None
    #: ``export`` lines of the sh blocks run so far.
    exports: list[str] = field(default_factory=list)

    def gateway_url(self) -> str:
        from tests.server.gateway_process import GatewayProcess

        if self.gateway is None:
            data = self.path / "hookgate-data"
            served = GatewayProcess(data, env={"XDG_DATA_HOME": str(self.path / "xdg")}).start()
            self.gateway = served
            # The per-user data directory of this HOME is the gateway's store.
            (self.path / "xdg").mkdir(exist_ok=True)
            link = self.path / "xdg" / "hookgate"
            if not link.exists():
                link.symlink_to(data)
        return str(self.gateway.url)  # type: ignore[attr-defined]

    def close(self) -> None:
        if self.gateway is not None:
            self.gateway.stop()  # type: ignore[attr-defined]


def _workspace(doc: Path, base: Path) -> Workspace:
    """A scratch folder for one document's blocks, with the examples beside them."""
    path = base / doc.stem
    path.mkdir()
    # Copies, not links: a docs example that writes a file of the same name must not
    # overwrite the repository's (one did, through a link to examples/guards.py).
    shutil.copytree(
        ROOT / "examples", path / "examples", ignore=shutil.ignore_patterns("__pycache__")
    )
    # Hooks files in the docs name guards.py "beside the file", as examples/hooks.yaml does.
    shutil.copyfile(ROOT / "examples" / "guards.py", path / "guards.py")
    (path / ".venv").symlink_to(Path(sys.executable).parent.parent)
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOOKGATE_")}
    env.update(
        HOME=str(path),
        XDG_DATA_HOME=str(path / "xdg"),
        XDG_CACHE_HOME=str(path / "cache"),
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        PYTHONPATH=os.pathsep.join([str(ROOT / "src"), str(ROOT)]),
    )
    # The test session's warm folder (stopped at its end): `install` starts a warm
    # process, which must not outlive the tests in the user's own folder.
    if "HOOKGATE_CLAUDE_CODE_WARM_DIR" in os.environ:
        env["HOOKGATE_CLAUDE_CODE_WARM_DIR"] = os.environ["HOOKGATE_CLAUDE_CODE_WARM_DIR"]
    return Workspace(path, env)


def _shell_script(code: str) -> str:
    """The block as a script: joined continuation lines, and each ``# exit N`` command
    checked for exactly that status."""
    script = ["set -eu"]
    for line in code.replace("\\\n", " ").splitlines():
        promised = _EXIT.search(line)
        if promised is None:
            script.append(line)
            continue
        command = line[: promised.start()].rstrip()
        expected = int(promised.group(1))
        script.append(
            f"if {command}; then __s=0; else __s=$?; fi; "
            f'[ "$__s" -eq {expected} ] || {{ echo "docs-test: exit $__s, not {expected}: '
            f'{command[:60]!s}" >&2; exit 97; }}'
        )
    return "\n".join(script) + "\n"


def _check_yaml(block: Block, workspace: Workspace) -> None:
    document = yaml.safe_load(block.code)
    if block.mark == "fragment":
        return
    if isinstance(document, dict) and "hooks" in document or isinstance(document, list):
        from hookgate.config import load_hooks

        path = workspace.path / f"docs-block-{block.line}.yaml"
        path.write_text(block.code if isinstance(document, dict) else
                        yaml.safe_dump({"hooks": document}), encoding="utf-8")
        assert load_hooks(path), block.name
        return
    if isinstance(document, dict) and "version" in document and "rules" in document:
        from hookgate.boundary.policy import load_policy

        path = workspace.path / f"docs-block-{block.line}.policy.yaml"
        path.write_text(block.code, encoding="utf-8")
        load_policy(path)
        return
    raise AssertionError(f"{block.name}: a YAML block that is neither a hooks file nor a "
                         "policy; mark it a fragment")


#: Each document with blocks that run, in the order of DOCS.
RUN_DOCS = [doc for doc in DOCS if any(b.doc == doc and b.mark != "skip" for b in ALL_BLOCKS)]


@pytest.mark.timeout(1200)
@pytest.mark.parametrize("doc", RUN_DOCS, ids=lambda doc: str(doc.relative_to(ROOT)))
def test_docs_blocks_run_in_order(doc: Path, tmp_path: Path) -> None:
    """A document's blocks, top to bottom, in one workspace: later blocks build on earlier
    ones (a gateway one block starts, a file another writes), so they are one test (a test
    each could be split between test workers)."""
    workspace = _workspace(doc, tmp_path)
    try:
        for block in ALL_BLOCKS:
            if block.doc == doc and block.mark != "skip":
                _run_block(block, workspace)
        if doc == ROOT / "README.md":
            _check_the_readme_walkthrough_record(workspace)
    finally:
        workspace.close()


def _run_block(block: Block, workspace: Workspace) -> None:
    if block.lang == "yaml":
        _check_yaml(block, workspace)
        return
    code = block.code
    env = dict(workspace.env)
    if block.mark == "gateway":
        code = code.replace(GATEWAY_URL, workspace.gateway_url())
        env["HOOKGATE_API_KEY"] = str(workspace.gateway.master_key)  # type: ignore[attr-defined]
    if block.lang == "python":
        command = [sys.executable, "-c", code]
    else:
        script = "\n".join([*workspace.exports, code])
        command = [shutil.which("sh") or "/bin/sh", "-c", _shell_script(script)]
        workspace.exports.extend(
            line for line in code.splitlines() if line.startswith("export ")
        )
    returncode, stdout, stderr = _run(command, workspace.path, env)
    output = f"{block.name}\n--- stdout\n{stdout}\n--- stderr\n{stderr}"
    assert returncode == 0, output
    assert "Traceback" not in stderr, output


def _run(command: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, str, str]:
    """Run a block in a session of its own: on a timeout the whole group goes, so a block
    that (wrongly) starts a server leaves nothing behind."""
    proc = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=BLOCK_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        stdout, stderr = proc.communicate()
        return -1, stdout, f"{stderr}\ndocs-test: still running after {BLOCK_TIMEOUT_S} s"
    return proc.returncode, stdout, stderr


def _check_the_readme_walkthrough_record(workspace: Workspace) -> None:
    """After the README's five minutes: the dispatch was blocked by the hook made over REST,
    and its record says so."""
    import httpx

    assert workspace.gateway is not None, "the README's blocks started no gateway"
    served = workspace.gateway
    key = served.master_key  # type: ignore[attr-defined]
    answer = httpx.get(f"{workspace.gateway_url()}/api/v1/dispatches",
                       params={"sessionId": "first-hour"},
                       headers={"Authorization": f"Bearer {key}"}, timeout=30)
    (record,) = answer.json()["dispatches"]
    assert record["decision"] == "block" and record["reason"] == "destructive command"
    assert [hook["hook_name"] for hook in record["hooks"]] == ["no rm -rf"]
