"""Correctly rounded elementary functions: exp, log, tanh, erf, rsqrt and
reciprocal, in every format and every rounding mode, with IEEE flags.

The golden (scalar) definition.  ``reciprocal(x)`` is the IEEE division
``1 / x``.  ``rsqrt(x)`` is computed exactly in integers (an integer square
root with a sticky bit, as :func:`fpsim.arith.sqrt`).  exp, log, tanh and erf
are transcendental: their value at a nonzero binary argument (at 1 for log)
is never a binary fraction, so no rounding boundary is ever hit exactly.
They are enclosed in an interval of Fractions (:mod:`fpsim.ops._enclose`)
narrowed until both ends lie strictly between the same two neighbours at
``P = p + 2`` bits (plus the random bits under stochastic rounding); the odd
number between those neighbours is then the round-to-odd of the function at
P bits, and rounding it with the kernel gives the correctly rounded result in
every mode (Boldo and Melquiond: round-to-odd at p + 2 bits followed by any
rounding at p bits is that rounding of the exact value), flags included.

The array path evaluates in float64 (numpy's exp, log, tanh and sqrt,
``math.erf``), widens each result by 2**-44 relative on both sides (these
functions are within a few float64 ulps, 2**-52 relative; the margin is 256
times that), and rounds both ends with :func:`fpsim.array.encode`.  Where the
two ends give the same code and the same flags, the exact value, between
them, gives that code too (rounding is monotone, also for a given random
number under stochastic rounding) and its flags with inexact.  The other
elements (ends that disagree, about 2**-30 of FP16 arguments) take the
golden path, as do zeros, infinities, NaNs and the exact cases.

FP64, and every format wider than :data:`FLOAT64_PATH_WIDTH` bits, takes
the golden path for every element: FP64's rounding cells (2**-52 relative)
are narrower than the interval around the float64 value (2**-43), which can
then never decide, and the float64 path's stand-ins for results beyond
float64's range hold for formats of at most 32 bits only.  The result is as
exact, at the golden path's speed (tens of microseconds an element, erf of
arguments between 1 and 6 about half a millisecond); each distinct code is
computed once (not under stochastic rounding, where every element draws its
own random number).

FP32 in round-to-nearest-even without DAZ or FTZ takes a cheaper form of
the same decision (:func:`_chunk_fp32_nearest`): where the float64 value
lies far from every midpoint of FP32's grid (farther than the interval's
width) and inside FP32's normal range, both ends would round to the
machine's float64 -> float32 cast of it, with inexact alone; the other
elements take the path above.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from .. import array
from .._errstate import quiet
from .._scratch import scratch as work_arrays
from ..array import _native
from ..array.engine import DEFAULT_CHUNK, check_flag, run_chunks, stochastic_bits
from ..context import Context, resolve
from ..formats import FP32, Format
from ..modes import STOCHASTIC, Rounding
from ..rounding import DIVIDE_BY_ZERO, INEXACT, p3109_applies
from ..scalar_steps import finish as _finish
from ..scalar_steps import infinity as _infinity
from ..scalar_steps import invalid as _invalid
from ..scalar_steps import nan_result as _nan_result
from ..scalar_steps import unary_prologue as _unary
from ..value import INF, QNAN, Float
from ._enclose import enclose
from .operands import Distinct, Operand, constant, deliver

__all__ = ["exp", "log", "tanh", "erf", "rsqrt", "reciprocal", "golden"]

_FUNCTIONS = ("exp", "log", "tanh", "erf", "rsqrt")

# Bounds of ln 2 = 0.693147180559945...
_LN2_LO, _LN2_HI = Fraction(6931471805, 10**10), Fraction(6931471806, 10**10)


@quiet
def golden(name: str, a: Float, ctx: Context | None = None, **overrides: Any) -> Float:
    """The correctly rounded ``name(a)`` (``"exp"``, ``"log"``, ``"tanh"``,
    ``"erf"``, ``"rsqrt"``) of a scalar :class:`fpsim.Float`, in its format,
    under the context: the definition the array functions are proven equal
    to.

    >>> import fpsim
    >>> golden("exp", fpsim.FP16.round(1))
    Float(fp16, 0x4170, 2.71875)
    >>> golden("log", fpsim.FP16.round(0.0))        # -inf, divide-by-zero
    Float(fp16, 0xfc00, -inf)
    >>> golden("rsqrt", fpsim.BF16.round(4), rounding="rup")
    Float(bf16, 0x3f00, 0.5)
    """
    if name not in _FUNCTIONS:
        raise ValueError(f"unknown function {name!r}; accepted {', '.join(_FUNCTIONS)}")
    fmt, env, (cls, negative, sig, exp_) = _unary(name, a, ctx, overrides)
    if cls >= QNAN:
        return _nan_result(env, fmt, a)
    if cls == INF:
        return _at_infinity(name, env, fmt, negative)
    if sig == 0:
        return _at_zero(name, env, fmt, negative)
    if name == "rsqrt":
        return _invalid(env, fmt) if negative else _rsqrt(env, fmt, sig, exp_)
    if name == "log":
        if negative:
            return _invalid(env, fmt)
        if exp_ <= 0 and sig == 1 << -exp_:
            return _finish(env, fmt, False, 0, 1, 0)  # log(1) = +0 in every mode
    x = Fraction(sig << exp_) if exp_ >= 0 else Fraction(sig, 1 << -exp_)
    key = env[1]
    bits = fmt.precision + 2 + (key[5] + 1 if key[0] in STOCHASTIC else 0)
    return _transcendental(name, env, fmt, -x if negative else x, bits)


def _at_infinity(name: str, env: Any, fmt: Format, negative: bool) -> Float:
    if name == "exp":
        return _finish(env, fmt, False, 0, 1, 0) if negative else _infinity(env, fmt, False)
    if name in ("tanh", "erf"):
        return _finish(env, fmt, negative, 1, 1, 0)  # ±1, exact
    if negative:
        return _invalid(env, fmt)  # log(-inf), rsqrt(-inf)
    if name == "log":
        return _infinity(env, fmt, False)
    return _finish(env, fmt, False, 0, 1, 0)  # rsqrt(+inf) = +0


def _at_zero(name: str, env: Any, fmt: Format, negative: bool) -> Float:
    if name == "exp":
        return _finish(env, fmt, False, 1, 1, 0)
    if name in ("tanh", "erf"):
        return _finish(env, fmt, negative, 0, 1, 0)
    if name == "log":
        return _infinity(env, fmt, True, computed=DIVIDE_BY_ZERO)
    if p3109_applies(fmt, env[1][7]):
        return _invalid(env, fmt)  # P3109 (rule 7): RSqrt(X <= 0) is NaN
    return _infinity(env, fmt, negative, computed=DIVIDE_BY_ZERO)  # rsqrt(±0) = ±inf


def _rsqrt(env: Any, fmt: Format, sig: int, exp_: int) -> Float:
    """1/sqrt(sig × 2**exp_), exactly: with exp_ made even, it is
    2**(-exp_/2) / sqrt(sig) = r × 2**(-k - exp_/2) with r = sqrt(4**k / sig),
    whose integer part isqrt(4**k // sig) is exact unless a remainder is left
    (then r lies strictly between it and the next integer: a sticky bit)."""
    if exp_ & 1:
        sig, exp_ = sig << 1, exp_ - 1
    key = env[1]
    extra = key[5] + 1 if key[0] in STOCHASTIC else 0
    k = fmt.precision + 4 + extra + sig.bit_length()
    big = 1 << (2 * k)
    quotient, remainder = divmod(big, sig)
    r = math.isqrt(quotient)
    if remainder == 0 and r * r == quotient:
        return _finish(env, fmt, False, r, 1, -k - exp_ // 2)
    return _finish(env, fmt, False, 2 * r + 1, 1, -k - exp_ // 2 - 1)


def _floor_log2(v: Fraction) -> int:
    n, d = v.numerator, v.denominator
    e = n.bit_length() - d.bit_length()
    if (n << -e if e < 0 else n) < (d << e if e > 0 else d):
        e -= 1
    return e


def _transcendental(name: str, env: Any, fmt: Format, x: Fraction, bits: int) -> Float:
    """Round f(x) (x nonzero, positive for log) through its round-to-odd at
    ``bits`` bits: ``(2a + 1) × 2**(e - 1)`` with ``a × 2**e < |f(x)| <
    (a + 1) × 2**e`` and ``a`` of ``bits`` bits."""
    key = env[1]
    negative = x < 0 and name != "exp"
    mag = -x if negative else x  # tanh and erf are odd
    if name == "exp":
        # Beyond these, every value rounds alike: above 2**(emax + 2) it
        # overflows; below 2**(qmin - R - 2) (R random bits) it is below a
        # quarter of the random resolution of the smallest quantum.
        qmin = fmt.emin - fmt.mantissa_bits
        r = key[5] + 1 if key[0] in STOCHASTIC else 0
        if x > (fmt.emax + 2) * _LN2_HI:
            return _finish(env, fmt, False, 3, 1, fmt.emax + 1)
        if x < (qmin - r - 3) * _LN2_HI:
            return _finish(env, fmt, False, 1, 1, qmin - r - 3)
    elif name == "tanh" and mag >= 64 or name == "erf" and mag >= 1 + math.isqrt(bits):
        # 1 - tanh(x) < 2 e**(-2x) < 2**-183 and 1 - erf(x) < e**(-x**2) <
        # 2**-bits: the value lies in (1 - 2**-bits, 1).
        return _finish(env, fmt, negative, (1 << (bits + 1)) - 1, 1, -bits - 1)
    digits = (bits * 31) // 100 + 8
    if name in ("tanh", "erf"):
        # tanh from exp(2x) - 1 cancels about log10(1/x) digits.
        digits += max(0, -_floor_log2(mag)) * 31 // 100
    while True:
        lo, hi = enclose(name, mag, digits)
        if hi < 0:  # log of x < 1
            lo, hi, negative = -hi, -lo, True
        if lo > 0:
            e = _floor_log2(lo) - (bits - 1)
            a_lo = (lo.numerator << -e) // lo.denominator if e < 0 else \
                lo.numerator // (lo.denominator << e)
            a_hi = (hi.numerator << -e) // hi.denominator if e < 0 else \
                hi.numerator // (hi.denominator << e)
            if a_lo == a_hi:
                return _finish(env, fmt, negative, 2 * a_lo + 1, 1, e - 1)
        digits *= 2
        if digits > 100_000:  # pragma: no cover - would mean an exact case missed
            raise RuntimeError(f"{name}({x}) could not be rounded")


# -- arrays ---------------------------------------------------------------------------------------

def _erf64(v: np.ndarray) -> np.ndarray:
    return np.frompyfunc(math.erf, 1, 1)(v).astype(np.float64)


_FLOAT64 = {"exp": np.exp, "log": np.log, "tanh": np.tanh, "erf": _erf64,
            "rsqrt": lambda v: 1.0 / np.sqrt(v)}
_MARGIN = 2.0 ** -44
U8, U64 = np.uint8, np.uint64


def _exact_cases(name: str, v: np.ndarray) -> np.ndarray:
    """Finite nonzero arguments the golden path takes: exact results and
    invalid operations."""
    if name == "log":
        return (v == 1.0) | (v < 0)
    if name == "rsqrt":
        m, e = np.frexp(v)
        return (v < 0) | ((m == 0.5) & (e % 2 == 1))  # powers of 4: exact roots
    return np.zeros(v.shape, bool)


def _chunk(name: str, fmt: Format, daz: bool, codes: np.ndarray, rand: np.ndarray | None,
           scratch: Context) -> tuple[np.ndarray, np.ndarray]:
    v = array.decode(codes, fmt)
    if daz:
        sub = (v != 0) & (np.abs(v) < float(fmt.min_normal))
        v[sub] = np.copysign(0.0, v[sub])
    out = np.empty(codes.shape, array.code_dtype(fmt))
    flags = np.zeros(codes.shape, np.uint8)
    golden_lanes = ~np.isfinite(v) | (v == 0) | _exact_cases(name, v)
    regular = np.flatnonzero(~golden_lanes)
    if regular.size:
        with np.errstate(all="ignore"):
            y = _FLOAT64[name](v[regular])
            width = np.abs(y) * _MARGIN
            lo, hi = y - width, y + width
        # exp beyond float64's normal range: any value there rounds into a
        # format of at most 32 bits (with at most 64 random bits) as these.
        over, under = np.isinf(y), np.abs(y) < 2.0 ** -1000
        lo[over], hi[over] = 2.0 ** 1023, np.finfo(np.float64).max
        lo[under], hi[under] = 2.0 ** -1001, 2.0 ** -1000
        r = None if rand is None else rand[regular]
        c_lo, f_lo = array.encode(lo, fmt, scratch.copy(), random_bits=r, return_flags=True)
        c_hi, f_hi = array.encode(hi, fmt, scratch.copy(), random_bits=r, return_flags=True)
        agree = (c_lo == c_hi) & ((f_lo | INEXACT) == (f_hi | INEXACT))
        out[regular[agree]] = c_lo[agree]
        flags[regular[agree]] = f_lo[agree] | INEXACT
        golden_lanes[regular[~agree]] = True
    for i in np.flatnonzero(golden_lanes):
        out[i], flags[i] = _golden_code(name, fmt, int(codes[i]), scratch,
                                        None if rand is None else int(rand[i]))
    return out, flags


# A float64 y lies on an FP32 midpoint (a rounding boundary of round to
# nearest) when its 29 bits below FP32's last place are 2**28.  The general
# check widens y by |y| * 2**-44 on each side: under 2**9 float64 ulps of
# y's binade, plus one ulp for the rounding of each end; a distance over
# 2**10 ulps from the midpoint leaves room for both.  (Bits below 2**28 -
# 2**10 wrap around to the top of the 29-bit range, so one unsigned compare
# tests both sides.)
_LOW_BITS = np.uint64((1 << 29) - 1)
_NEAR_MIDPOINT = np.uint64((1 << 28) - (1 << 10))
_SLACK = np.uint64(1 << 11)
# Magnitudes (float64 bits, sign cleared) in [2**-125, 2**127): both ends
# then round to a normal FP32 value below FP32's max (no underflow, no
# overflow, whatever the tininess rule).
_MAGNITUDE = np.uint64((1 << 63) - 1)
_SAFE_MIN, _SAFE_MAX = 2.0 ** -125, 2.0 ** 127
_SAFE_LO = np.float64(_SAFE_MIN).view(np.uint64)
_SAFE_SPAN = np.float64(_SAFE_MAX).view(np.uint64) - _SAFE_LO
_ONE_FP32 = np.uint32(0x3F800000)


def _inexact_lanes(name: str, v: np.ndarray) -> np.ndarray | None:
    """Where a y passing the tests of :func:`_chunk_fp32_nearest` may still be
    an exact result (None: nowhere).  tanh and erf at ±inf are ±1, rsqrt of
    a power of 4 is a power of 2; exp(±0) = 1 is the caller's (with tanh and
    erf at ±0); the other exact and invalid cases give values outside the
    safe range (0, infinities, NaN)."""
    if name in ("tanh", "erf"):
        return np.isfinite(v)
    if name == "rsqrt":
        return ~_exact_cases(name, v)
    return None


# Arguments whose exp lies well inside the safe range whatever the float64
# exp's last bits (exp(-86) is 4.5e-38 > 2**-125, exp(87) is 6.1e37 < 2**127):
# a chunk between them needs no test of the range lane by lane.
_EXP_SAFE_ARGUMENTS = (np.float32(-86.0), np.float32(87.0))


def _chunk_fp32_nearest(name: str, codes: np.ndarray, scratch: Context,
                        lane_flags: bool = True) -> tuple[np.ndarray, Any]:
    """:func:`_chunk` for FP32 in round-to-nearest-even (no DAZ, no FTZ,
    the machine's cast rounding to nearest: checked by the caller).

    Where the float64 value ``y`` is more than 2**10 float64 ulps from an
    FP32 midpoint and within the safe range, the interval the general check
    tests lies inside one rounding cell: both its ends round to
    ``float32(y)``, flags inexact alone, which is therefore the general
    check's result.  The function at zero is exact (exp(±0) = 1, tanh and
    erf keep the zero).  Every other element takes :func:`_chunk`.  The
    intermediates are work arrays (:mod:`fpsim._scratch`): no allocation
    but the result's.  The flags are each element's, or with
    ``lane_flags=False`` all of them ORed into an int."""
    n = codes.size
    v, y, t = work_arrays("fp32 nearest", n, np.float64, np.float64, U64)
    decided, zero, rest = work_arrays("fp32 nearest masks", n, bool, bool, bool)
    x = codes.view(np.float32)
    with np.errstate(all="ignore"):  # (NaN lanes are the general path's)
        np.copyto(v, x)
        function = _FLOAT64[name]
        if isinstance(function, np.ufunc):
            function(v, out=y)
        else:
            y[...] = function(v)
        out = y.astype(np.float32).view(np.uint32)
    bits = y.view(U64)
    np.subtract(bits, _NEAR_MIDPOINT, out=t)
    t &= _LOW_BITS
    np.greater(t, _SLACK, out=decided)
    # The safe range, tested on the whole chunk at once where its extremes
    # (NaN if any lane is one) lie inside it; lane by lane otherwise.  exp
    # is increasing: its arguments' extremes say it first, from half the bytes.
    inside = name == "exp" and _EXP_SAFE_ARGUMENTS[0] <= np.min(x) and \
        np.max(x) <= _EXP_SAFE_ARGUMENTS[1]
    if not inside:
        lo, hi = np.min(y), np.max(y)
        inside = _SAFE_MIN <= lo and hi < _SAFE_MAX or -_SAFE_MAX < lo and hi <= -_SAFE_MIN
    if not inside:
        np.bitwise_and(bits, _MAGNITUDE, out=t)
        t -= _SAFE_LO
        decided &= t < _SAFE_SPAN
    guard = _inexact_lanes(name, v)
    if guard is not None:
        decided &= guard
    np.equal(x, 0.0, out=zero)
    if name != "log" and name != "rsqrt" and zero.any():
        out[zero] = _ONE_FP32 if name == "exp" else codes[zero]  # exact, no flag
        np.greater(decided, zero, out=decided)  # (decided and not zero)
        np.logical_or(decided, zero, out=rest)
        np.logical_not(rest, out=rest)
    else:
        np.logical_not(decided, out=rest)
    flags: Any = (decided.view(U8) * U8(INEXACT) if lane_flags
                  else INEXACT if decided.any() else 0)
    if rest.any():
        i = np.flatnonzero(rest)
        out[i], rest_flags = _chunk(name, FP32, False, codes[i], None, scratch)
        if lane_flags:
            flags[i] = rest_flags
        else:
            flags |= int(np.bitwise_or.reduce(rest_flags))
    return out, flags


# Formats wider than this take the golden path for every element (see the
# module's docstring).
FLOAT64_PATH_WIDTH = 32


def _chunk_golden(name: str, fmt: Format, codes: np.ndarray, rand: np.ndarray | None,
                  scratch: Context) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_chunk` for a format the float64 evaluation cannot decide:
    :func:`golden` on every element."""
    out = np.empty(codes.shape, array.code_dtype(fmt))
    flags = np.empty(codes.shape, np.uint8)
    draws = None if rand is None else rand.tolist()
    for i, code in enumerate(codes.tolist()):
        out[i], flags[i] = _golden_code(name, fmt, code, scratch,
                                        None if draws is None else draws[i])
    return out, flags


