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
* a square root: the remainder ``x - s²`` the same way.

A quotient or a root in the normal range is never halfway between two
FP64 values, so ties arise only in sums and products, where ``e`` is known
exactly (ties to away read it).  From ``s`` and the error's sign each mode
is one step: toward zero, away from zero, up or down by one code, or to
the odd code of the two.

The transformations are exact only away from the range's edges, so a lane
is given to the integer path (:mod:`fpsim.array._arith`, with 128-bit
products from :mod:`fpsim.array._int128`) wherever: the result or the error
is not finite (NaN operands, infinities, overflow, an intermediate that
overflowed); a product, quotient or radicand is below ``2**-960`` (Dekker's
error terms would fall below the subnormals; zeros included); a divisor is
subnormal; the result is FP64's largest finite value (a step away would
overflow); a sum is an exact zero toward -inf (whose sign IEEE fixes by the
operands); and, under FTZ or DAZ, a subnormal result or operand.  Sums whose
result is subnormal are exact (Hauser), so nothing else is tiny.

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

from ..formats import FP64
from ..modes import Rounding
from ..rounding import INEXACT
from ._kernel import U8, U64

__all__ = ["MODES", "fast_op"]

MODES = frozenset({Rounding.RNE, Rounding.RNA, Rounding.RTZ, Rounding.RUP, Rounding.RDN,
                   Rounding.RAZ, Rounding.RTO})

_F64 = np.float64
_SPLIT = 134217729.0                  # 2**27 + 1: Veltkamp's split into 26 + 27 bits
_SMALL = 2.0**-960                    # below this, Dekker's error terms may underflow
_MIN_NORMAL = 2.0**-1022
_MAX = float(FP64.max)
_ONE = U64(1)

ChunkOp = Callable[..., tuple[np.ndarray, np.ndarray]]


def _two_product(x: np.ndarray, y: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Dekker's product: the exact error ``x × y - hi`` of ``hi``, the
    machine's ``x × y`` (exact where no step overflows and the product is
    at least ``2**-960``)."""
    c = x * _SPLIT
    xh = c - (c - x)
    xl = x - xh
    np.multiply(y, _SPLIT, out=c)
    yh = c - (c - y)
    yl = y - yh
    err = xh * yh
    err -= hi
    err += xh * yl
    err += xl * yh
    err += xl * yl
    return err


def _two_sum(op: str, x: np.ndarray, y: np.ndarray, s: np.ndarray) -> np.ndarray:
    """TwoSum's exact error of ``s = x ± y`` (NaN where a step overflowed)."""
    yv = s - x                        # the part of s that ±y gave
    t = s - yv
    np.subtract(x, t, out=t)          # x's part that s lost
    if op == "add":
        np.subtract(y, yv, out=yv)
        t += yv
    else:
        np.add(y, yv, out=yv)         # -((-y) - yv)
        t -= yv
    return t


class _Seen:
    """Whether some chunk of the call was inexact (then no later chunk needs
    to look, when per-element flags are not returned)."""

    def __init__(self) -> None:
        self.inexact = False
        self.lock = threading.Lock()


def fast_op(op: str, key: tuple[Any, ...], chunk_op: ChunkOp, return_flags: bool
            ) -> Callable[[list[np.ndarray], Any], tuple[np.ndarray, Any]] | None:
    """The chunk function of FP64 ``op`` (add, sub, mul, div, sqrt) in a
    deterministic mode, or None where this path does not serve the setting.
    ``chunk_op`` is the integer path, given the lanes this one cannot prove."""
    mode, _saturate, ftz, daz = key[:4]
    if op not in ("add", "sub", "mul", "div", "sqrt") or mode not in MODES:
        return None
    seen = _Seen()
    plain = mode is Rounding.RNE and not return_flags

    def compute(cs: list[np.ndarray], rand: Any) -> tuple[np.ndarray, Any]:
        xs = [c.view(_F64) for c in cs]
        with np.errstate(all="ignore"):   # the lanes that raise are redone
            if plain:
                codes, flags, redo = _nearest(op, xs, ftz, daz, seen)
            else:
                codes, flags, redo = _rounded(op, xs, mode, ftz, daz)
        if redo.size:
            sub = [c[redo].astype(U64) for c in cs]
            redo_codes, redo_flags = chunk_op(FP64, sub, key, None)
            codes[redo] = redo_codes
            if isinstance(flags, int):
                flags |= int(np.bitwise_or.reduce(redo_flags)) if redo_flags.size else 0
            else:
                flags[redo] = redo_flags
        return codes, flags

    return compute


