"""Hand-derived limits of every built-in format, format lookup, and the
:class:`fpsim.Float` API (repr, classification, fields, hex, ulp,
nextUp/nextDown, equality, immutability, pickling)."""

from __future__ import annotations

import copy
import dataclasses
import math
import pickle
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

import fpsim
from fpsim import BF16, E4M3, E4M3FNUZ, E5M2, E5M2FNUZ, FP16, FP32, FP64, TF32, FloatClass, Format

from oracle import spec_of


def p2(n: int) -> Fraction:
    return Fraction(2) ** n


# -- limits ---------------------------------------------------------------------

@dataclasses.dataclass
class Limits:
    fmt: Format
    width: int
    exponent_bits: int
    mantissa_bits: int
    bias: int
    precision: int
    emax: int
    emin: int
    max: Fraction
    min_normal: Fraction
    min_subnormal: Fraction
    eps: Fraction
    max_code: int
    inf_code: int | None
    nan_code: int
    has_negative_zero: bool


# Derivations: precision p = mantissa_bits + 1; emin = 1 - bias; eps = 2**(1 - p);
# min_subnormal = 2**(emin - mantissa_bits).  IEEE-style: the top exponent field
# is reserved, emax = bias, max = (2**p - 1) * 2**(emax - p + 1); the infinity is
# the top exponent with fraction 0 and the default NaN also sets the top fraction
# bit.  OCP E4M3 (FN): only S.1111.111 is NaN, so the top binade (exponent
# field 15, emax = 15 - 7 = 8) holds 1.000..1.110: max = 1.75 * 2**8 = 448.
# FNUZ: every positive code is finite, the largest is 0x7F: E4M3FNUZ
# 1.875 * 2**(15 - 8) = 240, E5M2FNUZ 1.75 * 2**(31 - 16) = 57344; the NaN is 0x80.
LIMITS = [
    Limits(FP64, 64, 11, 52, 1023, 53, 1023, -1022, (2**53 - 1) * p2(971), p2(-1022),
           p2(-1074), p2(-52), 0x7FEFFFFFFFFFFFFF, 0x7FF0000000000000, 0x7FF8000000000000,
           True),
    Limits(FP32, 32, 8, 23, 127, 24, 127, -126, (2**24 - 1) * p2(104), p2(-126), p2(-149),
           p2(-23), 0x7F7FFFFF, 0x7F800000, 0x7FC00000, True),
    # TF32: 1 + 8 + 10 bits; inf = 0xFF << 10, NaN also sets bit 9
    Limits(TF32, 19, 8, 10, 127, 11, 127, -126, (2**11 - 1) * p2(117), p2(-126), p2(-136),
           p2(-10), 0x3FBFF, 0x3FC00, 0x3FE00, True),
    Limits(FP16, 16, 5, 10, 15, 11, 15, -14, Fraction(65504), p2(-14), p2(-24), p2(-10),
           0x7BFF, 0x7C00, 0x7E00, True),
    Limits(BF16, 16, 8, 7, 127, 8, 127, -126, 255 * p2(120), p2(-126), p2(-133), p2(-7),
           0x7F7F, 0x7F80, 0x7FC0, True),
    Limits(E4M3, 8, 4, 3, 7, 4, 8, -6, Fraction(448), p2(-6), p2(-9), p2(-3),
           0x7E, None, 0x7F, True),
    Limits(E5M2, 8, 5, 2, 15, 3, 15, -14, Fraction(57344), p2(-14), p2(-16), p2(-2),
           0x7B, 0x7C, 0x7E, True),
    Limits(E4M3FNUZ, 8, 4, 3, 8, 4, 7, -7, Fraction(240), p2(-7), p2(-10), p2(-3),
           0x7F, None, 0x80, False),
    Limits(E5M2FNUZ, 8, 5, 2, 16, 3, 15, -15, Fraction(57344), p2(-15), p2(-17), p2(-2),
           0x7F, None, 0x80, False),
    # ml_dtypes' float8_e3m4 and float8_e4m3: IEEE-style (top exponent field
    # reserved): E3M4 max 1.9375 × 2**(6 - 3) = 15.5, E4M3 1.875 × 2**(14 - 7)
    # = 240.  float8_e4m3b11fnuz: FNUZ with bias 11, max 1.875 × 2**(15 - 11) = 30.
    Limits(fpsim.format("float8_e3m4"), 8, 3, 4, 3, 5, 3, -2, Fraction(31, 2), p2(-2),
           p2(-6), p2(-4), 0x6F, 0x70, 0x78, True),
    Limits(fpsim.format("float8_e4m3"), 8, 4, 3, 7, 4, 7, -6, Fraction(240), p2(-6), p2(-9),
           p2(-3), 0x77, 0x78, 0x7C, True),
    Limits(fpsim.format("float8_e4m3b11fnuz"), 8, 4, 3, 11, 4, 4, -10, Fraction(30), p2(-10),
           p2(-13), p2(-3), 0x7F, None, 0x80, False),
]
by_limits = pytest.mark.parametrize("lim", LIMITS, ids=[lim.fmt.name for lim in LIMITS])


