"""Scalar values: :class:`Float` (a format and a bit pattern) and rounding
of any input into a format.

>>> from fpsim import FP16, E4M3
>>> x = FP16.round(1e-5)
>>> x.bits == 0x00A8, x.is_subnormal, x.value
(True, True, Fraction(21, 2097152))
>>> x.next_up()
Float(fp16, 0x00a9, 1.0073184967041015625e-05)
>>> E4M3.round(1000, saturate=True)
Float(e4m3, 0x7e, 448)
"""

from __future__ import annotations

import enum
import functools
import math
from decimal import Decimal
from fractions import Fraction
from typing import Any

from . import parse
from ._digits import int_to_digits
from .context import Context, getcontext, resolve
from .formats import E4M3, FP16, Format, Specials  # noqa: F401 (doctests use E4M3, FP16)
from .formats import format as _lookup
from .modes import P3109, STOCHASTIC
from .nans import IEEE, NanPolicy, convert_nan, default_nan
from .rounding import (
    INVALID,
    check_random_bits,
    infinity_code,
    nan_or_error,
    round_exact,
    round_key,
)

__all__ = ["Float", "FloatClass", "convert", "exact_decimal", "round_to"]


class FloatClass(enum.Enum):
    """The ten classes of IEEE 754-2019 §5.7.2 ``class(x)``."""

    SIGNALING_NAN = "signalingNaN"
    QUIET_NAN = "quietNaN"
    NEGATIVE_INFINITY = "negativeInfinity"
    NEGATIVE_NORMAL = "negativeNormal"
    NEGATIVE_SUBNORMAL = "negativeSubnormal"
    NEGATIVE_ZERO = "negativeZero"
    POSITIVE_ZERO = "positiveZero"
    POSITIVE_SUBNORMAL = "positiveSubnormal"
    POSITIVE_NORMAL = "positiveNormal"
    POSITIVE_INFINITY = "positiveInfinity"


