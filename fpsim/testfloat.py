"""Berkeley TestFloat's vectors for every fpsim format: generate them
(``testfloat_gen``) and check a device's results against the golden model
(``testfloat_ver``).  The command line is ``python -m fpsim gen`` and
``python -m fpsim ver``; docs/verifying.rst describes the flow.

A line is one case: the operands, the result and the flags, in upper-case
hex separated by one space, as TestFloat writes them.  Each field has the
digits of its format's width (``ceil(width / 4)``: E4M3 ``3C``, E2M1 ``6``,
FP32 ``3F800000``); a comparison's result is ``1`` or ``0``; the flags are
two digits, TestFloat's bits: ``01`` inexact, ``02`` underflow, ``04``
overflow, ``08`` infinite (divide by zero), ``10`` invalid.  Under
stochastic rounding a column of random bits (``ceil(sr_bits / 4)`` digits)
follows the operands: the integer the rounding adds below the last place
(:mod:`fpsim.rounding`).

Operations are named as TestFloat names them, with fpsim's format names
where TestFloat has none: ``f16_add``, ``f32_mulAdd``, ``bf16_sqrt``,
``e4m3_mul``, ``f32_to_e5m2``, ``i32_to_e4m3``, ``e2m1_lt_quiet``.

>>> import fpsim
>>> lines = list(generate("e4m3_mul", n=3, seed=7))
>>> len(lines), len(lines[0].split())
(3, 4)
>>> report = verify("e4m3_mul", lines)
>>> report.ok, report.lines
(True, 3)
>>> verify("e4m3_mul", ["38 40 40 00"]).ok          # 1 × 2 = 2, exact
True
>>> verify("e4m3_mul", ["38 40 48 00"]).differ       # 1 × 2 is not 4
1
"""

from __future__ import annotations

import json
import operator
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from . import _names, arith
from . import array as _array
from ._errstate import quiet, quiet_iter
from ._flagbits import BITS_OF
from ._flagbits import NAMES as FLAG_NAMES
from .array._kernel import specials
from .array.engine import as_array, check_chunk_size, check_codes, check_flag, check_random_array
from .context import Context
from .formats import Format, formats, refusal
from .formats import format as _lookup
from .modes import STOCHASTIC
from .value import convert

__all__ = ["IntFormat", "INT_FORMATS", "Operation", "operation", "operations", "format_name",
           "cases", "golden", "Golden", "generate", "count", "verify", "Report", "VectorError"]

U64 = np.uint64
_ALL64 = (1 << 64) - 1


class IntFormat(NamedTuple):
    """A two's complement (``signed``) or unsigned integer format of
    ``width`` bits, a source of conversions (``i32_to_f16``)."""

    name: str
    width: int
    signed: bool


INT_FORMATS = {f.name: f for f in (IntFormat("i32", 32, True), IntFormat("i64", 64, True),
                                   IntFormat("ui32", 32, False), IntFormat("ui64", 64, False))}

# TestFloat's names of the IEEE formats; every other format goes by its fpsim name.
_TESTFLOAT_NAMES = {"fp16": "f16", "fp32": "f32", "fp64": "f64", "bf16": "bf16"}
_FROM_TESTFLOAT = {v: k for k, v in _TESTFLOAT_NAMES.items()}

# operation -> arity, for the arithmetic; comparison -> whether it signals on quiet NaNs
ARITHMETIC = {"add": 2, "sub": 2, "mul": 2, "div": 2, "mulAdd": 3, "sqrt": 1, "rem": 2,
              "roundToInt": 1}
COMPARISONS = {"eq": False, "le": True, "lt": True, "eq_signaling": True, "le_quiet": False,
               "lt_quiet": False}
_SUFFIXES = sorted([*ARITHMETIC, *COMPARISONS], key=len, reverse=True)


def format_name(fmt: Format | IntFormat) -> str:
    """The name of ``fmt`` in operation names: TestFloat's for the IEEE
    formats (``f16``, ``f32``, ``f64``, ``bf16``), fpsim's for the others.

    >>> format_name(_lookup("binary16")), format_name(_lookup("float8_e4m3fn"))
    ('f16', 'e4m3')
    """
    if isinstance(fmt, IntFormat):
        return fmt.name
    return _TESTFLOAT_NAMES.get(fmt.name, fmt.name)


def _format(name: str, what: str) -> Format | IntFormat:
    key = name.strip().lower()
    if key in INT_FORMATS:
        return INT_FORMATS[key]
    try:
        return _lookup(_FROM_TESTFLOAT.get(key, key))
    except ValueError:
        # the nearest of TestFloat's names (f16, i32) and fpsim's
        names = [*_FROM_TESTFLOAT, *INT_FORMATS, *(n for f in formats()
                                                   for n in (f.name, *f.aliases))]
        raise ValueError(f"{what}: {refusal(name, names)}") from None


@dataclass(frozen=True)
class Operation:
    """One TestFloat operation on fpsim formats (made by :func:`operation`).

    ``op`` is the operation (``"add"``, ..., ``"mulAdd"``, ``"roundToInt"``,
    a comparison such as ``"lt_quiet"``, or ``"to"`` for a conversion),
    ``inputs`` the operands' formats, ``output`` the result's format (None
    for a comparison, whose result is ``1`` or ``0``).

    >>> op = operation("f32_to_e5m2")
    >>> op.name, op.arity, op.output.name, op.columns(sr=False)
    ('f32_to_e5m2', 1, 'e5m2', ['a', 'result', 'flags'])
    """

    name: str
    op: str
    inputs: tuple[Format | IntFormat, ...]
    output: Format | None

    @property
    def arity(self) -> int:
        """The number of operands."""
        return len(self.inputs)

    @property
    def rounds(self) -> bool:
        """Whether the result is rounded (a comparison is not): the
        operations that take a rounding mode, and the random-bits column
        under stochastic rounding."""
        return self.output is not None

    def columns(self, sr: bool, flags: bool = True) -> list[str]:
        """The names of a line's fields."""
        names = list("abc"[:self.arity])
        if sr and self.rounds:
            names.append("random")
        names.append("result")
        return names + (["flags"] if flags else [])

    def __str__(self) -> str:
        return self.name