@by_limits
def test_format_parameters_and_limits(lim):
    f = lim.fmt
    assert (f.width, f.exponent_bits, f.mantissa_bits, f.bias) == \
        (lim.width, lim.exponent_bits, lim.mantissa_bits, lim.bias)
    assert (f.precision, f.emax, f.emin) == (lim.precision, lim.emax, lim.emin)
    assert (f.max, f.min_normal, f.min_subnormal, f.eps) == \
        (lim.max, lim.min_normal, lim.min_subnormal, lim.eps)
    assert f.eps == p2(1 - lim.precision)
    assert f.max_code == lim.max_code
    assert f.has_inf == (lim.inf_code is not None)
    assert f.inf_code == lim.inf_code
    assert f.has_nan is True
    assert f.default_nan_code == lim.nan_code
    assert f.has_zero is True
    assert f.has_negative_zero == lim.has_negative_zero


@by_limits
def test_limits_are_the_values_of_their_codes(lim):
    f = lim.fmt
    assert f.from_bits(lim.max_code).value == lim.max
    assert f.from_bits(1).value == lim.min_subnormal
    assert f.from_bits(1 << lim.mantissa_bits).value == lim.min_normal
    assert f.round(1).next_up().value - 1 == lim.eps
    assert f.from_bits(lim.max_code).next_down().value < lim.max
    assert f.from_bits(lim.nan_code).is_quiet_nan
    if lim.inf_code is not None:
        assert f.from_bits(lim.inf_code).is_inf
        assert f.from_bits(lim.max_code + 1).is_inf


ML_DTYPES = [
    (FP64, np.float64), (FP32, np.float32), (FP16, np.float16), (BF16, ml_dtypes.bfloat16),
    (E4M3, ml_dtypes.float8_e4m3fn), (E5M2, ml_dtypes.float8_e5m2),
    (E4M3FNUZ, ml_dtypes.float8_e4m3fnuz), (E5M2FNUZ, ml_dtypes.float8_e5m2fnuz),
    (fpsim.format("e3m4"), ml_dtypes.float8_e3m4),
    (fpsim.format("e4m3ieee"), ml_dtypes.float8_e4m3),
    (fpsim.format("e4m3b11fnuz"), ml_dtypes.float8_e4m3b11fnuz),
]


@pytest.mark.parametrize("fmt,dtype", ML_DTYPES, ids=[f.name for f, _ in ML_DTYPES])
def test_limits_agree_with_ml_dtypes_finfo(fmt, dtype):
    fi = ml_dtypes.finfo(dtype)
    assert fi.bits == fmt.width
    assert fi.nmant == fmt.mantissa_bits
    assert fi.nexp == fmt.exponent_bits
    assert fi.minexp == fmt.emin
    assert fi.maxexp == fmt.emax + 1  # numpy's maxexp is one past the largest exponent
    assert Fraction(float(fi.max)) == fmt.max
    assert Fraction(float(fi.smallest_normal)) == fmt.min_normal
    assert Fraction(float(fi.smallest_subnormal)) == fmt.min_subnormal
    assert Fraction(float(fi.eps)) == fmt.eps


