"""Reading inputs exactly: strings (decimal of any length, hex floats,
rationals, specials), Decimal, ints beyond float range, numpy and ml_dtypes
scalars (read through their bits).  Expected codes are derived by hand in the
comments."""

from __future__ import annotations

import struct
import subprocess
import sys
from decimal import Decimal
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

import fpsim
from fpsim import BF16, E4M3, E4M3FNUZ, E5M2, E5M2FNUZ, FP16, FP32, FP64, Flag

INEXACT, UNDERFLOW, OVERFLOW, INVALID = Flag.INEXACT, Flag.UNDERFLOW, Flag.OVERFLOW, Flag.INVALID


def rd(fmt, x, **kw):
    ctx = fpsim.Context()
    return fmt.round(x, ctx=ctx, **kw).bits, ctx.flags


def scalar(dtype, bits):
    """A numpy / ml_dtypes scalar with exactly the given bit pattern."""
    dtype = np.dtype(dtype)
    return np.array([bits], dtype=f"u{dtype.itemsize}").view(dtype)[0]


def py_float(bits):
    return struct.unpack("<d", struct.pack("<Q", bits))[0]


# -- decimal strings ------------------------------------------------------------

def test_a_decimal_string_is_read_exactly_not_through_float64():
    # 2**-11 = 0.00048828125, so 1.00048828125 is the midpoint between FP16 1
    # (0x3C00) and 1 + 2**-10 (0x3C01): a tie, to even -> 0x3C00.  A trailing
    # 1e-21 puts it above the midpoint -> 0x3C01.  Through float64 both strings
    # would be 1.00048828125 and give 0x3C00.
    assert rd(FP16, "1.000488281250000000001") == (0x3C01, INEXACT)
    assert rd(FP16, "1.00048828125") == (0x3C00, INEXACT)
    assert rd(FP16, "1.000488281249999999999") == (0x3C00, INEXACT)


def test_long_decimal_strings():
    # FP32 min_subnormal 2**-149 = 5**149 / 10**149 exactly: a 105-digit decimal
    assert rd(FP32, f"{5**149}e-149") == (0x00000001, Flag(0))
    # 2**-150 is the midpoint between 0 and 2**-149: ties to even, 0
    assert rd(FP32, f"{5**150}e-150") == (0x00000000, UNDERFLOW | INEXACT)
    # ... and a one in the 160th decimal place above it rounds up
    assert rd(FP32, f"{5**150 * 10**10 + 1}e-160") == (0x00000001, UNDERFLOW | INEXACT)
    # 1000 threes: just below 1/3.  FP16(1/3): 1/3 = 1.0101...b * 2**-2, the
    # 10 kept fraction bits 0101010101 (0x155) are followed by 0101... (< half):
    # exponent field -2 + 15 = 13 -> 0x3400 | 0x155 = 0x3555
    assert rd(FP16, "0." + "3" * 1000) == (0x3555, INEXACT)
    assert rd(FP16, "-0." + "3" * 1000) == (0xB555, INEXACT)
    # huge exponents are read exactly too
    assert rd(FP32, "1e-100000") == (0x00000000, UNDERFLOW | INEXACT)
    assert rd(FP32, "-1e-100000") == (0x80000000, UNDERFLOW | INEXACT)
    assert rd(FP32, "1e100000") == (0x7F800000, OVERFLOW | INEXACT)


def test_huge_decimal_exponents_are_read_in_bounded_time():
    # 1e1000000000 is plainly beyond every format and 1e-1000000000 below
    # them: the result must not require the exact 10**1000000000.  Run in a
    # subprocess so that a regression fails (after 10 s) instead of hanging.
    code = ("import fpsim, decimal;"
            "assert fpsim.FP16.round('1e1000000000').bits == 0x7C00;"
            "assert fpsim.FP16.round('-1e-1000000000').bits == 0x8000;"
            "assert fpsim.FP32.round(decimal.Decimal('1e-999999999')).bits == 0")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=10)


