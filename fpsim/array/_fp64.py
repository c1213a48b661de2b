"""FP64 arithmetic through the machine's own float64 operations, proven
exact lane by lane, in every deterministic rounding mode with flags.

IEEE 754 fixes numpy's float64 ``+``, ``-``, ``×``, ``/`` and square root:
each is the exact result rounded to nearest, ties to even (the unit's
default, checked on every call by :func:`fpsim._machine.float64_ops_are_ieee`).
That rounded result ``s`` is the round-to-nearest-even answer; the other
modes and the inexact flag need only where the exact result lies relative
to ``s``, which an error-free transformation gives exactly:

* a sum: TwoSum (Knuth), ``s + e`` equal to ``x ± y``;
* a product: Dekker's product (Veltkamp's split), ``s + e`` equal to ``x × y``;
* a quotient: the remainder ``x - s×y``, exact by Dekker's product of
  ``s`` and ``y`` and Sterbenz's lemma; the exact quotient lies on its side
  of ``s`` (on the other where ``y < 0``);
* a square root: the remainder ``x - s²`` the same way;
* a fused multiply-add, which numpy does not have: Boldo and Melquiond's
  emulation (IEEE Trans. Computers 57(4), 2008): ``a×b = p + e`` (Dekker),
  ``c + p = h + l`` (TwoSum), ``v`` the round-to-odd of ``l + e`` (TwoSum,
  then the odd neighbour where inexact), ``s = h + v`` rounded to nearest:
  the fused result in round to nearest.  Where ``s`` differs from ``h + v``
  (TwoSum's error ``w``) the exact result lies on ``w``'s side of ``s``:
  it differs from ``h + v`` by less than ``v``'s last place, and ``w`` is a
  nonzero multiple of it; where ``w`` is zero the exact result is ``s``
  plus ``v``'s own rounding error, whose sign TwoSum's error of ``l + e``
  and the odd step give.  A lane whose ``h + v`` sits exactly halfway
  between two FP64 values with an inexact ``v`` is redone (the odd ``v``
  makes that impossible; the check costs one comparison).

A quotient or a root in the normal range is never halfway between two
FP64 values, so ties arise only in sums, products and fmas, where the error
is known exactly (ties to away read it).  From ``s`` and the error's sign
each mode is one step: toward zero, away from zero, up or down by one code,
or to the odd code of the two.

The transformations are exact only away from the range's edges, so a lane
is given to the integer path (:mod:`fpsim.array._chunks`, with 128-bit
products from :mod:`fpsim.array._int128`) wherever: the result or the error
is not finite (NaN operands, infinities, overflow, an intermediate that
overflowed); a product, quotient, fma or radicand is below ``2**-960``, or
an fma's product is (Dekker's error terms would fall below the subnormals;
zeros included); a divisor is subnormal; a step away from FP64's largest
finite value would be taken (an overflow); a sum is an exact zero toward
-inf (whose sign IEEE fixes by the operands); and, under FTZ or DAZ, a
subnormal result or operand.  Sums whose result is subnormal are exact
(Hauser), so nothing else is tiny.  Each chunk first checks its whole
range with a few reductions (minimum, maximum, a sum that is finite only
if every error is), and builds the per-lane masks only when a check fails.

Round to nearest even without per-element flags returns the machine's
results as they are: only the lanes above are redone, and the inexact flag
the context needs is read from the errors of the chunks only until one is
inexact.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from .._machine import two_sum_error
from .._scratch import scratch
from ..formats import FP64
from ..modes import Rounding
from ..rounding import INEXACT
from ._kernel import U8, U64

__all__ = ["MODES", "fast_op", "two_product"]

MODES = frozenset({Rounding.RNE, Rounding.RNA, Rounding.RTZ, Rounding.RUP, Rounding.RDN,
                   Rounding.RAZ, Rounding.RTO})
OPS = ("add", "sub", "mul", "div", "sqrt", "fma")

_F64 = np.float64
_SPLIT = 134217729.0                  # 2**27 + 1: Veltkamp's split into 26 + 27 bits
_SMALL = 2.0**-960                    # below this, Dekker's error terms may underflow
_MIN_NORMAL = 2.0**-1022
_MAX = float(FP64.max)
_INF = float("inf")
_ONE = U64(1)
_SIGN_SHIFT = U64(63)
_NOTHING = np.zeros(0, np.intp)

ChunkOp = Callable[..., tuple[np.ndarray, np.ndarray]]


def fast_op(op: str, key: tuple[Any, ...], chunk_op: ChunkOp, return_flags: bool
            ) -> Callable[[list[np.ndarray], Any], tuple[np.ndarray, Any]] | None:
    """The chunk function of FP64 ``op`` in a deterministic mode, or None
    where this path does not serve the setting.  ``chunk_op`` is the
    integer path, given the lanes this one cannot prove."""
    mode, _saturate, ftz, daz = key[:4]
    if op not in OPS or mode not in MODES:
        return None
    seen = threading.Event()  # some chunk of the call was inexact
    per_element = return_flags or mode is not Rounding.RNE

    def compute(cs: list[np.ndarray], rand: Any) -> tuple[np.ndarray, Any]:
        xs = [c.view(_F64) for c in cs]
        with np.errstate(all="ignore"):   # the lanes that raise are redone
            codes, flags, redo = _chunk(op, xs, mode, ftz, daz, per_element, seen)
        if redo.size:
            sub = [c[redo].astype(U64) for c in cs]
            redo_codes, redo_flags = chunk_op(FP64, sub, key, None)
            codes[redo] = redo_codes
            if isinstance(flags, int):
                flags |= int(np.bitwise_or.reduce(redo_flags))
            else:
                flags[redo] = redo_flags
        return codes, flags

    return compute


def _chunk(op: str, xs: list[np.ndarray], mode: Rounding, ftz: bool, daz: bool,
           per_element: bool, seen: threading.Event) -> tuple[np.ndarray, Any, np.ndarray]:
    """One chunk: codes and flags (scratch arrays, or the flags ORed into an
    int), and the lanes to redo."""
    n = xs[0].size
    s, t, err = scratch("fp64 result", n, _F64, _F64, _F64)
    parts = _fma_parts(xs) if op == "fma" else None
    _result(op, xs, s, parts)
    have_err = per_element or not seen.is_set()
    ok = not (ftz or daz) and _in_range(op, xs, s, t, mode, have_err)
    if have_err:
        _error(op, xs, s, parts, err)
        ok = ok and bool(np.isfinite(np.add.reduce(err)))
    redo = _NOTHING if ok else np.flatnonzero(
        _special_lanes(op, xs, s, err if have_err else None, ftz, daz, mode))
    codes = s.view(U64)
    nonzero, = scratch("fp64 inexact", n, bool)
    if not per_element:
        flags = 0
        if seen.is_set():
            flags = INEXACT
        elif have_err:
            np.not_equal(err, 0, out=nonzero)
            if redo.size:
                nonzero[redo] = False
            if nonzero.any():
                flags = INEXACT
                seen.set()
        return codes, flags, redo
    np.not_equal(err, 0, out=nonzero)
    if mode is not Rounding.RNE:
        _step(codes, err, nonzero, mode, op)
        if redo.size == 0 and mode is not Rounding.RTZ:
            # a step away from the largest finite value: an overflow, redone
            top = t.view(U64)
            np.left_shift(codes, _ONE, out=top)
            if top.max() == U64(FP64.inf_code << 1):
                redo = np.flatnonzero(top == U64(FP64.inf_code << 1))
    flags = nonzero.view(U8)
    flags <<= U8(4)  # INEXACT
    return codes, flags, redo


def _result(op: str, xs: list[np.ndarray], s: np.ndarray, parts: Any) -> None:
    """The machine's rounded result, into ``s`` (fma's from its ``parts``)."""
    if op == "add":
        np.add(xs[0], xs[1], out=s)
    elif op == "sub":
        np.subtract(xs[0], xs[1], out=s)
    elif op == "mul":
        np.multiply(xs[0], xs[1], out=s)
    elif op == "div":
        np.divide(xs[0], xs[1], out=s)
    elif op == "sqrt":
        np.sqrt(xs[0], out=s)
    else:
        np.add(parts[0], parts[1], out=s)


def _in_range(op: str, xs: list[np.ndarray], s: np.ndarray, t: np.ndarray,
              mode: Rounding, have_err: bool = True) -> bool:
    """Whether no lane of the chunk is one the transformations cannot prove,
    judged from the whole chunk's range (False may be a false alarm: the
    masks then decide lane by lane).  Without ``have_err`` (round to
    nearest even, the inexact flag already known) only the machine's result
    must be proven: a quotient's dividend need not be checked."""
    if op in ("add", "sub"):
        if mode is Rounding.RNE:
            return bool(np.isfinite(np.add.reduce(s)))
        if not (-_MAX < s.min() and s.max() < _MAX):
            return False
        if mode is Rounding.RNA:
            # (ties read s's exponent field: s must be normal, well inside)
            np.abs(s, out=t)
            return bool(t.min() >= _SMALL)
        return mode is not Rounding.RDN or bool(s.all())
    if op == "sqrt":
        return bool(xs[0].min() >= _SMALL and s.max() < _INF)
    np.abs(s, out=t)
    if not (t.min() >= _SMALL and t.max() < _INF):
        return False
    if op == "div" and have_err:
        np.abs(xs[0], out=t)
        return bool(t.min() >= _SMALL)
    if op == "fma":
        np.multiply(xs[0], xs[1], out=t)
        np.abs(t, out=t)
        return bool(t.min() >= _SMALL)
    return True


