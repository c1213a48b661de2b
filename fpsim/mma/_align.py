"""The unit's own fixed-point arithmetic: aligning significands to a common
exponent, dropping the bits below the grid, and adding two partial sums.

Everything here is exact arithmetic, one row per instruction: integer
arithmetic on numpy int64 arrays where terms are shifted, exact float64
values (integers below 2**53 on their grid) where two partial sums are
added.  Why int64 is wide enough (and why the sums are exact as
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


def exponents(values: np.ndarray, emin: int, zero: int) -> np.ndarray:
    """``max(floor(log2|x|), emin)`` of finite float64 ``values`` as int32,
    ``zero`` where a value is zero (the exponent the caller gives a zero:
    ``ABSENT``, an alignment floor, a far negative sentinel)."""
    e = np.frexp(values)[1].astype(np.int32, copy=False)
    e -= 1
    np.maximum(e, emin, out=e)
    e[values == 0] = zero
    return e


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


_ROUND = {"rtz": np.trunc, "rdn": np.floor, "rup": np.ceil, "rne": np.rint}

def add_two(e1: np.ndarray, x1: np.ndarray, e2: np.ndarray, x2: np.ndarray, frac: np.ndarray,
            mode: str, grow1: int, grow2: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Add two unnormalized partial sums, each an exact float64 value ``x``
    on the grid ``2**(e - frac)`` of its exponent ``e`` (int64; ``ABSENT``
    and ``x = 0`` where it has no terms).

    The one with the smaller exponent is cut to the larger one's grid by
    ``mode`` (``rtz`` truncates the magnitude; ``rdn``, ``rup``, ``rne``).
    Before that, both gain ``grow1`` bits (the grid becomes finer by that
    much) when the first is the smaller, ``grow2`` when the second is.
    Returns ``(E, x, frac)``: the sum ``x`` (exact float64) on the grid
    ``2**(E - frac)``.  A first operand with ``e1 == ABSENT`` (no products
    at all) is not aligned: the result is the second operand.  (The
    published model does not align two partial sums more than 532 binades
    apart; the smaller is then a zero, which aligning leaves zero.)

    Exact: on its grid each operand, and the sum, is an integer below 2**53
    (the module's note), so the scalings by powers of two (far inside
    float64's range), the rounding to an integer (``trunc``, ``floor``,
    ``ceil``, ``rint``) and the sum are all exact float64 operations.
    """
    d = e1 - e2  # (exponents: int32 or int64 arrays)
    first_small = (d < 0) & (e1 != ABSENT)
    big = np.maximum(e1, e2)
    if grow1 or grow2:
        g = first_small * np.int32(grow1)
        if grow2:
            g += ((d > 0) & (e1 != ABSENT)) * np.int32(grow2)
        frac = frac + g
    grid = big - frac
    # the larger operand lies on the grid already (it is refined by the growth
    # alone), so rounding it to the grid leaves it: both are rounded, and
    # neither has to be picked out
    R = _ROUND[mode]
    neg = -grid
    total = R(np.ldexp(x1, neg))
    total += R(np.ldexp(x2, neg))
    if np.shape(frac) != big.shape:
        frac = np.broadcast_to(frac, big.shape)
    return big, np.ldexp(total, grid), frac


def cut_normalized(value: np.ndarray, bits: int, mode: str, emin: int) -> np.ndarray:
    """Exact float64 ``value`` cut to ``bits`` fraction bits below its own
    leading bit (its exponent ``max(floor(log2|x|), emin)``), by ``mode``
    (``rtz``, ``rdn``, ``rup``, ``rne``): a normalized register of that
    width (MMA-Sim's ``F2``).

    Exact: ``|x| × 2**(bits - e)`` is below ``2**(bits + 1) <= 2**53``, and
    the scalings are by powers of two inside float64's normal range.

    >>> cut_normalized(np.array([1 + 2.0**-40, -(1 + 2.0**-40)]), 31, "rdn", -126).tolist()
    [1.0, -1.0000000004656613]
    """
    grid = exponents(value, emin, emin) - np.int32(bits)
    return np.ldexp(_ROUND[mode](np.ldexp(value, -grid)), grid)