def operation(name: str | Operation) -> Operation:
    """The operation called ``name``: ``<fmt>_<op>`` with ``<op>`` one of
    ``add sub mul div sqrt mulAdd rem roundToInt eq le lt eq_signaling
    le_quiet lt_quiet``, or a conversion ``<a>_to_<b>`` between any two
    formats, or from ``i32 i64 ui32 ui64`` to a format.  Formats go by
    TestFloat's names where it has them (``f16 f32 f64 bf16``), else by
    fpsim's (``e4m3``, ``tf32``, ``e2m1``, ... or any alias).

    >>> operation("f16_mulAdd").inputs[2].name, operation("E4M3_ADD").name
    ('fp16', 'e4m3_add')
    >>> operation("f16_to_i32")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: f16_to_i32: fpsim has no conversion to an integer format ...
    """
    if isinstance(name, Operation):
        return name
    if not isinstance(name, str):
        raise TypeError(f"an operation name must be a str, got {type(name).__name__}")
    text = name.strip()
    if "_to_" in text:
        a, b = text.split("_to_", 1)
        src = _format(a, text)
        dst = _format(b, text)
        if isinstance(dst, IntFormat):
            raise ValueError(
                f"{text}: fpsim has no conversion to an integer format (IEEE "
                "convertToInteger's results for NaN and out-of-range operands are the "
                "implementation's choice); integer formats are accepted as sources: "
                "i32_to_f16, ui64_to_e4m3, ...")
        return Operation(f"{format_name(src)}_to_{format_name(dst)}", "to", (src,), dst)
    lower = text.lower()
    for suffix in _SUFFIXES:
        if lower.endswith("_" + suffix.lower()) and len(lower) > len(suffix) + 1:
            fmt = _format(text[:-len(suffix) - 1], text)
            if isinstance(fmt, IntFormat):
                raise ValueError(f"{text}: integer formats have conversions to a float format "
                                 f"only ({fmt.name}_to_f32, ...)")
            name = f"{format_name(fmt)}_{suffix}"
            if suffix in COMPARISONS:
                return Operation(name, suffix, (fmt, fmt), None)
            return Operation(name, suffix, (fmt,) * ARITHMETIC[suffix], fmt)
    fmt_text, _, op_text = text.rpartition("_")
    near = _names.nearest(op_text, _SUFFIXES) if fmt_text else []
    hint = f"did you mean {_names.alternatives([f'{fmt_text}_{n}' for n in near])}? " \
        if near else ""
    raise ValueError(
        f"unknown operation {text!r}; {hint}accepted: <fmt>_<op> with <op> one of "
        f"{', '.join(_SUFFIXES[::-1])}, or <a>_to_<b> (e.g. f16_add, e4m3_mulAdd, "
        "f32_to_e5m2, i32_to_bf16; 'python -m fpsim gen -list' lists them all)")


def operations(fmt: Format | str | None = None) -> list[str]:
    """Every operation name (of ``fmt``'s operations and its conversions
    from and to every format, when ``fmt`` is given).

    >>> ops = operations("e2m1")
    >>> ops[:4], "e2m1_to_f32" in ops, "i32_to_e2m1" in ops
    (['e2m1_add', 'e2m1_sub', 'e2m1_mul', 'e2m1_div'], True, True)
    """
    every = formats()
    if fmt is None:
        chosen: list[Format | IntFormat] = list(every)
    elif isinstance(fmt, str):
        chosen = [_format(fmt, "operations()")]
    elif isinstance(fmt, (Format, IntFormat)):
        found = _format(fmt.name, "operations()")
        if found != fmt:
            raise ValueError(f"operations(): format {fmt.name!r} is not the registered format of "
                             "that name; accepted a registered format or its name")
        chosen = [found]
    else:
        raise TypeError(f"operations(): fmt must be a format, a format's name or None (every "
                        f"format), got {type(fmt).__name__}")
    if isinstance(chosen[0], IntFormat):  # a source of conversions, nothing else
        return [f"{chosen[0].name}_to_{format_name(g)}" for g in every]
    out = []
    for f in chosen:
        n = format_name(f)
        out += [f"{n}_{s}" for s in (*ARITHMETIC, *COMPARISONS)]
    for f in chosen:
        n = format_name(f)
        for g in every:
            if g is not f:
                out.append(f"{n}_to_{format_name(g)}")
                if fmt is not None:
                    out.append(f"{format_name(g)}_to_{n}")
        out += [f"{i}_to_{n}" for i in INT_FORMATS]
    return list(dict.fromkeys(out))


# -- the settings -------------------------------------------------------------------------------

def _context(ctx: Context | None) -> Context:
    if ctx is None:
        return Context()
    if not isinstance(ctx, Context):
        raise TypeError(f"ctx must be an fpsim.Context, got {type(ctx).__name__}")
    return ctx.copy(flags=0)


def _sr(op: Operation, ctx: Context) -> bool:
    return op.rounds and ctx.rounding in STOCHASTIC


# -- the cases ---------------------------------------------------------------------------------
#
# As TestFloat's genCases: an operand is either the next code of a sequence
# (sign x exponent x significand patterns, crossed) or a random code drawn
# with weights (see _random_codes); each case of an operation with k operands
# takes its pattern of sequence and random operands from _PATTERNS.

# bit j set: operand j is the sequence's; clear: a random code.  Level 1 then level 2.
_PATTERNS = {
    1: ([0b0, 0b0, 0b1], [0b0, 0b1]),
    2: ([0b00, 0b01, 0b00, 0b10, 0b00, 0b11], [0b00, 0b11]),
    3: ([0b000, 0b001, 0b010, 0b100, 0b000, 0b011, 0b101, 0b110, 0b111], [0b000, 0b111]),
}
_WORDS = 4          # random 64-bit words drawn per operand per case
_EXHAUSTIVE = 1 << 24  # level 2 of formats up to 8 bits: every tuple, when at most this many


