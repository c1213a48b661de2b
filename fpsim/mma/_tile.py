"""The instruction chained over a whole tile of outputs at once: the fast path
of :mod:`fpsim.mma.gemm` for every ``"aligned"``, ``"odd_even"`` and
``"pairwise"`` unit without a sticky bit or renormalized products, and every
``"exact"`` one (every preset), proven equal to the row model
(:class:`~fpsim.mma.MMAModel`, ``chain=True``) by ``tests/test_mma_tile.py``.

For a tile of ``Mt`` rows of A and ``Nt`` columns of B and one block of
``k`` products, everything is computed on ``(k, Mt, Nt)`` arrays with no
gathered copy of any operand:

* each operand's exponent ``max(floor(log2|x|), emin)`` once per tile, a
  zero operand given a far negative one; a product's exponent is the sum
  ``ea[m, i] + eb[i, n]`` (the products are not renormalized), so a group's
  largest exponent ``E[m, n]`` is a max of small integers;
* each term ``p`` is cut to the grid ``2**(E - F)`` (``F = 23 +
  extra_bits``) as ``trunc(p · 2**(F - E))``: ``p`` is an exact float64
  (a product of two significands of at most 12 bits), the scaling by a
  power of two is exact, and so is ``trunc``; ``c``, when it joins first,
  is cut the same way;
* the integers are summed in float64: each is below ``2**(F + 2) <=
  2**33``, a block of at most 257 of them below ``2**42``, so the sum is
  exact in any order; the products and terms themselves are float32 where
  each is exact in it (FP8 and FP16 inputs, and normal data of the others:
  :func:`_narrow`);
* where ``c`` joins last (CDNA3), the two groups of ``"odd_even"`` and then
  ``c`` are added by the row model's own two-operand alignment
  (:func:`~fpsim.mma.model.join_late`) on one integer per output;
* ``sum · 2**(E - F)`` is the unit's exact unrounded result, rounded once
  to the output format by :func:`fpsim.mma._finish.round_to_output` (the
  rounding kernel), exactly as the row model does;
* ``"pairwise"`` (CDNA2) rounds the ``(k, Mt·Nt)`` products and adds them
  by the row model's own tree (:func:`~fpsim.mma.model.pairwise_tree`),
  without the flushes of products and partial sums where the tile's
  operands prove none subnormal;
* ``"exact"`` (CDNA1) sums the products by a float64 matrix product where
  their exponents prove that sum exact, adds ``c`` rounded to odd at 53
  bits, and rounds that once (:func:`_exact`); a block spanning too many
  binades takes the row model's exact sum, for its outputs alone.

Flushed subnormal inputs are flushed once per GEMM (:func:`flush_inputs`);
products at the output's overflow threshold (``products_limited``) are
looked for only in blocks whose operands can reach it.  An output whose
``c`` is not finite (an earlier block overflowed, or ``c`` was given so)
keeps that infinity, or becomes the unit's NaN where a limited product of
the other sign meets it, as the row model's block specials decide
(:func:`~fpsim.mma.model.block_specials`); a ``"pairwise"`` unit's tree
takes that ``c`` into its IEEE additions, as its row model does.

Where the tile path does not apply (``applies``: a sticky bit, normalized
products, an ``"exact"`` unit rounding to more than 51 bits; or an operand
that is not finite, whose NaN/infinity rules the row model decides block by
block), the engine uses the row model.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import array as _array
from .._machine import rounds_to_nearest, two_sum_error
from ..formats import Format
from ._align import ABSENT, add_two
from ._align import exponents as _exponents
from ._finish import narrow_format, round_to_output, special_codes, unit_zeros
from .model import MMAModel, join_late, pairwise_tree
from .params import ALIGN_FRACTION_BITS

__all__ = ["applies", "exponents", "flush_inputs", "chain_tile"]

# Exponent of a zero operand: with any other operand's exponent it stays far
# below every real product's, so it is never the largest and its (zero)
# product contributes nothing.
_ZERO_EXP = -(1 << 14)
# Below every real product's exponent (at least 2 * -149 - 2); a scale by
# 2**(F - _FAR_BELOW) is still finite.
_FAR_BELOW = -900
I64 = np.int64


def applies(model: MMAModel) -> bool:
    """Whether the tile path computes this unit (an aligned unit's model,
    not an FMA chain's)."""
    if not isinstance(model, MMAModel):
        return False
    p = model.params
    if p.accumulation == "exact":
        # the round to odd at 53 bits needs 2 bits to spare, and float64 normal
        # and finite values throughout (FP32's c: multiples of 2**-149)
        fa, fb = model.input_format, model.input_b_format
        return (narrow_format(model.output_format, p.result_bits).precision <= 51
                and (fa.emin - fa.mantissa_bits) + (fb.emin - fb.mantissa_bits) >= -900
                and fa.emax + fb.emax <= 900)
    return (p.accumulation in ("aligned", "odd_even", "pairwise") and not p.normalize_products
            and not p.sticky_bit)


def flush_inputs(values: np.ndarray, fmt: Format, model: MMAModel) -> np.ndarray:
    """Operand values as the unit reads them: subnormals flushed to +0 where
    the unit flushes its inputs (as the row model does block by block)."""
    if model.params.input_subnormals:
        return values
    return np.where(np.abs(values) < 2.0 ** fmt.emin, 0.0, values)


def exponents(values: np.ndarray, emin: int) -> np.ndarray:
    """``max(floor(log2|x|), emin)`` as int16, ``_ZERO_EXP`` for zeros
    (finite float64 ``values``; the sum of two, down to ``2 * _ZERO_EXP``,
    still fits: int16 halves the traffic of the per-product passes)."""
    return _exponents(values, emin, _ZERO_EXP).astype(np.int16)


def _narrow(model: MMAModel, A: np.ndarray, B: np.ndarray) -> bool:
    """Whether float32 holds exactly every product of a tile's operands
    ``A``, ``B`` (float64 values), every scaling of one by ``2**(F - E)``
    and every term cut from it.

    A product of significands of ``pa`` and ``pb`` bits has at most ``pa +
    pb`` bits, and so has every truncation of it.  With ``pa + pb <= 24``
    (FP8, FP16, BF16, TF32) it suffices that every product lies in
    float32's range and ``2**(F - E)`` inside its normal range for every
    block exponent ``E``: for all operands of the formats (FP8 and FP16:
    products no smaller than 2**-149, below 2**128, ``E >= emin_a +
    emin_b``), else for the tile's own nonzero magnitudes (normal data in
    BF16 and TF32: products from ``2**(F - 125)`` to below ``2**127``).  The
    terms are summed in float64 (exact: see the module's note).  ``c``,
    which joins in float64, can lower ``E`` below the products':
    :func:`_aligned_first` checks the scales of each block."""
    p = model.params
    fa, fb = model.input_format, model.input_b_format
    F = ALIGN_FRACTION_BITS + (p.extra_bits or 0)
    if fa.precision + fb.precision > 24:
        return False
    if ((fa.emin - fa.mantissa_bits) + (fb.emin - fb.mantissa_bits) >= -149
            and float(fa.max) * float(fb.max) < 2.0**128 and F - (fa.emin + fb.emin) <= 126):
        return True
    ma, mb = np.abs(A), np.abs(B)
    if not (ma.any() and mb.any()):
        return True
    low = float(ma[ma > 0].min()) * float(mb[mb > 0].min())
    return low >= 2.0 ** (F - 125) and float(ma.max()) * float(mb.max()) < 2.0**127


class _Block:
    """Work arrays of one tile, reused block after block."""

    def __init__(self, model: MMAModel, A: np.ndarray, EA: np.ndarray, B: np.ndarray,
                 EB: np.ndarray, mt: int, nt: int) -> None:
        p = model.params
        self.p, self.out = p, model.output_format
        self.F = ALIGN_FRACTION_BITS + (p.extra_bits or 0)
        width = min(p.k, max(A.shape[0], 1))
        self.narrow = _narrow(model, A, B)
        self.A, self.B = A, B
        self.A32 = A.astype(np.float32) if self.narrow else None
        self.B32 = B.astype(np.float32) if self.narrow else None
        self.esum = np.empty((width, mt, nt), np.int16)
        self.prod: dict[Any, np.ndarray] = {}
        # every nonzero product of the tile at least 2**-103 (pairwise_tree)
        self.normal_products = False
        if p.accumulation == "pairwise":
            low = [np.abs(X[X != 0]) for X in (A, B)]
            self.normal_products = bool(all(x.size for x in low) and (
                float(low[0].min()) * float(low[1].min()) >= 2.0**-103))
        self.flat: list[np.ndarray] = []
        self.EA, self.EB = EA, EB
        self.spread: tuple[np.ndarray, np.ndarray] | None = None
        fa, fb = model.input_format, model.input_b_format
        self.room = 53 - fa.precision - fb.precision - (p.k - 1).bit_length()
        # "exact": TwoSum needs the unit's nearest rounding (asked once a tile)
        self.nearest = p.accumulation == "exact" and rounds_to_nearest()
        self.shape = (mt, nt)
        # the largest operand magnitude per product: a block whose bound stays
        # below the output's overflow threshold needs no look for limited products
        # ("pairwise": its tree rounds the products into the output, no look needed)
        self.limit = (2.0 ** (self.out.emax + 1)
                      if p.products_limited and p.accumulation != "pairwise" else None)
        # the current block's outputs with limited products, and their codes
        self.over: tuple[np.ndarray, np.ndarray] | None = None
        if self.limit is not None:  # per k, the largest magnitude of the tile's operands
            self.amax, self.bmax = np.abs(A).max(axis=1), np.abs(B).max(axis=1)

    def spreads(self, lo: int) -> tuple[np.ndarray, np.ndarray, int]:
        """``"exact"``: the spreads of the block at ``lo`` (:func:`_spread`)
        of A's rows and B's columns, and the most their sum may be for the
        float64 sum of the block's products to be exact (:func:`_exact`)."""
        if self.spread is None:
            self.spread = (_spread(self.EA, self.p.k), _spread(self.EB, self.p.k))
        j = lo // self.p.k
        return self.spread[0][j], self.spread[1][j], self.room

    def scratch(self, count: int) -> tuple[np.ndarray, ...]:
        """``count`` float64 work arrays of one value per output, reused."""
        while len(self.flat) < count:
            self.flat.append(np.empty(self.shape[0] * self.shape[1]))
        return tuple(self.flat[:count])

    def products(self, lo: int, hi: int, wt: Any) -> np.ndarray:
        """The block's exact products as a ``(hi - lo, Mt, Nt)`` array of ``wt``."""
        if wt not in self.prod:
            self.prod[wt] = np.empty(self.esum.shape, wt)
        P = self.prod[wt][:hi - lo]
        if wt == np.float32:
            np.multiply(self.A32[lo:hi, :, None], self.B32[lo:hi, None, :], out=P)
        else:
            np.multiply(self.A[lo:hi, :, None], self.B[lo:hi, None, :], out=P)
        return P

    def limited(self, lo: int, hi: int, P: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """Outputs with a product at or beyond the output's overflow
        threshold, and their codes (infinity, or NaN with both signs)."""
        if self.limit is None or hi == lo:
            return None
        bound = float(self.amax[lo:hi].max()) * float(self.bmax[lo:hi].max())
        if bound < self.limit:
            return None
        over = np.abs(P) >= self.limit
        pos = (over & (P > 0)).any(axis=0).reshape(-1)
        neg = (over & (P < 0)).any(axis=0).reshape(-1)
        rows = pos | neg
        if not rows.any():
            return None
        self.over = rows, special_codes(self.out, pos & neg, neg & ~pos, self.p.nan_code())
        return self.over


def _grid_sum(P: np.ndarray, S: np.ndarray, F: int,
              floor: int | None) -> tuple[np.ndarray, np.ndarray]:
    """One group of products aligned to its largest exponent: ``(E, x)``
    with the group's sum ``x`` (exact float64) on the grid ``2**(E - F)``,
    ``E`` (``ABSENT`` and ``x = 0`` where the group has no nonzero product),
    both flat.  ``S``: the products' exponent sums.  ``P`` is overwritten."""
    if not len(S):  # (the odd group of a one-product block)
        size = int(np.prod(S.shape[1:]))
        return np.full(size, ABSENT, np.int32), np.zeros(size)
    E = np.maximum.reduce(S, axis=0).reshape(-1)
    absent = E <= _ZERO_EXP // 2
    if floor is not None:
        np.maximum(E, floor, out=E, where=~absent)
    # (absent: every product is zero, any finite scale leaves it zero; in
    # float32, every real E is at least F - 126: _narrow)
    lowest = F - 126 if P.dtype == np.float32 else _FAR_BELOW
    scale = np.ldexp(1.0, F - np.maximum(E, lowest)).astype(P.dtype, copy=False)
    T = P.reshape(len(P), E.size)
    np.multiply(T, scale, out=T)
    np.trunc(T, out=T)
    E = np.where(absent, np.int32(ABSENT), E)
    return E, np.ldexp(_plane_sum(T), E - F)


def _plane_sum(T: np.ndarray) -> np.ndarray:
    """The sum over the first axis, in float64 (exact: the module's note);
    plane by plane for a few planes, where numpy's reduction with a cast
    costs more."""
    if len(T) > 8 or not len(T):
        return np.add.reduce(T, axis=0, dtype=np.float64)
    total = T[0].astype(np.float64)
    for plane in T[1:]:
        total += plane
    return total


def chain_tile(model: MMAModel, A: np.ndarray, EA: np.ndarray, B: np.ndarray,
               EB: np.ndarray, c: np.ndarray | None) -> np.ndarray:
    """The unit chained along K over every (row of ``A``, column of ``B``)
    pair: codes of the unit's output format, shape ``(Mt, Nt)``.

    ``A``: (K, Mt) float64 values (column m: row m of A), as the unit reads
    them (:func:`flush_inputs`), ``EA`` their :func:`exponents`; ``B``:
    (K, Nt) values, ``EB`` likewise; ``c``: (Mt, Nt) float64 values the
    chain starts from, or None (+0).  Every operand finite (the caller's
    check; ``c`` may be an infinity or NaN).  The work arrays are (k, Mt,
    Nt): the block's reductions run over the first axis, plane by plane.
    """
    p = model.params
    out = model.output_format
    K, mt = A.shape
    nt = B.shape[1]
    cv = np.zeros((mt, nt)) if c is None else c
    work = _Block(model, A, EA, B, EB, mt, nt)
    codes: np.ndarray | None = None
    with np.errstate(invalid="ignore", over="ignore"):
        for lo in range(0, max(K, 1), p.k):
            hi = min(K, lo + p.k)
            if codes is not None:
                cv = _values(codes, out).reshape(mt, nt)
            # "pairwise": the tree's IEEE additions carry c's infinity or NaN
            passed = (np.zeros(mt * nt, bool) if p.accumulation == "pairwise"
                      else ~np.isfinite(cv).reshape(-1))
            cin = np.where(passed.reshape(mt, nt), 0.0, cv) if passed.any() else cv
            if not p.output_subnormals:
                cin = np.where(np.abs(cin) < 2.0 ** out.emin, 0.0, cin)
            work.over = None
            if p.accumulation == "pairwise":
                new = _pairwise(work, lo, hi, cin)
            elif p.accumulation == "exact":
                new = _exact(work, model, lo, hi, cin)
            else:
                S = work.esum[:hi - lo]
                np.add(EA[lo:hi, :, None], EB[lo:hi, None, :], out=S)
                if p.c_joins == "first" and p.accumulation == "aligned":
                    new = _aligned_first(work, lo, hi, S, cin)
                else:
                    new = _aligned_last(work, lo, hi, S, cin)
            new = new.astype(_array.code_dtype(out), copy=False)
            if passed.any():
                new[passed] = _passed(work, cv.reshape(-1), passed)
            codes = new
    assert codes is not None
    # once, at the end (as the row model: a -0 c is a zero term)
    return unit_zeros(codes, out, p.zero_sign).reshape(mt, nt)


def _passed(work: _Block, cv: np.ndarray, passed: np.ndarray) -> np.ndarray:
    """The codes of the outputs whose ``c`` is not finite (an earlier
    block's overflow, or the ``c`` given), as the row model's block specials
    decide them (:func:`~fpsim.mma.model.block_specials`; the operands are
    finite): that infinity, or the NaN where ``c`` is a NaN or a limited
    product of the other sign (or of both) meets it."""
    x = cv[passed]
    nan = np.isnan(x)
    neg = x < 0
    if work.over is not None:  # limited products: NaN (both signs) or ±inf
        rows, over = work.over[0][passed], work.over[1][passed]
        inf = special_codes(work.out, nan, neg, work.p.nan_code())
        nan = nan | (rows & (over != inf))
    return special_codes(work.out, nan, neg, work.p.nan_code())


def _values(codes: np.ndarray, out: Format) -> np.ndarray:
    """The float64 values of codes of the unit's output format (FP32, FP16,
    BF16: its numpy dtype holds them, and widening is exact)."""
    dt = _array.value_dtype(out)
    if dt is None:
        return _array.decode(codes, out)
    return codes.astype(_array.code_dtype(out), copy=False).view(dt).astype(np.float64)


def _finish(work: _Block, value: np.ndarray, over: Any) -> np.ndarray:
    p = work.p
    if over is not None:
        value[over[0]] = 0.0
    codes = round_to_output(value, work.out, p.rounding, p.result_bits, p.output_subnormals)
    if over is not None:
        codes = np.where(over[0], over[1], codes)
    return codes


def _aligned_first(work: _Block, lo: int, hi: int, S: np.ndarray,
                   cv: np.ndarray) -> np.ndarray:
    """``"aligned"``, ``c`` one more term aligned with the products."""
    p, F = work.p, work.F
    w = hi - lo
    E = (np.maximum.reduce(S, axis=0).astype(np.int32) if w
         else np.full(work.shape, _ZERO_EXP, np.int32))
    np.maximum(E, _exponents(cv, work.out.emin, _ZERO_EXP), out=E)
    absent = E <= _ZERO_EXP // 2
    if p.min_align_exponent is not None:
        E = np.where(absent, E, np.maximum(E, p.min_align_exponent))
    scale = np.ldexp(1.0, F - E)  # exact powers of two (absent outputs: unused)
    # float32 where its exponent range holds every scale (a tiny c can push
    # E far down), else float64
    use32 = work.narrow and (F - int(E.min()) < 100 or absent.all()
                             or int((F - E)[~absent].max()) < 100)
    P = work.products(lo, hi, np.float32 if use32 else np.float64)
    over = work.limited(lo, hi, P)
    np.multiply(P, scale.astype(P.dtype), out=P)
    np.trunc(P, out=P)
    total = _plane_sum(P)
    cut = np.multiply(cv, scale)
    np.trunc(cut, out=cut)
    total += cut
    value = np.ldexp(total, E - F)
    value[absent] = 0.0
    return _finish(work, value.reshape(-1), over)


def _aligned_last(work: _Block, lo: int, hi: int, S: np.ndarray,
                  cv: np.ndarray) -> np.ndarray:
    """``"aligned"`` with ``c`` joining last, and ``"odd_even"``: the
    products' groups each on their own grid, then the two-operand late
    alignments of the row model, on one integer per output."""
    p, F = work.p, work.F
    P = work.products(lo, hi, np.float32 if work.narrow else np.float64)
    over = work.limited(lo, hi, P)
    floor = p.min_align_exponent
    if p.accumulation == "aligned":
        big, x = _grid_sum(P, S, F, floor)
        frac: Any = F
    else:  # odd_even: even and odd positions of the block, each on its own grid
        e0, x0 = _grid_sum(P[0::2], S[0::2], F, floor)
        e1, x1 = _grid_sum(P[1::2], S[1::2], F, floor)
        big, x, frac = add_two(e0, x0, e1, x1, np.int32(F), p.align_rounding, 0, 0)
    return _finish(work, join_late(p, big, x, frac, cv.reshape(-1)), over)


def _pairwise(work: _Block, lo: int, hi: int, cv: np.ndarray) -> np.ndarray:
    """``"pairwise"``: the block's products, zero-padded to ``k`` as the row
    model pads them, through the row model's tree: a product beyond the
    output's range rounds to an infinity there, and meets ``cv`` (an
    infinity or NaN included) in IEEE arithmetic, as in the row model."""
    p = work.p
    P = work.products(lo, hi, np.float32 if work.narrow else np.float64)
    if hi - lo == p.k:
        prods = P.reshape(p.k, -1)
    else:
        prods = np.zeros((p.k, P.shape[1] * P.shape[2]), P.dtype)
        prods[:hi - lo] = P.reshape(hi - lo, -1)
    return pairwise_tree(p, prods, cv.reshape(-1), work.normal_products)


# -- "exact" (CDNA1) -----------------------------------------------------------------


def _exact(work: _Block, model: MMAModel, lo: int, hi: int, cv: np.ndarray) -> np.ndarray:
    """``"exact"``: the exact sum of the block's products and ``c``, rounded
    once.  In three steps, each exact:

    * the products' sum ``P``, by a float64 matrix product, for every
      output whose products have few enough bits between them: the
      products of row ``m`` and column ``n`` are multiples of ``2**(lo -
      (pa-1) - (pb-1))`` and below ``2**(hi + 2)``, ``lo`` and ``hi`` the
      smallest and largest exponent sums of their nonzero operands, so
      every partial sum of ``w`` of them is an integer of at most ``spread
      + pa + pb + ceil(log2 w)`` bits in that unit (``spread = hi - lo``,
      bounded by the spreads of the row's and the column's exponents,
      ``w <= k``): at most 53, it is exact in float64 in any order of
      additions (and with fused ones).  The other outputs (a block spanning more binades than
      that) take the row model's exact sum;
    * ``c + P`` rounded to odd at 53 bits (:func:`_sum_to_odd`): float64's
      sum and its exact error (Knuth's TwoSum), and the last bit set where
      the error is not zero;
    * that value rounded to the output (:func:`_finish`): a value rounded to
      odd with at least two bits more than the output's rounds as the exact
      sum would, in every rounding mode (Boldo and Melquiond, "Emulation of
      FMA and correctly rounded sums: proved algorithms using rounding to
      odd", IEEE Trans. Computers 57(4), 2008); no bit of it is subnormal
      in float64 (every term is a multiple of ``2**-900`` at least,
      :func:`applies`).
    """
    w = hi - lo
    A, B = work.A[lo:hi], work.B[lo:hi]
    over = work.limited(lo, hi, work.products(lo, hi, np.float64)) if work.limit else None
    flat, s, bb, t = work.scratch(4)
    P = flat.reshape(work.shape)
    if w:
        np.matmul(A.T, B, out=P)
        sa, sb, room = work.spreads(lo)
        hard = None
        if int(sa.max()) + int(sb.max()) > room:
            hard = np.flatnonzero((sa[:, None] + sb[None, :] > room).reshape(-1))
    else:
        P.fill(0.0)
        hard = None
    if work.nearest:
        value = _sum_to_odd(cv.reshape(-1), flat, s, (bb, t))
        codes = _finish(work, value, None)
    else:  # (TwoSum needs the unit's nearest: every output the row model's)
        codes = np.zeros(flat.size, _array.code_dtype(work.out))
        hard = np.arange(flat.size)
    if hard is not None:  # (an infinite c, passed on, is no block's)
        hard = hard[np.isfinite(cv.reshape(-1)[hard])]
    if hard is not None and hard.size:
        m, n = np.divmod(hard, work.shape[1])
        codes[hard] = model._exact(A[:, m].T, B[:, n].T, cv.reshape(-1)[hard])
    if over is not None:
        codes = np.where(over[0], over[1], codes)
    return codes


def _spread(E: np.ndarray, k: int) -> np.ndarray:
    """Per block of ``k`` along the first axis and column of operand
    exponents ``E`` (``(K, count)``, ``_ZERO_EXP`` for zeros): the largest
    minus the smallest of the nonzero operands' (0 where none is nonzero),
    int32, shape ``(blocks, count)``."""
    K, count = E.shape
    blocks = -(-K // k)
    pad = np.full((blocks * k, count), _ZERO_EXP, np.int32)
    pad[:K] = E
    pad = pad.reshape(blocks, k, count)
    zero = pad <= _ZERO_EXP // 2
    top = pad.max(axis=1)
    pad[zero] = 1 << 20
    low = pad.min(axis=1)
    return np.where(zero.all(axis=1), 0, top - low)


def _sum_to_odd(x: np.ndarray, y: np.ndarray, out: np.ndarray,
                work: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """``x + y`` rounded to odd at float64's 53 bits (finite float64 arrays,
    no overflow, the unit rounding to nearest), into ``out``: float64's
    nearest sum ``s`` and its exact error ``e`` (TwoSum,
    :func:`fpsim._machine.two_sum_error`, in ``work``: two arrays of
    ``x``'s shape); where ``e`` is not 0 and ``s``'s last bit is 0, ``s``
    moves one unit toward ``e`` (the truncated sum with its last bit set;
    ``s`` is then not 0)."""
    s = np.add(x, y, out=out)
    e = two_sum_error(s, x, y, work)
    fix = np.flatnonzero(e)
    if fix.size:
        bits = s.view(np.int64)
        sub = bits[fix]
        even = (sub & 1) == 0
        # magnitudes are ordered as the codes' low 63 bits: one unit up is +1
        up = np.signbit(e[fix]) == np.signbit(s[fix])
        bits[fix] = np.where(even, sub + np.where(up, 1, -1), sub)
    return s
