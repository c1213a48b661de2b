"""Exact reading of inputs: every accepted input becomes an exact value.

:func:`exact` turns a Python or numpy number, or a string, into one of

* ``("finite", negative, num, den, exp)`` — the value ``±num/den × 2**exp``;
* ``("inf", negative)``;
* ``("nan", fmt, code)`` — a NaN with a known encoding (a Python float's
  binary64 bits), converted by the NaN rules of :mod:`fpsim.nans`;
* ``("code", fmt, code)`` — a numpy or ml_dtypes scalar whose dtype is an
  fpsim format: read through its bits, so payloads and DAZ apply;
* ``("nan", None, negative)`` — a NaN with no encoding (``"nan"``,
  ``Decimal("NaN")``): the destination's default NaN;
* ``("snan", None, negative)`` — the string ``"snan"`` or ``Decimal("sNaN")``:
  a signaling-NaN literal, which rounds to the format's signaling NaN without
  a flag (it is a value written down, not an operation on one).

Strings are read exactly, never through float64: decimal scientific notation
of any length, rationals ``p/q``, C99 hexadecimal floats (``0x1.ffcp15``),
``inf``/``infinity``, ``nan`` and ``snan``, each with an optional sign.  An
underscore may stand between two digits, as in Python's ``1_000``.

>>> exact("0x1.8p-3")
('finite', False, 24, 1, -7)
>>> exact("-1e-5")                 # 1 / 5**5 × 2**-5
('finite', True, 1, 3125, -5)
>>> exact(0.5)                     # the float's 53-bit significand
('finite', False, 4503599627370496, 1, -53)

**Far values.**  A string or Decimal whose magnitude lies beyond
``10**±FAR_DECIMAL`` (about ``10**±316907``) is far outside every format
that can exist, where every value rounds alike in every format and mode
(see the comment at ``FAR_DECIMAL``).  It is read as the stand-in
``10**±FAR_DECIMAL`` of its sign, decided from the lengths of its digits and
its exponent alone, so that ``"1e-99999999"`` costs no ``10**99999999``.
:func:`is_far` tells a stand-in from a value read exactly.

>>> is_far(exact("-1e-99999999")), exact("-1e-99999999")[1], is_far(exact("1e300"))
(True, True, False)
"""

from __future__ import annotations

import math
import re
import struct
import sys
import unicodedata
from decimal import Decimal
from fractions import Fraction
from typing import Any

from ._digits import SHORT_DIGITS, int_from_digits
from .formats import FP64, MAX_EXPONENT_BITS, MAX_MANTISSA_BITS, format

__all__ = ["exact", "is_far", "fraction", "ACCEPTED", "FAR_DECIMAL"]

ACCEPTED = ("int, float, fractions.Fraction, decimal.Decimal, numpy/ml_dtypes scalar, "
            "fpsim.Float, or a string: decimal ('1e-5', any length), rational ('1/3'), "
            "C99 hex float ('0x1.ffcp15'), 'inf', 'nan', 'snan'")

# Where every value rounds alike.  fpsim.formats bounds a format's exponent
# field to MAX_EXPONENT_BITS (E) and its fraction to MAX_MANTISSA_BITS (M) bits.
# * Its largest finite value is below 2**(emax + 1) <= 2**(2**E).  Any value
#   v >= 2**(2**E) therefore has floor(log2 v) > emax: its rounded significand
#   lands beyond max in every mode (stochastic rounding included, whatever its
#   random number), so the result is the mode's overflow result (±inf, ±max
#   or NaN, saturate and sign as given) with OVERFLOW | INEXACT, whatever v is.
# * Its smallest subnormal is at least 2**(emin - M) >= 2**(2 - 2**E - M)
#   (emin = 1 - bias, bias < 2**E); a format without subnormals starts at
#   2**-bias > 2**-(2**E).  Any value v < 2**-_TINY_BITS is below 2**-69 of
#   that quantum: rne, rna and rtz give ±0, rup/rdn/rto the smallest
#   magnitude on their side, and stochastic rounding (at most 64 random bits,
#   fpsim.context) sees a discarded fraction that truncates to 0 and never
#   rounds up; tininess holds before and after rounding, so the flags are
#   UNDERFLOW | INEXACT and ftz flushes, whatever v is.
_HUGE_BITS = 1 << MAX_EXPONENT_BITS
_TINY_BITS = (1 << MAX_EXPONENT_BITS) + MAX_MANTISSA_BITS + 64 + 3
# FAR_DECIMAL >= _TINY_BITS × log10(2) (0.30103 > log10 2), so 10**FAR_DECIMAL
# lies beyond 2**_TINY_BITS > 2**_HUGE_BITS and 10**-FAR_DECIMAL below 2**-_TINY_BITS.
FAR_DECIMAL = _TINY_BITS * 30103 // 100000 + 1

