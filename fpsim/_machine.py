"""What this machine's binary floating point does, checked when it matters.

numpy's float32 arithmetic and its float64 → float32 cast are the
processor's: IEEE 754 operations in the unit's current rounding mode, with
subnormals flushed where the unit is set to flush them.  Any library loaded
into the process may change those settings, so a fast path that lets the
machine compute a golden result first asks, on every call, whether the unit
still behaves as IEEE's defaults (round to nearest even, subnormals kept).
Each check costs a few scalar operations.
"""

from __future__ import annotations

import functools

import numpy as np

__all__ = ["rounds_to_nearest", "float32_adds_are_ieee", "float64_ops_are_ieee",
           "float16_casts_are_ieee",
           "two_sum_error", "reduces_in_order"]

# Values whose round-to-nearest-even in FP32 is known: 1 + 2**-24 (a tie,
# to even: 1), 1 + 3 * 2**-24 (a tie, to even: 1 + 2**-22) and their
# negatives, and 1 + 2**-24 + 2**-52 (above the tie: 1 + 2**-23).
_PROBE = np.array([1 + 2.0**-24, 1 + 3 * 2.0**-24, -(1 + 2.0**-24), -(1 + 3 * 2.0**-24),
                   1 + 2.0**-24 + 2.0**-52])
_PROBE_EXPECTED = np.array([1.0, 1 + 2.0**-22, -1.0, -(1 + 2.0**-22), 1 + 2.0**-23],
                           np.float32)


def rounds_to_nearest() -> bool:
    """Whether the float64 → float32 cast rounds to nearest, ties to even
    (the unit's default; a library may have changed it)."""
    return bool(np.array_equal(_PROBE.astype(np.float32), _PROBE_EXPECTED))


# Values whose round-to-nearest-even in FP16 is known, by hand: ties between
# subnormals (2**-25: to 0; 3 * 2**-25: to 2**-23, code 2), just above one
# (2**-24, code 1), a negative one (code 0x8002), the tie at the top (65520:
# to 65536, that is infinity), a tie and a value above it at 1 (0x3C00,
# 0x3C01), and the subnormal that rounds up to the smallest normal (0x400).
_PROBE16 = np.array([2.0**-25, 3 * 2.0**-25, 2.0**-25 + 2.0**-60, -3 * 2.0**-25, 65520.0,
                     1 + 2.0**-11, 1 + 2.0**-11 + 2.0**-40, 2.0**-14 - 2.0**-26])
_PROBE16_EXPECTED = np.array([0, 2, 1, 0x8002, 0x7C00, 0x3C00, 0x3C01, 0x400], np.uint16)


def float16_casts_are_ieee() -> bool:
    """Whether numpy's float64 → float16 cast rounds to nearest even from the
    float64 value itself (no double rounding through float32), subnormal
    results kept: numpy's own conversion does; a hardware one follows the
    unit's rounding mode and flush settings, checked here."""
    with np.errstate(all="ignore"):
        got = _PROBE16.astype(np.float16).view(np.uint16)
    return bool(np.array_equal(got, _PROBE16_EXPECTED))


_HALF_ULP = np.float32(2.0**-24)
_MIN = np.float32(2.0**-126)


def float32_adds_are_ieee() -> bool:
    """Whether float32 addition here rounds to nearest, ties to even, with
    subnormal results and operands kept (the unit's defaults)."""
    one, third = np.float32(1.0), np.float32(1.0 + 2.0**-23)
    with np.errstate(all="ignore"):
        return bool(one + _HALF_ULP == one                                   # tie: to even
                    and third + _HALF_ULP == np.float32(1.0 + 2.0**-22)      # tie: to even
                    and -one - _HALF_ULP == -one
                    and np.float32(1.5) * _MIN - _MIN == np.float32(2.0**-127)  # no FTZ
                    and np.float32(2.0**-149) + np.float32(0.0) != 0)        # no DAZ