# OCP Microscaling Formats (MX) v1.0, §5.3 (element formats) and §5.4 (scale):
# FP6 E3M2 bias 3: max 1.75 × 2**(7 - 3) = 28, min normal 2**(1 - 3), min
# subnormal 0.25 × 2**-2 = 2**-4; FP6 E2M3 bias 1: max 1.875 × 2**2 = 7.5, min
# normal 1, min subnormal 0.125; FP4 E2M1 bias 1: max 1.5 × 2**2 = 6, min normal
# 1, min subnormal 0.5.  None has infinities or NaNs; all have -0.  E8M0: an
# unsigned exponent, 2**(c - 127) for c = 0..254, 0xFF NaN, no zero.
MX_LIMITS = [
    # fmt, width, max, min_normal, min_subnormal, max_code, ml_dtypes type
    (fpsim.E3M2, 6, Fraction(28), p2(-2), p2(-4), 0x1F, ml_dtypes.float6_e3m2fn),
    (fpsim.E2M3, 6, Fraction(15, 2), p2(0), p2(-3), 0x1F, ml_dtypes.float6_e2m3fn),
    (fpsim.E2M1, 4, Fraction(6), p2(0), p2(-1), 0x7, ml_dtypes.float4_e2m1fn),
    (fpsim.E8M0, 8, p2(127), p2(-127), p2(-127), 0xFE, ml_dtypes.float8_e8m0fnu),
]


@pytest.mark.parametrize("lim", MX_LIMITS, ids=[lim[0].name for lim in MX_LIMITS])
def test_mx_format_limits(lim):
    f, width, max_, min_normal, min_sub, max_code, dtype = lim
    assert (f.width, f.max, f.min_normal, f.min_subnormal, f.max_code) == \
        (width, max_, min_normal, min_sub, max_code)
    assert f.from_bits(max_code).value == max_
    assert not f.has_inf
    values = [f.from_bits(c) for c in range(1 << width)]
    if f is fpsim.E8M0:
        assert (f.has_nan, f.has_zero, f.signed) == (True, False, False)
        assert f.from_bits(0xFF).is_nan and f.default_nan_code == 0xFF
        assert [v.value for v in values[:-1]] == [p2(c - 127) for c in range(255)]
    else:
        assert (f.has_nan, f.has_zero, f.has_negative_zero) == (False, True, True)
        assert not any(v.is_nan or v.is_inf for v in values)
        assert f.from_bits(1).value == min_sub
    # every code decodes as ml_dtypes' type of the same name decodes it
    theirs = np.arange(1 << width, dtype=np.uint8).view(dtype).astype(np.float64)
    ours = np.array([float(v) for v in values])
    assert np.array_equal(ours, theirs, equal_nan=True)


def test_custom_format_limits():
    # e3m2 without specials, bias 3: emin = -2, min_subnormal = 2**-4,
    # max = 1.75 * 2**(7 - 3) = 28, eps = 2**-2, width 6
    f = Format("e3m2", exponent_bits=3, mantissa_bits=2, bias=3, specials="none")
    assert (f.max, f.min_normal, f.min_subnormal, f.eps, f.width) == \
        (Fraction(28), p2(-2), p2(-4), p2(-2), 6)
    assert (f.has_inf, f.has_nan, f.has_negative_zero) == (False, False, True)
    assert f.max_code == 0x1F
    # an unsigned E8M0-like format: no zero, exponent field 0 is 2**-127
    e8m0 = Format("e8m0x", exponent_bits=8, mantissa_bits=0, bias=127, specials="fn",
                  subnormals=False, signed=False)
    assert e8m0.width == 8 and not e8m0.has_zero
    assert e8m0.min_subnormal == e8m0.min_normal == p2(-127)
    assert e8m0.max == p2(127)  # 0xFE; 0xFF is the NaN