@pytest.mark.parametrize("text,bits", [
    ("1", 0x3C00), ("+1", 0x3C00), ("-2", 0xC000), ("1.5", 0x3E00), (".5", 0x3800),
    ("5.", 0x4500), ("1e0", 0x3C00), ("1E+1", 0x4900), ("  65504  ", 0x7BFF),
    ("1_000", 0x63D0),
    # 0.1 = 1.6 * 2**-4; 0.6 * 1024 = 614.4 -> fraction 614 = 0x266 (rounded down),
    # exponent field 11: 0x2C00 | 0x266
    ("0.1", 0x2E66),
    # 1e-5 / 2**-24 = 167.77216 -> subnormal 168 = 0xA8
    ("1e-5", 0x00A8), ("1.0e-05", 0x00A8),
])
def test_decimal_string_spellings(text, bits):
    # 5 = 1.25 * 2**2: 0x4400 | 0x100; 10 = 1.25 * 2**3: 0x4900;
    # 1000 = 1.953125 * 2**9: exponent field 24 (0x6000), fraction 0.953125 * 1024 = 976 = 0x3D0
    assert FP16.round(text).bits == bits


# -- hex floats ---------------------------------------------------------------

@pytest.mark.parametrize("text,fmt,bits,flags", [
    # 0x1.ffc = 1 + 0xffc/0x1000 = 8188/4096; * 2**15 = 65504 = FP16 max
    ("0x1.ffcp15", FP16, 0x7BFF, Flag(0)),
    # -2**-24 = -min_subnormal
    ("-0x1p-24", FP16, 0x8001, Flag(0)),
    # 0x.8 = 1/2; * 2**1 = 1
    ("0x.8p1", FP16, 0x3C00, Flag(0)),
    ("0X1P+0", FP16, 0x3C00, Flag(0)),
    ("0x1.p1", FP16, 0x4000, Flag(0)),
    ("0x1.8", FP16, 0x3E00, Flag(0)),
    # 0xABC = 2748 = 1374 * 2; 1374 - 1024 = 350 = 0x15E, exponent 11 + 15 = 26: 0x6800
    ("0xAbC", FP16, 0x695E, Flag(0)),
    # 0x1.ffe * 2**15 = 65520: the midpoint to 65536, ties to even -> overflow
    ("0x1.ffep15", FP16, 0x7C00, OVERFLOW | INEXACT),
    # 0x1.ffd * 2**15 = 65512: below the midpoint -> 65504
    ("0x1.ffdp15", FP16, 0x7BFF, INEXACT),
    # 2**-25: midpoint between 0 and min_subnormal, ties to even -> 0
    ("0x1p-25", FP16, 0x0000, UNDERFLOW | INEXACT),
    # 1.5 * 2**-24: midpoint between 1 and 2 subnormal quanta -> 2 (even)
    ("0x1.8p-24", FP16, 0x0002, UNDERFLOW | INEXACT),
    ("-0x0p0", FP16, 0x8000, Flag(0)),
    # FP32 max = 0x1.fffffep127
    ("0x1.fffffep127", FP32, 0x7F7FFFFF, Flag(0)),
    ("0x1p-149", FP32, 0x00000001, Flag(0)),
    # 1 + 2**-24: the midpoint after 1.0 in FP32 -> even, 1.0
    ("0x1.000001p0", FP32, 0x3F800000, INEXACT),
    # 1 + 2**-24 + 2**-28: above it -> 1 + 2**-23
    ("0x1.0000011p0", FP32, 0x3F800001, INEXACT),
    # a hex float with more digits than any double: 2**-1 + 2**-101 rounds to 0.5 in FP64
    ("0x0.8" + "0" * 24 + "1p0", FP64, 0x3FE0000000000000, INEXACT),
])
def test_hex_floats(text, fmt, bits, flags):
    assert rd(fmt, text) == (bits, flags)


# -- rationals ----------------------------------------------------------------

@pytest.mark.parametrize("text,bits", [
    ("1/3", 0x3555), ("-1/3", 0xB555), ("+1/3", 0x3555), ("6/18", 0x3555), (" 1/3 ", 0x3555),
    # 2/3 = 1.0101...b * 2**-1: fraction 0x155, exponent field 14 -> 0x3800 | 0x155; the
    # discarded bits 0101... < half
    ("2/3", 0x3955),
    # 1/1024 = 2**-10: exponent field 5 -> 0x1400
    ("1/1024", 0x1400),
    ("-0/1", 0x8000),
])
def test_rationals(text, bits):
    assert FP16.round(text).bits == bits


# -- special strings ------------------------------------------------------------