class Float:
    """An immutable value of a format: ``(fmt, bits)``.

    Build one with :meth:`Format.from_bits` or :meth:`Format.round`.
    ``float(x)`` gives the nearest Python float (exact for every built-in
    format but FP64's own NaN payloads); :attr:`value` gives the exact
    :class:`~fractions.Fraction`.

    Comparisons follow IEEE 754: ``==`` is quiet (NaN is unequal to
    everything, ``-0 == +0``), values of any format and Python numbers are
    compared exactly.

    >>> y = FP16.from_bits(0x7BFF)
    >>> y.value, y.kind, y.fields()
    (Fraction(65504, 1), 'normal', (0, 30, 1023))
    >>> y.next_up()
    Float(fp16, 0x7c00, inf)
    >>> FP16.from_bits(0x8000) == 0
    True
    """

    # Besides the format and the code, a Float keeps its decoding for the
    # arithmetic (see decoded()): class, sign, significand, exponent.  Read
    # from the object the operation already holds, they cost no lookup: a
    # decode table indexed by code, or a tuple of the Float's own, cost a
    # cache miss per operand when operands spread over FP16's codes (some
    # 10-15% of a division in benchmarks/bench_arith.py).
    __slots__ = ("fmt", "bits", "_class", "_negative", "_sig", "_exp")
    fmt: Format
    bits: int

    def __init__(self, fmt: Format, bits: int) -> None:
        if not isinstance(fmt, Format):
            raise TypeError(f"Float() needs a Format, got {type(fmt).__name__}")
        _set_fmt(self, fmt)
        _set_bits(self, fmt.check_code(bits))
        _set_class(self, UNDECODED)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Float is immutable")

    def __reduce__(self) -> tuple[Any, ...]:
        return (Float, (self.fmt, self.bits))

    # -- classification ------------------------------------------------------

    @property
    def sign(self) -> int:
        """The sign bit: 1 for negative values and negative NaNs.  (An FNUZ
        format's single NaN is the "-0" code, so its sign bit is 1; converting
        it carries that bit, as ml_dtypes does.)"""
        return 1 if self.bits & self.fmt.sign_bit else 0

    @property
    def is_negative(self) -> bool:
        """Whether the sign bit is set."""
        return bool(self.bits & self.fmt.sign_bit)

    @property
    def is_nan(self) -> bool:
        return self.fmt.is_nan_code(self.bits)

    @property
    def is_signaling(self) -> bool:
        """True for a signaling NaN."""
        return self.fmt.is_signaling_code(self.bits)

    @property
    def is_quiet_nan(self) -> bool:
        return self.is_nan and not self.is_signaling

    @property
    def is_inf(self) -> bool:
        return self.fmt.has_inf and (self.bits & self.fmt.magnitude_mask) == self.fmt.inf_code

    @property
    def is_finite(self) -> bool:
        return not (self.is_nan or self.is_inf)

    @property
    def is_zero(self) -> bool:
        return self.fmt.has_zero and not self.is_nan and not (self.bits & self.fmt.magnitude_mask)

    @property
    def is_subnormal(self) -> bool:
        f = self.fmt
        mag = self.bits & f.magnitude_mask
        return f.subnormals and 0 < mag < (1 << f.mantissa_bits) and not self.is_nan

    @property
    def is_normal(self) -> bool:
        return self.is_finite and not self.is_zero and not self.is_subnormal

    @property
    def kind(self) -> str:
        """``"zero"``, ``"subnormal"``, ``"normal"``, ``"inf"`` or ``"nan"``."""
        if self.is_nan:
            return "nan"
        if self.is_inf:
            return "inf"
        if self.is_zero:
            return "zero"
        return "subnormal" if self.is_subnormal else "normal"

    def classify(self) -> FloatClass:
        """The IEEE 754 class of the value.

        >>> FP16.from_bits(0x8001).classify()
        <FloatClass.NEGATIVE_SUBNORMAL: 'negativeSubnormal'>
        """
        if self.is_nan:
            return FloatClass.SIGNALING_NAN if self.is_signaling else FloatClass.QUIET_NAN
        prefix = "NEGATIVE_" if self.is_negative else "POSITIVE_"
        return FloatClass[prefix + {"inf": "INFINITY"}.get(self.kind, self.kind.upper())]

    def fields(self) -> tuple[int, int, int]:
        """``(sign, exponent_field, fraction_field)`` of the bit pattern."""
        return self.fmt.fields(self.bits)

    # -- values --------------------------------------------------------------

    def _significand_exponent(self) -> tuple[int, int]:
        """``(sig, exp)`` with ``|value| = sig × 2**exp`` for a finite value."""
        f = self.fmt
        m = f.mantissa_bits
        mag = self.bits & f.magnitude_mask
        e_field = mag >> m
        frac = mag & ((1 << m) - 1)
        if f.subnormals and e_field == 0:
            return frac, f.emin - m
        return frac | (1 << m), e_field - f.bias - m

    @property
    def value(self) -> Fraction:
        """The exact value; :class:`ValueError` for infinities and NaNs."""
        if not self.is_finite:
            raise ValueError(f"{self.kind} has no exact rational value ({self!r})")
        sig, exp = self._significand_exponent()
        v = Fraction(sig << exp) if exp >= 0 else Fraction(sig, 1 << -exp)
        return -v if self.is_negative else v

    def __float__(self) -> float:
        if self.is_nan:
            return -math.nan if self.is_negative else math.nan
        if self.is_inf:
            return -math.inf if self.is_negative else math.inf
        sig, exp = self._significand_exponent()
        try:
            v = math.ldexp(float(sig), exp) if sig < (1 << 53) else float(self.value)
        except OverflowError:
            v = math.inf
        return -v if self.is_negative else v

    def ulp(self) -> Fraction:
        """The unit in the last place at this value: the distance between
        the two finite values around it in its binade (for zero, the smallest
        subnormal).

        >>> FP16.round(1).ulp(), FP16.from_bits(0).ulp()
        (Fraction(1, 1024), Fraction(1, 16777216))
        """
        if not self.is_finite:
            raise ValueError(f"ulp is not defined for {self.kind} ({self!r})")
        if self.is_zero:
            return self.fmt.min_subnormal
        return _pow2(self._significand_exponent()[1])

    def _ordinal(self) -> int:
        """Position in the order of values: ±0 are 0, +min_subnormal is 1, ..."""
        mag = (self.bits & self.fmt.magnitude_mask) + (0 if self.fmt.has_zero else 1)
        return -mag if self.is_negative else mag

    def next_up(self) -> Float:
        """The least value greater than this one (IEEE nextUp).  Infinities
        and the largest finite value of a format without infinity stay put;
        a NaN gives the quiet NaN.  This method raises no flags; for IEEE's
        INVALID on a signaling NaN use :func:`fpsim.arith.next_up`.

        >>> FP16.from_bits(0x8001).next_up()
        Float(fp16, 0x8000, -0)
        """
        return self._step(1)

    def next_down(self) -> Float:
        """The greatest value less than this one (IEEE nextDown).

        >>> E4M3.round(448).next_down()
        Float(e4m3, 0x7d, 416)
        """
        return self._step(-1)

    def _step(self, direction: int) -> Float:
        f = self.fmt
        if self.is_nan:
            return Float(f, convert_nan(f, self.bits, f)[0])
        top = f.max_code + (1 if f.has_inf else 0) + (0 if f.has_zero else 1)
        lowest = -top if f.signed else (0 if f.has_zero else 1)
        o = self._ordinal() + direction
        if not lowest <= o <= top:
            return self
        if o == 0:  # stepping onto zero keeps the sign (nextUp(-min_sub) = -0)
            return _make(f, f.sign_bit if self.is_negative and f.has_negative_zero else 0)
        mag = abs(o) - (0 if f.has_zero else 1)
        return _make(f, mag | (f.sign_bit if o < 0 else 0))

    # -- text ----------------------------------------------------------------

    def hex(self) -> str:
        """C99 hexadecimal form of the value (``'0x1.ffcp+15'``), ``inf``,
        ``nan``."""
        if self.is_nan:
            # An FNUZ format has one NaN: no sign is shown for it.
            signed = self.is_negative and self.fmt.specials is not Specials.FNUZ
            return "-nan" if signed else "nan"
        if self.is_inf:
            return "-inf" if self.is_negative else "inf"
        sign = "-" if self.is_negative else ""
        if self.is_zero:
            return sign + "0x0p+0"
        sig, exp = self._significand_exponent()
        shift = sig.bit_length() - 1
        frac = sig - (1 << shift)
        digits = (shift + 3) // 4
        frac_hex = f"{frac << (4 * digits - shift):0{digits}x}".rstrip("0") if shift else ""
        return f"{sign}0x1{'.' + frac_hex if frac_hex else ''}p{exp + shift:+d}"

    def __str__(self) -> str:
        if not self.is_finite:
            return self.hex()
        text = exact_decimal(self.value)
        return "-0" if self.is_zero and self.is_negative else text

    def __repr__(self) -> str:
        digits = (self.fmt.width + 3) // 4
        return f"Float({self.fmt.name}, 0x{self.bits:0{digits}x}, {self})"

    def short_text(self) -> str:
        """The value in at most 17 digits, for reports and assertion
        messages: ``repr`` of the float64 where the value is one (the
        shortest decimal that reads back as it), else the value rounded to 17
        significant digits and marked ``~``; ``inf``, ``-inf`` and ``nan`` as
        :meth:`hex` writes them.  (``str`` is the exact decimal.)

        >>> from fpsim import FP32
        >>> FP32.from_bits(1).short_text()      # exactly 1.40129846...203125e-45
        '1.401298464324817e-45'
        """
        if not self.is_finite:
            return self.hex()
        f = float(self)
        if math.isfinite(f) and Fraction(f) == self.value:
            return repr(f)
        return exact_decimal(self.value, max_digits=17)

    def short_repr(self) -> str:
        """``repr`` with the decimal of :meth:`short_text` where the exact
        one has more than 17 digits: the form assertion messages, reports and
        pretty-printers (IPython, Hypothesis's "Falsifying example") show.

        >>> from fpsim import FP32, FP16
        >>> FP32.from_bits(1).short_repr()
        'Float(fp32, 0x00000001, 1.401298464324817e-45)'
        >>> FP16.round(1e-5).short_repr() == repr(FP16.round(1e-5))   # 17 digits: exact
        True
        """
        long = self.is_finite and exact_decimal(self.value, max_digits=17).startswith("~")
        value = self.short_text() if long else str(self)
        return f"Float({self.fmt.name}, 0x{self.bits:0{(self.fmt.width + 3) // 4}x}, {value})"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        # IPython's and Hypothesis's pretty-printers
        printer.text(self.short_repr())

    # -- Python operators: the current context, as in decimal ------------------

    def __add__(self, other: Any) -> Float:
        return _arith.add(self, _operand_for(self, other, "+"))

    def __sub__(self, other: Any) -> Float:
        return _arith.sub(self, _operand_for(self, other, "-"))

    def __mul__(self, other: Any) -> Float:
        return _arith.mul(self, _operand_for(self, other, "*"))

    def __truediv__(self, other: Any) -> Float:
        return _arith.div(self, _operand_for(self, other, "/"))

    def __neg__(self) -> Float:
        return _arith.neg(self)

    def __pos__(self) -> Float:
        return self

    def __abs__(self) -> Float:
        return _arith.abs(self)

    # Comparisons are exact and may mix formats and Python numbers (no rounding
    # is involved).  == and != are quiet; <, <=, >, >= signal INVALID on NaN
    # into the current context, as IEEE's compareSignaling* do.

    def _cmp(self, other: Any, signaling: bool) -> int | None:
        if isinstance(other, Float):
            return _arith._compare(self, other, signaling, None, "compare")
        if isinstance(other, (int, float, Fraction, Decimal)):
            other_nan = other.is_nan() if isinstance(other, Decimal) else other != other
            if other_nan or self.is_nan:
                snan = isinstance(other, Decimal) and other.is_snan()
                if signaling or self.is_signaling or snan:
                    getcontext().raise_flags(INVALID)
                return None
            # Read exactly (no float stands in for 10**400 or Decimal('1e400')),
            # a far Decimal as parse's stand-in, which lies on the same side of
            # every Float as the value itself.
            src = parse.exact(other)
            if src[0] == "code":  # a numpy float64: compare as Floats
                return _arith._compare(self, Float(src[1], src[2]), signaling, None, "compare")
            return _compare_exact(self, src)
        return NotImplemented  # type: ignore[return-value]

    def __eq__(self, other: object) -> bool:
        c = self._cmp(other, False)
        return c if c is NotImplemented else c == 0  # type: ignore[return-value]

    def __ne__(self, other: object) -> bool:
        c = self._cmp(other, False)
        return c if c is NotImplemented else c != 0  # type: ignore[return-value]

    def __lt__(self, other: Any) -> bool:
        c = self._cmp(other, True)
        return c if c is NotImplemented else c == -1  # type: ignore[return-value]

    def __le__(self, other: Any) -> bool:
        c = self._cmp(other, True)
        return c if c is NotImplemented else c in (-1, 0)  # type: ignore[return-value]

    def __gt__(self, other: Any) -> bool:
        c = self._cmp(other, True)
        return c if c is NotImplemented else c == 1  # type: ignore[return-value]

    def __ge__(self, other: Any) -> bool:
        c = self._cmp(other, True)
        return c if c is NotImplemented else c in (0, 1)  # type: ignore[return-value]

    def __hash__(self) -> int:
        if self.is_nan:
            return object.__hash__(self)
        return hash(self.value if self.is_finite else float(self))