# The written exponents beyond 10**18 in magnitude are read as ±10**18: no
# string holds enough digits (10**17) to bring such a value back into range.
_EXPONENT_DIGITS = 18

_HEX = re.compile(
    r"""(?P<sign>[-+])?0x(?P<int>[0-9a-f]*)(?:\.(?P<frac>[0-9a-f]*))?(?:p(?P<exp>[-+]?[0-9]+))?""",
    re.IGNORECASE)
# (the lookahead asks for a digit before or after the point)
_DECIMAL = re.compile(r"(?P<sign>[-+])?(?=\.?\d)(?P<int>\d*)(?:\.(?P<frac>\d*))?"
                      r"(?:[eE](?P<exp>[-+]?\d+))?")
_RATIONAL = re.compile(r"(?P<sign>[-+])?(?P<num>\d+)/(?P<den>\d+)")
_SPECIAL = re.compile(r"(?P<sign>[-+])?(?P<what>inf|infinity|nan|qnan|snan)", re.IGNORECASE)
_NON_ASCII = re.compile(r"[^\x00-\x7f]")
# An underscore that does not stand between two digits (hex digits in a hex float).
_LOOSE_UNDERSCORE = re.compile(r"(?<!\d)_|_(?!\d)")
_LOOSE_HEX_UNDERSCORE = re.compile(r"(?<![0-9a-fA-F])_|_(?![0-9a-fA-F])")


def exact(x: Any) -> tuple[Any, ...]:
    """Read ``x`` exactly (see the module docstring for the result's form)."""
    t = type(x)
    if t is float:
        return _from_float(x)
    if t is int:
        return ("finite", x < 0, abs(x), 1, 0)
    if t is Fraction:
        return ("finite", x < 0, abs(x.numerator), x.denominator, 0)
    if t is str:
        return _from_string(x)
    if t is Decimal:
        return _from_decimal(x)
    if isinstance(x, bool):
        return ("finite", False, int(x), 1, 0)
    if hasattr(x, "dtype") and hasattr(x, "view") and getattr(x, "ndim", None) == 0:
        return _from_numpy_scalar(x)
    if isinstance(x, int):
        return ("finite", x < 0, abs(int(x)), 1, 0)
    if isinstance(x, float):
        return _from_float(float(x))
    if isinstance(x, Fraction):
        return ("finite", x < 0, abs(x.numerator), x.denominator, 0)
    if isinstance(x, Decimal):
        return _from_decimal(x)
    if isinstance(x, str):
        return _from_string(str(x))
    raise TypeError(f"cannot read a {type(x).__name__} as a number; accepted: {ACCEPTED}")


def is_far(src: tuple[Any, ...]) -> bool:
    """Whether ``src`` (a result of :func:`exact`) is the stand-in of a value
    beyond every format's range, not the value itself.

    >>> is_far(exact("1e400000")), is_far(exact("0x1p-9999999")), is_far(exact(10**400))
    (True, True, False)
    """
    return src[0] == "finite" and src[4] in (FAR_DECIMAL, -FAR_DECIMAL) and src[2] > 0 \
        and (src[2], src[3]) in ((_far_power(), 1), (1, _far_power()))


def _from_float(x: float) -> tuple[Any, ...]:
    if x != x or x in (math.inf, -math.inf):
        if x != x:
            return ("nan", FP64, struct.unpack("<Q", struct.pack("<d", x))[0])
        return ("inf", x < 0)
    mant, e = math.frexp(x)
    negative = mant < 0 or (mant == 0 and math.copysign(1.0, x) < 0)
    # mant is in [0.5, 1): scaling by 2**53 gives the exact integer significand.
    return ("finite", negative, int(abs(mant) * 9007199254740992.0), 1, e - 53)