# -- lookup ---------------------------------------------------------------------

ALIASES = [
    ("fp64", FP64), ("float64", FP64), ("binary64", FP64), ("double", FP64),
    ("fp32", FP32), ("float32", FP32), ("binary32", FP32), ("single", FP32),
    ("tf32", TF32), ("tensorfloat32", TF32),
    ("fp16", FP16), ("float16", FP16), ("binary16", FP16), ("half", FP16),
    ("bf16", BF16), ("bfloat16", BF16),
    ("e4m3", E4M3), ("fp8_e4m3", E4M3), ("float8_e4m3fn", E4M3), ("e4m3fn", E4M3),
    ("fp8_e4m3fn", E4M3),
    ("e5m2", E5M2), ("fp8_e5m2", E5M2), ("float8_e5m2", E5M2),
    ("e4m3fnuz", E4M3FNUZ), ("float8_e4m3fnuz", E4M3FNUZ), ("fp8_e4m3fnuz", E4M3FNUZ),
    ("e5m2fnuz", E5M2FNUZ), ("float8_e5m2fnuz", E5M2FNUZ), ("fp8_e5m2fnuz", E5M2FNUZ),
    ("e3m2", fpsim.E3M2), ("float6_e3m2fn", fpsim.E3M2), ("e2m3", fpsim.E2M3),
    ("float6_e2m3fn", fpsim.E2M3), ("e2m1", fpsim.E2M1), ("float4_e2m1fn", fpsim.E2M1),
    ("fp4", fpsim.E2M1), ("e8m0", fpsim.E8M0), ("float8_e8m0fnu", fpsim.E8M0),
]


@pytest.mark.parametrize("name,fmt", ALIASES, ids=[a for a, _ in ALIASES])
def test_format_lookup_by_name_and_alias_is_case_insensitive(name, fmt):
    for spelling in (name, name.upper(), name.title(), f"  {name} "):
        assert fpsim.format(spelling) is fmt
    assert fpsim.convert(1, name).fmt is fmt


def test_format_of_a_format_is_itself_and_formats_lists_each_once():
    assert fpsim.format(FP16) is FP16
    names = [f.name for f in fpsim.formats()]
    # and IEEE P3109's eight-bit formats: P 1..7 signed, 1..8 unsigned,
    # extended and finite (tests/test_p3109_formats.py checks them)
    p3109 = [f"binary8p{p}{s}{d}" for s in "su" for d in "ef" for p in range(1, 8 + (s == "u"))]
    assert sorted(names) == sorted([lim.fmt.name for lim in LIMITS]
                                   + [lim[0].name for lim in MX_LIMITS] + p3109)
    widths = [f.width for f in fpsim.formats()]
    assert widths == sorted(widths, reverse=True)  # widest first


# -- repr, str, classification ------------------------------------------------

@pytest.mark.parametrize("fmt,bits,text", [
    # 1e-5 / 2**-24 = 167.77...; rne -> 168 = 0xA8; 168 * 2**-24 = 21 * 2**-21
    # = 1.0013580322265625e-05 exactly
    (FP16, 0x00A8, "Float(fp16, 0x00a8, 1.0013580322265625e-05)"),
    (FP16, 0x3C00, "Float(fp16, 0x3c00, 1)"),
    (FP16, 0x7BFF, "Float(fp16, 0x7bff, 65504)"),
    (FP16, 0x8000, "Float(fp16, 0x8000, -0)"),
    (FP16, 0xFC00, "Float(fp16, 0xfc00, -inf)"),
    (FP16, 0x7E00, "Float(fp16, 0x7e00, nan)"),
    (FP16, 0x3555, "Float(fp16, 0x3555, 0.333251953125)"),
    (E4M3, 0x7E, "Float(e4m3, 0x7e, 448)"),
    (E4M3, 0xFF, "Float(e4m3, 0xff, -nan)"),
    (E4M3, 0x01, "Float(e4m3, 0x01, 0.001953125)"),
    (FP32, 0x3F800000, "Float(fp32, 0x3f800000, 1)"),
    # FLT_MAX = (2**24 - 1) * 2**104 = 340282346638528859811704183484516925440
    (FP32, 0x7F7FFFFF, "Float(fp32, 0x7f7fffff, 3.4028234663852885981170418348451692544e+38)"),
    # TF32 is 19 bits: 5 hex digits; 1.0 = 127 << 10 = 0x1FC00
    (TF32, 0x1FC00, "Float(tf32, 0x1fc00, 1)"),
])
def test_repr_shows_format_hex_bits_and_exact_decimal(fmt, bits, text):
    assert repr(fmt.from_bits(bits)) == text


