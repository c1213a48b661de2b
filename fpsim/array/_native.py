"""Rounding float64 values into FP32 by the machine's own conversion, where
that is provably the kernel's result.

numpy's float64 → float32 cast is the processor's conversion: IEEE
roundTiesToEven when the floating-point unit is in its default rounding
mode.  Subnormal results depend on the unit's flush-to-zero setting, and the
rounding mode can be changed by any library in the process, so the cast
alone is not a golden model.  This module uses it only for *normal* results
(``2**-126 <= |v|`` and a result below FP32's max, which no flush setting
touches), checks the unit's rounding mode on every call, and derives the
other modes from the round-to-nearest result and the side on which the
exact value lies:

* the value to round is ``v`` (float64) or, where ``sticky`` is true, a
  value strictly between ``|v|`` and the next float64 magnitude (see
  :mod:`fpsim.array._kernel`); ``r = float32(v)``;
* the exact value is above ``|r|`` in magnitude where ``|v| > |r|``, or
  ``|v| == |r|`` with ``sticky``; below where ``|v| < |r|``; since ``r`` is
  on FP32's grid and the float64 grid is finer, ``v + sticky`` never
  crosses ``r``;
* round to nearest can differ from the cast only at a midpoint ``v`` of
  FP32's grid: with ``sticky`` (ties to even) or at every midpoint (ties
  away), the result is the neighbour away from zero where the cast went
  toward zero;
* toward zero, up and down step ``r``'s code by one where it lies on the
  wrong side.  A code plus one is the next larger magnitude, minus one the
  next smaller (normal results only: no step leaves the normal range).

Everything else (zeros, subnormal and overflowing results, infinities,
NaNs, round-to-odd and stochastic rounding, or a unit not rounding to
nearest) is left to the kernel: the caller rounds the lanes this returns as
not done.  The tests compare these lanes with the scalar model at every
boundary the rules above name.
"""

from __future__ import annotations

from typing import Any

import numpy as np

# (re-exported: callers read them through this module, so that a test can
# pretend the unit misbehaves)
from .._machine import float16_casts_are_ieee as float16_casts_are_ieee
from .._machine import float32_adds_are_ieee as float32_adds_are_ieee
from .._machine import rounds_to_nearest as rounds_to_nearest
from .._machine import two_sum_error
from ..formats import FP32
from ..modes import Rounding
from ..rounding import INEXACT

U64 = np.uint64
U8 = np.uint8

MODES = frozenset({Rounding.RNE, Rounding.RNA, Rounding.RTZ, Rounding.RUP, Rounding.RDN})

_MIN_NORMAL = float(FP32.min_normal)
_MAX = float(FP32.max)
# Below FP32's last place, a float64 significand has 29 more bits; a
# midpoint of FP32's grid has exactly the top one of them set.
_LOW_MASK = U64((1 << 29) - 1)
_HALF = U64(1 << 28)

def usable(key: tuple[Any, ...]) -> bool:
    """Whether :func:`round_fp32` may serve a call with these settings: a
    mode it derives, on a unit that rounds to nearest."""
    return key[0] in MODES and rounds_to_nearest()


