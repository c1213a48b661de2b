"""How many threads one call may use, and the pool that runs its pieces.

The contract, shared by the array engine (chunks of an elementwise call)
and the operators (tiles of a GEMM): a call splits its work into pieces
whose results do not depend on the order in which they run; numpy releases
the interpreter lock inside its loops, so pieces running on threads use
several cores.  The caller keeps every result where it belongs and ORs the
flags once all pieces have succeeded, so the bits and flags of a call never
depend on ``workers``.

``workers=None`` (the default) uses every CPU this process may run on, but
only for calls with at least :data:`PARALLEL_ELEMENTS` elements of work:
below that, starting threads costs more than it saves.  ``workers=1`` runs
everything in the calling thread.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

# Elements of work (results, or multiply-adds of a GEMM) below which a call
# runs in one thread whatever workers= says: measured on the project's
# 2-core machine, a pool only pays for itself from about a million.
PARALLEL_ELEMENTS = 1 << 20


def available_cpus() -> int:
    """The CPUs this process may run on (its affinity where the system
    tells it, else all of the machine's)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not on every system
        return max(1, os.cpu_count() or 1)


def max_workers() -> int:
    """The most threads or local processes accepted: 8 per CPU, at least 64
    (more only adds switching; a bound keeps a typo from starting
    thousands)."""
    return max(64, 8 * (os.cpu_count() or 1))


def check_workers(op: str, workers: Any) -> None:
    """ValueError unless ``workers`` is None or an int in [1, max_workers()]."""
    if workers is None:
        return
    if isinstance(workers, bool) or not isinstance(workers, int) or not \
            1 <= workers <= max_workers():
        raise ValueError(f"{op}(): workers={workers!r}; accepted None (every CPU for large "
                         f"calls) or an integer from 1 to {max_workers()}")


def thread_count(workers: int | None, elements: int, pieces: int) -> int:
    """The threads a call of ``elements`` units of work in ``pieces``
    independent pieces runs on (``workers`` checked by the caller)."""
    if workers is None:
        workers = available_cpus() if elements >= PARALLEL_ELEMENTS else 1
    return max(1, min(workers, pieces))


def run_pieces(fn: Callable[[Any], Any], pieces: Iterable[Any], threads: int) -> list[Any]:
    """``[fn(p) for p in pieces]``, on ``threads`` threads where more than
    one (results in the order of ``pieces``; the first exception raised by
    a piece is raised here, after every piece has stopped)."""
    items = list(pieces)
    if threads <= 1 or len(items) <= 1:
        return [fn(p) for p in items]
    with ThreadPoolExecutor(max_workers=threads) as pool:
        futures = [pool.submit(fn, p) for p in items]
        return [f.result() for f in futures]
