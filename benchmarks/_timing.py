"""Timing helpers shared by the benchmark scripts (run as scripts, so this
module is found next to them)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any


def median_seconds(fn: Callable[[], Any], repeats: int) -> float:
    """The median wall time of ``repeats`` calls of ``fn``."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def median_pair(ours: Callable[[], Any], peer: Callable[[], Any], repeats: int
                ) -> tuple[float, float]:
    """The median wall times of ``repeats`` calls each of ``ours`` and
    ``peer``, called in turn: a burst of load from elsewhere on the machine
    then slows both, instead of the one measured while it lasted."""
    mine, theirs = [], []
    for _ in range(repeats):
        for fn, times in ((ours, mine), (peer, theirs)):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
    return statistics.median(mine), statistics.median(theirs)