def test_repr_of_a_rounded_value():
    assert repr(FP16.round(1e-5)) == "Float(fp16, 0x00a8, 1.0013580322265625e-05)"
    assert str(FP16.round(1e-5)) == "1.0013580322265625e-05"


@pytest.mark.parametrize("fmt,bits,cls,kind", [
    (FP16, 0x7C01, FloatClass.SIGNALING_NAN, "nan"),
    (FP16, 0x7E00, FloatClass.QUIET_NAN, "nan"),
    (FP16, 0xFE00, FloatClass.QUIET_NAN, "nan"),
    (FP16, 0xFC00, FloatClass.NEGATIVE_INFINITY, "inf"),
    (FP16, 0xBC00, FloatClass.NEGATIVE_NORMAL, "normal"),
    (FP16, 0x8001, FloatClass.NEGATIVE_SUBNORMAL, "subnormal"),
    (FP16, 0x8000, FloatClass.NEGATIVE_ZERO, "zero"),
    (FP16, 0x0000, FloatClass.POSITIVE_ZERO, "zero"),
    (FP16, 0x03FF, FloatClass.POSITIVE_SUBNORMAL, "subnormal"),
    (FP16, 0x0400, FloatClass.POSITIVE_NORMAL, "normal"),
    (FP16, 0x7C00, FloatClass.POSITIVE_INFINITY, "inf"),
    # E4M3: S.1111.111 is the (quiet) NaN; S.1111.110 is a normal number
    (E4M3, 0x7F, FloatClass.QUIET_NAN, "nan"),
    (E4M3, 0x7E, FloatClass.POSITIVE_NORMAL, "normal"),
    (E4M3, 0x80, FloatClass.NEGATIVE_ZERO, "zero"),
    (E4M3, 0x87, FloatClass.NEGATIVE_SUBNORMAL, "subnormal"),
    # E5M2: 0x7D has the quiet bit clear
    (E5M2, 0x7D, FloatClass.SIGNALING_NAN, "nan"),
    (E5M2, 0x7E, FloatClass.QUIET_NAN, "nan"),
    # FNUZ: 0x80 is the NaN, 0xFF a negative normal
    (E4M3FNUZ, 0x80, FloatClass.QUIET_NAN, "nan"),
    (E4M3FNUZ, 0xFF, FloatClass.NEGATIVE_NORMAL, "normal"),
    (E5M2FNUZ, 0x81, FloatClass.NEGATIVE_SUBNORMAL, "subnormal"),
])
def test_classify_and_kind(fmt, bits, cls, kind):
    x = fmt.from_bits(bits)
    assert x.classify() is cls
    assert x.kind == kind
    assert x.is_nan == (kind == "nan")
    assert x.is_inf == (kind == "inf")
    assert x.is_zero == (kind == "zero")
    assert x.is_subnormal == (kind == "subnormal")
    assert x.is_normal == (kind == "normal")
    assert x.is_finite == (kind not in ("nan", "inf"))
    assert x.is_signaling == (cls is FloatClass.SIGNALING_NAN)