def round_fp32(v: np.ndarray, sticky: np.ndarray | None, mode: Rounding, flags: bool = True
               ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    """FP32 codes (uint32) and flags of the values ``v`` (float64, with
    ``sticky`` as in the kernel), and which lanes are done; the others'
    codes and flags are meaningless and must be rounded by the kernel.
    ``flags=False`` (the matrix units, which raise none): no flags (None),
    and round to nearest even without ``sticky`` is the cast alone.

    The caller checks :func:`usable` once per call.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        r = v.astype(np.float32)
        mag_v = np.abs(v)
        mag_r = np.abs(r).astype(np.float64)
    done = (mag_v >= _MIN_NORMAL) & (mag_r < _MAX)  # NaN compares false
    codes = r.view(np.uint32)
    if not flags and sticky is None and mode is Rounding.RNE:
        return codes, None, done
    above = mag_v > mag_r
    below = mag_v < mag_r
    inexact = above | below
    if sticky is not None:
        tied = sticky & ~inexact
        above |= tied
        inexact |= sticky
    if mode is Rounding.RNE or mode is Rounding.RNA:
        away = toward = None
        if mode is Rounding.RNA or sticky is not None:
            midpoint = (v.view(U64) & _LOW_MASK) == _HALF
            if mode is Rounding.RNE:
                midpoint &= sticky
            away = midpoint & above
    else:
        negative = np.signbit(v)
        if mode is Rounding.RTZ:
            away, toward = None, below
        elif mode is Rounding.RUP:
            away, toward = above & ~negative, below & negative
        else:  # RDN
            away, toward = above & negative, below & ~negative
    if away is not None:
        codes += away
    if toward is not None:
        codes -= toward
    return codes, inexact.view(U8) * U8(INEXACT) if flags else None, done


def truncate_fp32(v: np.ndarray, bits: int) -> tuple[np.ndarray, np.ndarray]:
    """Round toward zero to ``bits`` (at most 23) fraction bits in FP32's
    exponent range (FP32 itself at 23; a matrix unit's narrower result, such
    as Hopper FP8's 13 bits, below): FP32 codes (uint32) and which lanes are
    done.  For a normal float64 ``v`` in FP32's normal range, clearing the
    float64 fraction's low ``52 - bits`` bits is that rounding, and the
    result is exact in float32, so the cast is exact whatever the unit's
    rounding mode.  Zeros, subnormal and overflowing results, infinities and
    NaNs are not done (the kernel's).  No flags: the callers (matrix units)
    raise none."""
    mag = np.abs(v)
    done = (mag >= _MIN_NORMAL) & (mag < 2.0 ** (FP32.emax + 1))  # NaN compares false
    cut = U64(~((1 << (52 - bits)) - 1) & 0xFFFFFFFFFFFFFFFF)
    with np.errstate(over="ignore", invalid="ignore"):  # (lanes not done)
        codes = (v.view(U64) & cut).view(np.float64).astype(np.float32).view(np.uint32)
    return codes, done


def nearest_even_bits(v: np.ndarray, fmt: Any) -> tuple[np.ndarray, np.ndarray]:
    """Round to nearest even into a binary format ``fmt`` narrower than
    float64 with IEEE-style codes (FP16, BF16): codes (uint64) and which
    lanes are done.  For a normal float64 ``v`` whose magnitude lies in
    ``fmt``'s normal range, adding ``2**(d-1) - 1`` plus the kept last bit to
    the float64 bit pattern and clearing its low ``d = 52 - mantissa_bits``
    bits is round-to-nearest-even to ``fmt``'s precision (a carry out of the
    fraction steps the exponent, as it should); the pattern's top bits are
    then ``fmt``'s code but for the exponent's bias.  Zeros, subnormal and
    overflowing results, infinities and NaNs are not done (the kernel's).
    No flags: the callers (matrix units) raise none."""
    m = fmt.mantissa_bits
    drop = 52 - m
    # on the codes with the sign bit: the rounding carries at most into the
    # exponent of a value below 2**1023 (the lanes not done: garbage), so the
    # sign stays bit 63, and is moved to the format's own sign bit at the end
    bits = v.view(U64)
    up = np.right_shift(bits, U64(drop))
    up &= U64(1)
    up += U64((1 << (drop - 1)) - 1)
    up += bits
    up &= U64(~((1 << drop) - 1) & 0xFFFFFFFFFFFFFFFF)
    mag = np.bitwise_and(bits, U64((1 << 63) - 1))
    done = mag >= _bits64(float(fmt.min_normal))
    np.bitwise_and(up, U64((1 << 63) - 1), out=mag)
    done &= mag <= _bits64(float(fmt.max))  # (NaN: above every finite code)
    up >>= U64(drop)
    up &= U64((1 << (63 - drop)) - 1)  # (the sign removed, ...)
    up -= U64(((1023 - fmt.bias) << m) & 0xFFFFFFFFFFFFFFFF)
    np.right_shift(bits, U64(63), out=mag)  # (... and put back at the format's)
    mag <<= U64(fmt.width - 1)
    up |= mag
    return up, done


def nearest_even_fp16(v: np.ndarray, subnormals: bool = False
                      ) -> tuple[np.ndarray, np.ndarray]:
    """:func:`nearest_even_bits` into FP16 by numpy's own conversion of
    float64 to float16, which rounds to nearest even from the float64 bits
    (``npy_double_to_half``), not through float32: codes (uint16) and which
    lanes are done: those whose rounded magnitude is finite and whose value
    is normal, or with ``subnormals`` any nonzero value (the caller keeps
    subnormal results).  The caller checks
    :func:`fpsim._machine.float16_casts_are_ieee` first (a hardware
    conversion follows the unit's settings).  ``tests/test_mma_tile.py``
    proves it equal to the kernel at every tie and boundary."""
    with np.errstate(over="ignore", invalid="ignore"):
        h = v.astype(np.float16).view(np.uint16)
    done = (h & np.uint16(0x7C00)) != np.uint16(0x7C00)
    if subnormals:
        done &= v != 0
    else:
        done &= np.abs(v) >= 2.0**-14
    return h, done


def _bits64(x: float) -> np.uint64:
    """The code of a nonnegative float64 (codes order as the magnitudes)."""
    return np.array(x).view(U64)[()]


# -- sequential FP32 sums ----------------------------------------------------------------------
#
# ``a + b`` of two FP32 values in round-to-nearest-even: the machine's float32
# addition is IEEE's, provided the unit rounds to nearest and neither flushes
# subnormal results (FTZ) nor reads subnormal operands as zero (DAZ).  A sum
# of two FP32 values is a multiple of 2**-149, so a subnormal sum is exact:
# no sum raises UNDERFLOW, and overflow shows as a non-finite result.  Only
# INEXACT remains, which TwoSum's error term decides exactly.

def running_sum_fp16(terms: np.ndarray, initial: np.ndarray) -> tuple[np.ndarray, bool] | None:
    """``((initial + terms[0]) + terms[1]) + ...`` along the first axis of a
    float16 array, each sum rounded to nearest even: the sum of two FP16
    values is exact in float64 (their bits span at most 41 places), and
    numpy's float64 -> float16 cast rounds it once; whether any sum was
    inexact (the rounded sum differs from the exact one).  No sum of FP16
    values is tiny and inexact (below 2**-14 it is a multiple of 2**-24, a
    subnormal), so no underflow is missed.  None where a result is not
    finite (the caller takes the step-by-step path).  The caller checks
    :func:`float16_casts_are_ieee` first."""
    acc = initial.astype(np.float64)
    exact = np.empty_like(acc)
    rounded = np.empty(acc.shape, np.float16)
    inexact = False
    with np.errstate(all="ignore"):
        for c in terms:
            np.add(acc, c, out=exact)
            np.copyto(rounded, exact, casting="unsafe")
            np.copyto(acc, rounded)
            if not inexact:
                inexact = bool((acc != exact).any())
    if not np.isfinite(acc).all():  # (an infinite or NaN initial value included)
        return None
    return rounded, inexact


def running_sum(terms: np.ndarray, initial: np.ndarray) -> tuple[np.ndarray, bool] | None:
    """``((initial + terms[0]) + terms[1]) + ...`` along the first axis of a
    float32 or float64 array, each sum rounded to nearest even by the
    machine, and whether any was inexact (TwoSum's error, exact wherever the
    sum is finite); None where a result is not finite (overflow, infinities
    or NaNs: the caller takes the step-by-step path).  A sum of two values
    of the array's own type that falls below its smallest normal is exact,
    so no sum underflows.  The caller checks :func:`float32_adds_are_ieee`
    or :func:`fpsim._machine.float64_ops_are_ieee` first."""
    acc = initial.copy()
    s = np.empty_like(acc)
    inexact = False
    with np.errstate(all="ignore"):
        for c in terms:
            if inexact:  # nothing left to learn but the sums
                np.add(acc, c, out=acc)
                continue
            np.add(acc, c, out=s)
            inexact = bool(two_sum_error(s, acc, c).any())
            acc, s = s, acc
    if not np.isfinite(acc).all():  # (an infinite or NaN initial value included)
        return None
    return acc, inexact