@pytest.mark.parametrize("text,fmt,bits", [
    ("inf", FP16, 0x7C00), ("INF", FP16, 0x7C00), ("+Infinity", FP16, 0x7C00),
    ("-Infinity", FP16, 0xFC00), ("-inf", FP32, 0xFF800000), ("infinity", BF16, 0x7F80),
    ("inf", E5M2, 0x7C),
    # default quiet NaN: all-ones exponent, quiet (top fraction) bit set
    ("nan", FP16, 0x7E00), ("NaN", FP32, 0x7FC00000), ("-nan", FP16, 0xFE00),
    ("qnan", BF16, 0x7FC0), ("nan", E5M2, 0x7E), ("-nan", E5M2, 0xFE),
    # signaling NaN: all-ones exponent, quiet bit clear, lowest payload bit set
    ("snan", FP16, 0x7C01), ("sNaN", FP32, 0x7F800001), ("-snan", FP16, 0xFC01),
    ("snan", BF16, 0x7F81), ("snan", E5M2, 0x7D), ("snan", FP64, 0x7FF0000000000001),
    # E4M3 has the single NaN S.1111.111, FNUZ the single NaN 0x80
    ("nan", E4M3, 0x7F), ("-nan", E4M3, 0xFF), ("nan", E4M3FNUZ, 0x80), ("-nan", E5M2FNUZ, 0x80),
])
def test_special_strings(text, fmt, bits):
    ctx = fpsim.Context()
    x = fmt.round(text, ctx=ctx)
    assert x.bits == bits
    assert ctx.flags == Flag(0)  # reading a NaN or inf literal is not an exception


def test_snan_string_gives_a_signaling_nan():
    x = FP16.round("snan")
    assert x.is_nan and x.is_signaling


@pytest.mark.parametrize("fmt", [E4M3, E4M3FNUZ, E5M2FNUZ], ids=lambda f: f.name)
def test_snan_string_needs_an_ieee_style_format(fmt):
    with pytest.raises(ValueError, match="has no signaling NaN"):
        fmt.round("snan")
    with pytest.raises(ValueError, match="has no signaling NaN"):
        fmt.round("-sNaN")


# -- Decimal ------------------------------------------------------------------

@pytest.mark.parametrize("d,bits,flags", [
    (Decimal("0.1"), 0x2E66, INEXACT),
    (Decimal("1e-5"), 0x00A8, UNDERFLOW | INEXACT),
    (Decimal("65504"), 0x7BFF, Flag(0)),
    (Decimal("1E+5"), 0x7C00, OVERFLOW | INEXACT),
    # more digits than Decimal's default 28-digit context: still exact
    (Decimal("1.000488281250000000000000000000000001"), 0x3C01, INEXACT),
    (Decimal("NaN"), 0x7E00, Flag(0)),
    (Decimal("-NaN"), 0xFE00, Flag(0)),
    (Decimal("Infinity"), 0x7C00, Flag(0)),
    (Decimal("-Infinity"), 0xFC00, Flag(0)),
    (Decimal("-0"), 0x8000, Flag(0)),
    (Decimal("-0E-10"), 0x8000, Flag(0)),
    (Decimal("0"), 0x0000, Flag(0)),
])
def test_decimal_inputs(d, bits, flags):
    assert rd(FP16, d) == (bits, flags)


def test_decimal_nan_into_single_nan_formats():
    assert FP16.round(Decimal("NaN")).is_quiet_nan
    assert E4M3.round(Decimal("NaN")).bits == 0x7F
    assert E4M3.round(Decimal("-NaN")).bits == 0xFF
    assert E4M3FNUZ.round(Decimal("-NaN")).bits == 0x80


# -- ints ---------------------------------------------------------------------

def test_ints_beyond_float_range():
    assert rd(FP32, 2**1000) == (0x7F800000, OVERFLOW | INEXACT)
    assert rd(FP32, -(2**1000)) == (0xFF800000, OVERFLOW | INEXACT)
    assert rd(FP32, 2**1000, rounding="rtz") == (0x7F7FFFFF, OVERFLOW | INEXACT)
    # 2**1000 is exact in FP64: exponent field 1000 + 1023 = 2023 = 0x7E7
    assert rd(FP64, 2**1000) == (0x7E70000000000000, Flag(0))
    # FP64 max = 2**1024 - 2**971 (odd significand); the midpoint to 2**1024 is
    # 2**1024 - 2**970: a tie, to even -> 2**1024 -> overflow.  One less -> max.
    assert rd(FP64, 2**1024 - 2**970) == (0x7FF0000000000000, OVERFLOW | INEXACT)
    assert rd(FP64, 2**1024 - 2**970 - 1) == (0x7FEFFFFFFFFFFFFF, INEXACT)
    assert rd(FP64, 2**1024) == (0x7FF0000000000000, OVERFLOW | INEXACT)


