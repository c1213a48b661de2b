"""IEEE 754 arithmetic on :class:`~fpsim.Float` values of one format.

Every operation computes its result exactly with Python integers and hands it
to the one rounding kernel (:func:`fpsim.rounding.round_exact`), so each
result is rounded once, under the context's settings, with the IEEE flags.
NaN results follow the context's NaN policy (:mod:`fpsim.nans`).

Operands must share a format: mixing formats is a :class:`TypeError` (convert
first with :func:`fpsim.convert`).  Comparisons are exact and may mix formats.

Every function takes ``ctx=`` (default: the current context) and per-call
keyword overrides of the context's settings (``rounding=``, ``saturate=``,
``ftz=``, ``daz=``, ``tininess=``, ``sr_bits=``, ``nan=``), plus
``random_bits=`` for stochastic rounding.  Flags go to the context.

Special cases (IEEE 754-2019 §7 unless noted):

* INVALID, with the policy's default NaN: a signaling NaN operand (the result
  then propagates that NaN, quieted); inf - inf; 0 × inf; 0/0; inf/inf;
  sqrt(x < 0); fma(0, inf, c) and fma(inf, 0, c) even when c is a quiet NaN
  (c's NaN is then the result); remainder(x, 0) and remainder(inf, y);
  any NaN in a signaling comparison.
* DIVIDE_BY_ZERO: x/0 for finite nonzero x, and logb(0).
* An exact zero sum or difference is +0, or -0 toward -inf; a sum of two
  zeros of the same sign keeps that sign.
* Where a result would be an infinity but the format has none (E4M3, FNUZ),
  it is NaN of that sign, or ±max when saturating: the OCP FP8 conversion
  rule applied to every operation.  An infinite *operand* whose infinite
  result is delivered as ±max (saturating) raises INVALID, as converting an
  infinity does; a computed infinity (x/0, logb(0)) raises only its own flag.

>>> from fpsim import FP16, E4M3
>>> a, b = FP16.round(1.5), FP16.round(2**-12)
>>> add(a, b)                          # 1.5 + 2**-12 rounds to even: 1.5
Float(fp16, 0x3e00, 1.5)
>>> x, y, m1 = FP16.round(1 + 2**-10), FP16.round(1 - 2**-11), FP16.round(-1)
>>> fma(x, y, m1)                      # exact: 2**-11 - 2**-21, one rounding
Float(fp16, 0x0ffe, 0.000487804412841796875)
>>> add(mul(x, y), m1)                 # the product alone rounds to 1 first
Float(fp16, 0x0000, 0)
>>> div(E4M3.round(1), E4M3.round(0))  # no infinity in E4M3
Float(e4m3, 0x7f, nan)
"""

from __future__ import annotations

import inspect
import math
import sys
import types
from collections.abc import Callable
from typing import Any

from .context import Context, _current, getcontext, resolve
from .formats import E4M3, FP16, Format, Specials  # noqa: F401 (doctests use E4M3, FP16)
from .modes import STOCHASTIC, Rounding
from .nans import default_nan, propagate
from .rounding import (
    DIVIDE_BY_ZERO,
    INEXACT,
    INVALID,
    infinity_code,
    p3109_applies,
    quantize,
    round_key,
)
from .value import FINITE, INF, QNAN, Float, _check_random_bits, _make, decoded

__all__ = [
    "add", "sub", "mul", "div", "fma", "sqrt", "remainder", "round_to_integral",
    "neg", "abs", "copysign", "next_up", "next_down", "scaleb", "logb",
    "eq", "ne", "lt", "le", "gt", "ge", "unordered",
    "minimum", "maximum", "minimum_number", "maximum_number",
]

_RDN = Rounding.RDN


# -- operands ----------------------------------------------------------------
#
# An operand's decoding (class, negative, sig, exp), with |value| = sig × 2**exp,
# lives in the Float itself (fpsim.value.decoded): the common path of an
# operation reads the four slots, the other paths call decoded().

def _daz(d: tuple[int, bool, int, int], fmt: Format) -> tuple[int, bool, int, int]:
    # Only subnormals have a nonzero significand below the implicit bit.
    if d[0] == FINITE and 0 < d[2] < (1 << fmt.mantissa_bits):
        return FINITE, d[1], 0, 0
    return d