def _compare_exact(x: Float, src: tuple[Any, ...]) -> int:
    """-1, 0 or 1 as the non-NaN Float ``x`` is below, equal to or above
    the value ``src`` (a finite or infinite result of :func:`parse.exact`),
    in time bounded by the sizes of the numbers, not by their magnitudes."""
    # Signs first: -1, 0 or 1 for each side, ±2 for the infinities.
    if x.is_inf:
        mine = -2 if x.is_negative else 2
    else:
        sig, e = x._significand_exponent() if not x.is_zero else (0, 0)
        mine = 0 if sig == 0 else (-1 if x.is_negative else 1)
    if src[0] == "inf":
        theirs = -2 if src[1] else 2
    else:
        _, negative, num, den, exp = src
        theirs = 0 if num == 0 else (-1 if negative else 1)
    if mine != theirs or mine in (0, 2, -2):
        return (mine > theirs) - (mine < theirs)
    # Same sign, both finite and nonzero: compare |x| = sig × 2**e with
    # num/den × 2**exp, by their binades where these differ.
    # sig × 2**e lies in [2**(top - 1), 2**top); num/den × 2**exp strictly
    # between 2**(low) and 2**(low + 2).
    top = sig.bit_length() + e
    low = num.bit_length() - den.bit_length() - 1 + exp
    if top - 1 >= low + 2:
        c = 1
    elif top <= low:
        c = -1
    else:
        # The binades are within two of each other, so the shift is bounded
        # by the numbers' own sizes.
        left, right = sig * den, num
        if e >= exp:
            left <<= e - exp
        else:
            right <<= exp - e
        c = (left > right) - (left < right)
    return c if mine > 0 else -c