def _special_lanes(op: str, xs: list[np.ndarray], s: np.ndarray, ftz: bool, daz: bool,
                   mode: Rounding) -> np.ndarray:
    """The lanes whose results are not the machine's (or not provably so),
    before the error terms: a boolean mask."""
    a = np.abs(s)
    if op in ("add", "sub"):
        redo = ~(a <= _MAX)                              # NaN and infinite sums
        if ftz:
            redo |= (a < _MIN_NORMAL) & (a != 0)
        if mode is Rounding.RDN:
            redo |= s == 0
    else:
        redo = ~((a >= _SMALL) & (a < _MAX))
        if op == "div":
            redo |= ~(np.abs(xs[0]) >= _SMALL) | ~(np.abs(xs[1]) >= _MIN_NORMAL)
        elif op == "sqrt":
            redo |= ~(xs[0] >= _SMALL)
    if daz:
        for x in xs:
            ax = np.abs(x)
            redo |= (ax < _MIN_NORMAL) & (ax != 0)
    return redo


def _result(op: str, xs: list[np.ndarray]) -> np.ndarray:
    if op == "add":
        return xs[0] + xs[1]
    if op == "sub":
        return xs[0] - xs[1]
    if op == "mul":
        return xs[0] * xs[1]
    if op == "div":
        return xs[0] / xs[1]
    return np.sqrt(xs[0])


def _error(op: str, xs: list[np.ndarray], s: np.ndarray) -> np.ndarray:
    """An array whose sign is that of ``exact - s`` in every provable lane
    (the exact error itself for sums and products); NaN or infinite where a
    step overflowed."""
    if op in ("add", "sub"):
        return _two_sum(op, xs[0], xs[1], s)
    if op == "mul":
        return _two_product(xs[0], xs[1], s)
    if op == "div":
        x, y = xs
        hi = s * y
        rem = x - hi
        rem -= _two_product(s, y, hi)
        # the exact quotient lies on the remainder's side of s for y > 0
        return np.where(y < 0, -rem, rem)
    x = xs[0]
    hi = s * s
    rem = x - hi
    rem -= _two_product(s, s, hi)
    return rem


def _nearest(op: str, xs: list[np.ndarray], ftz: bool, daz: bool, seen: _Seen
             ) -> tuple[np.ndarray, int, np.ndarray]:
    """Round to nearest even, the flags ORed into one int."""
    s = _result(op, xs)
    redo_mask = _special_lanes(op, xs, s, ftz, daz, Rounding.RNE)
    flags = 0
    if not seen.inexact:
        err = _error(op, xs, s)
        redo_mask |= ~np.isfinite(err)
        inexact = (err != 0) & ~redo_mask
        if inexact.any():
            flags = INEXACT
            with seen.lock:
                seen.inexact = True
    else:
        flags = INEXACT
    return s.view(U64), flags, np.flatnonzero(redo_mask)


def _rounded(op: str, xs: list[np.ndarray], mode: Rounding, ftz: bool, daz: bool
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Any deterministic mode, per-element flags."""
    s = _result(op, xs)
    redo_mask = _special_lanes(op, xs, s, ftz, daz, mode)
    err = _error(op, xs, s)
    redo_mask |= ~np.isfinite(err)
    inexact = err != 0
    inexact &= ~redo_mask
    codes = s.view(U64)
    if mode is not Rounding.RNE and inexact.any():
        positive = s > 0
        away = inexact & ((err > 0) == positive)        # the exact result beyond s
        toward = inexact & ~away
        if mode is Rounding.RTZ:
            codes -= toward
        elif mode is Rounding.RAZ:
            codes += away
        elif mode is Rounding.RUP:
            codes += away & positive
            codes -= toward & ~positive
        elif mode is Rounding.RDN:
            codes += away & ~positive
            codes -= toward & positive
        elif mode is Rounding.RTO:
            even = (codes & _ONE) == 0
            codes += away & even
            codes -= toward & even
        elif mode is Rounding.RNA and op in ("add", "sub", "mul"):
            # a tie: the error is half the spacing beyond s (IEEE's
            # spacing, with s's sign), and s is the one toward zero
            codes += away & (err == np.spacing(s) * 0.5)
    flags = np.where(inexact, U8(INEXACT), U8(0))
    return codes, flags, np.flatnonzero(redo_mask)