def _unpack(x: Float, daz: bool) -> tuple[int, bool, int, int]:
    """Decode an operand; with ``daz`` a subnormal reads as a zero of its sign."""
    d = decoded(x)
    return _daz(d, x.fmt) if daz else d


def _same_format(op: str, *xs: Any) -> Format:
    try:
        fmt = xs[0].fmt
        for x in xs[1:]:
            if x.fmt is not fmt and x.fmt != fmt:
                raise TypeError(f"{op}() operands are in different formats ({fmt.name} and "
                                f"{x.fmt.name}); convert first, e.g. fpsim.convert(x, "
                                f"{fmt.name!r})")
        for x in xs:
            if x.__class__ is not Float and not isinstance(x, Float):
                raise AttributeError
    except AttributeError:
        bad = next(x for x in xs if not isinstance(x, Float))
        raise TypeError(f"{op}() takes fpsim.Float operands, got {type(bad).__name__}; "
                        "make one with a format's round(), e.g. fpsim.FP16.round(2.5)") from None
    return fmt


# The settings of one call: (context that receives flags, settings key, random
# integer for stochastic rounding).  A tuple rather than an object: building
# it is on every operation's path.
_Env = tuple


def _env(ctx: Context | None, overrides: dict[str, Any]) -> _Env:
    if not overrides:
        if ctx is None:
            ctx = _current.get(None) or getcontext()
        elif ctx.__class__ is not Context:
            ctx, _ = resolve(ctx, overrides)  # raises the TypeError
        key = ctx._key
        return ctx, key, (ctx.random_bits(key[5]) if key[0] in STOCHASTIC else 0)
    random_bits = overrides.pop("random_bits", None)
    ctx, key = resolve(ctx, overrides)
    if key[0] in STOCHASTIC:
        rand = (ctx.random_bits(key[5]) if random_bits is None
                else _check_random_bits(random_bits, key[5]))
    else:
        if random_bits is not None:
            raise ValueError("random_bits= is only used by stochastic rounding "
                             "(rounding='sr', 'sr_b' or 'sr_c')")
        rand = 0
    return ctx, key, rand


def _operands(op: str, ctx: Context | None, overrides: dict[str, Any], xs: tuple[Float, ...]
              ) -> tuple[Format, _Env, list[tuple[int, bool, int, int]]]:
    """The prologue of an operation: check the operands, resolve the
    settings, decode the operands (DAZ applied)."""
    fmt = _same_format(op, *xs)
    env = _env(ctx, overrides)
    if env[1][3]:
        return fmt, env, [_daz(decoded(x), fmt) for x in xs]
    return fmt, env, [decoded(x) for x in xs]


def _unary(op: str, a: Float, ctx: Context | None, overrides: dict[str, Any]
           ) -> tuple[Format, _Env, tuple[int, bool, int, int]]:
    """The prologue of a one-operand operation, with a fast path for the
    common call: a context's own settings, no DAZ, no stochastic rounding."""
    if ctx is None:
        ctx = _current.get(None) or getcontext()
    if (overrides or a.__class__ is not Float or ctx.__class__ is not Context
            or (key := ctx._fast_key) is None):
        fmt, env, (d,) = _operands(op, ctx, overrides, (a,))
        return fmt, env, d
    return a.fmt, (ctx, key, 0), decoded(a)


def _finish(env: _Env, fmt: Format, negative: bool, num: int, den: int, exp: int,
            extra_flags: int = 0) -> Float:
    """Round the exact result once and deliver it."""
    ctx, key, rand = env
    code, flags = round_key(fmt, negative, num, den, exp, key, rand)
    flags |= extra_flags
    if flags:
        ctx._flags[0] |= flags
    interned = fmt._floats
    return (interned[code] or _make(fmt, code)) if interned is not None else _make(fmt, code)


def _done(env: _Env, fmt: Format, code: int, flags: int) -> Float:
    if flags:
        ctx = env[0]
        ctx._flags[0] |= flags
    return _make(fmt, code)


def _nan_result(env: _Env, fmt: Format, *xs: Float, extra_flags: int = 0) -> Float:
    code, flags = propagate(fmt, [x.bits for x in xs], env[1][6])
    return _done(env, fmt, code, flags | extra_flags)


def _invalid(env: _Env, fmt: Format) -> Float:
    return _done(env, fmt, default_nan(fmt, env[1][6]), INVALID)


