"""Hostile input, rule 2: exact means exact for every magnitude.

Values far beyond a format's range, spelled every way a string, Decimal,
rational or int can spell them, round to the result IEEE 754 and the OCP
specs give for overflow or underflow (derived by hand below from each
format's encoding); long decimal strings are read exactly (oracles: Python's
correctly rounded ``float()`` and MPFR); numpy 0-d arrays are read in their
own byte order (oracle: numpy in native order); comparisons of a Float with
Python numbers are exact (oracles: Python's own exact comparisons of floats,
ints, Fractions and Decimals)."""

from __future__ import annotations

import math
import struct
import sys
from decimal import Decimal
from fractions import Fraction

import gmpy2
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fpsim
from fpsim import Flag

OVERFLOW, UNDERFLOW, INEXACT, INVALID = Flag.OVERFLOW, Flag.UNDERFLOW, Flag.INEXACT, Flag.INVALID
MODES = ["rne", "rna", "rtz", "rup", "rdn", "rto", "sr"]


# -- what a value beyond a format's range becomes, by hand ----------------------------

class Codes:
    """A format's special codes, written down from its encoding: ``inf``
    (None without one), ``max`` (largest finite magnitude), ``nan`` (the
    quiet NaN an overflow produces, by sign), ``sign`` (the sign bit, 0 if
    unsigned), ``neg_zero`` (-0's code, 0 where there is none), ``low``
    (the smallest magnitude: 1, the smallest subnormal or E8M0's 2**-127 at 0)."""

    def __init__(self, fmt, inf, max_, nan, sign, neg_zero, low=1, zero=True):
        self.fmt, self.inf, self.max, self.nan = fmt, inf, max_, nan
        self.sign, self.neg_zero, self.low, self.zero = sign, neg_zero, low, zero


def ieee(fmt, e, m):
    # IEEE 754 binary layout: exponent all ones is inf (fraction 0) or NaN;
    # the default quiet NaN has the top fraction bit; the sign bit is on top.
    inf = ((1 << e) - 1) << m
    quiet = inf | (1 << (m - 1))
    sign = 1 << (e + m)
    return Codes(fmt, inf, inf - 1, {False: quiet, True: quiet | sign}, sign, sign)


E8M0 = fpsim.format("e8m0")
WIDEST = fpsim.Format("widest_low", 20, 4096, (1 << 20) - 1)   # emin = 2 - 2**20
WIDEST_HIGH = fpsim.Format("widest_high", 20, 4096, 0)         # emax = 2**20 - 2

BUILT_IN = [
    ieee(fpsim.FP16, 5, 10), ieee(fpsim.FP32, 8, 23), ieee(fpsim.FP64, 11, 52),
    ieee(fpsim.BF16, 8, 7), ieee(fpsim.format("e5m2"), 5, 2),
    # OCP E4M3 (FN): no infinity, S.1111.111 is NaN, max S.1111.110 = 448
    Codes(fpsim.E4M3, None, 0x7E, {False: 0x7F, True: 0xFF}, 0x80, 0x80),
    # E4M3FNUZ: the single NaN is the "-0" code 0x80, max 0x7F, no -0
    Codes(fpsim.format("e4m3fnuz"), None, 0x7F, {False: 0x80, True: 0x80}, 0x80, 0x00),
    # OCP E2M1: no infinity, no NaN: max 0b0111 = 6
    Codes(fpsim.format("e2m1"), None, 0x7, {False: None, True: None}, 0x8, 0x8),
    # OCP E8M0: unsigned, no zero; 0xFF is NaN, 0xFE = 2**127, 0x00 = 2**-127
    Codes(E8M0, None, 0xFE, {False: 0xFF, True: 0xFF}, 0, 0, low=0, zero=False),
]
WIDE = [ieee(WIDEST, 20, 4096), ieee(WIDEST_HIGH, 20, 4096)]


