"""Tables of results: the codes and flags of every input of a conversion or
an operation, computed once per setting by the vectorized kernel, so that
later calls index them.

Each entry packs the result code and its flags into one integer (the flags
above the code's bits), so that a lookup is a single :func:`numpy.take`.
Tables are built chunk by chunk (memory bounded like every other array
call) and kept in one cache of at most ``CACHE_BYTES``, oldest dropped first.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Hashable

import numpy as np

from .._locks import ForkSafeLock
from ..formats import Format
from ._kernel import U8
from .engine import DEFAULT_CHUNK, code_dtype

CACHE_BYTES = 256 << 20

Fill = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]


class Table:
    """Results of ``fmt`` for the inputs ``0 .. size - 1``."""

    __slots__ = ("packed", "code_dtype", "mask", "shift")

    def __init__(self, fmt: Format, size: int, fill: Fill) -> None:
        """``fill(inputs)`` gives the (codes, flags) of a uint64 array of inputs."""
        self.code_dtype = code_dtype(fmt)
        self.shift = 24 if fmt.width <= 24 else 32
        packed_dtype = np.uint32 if self.shift == 24 else np.uint64
        self.mask = packed_dtype((1 << self.shift) - 1)
        self.packed = np.empty(size, packed_dtype)
        for start in builtins.range(0, size, DEFAULT_CHUNK):
            inputs = np.arange(start, min(size, start + DEFAULT_CHUNK), dtype=np.uint64)
            codes, flags = fill(inputs)
            flags = flags.astype(packed_dtype) << packed_dtype(self.shift)
            self.packed[start:start + inputs.size] = codes.astype(packed_dtype) | flags

    def lookup(self, index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The codes and flags of the inputs ``index`` (any integer array)."""
        v = np.take(self.packed, index)
        flags = (v >> self.packed.dtype.type(self.shift)).astype(U8)
        return (v & self.mask).astype(self.code_dtype), flags


# The cache is shared by every thread (the engine's own pool, and callers'
# threads): a lookup is one dict read, but every change (an insertion, the
# evictions it makes, clear()) and every walk over it are under _LOCK, so
# that no thread iterates or evicts while another changes the cache.  A
# table is built outside the lock: two threads missing the same key both
# build it, and the first one stored is the one every later call gets.
_CACHE: dict[Hashable, Table] = {}
_LOCK = ForkSafeLock()


def cached(key: Hashable, fmt: Format, size: int, fill: Fill) -> Table | None:
    """The table of ``key``, built with ``fill`` on first use; None where some
    input has no result (``fill`` raised ValueError, e.g. a NaN into a format
    without NaN): the caller then computes the inputs actually present."""
    table = _CACHE.get(key)
    if table is None:
        try:
            table = Table(fmt, size, fill)
        except ValueError:
            return None
        with _LOCK:
            known = _CACHE.get(key)
            if known is not None:  # another thread stored it meanwhile
                return known
            held = sum(t.packed.nbytes for t in _CACHE.values())
            while _CACHE and held + table.packed.nbytes > CACHE_BYTES:
                held -= _CACHE.pop(next(iter(_CACHE))).packed.nbytes
            _CACHE[key] = table
    return table


def clear() -> None:
    """Drop every cached table (benchmarks measure a cold start with it)."""
    with _LOCK:
        _CACHE.clear()