def _from_decimal(x: Decimal) -> tuple[Any, ...]:
    if x.is_nan():
        return ("snan" if x.is_snan() else "nan", None, x.is_signed())
    if x.is_infinite():
        return ("inf", x.is_signed())
    sign, digits, exponent = x.as_tuple()
    assert isinstance(exponent, int)
    if len(digits) <= SHORT_DIGITS and -FAR_DECIMAL < exponent < FAR_DECIMAL:
        # The common case, at the cost it always had: few digits, and an
        # exponent whose power of five is at most some 92 KB.
        num = int("".join(map(str, digits)))
        if exponent >= 0:
            return ("finite", bool(sign), num * 5 ** exponent, 1, exponent)
        return ("finite", bool(sign), num, 5 ** -exponent, exponent)
    return _ratio(bool(sign), "".join(map(str, digits)), "1", exponent)


def _from_string(text: str) -> tuple[Any, ...]:
    s = text.strip()
    if not s.isascii():
        # Python reads other scripts' decimal digits ('١٢٣' is 123); as ASCII
        # they are counted as the digits they are (a leading '٠' is a zero).
        s = _NON_ASCII.sub(_ascii_digit, s)
    if "_" in s:
        loose = _LOOSE_HEX_UNDERSCORE if s.lstrip("+-")[:2] in ("0x", "0X") else _LOOSE_UNDERSCORE
        if loose.search(s):
            raise ValueError(f"could not read {text!r}: an underscore may only stand between "
                             f"two digits, as in 1_000; accepted: {ACCEPTED}")
        s = s.replace("_", "")
    if not s:
        raise ValueError(f"empty string is not a number; accepted: {ACCEPTED}")
    if "x" in s or "X" in s:
        m = _HEX.fullmatch(s)
        if m:
            return _from_hex(text, m)
    else:
        m = _DECIMAL.fullmatch(s)
        if m:
            return _ratio(m["sign"] == "-", (m["int"] or "") + (m["frac"] or ""), "1",
                          _exponent(m["exp"]) - len(m["frac"] or ""))
    m = _SPECIAL.fullmatch(s)
    if m:
        negative = m["sign"] == "-"
        what = m["what"].lower()
        if what.startswith("inf"):
            return ("inf", negative)
        return ("snan" if what == "snan" else "nan", None, negative)
    if "/" in s:
        m = _RATIONAL.fullmatch(s)
        if not m:
            raise ValueError(f"could not read {text!r} as a rational p/q (p and q decimal "
                             f"integers, q > 0); accepted: {ACCEPTED}")
        if not m["den"].strip("0"):
            raise ValueError(f"could not read {text!r} as a rational p/q: the denominator "
                             "is zero")
        return _ratio(m["sign"] == "-", m["num"], m["den"], 0)
    raise ValueError(f"could not read {text!r} as a number; accepted: {ACCEPTED}")


def _ascii_digit(m: re.Match[str]) -> str:
    """A decimal digit of any script as its ASCII digit; other characters as
    they are (the grammar then refuses them)."""
    value = unicodedata.decimal(m[0], None)
    return m[0] if value is None else str(value)


def _from_hex(text: str, m: re.Match[str]) -> tuple[Any, ...]:
    negative = m["sign"] == "-"
    digits = (m["int"] or "") + (m["frac"] or "")
    if not digits:
        raise ValueError(f"could not read {text!r}: a hex float needs digits")
    num = int(digits, 16)  # (a power-of-two base: no length limit, linear time)
    if not num:
        return ("finite", negative, 0, 1, 0)
    exp = _exponent(m["exp"]) - 4 * len(m["frac"] or "")
    top = exp + num.bit_length()  # 2**(top - 1) <= value < 2**top
    if top > _HUGE_BITS:
        return _far(negative, True)
    if top <= -_TINY_BITS:
        return _far(negative, False)
    return ("finite", negative, num, 1, exp)


def _exponent(text: str | None) -> int:
    """A written decimal exponent (None: 0), those beyond 10**18 clamped."""
    if text is None:
        return 0
    digits = text.lstrip("+-").lstrip("0")
    if len(digits) > _EXPONENT_DIGITS:
        return -10**_EXPONENT_DIGITS if text[0] == "-" else 10**_EXPONENT_DIGITS
    value = int(digits or "0")
    return -value if text[0] == "-" else value


