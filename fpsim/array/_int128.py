"""Exact integer arithmetic for FP64's significands on arrays: 128-bit
products and sums held as two uint64 words, reduced to the kernel's input.

The integer paths of :mod:`fpsim.array._arith` hold a product of two
significands in one uint64 for formats of precision up to 31.  FP64's
significands have 53 bits, so its products have up to 106: here they are
computed exactly as ``(hi, lo)`` pairs (``value = hi × 2**64 + lo``), added
to an aligned third operand for ``fma`` exactly, and cut to the kernel's
``(sig, exp, sticky)`` (:mod:`fpsim.array._kernel`) with ``sig`` of 62 bits
and a sticky bit, which holds the ``precision + 1`` bits the kernel reads.
Every function is checked against Python integers in the test suite.
"""

from __future__ import annotations

import numpy as np

from ..modes import Rounding
from ._fp64 import two_product
from ._kernel import I64, U64, bit_length

_MASK32 = U64(0xFFFFFFFF)
_TOP = U64(1 << 63)
# A zero operand's top bit: far below any nonzero one, so it never sets an alignment.
_FLOOR = np.iinfo(I64).min // 4
# The width of an exact fma sum's window: the larger term's top bit at 126.
_WINDOW = 126
# The kernel's significand: 62 bits (below 2**62).
_KEEP = 62


