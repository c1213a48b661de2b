"""The instruction chained over a whole tile of outputs at once: the fast path
of :mod:`fpsim.mma.gemm` for ``"aligned"`` accumulation with ``c`` joining
first (every NVIDIA preset), proven equal to the row model
(:class:`~fpsim.mma.MMAModel`, ``chain=True``) by
``tests/test_mma_tile.py``.

For a tile of ``Mt`` rows of A and ``Nt`` columns of B and one block of
``k`` products, everything is computed on ``(Mt, Nt, k)`` arrays with no
gathered copy of any operand:

* each operand's exponent ``max(floor(log2|x|), emin)`` once per tile, a
  zero operand given a far negative one; a product's exponent is the sum
  ``ea[m, i] + eb[i, n]`` (the products are not renormalized), so the
  block's largest exponent ``E[m, n]`` is a max of small integers;
* each term ``p`` is cut to the grid ``2**(E - F)`` (``F = 23 +
  extra_bits``) as ``trunc(p · 2**(F - E))``: ``p`` is an exact float64
  (a product of two significands of at most 12 bits), the scaling by a
  power of two is exact, and so is ``trunc``; ``c`` is cut the same way;
* the integers are summed in float64: each is below ``2**(F + 2) <=
  2**33``, a block of at most 257 of them below ``2**42``, so the sum is
  exact in any order (in float32 where the terms and their sums stay below
  ``2**24``: FP8 inputs with a 13-bit grid);
* ``sum · 2**(E - F)`` is the unit's exact unrounded result, rounded once
  to the output format by :func:`fpsim.mma._finish.round_to_output` (the
  rounding kernel), exactly as the row model does.

Where the tile path does not apply (``check``: another accumulation, a
late join, normalized products, flushed subnormals, limited products; or
an input or ``c`` that is not finite, whose NaN/infinity rules the row
model decides over the whole row), the engine uses the row model.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import array as _array
from ..formats import FP32
from ._finish import round_to_output
from .model import MMAModel
from .params import ALIGN_FRACTION_BITS

__all__ = ["applies", "exponents", "chain_tile"]

# Exponent of a zero operand: with any other operand's exponent it stays far
# below every real product's, so it is never the largest and its (zero)
# product contributes nothing.
_ZERO_EXP = -(1 << 14)
_C_EMIN = FP32.emin


def applies(model: MMAModel) -> bool:
    """Whether the tile path computes this unit."""
    p = model.params
    return (p.accumulation == "aligned" and p.c_joins == "first" and not p.normalize_products
            and not p.sticky_bit and p.input_subnormals and p.output_subnormals
            and not p.products_limited)


def exponents(values: np.ndarray, emin: int) -> np.ndarray:
    """``max(floor(log2|x|), emin)`` as int32, ``_ZERO_EXP`` for zeros
    (finite float64 ``values``)."""
    e = np.frexp(values)[1].astype(np.int32)
    e -= 1
    np.maximum(e, emin, out=e)
    e[values == 0] = _ZERO_EXP
    return e


def _work_dtype(model: MMAModel, k: int) -> np.dtype:
    """float32 where every scaled term and every block sum is exact in it
    (products of at most 24 significand bits, sums below 2**24: FP8 with a
    13-bit grid), else float64."""
    p = model.params
    F = ALIGN_FRACTION_BITS + p.extra_bits
    bits = model.input_format.precision + model.input_b_format.precision
    if bits <= 24 and F + 2 + (k + 1).bit_length() <= 24:
        return np.dtype(np.float32)
    return np.dtype(np.float64)


def chain_tile(model: MMAModel, A: np.ndarray, EA: np.ndarray, B: np.ndarray,
               EB: np.ndarray, c: np.ndarray | None) -> np.ndarray:
    """The unit chained along K over every (row of ``A``, column of ``B``)
    pair: codes of the unit's output format, shape ``(Mt, Nt)``.

    ``A``: (K, Mt) float64 values (column m: row m of A), ``EA`` their
    :func:`exponents`; ``B``: (K, Nt) values, ``EB`` likewise; ``c``:
    (Mt, Nt) float64 values the chain starts from, or None (+0).  Every
    value finite (the caller's check).  The work arrays are (k, Mt, Nt):
    the block's reductions run over the first axis, plane by plane.
    """
    p = model.params
    out = model.output_format
    F = ALIGN_FRACTION_BITS + p.extra_bits
    K, mt = A.shape
    nt = B.shape[1]
    k = p.k
    if c is not None and not np.isfinite(c).all():
        raise ValueError("chain_tile takes a finite c (the caller's check)")
    cv = np.zeros((mt, nt)) if c is None else c
    codes: np.ndarray | None = None
    width = min(k, max(K, 1))
    narrow = _work_dtype(model, k) == np.float32
    A32 = B32 = None
    if narrow:
        A32, B32 = A.astype(np.float32), B.astype(np.float32)
    prod: dict[Any, np.ndarray] = {}
    esum = np.empty((width, mt, nt), np.int32)
    with np.errstate(invalid="ignore", over="ignore"):
        for lo in range(0, max(K, 1), k):
            hi = min(K, lo + k)
            w = hi - lo
            if codes is not None:
                cv = _array.decode(codes, out).reshape(mt, nt)
            S = esum[:w]
            np.add(EA[lo:hi, :, None], EB[lo:hi, None, :], out=S)
            E = np.maximum.reduce(S, axis=0) if w else np.full((mt, nt), _ZERO_EXP, np.int32)
            ec = np.frexp(cv)[1].astype(np.int32)
            ec -= 1
            np.maximum(ec, _C_EMIN, out=ec)
            ec[cv == 0] = _ZERO_EXP
            np.maximum(E, ec, out=E)
            absent = E <= _ZERO_EXP // 2
            if p.min_align_exponent is not None:
                E = np.where(absent, E, np.maximum(E, p.min_align_exponent))
            scale = np.ldexp(1.0, F - E)  # exact powers of two (absent rows: unused)
            # float32 where its exponent range holds every scale (a tiny c can push
            # E far down), else float64
            use32 = narrow and (absent.all() or int((F - E)[~absent].max()) < 100)
            wt = np.float32 if use32 else np.float64
            if wt not in prod:
                prod[wt] = np.empty((width, mt, nt), wt)
            P = prod[wt][:w]
            if use32:
                np.multiply(A32[lo:hi, :, None], B32[lo:hi, None, :], out=P)
            else:
                np.multiply(A[lo:hi, :, None], B[lo:hi, None, :], out=P)
            np.multiply(P, scale.astype(wt), out=P)
            np.trunc(P, out=P)
            total = np.add.reduce(P, axis=0, dtype=np.float64)
            total += np.trunc(cv * scale)
            value = np.ldexp(total, E - F)
            value[absent] = 0.0
            new = round_to_output(value.reshape(-1), out, p.rounding, p.result_bits,
                                  p.output_subnormals).astype(_array.code_dtype(out))
            # A block that overflowed passes its infinity on, as in the row model.
            codes = new if codes is None else np.where(np.isfinite(cv).reshape(-1), new,
                                                         codes)
    assert codes is not None
    return codes.reshape(mt, nt)