def _special_lanes(op: str, xs: list[np.ndarray], s: np.ndarray, err: np.ndarray | None,
                   ftz: bool, daz: bool, mode: Rounding) -> np.ndarray:
    """The lanes whose results are not the machine's (or not provably so):
    a boolean mask."""
    a = np.abs(s)
    if op in ("add", "sub"):
        redo = ~(a < _MAX)          # NaN and infinite sums; the largest (a step away overflows)
        if ftz:
            redo |= (a < _MIN_NORMAL) & (a != 0)
        if mode is Rounding.RDN:
            redo |= s == 0
        elif mode is Rounding.RNA:
            redo |= (a < _SMALL) & (a != 0)
    else:
        redo = ~((a >= _SMALL) & (a < _MAX))
        if op == "div":
            redo |= ~(np.abs(xs[0]) >= _SMALL)
        elif op == "sqrt":
            redo |= ~(xs[0] >= _SMALL)
        elif op == "fma":
            redo |= ~(np.abs(xs[0] * xs[1]) >= _SMALL)
    if err is not None:
        redo |= ~np.isfinite(err)
    if daz:
        for x in xs:
            ax = np.abs(x)
            redo |= (ax < _MIN_NORMAL) & (ax != 0)
    return redo


def two_product(x: np.ndarray, y: np.ndarray, hi: np.ndarray, err: np.ndarray) -> None:
    """Dekker's product: the exact error ``x × y - hi`` of ``hi``, the
    machine's ``x × y``, into ``err`` (exact where no step overflows and the
    product is at least ``2**-960``; NaN or infinite where a step
    overflowed)."""
    xh, xl, yh, yl, w = scratch("fp64 dekker", x.size, _F64, _F64, _F64, _F64, _F64)
    np.multiply(x, _SPLIT, out=xh)
    np.subtract(xh, x, out=xl)
    xh -= xl                          # x's top 26 bits
    np.subtract(x, xh, out=xl)
    np.multiply(y, _SPLIT, out=yh)
    np.subtract(yh, y, out=yl)
    yh -= yl
    np.subtract(y, yh, out=yl)
    np.multiply(xh, yh, out=err)
    err -= hi
    np.multiply(xh, yl, out=w)
    err += w
    np.multiply(xl, yh, out=w)
    err += w
    np.multiply(xl, yl, out=w)
    err += w