def _operand_for(x: Float, other: Any, symbol: str) -> Float:
    if not isinstance(other, Float):
        raise TypeError(f"unsupported operand for {symbol}: Float({x.fmt.name}) and "
                        f"{type(other).__name__}; round it into the format first, e.g. "
                        f"fpsim.format({x.fmt.name!r}).round(value)")
    return other


_set_fmt = Float.__dict__["fmt"].__set__
_set_bits = Float.__dict__["bits"].__set__
_set_class = Float.__dict__["_class"].__set__
_set_negative = Float.__dict__["_negative"].__set__
_set_sig = Float.__dict__["_sig"].__set__
_set_exp = Float.__dict__["_exp"].__set__
_new_float = object.__new__


def _make(fmt: Format, code: int) -> Float:
    """The Float of a code known to be in range (the kernel's codes are).

    Floats are immutable, so the values of formats up to 16 bits are
    interned: building one costs more than the rounding's bit arithmetic.
    An interned Float is decoded when it is made (once per code); any other
    is marked UNDECODED and decoded when an operation first reads it."""
    interned = fmt._floats
    if interned is not None:
        x = interned[code]
        if x is None:
            # Stored once whole: another thread reads the slot without a lock
            # (two threads may both build it; either Float is the value).
            x = _new_float(Float)
            _set_fmt(x, fmt)
            _set_bits(x, code)
            c, negative, sig, exp = _decode(fmt, code)
            share = _SHARED_INTS.setdefault
            _store_decoding(x, c, negative, share(sig, sig), share(exp, exp))
            interned[code] = x
        return x
    x = _new_float(Float)
    _set_fmt(x, fmt)
    _set_bits(x, code)
    _set_class(x, UNDECODED)
    return x


