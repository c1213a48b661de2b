"""FP32 accumulation of exact products by the machine's float32 arithmetic:
the fast path of :func:`fpsim.ops.matmul` and :func:`fpsim.ops.dot`.

The declared numerics "each product exact, added to an FP32 accumulator
with one rounding to nearest even" (an fma per step, or a product rounded
into FP32 and then added, which is the same where the product is an FP32
value) are, whenever every product of the two operands' values *is* an FP32
value, exactly the float32 loop ``acc = acc + a[:, k] * b[k, :]``:

* the float32 product is exact, so it rounds nothing and raises no flag;
* float32 addition on a unit in IEEE's default state (round to nearest
  even, subnormals neither flushed nor read as zero: checked on every call
  by :func:`fpsim._machine.float32_adds_are_ieee`) is the correctly rounded
  sum;
* a sum of two FP32 values is a multiple of 2**-149, so a subnormal sum is
  exact and no step raises UNDERFLOW; OVERFLOW shows as a non-finite result,
  where this path gives up and the caller computes step by step; INEXACT is
  decided exactly by TwoSum's error term, until the first inexact sum.

Every order of :mod:`fpsim.ops` is a pattern of such additions
(sequential; blocked and split, whose partial sums start at +0 and are added
into an outer sum that starts at +0; the pairwise tree), and so is an FP32
accumulator promoted into FP32 every N products.  The output is computed in
tiles of rows and columns that stay in the processor's cache while the loop
runs over k; tiles are independent, so they run on threads
(:mod:`fpsim._threads`).  Which element is computed when changes nothing:
each output element sees its own additions in its declared order.
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from .. import _threads
from .._machine import float32_adds_are_ieee, two_sum_error
from ..formats import FP32, Format
from ..modes import Rounding

F32 = np.float32

# Elements of one tile of the output: its accumulator and product (4 bytes
# each, 512 KiB together) stay in a 2 MiB cache level while k runs.  On the
# project's machine a 1024^3 GEMM took 662, 526, 454, 422 and 422 ms with
# tiles of 2**13 ... 2**17 elements.
_TILE_ELEMENTS = 1 << 16
_TILE_COLUMNS = 1 << 12


def products_fit(a: np.ndarray, b: np.ndarray, fmt: Format) -> bool:
    """Whether every product of a value of ``a`` and one of ``b`` (float32
    arrays holding values of ``fmt``, all finite) is itself an FP32 value:
    at most 24 significant bits, at most FP32's max, and a multiple of
    2**-149.  Sufficient conditions, read off the extremes: a nonzero value
    ``v`` of ``fmt`` is a multiple of ``2**(e - p + 1)`` with
    ``e = floor(log2 |v|)``, so a product is a multiple of
    ``2**(ea + eb - 2p + 2)``."""
    p = fmt.precision
    if 2 * p > FP32.precision:
        return False
    biggest, smallest = [], []
    for x in (a, b):
        mag = np.abs(x)
        nonzero = mag[mag != 0]
        if not nonzero.size:
            return True  # every product is zero
        biggest.append(float(nonzero.max()))
        smallest.append(float(nonzero.min()))
    # (the product of two float32 values is exact in float64)
    if biggest[0] * biggest[1] > float(FP32.max):
        return False
    lowest = sum(np.frexp(v)[1] - 1 - (p - 1) for v in smallest)
    return lowest >= FP32.emin - FP32.mantissa_bits


def usable(key: tuple[Any, ...]) -> bool:
    """Whether the settings are those this path computes: round to nearest
    even, no flushing of results or operands, on an IEEE-behaving unit."""
    return key[0] is Rounding.RNE and not key[2] and not key[3] and float32_adds_are_ieee()


class _Inexact:
    """Whether any addition so far was inexact; once one was, the others
    need no checking (shared by the threads of one call: a stale read only
    costs a check)."""

    def __init__(self) -> None:
        self.seen = False

    def add(self, acc: np.ndarray, x: np.ndarray, scratch: np.ndarray,
            work: tuple[np.ndarray, np.ndarray]) -> None:
        """``acc = acc + x`` in float32, in place (``scratch`` and ``work``:
        arrays of ``acc``'s shape for the check)."""
        if self.seen:
            np.add(acc, x, out=acc)
            return
        np.add(acc, x, out=scratch)
        if two_sum_error(scratch, acc, x, work).any():
            self.seen = True
        acc[...] = scratch


def accumulate(a: np.ndarray, b: np.ndarray, order: Any, pieces: list[range] | None,
               workers: int | None) -> tuple[np.ndarray, bool] | None:
    """The FP32 sum over k of ``a[:, k] * b[k, :]`` (float32 operands whose
    products are exact, :func:`products_fit`) in ``order``: ``"sequential"``,
    ``"pairwise"``, or ``"pieces"`` (the running sum of each of ``pieces``
    from +0, added in turn into an outer sum from +0: the blocked and split
    orders, and an FP32 accumulator promoted every N products).  Returns the
    float32 result and whether any addition was inexact; None where a result
    is not finite (the caller computes step by step: OVERFLOW, and which
    step raised it, is its to decide)."""
    m, k = a.shape
    n = b.shape[1]
    at = np.ascontiguousarray(a.T)  # row k of at is column k of a, contiguous
    cols = min(n, _TILE_COLUMNS)
    rows = max(1, _TILE_ELEMENTS // cols)
    tiles = [(r, c) for r in builtins.range(0, m, rows) for c in builtins.range(0, n, cols)]
    out = np.empty((m, n), F32)
    inexact = _Inexact()

    def tile(corner: tuple[int, int]) -> bool:
        r, c = corner
        ta, tb = at[:, r:r + rows], b[:, c:c + cols]
        result = _tile_sum(ta, tb, order, pieces, inexact)
        out[r:r + rows, c:c + cols] = result
        return bool(np.isfinite(result).all())

    threads = _threads.thread_count(workers, m * n * k, len(tiles))
    with np.errstate(all="ignore"):
        finite = _threads.run_pieces(tile, tiles, threads)
    if not all(finite):
        return None
    return out, inexact.seen


def _tile_sum(at: np.ndarray, b: np.ndarray, order: Any, pieces: list[range] | None,
              inexact: _Inexact) -> np.ndarray:
    """One tile: ``at`` is k × rows (the tile's rows of a, transposed),
    ``b`` is k × cols."""
    k, shape = at.shape[0], (at.shape[1], b.shape[1])
    product, scratch = np.empty(shape, F32), np.empty(shape, F32)
    work = (np.empty(shape, F32), np.empty(shape, F32))

    def term(i: int, into: np.ndarray) -> np.ndarray:
        return np.multiply(at[i][:, None], b[i][None, :], out=into)

    def running(piece: range) -> np.ndarray:
        acc = np.zeros(shape, F32)
        for i in piece:
            inexact.add(acc, term(i, product), scratch, work)
        return acc

    if order == "sequential":
        return running(builtins.range(k))
    if order == "pairwise":
        # The binary counter of fpsim.ops._reduce._accumulate: partial sums
        # of equal size merge at once (the tree of adjacent pairs).
        stack: list[tuple[int, np.ndarray]] = []
        for i in builtins.range(k):
            t, size = term(i, np.empty(shape, F32)), 1
            while stack and stack[-1][0] == size:
                left = stack.pop()[1]
                inexact.add(left, t, scratch, work)
                t, size = left, size * 2
            stack.append((size, t))
        if not stack:
            return np.zeros(shape, F32)
        t = stack.pop()[1]
        while stack:
            left = stack.pop()[1]
            inexact.add(left, t, scratch, work)
            t = left
        return t
    assert pieces is not None
    outer = np.zeros(shape, F32)
    for piece in pieces:
        inexact.add(outer, running(piece), scratch, work)
    return outer