# float64 operations whose IEEE results are known by hand: ties to even in
# a sum (1 + 2**-53 -> 1; (1 + 2**-52) + 2**-53 -> 1 + 2**-51) and in a
# product (3 × RN(1/3) = 1 - 2**-54 -> 1), a product just above a point
# ((1 + 2**-52)**2 = 1 + 2**-51 + 2**-104 -> down), a quotient and square
# roots (1/3, sqrt(2) and its square, known to the last bit), subnormal
# results kept (no FTZ: 1.5 * 2**-1022 - 2**-1022) and subnormal operands
# read (no DAZ: 2**-1074 + 0).
_ONE = np.ones(4)


def float64_ops_are_ieee() -> bool:
    """Whether numpy's float64 add, multiply, divide and square root here
    round to nearest, ties to even, with subnormal results and operands kept
    (the unit's defaults; a library loaded into the process may have
    changed them).  Checked on short arrays, the vector loops' path."""
    one = _ONE
    with np.errstate(all="ignore"):
        tiny = np.full(4, 2.0**-1022)
        return bool((one + 2.0**-53 == 1.0).all()
                    and ((one + 2.0**-52) + 2.0**-53 == 1 + 2.0**-51).all()
                    and (-one - 2.0**-53 == -1.0).all()
                    and ((one + 2.0**-52) * (one + 2.0**-52) == 1 + 2.0**-51).all()
                    and ((one * 3) * (one / 3) == 1.0).all()
                    and (one / 3 == 0.333333333333333314829616256247).all()
                    and (np.sqrt(one * 2) == 1.4142135623730951).all()
                    and (np.sqrt(one * 2) * np.sqrt(one * 2) == 2.0000000000000004).all()
                    and (tiny * 1.5 - tiny == 2.0**-1023).all()
                    and (np.full(4, 2.0**-1074) + 0.0 != 0).all())


def two_sum_error(s: np.ndarray, x: np.ndarray, y: np.ndarray,
                  work: tuple[np.ndarray, np.ndarray] | None = None,
                  negate_y: bool = False) -> np.ndarray:
    """The exact error ``(x + y) - s`` of ``s``, the machine's round-to-
    nearest sum of ``x`` and ``y`` (TwoSum, Knuth): every operation below is
    exact where ``s`` is finite.  Nonzero exactly where the sum was inexact
    (NaN where ``s`` overflowed).  With ``negate_y``, of ``s = x - y`` (the
    negation folded in, no copy of ``-y``).  Computed in ``work`` (two
    arrays of ``s``'s shape and dtype; fresh ones if not given), in
    ``work[0]``."""
    yv, t = work if work is not None else (np.empty_like(s), np.empty_like(s))
    np.subtract(s, x, out=yv)   # the part of s that y (or -y) gave
    np.subtract(s, yv, out=t)
    np.subtract(x, t, out=t)    # x - (s - yv)
    if negate_y:
        np.add(y, yv, out=yv)   # minus (-y)'s part that s lost
        np.subtract(t, yv, out=yv)
    else:
        np.subtract(y, yv, out=yv)  # y - yv
        yv += t
    return yv


@functools.cache
def reduces_in_order() -> bool:
    """Whether numpy's ``add.reduce`` of a float32 array down its first
    (slow) axis adds each row to the running result in turn, as numpy's
    documentation of ``sum`` describes (pairwise summation only along the
    fast axis): a column of 1 and then many 2**-24 sums to exactly 1 that
    way (each addition a tie, to even), and to more than 1 in any other
    order.  Answered once per process: it is numpy's code, not the unit's
    state, that decides it (the unit's rounding is checked per call)."""
    n = 4099
    column = np.full(n, np.float32(2.0**-24))
    column[0] = 1.0
    probe = np.repeat(column[:, None], 37, axis=1)
    with np.errstate(all="ignore"):
        total = np.add.reduce(probe, axis=0)
    return bool((total == np.float32(1.0)).all())