def _infinity(env: _Env, fmt: Format, negative: bool, computed: int = 0) -> Float:
    """An exact infinite result (not an overflow): inf, or what the
    saturation setting makes of it (:func:`fpsim.rounding.infinity_code`).

    ``computed`` is 0 when the infinity comes from an infinite operand; then,
    as for a conversion, delivering anything but an infinity is an invalid
    operation.  Otherwise it is the flag of the operation that made the
    infinity (DIVIDE_BY_ZERO for x/0 and logb(0)), the only flag raised."""
    return _done(env, fmt, *infinity_code(fmt, negative, env[1][1], computed, env[1][7]))


# -- the arithmetic operations -------------------------------------------------

# The operations of _arith (sqrt is its own function; _special handles its
# special cases too).  _ADD is 0 and the sums come before _MUL: the dispatch
# relies on both.
_ADD, _SUB, _FMA, _MUL, _DIV, _SQRT = range(6)
_NAMES = ("add", "sub", "fma", "mul", "div", "sqrt")

# Extra bits of the integer square root below the format's precision.  The
# root lies strictly inside (r, r + 1) when inexact, and r + 1/2 stands for it:
# that decides every mode when the rounding position (the format's last
# place, or the finer one of the tininess-after check) lies at least 2 bits
# above r's last bit, and stochastic rounding also reads sr_bits fraction
# bits below the last place, which r + 1/2 must give exactly.
_SQRT_GUARD = 4


def fma(a: Float, b: Float, c: Float, ctx: Context | None = None, **overrides: Any) -> Float:
    """``a × b + c`` with a single rounding (IEEE fusedMultiplyAdd).

    >>> fma(FP16.round(0), FP16.round("inf"), FP16.round("nan")).is_nan  # INVALID too
    True
    """
    return _arith(a, b, ctx, _op=_FMA, _c=c, **overrides)