def _exponents(fmt: Format, wide: bool) -> list[int]:
    """Exponent fields worth crossing (TestFloat's f32QIn / f32QOut,
    derived from the format): zero/subnormal, the smallest normals, around
    1 and around 2**precision, the largest, and the top field."""
    top, b, p = (1 << fmt.exponent_bits) - 1, fmt.bias, fmt.precision
    es = [0, 1, b - p, b - 2, b - 1, b, b + 1, b + 2, b + p, top - 1, top]
    if wide:
        es += [2, b - 4, b - 3, b + 3, b + 4, b + p - 1, b + p + 1, top - 2]
    return sorted({e for e in es if 0 <= e <= top})


def _significands(m: int, level: int) -> list[int]:
    """Significand patterns: TestFloat's P1 (0, 1, all ones, all ones but
    the last) at level 1; P2 at level 2 (single bits, runs of ones from the
    top and from the bottom, all ones with one bit clear)."""
    ones = (1 << m) - 1
    if level == 1:
        ps = [0, 1, ones, ones - 1]
    else:
        ps = ([0] + [1 << k for k in range(m)]
              + [ones & ~((1 << k) - 1) for k in range(m - 1, 0, -1)]
              + [ones] + [ones ^ (1 << k) for k in range(m)]
              + [(1 << k) - 1 for k in range(m - 1, 1, -1)])
    return list(dict.fromkeys(p for p in ps if 0 <= p <= ones))


def _sequence(fmt: Format | IntFormat, level: int, wide: bool) -> np.ndarray:
    """The codes an operand runs through, in order, without repeats."""
    if isinstance(fmt, IntFormat):
        w = fmt.width
        lo, hi = (-(1 << (w - 1)), (1 << (w - 1)) - 1) if fmt.signed else (0, (1 << w) - 1)
        vs = [0, 1, 2, 3, hi, hi - 1, lo, lo + 1, -1, -2, -3]
        step = 1 if level == 2 else 4
        for k in range(2, w, step):
            vs += [1 << k, (1 << k) - 1, (1 << k) + 1, -(1 << k), -(1 << k) - 1]
        codes = [v & ((1 << w) - 1) for v in vs if lo <= v <= hi]
        return np.array(list(dict.fromkeys(codes)), dtype=U64)
    m, e = fmt.mantissa_bits, fmt.exponent_bits
    signs = (0, 1) if fmt.signed else (0,)
    codes = [(s << (e + m)) | (x << m) | p for s in signs for x in _exponents(fmt, wide)
             for p in _significands(m, level)]
    return np.array(list(dict.fromkeys(codes)), dtype=U64)


def _mask(bits: np.ndarray) -> np.ndarray:
    """``2**bits - 1`` elementwise, for 0 <= bits <= 64."""
    shifted = np.left_shift(U64(1), np.minimum(bits, 63).astype(U64)) - U64(1)
    return np.where(bits >= 64, U64(_ALL64), shifted)


def _random_codes(fmt: Format | IntFormat, w: np.ndarray, tie: Format | None) -> np.ndarray:
    """One random code per row of ``w`` (uint64 words, ``_WORDS`` a row),
    weighted as TestFloat's f32Random: 3/8 an exponent of the wide set with
    a significand of two P2 patterns added, 1/8 that exponent with a random
    significand, 3/8 an exponent drawn near the middle of the range (within
    2**k of it, k from the full width down to 5 bits less) with two P2
    patterns, 1/8 that exponent with a random significand.  A conversion
    to a format of lower precision (``tie``) takes 1/8 of its cases
    instead at a midpoint between two neighbours of ``tie`` (normal or
    subnormal there), or one code beside it.  Integers: a random number of
    low bits set at random, negated half the time when signed."""
    w0, w1, w2, w3 = (w[:, i] for i in range(_WORDS))
    if isinstance(fmt, IntFormat):
        bits = (w0 % U64(fmt.width + (0 if fmt.signed else 1))).astype(np.int64)
        mag = w1 & _mask(bits)
        if fmt.signed:
            neg = ((w0 >> U64(8)) & U64(1)).astype(bool)
            mag = np.where(neg, (~mag + U64(1)), mag)
        return mag & U64((1 << fmt.width) - 1)
    e, m = fmt.exponent_bits, fmt.mantissa_bits
    ones = U64((1 << m) - 1)
    cat = w0 & U64(7)
    sign = ((w0 >> U64(3)) & U64(1)) if fmt.signed else np.zeros_like(w0)
    wide = np.array(_exponents(fmt, True), dtype=U64)
    p2 = np.array(_significands(m, 2), dtype=U64)
    q_wide = wide[(w0 >> U64(8)) % U64(len(wide))]
    p3 = (p2[(w1 & U64(0xFFFFFFFF)) % U64(len(p2))] + p2[(w1 >> U64(32)) % U64(len(p2))]) & ones
    p_any = w2 & ones
    kbits = np.maximum(e - np.array([0, 0, 1, 2, 3, 4, 5])[(w0 >> U64(40)) % U64(7)], 0)
    centre = U64(1 << (e - 1))
    half = np.where(kbits > 0, np.left_shift(U64(1), np.maximum(kbits - 1, 0).astype(U64)),
                    U64(0))
    q_mid = np.minimum((w3 & _mask(kbits)) + centre - half, U64((1 << e) - 1))
    exp = np.where(cat < 4, q_wide, q_mid)
    sig = np.where((cat == 3) | (cat == 7), p_any, p3)
    codes = (sign << U64(e + m)) | (exp << U64(m)) | sig
    if tie is not None and m > tie.mantissa_bits:
        codes = np.where(((w0 >> U64(48)) & U64(7)) == 0, _ties(fmt, tie, w, sign), codes)
    return codes


def _ties(src: Format, dst: Format, w: np.ndarray, sign: np.ndarray) -> np.ndarray:
    """Codes of ``src`` halfway between neighbours of ``dst`` (exponents from
    below dst's smallest subnormal to above its largest normal), a quarter
    of them one code above and a quarter one code below."""
    w0, w1, w2 = w[:, 0], w[:, 1], w[:, 2]
    m = src.mantissa_bits
    lo, hi = dst.emin - dst.mantissa_bits - 1, dst.emax + 1
    exp = lo + ((w1 >> U64(32)) % U64(hi - lo + 1)).astype(np.int64)
    below = m - dst.mantissa_bits + np.maximum(dst.emin - exp, 0)
    low_bits = np.minimum(below, m)
    field = np.clip(exp + src.bias, 1, (1 << src.exponent_bits) - 2).astype(U64)
    sig = (w2 & U64((1 << m) - 1)) & ~_mask(low_bits)
    sig |= np.left_shift(U64(1), (low_bits - 1).astype(U64))
    codes = (sign << U64(src.exponent_bits + m)) | (field << U64(m)) | sig
    step = (w0 >> U64(51)) & U64(3)
    width = U64((1 << src.width) - 1)
    codes = np.where(step == 2, (codes + U64(1)) & width, codes)
    return np.where((step == 3) & ((codes & U64(src.magnitude_mask)) > 0), codes - U64(1), codes)


