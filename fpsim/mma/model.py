"""The block fused multiply-add, written once: :class:`MMAModel` computes
``d = a·b + c`` along the last axis as the instruction described by an
:class:`~fpsim.mma.params.MMAParams` does, on many rows at once.

>>> import numpy as np
>>> from fpsim.mma import MMAModel, MMAParams
>>> unit = MMAModel(MMAParams("fp16", "fp32", k=4, extra_bits=0, rounding="rtz"))
>>> a = np.float16([[1.0, 2.0**-24, 0.0, 0.0]])
>>> b = np.float16([[1.0, 1.0, 0.0, 0.0]])
>>> unit(a, b, np.float32([0.0]))     # 2**-24 falls below the 23-bit grid of 1.0
array([1.], dtype=float32)
>>> float(a.astype(np.float64)[0] @ b.astype(np.float64)[0])   # the exact dot product
1.0000000596046448
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import array as _array
from ..context import Context
from ..formats import FP32, Format
from ..modes import Rounding
from ..rounding import OVERFLOW, round_exact
from ._align import ABSENT, add_two, align_terms
from ._finish import narrow_format, round_to_output, special_codes
from ._inputs import read_addend, read_inputs
from .params import ALIGN_FRACTION_BITS, MMAParams

__all__ = ["MMAModel"]

I64 = np.int64
U64 = np.uint64
_C_EMIN = FP32.emin  # a c below FP32's normal range is aligned with exponent -126


class MMAModel:
    """A matrix instruction as a callable: ``model(a, b, c)``.

    ``a`` and ``b`` are arrays ``(..., K)`` of the input format (its numpy or
    ml_dtypes dtype; FP32 arrays of exact values for TF32; or unsigned integer
    codes with ``fmt=`` naming the input format); ``c`` is an array ``(...)``
    of the output format's dtype (integer arrays are its codes; a Python
    number or None, meaning +0, broadcasts).  Returns ``d`` of shape
    ``(...)`` in the output format's dtype.

    ``K`` may be at most :attr:`k`; a shorter ``K`` is padded with zero
    products at the end.  With ``chain=True`` a longer ``K`` is split into
    blocks of :attr:`k` in order (the last one zero-padded) and each block's
    result is the next block's ``c``, as a GEMM built on the instruction
    accumulates: ``d = mma(a[2k:3k], b[2k:3k], mma(a[k:2k], b[k:2k],
    mma(a[:k], b[:k], c)))``.

    Specials are decided over the whole row first, as the published models
    do: a NaN operand or product (``inf × 0``), or infinities of both signs
    among the products and ``c``, give the output format's default NaN;
    otherwise an infinite product or ``c`` gives that infinity.  In a chain,
    a block that overflows passes its infinity on.

    >>> import fpsim.mma as mma, numpy as np
    >>> h100 = mma.preset("h100", "fp16")
    >>> h100.k
    16
    >>> a = np.full((3, 16), 0.1, np.float16)
    >>> h100(a, a, np.float32([0, 1, -1])).tolist()
    [0.15992188453674316, 1.159921646118164, -0.8400783538818359]
    """

    def __init__(self, params: MMAParams, name: str | None = None) -> None:
        if not isinstance(params, MMAParams):
            raise TypeError(f"MMAModel takes an MMAParams, got {type(params).__name__}")
        self.params = params
        self.name = name

    @property
    def k(self) -> int:
        """Products per instruction."""
        return self.params.k

    @property
    def input_format(self) -> Format:
        """Format of ``a`` and ``b``."""
        return self.params.input_format

    @property
    def input_b_format(self) -> Format:
        """Format of ``b`` (that of ``a`` unless the unit mixes formats)."""
        return self.params.input_b_format

    @property
    def issue_k(self) -> int:
        """Products of one instruction as issued: :attr:`k`, or a multiple
        of it where the unit chains blocks inside one instruction."""
        return self.params.issue_k or self.params.k

    @property
    def output_format(self) -> Format:
        """Format of ``c`` and ``d``."""
        return self.params.output_format

    def __repr__(self) -> str:
        p = self.params
        label = f"{self.name} " if self.name else ""
        issued = f" issue_k={p.issue_k}" if p.issue_k else ""
        return (f"<MMAModel {label}{p.inputs.replace(' ', '')}->{p.output} k={p.k}{issued} "
                f"{p.accumulation}>")

    # -- the call ---------------------------------------------------------------------

    def __call__(self, a: Any, b: Any, c: Any = None, *, fmt: Any = None,
                 chain: bool = False) -> np.ndarray:
        p = self.params
        out = self.output_format
        av, bv = read_inputs(a, b, self.input_format, fmt, self.input_b_format)
        rows = av.shape[:-1]
        cv = read_addend(c, out, rows)
        K = av.shape[-1]
        if K > self.issue_k and not chain:
            raise ValueError(f"K={K} products exceed this instruction's k={self.issue_k} "
                             f"({self._label()}); pass chain=True to split K into blocks of "
                             f"{p.k} accumulated in order")
        A = av.reshape(-1, K)
        B = bv.reshape(-1, K)
        C = np.ascontiguousarray(cv, dtype=np.float64).reshape(-1)
        blocks = max(1, -(-K // p.k))
        pad = blocks * p.k - K
        if pad:
            A = np.concatenate([A, np.zeros((A.shape[0], pad))], axis=1)
            B = np.concatenate([B, np.zeros((B.shape[0], pad))], axis=1)

        special, spec_codes = _row_specials(A, B, C, out)
        A = np.where(special[:, None], 0.0, A)
        B = np.where(special[:, None], 0.0, B)
        C = np.where(special, 0.0, C)
        codes = None
        for j in range(blocks):
            sl = slice(j * p.k, (j + 1) * p.k)
            if codes is not None:
                C = _array.decode(codes, out)
            finite = np.isfinite(C)
            new = self._block(A[:, sl], B[:, sl], np.where(finite, C, 0.0))
            codes = new if codes is None else np.where(finite, new, codes)
        assert codes is not None
        codes = np.where(special, spec_codes, codes)
        dt = _array.value_dtype(out)
        return codes.astype(_array.code_dtype(out)).view(dt).reshape(rows)

    def _label(self) -> str:
        p = self.params
        return f"{self.name + ' ' if self.name else ''}{p.inputs} -> {p.output}"

    # -- one block --------------------------------------------------------------------

    def _block(self, A: np.ndarray, B: np.ndarray, C: np.ndarray) -> np.ndarray:
        """Codes of ``out`` for one block of finite rows."""
        p = self.params
        out = self.output_format
        if not p.input_subnormals:
            A = np.where(np.abs(A) < 2.0 ** self.input_format.emin, 0.0, A)
            B = np.where(np.abs(B) < 2.0 ** self.input_b_format.emin, 0.0, B)
        if not p.output_subnormals:
            C = np.where(np.abs(C) < 2.0 ** out.emin, 0.0, C)
        over_rows = None
        if p.products_limited:
            prod = A * B
            over = np.abs(prod) >= 2.0 ** (out.emax + 1)
            if over.any():
                pos = (over & (prod > 0)).any(axis=1)
                neg = (over & (prod < 0)).any(axis=1)
                over_rows = pos | neg
                over_codes = special_codes(out, pos & neg, neg & ~pos)
                A = np.where(over_rows[:, None], 0.0, A)
                B = np.where(over_rows[:, None], 0.0, B)
        if p.accumulation == "pairwise":
            codes = self._pairwise(A, B, C)
        elif p.accumulation == "exact":
            codes = self._exact(A, B, C)
        else:
            value = self._aligned(A, B, C)
            codes = round_to_output(value, out, p.rounding, p.result_bits, p.output_subnormals)
        if over_rows is not None:
            codes = np.where(over_rows, over_codes, codes)
        return codes

    def _products(self, A: np.ndarray, B: np.ndarray) -> tuple[np.ndarray, ...]:
        """Each product as ``(sig, exp, negative)``: ``|a×b| = sig ×
        2**(exp - 23)``, ``exp = ea + eb`` with each operand's exponent
        ``max(floor(log2|x|), emin)`` (``normalize_products`` then moves a
        product at or above 2 to the next exponent).  Zero products get
        ``exp = ABSENT``."""
        nonzero = (A != 0) & (B != 0)
        ea = np.maximum(np.frexp(A)[1].astype(I64) - 1, self.input_format.emin)
        eb = np.maximum(np.frexp(B)[1].astype(I64) - 1, self.input_b_format.emin)
        exp = ea + eb
        sig = np.ldexp(np.abs(A * B), ALIGN_FRACTION_BITS - exp).astype(I64)
        if self.params.normalize_products:
            big = sig >= (1 << (ALIGN_FRACTION_BITS + 1))
            sig = np.where(big, sig >> 1, sig)
            exp = exp + big
        negative = (A < 0) ^ (B < 0)
        return np.where(nonzero, sig, 0), np.where(nonzero, exp, ABSENT), negative

    def _aligned(self, A: np.ndarray, B: np.ndarray, C: np.ndarray) -> np.ndarray:
        """The exact unrounded result of ``"aligned"`` and ``"odd_even"``
        accumulation, as float64 (exact: below 2**53 times a power of two)."""
        p = self.params
        sig, exp, neg = self._products(A, B)
        extra, sticky = p.extra_bits, p.sticky_bit
        assert extra is not None
        frac = np.full(A.shape[0], p.fraction_bits, I64)
        c_nonzero = C != 0
        c_exp = np.maximum(np.frexp(C)[1].astype(I64) - 1, _C_EMIN)
        c_sig = np.ldexp(np.abs(C), ALIGN_FRACTION_BITS - c_exp).astype(I64)
        c_neg = C < 0
        if p.accumulation == "aligned" and p.c_joins == "first":
            sig = np.concatenate([sig, c_sig[:, None]], axis=1)
            exp = np.concatenate([exp, np.where(c_nonzero, c_exp, ABSENT)[:, None]], axis=1)
            neg = np.concatenate([neg, c_neg[:, None]], axis=1)
            big, total = align_terms(sig, exp, neg, extra, sticky, p.min_align_exponent)
        else:
            if p.accumulation == "aligned":
                big, total = align_terms(sig, exp, neg, extra, sticky, p.min_align_exponent)
            else:  # odd_even: two interleaved groups, each aligned on its own
                e0, s0 = align_terms(sig[:, 0::2], exp[:, 0::2], neg[:, 0::2], extra, sticky,
                                     p.min_align_exponent)
                e1, s1 = align_terms(sig[:, 1::2], exp[:, 1::2], neg[:, 1::2], extra, sticky,
                                     p.min_align_exponent)
                big, total, frac = add_two(e0, s0, e1, s1, frac, p.align_rounding, 0, 0)
            zero_exp = _C_EMIN if p.zero_c_at_emin else ABSENT
            e2 = np.where(c_nonzero, c_exp, zero_exp)
            s2 = c_sig << (extra + int(sticky))
            s2 = np.where(c_neg, -s2, s2)
            big, total, frac = add_two(big, total, e2, s2, frac, p.align_rounding,
                                       p.late_extra_bits, 0)
        scale = np.where(total == 0, 0, big - frac)
        return np.ldexp(total.astype(np.float64), scale)

    def _pairwise(self, A: np.ndarray, B: np.ndarray, C: np.ndarray) -> np.ndarray:
        """``"pairwise"``: products rounded to the output format, a balanced
        tree of rounded additions, then ``+ c``; codes of the output."""
        p = self.params
        out = self.output_format
        ctx = Context(rounding=p.rounding)
        sign = U64(out.sign_bit)
        expo = U64(out.magnitude_mask & ~((1 << out.mantissa_bits) - 1))

        def flush(codes: np.ndarray, signed: bool) -> np.ndarray:
            if p.output_subnormals:
                return codes
            tiny = (codes & expo) == 0
            return np.where(tiny, codes & sign if signed else U64(0), codes)

        with np.errstate(over="ignore"):
            x = _array.encode(A * B, out, Context()).astype(U64)  # nearest even
        x = flush(x, signed=False)
        while x.shape[1] > 1:
            x = flush(_array.add(x[:, 0::2], x[:, 1::2], ctx, fmt=out).astype(U64), True)
        c_codes = _array.encode(C, out, Context()).astype(U64)
        return flush(_array.add(c_codes, x[:, 0], ctx, fmt=out).astype(U64), True)

    def _exact(self, A: np.ndarray, B: np.ndarray, C: np.ndarray) -> np.ndarray:
        """``"exact"``: the exact sum, rounded once by the scalar kernel (a
        Python loop over rows: the sum can be wider than any machine
        integer)."""
        p = self.params
        out = self.output_format
        narrow = narrow_format(out, p.result_bits)
        mode = Rounding(p.rounding)
        terms = np.concatenate([A * B, C[:, None]], axis=1)
        codes = np.zeros(A.shape[0], U64)
        inf = out.inf_code
        for i, row in enumerate(terms.tolist()):
            num, exp = _exact_sum(row)
            if num == 0:
                continue
            code, flags = round_exact(narrow, num < 0, abs(num), 1, exp, mode)
            if flags & OVERFLOW:
                code = (out.sign_bit if num < 0 else 0) | inf
            elif narrow is not out:
                code = int(_array.convert(np.array([code], np.uint32), narrow, out, Context())[0])
            if not p.output_subnormals and (code & out.magnitude_mask) >> out.mantissa_bits == 0:
                code = 0
            codes[i] = code
        return codes


def _exact_sum(values: list[float]) -> tuple[int, int]:
    """``sum(values) = num × 2**exp`` exactly, for finite floats."""
    parts = []
    for v in values:
        if v:
            m, e = math.frexp(v)
            parts.append((int(m * (1 << 53)), e - 53))
    if not parts:
        return 0, 0
    low = min(e for _, e in parts)
    return sum(m << (e - low) for m, e in parts), low


def _row_specials(A: np.ndarray, B: np.ndarray, C: np.ndarray,
                  out: Format) -> tuple[np.ndarray, np.ndarray]:
    """Rows whose result is decided by specials, and their codes."""
    with np.errstate(invalid="ignore", over="ignore"):
        prod = A * B
    nan = np.isnan(prod).any(axis=1) | np.isnan(C)
    pos = (prod == np.inf).any(axis=1) | (C == np.inf)
    neg = (prod == -np.inf).any(axis=1) | (C == -np.inf)
    special = nan | pos | neg
    return special, special_codes(out, nan | (pos & neg), neg & ~pos)
