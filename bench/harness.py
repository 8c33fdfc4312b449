"""Shared benchmark plumbing: timing helpers and the result row every bench module returns.

A bench module is ``bench/bench_<area>.py`` with ``def run(quick: bool) -> list[Row]``.
Numbers are reported as ratios against the raw operation (or a reference library), because
absolute times depend on the machine.
"""

from __future__ import annotations

import asyncio
import gc
import statistics
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

__all__ = [
    "Row",
    "interleaved_medians_us",
    "interleaved_per_call_us",
    "interleaved_per_call_us_async",
    "per_call_us",
    "per_call_us_async",
    "percentiles",
]


@dataclass(slots=True)
class Row:
    group: str
    name: str
    value: float
    unit: str
    baseline: str | None = None
    baseline_value: float | None = None
    goal: str | None = None
    passed: bool | None = None

    @property
    def ratio(self) -> float | None:
        if self.baseline_value in (None, 0):
            return None
        assert self.baseline_value is not None
        return self.value / self.baseline_value


def _loop_size(fn: Callable[[], object], min_time: float) -> int:
    """How many calls of ``fn`` one timed loop makes: doubled until they take a quarter of
    ``min_time`` (at most 4M)."""
    number = 1
    while True:
        start = time.perf_counter()
        for _ in range(number):
            fn()
        if time.perf_counter() - start >= min_time / 4 or number >= 1 << 22:
            return number
        number *= 2


def per_call_us(fn: Callable[[], object], *, min_time: float = 0.2, repeats: int = 7) -> float:
    """Median µs per call: loop count raised until one repeat takes ``min_time``."""
    number = _loop_size(fn, min_time)
    samples = []
    gc_was = gc.isenabled()
    gc.disable()
    try:
        for _ in range(repeats):
            start = time.perf_counter()
            for _ in range(number):
                fn()
            samples.append((time.perf_counter() - start) / number * 1e6)
    finally:
        if gc_was:
            gc.enable()
    return statistics.median(samples)


def per_call_us_async(
    make: Callable[[], Awaitable[object]], *, min_time: float = 0.2, repeats: int = 7
) -> float:
    """Median µs per awaited call, measured inside one running event loop."""

    async def main() -> float:
        number = 1
        while True:
            start = time.perf_counter()
            for _ in range(number):
                await make()
            if time.perf_counter() - start >= min_time / 4 or number >= 1 << 22:
                break
            number *= 2
        samples = []
        for _ in range(repeats):
            start = time.perf_counter()
            for _ in range(number):
                await make()
            samples.append((time.perf_counter() - start) / number * 1e6)
        return statistics.median(samples)

    return asyncio.run(main())


def interleaved_per_call_us(
    fns: Mapping[str, Callable[[], object]],
    *,
    min_time: float = 0.2,
    rounds: int = 21,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, float]:
    """Median µs per call of each function, measured in turns: each round times a run of
    calls of every function, so all of them see the same machine load (on a busy machine a
    ratio of two :func:`per_call_us` timed one after the other moves by tens of percent).
    Runs are sized like :func:`per_call_us`'s (``min_time`` split over the rounds).
    ``clock=time.process_time`` times the process's CPU instead of the wall: on a machine
    shared by more runnable threads than cores, wall time counts the waits for a core."""
    numbers: dict[str, int] = {}
    for name, fn in fns.items():
        numbers[name] = max(1, _loop_size(fn, min_time) * 7 // rounds)
    times: dict[str, list[float]] = {name: [] for name in fns}
    names = list(fns)
    gc_was = gc.isenabled()
    gc.disable()
    try:
        for index in range(rounds):
            shift = index % len(names)  # no function always runs right after the same other
            for name in names[shift:] + names[:shift]:
                fn, number = fns[name], numbers[name]
                start = clock()
                for _ in range(number):
                    fn()
                times[name].append((clock() - start) / number * 1e6)
    finally:
        if gc_was:
            gc.enable()
    return {name: statistics.median(values) for name, values in times.items()}


def interleaved_per_call_us_async(
    fns: Mapping[str, Callable[[], object]],
    makes: Mapping[str, Callable[[], Awaitable[object]]],
    *,
    min_time: float = 0.2,
    rounds: int = 21,
) -> dict[str, float]:
    """:func:`interleaved_per_call_us` inside one running event loop: plain calls (``fns``,
    called as they are) and awaited ones (``makes``) take turns, so an ``await fire`` is
    compared with a plain call (pluggy's) under the same load."""

    async def main() -> dict[str, float]:
        async def loop_of(name: str, number: int) -> float:
            start = time.perf_counter()
            if name in fns:
                fn = fns[name]
                for _ in range(number):
                    fn()
            else:
                make = makes[name]
                for _ in range(number):
                    await make()
            return time.perf_counter() - start

        names = [*fns, *makes]
        numbers: dict[str, int] = {}
        for name in names:
            number = 1
            while await loop_of(name, number) < min_time / 4 and number < 1 << 22:
                number *= 2
            numbers[name] = max(1, number * 7 // rounds)
        times: dict[str, list[float]] = {name: [] for name in names}
        gc_was = gc.isenabled()
        gc.disable()
        try:
            for index in range(rounds):
                shift = index % len(names)
                for name in names[shift:] + names[:shift]:
                    elapsed = await loop_of(name, numbers[name])
                    times[name].append(elapsed / numbers[name] * 1e6)
        finally:
            if gc_was:
                gc.enable()
        return {name: statistics.median(values) for name, values in times.items()}

    return asyncio.run(main())


async def interleaved_medians_us(
    makes: Mapping[str, Callable[[], Awaitable[object]]], *, samples: int
) -> dict[str, float]:
    """Median µs per call of each operation, measured in the caller's running loop.

    The operations are called in turn, one call each per round, so every one of them sees
    the same machine load (a fair ratio on a busy machine); medians ignore the outliers.
    For I/O operations holding loop-bound resources (sessions, kept-alive connections).
    """
    times: dict[str, list[float]] = {name: [] for name in makes}
    names = list(makes)
    perf = time.perf_counter
    for index in range(samples):
        # Rotate who goes first, so no operation always runs right after the same other one.
        shift = index % len(names)
        for name in names[shift:] + names[:shift]:
            make = makes[name]
            start = perf()
            await make()
            times[name].append((perf() - start) * 1e6)
    return {name: statistics.median(values) for name, values in times.items()}


def percentiles(samples: list[float], *points: float) -> list[float]:
    ordered = sorted(samples)
    out = []
    for point in points:
        index = min(len(ordered) - 1, max(0, round(point / 100 * (len(ordered) - 1))))
        out.append(ordered[index])
    return out