@dataclass(frozen=True)
class _Plan:
    patterns: list[int]
    sequences: list[np.ndarray]
    total: int


def _plan(op: Operation, level: int) -> _Plan:
    if isinstance(level, (bool, np.bool_)) or not isinstance(level, (int, np.integer)):
        raise TypeError(f"level must be an integer (1 or 2), got {type(level).__name__} "
                        f"{level!r}")
    if level not in (1, 2):
        raise ValueError(f"-level {level}: accepted 1 or 2")
    widths = [f.width for f in op.inputs]
    floats = all(isinstance(f, Format) for f in op.inputs)
    if level == 2 and floats and max(widths) <= 8 and (1 << sum(widths)) <= _EXHAUSTIVE:
        seqs = [np.arange(1 << w, dtype=U64) for w in widths]
        return _Plan([(1 << op.arity) - 1], seqs, 1 << sum(widths))
    patterns = _PATTERNS[op.arity][level - 1]
    seqs = [_sequence(f, level, wide=op.arity == 1) for f in op.inputs]
    total = len(patterns)
    for s in seqs:
        total *= len(s)
    return _Plan(patterns, seqs, total)


def count(op: str | Operation, level: int = 1) -> int:
    """The number of cases of a level (what ``gen`` writes without ``-n``):
    each crossed tuple of sequence codes with its random companions, or at
    level 2 every tuple of codes of formats up to 8 bits, where there are at
    most 2**24.

    >>> count("e4m3_add", level=2), count("e2m1_mulAdd", level=2)
    (65536, 4096)
    """
    return _plan(operation(op), level).total


@quiet_iter
def cases(op: str | Operation, ctx: Context | None = None, *, level: int = 1, seed: int = 1,
          n: int | None = None, chunk_size: int = 65536
          ) -> Iterator[tuple[list[np.ndarray], np.ndarray | None]]:
    """The operands of ``n`` cases (default :func:`count`), in chunks:
    ``(operands, random_bits)`` with one uint64 array of codes per operand
    and, under stochastic rounding (``ctx.rounding == "sr"``), the random
    integers (``ctx.sr_bits`` bits, else None).

    Past the level's count the sequences start again with new random
    companions.  The random numbers are the raw 64-bit output of numpy's
    PCG64 seeded with ``seed`` (which numpy keeps the same on every platform
    and version), a fixed number of words per case: the cases do not depend
    on the machine or on ``chunk_size``.

    >>> (a, b), rand = next(cases("e5m2_add", n=4))
    >>> [hex(c) for c in a], rand is None
    (['0xc1', '0x0', '0xbd', '0x3e'], True)
    """
    op = operation(op)
    ctx = _context(ctx)
    plan = _plan(op, level)
    total = plan.total if n is None else _check_count(n)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"-seed {seed!r}: accepted an integer >= 0")
    check_chunk_size(chunk_size)
    sr = _sr(op, ctx)
    words = op.arity * _WORDS + (1 if sr else 0)
    bitgen = np.random.PCG64(seed)
    tie = op.output if op.op == "to" and isinstance(op.output, Format) else None
    sizes = [len(s) for s in plan.sequences]
    npat = len(plan.patterns)
    patterns = np.array(plan.patterns, dtype=np.int64)
    for start in range(0, total, chunk_size):
        stop = min(start + chunk_size, total)
        idx = np.arange(start, stop, dtype=np.int64)
        raw = bitgen.random_raw((stop - start) * words).reshape(stop - start, words)
        mask = patterns[idx % npat]
        t = idx // npat
        digits = []
        for size in reversed(sizes):  # the last operand runs fastest, as in TestFloat
            digits.append(t % size)
            t = t // size
        digits.reverse()
        operands = []
        for j, (fmt, seq) in enumerate(zip(op.inputs, plan.sequences)):
            from_seq = seq[digits[j]]
            if npat == 1 and plan.patterns[0] == (1 << op.arity) - 1:
                operands.append(from_seq)
                continue
            rnd = _random_codes(fmt, raw[:, j * _WORDS:(j + 1) * _WORDS], tie)
            operands.append(np.where((mask >> j) & 1 == 1, from_seq, rnd))
        rand = raw[:, -1] >> U64(64 - ctx.sr_bits) if sr else None
        yield operands, rand


def _check_count(n: Any) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"-n {n!r}: accepted an integer >= 0")
    return n


# -- the golden model --------------------------------------------------------------------------

_BITS_OF = np.array(BITS_OF, dtype=np.uint8)
_ARRAY_OPS = {"add": "add", "sub": "sub", "mul": "mul", "div": "div", "mulAdd": "fma",
              "sqrt": "sqrt"}
_SCALAR_OPS = {"add": arith.add, "sub": arith.sub, "mul": arith.mul, "div": arith.div,
               "mulAdd": arith.fma, "sqrt": arith.sqrt, "rem": arith.remainder}
_COMPARE_FN = {"eq": (arith.eq, "eq"), "eq_signaling": (arith.eq, "eq"),
               "le": (arith.le, "le"), "le_quiet": (arith.le, "le"),
               "lt": (arith.lt, "lt"), "lt_quiet": (arith.lt, "lt")}