def _two_sum(x: np.ndarray, y: np.ndarray, s: np.ndarray, err: np.ndarray,
             negate_y: bool = False) -> None:
    """TwoSum's exact error of ``s = x + y`` (or ``x - y``) into ``err``
    (:func:`fpsim._machine.two_sum_error`; NaN where a step overflowed)."""
    yv, = scratch("fp64 twosum", x.size, _F64)
    two_sum_error(s, x, y, (err, yv), negate_y)


def _error(op: str, xs: list[np.ndarray], s: np.ndarray, parts: Any, err: np.ndarray) -> None:
    """Into ``err``: an array whose sign is that of ``exact - s`` in every
    provable lane (the exact error itself for sums and products; for fma,
    the error or a value of its sign); NaN or infinite where a step
    overflowed."""
    if op in ("add", "sub"):
        _two_sum(xs[0], xs[1], s, err, negate_y=op == "sub")
    elif op == "mul":
        two_product(xs[0], xs[1], s, err)
    elif op == "fma":
        _fma_error(parts, s, err)
    else:
        # the remainder x - s×y (div) or x - s×s (sqrt), exact
        y = xs[1] if op == "div" else s
        hi, = scratch("fp64 remainder", s.size, _F64)
        np.multiply(s, y, out=hi)
        two_product(s, y, hi, err)
        np.subtract(xs[0], hi, out=hi)
        np.subtract(hi, err, out=err)
        if op == "div":
            # the exact quotient lies on the remainder's side of s for y > 0
            bits = err.view(U64)
            bits ^= y.view(U64) & _SIGN


