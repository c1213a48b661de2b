"""A module's lock that survives ``fork``: a child process made by fork has
only the thread that forked, so a lock that another thread of the parent
held at that moment would stay held in the child forever; this one is made
anew in the child (as :mod:`fpsim._threads` does for its pool)."""

from __future__ import annotations

import os
import threading
from typing import Any

__all__ = ["ForkSafeLock"]


class ForkSafeLock:
    """``with lock: ...`` over a ``threading.Lock`` (``RLock`` with
    ``reentrant=True``) that a child made by fork gets afresh."""

    def __init__(self, reentrant: bool = False) -> None:
        self._factory = threading.RLock if reentrant else threading.Lock
        self._lock = self._factory()
        if hasattr(os, "register_at_fork"):  # (POSIX)
            os.register_at_fork(after_in_child=self._renew)

    def _renew(self) -> None:
        self._lock = self._factory()

    def __enter__(self) -> Any:
        return self._lock.__enter__()

    def __exit__(self, *exc: Any) -> Any:
        return self._lock.__exit__(*exc)