@quiet
def golden(op: str | Operation, operands: list[np.ndarray], ctx: Context | None = None, *,
           random_bits: np.ndarray | None = None, exact: bool = False
           ) -> Golden:
    """The golden results of ``op`` on arrays of operand codes, under
    ``ctx``'s settings (default: a fresh :class:`~fpsim.Context`), with
    ``random_bits`` under stochastic rounding and ``exact`` for
    roundToInt (roundToIntegralExact: INEXACT when the value changes).
    Returns a :class:`Golden`: the result codes (uint64; 1 or 0 for a
    comparison), the flags as TestFloat's bits (uint8), and where the result
    is defined (an invalid operation has none in a format without NaN,
    such as E2M1's 0/0).

    The array engine (:mod:`fpsim.array`, proven equal to the scalar model)
    computes add, sub, mul, div, mulAdd, sqrt, the comparisons and the
    conversions between formats of up to 64 bits (FP64 included: ``f64_mul``,
    ``f64_to_f32``, ``f16_to_f64``, ...); the scalar model
    (:mod:`fpsim.arith`, :func:`fpsim.convert`) the rest: rem, roundToInt
    and the conversions from integer formats.  The two give the same codes
    and flags.

    >>> g = golden("f16_add", [np.array([0x3C00]), np.array([0x0001])])
    >>> hex(g.results[0]), hex(g.flags[0])       # 1 + 2**-24 rounds to 1: inexact
    ('0x3c00', '0x1')
    >>> golden("e2m1_div", [np.array([0, 2]), np.array([0, 2])]).defined.tolist()  # 0/0, 1/1
    [False, True]
    >>> a = np.array([0x3FF0000000000001], dtype=np.uint64)      # 1 + 2**-52, squared
    >>> g = golden("f64_mul", [a, a], Context(rounding="rup"))
    >>> hex(g.results[0]), hex(g.flags[0])      # 1 + 2**-51 + 2**-104 rounded up: inexact
    ('0x3ff0000000000003', '0x1')
    """
    op = operation(op)
    ctx = _context(ctx)
    sr = _sr(op, ctx)
    if sr and random_bits is None:
        raise ValueError(f"{op.name} under stochastic rounding needs random_bits")
    if not sr and random_bits is not None:
        raise ValueError(f"random_bits is only used by stochastic rounding (ctx.rounding 'sr', "
                         f"'sr_b' or 'sr_c') of an operation that rounds; {op.name} under "
                         f"rounding={ctx.rounding.value!r} takes none")
    check_flag("exact", exact)
    if op.op != "roundToInt" and exact:
        exact = False  # -exact concerns roundToInt only, as in TestFloat
    if isinstance(operands, (str, bytes)) or not hasattr(operands, "__len__"):
        raise TypeError(f"operands must be a list of {op.arity} arrays of codes (one per "
                        f"operand), got {type(operands).__name__}")
    if len(operands) != op.arity:
        raise ValueError(f"{op.name} takes {op.arity} operand arrays, got {len(operands)}")
    xs = [_operand_codes(op, j, a) for j, a in enumerate(operands)]
    if any(x.size != xs[0].size for x in xs):
        raise ValueError(f"{op.name}: the operand arrays hold different numbers of codes "
                         f"({', '.join(str(x.size) for x in xs)}); accepted one code per case "
                         "in each")
    if random_bits is not None:
        random_bits = check_random_array(random_bits, ctx.sr_bits).reshape(-1).astype(U64)
        if random_bits.size != xs[0].size:
            raise ValueError(f"{op.name}: random_bits holds {random_bits.size} numbers for "
                             f"{xs[0].size} cases; accepted one per case")
    # A format without NaN has no result for an invalid operation (0/0,
    # sqrt(-1), a NaN converted into it): fpsim refuses those, and such cases
    # are marked undefined rather than given a made-up code.
    tolerant = op.output is not None and not op.output.has_nan
    fn = _array_path(op)
    if fn is not None:
        try:
            codes, flags = fn(xs, ctx, random_bits)
        except ValueError:
            if not tolerant:
                raise
        else:
            return Golden(codes.astype(U64), _BITS_OF[flags], np.ones(codes.size, dtype=bool))
    return _scalar_path(op, xs, ctx, random_bits, exact, tolerant)


def _operand_codes(op: Operation, j: int, codes: Any) -> np.ndarray:
    """Operand ``j``'s codes as uint64, checked: integers within its format's width."""
    fmt = op.inputs[j]
    a = as_array(codes)
    if a.dtype.kind not in "iu":
        raise TypeError(f"{op.name}: operand {'abc'[j]} must hold integer codes of "
                        f"{format_name(fmt)}, got dtype {a.dtype}")
    check_codes(a, fmt, f"{op.name}: operand {'abc'[j]}")  # type: ignore[arg-type]
    return a.astype(U64).reshape(-1)


class Golden(NamedTuple):
    """The golden model's answer for arrays of cases (:func:`golden`)."""

    results: np.ndarray
    """The result codes (uint64; 1 or 0 for a comparison)."""
    flags: np.ndarray
    """The flags as TestFloat's bits (uint8)."""
    defined: np.ndarray
    """False where the operation is invalid and the result's format has no
    NaN to deliver (its result and flags are then 0)."""


def _in_engine(fmt: Format) -> bool:
    """Whether the array engine computes in ``fmt``: up to 64 bits wide,
    of precision up to 53 (FP64 and every narrower format)."""
    return fmt.width <= 64 and fmt.precision <= 53


def _array_path(op: Operation) -> Any:
    fmt = op.inputs[0]
    if isinstance(fmt, IntFormat):
        return None
    dtype = _array.code_dtype

    def typed(xs: list[np.ndarray], f: Format) -> list[np.ndarray]:
        return [x.astype(dtype(f)) for x in xs]

    extra = lambda rand: {} if rand is None else {"random_bits": rand}  # noqa: E731
    if not _in_engine(fmt):
        return None
    if op.op in _ARRAY_OPS:
        name = _ARRAY_OPS[op.op]
        return lambda xs, ctx, rand: getattr(_array, name)(
            *typed(xs, fmt), ctx, fmt=fmt, return_flags=True, **extra(rand))
    if op.op in COMPARISONS:
        name = _COMPARE_FN[op.op][1]
        return lambda xs, ctx, rand: getattr(_array, name)(
            *typed(xs, fmt), ctx, fmt=fmt, signaling=COMPARISONS[op.op], return_flags=True)
    dst = op.output
    if op.op == "to" and dst is not None and _in_engine(dst):
        return lambda xs, ctx, rand: _array.convert(
            *typed(xs, fmt), fmt, dst, ctx, return_flags=True, **extra(rand))
    return None