def _ratio(negative: bool, num: str, den: str, e10: int) -> tuple[Any, ...]:
    """``±num/den × 10**e10`` from the decimal digits ``num`` and ``den``
    (den not zero), or the stand-in of a far value."""
    num = num.lstrip("0")
    if not num:
        return ("finite", negative, 0, 1, 0)
    den = den.lstrip("0")
    # Trailing zeros join the exponent: fewer digits to convert.
    short_num, short_den = num.rstrip("0"), den.rstrip("0")
    e10 += (len(num) - len(short_num)) - (len(den) - len(short_den))
    # num/den × 10**e10 lies strictly between 10**(size - 1) and 10**(size + 1).
    size = len(short_num) - len(short_den) + e10
    if size - 1 >= FAR_DECIMAL:
        return _far(negative, True)
    if size + 1 <= -FAR_DECIMAL:
        return _far(negative, False)
    p, q = int_from_digits(short_num), int_from_digits(short_den)
    # 10**e10 = 5**e10 × 2**e10
    if e10 >= 0:
        return ("finite", negative, p * 5 ** e10, q, e10)
    return ("finite", negative, p, q * 5 ** -e10, e10)


_FAR_POWER: list[int] = []


def fraction(src: tuple[Any, ...]) -> Fraction:
    """The exact value of a finite result of :func:`exact` as a Fraction (a
    value beyond every format's range as its stand-in ``±10**±FAR_DECIMAL``,
    which rounds alike in every format: the cost is bounded whatever the
    magnitude that was written).

    >>> fraction(exact("0.375")), fraction(exact(Decimal("-1e-3")))
    (Fraction(3, 8), Fraction(-1, 1000))
    """
    if src[0] != "finite":
        raise ValueError(f"fraction() takes a finite value, got {src[0]}")
    _, negative, num, den, exp = src
    v = Fraction(num << exp, den) if exp >= 0 else Fraction(num, den << -exp)
    return -v if negative else v


def _far_power() -> int:
    """5**FAR_DECIMAL (computed once)."""
    if not _FAR_POWER:
        _FAR_POWER.append(5 ** FAR_DECIMAL)
    return _FAR_POWER[0]


def _far(negative: bool, huge: bool) -> tuple[Any, ...]:
    """The stand-in ``±10**±FAR_DECIMAL`` of a value beyond every format's
    range on the same side (see the comment at FAR_DECIMAL).  A power of ten,
    so that writing it in decimal is short."""
    if huge:
        return ("finite", negative, _far_power(), 1, FAR_DECIMAL)
    return ("finite", negative, 1, _far_power(), -FAR_DECIMAL)


def _from_numpy_scalar(x: Any) -> tuple[Any, ...]:
    kind = x.dtype.kind
    if kind not in "iubfV":
        raise TypeError(f"cannot read numpy dtype {x.dtype} as a number; accepted: {ACCEPTED}")
    np = sys.modules.get("numpy")
    if np is not None and isinstance(x, np.ndarray):
        # (numpy.ma not imported, or being imported by another thread: x
        # cannot be a masked array)
        masked = getattr(sys.modules.get("numpy.ma"), "MaskedArray", None)
        if masked is not None and isinstance(x, masked):
            raise TypeError("cannot read a numpy masked array as a number (its mask would be "
                            "lost); pass x.filled(value) or x.data")
        # A 0-d array may hold its bytes in either order; its element is a
        # scalar in native order, whose bits view() reads as they are.
        x = x[()]
    if kind in "iub":
        v = int(x)
        return ("finite", v < 0, abs(v), 1, 0)
    try:
        fmt = format(x.dtype.name)
    except ValueError:
        fmt = None
    if fmt is not None and x.dtype.itemsize * 8 >= fmt.width:
        code = int(x.view(f"u{x.dtype.itemsize}"))
        return ("code", fmt, code)
    if kind == "f" or kind == "V":
        # A wider float (np.longdouble) is read by its exact ratio, never
        # through float(), which would round it, or overflow it to inf.
        as_ratio = getattr(x, "as_integer_ratio", None)
        if as_ratio is not None:
            try:
                n, d = as_ratio()
            except (OverflowError, ValueError):  # an infinity, a NaN
                pass
            else:
                return ("finite", n < 0 or (n == 0 and math.copysign(1.0, float(x)) < 0),
                        abs(n), d, 0)
        try:
            return _from_float(float(x))
        except (TypeError, ValueError):  # (a structured scalar, ...)
            pass
    raise TypeError(f"cannot read numpy dtype {x.dtype} as a number; accepted: {ACCEPTED}")
