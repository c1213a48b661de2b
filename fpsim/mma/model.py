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

import functools
import math
from typing import Any

import numpy as np

from .. import array as _array
from ..array import _native
from ..context import Context
from ..formats import FP32, Format
from ..modes import Rounding
from ..rounding import OVERFLOW, round_exact
from ._align import ABSENT, add_two, align_terms, cut_normalized, exponents
from ._finish import narrow_format, round_to_output, special_codes, unit_nans, unit_zeros
from ._inputs import read_addend, read_inputs
from .params import ALIGN_FRACTION_BITS, MMAParams

__all__ = ["MMAModel", "block_specials", "join_late", "pairwise_tree", "unrounded"]

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

    Specials are decided block by block, with the block's own ``c``
    (``block_specials`` in this module): a NaN operand or product (``inf × 0``), or
    infinities of both signs among the products and ``c``, give the unit's
    NaN (``params.nan``: ``0x7FFFFFFF`` in FP32 and ``0x7FFF`` in FP16 on
    NVIDIA, whatever NaN came in); otherwise an infinite product or ``c``
    gives that infinity.  In a chain, a block that overflows passes its
    infinity on as the next block's ``c``, where an infinity of the other
    sign makes it the NaN (as MMA-Sim's chained blocks compute it).  A
    ``"pairwise"`` unit (CDNA2) has no screen: its products and tree are
    IEEE FP32 arithmetic, specials included (``inf × 0``, ``inf −
    inf`` of an overflowing partial sum: the unit's NaN).

    >>> import fpsim.mma as mma, numpy as np
    >>> h100 = mma.preset("h100", "fp16")
    >>> h100.k
    16
    >>> a = np.full((3, 16), 0.1, np.float16)
    >>> h100(a, a, np.float32([0, 1, -1])).tolist()
    [0.15992188453674316, 1.159921646118164, -0.8400783538818359]
    >>> a[0, 0] = np.inf; a[1, 0] = np.nan
    >>> [hex(x) for x in h100(a, a, np.float32([0, 1, np.inf])).view(np.uint32)]
    ['0x7f800000', '0x7fffffff', '0x7f800000']
    >>> a100 = mma.preset("a100", "fp16", "fp16")  # block 0 overflows to +inf, block 1: -inf
    >>> x = np.float16([[300.0] * 8 + [-np.inf] + [0.0] * 7])
    >>> hex(a100(x, np.abs(x), np.float16(0), chain=True).view(np.uint16)[0])
    '0x7fff'
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
        _array.engine.check_flag("chain", chain)
        av, bv = read_inputs(a, b, self.input_format, fmt, self.input_b_format)
        rows = av.shape[:-1]
        cv = read_addend(c, out, rows)
        K = av.shape[-1]
        if K > self.issue_k and not chain:
            raise ValueError(f"K={K} products exceed this instruction's k={self.issue_k} "
                             f"({self._label()}); pass chain=True to split K into blocks of "
                             f"{p.k} accumulated in order")
        dt = _array.value_dtype(out)
        n = int(np.prod(rows, dtype=np.int64))
        if K == 0 or n == 0:
            # No product, or no row: no instruction runs, d = c (work bounded by
            # the data, never by a K with no data behind it).
            with np.errstate(over="ignore", invalid="ignore"):
                codes = _array.encode(np.ascontiguousarray(cv, np.float64).reshape(-1), out,
                                      Context())
            return codes.astype(_array.code_dtype(out)).view(dt).reshape(rows)
        A = av.reshape(n, K)
        B = bv.reshape(n, K)
        C = np.ascontiguousarray(cv, dtype=np.float64).reshape(-1)
        blocks = max(1, -(-K // p.k))
        pad = blocks * p.k - K
        if pad:
            A = np.concatenate([A, np.zeros((A.shape[0], pad))], axis=1)
            B = np.concatenate([B, np.zeros((B.shape[0], pad))], axis=1)

        codes = None
        for j in range(blocks):
            sl = slice(j * p.k, (j + 1) * p.k)
            if codes is not None:  # the previous block's result, an infinity or NaN too
                C = _array.decode(codes, out)
            codes = self._block(A[:, sl], B[:, sl], C)
        assert codes is not None
        # once, on the last block's codes: an earlier block's -0, as the next
        # c, is a zero term, and a zero result it leads to is made +0 here
        codes = unit_zeros(codes, out, p.zero_sign)
        return codes.astype(_array.code_dtype(out)).view(dt).reshape(rows)

    def _label(self) -> str:
        p = self.params
        return f"{self.name + ' ' if self.name else ''}{p.inputs} -> {p.output}"

    # -- one block --------------------------------------------------------------------

    def _block(self, A: np.ndarray, B: np.ndarray, C: np.ndarray) -> np.ndarray:
        """Codes of ``out`` for one block: its specials decided with its own
        ``c`` (``block_specials`` in this module), the other rows computed."""
        p = self.params
        out = self.output_format
        if p.accumulation == "pairwise":
            return self._pairwise(A, B, C)
        special, spec_codes = block_specials(p, A, B, C)
        if special.any():
            A = np.where(special[:, None], 0.0, A)
            B = np.where(special[:, None], 0.0, B)
            C = np.where(special, 0.0, C)
        if not p.input_subnormals:
            A = np.where(np.abs(A) < 2.0 ** self.input_format.emin, 0.0, A)
            B = np.where(np.abs(B) < 2.0 ** self.input_b_format.emin, 0.0, B)
        if not p.output_subnormals:
            C = np.where(np.abs(C) < 2.0 ** out.emin, 0.0, C)
        if p.accumulation == "exact":
            codes = self._exact(A, B, C)
        else:
            value = self._aligned(A, B, C)
            codes = round_to_output(value, out, p.rounding, p.result_bits, p.output_subnormals)
        return np.where(special, spec_codes, codes)

    def _products(self, A: np.ndarray, B: np.ndarray) -> tuple[np.ndarray, ...]:
        """Each product as ``(sig, exp, negative)``: ``|a×b| = sig ×
        2**(exp - 23)``, ``exp = ea + eb`` with each operand's exponent
        ``max(floor(log2|x|), emin)`` (``normalize_products`` then moves a
        product at or above 2 to the next exponent).  Zero products get
        ``exp = ABSENT``."""
        nonzero = (A != 0) & (B != 0)
        ea = exponents(A, self.input_format.emin, 0).astype(I64)  # (zero products: masked)
        eb = exponents(B, self.input_b_format.emin, 0).astype(I64)
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
        if p.accumulation == "aligned" and p.c_joins == "first":
            c_exp, c_sig = c_parts(C, self.output_format.emin)
            sig = np.concatenate([sig, c_sig[:, None]], axis=1)
            exp = np.concatenate([exp, np.where(C != 0, c_exp, ABSENT)[:, None]], axis=1)
            neg = np.concatenate([neg, (C < 0)[:, None]], axis=1)
            big, total = align_terms(sig, exp, neg, extra, sticky, p.min_align_exponent)
            return unrounded(big, total, frac)
        if p.accumulation == "aligned":
            big, total = align_terms(sig, exp, neg, extra, sticky, p.min_align_exponent)
            x = unrounded(big, total, frac)
        else:  # odd_even: two interleaved groups, each aligned on its own
            e0, s0 = align_terms(sig[:, 0::2], exp[:, 0::2], neg[:, 0::2], extra, sticky,
                                 p.min_align_exponent)
            e1, s1 = align_terms(sig[:, 1::2], exp[:, 1::2], neg[:, 1::2], extra, sticky,
                                 p.min_align_exponent)
            big, x, frac = add_two(e0, unrounded(e0, s0, frac), e1, unrounded(e1, s1, frac),
                                   frac, p.align_rounding, 0, 0)
        return join_late(p, big, x, frac, C)

    def _pairwise(self, A: np.ndarray, B: np.ndarray, C: np.ndarray) -> np.ndarray:
        """``"pairwise"``: codes of the output (:func:`pairwise_tree`), its
        specials included: subnormal operands and ``c`` flushed to +0 where
        the unit flushes them, the products (``inf × 0`` a NaN) and the tree
        in IEEE arithmetic, no screen (``block_specials`` is not asked)."""
        p = self.params
        if not p.input_subnormals:
            A = np.where(np.abs(A) < 2.0 ** self.input_format.emin, 0.0, A)
            B = np.where(np.abs(B) < 2.0 ** self.input_b_format.emin, 0.0, B)
        if not p.output_subnormals:
            C = np.where(np.abs(C) < 2.0 ** self.output_format.emin, 0.0, C)
        with np.errstate(over="ignore", invalid="ignore"):
            return pairwise_tree(p, (A * B).T, C)

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


def c_parts(C: np.ndarray, emin: int = _C_EMIN) -> tuple[np.ndarray, np.ndarray]:
    """A finite ``c`` as ``(exp, sig)``: ``|c| = sig × 2**(exp - 23)``,
    ``exp = max(floor(log2|c|), emin)``, ``emin`` the output format's
    (-126, FP32's; -14, FP16's, as MMA-Sim's ``frexp_and_normalize`` has it)
    (int64; a zero gives ``sig = 0``)."""
    c_exp = exponents(C, emin, emin).astype(I64)
    return c_exp, np.ldexp(np.abs(C), ALIGN_FRACTION_BITS - c_exp).astype(I64)


def join_late(p: MMAParams, big: np.ndarray, x: np.ndarray, frac: Any,
              C: np.ndarray) -> np.ndarray:
    """The unrounded result where ``c`` joins a sum of products last
    (``c_joins="last"``, ``"odd_even"``): the sum ``x`` (exact float64 on
    the grid ``2**(big - frac)``; ``big`` int64, ABSENT where the sum has no
    products) and ``c`` (finite float64) aligned to the larger exponent by
    :func:`~fpsim.mma._align.add_two`; exact float64.  A ``c`` more than
    ``c_dropped_below`` binades below the sum adds nothing; with
    ``normalized_bits`` the sum is then cut to that many bits below its
    leading bit (:func:`~fpsim.mma._align.cut_normalized`)."""
    e2 = exponents(C, _C_EMIN, _C_EMIN if p.zero_c_at_emin else ABSENT)
    if p.c_dropped_below is not None:
        C = np.where(e2 < np.maximum(big, e2) - p.c_dropped_below, 0.0, C)
    value = add_two(big, x, e2, C, frac, p.align_rounding, p.late_extra_bits, 0)[1]
    if p.normalized_bits is not None:
        value = cut_normalized(value, p.normalized_bits, p.align_rounding, _C_EMIN)
    return value


def unrounded(big: np.ndarray, total: np.ndarray, frac: Any) -> np.ndarray:
    """``total × 2**(big - frac)`` as float64 (exact: ``total`` is an
    integer below 2**53)."""
    scale = np.where(total == 0, 0, big - frac)
    return np.ldexp(np.asarray(total, np.float64), scale)


def pairwise_tree(p: MMAParams, products: np.ndarray, C: np.ndarray,
                  normal_sums: bool = False) -> np.ndarray:
    """``"pairwise"``: ``products`` (shape ``(k, rows)``, exact float64, or
    float32 where every product is exact in it; ``k`` a power of two)
    rounded to the output format (nearest even), summed as a balanced tree
    of additions ``(p0+p1)+(p2+p3)`` each rounded by ``rounding``, then
    ``c + sum``; with ``output_subnormals=False`` every subnormal product,
    partial sum and result is flushed to zero.  Codes of the output format,
    shape ``(rows,)``.  Products and ``C`` may be infinities or NaNs: the
    additions are IEEE's, and every NaN (a NaN term, ``inf − inf``, an
    overflowing partial sum meeting an infinity of the other sign) is the
    unit's (``p.nan``).

    The additions are :func:`fpsim.array.add`; into FP32 with nearest even,
    on a machine whose float32 addition is IEEE's
    (:func:`fpsim.array._native.float32_adds_are_ieee`), they are that
    addition (``tests/test_mma_tile.py`` proves the two equal).

    ``normal_sums``: the caller's proof that every nonzero product is at
    least ``2**-103`` (so that it, rounded to FP32 or not, is a multiple of
    ``2**-126``, and so is every partial sum: zero or normal), which spares
    the flushes of products and partial sums on that path."""
    out = p.output_format
    ctx = Context(rounding=p.rounding)
    sign = U64(out.sign_bit)
    expo = U64(out.magnitude_mask & ~((1 << out.mantissa_bits) - 1))

    def flush(codes: np.ndarray, signed: bool) -> np.ndarray:
        if p.output_subnormals:
            return codes
        tiny = (codes & expo) == 0
        return np.where(tiny, codes & sign if signed else U64(0), codes)

    if out == FP32 and p.rounding == "rne" and PAIRWISE_NATIVE and _native.usable(
            (Rounding.RNE,)) and _native.float32_adds_are_ieee():
        return _pairwise_float32(products, C, p.output_subnormals,
                                 _exact_in_fp32(p.input_format, p.input_b_format), normal_sums,
                                 p.nan_code())
    x = flush(_array.encode(products, out, Context()).astype(U64), signed=False)
    c_codes = _array.encode(C, out, Context()).astype(U64)
    while x.shape[0] > 1:
        x = flush(_array.add(x[0::2], x[1::2], ctx, fmt=out).astype(U64), True)
    d = flush(_array.add(c_codes, x[0], ctx, fmt=out).astype(U64), True)
    return unit_nans(d, out, p.nan_code())


#: Set False to add the pairwise tree by fpsim.array.add alone (the tests compare).
PAIRWISE_NATIVE = True


@functools.cache
def _exact_in_fp32(fa: Format, fb: Format) -> bool:
    """Whether every product of a value of ``fa`` and one of ``fb`` is exact
    in FP32: at most 24 significand bits, multiples of 2**-149, below the
    overflow threshold (FP16 x FP16)."""
    return (fa.precision + fb.precision <= 24
            and (fa.emin - fa.mantissa_bits) + (fb.emin - fb.mantissa_bits) >= -149
            and float(fa.max) * float(fb.max) < 2.0 ** (FP32.emax + 1))


def _pairwise_float32(products: np.ndarray, C: np.ndarray, subnormals: bool,
                      exact: bool, normal_sums: bool, nan_code: int) -> np.ndarray:
    """The tree of :func:`pairwise_tree` by the machine's IEEE float32
    addition (nearest even; overflow gives infinity, as in the kernel), NaNs
    given the unit's code ``nan_code``.  The products are cast where every one
    is ``exact`` in FP32 or the cast changed none, else rounded by the
    kernel's machine fast path
    (:func:`fpsim.array._native.round_fp32`) where they are normal and by
    the kernel elsewhere; ``C`` holds FP32 values (exact in float32).
    ``normal_sums``: the caller knows no product and no partial sum is
    subnormal (:func:`pairwise_tree`), so that only the result is flushed."""
    with np.errstate(over="ignore"):
        v = products.astype(np.float32, copy=False)
    # where every product is exact, or the cast shows it was (equal values: a
    # cast that rounded, overflowed or flushed would differ)
    if not (exact or np.array_equal(v, products)):
        flat = products.reshape(-1)
        codes, _, done = _native.round_fp32(flat, None, Rounding.RNE, flags=False)
        if not done.all():
            rest = ~done
            codes[rest] = _array.encode(flat[rest], FP32, Context())
        v = codes.view(np.float32).reshape(products.shape)
    flush = not subnormals
    if flush and not normal_sums:  # products: to +0
        v = _flush32(v, keep_sign=False)
    with np.errstate(over="ignore", invalid="ignore"):
        while v.shape[0] > 1:
            v = v[0::2] + v[1::2]
            if flush and not normal_sums:
                v = _flush32(v, keep_sign=True)
        d = C.astype(np.float32)
        d += v[0]
    if flush:
        d = _flush32(d, keep_sign=True)
    out = d.view(np.uint32).astype(U64)
    nan = np.isnan(d)
    if nan.any():
        out[nan] = nan_code
    return out


def _flush32(v: np.ndarray, keep_sign: bool) -> np.ndarray:
    """float32 ``v`` with its subnormals (exponent field 0: zeros too) made
    zeros, of their sign or +0; a new array where any changes."""
    bits = v.view(np.uint32)
    tiny = (bits & np.uint32(0x7F800000)) == 0
    if not tiny.any():
        return v
    bits = np.where(tiny, bits & np.uint32(0x80000000) if keep_sign else np.uint32(0), bits)
    return bits.view(np.float32)


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


def block_specials(p: MMAParams, A: np.ndarray, B: np.ndarray,
                   C: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rows of one block whose result its specials decide, and their
    codes (every accumulation but ``"pairwise"``, whose tree carries its
    specials): a NaN operand, product (``inf × 0``) or ``c`` gives the unit's
    NaN (``p.nan_code()``); otherwise infinities of both signs among the
    products and ``c`` give the NaN, and infinities of one sign that
    infinity.  ``c`` is the block's own (in a chain, the previous block's
    result: an infinity where that block overflowed).  With
    ``products_limited``, a product at or beyond the output's overflow
    threshold counts as the infinity of its sign.

    >>> import numpy as np
    >>> from fpsim.mma import MMAParams
    >>> p = MMAParams("bf16", "fp32", k=2, products_limited=True)
    >>> A = np.array([[2.0**127, 1.0], [2.0**127, -np.inf], [1.0, 1.0]])
    >>> B = np.array([[2.0, 1.0], [2.0, 1.0], [1.0, 1.0]])
    >>> special, codes = block_specials(p, A, B, np.array([0.0, 0.0, -np.inf]))
    >>> special.tolist(), [hex(x) for x in codes[special]]
    ([True, True, True], ['0x7f800000', '0x7fc00000', '0xff800000'])
    """
    out = p.output_format
    with np.errstate(invalid="ignore", over="ignore"):
        prod = A * B
        if p.products_limited:
            prod = np.where(np.abs(prod) >= 2.0 ** (out.emax + 1), prod * np.inf, prod)
    nan = np.isnan(prod).any(axis=1) | np.isnan(C)
    pos = (prod == np.inf).any(axis=1) | (C == np.inf)
    neg = (prod == -np.inf).any(axis=1) | (C == -np.inf)
    special = nan | pos | neg
    return special, special_codes(out, nan | (pos & neg), neg & ~pos, p.nan_code())
