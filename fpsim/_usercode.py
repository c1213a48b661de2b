"""Calling user code (a sweep's candidate, a probed kernel): its failures,
in words that cannot fail in turn, and a time limit on a call.  Shared by
:mod:`fpsim.sweep` and :mod:`fpsim.mma`'s probe (below both: standard
library only)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

__all__ = ["message", "failure", "run_within"]


def message(exc: BaseException) -> str:
    """``str(exc)`` of an exception user code raised, which is user code
    too: when it raises, a note saying so (the report must not fail in
    turn)."""
    try:
        return str(exc)
    except KeyboardInterrupt:
        raise
    except BaseException as inner:
        return f"(its message could not be read: str() raised {type(inner).__name__})"


def failure(exc: BaseException) -> str:
    """What user code raised, in one phrase: ``"SystemExit: 0"``, or its
    type alone when it has no message (``sys.exit()``)."""
    text = message(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def run_within(seconds: float, fn: Callable[..., Any], args: tuple[Any, ...],
               timed_out: Callable[[], BaseException]) -> Any:
    """``fn(*args)``, given up after ``seconds``: it runs in a daemon thread,
    left behind if it never returns (a Python thread cannot be stopped, and
    a daemon thread does not hold the process open); then ``timed_out()``
    is raised.  What ``fn`` raises is raised here, in the caller's thread,
    as it is.  (A call that holds the GIL without ever releasing it, in C,
    cannot be bounded this way.)"""
    box: list[tuple[bool, Any]] = []

    def work() -> None:
        try:
            box.append((True, fn(*args)))
        except BaseException as exc:  # handed to the caller's thread as it is
            box.append((False, exc))

    worker = threading.Thread(target=work, name="fpsim-user-call", daemon=True)
    worker.start()
    worker.join(seconds)
    if not box:
        raise timed_out()
    ok, value = box[0]
    if ok:
        return value
    raise value