def sqrt(a: Float, ctx: Context | None = None, **overrides: Any) -> Float:
    """Square root rounded once.

    >>> sqrt(FP16.round(2))
    Float(fp16, 0x3da8, 1.4140625)
    >>> sqrt(FP16.round(-0.0)), sqrt(FP16.round(-1)).is_nan
    (Float(fp16, 0x8000, -0), True)
    """
    fmt, env, (ca, negative, sa, ea) = _unary("sqrt", a, ctx, overrides)
    if ca or (negative and sa):
        return _special(_SQRT, fmt, env, a, a, None)
    key = env[1]
    if ea & 1:
        sa <<= 1
        ea -= 1
    # k > 0: sa has at most precision + 1 bits.
    k = (fmt.precision + _SQRT_GUARD + (key[5] + 1 if key[0] in STOCHASTIC else 0)
         - sa.bit_length() // 2)
    big = sa << (2 * k)
    num = math.isqrt(big)
    if num * num == big:
        e = ea // 2 - k
    else:
        # The root lies strictly between num and num + 1, far below the
        # rounding position: num + 1/2 rounds exactly as the root does, in
        # every mode.
        num = 2 * num + 1
        e = ea // 2 - k - 1
    # Only a zero may be negative here: sqrt(-0) = -0.
    return _finish(env, fmt, negative, num, 1, e)


def _arith(a: Float, b: Float, ctx: Context | None = None, *, _op: int = 0,
           _c: Float | None = None, **overrides: Any) -> Float:
    """The body of add, sub, mul, div and fma: the prologue, the exact
    result ``±num/den × 2**e``, its one rounding and its delivery, in one
    frame (each call layer costs some 5% of an operation).

    A sum is exact in integers at the smaller exponent; an exact zero sum of
    terms of opposite signs is +0, or -0 toward -inf; of like signs, that
    sign (IEEE 754 §6.3).  NaN, infinite and zero-divisor cases go to
    :func:`_special`.  ``add``, ``sub``, ``mul`` and ``div`` are this
    function's own code with ``_op`` fixed (:func:`_binary_operation`)."""
    if ctx is None:
        ctx = _current.get(None) or getcontext()
    if (not overrides and a.__class__ is Float and b.__class__ is Float
            and (fmt := a.fmt) is b.fmt and ctx.__class__ is Context
            and (key := ctx._fast_key) is not None
            and not ((a._class or b._class) and (decoded(a)[0] or decoded(b)[0]))):
        # The common call, checked at once: finite operands of one format
        # (a nonzero class is a NaN, an infinity, or a Float that is not
        # interned and not decoded yet, which decoded() decodes), the
        # context's own settings, no DAZ, no random draw.  fma's c is
        # checked where it is read.
        rand = 0
        ds = None
        na = a._negative
        sa = a._sig
        ea = a._exp
        nb = b._negative
        sb = b._sig
        eb = b._exp
    else:
        fmt, (ctx, key, rand), ds = _operands(_NAMES[_op], ctx, overrides,
                                              (a, b, _c) if _op == _FMA else (a, b))
        ca, na, sa, ea = ds[0]
        cb, nb, sb, eb = ds[1]
        if ca or cb:
            return _special(_op, fmt, (ctx, key, rand), a, b, _c)
    # The dispatch tests the slowest operation first: div, then the sums, then mul.
    if _op == _DIV:
        if not sb:
            return _special(_op, fmt, (ctx, key, rand), a, b, _c)
        k, normal = fmt._div
        # (The common call's key is never stochastic rounding.)
        if sa >= normal and (ds is None or key[0] not in STOCHASTIC):
            # The integer quotient of the shifted significands (at least p + 2
            # bits, see Format._div) with a nonzero remainder jammed into its
            # last bit, which lies below the rounding bit: that binary value
            # rounds as the exact quotient does, in every deterministic mode.
            x = sa << k
            q = x // sb
            num = q | (q * sb != x)
            den = 1
            e = ea - eb - k
        else:  # the kernel divides (and keeps the sr_bits it reads)
            num = sa
            den = sb
            e = ea - eb
        negative = na != nb
    elif _op < _MUL:  # a sum
        if _op:  # not _ADD, which is 0
            if _op == _SUB:
                nb = not nb
            else:
                if ds is None:
                    if _c.__class__ is not Float or _c.fmt is not fmt:  # type: ignore[union-attr]
                        _same_format("fma", a, b, _c)  # raises, unless c is a Float subclass
                    if _c._class and decoded(_c)[0]:  # type: ignore[union-attr,arg-type]
                        return _special(_op, fmt, (ctx, key, rand), a, b, _c)
                    nc = _c._negative  # type: ignore[union-attr]
                    sc = _c._sig  # type: ignore[union-attr]
                    ec = _c._exp  # type: ignore[union-attr]
                else:
                    cc, nc, sc, ec = ds[2]
                    if cc:
                        return _special(_op, fmt, (ctx, key, rand), a, b, _c)
                # The product is exact: what follows is add(a × b, c).  (One
                # assignment per name: a tuple assignment of more than three
                # names builds a tuple, some 2% of an operation.)
                na = na != nb
                sa *= sb
                ea += eb
                nb = nc
                sb = sc
                eb = ec
        if ea >= eb:
            num = ((-sa if na else sa) << (ea - eb)) + (-sb if nb else sb)
            e = eb
        else:
            num = (-sa if na else sa) + ((-sb if nb else sb) << (eb - ea))
            e = ea
        den = 1
        negative = num < 0
        if negative:
            num = -num
        elif not num:
            negative = na if na == nb else key[0] is _RDN
    else:  # _MUL
        negative = na != nb
        num = sa * sb
        den = 1
        e = ea + eb
    code, flags = round_key(fmt, negative, num, den, e, key, rand)
    if flags:
        ctx._flags[0] |= flags
    interned = fmt._floats
    return (interned[code] or _make(fmt, code)) if interned is not None else _make(fmt, code)


def _binary_signature(a: Float, b: Float, ctx: Context | None = None,
                      **overrides: Any) -> Float:
    """The signature the binary operations show (help(), the API docs)."""
    raise NotImplementedError


def _binary_operation(name: str, op: int, doc: str) -> Callable[..., Float]:
    """A public binary operation: :func:`_arith`'s own code object with
    ``_op`` fixed as a keyword default, so that a call runs one Python frame
    (a wrapper function calling _arith costs some 10% of an add)."""
    fn = types.FunctionType(_arith.__code__, globals(), name, _arith.__defaults__)
    fn.__kwdefaults__ = {"_op": op, "_c": None}
    fn.__qualname__ = name
    fn.__doc__ = doc
    fn.__annotations__ = dict(_binary_signature.__annotations__)
    fn.__signature__ = inspect.signature(_binary_signature)  # type: ignore[attr-defined]
    return fn


add = _binary_operation("add", _ADD, """``a + b`` rounded once.

    >>> add(FP16.round(1), FP16.round(-1), rounding="rdn")   # exact zero toward -inf
    Float(fp16, 0x8000, -0)
    """)

sub = _binary_operation("sub", _SUB, """``a - b`` rounded once (a NaN ``b`` propagates with
    its own sign).

    >>> sub(FP16.round(1), FP16.round(1))
    Float(fp16, 0x0000, 0)
    """)

mul = _binary_operation("mul", _MUL, """``a × b`` rounded once.

    >>> mul(E4M3.round(16), E4M3.round(30))    # 480 rounds past 448: NaN (no inf)
    Float(e4m3, 0x7f, nan)
    """)

div = _binary_operation("div", _DIV, """``a / b`` rounded once.

    >>> div(FP16.round(1), FP16.round(3))
    Float(fp16, 0x3555, 0.333251953125)
    """)


def _special(op: int, fmt: Format, env: _Env, a: Float, b: Float, c: Float | None) -> Float:
    """The result of :func:`_arith` with a NaN or infinite operand, a zero
    divisor or a negative square root (the operands decoded again: these are
    the rare cases)."""
    ca, na, sa, ea = _unpack(a, env[1][3])
    cb, nb, sb, eb = _unpack(b, env[1][3])
    negative = na != nb
    if op == _SQRT:
        if ca >= QNAN:
            return _nan_result(env, fmt, a)
        if na and not (ca == FINITE and sa == 0):
            return _invalid(env, fmt)  # sqrt of a negative number or of -inf
        return _infinity(env, fmt, False)
    if op == _FMA:
        cc, nc, sc, ec = _unpack(c, env[1][3])  # type: ignore[arg-type]
        zero_times_inf = ((ca == INF and cb == FINITE and sb == 0)
                          or (cb == INF and ca == FINITE and sa == 0))
        if ca >= QNAN or cb >= QNAN or cc >= QNAN:
            return _nan_result(env, fmt, a, b, c, extra_flags=INVALID if zero_times_inf else 0)
        if zero_times_inf:
            return _invalid(env, fmt)
        if ca or cb:  # the product is infinite
            if cc == INF and nc != negative:
                return _invalid(env, fmt)  # inf - inf
            return _infinity(env, fmt, negative)
        return _infinity(env, fmt, nc)
    if ca >= QNAN or cb >= QNAN:
        return _nan_result(env, fmt, a, b)
    if op < _FMA:
        nb ^= op == _SUB
        if ca and cb:
            return _invalid(env, fmt) if na != nb else _infinity(env, fmt, na)
        return _infinity(env, fmt, na if ca else nb)
    if op == _MUL:
        if (ca == FINITE and sa == 0) or (cb == FINITE and sb == 0):
            return _invalid(env, fmt)  # 0 × inf
        return _infinity(env, fmt, negative)
    if ca and cb:
        return _invalid(env, fmt)  # inf / inf
    if cb == FINITE and sb == 0 and p3109_applies(fmt, env[1][7]):
        return _invalid(env, fmt)  # P3109: x / 0 is NaN, x = ±inf included (rule 7)
    if ca:
        return _infinity(env, fmt, negative)
    if cb:
        return _finish(env, fmt, negative, 0, 1, 0)  # finite / inf
    if sa == 0:
        return _invalid(env, fmt)  # 0 / 0
    return _infinity(env, fmt, negative, computed=DIVIDE_BY_ZERO)


def remainder(a: Float, b: Float, ctx: Context | None = None, **overrides: Any) -> Float:
    """IEEE remainder ``a - n × b`` with ``n`` the integer nearest ``a/b``
    (ties to even).  The result is exact; a zero result has the sign of ``a``.

    >>> remainder(FP16.round(5), FP16.round(2)), remainder(FP16.round(7), FP16.round(2))
    (Float(fp16, 0x3c00, 1), Float(fp16, 0xbc00, -1))
    """
    fmt, env, ((ca, na, sa, ea), (cb, nb, sb, eb)) = _operands("remainder", ctx, overrides,
                                                               (a, b))
    if ca >= QNAN or cb >= QNAN:
        return _nan_result(env, fmt, a, b)
    if ca == INF or (cb == FINITE and sb == 0):
        return _invalid(env, fmt)
    if cb == INF:
        return _finish(env, fmt, na, sa, 1, ea)
    e = min(ea, eb)
    x, y = sa << (ea - e), sb << (eb - e)
    n, r = divmod(x, y)
    if 2 * r > y or (2 * r == y and n & 1):
        r -= y
    if r == 0:
        return _finish(env, fmt, na, 0, 1, 0)
    negative = na != (r < 0)
    return _finish(env, fmt, negative, -r if r < 0 else r, 1, e)


def round_to_integral(a: Float, exact: bool = False, ctx: Context | None = None,
                      **overrides: Any) -> Float:
    """Round to an integral value in the same format by the context's mode.
    ``exact=True`` is roundToIntegralExact (raises INEXACT when the value
    changes); otherwise no flag is raised for finite operands.

    >>> round_to_integral(FP16.round(2.5)), round_to_integral(FP16.round(-0.4))
    (Float(fp16, 0x4000, 2), Float(fp16, 0x8000, -0))
    >>> round_to_integral(FP16.round(2.5), rounding="rna")
    Float(fp16, 0x4200, 3)
    """
    if exact is not True and exact is not False and not _is_numpy_bool(exact):
        raise TypeError(f"round_to_integral(): exact must be True or False, got {exact!r}")
    fmt, env, (ca, na, sa, ea) = _unary("round_to_integral", a, ctx, overrides)
    if ca >= QNAN:
        return _nan_result(env, fmt, a)
    if ca == INF:
        return _infinity(env, fmt, na)
    if ea >= 0 or sa == 0:
        return _finish(env, fmt, na, sa, 1, ea)
    ctx, key, rand = env
    kept, inexact = quantize(sa, 1, ea, 0, na, key[0], rand, key[5])
    # The integral value is exact in the format: the kernel only encodes it.
    return _finish(env, fmt, na, kept, 1, 0, INEXACT if exact and inexact else 0)


def _is_numpy_bool(x: Any) -> bool:
    np = sys.modules.get("numpy")  # (not imported: x is no numpy bool)
    return np is not None and isinstance(x, np.bool_)


def scaleb(a: Float, n: int, ctx: Context | None = None, **overrides: Any) -> Float:
    """``a × 2**n`` rounded once.

    >>> scaleb(FP16.round(1), -24), scaleb(FP16.round(1), -25)
    (Float(fp16, 0x0001, 5.9604644775390625e-08), Float(fp16, 0x0000, 0))
    """
    if isinstance(n, bool) or not hasattr(n, "__index__"):
        raise TypeError(f"scaleb() exponent must be an int, got {type(n).__name__}")
    fmt, env, (ca, na, sa, ea) = _unary("scaleb", a, ctx, overrides)
    if ca >= QNAN:
        return _nan_result(env, fmt, a)
    if ca == INF:
        return _infinity(env, fmt, na)
    n = n.__index__()
    # Past 2**22 the result no longer depends on n (every format lies inside
    # 2**±(2**21)); clamping keeps the exact integers small.
    n = max(-_SCALE_LIMIT, min(_SCALE_LIMIT, n))
    return _finish(env, fmt, na, sa, 1, ea + n)


_SCALE_LIMIT = 1 << 22


def logb(a: Float, ctx: Context | None = None, **overrides: Any) -> Float:
    """The exponent ``floor(log2(|a|))`` as a value of the same format
    (subnormals give their true exponent); ``logb(0)`` is -inf with
    DIVIDE_BY_ZERO, ``logb(±inf)`` is +inf.

    IEEE 754 asks a floating logB format to hold every exponent exactly; the
    narrow formats cannot (E5M2 holds integers only up to 8), so there the
    exponent is rounded like any result, raising INEXACT.

    >>> logb(FP16.round(1e-5)), logb(FP16.round(65504))
    (Float(fp16, 0xcc40, -17), Float(fp16, 0x4b80, 15))
    """
    fmt, env, (ca, na, sa, ea) = _unary("logb", a, ctx, overrides)
    if ca >= QNAN:
        return _nan_result(env, fmt, a)
    if ca == INF:
        return _infinity(env, fmt, False)
    if sa == 0:
        return _infinity(env, fmt, True, computed=DIVIDE_BY_ZERO)
    e = ea + sa.bit_length() - 1
    return _finish(env, fmt, e < 0, -e if e < 0 else e, 1, 0)


def next_up(a: Float, ctx: Context | None = None, **overrides: Any) -> Float:
    """IEEE nextUp: like :meth:`fpsim.Float.next_up`, and a NaN operand gives the
    policy's NaN (INVALID if signaling)."""
    return _next(a, 1, ctx, overrides)


def next_down(a: Float, ctx: Context | None = None, **overrides: Any) -> Float:
    """IEEE nextDown (see :func:`next_up`)."""
    return _next(a, -1, ctx, overrides)


def _next(a: Float, direction: int, ctx: Context | None, overrides: dict[str, Any]) -> Float:
    fmt = _same_format("next_up" if direction > 0 else "next_down", a)
    env = _env(ctx, overrides)
    if a.is_nan:
        return _nan_result(env, fmt, a)
    return a.next_up() if direction > 0 else a.next_down()


# -- sign operations: quiet, no flags, not even for signaling NaNs --------------

def neg(a: Float) -> Float:
    """``-a``: the sign bit flipped (no flags, NaNs included).  In FNUZ
    formats 0 and the NaN are their own negations.

    >>> neg(FP16.round(0)), neg(FP16.round("nan"))
    (Float(fp16, 0x8000, -0), Float(fp16, 0xfe00, -nan))
    """
    fmt = a.fmt if a.__class__ is Float else _same_format("neg", a)
    return _with_sign(a, not a.bits & fmt.sign_bit) if fmt.signed else _unsigned_sign(a, True)


def abs(a: Float) -> Float:  # noqa: A001 - IEEE's name
    """``|a|``: the sign bit cleared (no flags, NaNs included).

    >>> abs(FP16.round(-2))
    Float(fp16, 0x4000, 2)
    """
    fmt = a.fmt if a.__class__ is Float else _same_format("abs", a)
    code = a.bits & fmt.magnitude_mask
    if not (fmt.signed and (code or fmt.specials is not Specials.FNUZ)):
        return a  # unsigned, or an FNUZ 0 or NaN (no -0; the one NaN has no sign)
    interned = fmt._floats
    return (interned[code] or _make(fmt, code)) if interned is not None else _make(fmt, code)


def copysign(a: Float, b: Float) -> Float:
    """``a`` with the sign bit of ``b`` (no flags).

    >>> copysign(FP16.round(2), FP16.round(-0.0))
    Float(fp16, 0xc000, -2)
    """
    fmt = _same_format("copysign", a, b)
    return _with_sign(a, b.is_negative) if fmt.signed else _unsigned_sign(a, b.is_negative)


def _with_sign(a: Float, negative: bool) -> Float:
    fmt = a.fmt
    code = a.bits & fmt.magnitude_mask
    if not code and fmt.specials is Specials.FNUZ:
        return a  # 0 or the NaN: no -0, and the single NaN has no sign to change
    return _make(fmt, code | fmt.sign_bit if negative else code)


def _unsigned_sign(a: Float, negative: bool) -> Float:
    if negative and not (a.is_nan or a.is_zero):
        raise ValueError(f"{a.fmt.name} has no sign bit: -{a} is not representable")
    return a


# -- comparisons -----------------------------------------------------------------

def _compare(a: Float, b: Float, signaling: bool, ctx: Context | None, op: str) -> int | None:
    """-1, 0, 1, or None when unordered; raises INVALID as IEEE prescribes."""
    for x in (a, b):
        if not isinstance(x, Float):
            raise TypeError(f"{op}() takes fpsim.Float operands, got {type(x).__name__}")
    if ctx is not None and not isinstance(ctx, Context):
        raise TypeError(f"ctx must be an fpsim.Context, got {type(ctx).__name__}")
    c = getcontext() if ctx is None else ctx
    if a.is_nan or b.is_nan:
        if signaling or a.is_signaling or b.is_signaling:
            c._flags[0] |= INVALID
        return None
    va, vb = _order_value(a, c.daz), _order_value(b, c.daz)
    return (va > vb) - (va < vb)


def _order_value(x: Float, daz: bool) -> Any:
    """The value a comparison orders by: with ``daz`` a subnormal operand
    reads as zero, as a unit that treats denormals as zero compares."""
    if x.is_inf:
        return -math.inf if x.is_negative else math.inf
    if daz and x.is_subnormal:
        return 0
    return x.value


def eq(a: Float, b: Float, ctx: Context | None = None, signaling: bool = False) -> bool:
    """compareQuietEqual (``signaling=True``: compareSignalingEqual).

    >>> eq(FP16.round(0), FP16.round(-0.0)), eq(FP16.round("nan"), FP16.round("nan"))
    (True, False)
    """
    return _compare(a, b, signaling, ctx, "eq") == 0


def ne(a: Float, b: Float, ctx: Context | None = None, signaling: bool = False) -> bool:
    """compareQuietNotEqual: true when unordered too."""
    return _compare(a, b, signaling, ctx, "ne") != 0


def lt(a: Float, b: Float, ctx: Context | None = None, signaling: bool = True) -> bool:
    """compareSignalingLess (``signaling=False``: compareQuietLess)."""
    return _compare(a, b, signaling, ctx, "lt") == -1


def le(a: Float, b: Float, ctx: Context | None = None, signaling: bool = True) -> bool:
    """compareSignalingLessEqual."""
    return _compare(a, b, signaling, ctx, "le") in (-1, 0)


def gt(a: Float, b: Float, ctx: Context | None = None, signaling: bool = True) -> bool:
    """compareSignalingGreater."""
    return _compare(a, b, signaling, ctx, "gt") == 1


def ge(a: Float, b: Float, ctx: Context | None = None, signaling: bool = True) -> bool:
    """compareSignalingGreaterEqual."""
    return _compare(a, b, signaling, ctx, "ge") in (0, 1)


def unordered(a: Float, b: Float, ctx: Context | None = None,
              signaling: bool = False) -> bool:
    """compareQuietUnordered: true when either operand is NaN."""
    return _compare(a, b, signaling, ctx, "unordered") is None


# -- minimum and maximum (IEEE 754-2019 §9.6) -------------------------------------

def minimum(a: Float, b: Float, ctx: Context | None = None, **overrides: Any) -> Float:
    """The smaller operand, NaN if either is NaN, -0 < +0.

    >>> minimum(FP16.round(0), FP16.round(-0.0))
    Float(fp16, 0x8000, -0)
    """
    return _minmax(a, b, -1, False, ctx, overrides, "minimum")


def maximum(a: Float, b: Float, ctx: Context | None = None, **overrides: Any) -> Float:
    """The larger operand, NaN if either is NaN, +0 > -0."""
    return _minmax(a, b, 1, False, ctx, overrides, "maximum")


def minimum_number(a: Float, b: Float, ctx: Context | None = None,
                   **overrides: Any) -> Float:
    """The smaller operand, a number in preference to a NaN (a signaling NaN
    still raises INVALID).

    >>> minimum_number(FP16.round("nan"), FP16.round(3))
    Float(fp16, 0x4200, 3)
    """
    return _minmax(a, b, -1, True, ctx, overrides, "minimum_number")


def maximum_number(a: Float, b: Float, ctx: Context | None = None,
                   **overrides: Any) -> Float:
    """The larger operand, a number in preference to a NaN."""
    return _minmax(a, b, 1, True, ctx, overrides, "maximum_number")


def _minmax(a: Float, b: Float, sense: int, number: bool, ctx: Context | None,
            overrides: dict[str, Any], op: str) -> Float:
    fmt = _same_format(op, a, b)
    env = _env(ctx, overrides)
    if a.is_nan or b.is_nan:
        if number and not (a.is_nan and b.is_nan):
            flags = INVALID if (a.is_signaling or b.is_signaling) else 0
            return _canonical(env, b if a.is_nan else a, flags)
        return _nan_result(env, fmt, a, b)
    c = _compare(a, b, False, env[0], op)
    if c == 0 and a.is_zero and b.is_zero and a.is_negative != b.is_negative:
        c = -1 if a.is_negative else 1  # -0 orders below +0 here
    pick_a = c == 0 or (c == sense)
    return _canonical(env, a if pick_a else b, 0)


def _canonical(env: _Env, x: Float, flags: int) -> Float:
    """Return an operand as the result.  DAZ reads a subnormal operand as a
    zero of its sign; FTZ does not apply, since nothing is rounded (as x86's
    MINSS/MAXSS under FTZ)."""
    if env[1][3] and x.is_subnormal:
        return _done(env, x.fmt, x.fmt.sign_bit if x.is_negative else 0, flags)
    return _done(env, x.fmt, x.bits, flags)