def mul_128(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``a × b`` of uint64 arrays as ``(hi, lo)``, exact (32-bit limbs)."""
    a0, a1 = a & _MASK32, a >> U64(32)
    b0, b1 = b & _MASK32, b >> U64(32)
    p00, p01, p10, p11 = a0 * b0, a0 * b1, a1 * b0, a1 * b1
    mid = (p00 >> U64(32)) + (p01 & _MASK32) + (p10 & _MASK32)   # below 3 × 2**32
    lo = (p00 & _MASK32) | ((mid & _MASK32) << U64(32))
    hi = p11 + (p01 >> U64(32)) + (p10 >> U64(32)) + (mid >> U64(32))
    return hi, lo


def bit_length_64(x: np.ndarray) -> np.ndarray:
    """Bit lengths of any uint64 values, as int64 (the kernel's
    :func:`~fpsim.array._kernel.bit_length` below the top bit)."""
    return np.where((x & _TOP) != 0, 64, bit_length(x & ~_TOP))


def bit_length_128(hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
    """Bit lengths of ``(hi, lo)`` pairs."""
    return np.where(hi != 0, 64 + bit_length_64(hi), bit_length_64(lo))


def shift_left(hi: np.ndarray, lo: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(hi, lo) << s`` for ``0 <= s < 128`` (bits above 128 are the caller's
    to avoid)."""
    s = s.astype(I64)
    small = s < 64
    a = np.clip(s, 0, 63).astype(U64)
    # (hi << a) | (lo >> (64 - a)), the second term absent for a == 0
    carry = np.where(a == 0, U64(0), lo >> np.clip(64 - s, 1, 63).astype(U64))
    hi_small = (hi << a) | carry
    lo_small = lo << a
    hi_big = lo << np.clip(s - 64, 0, 63).astype(U64)
    return np.where(small, hi_small, hi_big), np.where(small, lo_small, U64(0))


def shift_right(hi: np.ndarray, lo: np.ndarray, s: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(hi, lo) >> s`` for ``s >= 0`` (any size) and whether nonzero bits
    were shifted out."""
    s = s.astype(I64)
    a = np.clip(s, 0, 63).astype(U64)
    b = np.clip(s - 64, 0, 63).astype(U64)
    carry = np.where(a == 0, U64(0), hi << np.clip(64 - s, 1, 63).astype(U64))
    lo_small = (lo >> a) | carry
    lost_small = (lo & ((U64(1) << a) - U64(1))) != 0
    lo_big = hi >> b
    lost_big = (lo != 0) | ((hi & ((U64(1) << b) - U64(1))) != 0)
    small, gone = s < 64, s >= 128
    new_lo = np.where(small, lo_small, np.where(gone, U64(0), lo_big))
    new_hi = np.where(small, hi >> a, U64(0))
    lost = np.where(small, lost_small, np.where(gone, (hi | lo) != 0, lost_big))
    return new_hi, new_lo, lost


def to_kernel(hi: np.ndarray, lo: np.ndarray, exp: np.ndarray, sticky: np.ndarray | None
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The exact value ``(hi × 2**64 + lo + d) × 2**exp`` (``0 < d < 1``
    where ``sticky``) as the kernel's ``(sig, exp, sticky)``: ``sig`` below
    2**62, the bits shifted out ORed into the sticky bit.  A sticky value
    must be at least 2**62 (so that ``sig`` keeps 62 bits)."""
    shift = np.maximum(bit_length_128(hi, lo) - _KEEP, 0)
    _, sig, lost = shift_right(hi, lo, shift)
    if sticky is not None:
        lost = lost | sticky
    return sig, exp + shift, lost


def product(sa: np.ndarray, sb: np.ndarray, exp: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``sa × sb × 2**exp`` (significands below 2**62) as the kernel's input."""
    hi, lo = mul_128(sa, sb)
    return to_kernel(hi, lo, exp, None)


def fma_sum(np_: np.ndarray, sa: np.ndarray, sb: np.ndarray, ep: np.ndarray,
            nc: np.ndarray, sc: np.ndarray, ec: np.ndarray, mode: Rounding
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``±sa×sb×2**ep ± sc×2**ec`` (significands of at most 53 bits) as
    ``(negative, sig, exp, sticky)``, the form
    :func:`fpsim.array._arith._exact_sum` gives for narrower formats.

    The product (up to 106 bits) and the addend are placed in a 128-bit
    window whose top bit 126 holds the larger term's leading bit; the
    smaller term loses bits below bit 0 only when it lies wholly below the
    larger one's last bit (the product has at most 106 bits, the addend
    53), and then the sum is at least 2**124, so subtracting a lost part
    ``d`` is ``(s - 1) + (1 - d)``.  An exact zero sum has IEEE 754 §6.3's
    sign."""
    p_hi, p_lo = mul_128(sa, sb)
    zero_c = np.zeros_like(sc)
    top_p = np.where((p_hi | p_lo) == 0, _FLOOR, ep + bit_length_128(p_hi, p_lo))
    top_c = np.where(sc == 0, _FLOOR, ec + bit_length_64(sc))
    base = np.maximum(top_p, top_c) - _WINDOW
    terms = []
    for hi, lo, e in ((p_hi, p_lo, ep), (zero_c, sc, ec)):
        shift = e - base
        lh, ll = shift_left(hi, lo, np.clip(shift, 0, 127))
        rh, rl, lost = shift_right(hi, lo, np.clip(-shift, 0, 1 << 20))
        left = shift >= 0
        terms.append((np.where(left, lh, rh), np.where(left, ll, rl), ~left & lost))
    (ah, al, lost_a), (bh, bl, lost_b) = terms
    same = np_ == nc
    # |a| >= |b|?
    a_first = (ah > bh) | ((ah == bh) & (al >= bl))
    big_h, big_l = np.where(a_first, ah, bh), np.where(a_first, al, bl)
    small_h, small_l = np.where(a_first, bh, ah), np.where(a_first, bl, al)
    add_l = big_l + small_l
    add_h = big_h + small_h + (add_l < big_l).astype(U64)
    sub_l = big_l - small_l
    sub_h = big_h - small_h - (big_l < small_l).astype(U64)
    hi, lo = np.where(same, add_h, sub_h), np.where(same, add_l, sub_l)
    negative = np.where(same, np_, np.where(a_first, np_, nc))
    sticky = lost_a | lost_b
    # a lost part of the subtrahend: one less, and sticky
    borrow = sticky & ~same
    lo2 = lo - borrow.astype(U64)
    hi = hi - (borrow & (lo == 0)).astype(U64)
    lo = lo2
    zero = ((hi | lo) == 0) & ~sticky
    negative = np.where(zero, np.where(same, np_, mode is Rounding.RDN), negative)
    sig, exp, sticky = to_kernel(hi, lo, base, sticky)
    return negative, sig, exp, sticky


def root(sa: np.ndarray, ea: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``sqrt(sa × 2**ea)`` for significands of at most 53 bits, as the
    kernel's ``(sig, exp, sticky)`` with two bits below the root's 53: the
    radicand scaled to ``[1, 4)`` (exact), its float64 square root ``s``
    (IEEE: correctly rounded), and the sign of the exact remainder
    ``m - s**2`` (Dekker's product: exact, the values being near 1).  A root
    of a 53-bit radicand is never halfway between two 53-bit values (the
    square of a 54-bit odd significand has more than 53 significant bits), so
    the root lies strictly between ``s`` and the midpoint on the
    remainder's side; in quarter units of ``s``'s last place that interval
    contains no point the rounding reads, and neither does ``4s ± 1`` plus a
    part, which also keeps, just below a power of two (where the spacing
    halves), the root above the midpoint that round to nearest chose ``s``
    by.  Deterministic modes only (stochastic rounding would read more
    bits).  The
    caller checks that the machine's float64 is IEEE's
    (:func:`fpsim._machine.float64_ops_are_ieee`)."""
    n = bit_length_64(sa)
    zero = sa == 0
    # sa × 2**ea = m × 2**(2j) with m in [1, 4): m = sa × 2**(ea - 2j), exact in float64.
    top = ea + n - 1                      # the radicand's exponent
    j = np.floor_divide(top, 2)
    m = np.ldexp(sa.astype(np.float64), (ea - 2 * j).astype(np.int32))
    s = np.sqrt(m)                        # in [1, 2)
    hi = s * s
    lo = np.empty_like(s)
    two_product(s, s, hi, lo)
    rem = (m - hi) - lo                   # exact: m - hi is (Sterbenz) and so is the rest
    bits = s.view(U64)
    sig = ((bits & U64((1 << 52) - 1)) | U64(1 << 52)) << U64(2)
    sig = np.where(rem < 0, sig - U64(1), np.where(rem > 0, sig + U64(1), sig))
    sig = np.where(zero, U64(0), sig)
    return sig, np.where(zero, 0, j - 54), (rem != 0) & ~zero