def _scalar_path(op: Operation, xs: list[np.ndarray], ctx: Context,
                 random_bits: np.ndarray | None, exact: bool, tolerant: bool) -> Golden:
    size = xs[0].size
    codes = np.zeros(size, dtype=U64)
    flags = np.zeros(size, dtype=np.uint8)
    defined = np.ones(size, dtype=bool)
    src = op.inputs[0]
    rows = [x.tolist() for x in xs]
    rands = random_bits.tolist() if random_bits is not None else None
    if op.op in COMPARISONS:
        fn = _COMPARE_FN[op.op][0]
        signaling = COMPARISONS[op.op]
        for i in range(size):
            ctx.clear_flags()
            r = fn(src.from_bits(rows[0][i]), src.from_bits(rows[1][i]), ctx,
                   signaling=signaling)
            codes[i] = int(r)
            flags[i] = ctx.flags.value
        return Golden(codes, _BITS_OF[flags], defined)
    for i in range(size):
        ctx.clear_flags()
        kw = {} if rands is None else {"random_bits": rands[i]}
        try:
            if op.op == "to":
                if isinstance(src, IntFormat):
                    v = rows[0][i]
                    if src.signed and v >> (src.width - 1):
                        v -= 1 << src.width
                    r = op.output.round(v, ctx, **kw)  # type: ignore[union-attr]
                else:
                    r = convert(src.from_bits(rows[0][i]), op.output, ctx,  # type: ignore[arg-type]
                                **kw)
            elif op.op == "roundToInt":
                r = arith.round_to_integral(src.from_bits(rows[0][i]), exact, ctx, **kw)
            else:
                r = _SCALAR_OPS[op.op](*(src.from_bits(row[i]) for row in rows), ctx, **kw)
        except ValueError:
            if not tolerant:
                raise
            defined[i] = False
            continue
        codes[i] = r.bits
        flags[i] = ctx.flags.value
    return Golden(codes, _BITS_OF[flags], defined)


# -- lines -------------------------------------------------------------------------------------