# -- fma: Boldo and Melquiond's emulation ---------------------------------------------------

def _fma_parts(xs: list[np.ndarray]) -> tuple[np.ndarray, ...]:
    """``h`` and ``v`` (whose rounded sum is the fused result), and what the
    odd rounding of ``v`` lost: ``f``, and whether ``v`` moved (scratch)."""
    a, b, c = xs
    n = a.size
    p, e, h, low, v, f = scratch("fp64 fma", n, *[_F64] * 6)
    moved, = scratch("fp64 fma moved", n, bool)
    np.multiply(a, b, out=p)
    two_product(a, b, p, e)
    np.add(c, p, out=h)
    _two_sum(c, p, h, low)            # c + p = h + low
    np.add(low, e, out=v)
    _two_sum(low, e, v, f)            # low + e = v + f
    # v to odd: where f is nonzero and v's code even, the neighbour toward f
    # (v is zero only where low + e is exact)
    bits = v.view(U64)
    np.equal(bits & _ONE, 0, out=moved)
    moved &= f != 0
    toward_zero = moved & ((f.view(U64) ^ bits) >> _SIGN_SHIFT).astype(bool)
    bits += moved
    bits -= toward_zero
    bits -= toward_zero               # (down one where toward zero, up one where away)
    return h, v, f, moved


def _fma_error(parts: tuple[np.ndarray, ...], s: np.ndarray, err: np.ndarray) -> None:
    """The sign of ``exact - s`` for the fused ``a×b + c``: TwoSum's error
    ``w`` of ``s = h + v`` where nonzero, else the sign of ``v``'s odd
    rounding error (``f`` where ``v`` stayed, ``-f`` where it moved).  A
    lane whose ``h + v`` is exactly halfway (``|w|`` half of ``s``'s
    spacing) with an inexact ``v`` is made NaN (redone)."""
    h, v, f, moved = parts
    _two_sum(h, v, s, err)
    exact_sum = err == 0
    if exact_sum.any():
        np.copyto(err, np.where(moved, -f, f), where=exact_sum)
    halfway = _half_spacing(s, err) & (f != 0)
    if halfway.any():
        err[halfway] = np.nan


_SIGN = U64(1 << 63)
_EXP = U64(FP64.inf_code)             # the exponent field's mask
_HALF_SHIFT = U64(53 << 52)           # 2**-53 as an exponent offset


def _half_spacing(s: np.ndarray, err: np.ndarray) -> np.ndarray:
    """Where ``|err|`` is half the spacing of FP64 values above ``|s|``
    (``s`` normal, at least ``2**-969``): ``2**(exponent(s) - 53)``."""
    half = (s.view(U64) & _EXP) - _HALF_SHIFT
    return (err.view(U64) & ~_SIGN) == half


# -- the modes ------------------------------------------------------------------------------

def _step(codes: np.ndarray, err: np.ndarray, nonzero: np.ndarray, mode: Rounding,
          op: str) -> None:
    """Move each inexact code one step as ``mode`` rounds the exact value
    ``s + err`` (in place)."""
    n = codes.size
    away, toward = scratch("fp64 step", n, bool, bool)
    diff, = scratch("fp64 step bits", n, U64)
    # toward zero: err's sign differs from s's; away: the same
    np.bitwise_xor(err.view(U64), codes, out=diff)
    diff >>= _SIGN_SHIFT
    np.logical_and(nonzero, diff, out=toward)
    np.greater(nonzero, toward, out=away)        # nonzero and not toward
    if mode is Rounding.RTZ:
        codes -= toward
    elif mode is Rounding.RAZ:
        codes += away
    elif mode in (Rounding.RUP, Rounding.RDN):
        negative = (codes >> _SIGN_SHIFT).astype(bool)
        if mode is Rounding.RUP:
            codes += away & ~negative
            codes -= toward & negative
        else:
            codes += away & negative
            codes -= toward & ~negative
    elif mode is Rounding.RTO:
        even = (codes & _ONE) == 0
        codes += away & even
        codes -= toward & even
    elif mode is Rounding.RNA and op in ("add", "sub", "mul", "fma"):
        # a tie: the error is half the spacing beyond s, and s is the
        # neighbour toward zero (RNE chose it as the even one)
        codes += away & _half_spacing(codes.view(_F64), err)
