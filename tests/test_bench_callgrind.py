"""bench/callgrind.py's reading of callgrind's dumps, and bench_adapters' choice of frameworks."""

from __future__ import annotations

from pathlib import Path

import pytest
from bench import bench_adapters, callgrind


def _dump(path: Path, label: str, total: int) -> None:
    # The head of a dump callgrind writes for CALLGRIND_DUMP_STATS_AT(label).
    path.write_text(
        "version: 1\ncreator: callgrind-3.19.0\npid: 4242\ncmd:  python -m bench.run\npart: 2\n\n"
        f"desc: I1 cache: \ndesc: Timerange: Basic block 1 - 2\ndesc: Trigger: Client Request: "
        f"{label}\n\npositions: line\nevents: Ir\nsummary: {total}\n\n"
        "ob=(1) python\nfl=(1) ???\nfn=(1) main\n0 12\n\ntotals: "
        f"{total}\n"
    )


def test_the_dumps_are_read_per_label_and_compared_with_their_group_without(
    tmp_path: Path,
) -> None:
    _dump(tmp_path / "cg.out.1", "smolagents:without", 1000)
    _dump(tmp_path / "cg.out.2", "smolagents:with", 1100)
    _dump(tmp_path / "cg.out.3", "smolagents:without", 1010)
    _dump(tmp_path / "cg.out.4", "pydantic-ai:noop", 500)  # no `without` in its group
    (tmp_path / "cg.out").write_text("version: 1\nevents: Ir\nsummary: 99\n")  # the final dump

    found = callgrind._totals(tmp_path)

    assert found == {
        "smolagents:without": [1000, 1010],
        "smolagents:with": [1100],
        "pydantic-ai:noop": [500],
    }
    lines = callgrind._report(found).splitlines()
    with_line = next(line for line in lines if line.startswith("smolagents:with "))
    assert with_line.split()[1:] == ["1", "1,100", "0.0%", "1.0945x"]  # 1100 / median(1000, 1010)
    without_line = next(line for line in lines if line.startswith("smolagents:without"))
    assert without_line.split()[1:] == ["2", "1,005", "1.0%", "1.0000x"]  # 10 / 1005
    noop_line = next(line for line in lines if line.startswith("pydantic-ai:noop"))
    assert noop_line.split()[1:] == ["1", "500", "0.0%"]


def test_outside_callgrind_a_measured_block_only_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(callgrind.ENV, raising=False)
    ran = []
    with callgrind.measured("x:with"):
        ran.append(True)
    assert ran == [True]
    assert callgrind._helper is None  # no helper built or loaded


def test_the_frameworks_named_in_the_environment_are_the_ones_measured(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HOOKGATE_BENCH_FRAMEWORKS", "smolagents, pydantic-ai")
    assert list(bench_adapters.selected()) == ["smolagents", "pydantic-ai"]
    monkeypatch.setenv("HOOKGATE_BENCH_FRAMEWORKS", "")
    assert list(bench_adapters.selected()) == list(bench_adapters.FRAMEWORKS)
    monkeypatch.setenv("HOOKGATE_BENCH_FRAMEWORKS", "smolagents,crewai")
    with pytest.raises(SystemExit, match="crewai"):
        bench_adapters.selected()