def _digits(fmt: Format | IntFormat | None) -> int:
    return 1 if fmt is None else -(-fmt.width // 4)


_HEX_TABLES: dict[int, list[str]] = {}


def _hex(values: np.ndarray, digits: int) -> list[str]:
    if digits <= 4:
        table = _HEX_TABLES.get(digits)
        if table is None:
            table = _HEX_TABLES[digits] = [f"{c:0{digits}X}" for c in range(1 << (4 * digits))]
        return [table[c] for c in values.tolist()]
    return [f"{c:0{digits}X}" for c in values.tolist()]


@quiet_iter
def generate(op: str | Operation, ctx: Context | None = None, *, level: int = 1, seed: int = 1,
             n: int | None = None, exact: bool = False, flags: bool = True,
             chunk_size: int = 65536) -> Iterator[str]:
    """The lines of ``op``'s vectors (without newlines): the cases of
    :func:`cases` with their golden results and flags (:func:`golden`).
    ``flags=False`` leaves the flags field out.  Cases without a golden
    result (an invalid operation into a format without NaN, such as E2M1's
    0/0) are left out, so there the lines may be fewer than ``n``.

    >>> list(generate("f16_add", n=2, seed=3))
    ['EC0B A5FE EC0B 01', '0000 46FB 46FB 00']
    """
    op = operation(op)
    ctx = _context(ctx)
    check_flag("exact", exact)
    check_flag("flags", flags)
    sr = _sr(op, ctx)
    digits = [_digits(f) for f in op.inputs]
    out_digits = _digits(op.output)
    for operands, rand in cases(op, ctx, level=level, seed=seed, n=n, chunk_size=chunk_size):
        result, bits, defined = golden(op, operands, ctx, random_bits=rand, exact=exact)
        if not defined.all():
            operands = [x[defined] for x in operands]
            rand = None if rand is None else rand[defined]
            result, bits = result[defined], bits[defined]
        cols = [_hex(x, d) for x, d in zip(operands, digits)]
        if sr:
            cols.append(_hex(rand, -(-ctx.sr_bits // 4)))  # type: ignore[arg-type]
        cols.append(_hex(result, out_digits))
        if flags:
            cols.append(_hex(bits, 2))
        yield from map(" ".join, zip(*cols))


# -- verification ------------------------------------------------------------------------------

_is_hex = re.compile(r"[0-9A-Fa-f]+\Z").match
_is_hex_fields = re.compile(r"[0-9A-Fa-f]+(?:\s+[0-9A-Fa-f]+)*\Z").match


class VectorError(ValueError):
    """A malformed line; its number is the attribute ``line``."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(f"line {line}: {message}")
        self.line, self.message = line, message

    def __reduce__(self) -> tuple[Any, ...]:
        # (pickle, e.g. from a worker process: the arguments __init__ takes)
        return (type(self), (self.line, self.message), self.__dict__)


@dataclass
class Report:
    """What :func:`verify` found: counts, and the first offenders.

    ``differ`` lines differ: ``result_mismatches`` in their result (and
    perhaps their flags), ``flag_mismatches`` in their flags alone;
    ``undefined`` lines are not checked: their operation is invalid and the
    result's format has no NaN (E2M1's 0/0), so there is no golden result.
    """

    operation: str
    settings: dict[str, Any]
    lines: int = 0
    agree: int = 0
    result_mismatches: int = 0
    flag_mismatches: int = 0
    undefined: int = 0
    offenders: list[dict[str, Any]] = field(default_factory=list)
    _op: Operation | None = field(default=None, repr=False)

    @property
    def differ(self) -> int:
        """The number of lines that differ from the golden model."""
        return self.result_mismatches + self.flag_mismatches

    @property
    def ok(self) -> bool:
        """Whether every line agrees."""
        return self.differ == 0

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data.

        >>> verify("e2m1_add", ["2 2 4 00"]).to_dict()["agree"]
        1
        """
        return {"operation": self.operation, "settings": self.settings, "ok": self.ok,
                "lines": self.lines, "agree": self.agree, "differ": self.differ,
                "result_mismatches": self.result_mismatches,
                "flag_mismatches": self.flag_mismatches, "undefined": self.undefined,
                "offenders": self.offenders}

    def to_json(self) -> str:
        """:meth:`to_dict` as JSON text.

        >>> '"differ": 0' in verify("e2m1_add", ["2 2 4 00"]).to_json()
        True
        """
        return json.dumps(self.to_dict(), indent=2)

    def __str__(self) -> str:
        s = self.settings
        head = (f"fpsim ver {self.operation}: {'OK' if self.ok else 'MISMATCH'} "
                f"(rounding {s['rounding']}, tininess {s['tininess']}"
                + ("" if not s["saturate"] else ", saturate" if s["saturate"] is True
                   else f", saturation {s['saturate']}")
                + "".join(f", {k}" for k in ("ftz", "daz", "exact") if s.get(k))
                + (f", sr_bits {s['sr_bits']}" if s["rounding"] in ("sr", "sr_b", "sr_c") else "")
                + f", NaNs {'by code, ' + s['nan'] if s['nan_exact'] else 'any NaN agrees'}"
                + ("" if s["flags"] else ", flags not checked") + ")")
        out = [head,
               f"  lines                {self.lines:,}",
               f"  agree                {self.agree:,}",
               f"  differ               {self.differ:,}",
               f"    in the result      {self.result_mismatches:,}",
               f"    in the flags only  {self.flag_mismatches:,}"]
        if self.undefined:
            out.append(f"  not checked          {self.undefined:,} (invalid operation; "
                       f"{self._op.output.name if self._op and self._op.output else ''} "
                       "has no NaN to deliver)")
        if self.offenders:
            word = "offender" if len(self.offenders) == 1 else "offenders"
            first = "the" if len(self.offenders) == self.differ else "the first"
            out.append(f"  {first} {len(self.offenders)} {word}:")
            for o in self.offenders:
                out += _describe(o)
        if not self.ok:
            out.append(f"{self.differ:,} of {self.lines:,} lines differ")
        return "\n".join(out)


def _describe(o: dict[str, Any]) -> list[str]:
    what = {"result": "the result differs", "flags": "the flags differ",
            "result and flags": "the result and the flags differ"}[o["differs"]]
    rows = list(o["operands"].items())
    if "random" in o:
        rows.append(("random", {"bits": o["random"], "fields": "", "value": ""}))
    rows += [("expected", o["expected"]), ("actual", o["actual"])]
    wb, wf, wv = (max(len(f[k]) for _, f in rows) + 2 for k in ("bits", "fields", "value"))
    lines = [f"  line {o['line']}: {o['text']}   ({what})"]
    for name, f in rows:
        text = f"    {name:<9}{f['bits']:<{wb}}{f['fields']:<{wf}}{f['value']:<{wv}}"
        if "flag_bits" in f:
            names = ", ".join(f["flags"]) if f["flags"] is not None else "not given"
            text += f"flags {f['flag_bits']} {names}"
        lines.append(text.rstrip())
    return lines


def _decode(fmt: Format | IntFormat | None, code: int) -> dict[str, str]:
    if fmt is None:
        return {"bits": str(code), "fields": "", "value": "true" if code else "false"}
    bits = f"0x{code:0{_digits(fmt)}X}"
    if isinstance(fmt, IntFormat):
        v = code - (1 << fmt.width) if fmt.signed and code >> (fmt.width - 1) else code
        return {"bits": bits, "fields": "", "value": str(v)}
    s, e, f = fmt.fields(code)
    parts = ([str(s)] if fmt.signed else []) + [f"{e:0{fmt.exponent_bits}b}"]
    if fmt.mantissa_bits:
        parts.append(f"{f:0{fmt.mantissa_bits}b}")
    x = fmt.from_bits(code)
    if x.is_nan:
        value = ("-" if x.is_negative else "") + ("snan" if x.is_signaling else "nan")
    else:
        value = repr(float(x)) if fmt.width <= 64 else str(x)
    return {"bits": bits, "fields": "s e f " + " ".join(parts), "value": value}


def _flag_names(bits: int) -> list[str]:
    """TestFloat's names of the bits set, in IEEE's order (invalid first)."""
    return [name for bit, name in reversed(FLAG_NAMES) if bits & bit]


@quiet
def verify(op: str | Operation, lines: Iterable[str], ctx: Context | None = None, *,
           exact: bool = False, nan_exact: bool = False, flags: bool = True,
           offenders: int = 10, chunk_size: int = 65536) -> Report:
    """Check lines of ``op``'s vectors (a device's results) against the
    golden model under ``ctx``'s settings.  Every NaN result agrees with
    every NaN unless ``nan_exact``: then the NaN's code must be the one
    ``ctx``'s NaN policy gives.  ``flags=False`` ignores the flags: a line
    may then leave the flags field out, and one that has it has it read
    (it must be hex) but not compared.  Blank lines and lines starting with
    ``#`` are skipped; a malformed line raises :class:`VectorError` naming
    its number.

    >>> r = verify("f16_mul", ["3C00 4000 4000 00", "3C00 4000 4000 01"])
    >>> r.lines, r.differ, r.flag_mismatches
    (2, 1, 1)
    >>> verify("f16_mul", ["3C00 4000 00"])
    Traceback (most recent call last):
    ...
    fpsim.testfloat.VectorError: line 1: f16_mul: 3 fields, expected 4 (a b result flags)
    """
    op = operation(op)
    ctx = _context(ctx)
    if isinstance(offenders, bool) or not isinstance(offenders, int) or offenders < 0:
        raise ValueError(f"offenders must be an integer >= 0, got {offenders!r}")
    for name, value in (("exact", exact), ("nan_exact", nan_exact), ("flags", flags)):
        check_flag(name, value)
    check_chunk_size(chunk_size)
    if isinstance(lines, (str, bytes)) or not hasattr(lines, "__iter__"):
        raise TypeError(f"lines must be an iterable of str lines (a list, an open file), got "
                        f"{type(lines).__name__}" + ("; pass text.splitlines()"
                                                     if isinstance(lines, str) else ""))
    sr = _sr(op, ctx)
    names = op.columns(sr, flags=True)
    nin = op.arity + (1 if sr else 0)
    limits = [(1 << f.width) - 1 for f in op.inputs]
    if sr:
        limits.append((1 << ctx.sr_bits) - 1)
    out_limit = 1 if op.output is None else (1 << op.output.width) - 1
    every_limit = [*limits, out_limit, 0x1F]
    widths = {len(names)} if flags else {len(names), len(names) - 1}
    report = Report(op.name, _settings(ctx, op, exact, nan_exact, flags), _op=op)
    batch: list[tuple[int, str, list[int]]] = []
    for number, text in enumerate(lines, 1):
        if not isinstance(text, str):
            given = repr(text)
            given = given if len(given) <= 60 else given[:50] + "..." + given[-6:]
            raise TypeError(f"line {number}: {type(text).__name__} {given} is not a line of "
                            "text; accepted: str lines (a list of str, a file opened in text "
                            "mode)")
        stripped = text.strip()
        if not stripped or stripped.startswith("#"):
            continue
        cells = stripped.split()
        if len(cells) in widths and _is_hex_fields(stripped):
            # The common case, a well-formed line, checked in one pass; any
            # other line takes the checks below, which name what is wrong.
            try:
                values = [int(cell, 16) for cell in cells]
            except ValueError:
                pass
            else:
                if all(map(operator.le, values, every_limit)):
                    batch.append((number, stripped, values))
                    if len(batch) >= chunk_size:
                        _check(op, ctx, batch, report, nin, exact, nan_exact, flags, offenders)
                        batch = []
                    continue
        if len(cells) != len(names) and not (not flags and len(cells) == len(names) - 1):
            expected = (f"{len(names)} ({' '.join(names)})" if flags else
                        f"{len(names) - 1} or {len(names)} ({' '.join(names)}, flags optional "
                        "with --no-flags)")
            raise VectorError(number, f"{op.name}: {len(cells)} fields, expected {expected}")
        values = []
        for j, cell in enumerate(cells):
            if not _is_hex(cell):
                raise VectorError(number, f"field {j + 1} ({names[j]}) {cell[:40]!r} is not "
                                  "hexadecimal")
            v = int(cell, 16)
            if j < nin:
                limit, what = limits[j], (op.inputs[j].name if j < op.arity else
                                          f"sr_bits={ctx.sr_bits}")
            elif j == nin:
                limit, what = out_limit, (op.output.name if op.output else "a comparison")
            else:
                limit, what = 0x1F, "TestFloat's flags"
            if v > limit:
                raise VectorError(number, f"field {j + 1} ({names[j]}) 0x{cell.upper()} is out "
                                  f"of range for {what}: accepted 0x0..0x{limit:X}")
            values.append(v)
        batch.append((number, stripped, values))
        if len(batch) >= chunk_size:
            _check(op, ctx, batch, report, nin, exact, nan_exact, flags, offenders)
            batch = []
    if batch:
        _check(op, ctx, batch, report, nin, exact, nan_exact, flags, offenders)
    return report


def _settings(ctx: Context, op: Operation, exact: bool, nan_exact: bool,
              flags: bool) -> dict[str, Any]:
    return {"rounding": ctx.rounding.value, "tininess": ctx.tininess.value,
            "saturate": ctx.saturate, "ftz": ctx.ftz, "daz": ctx.daz,
            "exact": exact and op.op == "roundToInt", "sr_bits": ctx.sr_bits,
            "nan": ctx.nan.name, "nan_exact": nan_exact, "flags": flags}


def _check(op: Operation, ctx: Context, batch: list[tuple[int, str, list[int]]],
           report: Report, nin: int, exact: bool, nan_exact: bool, flags: bool,
           offenders: int) -> None:
    columns = list(zip(*(values[:nin + 2] for _, _, values in batch)))
    operands = [np.array(c, dtype=U64) for c in columns[:op.arity]]
    rand = np.array(columns[op.arity], dtype=U64) if nin > op.arity else None
    actual = np.array(columns[nin], dtype=U64)
    actual_flags = (np.array([v[nin + 1] if len(v) > nin + 1 else 0 for _, _, v in batch],
                             dtype=np.uint8))
    expected, expected_flags, defined = golden(op, operands, ctx, random_bits=rand, exact=exact)
    report.undefined += int(np.count_nonzero(~defined))
    same = (expected == actual) | ~defined
    out = op.output
    if not nan_exact and out is not None and out.has_nan:
        same |= _is_nan(out, expected) & _is_nan(out, actual)
    flags_same = (expected_flags == actual_flags) | ~defined if flags else np.ones_like(same)
    report.lines += len(batch)
    report.agree += int(np.count_nonzero(same & flags_same & defined))
    report.result_mismatches += int(np.count_nonzero(~same))
    report.flag_mismatches += int(np.count_nonzero(same & ~flags_same))
    bad = np.flatnonzero(~(same & flags_same))
    for i in bad[:max(0, offenders - len(report.offenders))].tolist():
        number, text, values = batch[i]
        entry: dict[str, Any] = {
            "line": number, "text": text,
            "differs": "result" if not same[i] else "flags",
            "operands": {n: _decode(f, values[j])
                         for j, (n, f) in enumerate(zip("abc", op.inputs))},
        }
        if rand is not None:
            entry["random"] = f"0x{values[op.arity]:X}"
        if not same[i] and flags and not flags_same[i]:
            entry["differs"] = "result and flags"
        e_bits, a_bits = int(expected_flags[i]), int(actual_flags[i])
        entry["expected"] = {**_decode(out, int(expected[i])), "flag_bits": f"{e_bits:02X}",
                             "flags": _flag_names(e_bits)}
        entry["actual"] = {**_decode(out, values[nin]),
                           "flag_bits": f"{a_bits:02X}" if len(values) > nin + 1 else "--",
                           "flags": _flag_names(a_bits) if len(values) > nin + 1 else None}
        report.offenders.append(entry)


def _is_nan(fmt: Format, codes: np.ndarray) -> np.ndarray:
    """Where ``codes`` are NaN codes of ``fmt``, by the format's own rule."""
    return specials(fmt, codes, codes & U64(fmt.magnitude_mask))[0]
