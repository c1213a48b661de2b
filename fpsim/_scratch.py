"""Reusable work arrays, per thread: the internal module through which the
array engine and the operators' fast paths avoid fresh allocations.

Contract: :func:`scratch` returns arrays whose contents are undefined, that
stay valid until the same ``tag`` asks again in the same thread, and that
must never reach a user (copy what is returned).  Callers active at the same
time use distinct tags.  Why: a chunk's intermediates written with ``out=``
into these cost no allocation and stay in the cache from one chunk to the
next, where fresh arrays of a few hundred KiB are fresh pages (page faults
cost more here than the arithmetic on them).
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

__all__ = ["scratch", "SCRATCH_MAX"]

_HELD = threading.local()
#: Elements; a larger request gets arrays of its own (not kept).
SCRATCH_MAX = 1 << 18


def scratch(tag: str, n: int, *dtypes: Any) -> list[np.ndarray]:
    """Work arrays of ``n`` elements, one per dtype, for the caller named
    ``tag``: reused by the same tag's next call in this thread.

    >>> a, b = scratch("doc", 4, np.uint32, bool)
    >>> a.shape, b.dtype
    ((4,), dtype('bool'))
    >>> scratch("doc", 4, np.uint32, bool)[0] is a   # views of the same buffer
    False
    """
    if n > SCRATCH_MAX:
        return [np.empty(n, dt) for dt in dtypes]
    held = getattr(_HELD, "arrays", None)
    if held is None:
        held = _HELD.arrays = {}
    bufs = held.get((tag, dtypes))
    if bufs is None or bufs[0].size < n:
        bufs = held[(tag, dtypes)] = [np.empty(max(n, 1 << 16), dt) for dt in dtypes]
    return [b[:n] for b in bufs]
