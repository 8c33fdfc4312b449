"""Instructions per run of a bench's variants, counted by callgrind.

    python -m bench.callgrind adapters             # every framework of bench_adapters
    python -m bench.callgrind adapters smolagents  # one (names as in bench_adapters.FRAMEWORKS)
    python -m bench.callgrind --rounds 15 adapters pydantic-ai

On a shared machine wall-clock and CPU-time ratios move by 5 to 15 % between runs, more than
the 5 % an adapter may add; the number of instructions a run executes moves by well under 1 %.
This re-runs ``python -m bench.run AREA --quick`` under ``valgrind --tool=callgrind`` with
instrumentation off until the bench starts timing (imports and warm-up are not counted). A bench
that supports it (:func:`measured`) brackets each timed run with two callgrind client requests:
zero the counters before, dump them after, the dump labelled with the variant. Each dump's total
is one run's instructions, every thread of the process included (callgrind runs one thread at a
time); a subprocess the run starts (a CLI) is not counted. Client requests are machine
instructions a Python process cannot issue by itself: a five-line C helper built with ``cc``
against valgrind's ``callgrind.h`` issues them, loaded with ctypes.

Instructions are not time: they ignore cache misses, branch mispredictions and waiting (a thread
hop costs far more time than its instructions). They do tell apart, reliably, what a variant
*executes* more than another.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

__all__ = ["active", "measured", "rounds"]

#: Set (to the dump directory) in the environment of the bench run under callgrind.
ENV = "HOOKGATE_BENCH_CALLGRIND"
#: How many rounds a bench run under callgrind makes (the counts hardly vary: a few will do).
ROUNDS_ENV = "HOOKGATE_BENCH_CALLGRIND_ROUNDS"

_HELPER_C = """
#include <valgrind/callgrind.h>
void hg_zero(void) { CALLGRIND_ZERO_STATS; }
void hg_dump(const char *label) { CALLGRIND_DUMP_STATS_AT(label); }
void hg_start(void) { CALLGRIND_START_INSTRUMENTATION; }
"""

_helper: ctypes.CDLL | None = None


def active() -> bool:
    """Whether this process is a bench run under :func:`main` (callgrind counting)."""
    return bool(os.environ.get(ENV))


def rounds() -> int:
    """The rounds a bench makes when :func:`active`."""
    return int(os.environ.get(ROUNDS_ENV) or 5)


def _load_helper() -> ctypes.CDLL:
    global _helper
    if _helper is None:
        build = Path(os.environ[ENV])
        source, library = build / "hg_callgrind.c", build / "hg_callgrind.so"
        if not library.exists():
            source.write_text(_HELPER_C)
            subprocess.run(
                ["cc", "-O2", "-shared", "-fPIC", "-o", str(library), str(source)], check=True
            )
        _helper = ctypes.CDLL(str(library))
        _helper.hg_start()  # from the first timed run on; a no-op when already on
    return _helper


@contextlib.contextmanager
def measured(label: str) -> Iterator[None]:
    """Count the instructions of the block as one sample of ``label`` (when :func:`active`)."""
    if not active():
        yield
        return
    helper = _load_helper()
    helper.hg_zero()
    try:
        yield
    finally:
        helper.hg_dump(label.encode())


def _totals(directory: Path) -> dict[str, list[int]]:
    """Instructions per dump, by label, from callgrind's dump files in ``directory``."""
    found: dict[str, list[int]] = {}
    for path in sorted(directory.glob("cg.out*")):
        text = path.read_text(errors="replace")
        label = re.search(r"^desc: Trigger: Client Request: (.+)$", text, re.M)
        total = re.search(r"^(?:totals|summary): (\d+)", text, re.M)
        if label and total:
            found.setdefault(label.group(1).strip(), []).append(int(total.group(1)))
    return found


def _report(found: dict[str, list[int]]) -> str:
    """One line per label: the median run, the spread of the runs (max - min, as a share of
    the median) and the ratio to the ``without`` variant of its group."""
    lines = [f"{'variant':<44} {'runs':>4} {'instructions':>14} {'spread':>7} {'vs without':>11}"]
    for label in sorted(found):
        counts = found[label]
        group = label.rsplit(":", 1)[0]
        median = statistics.median(counts)
        spread = f"{(max(counts) - min(counts)) / median:.1%}"
        base = found.get(f"{group}:without")
        ratio = f"{median / statistics.median(base):.4f}x" if base else ""
        lines.append(f"{label:<44} {len(counts):>4} {median:>14,.0f} {spread:>7} {ratio:>11}")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    if shutil.which("valgrind") is None or shutil.which("cc") is None:
        print("needs valgrind (with its headers) and a C compiler (cc)", file=sys.stderr)
        return 2
    count = 5
    if argv[0] == "--rounds" and len(argv) > 2:
        count, argv = int(argv[1]), argv[2:]
    area, selected = argv[0], argv[1:]
    with tempfile.TemporaryDirectory(prefix="hookgate-callgrind-") as tmp:
        env = dict(os.environ, **{ENV: tmp, ROUNDS_ENV: str(count)})
        if selected:
            env["HOOKGATE_BENCH_FRAMEWORKS"] = ",".join(selected)
        command = [
            "valgrind",
            "--tool=callgrind",
            "--quiet",
            "--instr-atstart=no",
            f"--callgrind-out-file={tmp}/cg.out",
            sys.executable,
            "-m",
            "bench.run",
            area,
            "--quick",
        ]
        done = subprocess.run(command, env=env, stdout=subprocess.DEVNULL, check=False)
        found = _totals(Path(tmp))
    if not found:
        print(f"no counts (valgrind exited {done.returncode})", file=sys.stderr)
        return 1
    print(_report(found))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    raise SystemExit(main(sys.argv[1:]))
