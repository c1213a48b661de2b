"""Rigorous enclosures of exp, log, tanh and erf at exact binary arguments.

``enclose(name, x, digits)`` returns Fractions ``lo < f(x) < hi`` whose
relative width shrinks as ``digits`` grows.  They are computed with the
standard library's :mod:`decimal`, whose ``exp`` and ``ln`` are correctly
rounded (so within half a unit in the last digit), from the argument
converted to a decimal exactly (a binary fraction ``n / 2**k`` is the decimal
``n * 5**k / 10**k``).  tanh follows from exp; erf is summed from its Taylor
series with a bound on the rounding and truncation errors, times an
enclosure of ``2/sqrt(pi)``.

No float arithmetic is involved: every bound is a Fraction.
"""

from __future__ import annotations

import decimal
import math
from fractions import Fraction

__all__ = ["enclose", "ENCLOSED"]

ENCLOSED = ("exp", "log", "tanh", "erf")


def _context(digits: int) -> decimal.Context:
    return decimal.Context(prec=digits, rounding=decimal.ROUND_HALF_EVEN,
                           Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN, traps=[])


def _exact_decimal(x: Fraction) -> decimal.Decimal:
    """A binary fraction as the decimal of the same value (no rounding)."""
    k = x.denominator.bit_length() - 1
    if x.denominator != 1 << k:
        raise ValueError("the argument must be a binary fraction")
    return decimal.Decimal(f"{x.numerator * 5 ** k}E-{k}")


def _around(v: decimal.Decimal, relative: Fraction) -> tuple[Fraction, Fraction]:
    """The interval ``v ± |v| × relative``."""
    f = Fraction(v)
    d = abs(f) * relative
    return f - d, f + d


def _exp(x: Fraction, digits: int) -> tuple[Fraction, Fraction]:
    c = _context(digits)
    # A correctly rounded result is within half an ulp: 10**(1 - digits)
    # relative is twice that, for margin.
    return _around(c.exp(_exact_decimal(x)), Fraction(1, 10 ** (digits - 1)))


def _log(x: Fraction, digits: int) -> tuple[Fraction, Fraction]:
    c = _context(digits)
    return _around(c.ln(_exact_decimal(x)), Fraction(1, 10 ** (digits - 1)))


def _tanh(x: Fraction, digits: int) -> tuple[Fraction, Fraction]:
    """tanh(x) = (E - 1) / (E + 1) with E = exp(2x), increasing in E."""
    e_lo, e_hi = _exp(2 * x, digits)
    return (e_lo - 1) / (e_lo + 1), (e_hi - 1) / (e_hi + 1)


_TWO_OVER_SQRT_PI: dict[int, tuple[Fraction, Fraction]] = {}


def _pi(digits: int) -> tuple[Fraction, Fraction]:
    """pi by Machin's formula, 16 atan(1/5) - 4 atan(1/239), in integers
    scaled by 10**(digits + 10); each series term is truncated toward zero
    (an error below one unit each) and the truncation of the series after
    the terms drop below one unit is below one unit more."""
    scale = 10 ** (digits + 10)

    def atan_inv(n: int) -> tuple[int, int]:
        total, power, k, terms = 0, scale // n, 0, 0
        n2 = n * n
        while power:
            term = power // (2 * k + 1)
            total += -term if k % 2 else term
            power //= n2
            k += 1
            terms += 1
        return total, terms + 2  # value, bound on its error in units

    a, ea = atan_inv(5)
    b, eb = atan_inv(239)
    approx = 16 * a - 4 * b
    err = 16 * ea + 4 * eb
    return Fraction(approx - err, scale), Fraction(approx + err, scale)


def _two_over_sqrt_pi(digits: int) -> tuple[Fraction, Fraction]:
    """Bounds of 2/sqrt(pi): integer square roots of pi's bounds scaled by
    10**(2 (digits + 10)), rounded outward."""
    if digits not in _TWO_OVER_SQRT_PI:
        pi_lo, pi_hi = _pi(digits)
        scale = 10 ** (digits + 10)
        s2 = scale * scale
        root_lo = Fraction(math.isqrt(pi_lo.numerator * s2 // pi_lo.denominator), scale)
        root_hi = Fraction(math.isqrt(-(-pi_hi.numerator * s2 // pi_hi.denominator)) + 1, scale)
        _TWO_OVER_SQRT_PI[digits] = (2 / root_hi, 2 / root_lo)
    return _TWO_OVER_SQRT_PI[digits]


def _erf(x: Fraction, digits: int) -> tuple[Fraction, Fraction]:
    """erf(x) = 2/sqrt(pi) × sum over n of (-1)**n x**(2n+1) / (n! (2n+1)),
    for x > 0, summed in integers scaled by 2**bits (each term truncated, an
    error below one unit each), until the terms are decreasing and below one
    unit (the rest of an alternating series with decreasing terms is smaller
    than its first term).  Each term is the exact ratio of two integers
    (no Fraction, whose reductions cost more than the sum)."""
    x2 = x * x
    # The largest term is about e**(x**2); keep `digits` beyond it.
    # Bits: `digits` relative to the result (about x for small x, 1 for
    # large), plus the cancellation among terms as large as e**(x**2).
    small = max(0, x.denominator.bit_length() - x.numerator.bit_length())
    bits = int(digits * 3.33) + 16 + small + int(x2 * 2)
    scale = 1 << bits
    # x**(2n+1) / n! × scale = num / den, exactly
    num, den = x.numerator << bits, x.denominator
    x2_num, x2_den = x2.numerator, x2.denominator
    n, err, total_int = 0, 0, 0
    while True:
        t = num // (den * (2 * n + 1))  # truncated toward zero (both positive)
        total_int += -t if n % 2 else t
        err += 1
        n += 1
        num *= x2_num
        den *= x2_den * n
        if n > x2 and num < den * (2 * n + 1):
            err += 1  # the rest of the series
            break
    total = Fraction(total_int, scale)
    s_lo, s_hi = total - Fraction(err, scale), total + Fraction(err, scale)
    c_lo, c_hi = _two_over_sqrt_pi(digits)
    return s_lo * c_lo, s_hi * c_hi


_EVALUATE = {"exp": _exp, "log": _log, "tanh": _tanh, "erf": _erf}


def enclose(name: str, x: Fraction, digits: int) -> tuple[Fraction, Fraction]:
    """``lo < f(x) < hi`` for f one of :data:`ENCLOSED` (x > 0 for log; for
    tanh and erf x > 0, their odd symmetry gives the rest), with relative
    width about ``10**-digits`` (wider for tanh and erf of tiny x, whose
    formula loses digits; the caller asks again with more digits).

    >>> lo, hi = enclose("exp", Fraction(1), 30)
    >>> float(lo) <= 2.718281828459045 <= float(hi), hi - lo < Fraction(1, 10**28)
    (True, True)
    >>> lo, hi = enclose("erf", Fraction(1, 2), 30)
    >>> float(lo) <= 0.5204998778130465 <= float(hi)
    True
    """
    return _EVALUATE[name](x, digits)
