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
  exact in any order;
* ``sum · 2**(E - F)`` is the unit's exact unrounded result, rounded once
  to the output format by :func:`fpsim.mma._finish.round_to_output` (the
  rounding kernel), exactly as the row model does.

Where the tile path does not apply (``check``: another accumulation, a
late join, normalized products, flushed subnormals, limited products; or
an input or ``c`` that is not finite, whose NaN/infinity rules the row
model decides over the whole row), the engine uses the row model.
"""

from __future__ import annotations

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


def chain_tile(model: MMAModel, A: np.ndarray, EA: np.ndarray, B: np.ndarray,
               EB: np.ndarray, c: np.ndarray | None) -> np.ndarray:
    """The unit chained along K over every (row of ``A``, column of ``B``)
    pair: codes of the unit's output format, shape ``(Mt, Nt)``.

    ``A``: (Mt, K) float64 values, ``EA`` their :func:`exponents`; ``B``:
    (Nt, K) values (column n of B as row n), ``EB`` likewise; ``c``:
    (Mt, Nt) float64 values the chain starts from, or None (+0).  Every
    value finite (the caller's check).
    """
    p = model.params
    out = model.output_format
    F = ALIGN_FRACTION_BITS + p.extra_bits
    mt, K = A.shape
    nt = B.shape[0]
    k = p.k
    if c is not None and not np.isfinite(c).all():
        raise ValueError("chain_tile takes a finite c (the caller's check)")
    cv = np.zeros((mt, nt)) if c is None else c
    codes: np.ndarray | None = None
    width = min(k, max(K, 1))
    prod = np.empty((mt, nt, width))
    esum = np.empty((mt, nt, width), np.int32)
    with np.errstate(invalid="ignore", over="ignore"):
        for lo in range(0, max(K, 1), k):
            hi = min(K, lo + k)
            w = hi - lo
            if codes is not None:
                cv = _array.decode(codes, out).reshape(mt, nt)
            P = prod[:, :, :w]
            np.multiply(A[:, None, lo:hi], B[None, :, lo:hi], out=P)
            S = esum[:, :, :w]
            np.add(EA[:, None, lo:hi], EB[None, :, lo:hi], out=S)
            E = S.max(axis=2) if w else np.full((mt, nt), _ZERO_EXP, np.int32)
            ec = np.frexp(cv)[1].astype(np.int32)
            ec -= 1
            np.maximum(ec, _C_EMIN, out=ec)
            ec[cv == 0] = _ZERO_EXP
            np.maximum(E, ec, out=E)
            absent = E <= _ZERO_EXP // 2
            if p.min_align_exponent is not None:
                E = np.where(absent, E, np.maximum(E, p.min_align_exponent))
            scale = np.ldexp(1.0, F - E)  # exact powers of two (absent rows: unused)
            np.multiply(P, scale[:, :, None], out=P)
            np.trunc(P, out=P)
            total = P.sum(axis=2)
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