# -- the decoding the arithmetic reads ------------------------------------------

# A decoded value's class: FINITE (zero, subnormal or normal), INF, QNAN, SNAN.
# UNDECODED marks a Float not decoded yet; it is nonzero, as every class but
# FINITE, so that the arithmetic's one test for special operands catches it.
FINITE, INF, QNAN, SNAN, UNDECODED = 0, 1, 2, 3, 4

# One int object per significand and exponent value among the interned
# Floats, so that operations on them read a few hundred ints, not one per code.
_SHARED_INTS: dict[int, int] = {}


def _decode(fmt: Format, code: int) -> tuple[int, bool, int, int]:
    """``(class, negative, sig, exp)`` of a code: ``|value| = sig × 2**exp``.

    >>> _decode(FP16, 0x3C01), _decode(FP16, 0x0001), _decode(FP16, 0xFC00)
    ((0, False, 1025, -10), (0, False, 1, -24), (1, True, 0, 0))
    """
    m, sign_bit, magnitude_mask, max_code, fnuz_nan, subnormals, sub_exp, bias_m = fmt._decoding
    negative = code & sign_bit != 0
    mag = code & magnitude_mask
    if mag > max_code or code == fnuz_nan:  # an infinity or a NaN
        if fmt.is_nan_code(code):
            return (SNAN if fmt.is_signaling_code(code) else QNAN), negative, 0, 0
        return INF, negative, 0, 0
    e_field = mag >> m
    if e_field or not subnormals:
        return FINITE, negative, (mag & ((1 << m) - 1)) | (1 << m), e_field - bias_m
    return FINITE, negative, mag, sub_exp


