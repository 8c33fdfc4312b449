"""``hookgate scan`` against detect-secrets (PyPI 1.5.0) on one generated tree.

Both scan the same files in one process (detect-secrets with its default plugins and
filters, file by file, as ``detect-secrets scan`` does with one worker; hookgate with its
shipped public-repo policy). Recall: the share of seeded secrets with a finding on their
line. Speed: median CPU seconds for the whole tree, the two runs taking turns. Goals: recall at
least detect-secrets', time at most one fifth of its time.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench.harness import Row
from bench.secret_corpus import Corpus, write_corpus
from hookgate.boundary import Scanner, default_policy


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
    ]