def expected_huge(c, negative, mode, saturate=False, ftz=False):
    """(code, flags) of a value beyond every finite value of the format."""
    if negative and not c.sign:
        return c.nan[True], INVALID  # a negative value in an unsigned format
    sign = c.sign if negative else 0
    # Round to nearest (and SR, whatever its random bits) overflow to
    # infinity; a directed mode toward the value's side does too; the others
    # stop at max.  Without infinity the result is NaN, and max without NaN.
    toward = {"rup": not negative, "rdn": negative}.get(mode, mode in ("rne", "rna", "sr"))
    if saturate or not toward:
        return sign | c.max, OVERFLOW | INEXACT
    if c.inf is not None:
        return sign | c.inf, OVERFLOW | INEXACT
    if c.nan[negative] is not None:
        return c.nan[negative], OVERFLOW | INEXACT
    return sign | c.max, OVERFLOW | INEXACT


def expected_tiny(c, negative, mode, saturate=False, ftz=False):
    """(code, flags) of a nonzero value below 2**-70 of the smallest
    magnitude (so below it for stochastic rounding's 64 random bits too)."""
    if negative and not c.sign:
        return c.nan[True], INVALID
    if not c.zero:
        return c.low, UNDERFLOW | INEXACT  # no zero: the smallest magnitude
    away = {"rup": not negative, "rdn": negative, "rto": True}.get(mode, False)
    if away and not ftz:
        return (c.sign if negative else 0) | c.low, UNDERFLOW | INEXACT
    return (c.neg_zero if negative else 0), UNDERFLOW | INEXACT


def rounded(fmt, x, mode, **kw):
    ctx = fpsim.Context()
    if mode == "sr":
        # the largest random number: it would round up anything that can be
        kw["random_bits"] = (1 << kw.get("sr_bits", 32)) - 1
    r = fmt.round(x, ctx, rounding=mode, **kw)
    return r.bits, ctx.flags


# -- spellings of a value ±digits × 10**exp and ±digits × 2**exp ----------------------

@st.composite
def decimal_spelling(draw, digits, exp10, negative):
    """A decimal string worth ±int(digits) × 10**exp10, spelled with a
    point anywhere, leading and trailing zeros, and valid underscores."""
    lead = "0" * draw(st.integers(0, 3))
    trail = "0" * draw(st.integers(0, 3))
    body = lead + digits + trail
    e = exp10 - len(trail)  # value = int(body) × 10**e
    point = draw(st.integers(0, len(body)))
    if draw(st.booleans()):
        text = body[:point] + "." + body[point:]
        e += len(body) - point
    else:
        text = body
    if draw(st.booleans()) and len(text) > 2 and text[1].isdigit() and text[0].isdigit():
        text = text[0] + "_" + text[1:]
    sign = "-" if negative else draw(st.sampled_from(["", "+"]))
    return f"{sign}{text}{draw(st.sampled_from(['e', 'E']))}{e:+d}"


@st.composite
def far_input(draw, low):
    """(input, negative, huge) for a value whose decimal exponent's size is
    at least ``low``, as a decimal string, Decimal, hex string or rational."""
    negative = draw(st.booleans())
    huge = draw(st.booleans())
    size = draw(st.one_of(st.integers(low, low + 5000), st.integers(low, 2 * 10**6),
                          st.integers(10**6, 10**30)))
    digits = draw(st.from_regex(r"[1-9][0-9]{0,30}", fullmatch=True))
    kind = draw(st.sampled_from(["decimal", "Decimal", "hex", "rational"]))
    if kind == "hex":
        # 16**k with |log10| = size: 4k bits
        bits = math.ceil(size / math.log10(2)) + 8
        hexdigits = draw(st.from_regex(r"[1-9a-f][0-9a-f]{0,20}", fullmatch=True))
        frac = len(hexdigits) - draw(st.integers(0, len(hexdigits)))
        # value = int(hexdigits, 16) × 16**-frac × 2**p, kept on the side asked
        p = (bits + 4 * frac) if huge else -(bits + 4 * len(hexdigits))
        text = hexdigits[:len(hexdigits) - frac] + ("." + hexdigits[len(hexdigits) - frac:]
                                                    if frac else "")
        return f"{'-' if negative else ''}0x{text}p{p:+d}", negative, huge
    if kind == "rational":
        if size > 3 * 10**6:  # a rational spells its magnitude with zeros: keep it in memory
            size = size % (3 * 10**6) + low
        zeros = "0" * size
        num, den = (digits + zeros, "1") if huge else (digits, digits + zeros + "0" * len(digits))
        return f"{'-' if negative else ''}{num}/{den}", negative, huge
    # ±digits × 10**e with the leading digit at 10**(±size)
    e = size if huge else -(size + len(digits))
    text = draw(decimal_spelling(digits, e, negative))
    return (Decimal(text) if kind == "Decimal" and size < 10**17 else text), negative, huge