@pytest.mark.parametrize("fmt,bits,fields", [
    (FP16, 0x7BFF, (0, 30, 1023)), (FP16, 0x8001, (1, 0, 1)), (FP16, 0x3C00, (0, 15, 0)),
    (E4M3, 0xFE, (1, 15, 6)), (E5M2, 0x7C, (0, 31, 0)), (FP32, 0xBF800001, (1, 127, 1)),
    (BF16, 0x7FC1, (0, 255, 65)),
])
def test_fields(fmt, bits, fields):
    assert fmt.from_bits(bits).fields() == fields
    assert fmt.fields(bits) == fields


@pytest.mark.parametrize("fmt,bits,text", [
    (FP16, 0x7BFF, "0x1.ffcp+15"), (FP16, 0x3C00, "0x1p+0"), (FP16, 0x3E00, "0x1.8p+0"),
    (FP16, 0x0001, "0x1p-24"),
    # 0x0003 = 3 * 2**-24 = 1.5 * 2**-23
    (FP16, 0x0003, "0x1.8p-23"),
    (FP16, 0x8000, "-0x0p+0"), (FP16, 0x0000, "0x0p+0"), (FP16, 0x7C00, "inf"),
    (FP16, 0xFC00, "-inf"), (FP16, 0x7E00, "nan"), (FP16, 0xFE00, "-nan"),
    (E4M3, 0x7E, "0x1.cp+8"), (FP32, 0x7F7FFFFF, "0x1.fffffep+127"),
    (FP32, 0x00000001, "0x1p-149"),
])
def test_hex(fmt, bits, text):
    assert fmt.from_bits(bits).hex() == text


@pytest.mark.parametrize("fmt", [E4M3, E5M2, E4M3FNUZ, E5M2FNUZ, FP16, BF16],
                         ids=lambda f: f.name)
def test_hex_round_trips_through_round(fmt):
    step = 1 if fmt.width <= 8 else 7
    for code in range(0, 1 << fmt.width, step):
        x = fmt.from_bits(code)
        if x.is_finite:
            assert fmt.round(x.hex()).bits == code, hex(code)


def test_value_and_float():
    # 0x3555: exponent field 13, fraction 0x155 -> (1024 + 341) * 2**(13 - 15 - 10)
    assert FP16.from_bits(0x3555).value == Fraction(1365, 4096)
    assert FP16.from_bits(0xFC00).is_negative and FP16.from_bits(0xFC00).sign == 1
    for code in range(0, 1 << 16, 3):
        x = FP16.from_bits(code)
        if x.is_finite:
            assert Fraction(float(x)) == x.value
    assert math.isnan(float(FP16.from_bits(0x7E00)))
    assert float(FP16.from_bits(0xFC00)) == -math.inf
    assert math.copysign(1.0, float(FP16.from_bits(0x8000))) == -1.0
    assert float(FP64.from_bits(0x7FEFFFFFFFFFFFFF)) == 1.7976931348623157e308


# -- ulp ------------------------------------------------------------------------

@pytest.mark.parametrize("fmt,bits,ulp", [
    (FP16, 0x3C00, p2(-10)),     # 1
    (FP16, 0xBC00, p2(-10)),     # -1
    (FP16, 0x4000, p2(-9)),      # 2
    (FP16, 0x3BFF, p2(-11)),     # just below 1
    (FP16, 0x7BFF, Fraction(32)),  # 65504 = 2047 * 32
    (FP16, 0x0000, p2(-24)),     # zero: min_subnormal
    (FP16, 0x8000, p2(-24)),
    (FP16, 0x0001, p2(-24)),
    (FP16, 0x03FF, p2(-24)),
    (FP16, 0x0400, p2(-24)),     # min_normal: same quantum as the subnormals
    (E4M3, 0x7E, Fraction(32)),  # 448 = 14 * 32
    (E4M3, 0x01, p2(-9)),
    (FP32, 0x3F800000, p2(-23)),
])
def test_ulp(fmt, bits, ulp):
    assert fmt.from_bits(bits).ulp() == ulp