def decoded(x: Float) -> tuple[int, bool, int, int]:
    """``(class, negative, sig, exp)`` of a Float (see :func:`_decode`),
    decoding it first if it is not yet.

    >>> decoded(Float(FP16, 0x3C00))
    (0, False, 1024, -10)
    """
    if x._class == UNDECODED:
        d = _decode(x.fmt, x.bits)
        _store_decoding(x, *d)
        return d
    return x._class, x._negative, x._sig, x._exp


def _store_decoding(x: Float, c: int, negative: bool, sig: int, exp: int) -> None:
    _set_negative(x, negative)
    _set_sig(x, sig)
    _set_exp(x, exp)
    _set_class(x, c)  # last: a Float is decoded once its class is set


def _pow2(n: int) -> Fraction:
    return Fraction(1 << n) if n >= 0 else Fraction(1, 1 << -n)


def round_to(fmt: Format, x: Any, ctx: Context | None, overrides: dict[str, Any]) -> Float:
    """Round ``x`` into ``fmt`` (the body of :meth:`Format.round`)."""
    random_bits = overrides.pop("random_bits", None) if overrides else None
    if ctx is None and not overrides:
        ctx = getcontext()
        key = ctx._key
    else:
        ctx, key = resolve(ctx, overrides)
    mode, saturate, ftz, daz, before, sr_bits, nan, _rules = key

    if mode in STOCHASTIC:
        if random_bits is None:
            rand = ctx.random_bits(sr_bits)
        else:
            rand = _check_random_bits(random_bits, sr_bits)
    else:
        if random_bits is not None:
            raise ValueError("random_bits= is only used by stochastic rounding "
                             "(rounding='sr', 'sr_b' or 'sr_c')")
        rand = 0

    t = type(x)
    if daz and t is float and _is_subnormal64(x):
        x = math.copysign(0.0, x)  # a Python float is a binary64 operand: DAZ applies
    if t is float and x - x == 0.0:  # finite float: the hot path
        mant, e = math.frexp(x)
        if mant < 0 or (mant == 0.0 and math.copysign(1.0, x) < 0):
            code, flags = round_key(fmt, True, int(-mant * 9007199254740992.0), 1, e - 53,
                                    key, rand)
        else:
            code, flags = round_key(fmt, False, int(mant * 9007199254740992.0), 1, e - 53,
                                    key, rand)
    else:
        if t is Float:
            src: Any = ("code", x.fmt, x.bits)
        else:
            src = parse.exact(x)
        if src[0] == "code":
            src = _operand(src[1], src[2], daz)
        code, flags = _round_parsed(fmt, src, mode, saturate, ftz, before, rand, sr_bits, nan,
                                    _rules)
    if flags:
        ctx._flags[0] |= flags
    return _make(fmt, code)


def _is_subnormal64(x: float) -> bool:
    return x != 0.0 and -2.2250738585072014e-308 < x < 2.2250738585072014e-308


def _operand(fmt: Format, code: int, daz: bool) -> tuple[Any, ...]:
    """An operand given as a code of ``fmt``, read exactly (DAZ applied)."""
    v = _make(fmt, code)
    if v.is_nan:
        return ("nan", fmt, code)
    negative = v.is_negative
    if v.is_inf:
        return ("inf", negative)
    if daz and v.is_subnormal:
        return ("finite", negative, 0, 1, 0)
    sig, exp = v._significand_exponent()
    return ("finite", negative, sig, 1, exp)