@settings(max_examples=120)
@given(far_input(low=400), st.sampled_from(BUILT_IN), st.sampled_from(MODES),
       st.booleans(), st.booleans())
def test_values_beyond_every_built_in_format(case, codes, mode, saturate, ftz):
    # 10**±400 lies beyond FP64's range (max ~1.8e308, min subnormal ~4.9e-324)
    x, negative, huge = case
    kw = {"saturate": saturate, "ftz": ftz}
    expect = (expected_huge if huge else expected_tiny)(codes, negative, mode, **kw)
    assert rounded(codes.fmt, x, mode, **kw) == expect, x if len(str(x)) < 80 else str(x)[:80]


@settings(max_examples=40)
@given(far_input(low=320000), st.sampled_from(WIDE), st.sampled_from(MODES),
       st.integers(1, 64))
def test_values_beyond_the_widest_formats_any_sr_bits(case, codes, mode, sr_bits):
    # The widest formats fpsim can build (20 exponent bits, 4096 fraction
    # bits) lie inside 2**±(2**20 + 4096) ~ 10**±316900.
    x, negative, huge = case
    expect = (expected_huge if huge else expected_tiny)(codes, negative, mode)
    assert rounded(codes.fmt, x, mode, sr_bits=sr_bits) == expect


@pytest.mark.parametrize("mode", MODES)
def test_the_widest_format_just_beyond_its_range(mode):
    low, high = ieee(WIDEST, 20, 4096), ieee(WIDEST_HIGH, 20, 4096)
    # WIDEST's smallest subnormal is 2**(2 - 2**20 - 4096); 2**-70 of it and
    # anything smaller is tiny for every mode and 64 random bits.
    for p in (2 - 2**20 - 4096 - 70, -(2**21), -(10**12)):
        for negative in (False, True):
            text = f"{'-' if negative else ''}0x1p{p}"
            assert rounded(WIDEST, text, mode, sr_bits=64) == expected_tiny(low, negative, mode)
    # WIDEST_HIGH's max is below 2**(2**20 - 1)
    for p in (2**20 - 1, 2**20, 2**21, 10**12):
        for negative in (False, True):
            text = f"{'-' if negative else ''}0x1p{p}"
            assert rounded(WIDEST_HIGH, text, mode, sr_bits=64) == expected_huge(high, negative,
                                                                                mode)


def test_stochastic_rounding_still_sees_values_near_the_smallest_subnormal():
    # 2**-63 of WIDEST's smallest subnormal: the discarded fraction times
    # 2**64 is 2, so the largest random number (2**64 - 1) rounds it up.
    # A far stand-in must not swallow such values.
    p = 2 - 2**20 - 4096 - 63
    assert rounded(WIDEST, f"0x1p{p}", "sr", sr_bits=64) == (1, UNDERFLOW | INEXACT)
    assert rounded(WIDEST, f"0x1p{p - 3}", "sr", sr_bits=64) == (0, UNDERFLOW | INEXACT)


# -- the examples of issue 22, and their neighbours -------------------------------------

@pytest.mark.parametrize("text,huge", [
    ("0x1" + "0" * 524288, True),            # 2**2097152: huge, though its exponent is 0
    # 16**-524289 × 2**4194304 = 2**2097148: a tiny significand, a huge value
    ("0x0." + "0" * 524288 + "1p+4194304", True),
    ("0x0." + "0" * 600000 + "1", False),    # 16**-600001
    ("0." + "0" * 1000000 + "1e+999000", False),     # 10**-1001 ... below FP64
    ("1" + "0" * 400000, True),              # 10**400000 written out
    ("0." + "0" * 400000 + "1", False),
    ("1/1" + "0" * 400000, False),
    ("1" + "0" * 400000 + "/3", True),
    ("1e99999999999999999999999", True),     # beyond the decimal module's exponents
    ("-1e-99999999999999999999999", False),
    ("1e" + "9" * 5000, True),               # an exponent of 5000 digits
    ("1e-" + "0" * 5000 + "400", False),     # and one with 5000 leading zeros
])
def test_spellings_of_far_values(text, huge):
    negative = text.startswith("-")
    codes = BUILT_IN[0]
    expect = (expected_huge if huge else expected_tiny)(codes, negative, "rne")
    assert rounded(fpsim.FP16, text, "rne") == expect