def _golden_code(name: str, fmt: Format, code: int, scratch: Context, rand: int | None
                 ) -> tuple[int, int]:
    ctx = scratch.copy()
    ctx.clear_flags()
    kw = {} if rand is None else {"random_bits": rand}
    result = golden(name, fmt.from_bits(code), ctx, **kw)
    return result.bits, ctx._flags[0]


def _elementwise(name: str, x: Any, ctx: Context | None, fmt: Format | str | None,
                 random_bits: Any, rng: Any, return_flags: bool, chunk_size: int,
                 overrides: dict[str, Any]) -> Any:
    check_flag("return_flags", return_flags)
    operand = Operand(name, x, fmt)
    f = operand.fmt
    ctx, key = resolve(ctx, overrides)
    scratch = ctx.copy(**overrides)
    shape = operand.codes.shape
    flat = operand.codes.reshape(-1)
    bits = stochastic_bits(key, random_bits, rng, ctx, shape)
    golden_only = f.width > FLOAT64_PATH_WIDTH
    distinct = Distinct.of(flat, f, key)
    inverse = None
    if distinct is not None:  # each distinct code once, then every element its code's
        flat = distinct.codes
    elif golden_only and bits is None and flat.size > 1:
        # (the same, for a wide format: a sort finds the distinct codes)
        flat, inverse = np.unique(flat, return_inverse=True)

    lane_flags = return_flags or distinct is not None or inverse is not None
    if golden_only:
        def chunk(start: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
            rand = bits(start, stop) if bits is not None else None
            return _chunk_golden(name, f, flat[start:stop], rand, scratch)
    elif (f == FP32 and key[0] is Rounding.RNE and not key[2] and not key[3]
            and _native.rounds_to_nearest()):
        def chunk(start: int, stop: int) -> tuple[np.ndarray, Any]:
            return _chunk_fp32_nearest(name, flat[start:stop], scratch, lane_flags)
    else:
        def chunk(start: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
            rand = bits(start, stop) if bits is not None else None
            return _chunk(name, f, key[3], flat[start:stop], rand, scratch)

    result = run_chunks(flat.size, flat.shape, array.code_dtype(f), chunk_size, chunk, ctx,
                        lane_flags)
    if distinct is not None:
        result = tuple(distinct.spread(r) for r in result)
    elif inverse is not None:
        result = tuple(r[inverse.reshape(-1)] for r in result)
    codes, flags = result if lane_flags else (result, None)
    codes = deliver(codes.reshape(shape), f, operand.typed)
    return (codes, flags.reshape(shape)) if return_flags else codes


_DOC = """

    ``x``: values of a float dtype (float16, float32, float64, bfloat16,
    float8_*), giving values of that dtype, or integer codes with ``fmt=``,
    giving codes.  Settings as in :mod:`fpsim.array` (``ctx=``,
    ``rounding=`` including ``"sr"`` with ``random_bits=`` or ``rng=``,
    ``ftz=``, ``daz=``, ``saturate=``, ...); flags are ORed into the
    context, and ``return_flags=True`` also returns them per element.
    Correctly rounded in every format and mode (see :mod:`fpsim.ops`); FP64
    element by element by :func:`golden` (tens of microseconds each).
"""


def _function(name: str, summary: str, example: str) -> Any:
    def f(x: Any, ctx: Context | None = None, *, fmt: Format | str | None = None,
          random_bits: Any = None, rng: Any = None, return_flags: bool = False,
          chunk_size: int = DEFAULT_CHUNK, **overrides: Any) -> Any:
        return _elementwise(name, x, ctx, fmt, random_bits, rng, return_flags, chunk_size,
                            overrides)

    f.__name__ = f.__qualname__ = name
    f.__module__ = "fpsim.ops"
    f.__doc__ = summary + _DOC + "\n" + example
    return quiet(f)


exp = _function("exp", "``e**x`` elementwise, correctly rounded.", """
    >>> import numpy as np
    >>> exp(np.array([0.0, 1.0, 11.0, 12.0, -20.0], np.float16)).tolist()
    [1.0, 2.71875, 59872.0, inf, 0.0]
    >>> exp(np.array([1.0, -745.0, 710.0])).tolist()   # FP64: the smallest subnormal, inf
    [2.718281828459045, 5e-324, inf]
""")
log = _function("log", "The natural logarithm elementwise, correctly rounded.", """
    >>> import numpy as np
    >>> log(np.array([1.0, 2.0, 0.0, -1.0], np.float16)).tolist()
    [0.0, 0.693359375, -inf, nan]
""")
tanh = _function("tanh", "The hyperbolic tangent elementwise, correctly rounded.", """
    >>> import numpy as np
    >>> tanh(np.array([0.5, 4.0, -9.0], np.float16)).tolist()
    [0.462158203125, 0.99951171875, -1.0]
""")
erf = _function("erf", "The error function elementwise, correctly rounded.", """
    >>> import numpy as np
    >>> erf(np.array([0.5, 3.0], np.float16)).tolist(), erf(np.float16([3.0]), rounding="rdn")
    ([0.5205078125, 1.0], array([0.9995], dtype=float16))
""")
rsqrt = _function("rsqrt", "``1 / sqrt(x)`` elementwise with one rounding (computed exactly "
                  "in integers).", """
    >>> import numpy as np
    >>> rsqrt(np.array([4.0, 2.0, 0.0, -1.0], np.float16)).tolist()
    [0.5, 0.70703125, inf, nan]
""")


@quiet
def reciprocal(x: Any, ctx: Context | None = None, *, fmt: Format | str | None = None,
               random_bits: Any = None, rng: Any = None, return_flags: bool = False,
               chunk_size: int = DEFAULT_CHUNK, **overrides: Any) -> Any:
    """``1 / x`` elementwise: the IEEE division :func:`fpsim.array.div` with
    a dividend of 1 (so ``1/0`` is inf with divide-by-zero).

    >>> import numpy as np
    >>> reciprocal(np.array([3.0, 0.0, 2.0**-16], np.float16)).tolist()
    [0.333251953125, inf, inf]
    """
    operand = Operand("reciprocal", x, fmt)
    result = array.div(constant(1.0, operand.fmt), operand.codes, ctx, fmt=operand.fmt,
                       random_bits=random_bits, rng=rng, return_flags=return_flags,
                       chunk_size=chunk_size, **overrides)
    if return_flags:
        return deliver(result[0], operand.fmt, operand.typed), result[1]
    return deliver(result, operand.fmt, operand.typed)

