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
below that, handing work between threads costs more than it saves.
``workers=1`` runs everything in the calling thread.

The threads are the calling one and those of one pool per process, started
on first use and kept: a call then starts no thread, and the work arrays
each thread keeps (:mod:`fpsim._scratch`) serve the next call (a pool per
call measured 1.2-1.6x slower on large calls: ``benchmarks/bench_speed.py``).
A call made from inside a piece runs in that piece's thread.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

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


# One pool for the process, started on first use: its threads, and the work
# arrays each keeps (fpsim._scratch), outlive a call, where a pool per call
# made every call start threads and fault in fresh pages.
_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()
# Set in a thread while it runs pieces: a call made from a piece runs in
# that thread alone (the outer call already keeps the CPUs busy, and a
# piece waiting on pieces queued behind it in the same pool could wait
# forever).
_RUNNING = threading.local()


def _pool() -> ThreadPoolExecutor:
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max_workers=max_workers(), thread_name_prefix="fpsim")
        return _POOL


def _forget_pool() -> None:
    """In a child process made by fork: the parent's pool threads do not
    exist there (work queued to them would wait forever), and its lock may
    have been held by one of them; the child starts a pool of its own."""
    global _POOL, _POOL_LOCK
    _POOL, _POOL_LOCK = None, threading.Lock()


if hasattr(os, "register_at_fork"):  # (POSIX)
    os.register_at_fork(after_in_child=_forget_pool)


def run_pieces(fn: Callable[[Any], Any], pieces: Iterable[Any], threads: int) -> list[Any]:
    """``[fn(p) for p in pieces]``, on ``threads`` threads where more than
    one: the calling thread and ``threads - 1`` of the process's pool, each
    taking the next piece not yet taken (results in the order of
    ``pieces``; once a piece raises, no other piece starts, and the
    exception of the first piece that raised, in the order of ``pieces``,
    is raised here after every running piece has stopped).  Every piece
    runs under the calling thread's numpy error state (:func:`numpy.errstate`)."""
    items = list(pieces)
    if threads <= 1 or len(items) <= 1 or getattr(_RUNNING, "active", False):
        return [fn(p) for p in items]
    results: list[Any] = [None] * len(items)
    failed: dict[int, BaseException] = {}
    taken = itertools.count()  # (next() on it is atomic under the GIL)

    def runner() -> None:
        _RUNNING.active = True
        try:
            while not failed:
                i = next(taken)
                if i >= len(items):
                    return
                try:
                    results[i] = fn(items[i])
                except BaseException as exc:  # raised in the caller's thread below
                    failed[i] = exc
        finally:
            _RUNNING.active = False

    # The pool's threads run the pieces under the numpy error state of the
    # calling thread (numpy keeps one per thread): a piece reports, or
    # ignores, what it would in the caller's thread (fpsim._errstate).
    state, call = np.geterr(), np.geterrcall()

    def helper() -> None:
        with np.errstate(call=call, **state):
            runner()

    helpers = [_pool().submit(helper) for _ in range(min(threads, len(items)) - 1)]
    try:
        runner()
    finally:
        for future in helpers:
            future.result()
    if failed:
        raise failed[min(failed)]
    return results