@pytest.mark.parametrize("text,exponent", [
    ("0x0." + "0" * 600000 + "1p+2400000", -4),      # 16**-600001 × 2**2400000 = 2**-4
    ("0x1" + "0" * 262144 + "p-1048570", 6),         # 2**1048576 × 2**-1048570 = 64
    ("0x" + "0" * 100000 + "1.8p-3", None),          # leading zeros: 1.5 × 2**-3
])
def test_long_hex_floats_in_range_are_exact(text, exponent):
    expect = math.ldexp(1.0, exponent) if exponent is not None else 0.1875
    assert rounded(fpsim.FP64, text, "rne") == (struct.unpack("<Q", struct.pack("<d", expect))[0],
                                                Flag(0))


@pytest.mark.parametrize("text,value", [
    ("0." + "0" * 1000000 + "1e+1000000", 0.1),
    ("1" + "0" * 6000 + "e-6000", 1.0),
    ("25" + "0" * 5000 + "/1" + "0" * 5002, 0.25),
])
def test_long_spellings_of_ordinary_values(text, value):
    assert rounded(fpsim.FP64, text, "rne")[0] == struct.unpack("<Q", struct.pack("<d", value))[0]


# -- long decimal strings -------------------------------------------------------------

def f64_bits(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def mpfr_bits(text: str, precision: int, dtype) -> int:
    """The correctly rounded (nearest even) value of a decimal string with
    ``precision`` bits, by MPFR, as the bits of ``dtype`` (a normal value)."""
    with gmpy2.context(gmpy2.ieee(64), precision=precision, round=gmpy2.RoundToNearest):
        v = float(gmpy2.mpfr(text))  # exact: at most 53 bits
    return int(np.array(v, dtype).view(f"u{np.dtype(dtype).itemsize}"))


@settings(max_examples=25)
@given(st.integers(4300, 12000), st.integers(0, 2**32), st.integers(-36, 38))
def test_decimal_strings_beyond_pythons_int_limit_are_read_exactly(n, seed, exp10):
    rng = np.random.default_rng(seed)
    digits = str(rng.integers(1, 10)) + "".join(map(str, rng.integers(0, 10, n)))
    text = f"0.{digits}e{exp10}"  # in [10**(exp10 - 1), 10**exp10): FP32's normal range
    # float() is correctly rounded for any length (CPython's dtoa)
    assert rounded(fpsim.FP64, text, "rne")[0] == f64_bits(float(text))
    assert rounded(fpsim.FP32, text, "rne")[0] == mpfr_bits(text, 24, np.float32)
    if -3 <= exp10 <= 4:  # FP16's normal range
        assert rounded(fpsim.FP16, text, "rne")[0] == mpfr_bits(text, 11, np.float16)
        # and as a Decimal object
        assert rounded(fpsim.FP16, Decimal(text), "rne")[0] == mpfr_bits(text, 11, np.float16)


def test_long_rationals_are_read_exactly():
    p, q = "3" * 6000, "1" + "0" * 6000
    exact_value = gmpy2.mpq(gmpy2.mpz(p), gmpy2.mpz(q))
    with gmpy2.context(gmpy2.ieee(64)):
        expect = float(gmpy2.mpfr(exact_value))
    assert rounded(fpsim.FP64, f"{p}/{q}", "rne")[0] == f64_bits(expect)
    assert rounded(fpsim.FP64, f"-{p}/{q}", "rne")[0] == f64_bits(-expect)


def test_a_hundred_thousand_digits_read_quickly_and_exactly():
    import time
    text = "9" * 100000 + "e-100000"   # 1 - 10**-100000: rounds to 1 in FP64
    t = time.perf_counter()
    assert rounded(fpsim.FP64, text, "rne") == (f64_bits(1.0), INEXACT)
    assert rounded(fpsim.FP64, text, "rtz") == (f64_bits(1.0 - 2.0**-53), INEXACT)
    assert time.perf_counter() - t < 5  # about 0.05 s; Python's int() would refuse it


def test_python_int_limit_is_not_reached_even_when_lowered():
    old = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(640)  # the lowest a user may set
    try:
        text = "0." + "3" * 5000
        assert rounded(fpsim.FP64, text, "rne")[0] == f64_bits(float(text))
        assert str(fpsim.FP64.from_bits(1)).startswith("4.940656458412465441765687928682213723")
    finally:
        sys.set_int_max_str_digits(old)


@pytest.mark.parametrize("text", ["١٢٣", "１２.５e１", "٠" * 400000 + "1",
                                  "-" + "٠" * 400000 + "٣e-2", "1/" + "٠" * 400000 + "4",
                                  "١_٢"])
def test_digits_of_other_scripts_count_as_the_digits_they_are(text):
    # Python's float() reads any script's decimal digits; a leading Arabic-
    # Indic zero is a zero, not a digit that makes the value large.
    if "/" in text:
        expect = 0.25
    else:
        expect = float(text)
    assert rounded(fpsim.FP64, text, "rne")[0] == f64_bits(expect)


# -- underscores ----------------------------------------------------------------------

@settings(max_examples=400)
@given(st.text(alphabet="0123456789_.eE+-", min_size=1, max_size=10))
def test_underscores_are_accepted_exactly_where_python_floats_accept_them(text):
    # Python's float() follows PEP 515: single underscores between digits.
    try:
        expect = float(text)
    except ValueError:
        with pytest.raises(ValueError, match="accepted"):
            fpsim.FP64.round(text)
    else:
        assert rounded(fpsim.FP64, text, "rne")[0] == f64_bits(expect)


@pytest.mark.parametrize("text", ["_1_", "1__0", "1_", "_1", "0x_1", "0x1__0", "0x1_", "_0x1",
                                  "0_x1", "0x1_.8", "0x1._8", "0x1p_1", "0x1p1_", "0x1_p1",
                                  "1_/3", "1/_3", "_1/3", "1/3_", "in_f", "na_n", "1_e5",
                                  "1e_5", "1._5", "1_.5"])
def test_misplaced_underscores_are_refused(text):
    with pytest.raises(ValueError) as info:
        fpsim.FP16.round(text)
    msg = str(info.value)
    assert repr(text) in msg and "accepted" in msg


@pytest.mark.parametrize("text,value", [
    ("1_000", 1000.0), ("0x1_0", 16.0), ("0xa_b.8p1_0", (0xAB + 0.5) * 1024), ("1_0/4", 2.5),
    ("-1_0.2_5e0_1", -102.5), ("0x1p-1_0", 2.0**-10)])
def test_underscores_between_digits_are_accepted(text, value):
    assert rounded(fpsim.FP64, text, "rne") == (f64_bits(value), Flag(0))


# -- numpy 0-d arrays in either byte order ---------------------------------------------

VALUE_DTYPES = [np.float16, np.float32, np.float64, ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn,
                ml_dtypes.float8_e5m2, ml_dtypes.float8_e4m3fnuz, ml_dtypes.float8_e5m2fnuz]
INT_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]


