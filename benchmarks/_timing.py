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