def _round_parsed(fmt: Format, src: tuple[Any, ...], mode: Any, saturate: Any,
                  ftz: bool, before: bool, rand: int, sr_bits: int,
                  nan: NanPolicy = IEEE, rules: P3109 = P3109.V4_0) -> tuple[int, int]:
    kind = src[0]
    if kind == "finite":
        _, negative, num, den, exp = src
        return round_exact(fmt, negative, num, den, exp, mode, saturate, ftz, before,
                           rand, sr_bits, rules)
    if kind == "inf":
        # Infinity is no rounding of any finite value: clamping it is not an
        # overflow but an invalid conversion (as float -> int is).
        return infinity_code(fmt, src[1], saturate, 0, rules)
    if kind == "nan":
        _, src_fmt, payload = src
        if src_fmt is None:  # a NaN literal: the sign as written, no payload
            code = nan_or_error(fmt, payload, "NaN")
            return (code if nan.propagate else default_nan(fmt, nan)), 0
        if not fmt.has_nan:
            raise ValueError(f"NaN is not representable in {fmt.name}, which has no NaN")
        return convert_nan(src_fmt, payload, fmt, nan)
    # a signaling NaN literal
    negative = src[2]
    if fmt.specials is not Specials.IEEE:
        raise ValueError(f"format {fmt.name} has no signaling NaN; "
                         "only IEEE-style formats (fp16, fp32, bf16, e5m2, ...) do")
    return ((fmt.sign_bit if negative else 0) | fmt.inf_code | 1), 0  # type: ignore[operator]


# (the one check of random bits, fpsim.rounding's, under the name arith imports)
_check_random_bits = check_random_bits


def convert(x: Any, fmt: Format | str, ctx: Context | None = None, **overrides: Any) -> Float:
    """Convert ``x`` (a :class:`Float` of any format, or anything
    :meth:`Format.round` accepts) to ``fmt`` with one rounding.

    NaNs stay NaN, quieted (INVALID if signaling), as the context's NaN
    policy says (:mod:`fpsim.nans`): under the default ``"ieee"`` policy the
    sign is kept where the destination's NaNs have one and the payload is kept
    left-aligned; under ``"riscv"`` or ``"arm_default_nan"`` the result is
    the default NaN.  Into a format without infinity, an infinity becomes
    NaN and raises INVALID; with ``saturate=True`` an infinity becomes ±max
    in every format, also raising INVALID (an infinity is no rounding of a
    finite value, so clamping it is an invalid conversion, as float to int).

    >>> import fpsim
    >>> fpsim.convert(fpsim.FP32.round(3.14159), "bf16")
    Float(bf16, 0x4049, 3.140625)
    >>> fpsim.convert(fpsim.FP16.round("inf"), fpsim.E4M3)
    Float(e4m3, 0x7f, nan)
    """
    return round_to(_lookup(fmt), x, ctx, overrides)