def swapped(dtype):
    """The dtype in the byte order that is not this machine's."""
    return np.dtype(dtype).newbyteorder("S")


@settings(max_examples=300)
@given(st.sampled_from(VALUE_DTYPES), st.integers(0, 2**64 - 1))
def test_non_native_float_arrays_are_read_in_their_byte_order(dtype, raw):
    dtype = np.dtype(dtype)
    size = dtype.itemsize
    native = np.array(raw & ((1 << (8 * size)) - 1), f"u{size}").view(dtype)
    if np.isnan(native.astype(np.float64)):
        return  # a NaN's payload is the subject of tests/test_parse.py
    other = native.astype(swapped(dtype))
    assert not other.dtype.isnative and other.tobytes() == native.tobytes()[::-1]
    # The value in float64 is exact for all these types (numpy and
    # ml_dtypes decode it), and FP64 holds it exactly.
    value = float(native.astype(np.float64))
    assert rounded(fpsim.FP64, other, "rne") == (f64_bits(value), Flag(0))
    # Rounding into its own format gives back its own code.
    fmt = fpsim.format(dtype.name)
    code = int(native.view(f"u{size}"))
    assert rounded(fmt, other, "rne") == (code, Flag(0))


@settings(max_examples=200)
@given(st.sampled_from(INT_DTYPES), st.integers(-2**63, 2**64 - 1))
def test_non_native_integer_arrays_are_read_in_their_byte_order(dtype, value):
    info = np.iinfo(dtype)
    value = min(max(value, int(info.min)), int(info.max))
    other = np.array(value, dtype).astype(swapped(dtype))
    # Python's int -> float conversion rounds to nearest even, exactly once
    assert rounded(fpsim.FP64, other, "rne")[0] == f64_bits(float(value))


