"""The unit's own fixed-point arithmetic: aligning significands to a common
exponent, dropping the bits below the grid, and adding two partial sums.

Everything here is exact integer arithmetic on numpy int64 arrays, one row
per instruction.  Why int64 is wide enough (and why the sums are exact as
float64 too): a product significand held with 23 fraction bits is below
2**25 (a product of two significands in [1, 2) is below 4); with
``extra_bits <= 8`` and a sticky bit a term is below 2**34; a group of at
most 257 terms sums below 2**43; a late join adds at most 8 bits and ``c``:
below 2**53.  :class:`~fpsim.mma.params.MMAParams` enforces those bounds.

The rounding *to the output format* is not here: that is the one rounding
kernel's (:mod:`fpsim.mma._finish`).  The bit dropping here is the hardware's
alignment shifter, part of the operation being modelled.
"""

from __future__ import annotations

import numpy as np

I64 = np.int64

#: Exponent given to an absent term (a zero product or a zero ``c``): far
#: below every real one, so it never is the largest and always shifts out.
ABSENT = -(1 << 20)


def shift_right(mag: np.ndarray, shift: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(mag >> shift, bits_lost)`` for nonnegative int64 ``mag`` and
    ``shift`` (any size: 63 and beyond drop everything)."""
    s = np.minimum(shift, 63)
    kept = np.where(shift >= 63, 0, mag >> s)
    lost = np.where(shift >= 63, mag != 0, (mag & ((np.int64(1) << s) - 1)) != 0)
    return kept, lost


def align_terms(sig: np.ndarray, exp: np.ndarray, negative: np.ndarray, extra_bits: int,
                sticky_bit: bool, min_exponent: int | None) -> tuple[np.ndarray, np.ndarray]:
    """Align terms ``sig × 2**(exp - 23)`` (``sig`` int64 with 23 fraction
    bits, ``exp`` int64, last axis = the terms of one row) to their row's
    largest exponent ``E`` and add them.

    Each magnitude is cut to the grid ``2**(E - 23 - extra_bits)`` by
    truncation (with ``sticky_bit``, one more bit below the grid records
    whether anything was dropped).  Returns ``(E, S)`` with the row's sum
    ``S × 2**(E - 23 - extra_bits - sticky_bit)``, ``S`` signed int64.
    Rows without terms get ``E = ABSENT`` and ``S = 0``.
    """
    big = exp.max(axis=-1) if exp.shape[-1] else np.full(exp.shape[:-1], ABSENT, I64)
    if min_exponent is not None:
        big = np.where(big > ABSENT, np.maximum(big, min_exponent), big)
    shift = big[..., None] - exp
    right = shift - extra_bits
    grown = np.where(right < 0, sig << np.maximum(-right, 0), sig)
    kept, lost = shift_right(grown, np.maximum(right, 0))
    if sticky_bit:
        kept = (kept << 1) | lost.astype(I64)
    total = np.where(negative, -kept, kept).sum(axis=-1, dtype=I64)
    return big, total


def round_shift(value: np.ndarray, shift: np.ndarray, mode: str) -> np.ndarray:
    """``value / 2**shift`` (signed int64) rounded to an integer by
    ``mode`` (``rtz`` truncates the magnitude; ``rdn``, ``rup``, ``rne``)."""
    negative = value < 0
    mag = np.abs(value)
    kept, lost = shift_right(mag, shift)
    if mode == "rdn":
        kept = kept + (lost & negative)
    elif mode == "rup":
        kept = kept + (lost & ~negative)
    elif mode == "rne":
        s = np.minimum(shift, 63)
        rem = np.where(shift >= 63, mag, mag & ((np.int64(1) << s) - 1))
        half = np.where((shift >= 1) & (shift <= 63), np.int64(1) << np.maximum(s - 1, 0), 0)
        above = np.where(shift > 63, False, (rem > half) | ((rem == half) & (kept & 1 == 1)))
        kept = kept + (lost & (shift >= 1) & above)
    return np.where(negative, -kept, kept)


# Two partial sums further apart than this are not aligned at all (the
# smaller is then a sum of zero products or a zero c, so nothing is lost):
# the published model's rule, kept so that absent exponents behave as there.
_FAR = 532


def add_two(e1: np.ndarray, s1: np.ndarray, e2: np.ndarray, s2: np.ndarray, frac: np.ndarray,
            mode: str, grow1: int, grow2: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Add two unnormalized partial sums ``s × 2**(e - frac)``.

    The one with the smaller exponent is shifted right to the larger one's
    by ``mode``.  Before that, both gain ``grow1`` bits when the first is the
    smaller, ``grow2`` when the second is.  Returns ``(E, S, frac)`` with the
    sum ``S × 2**(E - frac)``.  A first operand with ``e1 == ABSENT`` (no
    products at all) is not aligned: the result is the second operand.
    """
    absent = e1 == ABSENT
    big = np.maximum(e1, e2)
    shift = np.abs(e1 - e2)
    shift = np.where(shift > _FAR, 0, shift)
    first_small = (e1 < big) & ~absent
    second_small = (e2 < big) & ~first_small & ~absent
    g = np.where(first_small, grow1, np.where(second_small, grow2, 0)).astype(I64)
    a = s1 << g
    b = s2 << g
    a = np.where(first_small, round_shift(a, shift, mode), a)
    b = np.where(second_small, round_shift(b, shift, mode), b)
    total = np.where(absent, s2, a + b)
    return np.where(absent, e2, big), total, np.where(absent, frac, frac + g)
