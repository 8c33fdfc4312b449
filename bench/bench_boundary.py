"""``hookgate scan`` against detect-secrets (PyPI 1.5.0) on one generated tree and on 1 MB
single-line files; the cost of hook state per event.

Both scan the same files in one process (detect-secrets with its default plugins and
filters, file by file, as ``detect-secrets scan`` does with one worker; hookgate with its
shipped public-repo policy). Recall: the share of seeded secrets with a finding on their
line. Speed: median CPU seconds for the whole tree, the two runs taking turns. Goals: recall at
least detect-secrets', time at most one fifth of its time.

One line: the scanner must be linear in its input, whatever one line holds. Two 1 MB files
of one line each: the tree's lines joined (a minified bundle with the seeded secrets and
decoys in it), and nothing but private IPv4 addresses (about 74,000 findings on one line, the
worst case for per-finding work). Goal for both: well under a second of CPU.

Hook state: one ``pre_tool_use`` callable hook that counts its calls in run state, against
a plain hook without state on the same event; in memory and in a state file (one atomic
rewrite with fsync per change).
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench.harness import Row, interleaved_medians_us
from bench.secret_corpus import Corpus, write_corpus
from hookgate import Engine, HookEvent
from hookgate.boundary import Scanner, default_policy
from hookgate.state import FileStateStore, use_state_store


def _hookgate(corpus: Corpus) -> set[tuple[str, int]]:
    scanner = Scanner(default_policy())
    report = scanner.scan_paths([corpus.root])
    root = str(corpus.root) + "/"
    return {(finding.path.removeprefix(root), finding.line) for finding in report.findings}


def _detect_secrets(corpus: Corpus) -> set[tuple[str, int]]:
    from detect_secrets import SecretsCollection
    from detect_secrets.settings import default_settings

    found = set()
    with default_settings():
        collection = SecretsCollection(root=str(corpus.root))
        for file in corpus.files:
            collection.scan_file(str(file.relative_to(corpus.root)))
        for filename, secret in collection:
            found.add((filename, secret.line_number))
    return found


def _recall(corpus: Corpus, found: set[tuple[str, int]]) -> float:
    hits = sum((seed.path, seed.line) in found for seed in corpus.seeded)
    return hits / len(corpus.seeded)


def _false_positives(corpus: Corpus, found: set[tuple[str, int]]) -> int:
    seeded = {(seed.path, seed.line) for seed in corpus.seeded}
    return len(found - seeded)


def _timed(fn: Callable[[Corpus], set[tuple[str, int]]], corpus: Corpus) -> float:
    # CPU seconds of this process: both scanners run single-threaded in it, and CPU time is
    # not inflated by other work on a shared machine the way wall time is.
    start = time.process_time()
    fn(corpus)
    return time.process_time() - start


def _one_line_files(corpus: Corpus, directory: Path) -> dict[str, Path]:
    size = 1_000_000
    parts: list[str] = []
    total = 0
    lines = [line.strip() for file in corpus.files for line in file.read_text().splitlines()]
    while total <= size:  # a quick run's corpus is smaller than 1 MB: go round again
        for line in lines:
            parts.append(line)
            total += len(line) + 3
            if total > size:
                break
    bundle = directory / "bundle.min.js"
    bundle.write_text(" ; ".join(parts)[:size] + "\n")
    addresses = directory / "addresses.txt"
    addresses.write_text(" ".join(f"10.{i % 200}.{i % 250}.{i % 199 + 1}"
                                  for i in range(80_000))[:size] + "\n")
    return {"1 MB one-line bundle": bundle, "1 MB line of private IPs": addresses}


def _scan_one(file: Path) -> int:
    return len(Scanner(default_policy()).scan_paths([file]).findings)


def _detect_one(file: Path) -> int:
    from detect_secrets import SecretsCollection
    from detect_secrets.settings import default_settings

    with default_settings():
        collection = SecretsCollection(root=str(file.parent))
        collection.scan_file(file.name)
        return sum(1 for _ in collection)


def _one_line_rows(corpus: Corpus, directory: Path, rounds: int) -> list[Row]:
    rows = []
    for name, file in _one_line_files(corpus, directory).items():
        times: dict[str, list[float]] = {"hookgate": [], "detect-secrets": []}
        found = {"hookgate": 0, "detect-secrets": 0}
        for index in range(rounds):
            order = [("hookgate", _scan_one), ("detect-secrets", _detect_one)]
            for tool, fn in order if index % 2 == 0 else order[::-1]:
                start = time.process_time()
                found[tool] = fn(file)
                times[tool].append(time.process_time() - start)
        ours, theirs = (statistics.median(times[tool]) for tool in ("hookgate", "detect-secrets"))
        rows.append(Row(
            "boundary", f"scan CPU, {name} ({found['hookgate']} findings)", ours * 1000,
            "ms", baseline=f"detect-secrets 1.5.0, same file ({found['detect-secrets']} found)",
            baseline_value=theirs * 1000, goal="< 1000 ms", passed=ours < 1.0))
    return rows


def _count(event: HookEvent) -> None:
    run = event["state"].run
    run["calls"] = run.get("calls", 0) + 1


def _abstain(event: HookEvent) -> None:
    return None


def _state_rows(quick: bool, directory: Path) -> list[Row]:
    def engine(fn: object, state: bool) -> Engine:
        config: dict[str, object] = {"callable": fn}
        if state:
            config["state"] = {"namespace": "bench"}
        return Engine([{"event": "pre_tool_use", "handler_type": "callable", "name": "count",
                        "config": config}])

    async def measure() -> dict[str, float]:
        bare, memory, on_file = engine(_abstain, False), engine(_count, True), engine(_count, True)
        use_state_store(on_file, FileStateStore(directory / "state.json"))
        payload = {"tool_name": "exec", "tool_input": {}, "session_id": "s", "turn_id": "t"}
        makes = {name: (lambda e=e: e.fire("pre_tool_use", payload))
                 for name, e in (("bare", bare), ("memory", memory), ("file", on_file))}
        try:
            await interleaved_medians_us(makes, samples=20)
            return await interleaved_medians_us(makes, samples=200 if quick else 2000)
        finally:
            for each in (bare, memory, on_file):
                await each.aclose()

    us = asyncio.run(measure())
    baseline = "the same event, a plain hook without state"
    return [
        Row("boundary", "fire, 1 hook counting calls in run state (memory)", us["memory"], "µs",
            baseline=baseline, baseline_value=us["bare"]),
        Row("boundary", "fire, 1 hook counting calls in run state (file)", us["file"], "µs",
            baseline=baseline + "; fsync per change", baseline_value=us["bare"]),
    ]


def run(quick: bool = False) -> list[Row]:
    files, lines = (80, 100) if quick else (300, 200)
    rounds = 1 if quick else 3
    with tempfile.TemporaryDirectory() as directory:
        corpus = write_corpus(Path(directory), files=files, lines_per_file=lines)
        ours, theirs = _hookgate(corpus), _detect_secrets(corpus)
        times: dict[str, list[float]] = {"hookgate": [], "detect-secrets": []}
        for index in range(rounds):
            order = [("hookgate", _hookgate), ("detect-secrets", _detect_secrets)]
            for name, fn in order if index % 2 == 0 else order[::-1]:
                times[name].append(_timed(fn, corpus))
        state_rows = _state_rows(quick, Path(directory))
        with tempfile.TemporaryDirectory() as lines_directory:
            one_line_rows = _one_line_rows(corpus, Path(lines_directory), rounds)
    ours_s, theirs_s = (statistics.median(times[name]) for name in ("hookgate", "detect-secrets"))
    recall, their_recall = _recall(corpus, ours), _recall(corpus, theirs)
    mb = corpus.size_bytes / 1e6
    seeded = len(corpus.seeded)
    return [
        Row("boundary", f"scan recall, {seeded} seeded secrets in {files} files", recall * 100,
            "%", baseline="detect-secrets 1.5.0 recall", baseline_value=their_recall * 100,
            goal=">= detect-secrets", passed=recall >= their_recall),
        Row("boundary", f"scan CPU time, {mb:.1f} MB tree (median of {rounds})",
            ours_s * 1000, "ms",
            baseline="detect-secrets 1.5.0, same files, one process",
            baseline_value=theirs_s * 1000,
            goal="<= 0.20x", passed=ours_s * 5 <= theirs_s),
        Row("boundary", "scan findings off the seeded lines", _false_positives(corpus, ours),
            "lines", baseline="detect-secrets 1.5.0",
            baseline_value=_false_positives(corpus, theirs)),
        *one_line_rows,
        *state_rows,
    ]