# -- nextUp / nextDown ----------------------------------------------------------

@pytest.mark.parametrize("fmt,bits,up,down", [
    # IEEE 754 §5.3.1 edge cases in FP16
    (FP16, 0x8001, 0x8000, 0x8002),   # nextUp(-min_subnormal) = -0
    (FP16, 0x0000, 0x0001, 0x8001),   # nextDown(+0) = -min_subnormal
    (FP16, 0x8000, 0x0001, 0x8001),   # -0 behaves as +0
    (FP16, 0x0001, 0x0002, 0x0000),   # nextDown(min_subnormal) = +0
    (FP16, 0x7BFF, 0x7C00, 0x7BFE),   # nextUp(max) = inf
    (FP16, 0x7C00, 0x7C00, 0x7BFF),   # nextUp(inf) = inf, nextDown(inf) = max
    (FP16, 0xFC00, 0xFBFF, 0xFC00),   # nextDown(-inf) = -inf
    (FP16, 0xFBFF, 0xFBFE, 0xFC00),   # nextDown(-max) = -inf
    (FP16, 0x03FF, 0x0400, 0x03FE),   # largest subnormal <-> min_normal
    (FP16, 0x3C00, 0x3C01, 0x3BFF),
    (FP16, 0xBC00, 0xBBFF, 0xBC01),
    # E4M3 has no infinity: nextUp(448) stays 448 (fpsim's documented choice)
    (E4M3, 0x7E, 0x7E, 0x7D),
    (E4M3, 0xFE, 0xFD, 0xFE),
    (E4M3, 0x00, 0x01, 0x81),
    (E4M3, 0x81, 0x80, 0x82),
    # FNUZ: no -0, so stepping onto zero gives +0
    (E4M3FNUZ, 0x81, 0x00, 0x82),
    (E4M3FNUZ, 0x00, 0x01, 0x81),
    (E4M3FNUZ, 0x7F, 0x7F, 0x7E),
    (E4M3FNUZ, 0xFF, 0xFE, 0xFF),
    # E5M2: nextUp(57344) = inf
    (E5M2, 0x7B, 0x7C, 0x7A),
])
def test_next_up_and_next_down(fmt, bits, up, down):
    x = fmt.from_bits(bits)
    assert x.next_up().bits == up
    assert x.next_down().bits == down


@pytest.mark.parametrize("fmt,bits,result", [
    (FP16, 0x7C01, 0x7E01),   # signaling -> quiet, payload kept
    (FP16, 0x7E00, 0x7E00),
    (FP16, 0xFE05, 0xFE05),
    (E4M3, 0x7F, 0x7F), (E4M3, 0xFF, 0xFF), (E4M3FNUZ, 0x80, 0x80),
])
def test_next_of_nan_is_a_quiet_nan(fmt, bits, result):
    x = fmt.from_bits(bits)
    assert x.next_up().bits == result
    assert x.next_down().bits == result
    assert x.next_up().is_quiet_nan


def _decode(fmt: Format, bits: int):
    """The oracle's decoding (tests/oracle.py, from the format definitions):
    None for NaN, float inf, or Fraction."""
    kind, sign, value = spec_of(fmt).decode(bits)
    if kind == "inf":
        return -math.inf if sign else math.inf
    return value


@pytest.mark.parametrize("fmt", [E4M3, E5M2, E4M3FNUZ, E5M2FNUZ, FP16], ids=lambda f: f.name)
def test_next_up_is_the_least_greater_value_for_every_code(fmt):
    values = {}
    for code in range(1 << fmt.width):
        v = _decode(fmt, code)
        if v is not None:
            values[code] = v
    ordered = sorted(set(values.values()))
    following = dict(zip(ordered, ordered[1:]))
    preceding = dict(zip(ordered[1:], ordered))
    step = 1 if fmt.width <= 8 else 5  # FP16: every 5th code, against the full order
    for code, v in values.items():
        if code % step:
            continue
        x = fmt.from_bits(code)
        up, down = x.next_up(), x.next_down()
        expect_up = following.get(v, v)     # the top value (inf or max) stays
        expect_down = preceding.get(v, v)
        assert _decode(fmt, up.bits) == expect_up, hex(code)
        assert _decode(fmt, down.bits) == expect_down, hex(code)
        # stepping onto zero keeps the operand's sign (nextUp(-min_sub) = -0)
        if expect_up == 0 and fmt.has_negative_zero:
            assert up.sign == (v < 0)
        if expect_down == 0 and fmt.has_negative_zero:
            assert down.sign == (v < 0)