def exact_decimal(x: Fraction, max_digits: int | None = None) -> str:
    """The decimal expansion of ``x``, exact when it terminates (every binary
    value does), in the style of Python's ``repr(float)``: positional for
    ``1e-4 <= |x| < 1e16``, scientific otherwise.  With ``max_digits``, or
    for a non-terminating expansion, the value is rounded to that many
    significant digits (default 17) and prefixed with ``~``.

    >>> exact_decimal(Fraction(21, 2097152))
    '1.0013580322265625e-05'
    >>> exact_decimal(Fraction(65504)), exact_decimal(Fraction(-3, 8))
    ('65504', '-0.375')
    >>> exact_decimal(Fraction(1, 3))
    '~0.33333333333333333'
    """
    if max_digits is not None:
        if isinstance(max_digits, bool) or not hasattr(max_digits, "__index__"):
            raise TypeError(f"max_digits must be an int or None, got "
                            f"{type(max_digits).__name__}")
        max_digits = max_digits.__index__()
        if max_digits < 1:
            raise ValueError(f"max_digits={max_digits}; accepted a positive int or None")
    x = Fraction(x)
    if x == 0:
        return "0"
    sign = "-" if x < 0 else ""
    n, d = abs(x.numerator), x.denominator
    # The expansion terminates when d = 2**twos × 5**fives.  Every step below
    # costs about a multiplication of numbers the size of n and d (no loop
    # over the exponents, no str() of a long int, which Python limits), so
    # that values of the widest formats print in bounded time.
    twos = (d & -d).bit_length() - 1
    fives = _five_exponent(d >> twos)
    approx = fives is None
    if fives is not None:
        scale = max(twos, fives)
        # n/d × 10**scale, an integer: no division needed
        digits = int_to_digits((n << (scale - twos)) * 5 ** (scale - fives))
        exp10 = len(digits) - 1 - scale
        digits = digits.rstrip("0") or "0"
        if max_digits is not None and len(digits) > max_digits:
            approx = True
    if approx:
        keep = max_digits or 17
        exp10 = _floor_log10(n, d)
        shift = keep - 1 - exp10
        num, den = (n * 10 ** shift, d) if shift >= 0 else (n, d * 10 ** -shift)
        rounded = _round_half_even(num, den)
        if rounded >= 10 ** keep:  # rounded up to the next power of ten
            exp10 += 1
            rounded = _round_half_even(num, den * 10)
        digits = int_to_digits(rounded).rstrip("0") or "0"
    prefix = "~" if approx else ""
    if -4 <= exp10 < 16:
        if exp10 >= 0:
            whole = digits[: exp10 + 1].ljust(exp10 + 1, "0")
            frac = digits[exp10 + 1:]
        else:
            whole, frac = "0", "0" * (-exp10 - 1) + digits
        return f"{prefix}{sign}{whole}{'.' + frac if frac else ''}"
    mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    return f"{prefix}{sign}{mantissa}e{'-' if exp10 < 0 else '+'}{abs(exp10):02d}"


_LOG2_5 = math.log2(5)
_LOG10_2 = math.log10(2)


def _five_exponent(r: int) -> int | None:
    """``k`` where the odd ``r`` is ``5**k``, else None.

    >>> _five_exponent(1), _five_exponent(5**300), _five_exponent(3 * 5**300)
    (0, 300, None)
    """
    if r == 1:
        return 0
    # 5**k has floor(k × log2(5)) + 1 bits, a different count for every k
    # (log2(5) > 1): r's bit length names the only candidate.
    bits = r.bit_length()
    k = max(1, round((bits - 1) / _LOG2_5))
    p = _power_of_five(k)
    while p.bit_length() > bits:
        p //= 5
        k -= 1
    while p.bit_length() < bits:
        p *= 5
        k += 1
    return k if p == r else None


@functools.lru_cache(maxsize=8)
def _power_of_five(k: int) -> int:
    # Printing one value asks for the same power several times (its
    # decimal, its error, its neighbours), and far ones are large.
    return 5 ** k


def _round_half_even(num: int, den: int) -> int:
    q, r = divmod(num, den)
    twice = r << 1
    return q + 1 if twice > den or (twice == den and q & 1) else q


def _floor_log10(n: int, d: int) -> int:
    """floor(log10(n/d)) for positive ints, from their bit lengths (within
    one of it) and at most a few exact comparisons.

    >>> _floor_log10(999, 1), _floor_log10(1000, 1), _floor_log10(1, 1000), _floor_log10(1, 1001)
    (2, 3, -3, -4)
    """
    e = math.floor((n.bit_length() - d.bit_length()) * _LOG10_2)

    def below(k: int) -> bool:  # n/d < 10**k
        return n < d * 10 ** k if k >= 0 else n * 10 ** -k < d

    while below(e):
        e -= 1
    while not below(e + 1):
        e += 1
    return e


from . import arith as _arith  # noqa: E402  (operators call rightward; see arith)