def test_ints_are_rounded_exactly():
    # 2**24 + 1: midpoint of 2**24 and 2**24 + 2 in FP32 -> even 2**24 = 0x4B800000
    assert rd(FP32, 2**24 + 1) == (0x4B800000, INEXACT)
    # 2**24 + 3: midpoint of 2**24 + 2 (odd significand) and 2**24 + 4 -> 0x4B800002
    assert rd(FP32, 2**24 + 3) == (0x4B800002, INEXACT)
    # 2**53 + 1 in FP64: tie -> 2**53 (exponent field 53 + 1023 = 0x434)
    assert rd(FP64, 2**53 + 1) == (0x4340000000000000, INEXACT)
    assert rd(FP16, True) == (0x3C00, Flag(0))
    assert rd(FP16, np.int64(-7)) == (0xC700, Flag(0))  # 7 = 1.75 * 2**2: 0x4700
    assert rd(FP64, np.uint64(2**64 - 1)) == (0x43F0000000000000, INEXACT)  # -> 2**64


# -- Python floats --------------------------------------------------------------

def test_python_floats_are_read_through_their_bits():
    # the well-known float32 of the double 0.1
    assert rd(FP32, 0.1) == (0x3DCCCCCD, INEXACT)
    # a double NaN's payload is kept left-aligned: 51 payload bits -> 22 for FP32,
    # so payload 2**29 becomes 1
    assert rd(FP32, py_float(0x7FF8000020000000)) == (0x7FC00001, Flag(0))
    assert rd(FP32, py_float(0xFFF8000000000000)) == (0xFFC00000, Flag(0))
    # a signaling double NaN (quiet bit clear, payload bit 50 set) -> quiet, payload
    # bit 21 kept, INVALID
    assert rd(FP32, py_float(0x7FF4000000000000)) == (0x7FE00000, INVALID)


# -- numpy and ml_dtypes scalars ----------------------------------------------

def test_numpy_scalars_are_read_through_their_bits():
    # FP16 0x2E66 = 0.0999755859375 widens exactly: fraction 0x266 << 13 = 0x4CC000,
    # exponent -4 + 127 = 123 -> 0x3D800000
    assert rd(FP32, scalar(np.float16, 0x2E66)) == (0x3DCCC000, Flag(0))
    assert rd(FP16, scalar(np.float32, 0x3DCCC000)) == (0x2E66, Flag(0))
    assert rd(FP32, scalar(np.float64, 0x3FB999999999999A)) == (0x3DCCCCCD, INEXACT)
    assert rd(FP16, scalar(np.float16, 0x8000)) == (0x8000, Flag(0))


def test_numpy_nan_payloads_are_preserved():
    # FP16 payload (9 bits below the quiet bit) 1 -> FP32 (22 bits): 1 << 13
    assert rd(FP32, scalar(np.float16, 0x7E01)) == (0x7FC02000, Flag(0))
    # signaling FP16 -0x7C01: quieted, sign and payload kept, INVALID
    assert rd(FP32, scalar(np.float16, 0xFC01)) == (0xFFC02000, INVALID)
    # FP32 sNaN 0x7F800001: payload 1 >> 13 = 0 -> default quiet NaN, INVALID
    assert rd(FP16, scalar(np.float32, 0x7F800001)) == (0x7E00, INVALID)
    # FP64 payload 2**29 -> FP32 payload 1
    assert rd(FP32, scalar(np.float64, 0x7FF8000020000000)) == (0x7FC00001, Flag(0))


