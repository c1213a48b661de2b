"""``floor`` and ``ceil`` of ``log2(v)`` rounded to a format first, as
libraries that take ``torch.log2`` of an FP32 (or BF16, FP16) value before
``floor``/``ceil`` compute a scale's exponent: near a power of two the
rounded logarithm lands on the integer, so the exponent is one off the
exact ``floor(log2(v))`` or ``ceil(log2(v))`` (torchao's RCEIL fallback and
``round_scales_to_power_of_2``, ModelOpt's MX exponents, brevitas' MX
exponents: ``tools/quant_peers/``).

The rounding is correct rounding to nearest even (torch's ``log2`` agrees
with it wherever ``floor`` and ``ceil`` can tell: measured exhaustively
near every power of two, ``tools/quant_peers/torchao-0.18.0.md``).  For a
value ``v`` in ``[2**n, 2**(n+1))`` (not a power of two), ``floor(RN(log2
v))`` is ``n + 1`` exactly when ``log2 v`` is at least ``n + 1`` minus half
the gap below ``n + 1`` in the format, and ``ceil(RN(log2 v))`` is ``n``
exactly when ``log2 v`` is at most ``n`` plus half the gap above ``n``.
Each comparison is ``-log1p(-t)`` or ``log1p(t)`` (``t`` exact) against
``half_gap × ln 2``: decided in float64 where the two are more than
``2**-40`` apart relative (float64's ``log1p`` is within a few units of
2**-52), else by :mod:`decimal` at 60 digits (``log2`` of a binary
fraction that is not a power of two is irrational: never equal).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from decimal import Decimal, localcontext

import numpy as np

from ..formats import Format

__all__ = ["floor_log2_rounded", "ceil_log2_rounded"]

_LN2 = math.log(2.0)
_MARGIN = 2.0 ** -40


def _half_gap(n: np.ndarray, fmt: Format, toward_up: bool) -> np.ndarray:
    """Half the distance from each integer ``n`` to its neighbour in
    ``fmt`` (above it when ``toward_up``, else below)."""
    mag = np.abs(n).astype(np.float64)
    q = np.floor(np.log2(np.where(mag == 0, 1.0, mag)))   # 2**q <= |n| (exact for ints)
    ulp = np.exp2(q - fmt.precision + 1)
    # moving toward zero from a power of two crosses into the binade below
    toward_zero = (n > 0) != toward_up
    ulp = np.where(toward_zero & (mag == np.exp2(q)), ulp / 2, ulp)
    return np.where(n == 0, float(fmt.min_subnormal), ulp) / 2


def _ln2_decimal() -> Decimal:
    with localcontext() as c:
        c.prec = 60
        return Decimal(2).ln()


def _at_most(lhs: np.ndarray, h: np.ndarray, exact: Callable[[int], Decimal]) -> np.ndarray:
    """``lhs <= h · ln 2`` elementwise for positive reals, ``lhs`` computed in
    float64 (``exact(i)`` gives element i's as a Decimal where float64
    cannot tell; ``h`` is exact)."""
    rhs = h * _LN2
    out = lhs < rhs
    unsure = np.abs(lhs - rhs) <= rhs * _MARGIN
    if unsure.any():
        ln2 = _ln2_decimal()
        for i in np.flatnonzero(unsure):
            with localcontext() as c:
                c.prec = 60
                out.flat[i] = exact(int(i)) <= Decimal(float(h.flat[i])) * ln2
    return out


def _split(v: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``n = floor(log2 v)``, ``s = v / 2**n`` in [1, 2) (exact), and which
    values are powers of two, for positive finite ``v``."""
    m, e = np.frexp(v)
    n = e.astype(np.int64) - 1
    s = m * 2.0
    return n, s, s == 1.0


def _prepare(v: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    v = np.asarray(v, np.float64)
    special = ~(np.isfinite(v) & (v > 0))
    n, s, pow2 = _split(np.where(special, 1.0, v))
    return special, n, s, pow2


def floor_log2_rounded(v: np.ndarray, fmt: Format | None) -> tuple[np.ndarray, np.ndarray]:
    """``floor(RN_fmt(log2(v)))`` (int64) for each float64 value, and which
    values are special (zero, negative, infinite, NaN: their entry of the
    first array is 0).  ``fmt`` None: the exact ``floor(log2(v))`` (a row
    without its ``log2_rounded`` bug).

    >>> import numpy as np
    >>> from fpsim.formats import FP32
    >>> v = np.array([2.0**20 * (1 - 2.0**-24), 3.0])
    >>> floor_log2_rounded(v, FP32)[0].tolist(), floor_log2_rounded(v, None)[0].tolist()
    ([20, 1], [19, 1])
    """
    special, n, s, pow2 = _prepare(v)
    if fmt is None:
        return np.where(special, 0, n), special
    t = 1.0 - s / 2.0                            # v / 2**(n+1) = 1 - t, exact
    h = _half_gap(n + 1, fmt, toward_up=False)
    with np.errstate(divide="ignore"):
        lhs = -np.log1p(-t)

    def exact(i: int) -> Decimal:
        return -(1 - Decimal(float(t.flat[i]))).ln()

    up = _at_most(lhs, h, exact) & ~pow2 & ~special
    return np.where(special, 0, n + up), special


def ceil_log2_rounded(v: np.ndarray, fmt: Format | None) -> tuple[np.ndarray, np.ndarray]:
    """``ceil(RN_fmt(log2(v)))`` (int64) for each float64 value, and which
    values are special (as :func:`floor_log2_rounded`; ``fmt`` None: the
    exact ``ceil(log2(v))``).

    >>> import numpy as np
    >>> from fpsim.formats import FP32
    >>> v = np.array([2.0**20 * (1 + 2.0**-23), 0.75])
    >>> ceil_log2_rounded(v, FP32)[0].tolist(), ceil_log2_rounded(v, None)[0].tolist()
    ([20, 0], [21, 0])
    """
    special, n, s, pow2 = _prepare(v)
    if fmt is None:
        return np.where(special, 0, np.where(pow2, n, n + 1)), special
    t = s - 1.0                                  # v / 2**n = 1 + t, exact
    h = _half_gap(n, fmt, toward_up=True)

    def exact(i: int) -> Decimal:
        return (1 + Decimal(float(t.flat[i]))).ln()

    stay = _at_most(np.log1p(t), h, exact) | pow2
    return np.where(special, 0, np.where(stay, n, n + 1)), special
