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
``inf``/``infinity``, ``nan`` and ``snan``, each with an optional sign.

>>> exact("0x1.8p-3")
('finite', False, 24, 1, -7)
>>> exact("-1e-5")                 # 1 / 5**5 × 2**-5
('finite', True, 1, 3125, -5)
>>> exact(0.5)                     # the float's 53-bit significand
('finite', False, 4503599627370496, 1, -53)
"""

from __future__ import annotations

import math
import re
import struct
from decimal import Decimal
from fractions import Fraction
from typing import Any

from .formats import FP64, format

__all__ = ["exact", "ACCEPTED"]

ACCEPTED = ("int, float, fractions.Fraction, decimal.Decimal, numpy/ml_dtypes scalar, "
            "fpsim.Float, or a string: decimal ('1e-5', any length), rational ('1/3'), "
            "C99 hex float ('0x1.ffcp15'), 'inf', 'nan', 'snan'")

_HUGE_DECIMAL_EXPONENT = 10**6      # |log10(x)| beyond this: a stand-in power of two
_STAND_IN_EXPONENT = 1 << 22        # 2**±(2**22): beyond every format, and 10**±(10**6)

_HEX = re.compile(
    r"""(?P<sign>[-+])?0x(?P<int>[0-9a-f]*)(?:\.(?P<frac>[0-9a-f]*))?(?:p(?P<exp>[-+]?[0-9]+))?""",
    re.IGNORECASE)
_SPECIAL = re.compile(r"(?P<sign>[-+])?(?P<what>inf|infinity|nan|qnan|snan)", re.IGNORECASE)


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
    num = int("".join(map(str, digits)) or "0")
    assert isinstance(exponent, int)
    if num and abs(exponent + len(digits) - 1) > _HUGE_DECIMAL_EXPONENT:
        # Far outside every format's range (fpsim.formats bounds every format
        # inside 2**±(2**21)), where only the sign and the side matter.
        # A power of two just as far out rounds identically in every format
        # and mode, and costs no 10**(10**9)-sized integer.
        side = 1 if exponent > 0 else -1
        return ("finite", bool(sign), 1, 1, side * _STAND_IN_EXPONENT)
    if exponent >= 0:
        return ("finite", bool(sign), num * 10 ** exponent, 1, 0)
    # num / 10**k = num / (5**k × 2**k)
    return ("finite", bool(sign), num, 5 ** -exponent, exponent)


def _from_string(text: str) -> tuple[Any, ...]:
    s = text.strip().replace("_", "")
    if not s:
        raise ValueError(f"empty string is not a number; accepted: {ACCEPTED}")
    m = _SPECIAL.fullmatch(s)
    if m:
        negative = m["sign"] == "-"
        what = m["what"].lower()
        if what.startswith("inf"):
            return ("inf", negative)
        return ("snan" if what == "snan" else "nan", None, negative)
    m = _HEX.fullmatch(s)
    if m:
        digits = (m["int"] or "") + (m["frac"] or "")
        if not digits:
            raise ValueError(f"could not read {text!r}: a hex float needs digits")
        exp = int(m["exp"] or 0) - 4 * len(m["frac"] or "")
        num = int(digits, 16)
        if num and abs(exp + num.bit_length()) > _STAND_IN_EXPONENT // 2:
            side = 1 if exp > 0 else -1
            return ("finite", m["sign"] == "-", 1, 1, side * _STAND_IN_EXPONENT)
        return ("finite", m["sign"] == "-", num, 1, exp)
    if "/" in s:
        try:
            value = Fraction(s)
        except (ValueError, ZeroDivisionError):
            raise ValueError(f"could not read {text!r} as a rational p/q; "
                             f"accepted: {ACCEPTED}") from None
        return ("finite", value < 0 or s.lstrip().startswith("-"),
                abs(value.numerator), value.denominator, 0)
    try:
        d = Decimal(s)
    except ArithmeticError:
        raise ValueError(f"could not read {text!r} as a number; accepted: {ACCEPTED}") from None
    if d.is_nan() or d.is_infinite():  # spellings such as 'sNaN123' that the regex refused
        raise ValueError(f"could not read {text!r} as a number; accepted: {ACCEPTED}")
    return _from_decimal(d)


def _from_numpy_scalar(x: Any) -> tuple[Any, ...]:
    kind = x.dtype.kind
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
        as_ratio = getattr(x, "as_integer_ratio", None)
        if as_ratio is not None and math.isfinite(float(x)):
            n, d = as_ratio()
            return ("finite", n < 0 or (n == 0 and math.copysign(1.0, float(x)) < 0),
                    abs(n), d, 0)
        return _from_float(float(x))
    raise TypeError(f"cannot read numpy dtype {x.dtype} as a number; accepted: {ACCEPTED}")
