"""Run the benchmark suite and print one table.

    python -m bench.run            # everything
    python -m bench.run core http  # only bench_core.py and bench_http.py
    python -m bench.run --quick    # shorter runs (smoke test)
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness import Row


def discover() -> list[str]:
    here = Path(__file__).resolve().parent
    return sorted(m.name[len("bench_") :] for m in pkgutil.iter_modules([str(here)])
                  if m.name.startswith("bench_"))


def render(rows: list[Row]) -> str:
    header = f"{'group':<10} {'measurement':<52} {'value':>12} {'baseline':>12} {'ratio':>7}  goal"
    lines = [header, "-" * len(header)]
    for row in rows:
        base = f"{row.baseline_value:.2f}" if row.baseline_value is not None else ""
        ratio = f"{row.ratio:.2f}x" if row.ratio is not None else ""
        goal = row.goal or ""
        if row.passed is not None:
            goal = f"{goal} [{'met' if row.passed else 'MISSED'}]"
        value = f"{row.value:.2f} {row.unit}"
        lines.append(f"{row.group:<10} {row.name:<52} {value:>12} {base:>12} {ratio:>7}  {goal}")
        if row.baseline:
            lines.append(f"{'':<10}   vs {row.baseline}")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("areas", nargs="*", help=f"subset of: {', '.join(discover())}")
    parser.add_argument("--quick", action="store_true", help="short runs, for a smoke test")
    args = parser.parse_args()
    areas = args.areas or discover()
    rows: list[Row] = []
    for area in areas:
        print(f"running bench_{area} …", file=sys.stderr, flush=True)
        module = importlib.import_module(f"bench.bench_{area}")
        rows.extend(module.run(quick=args.quick))
    print(render(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