# -- equality ---------------------------------------------------------------------

def test_equality_semantics():
    nan = FP16.from_bits(0x7E00)
    assert not (nan == nan)
    assert nan != nan
    assert nan != FP16.from_bits(0x7E00)
    assert nan != 1 and nan != math.nan
    assert FP16.from_bits(0x8000) == FP16.from_bits(0x0000)   # -0 == +0
    assert FP16.from_bits(0x8000) == 0 and FP16.from_bits(0x8000) == -0.0
    one = FP16.from_bits(0x3C00)
    assert one == 1 and one == 1.0 and one == Fraction(1) and 1 == one
    assert one == FP32.from_bits(0x3F800000)                 # across formats
    assert one == E4M3.round(1)
    # comparisons are exact: FP16(0.1) = 0.0999755859375 is not the double 0.1
    tenth = FP16.round(0.1)
    assert tenth != 0.1
    assert tenth == 0.0999755859375 and tenth == Fraction(819, 8192)
    assert FP16.from_bits(0x3C01) != 1
    assert FP16.from_bits(0x7C00) == math.inf and FP16.from_bits(0x7C00) == FP32.round("inf")
    assert FP16.from_bits(0x7C00) != FP16.from_bits(0xFC00)
    assert FP16.from_bits(0x7C00) != FP16.from_bits(0x7BFF)
    assert one != "1"


def test_equal_values_hash_equal():
    assert hash(FP16.round(1)) == hash(1) == hash(FP32.round(1))
    assert hash(FP16.from_bits(0x8000)) == hash(FP16.from_bits(0x0000))
    assert hash(FP16.round(1.5)) == hash(Fraction(3, 2)) == hash(1.5)
    assert len({FP16.round(2), FP32.round(2), BF16.round(2), 2}) == 1


# -- immutability and pickling ----------------------------------------------------

def test_float_is_immutable():
    x = FP16.round(1)
    with pytest.raises(AttributeError):
        x.bits = 0x3C01
    with pytest.raises(AttributeError):
        x.fmt = FP32
    with pytest.raises(AttributeError):
        x.extra = 1
    assert x.bits == 0x3C00 and x.fmt is FP16


def test_format_is_immutable():
    with pytest.raises(dataclasses.FrozenInstanceError):
        FP16.bias = 14
    assert FP16.bias == 15


@pytest.mark.parametrize("fmt,bits", [
    (FP16, 0x3C00), (FP16, 0x8000), (FP16, 0x7E01), (FP16, 0x7C01), (E4M3, 0x7F),
    (E5M2FNUZ, 0x80), (FP64, 0x7FEFFFFFFFFFFFFF), (TF32, 0x1FC00),
])
def test_pickle_round_trip(fmt, bits):
    x = fmt.from_bits(bits)
    for y in (pickle.loads(pickle.dumps(x)), copy.deepcopy(x), copy.copy(x)):
        assert type(y) is fpsim.Float
        assert y.bits == bits
        assert y.fmt == fmt
        assert y.fmt.name == fmt.name and y.fmt.max_code == fmt.max_code


def test_pickle_round_trip_of_formats():
    for fmt in fpsim.formats():
        g = pickle.loads(pickle.dumps(fmt))
        assert g == fmt and g.aliases == fmt.aliases
    custom = Format("e3m2", 3, 2, 3, specials="none")
    assert pickle.loads(pickle.dumps(custom.from_bits(0x1F))).value == 28
