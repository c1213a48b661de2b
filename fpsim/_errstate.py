"""The numpy floating-point error state fpsim's public functions run under.

Results and exceptions never depend on the caller's environment: a caller's
``np.seterr(all="raise")`` or ``np.errstate(...)``, or warnings turned into
errors, must neither stop a call nor change what it returns.  fpsim's array
code computes in numpy float arithmetic where it handles every special case
itself (NaN and infinite lanes are looked at, overflow and underflow are
decided from the exact values, inexact casts are the point), so numpy's own
reports of those events carry nothing: the public entry points that compute
with numpy floats run their bodies under ``np.errstate(all="ignore")``
(:func:`quiet`, :func:`quiet_iter` for generators).  The state never changes
a numpy result, only whether numpy warns or raises, so the bits are those of
numpy's default state.  Threads of the process's pool run the pieces of a
call under the state of the thread that made the call
(:func:`fpsim._threads.run_pieces`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import numpy as np

__all__ = ["quiet", "quiet_iter"]

F = TypeVar("F", bound=Callable[..., Any])


def quiet(fn: F) -> F:
    """``fn`` run under ``np.errstate(all="ignore")`` (a fresh state object
    per call: calls may nest and run on several threads)."""
    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        with np.errstate(all="ignore"):
            return fn(*args, **kwargs)

    return call  # type: ignore[return-value]


def quiet_iter(fn: F) -> F:
    """A generator function whose every step (from the call to each item)
    runs under ``np.errstate(all="ignore")``; the caller's state holds
    between items."""
    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Iterator[Any]:
        with np.errstate(all="ignore"):
            items = fn(*args, **kwargs)
        try:
            while True:
                with np.errstate(all="ignore"):
                    try:
                        item = next(items)
                    except StopIteration:
                        return
                yield item
        finally:
            items.close()

    return call  # type: ignore[return-value]