def test_the_issue_example_big_endian_float32():
    assert fpsim.FP32.round(np.array(1.5, ">f4")).bits == 0x3FC00000
    assert fpsim.FP32.round(np.array(1.5, "<f4")).bits == 0x3FC00000
    assert fpsim.FP16.round(np.array(-2.0, ">f2")).bits == 0xC000
    assert fpsim.BF16.round(np.array(1.5, ml_dtypes.bfloat16).astype(
        swapped(ml_dtypes.bfloat16))).bits == 0x3FC0


# -- comparisons ----------------------------------------------------------------------

def sign_of(c) -> int:
    return (c > 0) - (c < 0)


FP16_CODES = st.integers(0, 0xFFFF).filter(lambda c: (c & 0x7C00) != 0x7C00 or not c & 0x3FF)


@st.composite
def decimals(draw):
    digits = draw(st.from_regex(r"[0-9]{1,40}", fullmatch=True))
    exp = draw(st.one_of(st.integers(-40, 10), st.integers(-10**17, 10**17)))
    return Decimal(f"{draw(st.sampled_from(['', '-']))}{digits}e{exp}")


@settings(max_examples=300)
@given(FP16_CODES, decimals())
def test_comparisons_with_decimals_are_exact(code, d):
    x = fpsim.FP16.from_bits(code)
    # numpy decodes the code; Decimal(float) is exact, and Decimal
    # comparisons are exact at any exponent.
    mine = Decimal(float(np.array(code, np.uint16).view(np.float16)))
    expect = sign_of(mine.compare(d))
    assert ((x > d) - (x < d), x == d, x != d, x <= d, x >= d) == (
        expect, expect == 0, expect != 0, expect <= 0, expect >= 0)


@settings(max_examples=300)
@given(FP16_CODES, st.one_of(st.integers(-10**500, 10**500), st.integers(-70000, 70000),
                             st.fractions(), st.floats(allow_nan=False)))
def test_comparisons_with_ints_fractions_and_floats_are_exact(code, y):
    x = fpsim.FP16.from_bits(code)
    mine = float(np.array(code, np.uint16).view(np.float16))
    # Python compares float with int, Fraction and float exactly
    expect = (mine > y) - (mine < y)
    assert ((x > y) - (x < y), x == y) == (expect, expect == 0)


def test_the_issue_examples_of_comparisons():
    inf = fpsim.FP16.round("inf")
    assert not inf == Decimal("1e400") and inf != Decimal("1e400") and inf > Decimal("1e400")
    assert -inf < Decimal("-1e400")
    big = fpsim.FP64.round("0x1.fffffffffffffp1023")
    assert not big == 10**400 and big < 10**400 and big > -10**400
    assert fpsim.FP64.round(2.0**1000) == 2**1000
    assert fpsim.FP64.round(2.0**-1074) == Fraction(1, 2**1074)
    assert fpsim.FP64.round(2.0**-1074) > Decimal("1e-99999999")
    assert fpsim.FP16.round(0) < Decimal("1e-99999999")
    assert fpsim.FP16.round(-0.0) > Decimal("-1e-99999999")
    assert fpsim.FP16.round(0.5) < Decimal("0.5" + "0" * 5000 + "1")


def test_explain_reads_far_values_through_the_same_parser():
    from fpsim.explain import explain
    assert explain("0x1" + "0" * 524288, "fp16")["value"] == "inf"
    report = explain("1e-200000", "fp16")
    assert (report["bits"], report["input_value"]) == ("0x0000", "1e-200000")