def test_ml_dtypes_scalars_are_read_through_their_bits():
    # bfloat16 payload (6 bits) 1 -> FP32 1 << 16
    assert rd(FP32, scalar(ml_dtypes.bfloat16, 0x7FC1)) == (0x7FC10000, Flag(0))
    # bfloat16 0x3F81 = 1 + 2**-7 exactly
    assert rd(FP32, scalar(ml_dtypes.bfloat16, 0x3F81)) == (0x3F810000, Flag(0))
    # E4M3 448 = 0x7E -> FP16 448 = 1.75 * 2**8: exponent 23 (0x5C00) | 0x300
    assert rd(FP16, scalar(ml_dtypes.float8_e4m3fn, 0x7E)) == (0x5F00, Flag(0))
    # E4M3's single NaN carries no payload: default NaN of the sign
    assert rd(FP16, scalar(ml_dtypes.float8_e4m3fn, 0x7F)) == (0x7E00, Flag(0))
    assert rd(FP16, scalar(ml_dtypes.float8_e4m3fn, 0xFF)) == (0xFE00, Flag(0))
    # E5M2 0x7D = S.11111.01: signaling (quiet bit clear), payload 1 (1 bit)
    # -> FP16 payload 1 << 8: 0x7E00 | 0x100, INVALID
    assert rd(FP16, scalar(ml_dtypes.float8_e5m2, 0x7D)) == (0x7F00, INVALID)
    assert rd(FP16, scalar(ml_dtypes.float8_e5m2, 0x7F)) == (0x7F00, Flag(0))
    # FNUZ's NaN is the "-0" code 0x80; its sign bit is kept (ml_dtypes also
    # converts it to a negative NaN)
    assert rd(FP16, scalar(ml_dtypes.float8_e4m3fnuz, 0x80)) == (0xFE00, Flag(0))
    assert rd(FP16, scalar(ml_dtypes.float8_e5m2fnuz, 0x80)) == (0xFE00, Flag(0))
    # E5M2FNUZ min_subnormal 2**-17 = 0x01 -> FP32 exponent -17 + 127 = 110
    assert rd(FP32, scalar(ml_dtypes.float8_e5m2fnuz, 0x01)) == (110 << 23, Flag(0))


def test_daz_applies_to_numpy_and_ml_dtypes_scalars():
    assert rd(FP32, scalar(np.float16, 0x0001), daz=True) == (0x00000000, Flag(0))
    assert rd(FP32, scalar(np.float16, 0x8001), daz=True) == (0x80000000, Flag(0))
    assert rd(FP16, scalar(np.float32, 0x00000001), daz=True) == (0x0000, Flag(0))
    assert rd(FP64, scalar(np.float64, 0x0000000000000001), daz=True) == (0, Flag(0))
    assert rd(FP16, scalar(ml_dtypes.float8_e4m3fn, 0x81), daz=True) == (0x8000, Flag(0))
    assert rd(FP16, scalar(ml_dtypes.bfloat16, 0x0001), daz=True) == (0x0000, Flag(0))
    # without daz: E4M3 0x01 = 2**-9 is a normal FP16: exponent -9 + 15 = 6 -> 0x1800
    assert rd(FP16, scalar(ml_dtypes.float8_e4m3fn, 0x01)) == (0x1800, Flag(0))


def test_daz_applies_to_python_floats_but_not_to_exact_inputs():
    # A Python float is a binary64 operand: its subnormals are zeros under daz
    # (5e-324 is the binary64 min_subnormal, code 1)
    assert rd(FP64, 5e-324, daz=True) == (0x0000000000000000, Flag(0))
    assert rd(FP64, -5e-324, daz=True) == (0x8000000000000000, Flag(0))
    assert rd(FP64, 5e-324, daz=False) == (0x0000000000000001, Flag(0))
    # 2.2250738585072014e-308 is binary64's min_normal: not flushed
    assert rd(FP64, 2.2250738585072014e-308, daz=True) == (0x0010000000000000, Flag(0))
    # decimal and rational inputs are exact numbers, not binary operands
    assert rd(FP64, Fraction(1, 2**1074), daz=True) == (0x0000000000000001, Flag(0))
    assert rd(FP64, "0x1p-1074", daz=True) == (0x0000000000000001, Flag(0))
    assert rd(FP16, "5.9604644775390625e-08", daz=True) == (0x0001, Flag(0))  # 2**-24


# -- negative zero --------------------------------------------------------------

@pytest.mark.parametrize("x", ["-0", "-0.0", "-0e5", "-0x0p0", -0.0, Decimal("-0"),
                               np.float32(-0.0), np.float16(-0.0)],
                         ids=repr)
def test_negative_zero_inputs(x):
    assert rd(FP16, x) == (0x8000, Flag(0))
    assert rd(FP32, x) == (0x80000000, Flag(0))
    assert rd(E4M3, x) == (0x80, Flag(0))
    # FNUZ has no -0: +0
    assert rd(E4M3FNUZ, x) == (0x00, Flag(0))


@pytest.mark.parametrize("x", ["0", "+0", "0.0", 0, 0.0, Fraction(0), Decimal("0")], ids=repr)
def test_positive_zero_inputs(x):
    assert rd(FP16, x) == (0x0000, Flag(0))
