"""A block-scaled instruction chained along K over a whole tile of outputs
at once: the fast path of :meth:`fpsim.mma.BlockScaledModel.gemm`, proven
equal to the row model (the model called with ``chain=True``, itself
checked against an independent oracle and MMA-Sim) by
``tests/test_mma_blocktile.py``.

The arithmetic is the row model's (:mod:`fpsim.mma.blockscaled`): terms
with an exponent each, the largest exponent ``E`` of the instruction's
terms (``c`` one of them, a zero term at ``zero_exponent``), every term cut
toward zero to the grid ``2**(E - F)``, the cut terms added exactly, the
sum rounded toward zero into FP32.  Only how much is computed at once
differs.  For a tile of ``Mt`` rows of A and ``Nt`` columns of B:

* ``mxf8f6f4`` (a term per product; ``k`` = the scale block, so one scale
  pair per instruction), in two lanes chosen per output and instruction:

  - **exact** where the exponents prove that no term is cut.  The products
    of row ``m`` and column ``n`` lie between ``2**low`` (their lowest
    possible bit: the smallest exponents of the row's and the column's
    nonzero elements, plus ``eα + eβ``, less both formats' mantissa bits)
    and ``2**(high + 2)`` (the largest exponents), so ``E <= max(ec,
    high)``.  With ``high - low <= F``, ``low >= ec - F`` and (for a
    nonzero ``c``) ``high <= ec + F - 23`` (``c``'s lowest bit, at ``ec -
    23``, is then on the grid; ``ec + 2`` for ``F = 25``), every term lies
    on the grid ``2**(E - F)`` and the instruction's result is the exact
    sum.  The products' sum is a
    float64 matrix product (each partial sum an integer of at most ``F + 7``
    bits on the grid ``2**low``: exact in any order, with fused
    operations too), times ``2**(eα + eβ)``; ``c`` is added and the sum
    rounded to odd at 53 bits (:func:`fpsim.mma._tile._sum_to_odd`:
    float64's sum, its exact error by TwoSum, the last bit set where that
    is not zero), which rounds toward zero into FP32 as the exact sum would
    (Boldo and Melquiond, IEEE Trans. Computers 57(4), 2008);
  - **cut** elsewhere (or everywhere, where the unit does not round to
    nearest): each element's exponent once per tile (int16, a zero far
    below every real one); a product's exponent is the sum ``ea + eb`` plus
    ``eα + eβ`` (products are not renormalized), so ``E`` is a max of small
    integers over the products.  ``c`` is always a term (a zero ``c`` one at
    ``zero_exponent``), so ``E`` is at least ``zero_exponent`` and no other
    zero term's exponent matters.  Each product ``a·b`` is exact in float32
    (significands of at most 4 bits each, magnitudes from 2**-32 to below
    2**32), and so is ``a·b · 2**(eα + eβ + F - E)``: a power of two at most
    ``2**(F + 28)`` (``E`` is at least the product's own exponent), and a
    result below float32's normal range is below 1, cut to 0 as the exact
    one is.  The cut terms are integers below ``2**(F + 2)``, summed in
    float64 (exact).  Where many outputs of a tile are cut, the whole tile
    is (products broadcast over ``(k, Mt, Nt)``; the cut of an output the
    exact lane could take is its exact sum too), else those few, gathered
    in pairs;
* the FP4 kinds (a term per group of 16 products): each group's exact sum
  is one float64 matrix product of the tile (E2M1 products are multiples of
  1/4 below 37: every partial sum of 16 is exact in any order), whether the
  group has a nonzero product another (of the nonzero patterns); the term
  is that sum times the group's two scales (at most 10 + 4 + 4 significant
  bits: exact), cut in float64 (integers below ``2**47``);
* the sum times ``2**(E - F)`` is the exact unrounded result, rounded by
  :func:`to_fp32` (the array rounding kernel) as the row model rounds it.

The caller (:meth:`~fpsim.mma.BlockScaledModel.gemm`) gives finite values
only: an output whose row or column holds a NaN or infinite element or a
NaN scale, or whose ``c`` is not finite, is the row model's.  An infinity
that a block's sum reaches is passed on along the chain, as the row model's
IEEE rule for an infinite ``c`` does.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._machine import rounds_to_nearest
from ..formats import FP32, Format
from ._align import exponents as _exponents
from ._finish import round_to_output
from ._tile import _plane_sum, _sum_to_odd

__all__ = ["chain", "to_fp32"]

_INF32 = 0x7F800000
# Exponent of a zero element: with any other element's it stays far below
# every real product's (int16: two of them still fit).
_ZERO_EXP = -(1 << 14)
# Elements per tile's work array (k, Mt, Nt): 8 MiB of float32.
_LIMIT = 1 << 21
# Columns of B per tile.
_COLUMNS = 512
# The share of a tile's outputs to cut term by term above which the whole
# tile is cut (broadcast products, no exact lane), below which they are
# gathered in pairs (and the others take the exact lane).
_WHOLE = 0.25


def to_fp32(value: np.ndarray) -> np.ndarray:
    """FP32 codes (uint32) of exact float64 sums as the instruction
    delivers them: rounded toward zero (:func:`fpsim.mma._finish.round_to_output`,
    the rounding kernel with its machine lanes), subnormals kept, a
    magnitude of 2**128 or more an infinity, a zero +0."""
    codes = round_to_output(value.reshape(-1), FP32, "rtz", None, True).astype(np.uint32)
    # A zero result is +0, also one that truncates to zero below 2**-149.
    codes[(codes & 0x7FFFFFFF) == 0] = 0
    return codes.reshape(value.shape)


def chain(params: Any, A: np.ndarray, B: np.ndarray, SA: np.ndarray, SB: np.ndarray,
          C: np.ndarray, formats: tuple[Format, Format, Format]) -> np.ndarray:
    """FP32 codes ``(M, N)`` of the instruction chained along K from ``C``.

    ``params``: the :class:`~fpsim.mma.BlockScaledParams`; ``A``: (M, K)
    and ``B``: (K, N) finite float64 element values; ``SA``: (M, K/block)
    and ``SB``: (K/block, N) finite float64 scale values; ``C``: (M, N)
    finite float64; ``formats``: A's, B's and the scales' formats.  K > 0.
    """
    M, K = A.shape
    N = B.shape[1]
    out = np.empty((M, N), np.uint32)
    nt = min(N, _COLUMNS)
    mt = min(M, max(1, _LIMIT // (params.k * max(nt, 1))))
    run = _single if params.group == 1 else _grouped
    for i in range(0, M, mt):
        for j in range(0, N, nt):
            r, s = slice(i, i + mt), slice(j, j + nt)
            out[r, s] = run(params, A[r], B[:, s], SA[r], SB[:, s], C[r, s], formats)
    return out


def _carried(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """The next instruction's ``c`` from the last one's FP32 codes (float64;
    an infinity, which the instruction passes on, read as 0), and where
    those infinities are (None if nowhere)."""
    cv = codes.view(np.float32).astype(np.float64)
    inf = ~np.isfinite(cv)
    if not inf.any():
        return cv, None
    return np.where(inf, 0.0, cv), inf


def _passed(new: np.ndarray, codes: np.ndarray | None, inf: np.ndarray | None) -> np.ndarray:
    """An infinite ``c`` (a block before overflowed) gives that infinity."""
    if inf is not None:
        assert codes is not None
        new[inf] = codes[inf]
    return new


def _bounds(E: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Per block of ``k`` along the first axis and column of element
    exponents ``E`` (``(K, count)``, ``_ZERO_EXP`` for zeros): the smallest
    and the largest exponent of the nonzero elements, int32 ``(K / k,
    count)`` (``-_ZERO_EXP`` and ``_ZERO_EXP`` where none is nonzero)."""
    blocks = E.reshape(E.shape[0] // k, k, E.shape[1]).astype(np.int32)
    high = blocks.max(axis=1)
    low = np.where(blocks <= _ZERO_EXP // 2, -_ZERO_EXP, blocks).min(axis=1)
    return low, high


def _cut_sum(p: Any, S: np.ndarray, P: np.ndarray, both: np.ndarray, c: np.ndarray,
             ec: np.ndarray) -> np.ndarray:
    """The exact unrounded result of one instruction for outputs of any
    shape: ``S`` (w, ...) the products' element exponent sums (int16),
    ``P`` (w, ...) the products (float32, overwritten), ``both`` the scale
    pair's exponent sum, ``c`` and its exponent ``ec`` (float64, int32)."""
    F = p.fraction_bits
    top = np.maximum.reduce(S, axis=0).astype(np.int32)
    absent = top <= _ZERO_EXP // 2  # every product zero
    top += both
    shift = np.maximum(ec, top)  # E (where every product is zero: ec)
    np.subtract(F, shift, out=shift)  # F - E
    # a·b · 2**(eα + eβ + F - E): at most 2**(F + 28) where a product is
    # nonzero (unused, 0, where none is)
    x = shift + both
    if absent.any():
        x[absent] = -2000
    np.multiply(P, np.ldexp(np.float32(1.0), x), out=P)
    np.trunc(P, out=P)
    total = _plane_sum(P)
    total += np.trunc(np.ldexp(c, shift))
    return np.ldexp(total, np.negative(shift, out=shift))


def _single(p: Any, A: np.ndarray, B: np.ndarray, SA: np.ndarray, SB: np.ndarray,
            C: np.ndarray, formats: tuple[Format, Format, Format]) -> np.ndarray:
    """``mxf8f6f4``: a term per product, one scale pair per instruction."""
    if p.k != p.block:
        raise ValueError("a term per product takes one scale per instruction (k == block)")
    fa, fb = formats[0], formats[1]
    F, K, k = p.fraction_bits, A.shape[1], p.k
    A64 = np.ascontiguousarray(A.T)  # (K, Mt)
    A32, B32 = A64.astype(np.float32), B.astype(np.float32)
    EA = _exponents(A64, fa.emin, _ZERO_EXP).astype(np.int16)
    EB = _exponents(B, fb.emin, _ZERO_EXP).astype(np.int16)
    lowA, highA = _bounds(EA, k)
    lowB, highB = _bounds(EB, k)
    bits = fa.mantissa_bits + fb.mantissa_bits
    # E8M0 scales: powers of two (2**-127 up), their exponents exactly
    sa = np.frexp(SA)[1].astype(np.int32) - 1
    sb = np.frexp(SB)[1].astype(np.int32) - 1
    mt, nt = C.shape
    S = np.empty((k, mt, nt), np.int16)
    P = np.empty((k, mt, nt), np.float32)
    work = (np.empty(mt * nt), np.empty(mt * nt), np.empty(mt * nt))
    nearest = rounds_to_nearest()
    spreadA, spreadB = highA - lowA, highB - lowB  # (negative where all zero)
    c, codes, inf = C, None, None
    with np.errstate(invalid="ignore", over="ignore"):
        for j, lo in enumerate(range(0, K, k)):
            hi = lo + k
            if codes is not None:
                c, inf = _carried(codes)
            # c is always a term (+0 a zero one), so E is at least
            # zero_exponent: a zero product's exponent is never the largest
            ec = _exponents(c, FP32.emin, p.zero_exponent)
            both = sa[:, j][:, None] + sb[j][None, :]
            # Outputs where no term is cut (the module's note): the products
            # lie between 2**low and 2**(high + 2), with ``bits`` fraction
            # bits below their exponent (none where even the narrowest row
            # and column are too wide)
            if nearest and int(spreadA[j].min()) + int(spreadB[j].min()) + bits <= F:
                high = highA[j][:, None] + highB[j][None, :] + both
                low = lowA[j][:, None] + lowB[j][None, :] + both - bits
                cut = (high - low > F) | (low < ec - F) | ((c != 0) & (high > ec + F - 23))
                count = int(np.count_nonzero(cut))
            else:
                cut, count = None, mt * nt
            if cut is None or count > _WHOLE * mt * nt:  # many cut: the whole tile
                np.add(EA[lo:hi, :, None], EB[lo:hi, None, :], out=S)
                np.multiply(A32[lo:hi, :, None], B32[lo:hi, None, :], out=P)
                new = to_fp32(_cut_sum(p, S, P, both, c, ec))
            else:
                total = np.matmul(A64[lo:hi].T, B[lo:hi])
                np.ldexp(total, both, out=total)
                new = to_fp32(_sum_to_odd(c.reshape(-1), total.reshape(-1), work[0],
                                          work[1:]).reshape(mt, nt))
                if count:  # a few: gathered in pairs
                    m, n = np.nonzero(cut)
                    s = EA[lo:hi, m] + EB[lo:hi, n]
                    pp = A32[lo:hi, m] * B32[lo:hi, n]
                    new[m, n] = to_fp32(_cut_sum(p, s, pp, both[m, n], c[m, n], ec[m, n]))
            codes = _passed(new, codes, inf)
    assert codes is not None
    return codes


def _grouped(p: Any, A: np.ndarray, B: np.ndarray, SA: np.ndarray, SB: np.ndarray,
             C: np.ndarray, formats: tuple[Format, Format, Format]) -> np.ndarray:
    """The FP4 kinds: a term per group of ``p.group`` products."""
    F, K, g = p.fraction_bits, A.shape[1], p.group
    NA, NB = (A != 0).astype(np.float64), (B != 0).astype(np.float64)
    ea = _exponents(SA, formats[2].emin, 0)
    eb = _exponents(SB, formats[2].emin, 0)
    finite_c, codes, inf = C, None, None
    with np.errstate(invalid="ignore", over="ignore"):
        for lo in range(0, K, p.k):
            hi = min(K, lo + p.k)
            if codes is not None:
                finite_c, inf = _carried(codes)
            # c is always a term (+0 a zero one): E is at least zero_exponent,
            # so the exponent of a zero term (a group without a nonzero
            # product, a zero scale, zero products padding the instruction)
            # is never the largest
            E = _exponents(finite_c, FP32.emin, p.zero_exponent)
            terms = []
            for q in range(lo, hi, g):
                x = slice(q, q + g)
                i = q // p.block
                al, be = SA[:, i][:, None], SB[i][None, :]
                terms.append(A[:, x] @ B[x] * al * be)
                live = ((NA[:, x] @ NB[x]) > 0) & (al != 0) & (be != 0)
                e = np.where(live, ea[:, i][:, None] + eb[i][None, :], p.zero_exponent)
                np.maximum(E, e, out=E)
            total = np.trunc(np.ldexp(finite_c, F - E))
            for t in terms:
                total += np.trunc(np.ldexp(t, F - E))
            codes = _passed(to_fp32(np.ldexp(total, E - F)), codes, inf)
    assert codes is not None
    return codes
