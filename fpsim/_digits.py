"""Decimal digit strings of any length, read and written exactly.

Python refuses ``int(s)`` and ``str(n)`` beyond 4300 digits by default
(``sys.set_int_max_str_digits``), because CPython's own conversions take
time quadratic in the length.  fpsim reads decimal strings of any length
exactly and writes every binary value exactly, so both conversions here
split the number into halves until each piece is short enough for Python
(600 digits: the smallest limit a user may set is 640), and join the halves
with one multiplication.  Reading multiplies Python ints (Karatsuba); writing
multiplies :class:`decimal.Decimal` integers, whose large products are
fast, as Python 3.12's ``_pylong`` does.  Both take well under a second for
a million digits.

>>> int_from_digits("12" * 3000) % 10**4, len(int_to_digits(7**20000))
(1212, 16902)
"""

from __future__ import annotations

import decimal

__all__ = ["int_from_digits", "int_to_digits", "SHORT_DIGITS"]

# Digits per piece given to int(): below any limit Python lets a user set.
SHORT_DIGITS = 600
# Bits of an int that str() writes on its own: 1900 bits are < 10**572.
_STR_BITS = 1900
# Bits of an int that Decimal() converts on its own (no digit limit applies).
_DECIMAL_BITS = 4000


def int_from_digits(digits: str) -> int:
    """The non-negative int written by the decimal digits ``digits`` (no
    sign, no underscores, not empty), whatever their number.

    >>> int_from_digits("0042")
    42
    """
    if len(digits) <= SHORT_DIGITS:
        return int(digits)
    powers: dict[int, int] = {}

    def read(start: int, stop: int) -> int:
        if stop - start <= SHORT_DIGITS:
            return int(digits[start:stop])
        low = (stop - start) // 2
        scale = powers.get(low)
        if scale is None:
            scale = powers[low] = 10 ** low
        return read(start, stop - low) * scale + read(stop - low, stop)

    return read(0, len(digits))


def int_to_digits(n: int) -> str:
    """The decimal digits of the non-negative int ``n``, whatever their
    number.

    >>> int_to_digits(0), int_to_digits(10**700)[:3], len(int_to_digits(10**700))
    ('0', '100', 701)
    """
    if n.bit_length() <= _STR_BITS:
        return str(n)
    # Exact integer arithmetic: no precision or exponent limit is reached,
    # and Inexact is trapped should anything round all the same.
    ctx = decimal.Context(prec=decimal.MAX_PREC, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN,
                          traps=[decimal.Inexact, decimal.InvalidOperation])
    powers: dict[int, decimal.Decimal] = {}

    def power(w: int) -> decimal.Decimal:  # 2**w as a Decimal
        p = powers.get(w)
        if p is None:
            if w <= _DECIMAL_BITS:
                p = decimal.Decimal(1 << w)
            else:
                p = ctx.multiply(power(w >> 1), power(w - (w >> 1)))
            powers[w] = p
        return p

    def write(x: int, w: int) -> decimal.Decimal:  # x < 2**w
        if w <= _DECIMAL_BITS:
            return decimal.Decimal(x)
        low = w >> 1
        high = x >> low
        return ctx.add(ctx.multiply(write(high, w - low), power(low)),
                       write(x - (high << low), low))

    return str(write(n, n.bit_length()))
