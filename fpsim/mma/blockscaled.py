"""Block-scaled matrix instructions: Blackwell's ``kind::mxf8f6f4``,
``kind::mxf4`` and ``kind::mxf4nvf4`` (``tcgen05.mma`` on B200, sm_100a;
``mma.sync`` on RTX PRO 6000, sm_120a), with the scales applied inside the
tensor core.

The arithmetic is the published model of Microsoft's MMA-Sim (Xie et al.,
arXiv 2511.10909; package ``mmasim`` 2.1.1, ``mmasim/arithmetic/fdpa.py``),
validated there bit for bit against B200 and RTX PRO 6000 on random inputs.
An instruction computes each output ``d = Σ a[k]·b[k]·α·β + c`` as **one
fused sum**:

* each term has a significand and an exponent.  With ``group = 1``
  (``mxf8f6f4``, "ST-FDPA") every product is a term: significand
  ``sa·sb`` (not renormalized), exponent ``ea + eb + eα + eβ``, where each
  element ``x = s·2**e`` with ``1 <= |s| < 2`` (subnormals at the format's
  ``emin``) and the E8M0 scale adds only its exponent.  With ``group = 16``
  (``mxf4``/``mxf4nvf4``, "GST-FDPA") the exact sum ``P`` of 16 consecutive
  products is a term: significand ``P·sα·sβ``, exponent ``eα + eβ`` (a UE4M3
  scale's significand multiplies it);
* ``c`` (FP32) is a term of the same sum, a subnormal at exponent -126;
* a zero term (a zero product, an all-zero group, a zero scale, ``c = ±0``)
  takes the exponent ``zero_exponent`` (-133 for ``mxf8f6f4``, -139 for the
  FP4 kinds); a group whose products cancel keeps its scales' exponent;
* every term is aligned to the largest exponent ``emax`` with
  ``fraction_bits`` bits below it (25, or 35 for the FP4 kinds) and
  **truncated toward zero**; the truncated terms add exactly;
* the sum is rounded toward zero into FP32, subnormals kept; a magnitude
  of 2**128 or more gives an infinity; a zero result is +0;
* a NaN element, a NaN scale (E8M0 0xFF, UE4M3 0x7F), a NaN ``c``,
  ``inf × 0`` or infinities of both signs give the NaN 0x7FFFFFFF; else an
  infinity (E5M2 elements, ``c``) gives that infinity.

The instructions are rows of ``KINDS`` (data, one code path), and the
element and scale formats a user names are ``RECIPES``.  The exact
value of every term is a float64 (elements of at most 8 bits times powers
of two within float64's range), so the terms and their truncation are
computed exactly in float64, the sum in integers below 2**53, and the final
rounding by the array engine's rounding kernel.

>>> import numpy as np, fpsim.mma as mma
>>> unit = mma.preset("b200", "mxfp8")
>>> unit
<BlockScaledModel b200 mxf8f6f4 e4m3xe4m3 scale e8m0/32 k=32>
>>> a = np.zeros((1, 32), np.uint8); a[0, 0] = 0xB8          # -1.0 in E4M3
>>> b = np.zeros((1, 32), np.uint8); b[0, 0] = 0x38          # 1.0
>>> sa, sb = np.uint8([[127 - 30]]), np.uint8([[127]])          # 2**-30 and 1
>>> unit(a, b, np.float32([1.0]), scale_a=sa, scale_b=sb)      # -2**-30 truncates away
array([1.], dtype=float32)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import array as _array
from ..formats import E4M3, FP32, Format
from ..formats import format as _lookup
from . import _args, _blocktile
from ._align import exponents as _exponents
from ._blocktile import to_fp32
from ._inputs import read_addend

__all__ = ["BlockScaledParams", "BlockScaledModel", "KINDS", "RECIPES", "GPUS", "block_scaled"]

# The instructions, as data (MMA-Sim 2.1.1, mmasim/nv_ptx/sim.py and
# isa_tcgen05mma.py / isa_mma.py; PTX ISA 9.0, mma .kind::*):
# kind -> products per instruction, element formats, (scale format, block)
# pairs, products per term, fraction bits, exponent of a zero term.
KINDS: dict[str, dict[str, Any]] = {
    "mxf8f6f4": {"k": 32, "elements": ("e4m3", "e5m2", "e3m2", "e2m3", "e2m1"),
                 "scales": (("e8m0", 32),), "group": 1, "fraction_bits": 25,
                 "zero_exponent": -133},
    "mxf4": {"k": 64, "elements": ("e2m1",), "scales": (("e8m0", 32),), "group": 16,
             "fraction_bits": 35, "zero_exponent": -139},
    "mxf4nvf4": {"k": 64, "elements": ("e2m1",),
                 "scales": (("e8m0", 32), ("e8m0", 16), ("ue4m3", 16)), "group": 16,
                 "fraction_bits": 35, "zero_exponent": -139},
}

# What a user asks for -> (kind, a's format, b's format, scale format, block).
RECIPES: dict[str, tuple[str, str, str, str, int]] = {
    "mxfp8": ("mxf8f6f4", "e4m3", "e4m3", "e8m0", 32),
    "mxfp6": ("mxf8f6f4", "e3m2", "e3m2", "e8m0", 32),
    "mxfp4": ("mxf4", "e2m1", "e2m1", "e8m0", 32),
    "nvfp4": ("mxf4nvf4", "e2m1", "e2m1", "ue4m3", 16),
}

# The GPUs whose block-scaled instructions MMA-Sim models, with the same
# arithmetic: B200 (tcgen05.mma, sm_100a), RTX PRO 6000 (mma.sync, sm_120a).
GPUS = ("b200", "rtx-pro-6000")

_NAN32 = 0x7FFFFFFF
_INF32 = _blocktile._INF32


@dataclass(frozen=True)
class BlockScaledParams:
    """One block-scaled instruction (a row of ``KINDS`` with its
    operand formats): ``kind`` (PTX ``.kind::``), ``a``/``b`` element
    formats, ``scale`` (``"e8m0"`` or ``"ue4m3"``), ``block`` (elements per
    scale along K), ``k`` (products per instruction), ``group`` (products
    per term: 1, or 16 summed exactly first), ``fraction_bits`` (bits kept
    below the largest exponent), ``zero_exponent`` (the exponent of a zero
    term)."""

    kind: str
    a: str
    b: str
    scale: str
    block: int
    k: int
    group: int
    fraction_bits: int
    zero_exponent: int


class BlockScaledModel:
    """A block-scaled instruction as a callable:
    ``model(a, b, c, scale_a=, scale_b=)``.

    ``a``, ``b``: arrays ``(..., K)`` of element codes (unsigned integers,
    one code per element: FP4 and FP6 unpacked) or values of the element
    format's ml_dtypes dtype; ``scale_a``, ``scale_b``: arrays
    ``(..., K / block)`` of scale codes (uint8) or values (``float8_e8m0fnu``
    for E8M0; ``float8_e4m3fn`` for UE4M3, whose sign bit the instruction
    ignores); ``c``: FP32 ``(...)`` (None is +0).  Returns ``d`` (float32).
    ``K`` is at most :attr:`k` (padded with zero products) unless
    ``chain=True``, which runs instructions of ``k`` products in order, each
    result the next one's ``c``, as a GEMM along K does.
    """

    def __init__(self, params: BlockScaledParams, name: str | None = None) -> None:
        if not isinstance(params, BlockScaledParams):
            raise TypeError(f"BlockScaledModel takes a BlockScaledParams, got "
                            f"{type(params).__name__}")
        self.params = params
        self.name = name
        self.a_format = _lookup(params.a)
        self.b_format = _lookup(params.b)
        self.scale_format = E4M3 if params.scale == "ue4m3" else _lookup(params.scale)

    @property
    def k(self) -> int:
        """Products per instruction."""
        return self.params.k

    def __repr__(self) -> str:
        p = self.params
        label = f"{self.name} " if self.name else ""
        return (f"<BlockScaledModel {label}{p.kind} {p.a}x{p.b} scale {p.scale}/{p.block} "
                f"k={p.k}>")

    def __call__(self, a: Any, b: Any, c: Any = None, *, scale_a: Any = None,
                 scale_b: Any = None, chain: bool = False) -> np.ndarray:
        p = self.params
        _array.engine.check_flag("chain", chain)
        A = _elements(a, self.a_format, "a")
        B = _elements(b, self.b_format, "b")
        if A.ndim == 0 or A.shape != B.shape:
            raise ValueError(f"a and b must have the same shape (..., K); got {A.shape} and "
                             f"{B.shape}")
        rows, K = A.shape[:-1], A.shape[-1]
        if K % p.block:
            raise ValueError(f"K={K} is not a multiple of the scale block ({p.block} elements "
                             f"per {p.scale} scale of {p.kind})")
        if K > p.k and not chain:
            raise ValueError(f"K={K} products exceed this instruction's k={p.k}; pass "
                             f"chain=True to run instructions of {p.k} along K")
        SA = self._scales(scale_a, "scale_a", rows, K)
        SB = self._scales(scale_b, "scale_b", rows, K)
        n = int(np.prod(rows, dtype=np.int64))
        C = read_addend(c, FP32, rows).reshape(n)
        codes = self._chain(A.reshape(n, K), B.reshape(n, K), SA.reshape(n, -1),
                            SB.reshape(n, -1), C)
        return codes.view(np.float32).reshape(rows)

    def _chain(self, A: np.ndarray, B: np.ndarray, SA: np.ndarray, SB: np.ndarray,
               C: np.ndarray) -> np.ndarray:
        """FP32 codes of the instructions chained along K, row by row
        (float64 values: elements ``(n, K)``, scales ``(n, K / block)``, ``c``
        ``(n,)``)."""
        p = self.params
        per = p.k // p.block
        blocks = max(1, -(-A.shape[1] // p.k))
        codes = np.zeros(A.shape[0], np.uint32)
        for j in range(blocks):
            sl, ss = slice(j * p.k, (j + 1) * p.k), slice(j * per, (j + 1) * per)
            codes = self._instruction(*_padded(A[:, sl], B[:, sl], SA[:, ss], SB[:, ss], p), C)
            C = codes.view(np.float32).astype(np.float64)
        return codes

    def gemm(self, a: Any, b: Any, scale_a: Any, scale_b: Any, c: Any = None) -> np.ndarray:
        """The GEMM a kernel builds on the instruction: ``a`` (M×K) and
        ``b`` (K×N) element codes or values, ``scale_a`` (M × K/block) and
        ``scale_b`` (K/block × N); each output is the chain of instructions
        along K from ``c`` (M×N FP32, default +0).  Returns float32 (M×N).

        Computed a tile of outputs at a time (``fpsim/mma/_blocktile.py``,
        proven equal to the instruction chained output by output); an
        output whose row or column holds a NaN or infinite element or a NaN
        scale, or whose ``c`` is not finite, is computed by the instruction
        itself.

        >>> import numpy as np
        >>> unit = block_scaled("b200", "mxfp8")
        >>> a = np.full((2, 64), 0x38, np.uint8)                  # 1.0 (E4M3)
        >>> s = np.full((2, 2), 127, np.uint8)                    # 1.0 (E8M0)
        >>> unit.gemm(a, a.T, s, s.T)
        array([[64., 64.],
               [64., 64.]], dtype=float32)
        """
        p = self.params
        A = _array.engine.as_array(a)
        B = _array.engine.as_array(b)
        if A.ndim != 2 or B.ndim != 2 or A.shape[1] != B.shape[0]:
            raise ValueError(f"gemm() takes a (M, K) and b (K, N); got {A.shape} and {B.shape}")
        M, K = A.shape
        N = B.shape[1]
        _array.engine.check_size("gemm", (M, N), 8, "the output")  # (and c, as float64)
        if K % p.block:
            raise ValueError(f"K={K} is not a multiple of the scale block ({p.block} elements "
                             f"per {p.scale} scale of {p.kind})")
        SB = _array.engine.as_array(scale_b)
        if SB.shape != (K // p.block, N):
            raise ValueError(f"scale_b has shape {SB.shape}; accepted {(K // p.block, N)} "
                             f"(one {p.scale} scale per {p.block} elements of K={K}, per "
                             f"column of b)")
        va = _elements(A, self.a_format, "a")
        vb = _elements(B, self.b_format, "b")
        sa = self._scales(scale_a, "scale_a", (M,), K)
        sb = self._scales(SB.T, "scale_b", (N,), K).T
        C = read_addend(c, FP32, (M, N))
        out = np.empty((M, N), np.uint32)
        if not out.size:
            return out.view(np.float32)
        # outputs the instruction computes itself: non-finite elements or
        # scales in their row or column, a non-finite c (and K = 0)
        rows = ~(np.isfinite(va).all(axis=1) & np.isfinite(sa).all(axis=1))
        cols = ~(np.isfinite(vb).all(axis=0) & np.isfinite(sb).all(axis=0))
        own = rows[:, None] | cols[None, :] | ~np.isfinite(C) | (K == 0)
        if not own.all():  # the rest on the tile path, given finite stand-ins
            fa, fsa, fb, fsb = va, sa, vb, sb
            if rows.any():
                fa, fsa = np.where(rows[:, None], 0.0, va), np.where(rows[:, None], 1.0, sa)
            if cols.any():
                fb, fsb = np.where(cols, 0.0, vb), np.where(cols, 1.0, sb)
            out[...] = _blocktile.chain(p, fa, fb, fsa, fsb,
                                        np.where(own, 0.0, C) if own.any() else C,
                                        (self.a_format, self.b_format, self.scale_format))
        m, n = np.nonzero(own)
        step = max(1, (1 << 21) // max(K, 1))
        for i in range(0, m.size, step):
            mi, ni = m[i:i + step], n[i:i + step]
            out[mi, ni] = self._chain(va[mi], vb[:, ni].T, sa[mi], sb[:, ni].T, C[mi, ni])
        return out.view(np.float32)

    def _scales(self, s: Any, label: str, rows: tuple[int, ...], K: int) -> np.ndarray:
        """The scales as float64 values (NaN for the NaN codes), shape
        ``rows + (K / block,)``."""
        p = self.params
        if s is None:
            raise TypeError(f"{label}= is required: one {p.scale} scale per {p.block} "
                            f"elements along K")
        x = _array.engine.as_array(s)
        want = rows + (K // p.block,)
        if x.shape != want:
            raise ValueError(f"{label} has shape {x.shape}; accepted {want} (one {p.scale} "
                             f"scale per {p.block} elements of K={K})")
        fmt = self.scale_format
        if x.dtype.kind in "iu":
            _array.engine.check_codes(x, fmt, label)
            codes = x.astype(np.uint8)
        elif x.dtype == _array.value_dtype(fmt):
            codes = x.view(np.uint8)
        else:
            raise TypeError(f"{label} is {x.dtype}; accepted: uint8 codes or "
                            f"{_array.value_dtype(fmt)} values of the {p.scale} scales")
        if p.scale == "ue4m3":
            codes = codes & np.uint8(0x7F)  # the instruction ignores the sign bit
        with np.errstate(invalid="ignore"):
            return _array.decode(codes, fmt)

    def _instruction(self, A: np.ndarray, B: np.ndarray, SA: np.ndarray, SB: np.ndarray,
                     C: np.ndarray) -> np.ndarray:
        """FP32 codes of one instruction on rows of exact float64 values."""
        p = self.params
        F = p.fraction_bits
        with np.errstate(invalid="ignore"):
            prods = A * B  # exact (elements of at most 8 bits), or IEEE's NaN/inf
        n = A.shape[0]
        if p.group == 1:
            both = SA[:, 0] * SB[:, 0]  # a power of two (E8M0), or NaN
            with np.errstate(invalid="ignore", over="ignore"):
                terms = prods * both[:, None]
            safe = np.where(np.isfinite(terms), terms, 0.0)
            ea = _exponents(np.where(np.isfinite(A), A, 0.0), self.a_format.emin,
                            p.zero_exponent)
            eb = _exponents(np.where(np.isfinite(B), B, 0.0), self.b_format.emin,
                            p.zero_exponent)
            e = ea + eb + (np.frexp(np.where(np.isfinite(both), both, 1.0))[1] - 1)[:, None]
            e = np.where(safe == 0, p.zero_exponent, e)
        else:
            g = p.k // p.group
            groups = prods.reshape(n, g, p.group)
            P = groups.sum(axis=2)  # exact: at most 16 multiples of 1/4 below 37
            allzero = (groups == 0).all(axis=2)
            each = p.block // p.group if p.block >= p.group else 1
            alpha = np.repeat(SA, each, axis=1)[:, :g]
            beta = np.repeat(SB, each, axis=1)[:, :g]
            with np.errstate(invalid="ignore"):
                terms = P * alpha * beta
            safe = np.where(np.isfinite(terms), terms, 0.0)
            ok = np.isfinite(alpha) & np.isfinite(beta)
            emin = self.scale_format.emin  # E8M0: -127; UE4M3: -6 (its subnormals)
            ea = _exponents(np.where(ok, alpha, 0.0), emin, p.zero_exponent)
            eb = _exponents(np.where(ok, beta, 0.0), emin, p.zero_exponent)
            e = np.where(allzero | (alpha == 0) | (beta == 0) | ~ok, p.zero_exponent, ea + eb)
        finite_c = np.where(np.isfinite(C), C, 0.0)
        ec = _exponents(finite_c, FP32.emin, p.zero_exponent)
        emax = np.maximum(e.max(axis=1), ec)
        # Each term's magnitude on the grid 2**(emax - F), truncated toward
        # zero: exact in float64 (powers of two within its range; the
        # integers stay below 2**50).
        shift = (F - emax)[:, None]
        mags = np.floor(np.ldexp(np.abs(safe), shift))
        total = (np.copysign(mags, safe).sum(axis=1)
                 + np.copysign(np.floor(np.ldexp(np.abs(finite_c), F - emax)), finite_c))
        codes = to_fp32(np.ldexp(total, emax - F))
        # Specials: the IEEE sum of the exact terms and c decides.
        with np.errstate(invalid="ignore", over="ignore"):
            ieee = terms.sum(axis=1) + C
        nan = np.isnan(ieee)
        inf = np.isinf(ieee)
        codes = np.where(inf, np.where(ieee < 0, _INF32 | 0x80000000, _INF32), codes)
        return np.where(nan, _NAN32, codes).astype(np.uint32)


def _elements(x: Any, fmt: Format, label: str) -> np.ndarray:
    """Exact float64 values of an operand given as codes or values."""
    a = _array.engine.as_array(x)
    _array.engine.check_size("gemm", a.shape, 8, label)  # as float64, before any work
    if a.dtype.kind in "iu":
        _array.engine.check_codes(a, fmt, label)
        codes = a.astype(_array.code_dtype(fmt))
    elif a.dtype == _array.value_dtype(fmt):
        codes = _array.engine.raw_codes(a, fmt)
    else:
        raise TypeError(f"{label} is {a.dtype}; accepted: unsigned integer codes of "
                        f"{fmt.name} or {_array.value_dtype(fmt)} values")
    with np.errstate(invalid="ignore"):
        return _array.decode(codes, fmt)


def _padded(A: np.ndarray, B: np.ndarray, SA: np.ndarray, SB: np.ndarray,
            p: BlockScaledParams) -> tuple[np.ndarray, ...]:
    """One instruction's operands, zero products (scale 1) appended up to k."""
    short = p.k - A.shape[1]
    if not short:
        return A, B, SA, SB
    zeros = np.zeros((A.shape[0], short))
    ones = np.ones((A.shape[0], short // p.block))
    return (np.concatenate([A, zeros], 1), np.concatenate([B, zeros], 1),
            np.concatenate([SA, ones], 1), np.concatenate([SB, ones], 1))


def block_scaled(gpu: str, recipe: str, *, a: Any = None, b: Any = None, scale: Any = None,
                 block: int | None = None) -> BlockScaledModel:
    """The block-scaled instruction of ``gpu`` (``"b200"`` or
    ``"rtx-pro-6000"``) for ``recipe``: a name of ``RECIPES``
    (``"mxfp8"``, ``"mxfp6"``, ``"mxfp4"``, ``"nvfp4"``) or a PTX kind of
    ``KINDS`` (``"mxf8f6f4"``, ``"mxf4"``, ``"mxf4nvf4"``).  ``a``/``b``
    override the element formats (``mxf8f6f4`` takes any of E4M3, E5M2,
    E3M2, E2M3, E2M1 for each, mixed), ``scale``/``block`` the scale format
    and block where the kind has several.

    >>> block_scaled("b200", "mxfp8", b="e2m1")
    <BlockScaledModel b200 mxf8f6f4 e4m3xe2m1 scale e8m0/32 k=32>
    >>> block_scaled("b200", "mxf4nvf4", scale="e8m0", block=16)
    <BlockScaledModel b200 mxf4nvf4 e2m1xe2m1 scale e8m0/16 k=64>
    """
    from .presets import _gpu_name  # (presets imports this module)

    key = _gpu_name(gpu)
    if key not in GPUS:
        raise ValueError(f"block-scaled instructions are modelled on {', '.join(GPUS)}; "
                         f"got gpu={gpu!r}")
    if recipe in RECIPES:
        kind, da, db, dscale, dblock = RECIPES[recipe]
    elif recipe in KINDS:
        kind = recipe
        da = db = KINDS[kind]["elements"][0]
        dscale, dblock = KINDS[kind]["scales"][0]
    else:
        raise ValueError(f"unknown block-scaled recipe {recipe!r}; accepted: "
                         f"{', '.join(RECIPES)} or the kinds {', '.join(KINDS)}")
    row = KINDS[kind]
    fa, fb = (_element_name(x, d, kind) for x, d in ((a, da), (b, db)))
    # types checked, never coerced (fpsim/mma/_args.py): block=32.0 or True is refused
    # here, not built into an instruction that fails at its first call
    if scale is not None and not isinstance(scale, (str, Format)):
        raise TypeError(f"block_scaled(): scale must be a scale format's name (e8m0, ue4m3) "
                        f"or None, got {type(scale).__name__} {scale!r}")
    sname = dscale if scale is None else (scale.name if isinstance(scale, Format)
                                          else scale.lower())
    sblock = _args.count("block_scaled()", "block", block, optional=True)
    if sblock is None:  # the kind's first block for that scale format
        sblock = next((bl for s, bl in row["scales"] if s == sname), dblock)
    if (sname, sblock) not in row["scales"]:
        accepted = ", ".join(f"{s} per {bl}" for s, bl in row["scales"])
        raise ValueError(f"{kind} has no {sname} scale per {sblock} elements; accepted: "
                         f"{accepted}")
    params = BlockScaledParams(kind, fa, fb, sname, sblock, row["k"], row["group"],
                               row["fraction_bits"], row["zero_exponent"])
    return BlockScaledModel(params, name=key)


def _element_name(x: Any, default: str, kind: str) -> str:
    if x is None:
        return default
    try:
        name = _lookup(x).name
    except (ValueError, TypeError):
        name = str(x)
    if name not in KINDS[kind]["elements"]:
        raise ValueError(f"{kind} has no {name} elements; accepted: "
                         f"{', '.join(KINDS[kind]['elements'])}")
    return name
