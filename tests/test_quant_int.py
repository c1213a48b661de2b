"""Integer elements (fpsim.quant.IntFormat: INT8, INT4, INT2, INT1, MXINT8
and the symmetric variants) against an oracle written here with Fractions,
the array path against the scalar path (every FP16 code, random FP32 codes,
every rounding mode, stochastic rounding with the same random numbers), and
MXINT8 blocks derived by hand from OCP MX v1.0 (§5.3.4, §6.3)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fpsim
from fpsim.quant import (
    INT1,
    INT2,
    INT4,
    INT8,
    INT8_SYM,
    MXINT8,
    MXINT8_SYM,
    IntFormat,
    quantize,
)

FORMATS = [INT8, INT4, INT2, INT1, MXINT8, INT8_SYM, MXINT8_SYM]
MODES = ["rne", "rna", "rtz", "rup", "rdn", "rto"]


# -- the oracle ------------------------------------------------------------------------------

def oracle_code(x: Fraction, bits: int, frac_bits: int, symmetric: bool, mode: str,
                rand: int = 0, sr_bits: int = 32) -> int:
    """x × 2**frac_bits rounded to an integer by the mode, then clipped."""
    y = x * 2 ** frac_bits
    lo, hi = math.floor(y), math.ceil(y)
    if lo == hi:
        n = lo
    elif mode == "rne":
        n = lo if (y - lo < hi - y or (y - lo == hi - y and lo % 2 == 0)) else hi
    elif mode == "rna":
        n = (hi if y > 0 else lo) if y - lo == hi - y else (lo if y - lo < hi - y else hi)
    elif mode == "rtz":
        n = lo if y > 0 else hi
    elif mode == "rup":
        n = hi
    elif mode == "rdn":
        n = lo
    elif mode == "rto":                        # toward zero, then odd
        n = lo if y > 0 else hi
        n = n if n % 2 else (n + 1 if y > 0 else n - 1)
    else:                                      # sr: away from zero with probability frac
        frac = abs(y) - math.floor(abs(y))
        t = math.floor(frac * 2 ** sr_bits)
        away = t + rand >= 2 ** sr_bits
        n = (hi if away else lo) if y > 0 else (lo if away else hi)
    top = 2 ** (bits - 1) - 1
    bottom = -top if symmetric else -top - 1
    return max(bottom, min(top, n))


def test_ranges():
    assert (INT8.min_code, INT8.max_code) == (-128, 127)
    assert (INT4.min_code, INT4.max_code) == (-8, 7)
    assert (INT2.min_code, INT2.max_code) == (-2, 1)
    assert (INT1.min_code, INT1.max_code) == (-1, 0)        # int1 = {-1, 0}
    assert (INT8_SYM.min_code, INT8_SYM.max_code) == (-127, 127)
    assert (MXINT8.min, MXINT8.max) == (-2, Fraction(127, 64))
    assert (MXINT8_SYM.min, MXINT8_SYM.max) == (Fraction(-127, 64), Fraction(127, 64))
    assert [MXINT8.emax, INT8.emax, INT4.emax, INT2.emax] == [0, 6, 2, 0]
    assert [MXINT8.mantissa_bits, INT4.mantissa_bits] == [6, 2]
    with pytest.raises(ValueError, match="largest value is 0"):
        _ = INT1.emax
    with pytest.raises(ValueError, match="bits"):
        IntFormat("int9", 9)
    with pytest.raises(ValueError, match="symmetric"):
        IntFormat("int1s", 1, symmetric=True)


@pytest.mark.parametrize("mode", MODES)
@settings(max_examples=300, deadline=None)
@given(x=st.fractions(min_value=-400, max_value=400, max_denominator=1 << 12))
def test_scalar_round_equals_the_fraction_oracle(mode, x):
    for f in FORMATS:
        assert f.round(x, mode) == oracle_code(x, f.bits, f.frac_bits, f.symmetric, mode), f


def test_scalar_round_special_values():
    assert INT8.round(math.inf) == 127 and INT8.round(-math.inf) == -128
    assert INT8_SYM.round(-math.inf) == -127 and INT1.round(5) == 0 and INT1.round(-0.7) == -1
    assert INT8.round(fpsim.FP16.round(-1000.0)) == -128          # an fpsim Float
    with pytest.raises(ValueError, match="NaN"):
        INT4.round(math.nan)
    with pytest.raises(ValueError, match="NaN"):
        INT4.round_array(np.float32([1.0, np.nan]))
    with pytest.raises(TypeError):
        INT4.round("3")


@pytest.mark.exhaustive
@pytest.mark.parametrize("mode", MODES)
def test_array_equals_scalar_on_every_fp16_code(mode):
    codes = np.arange(1 << 16, dtype=np.uint16)
    values = codes.view(np.float16).astype(np.float64)
    codes = codes[~np.isnan(values)]
    values = values[~np.isnan(values)]
    for f in (MXINT8, INT4, INT1, INT8_SYM):
        got = f.round_array(codes, mode, fmt="fp16", ctx=fpsim.Context())
        assert got.dtype == np.int8
        want = [f.round(float(v), mode) for v in values]
        assert got.tolist() == want, f


def test_array_equals_scalar_on_random_fp32_codes():
    rng = np.random.default_rng(20)
    x = (rng.standard_normal(4000) * np.exp2(rng.integers(-30, 12, 4000))).astype(np.float32)
    x[:4] = [2.0 ** -149, -(2.0 ** -149), 3e38, -3e38]
    for f in FORMATS:
        for mode in MODES:
            got = f.round_array(x, mode, ctx=fpsim.Context())
            assert got.tolist() == [f.round(float(v), mode) for v in x], (f, mode)


def test_stochastic_array_equals_scalar_with_the_same_random_bits():
    rng = np.random.default_rng(21)
    x = (rng.standard_normal(3000) * 40).astype(np.float32)
    bits = rng.integers(0, 1 << 32, 3000, dtype=np.uint64)
    for f in FORMATS:
        got = f.round_array(x, "sr", random_bits=bits, ctx=fpsim.Context())
        scalar = [f.round(float(v), "sr", rand=int(r)) for v, r in zip(x, bits)]
        oracle = [oracle_code(Fraction(float(v)), f.bits, f.frac_bits, f.symmetric, "sr", int(r))
                  for v, r in zip(x, bits)]
        assert got.tolist() == scalar == oracle, f


def test_tiny_float64_values_round_like_any_tiny_value():
    """A float64 subnormal scaled down for the integer grid still rounds
    away from zero under rup/rdn (the smallest magnitude stands for it)."""
    x = np.array([5e-324, -5e-324, 1e-310], np.float64)
    assert INT8.round_array(x, "rup", ctx=fpsim.Context()).tolist() == [1, 0, 1]
    assert INT8.round_array(x, "rdn", ctx=fpsim.Context()).tolist() == [0, -1, 0]
    assert [INT8.round(float(v), "rup") for v in x] == [1, 0, 1]


# -- quantize() with integer elements ----------------------------------------------------------

@pytest.mark.parametrize("name, top", [("int8", 127), ("int4", 7), ("int2", 1)])
def test_tensor_scaling_into_plain_integers(name, top):
    """scale = amax / max in FP32, multiplier 1 / scale in FP32, x × multiplier
    in FP32, rounded to nearest even and clipped (numpy float32 oracle)."""
    rng = np.random.default_rng(top)
    x = (rng.standard_normal((8, 32)) * 3).astype(np.float32)
    q = quantize(x, name, "channel")
    amax = np.abs(x).max(axis=1)
    scale = amax / np.float32(top)
    mult = np.float32(1) / scale
    y = (x * mult[:, None]).astype(np.float64)
    bottom = -top - 1
    assert q.data.dtype == np.int8
    assert np.array_equal(q.data, np.clip(np.rint(y), bottom, top).astype(np.int8))
    assert np.array_equal(q.scale, scale)


def test_int1_and_other_integer_widths_where_refused():
    x = np.ones(32, np.float32)
    with pytest.raises(ValueError, match="int1 holds -1 and 0 alone.*accepted"):
        quantize(x, "int1")
    with pytest.raises(ValueError, match="int4 is not an OCP MX element.*accepted e4m3"):
        quantize(x, "int4", "mx")


# -- MXINT8, derived by hand from the spec ---------------------------------------------------

def mx_codes(q):
    return int(np.asarray(q.scale).view(np.uint8).reshape(-1)[0]), np.asarray(q.data).tolist()


def test_mxint8_block_with_amax_3():
    """amax 3: floor(log2 3) = 1, emax(INT8) = 0, X = 2**1 (E8M0 code 128).
    3 / 2 = 1.5 = 96/64; 0.1 / 2 = 0.05 = 3.2/64 -> 3; -1.3 / 2 = -0.65 =
    -41.6/64 -> -42; 2**-9 / 2 = 0.25/64 -> 0."""
    block = np.r_[3.0, 0.1, -1.3, 2.0 ** -9, np.zeros(28)].astype(np.float32)
    for name in ("int8", "mxint8", MXINT8):
        q = quantize(block, name, "mx")
        code, data = mx_codes(q)
        assert code == 128 and data[:4] == [96, 3, -42, 0]
        assert q.element_format == MXINT8
    assert q.dequantize()[:3].tolist() == [3.0, 3 / 32, -42 / 32]


def test_mxint8_zero_block_and_nan_block():
    q = quantize(np.zeros(32, np.float32), "int8", "mx")
    assert mx_codes(q) == (0, [0] * 32)          # X = 2**-127, the all-zero rule
    # OCP MX v1.0: a NaN in the block makes X NaN (0xFF), which makes every
    # value of the block NaN; the elements are x / 2**0 (1.0 = 64/64) and
    # the NaN, which no integer holds, is code 0 (INVALID).
    ctx = fpsim.Context()
    q = quantize(np.r_[1.0, np.nan, np.zeros(30)].astype(np.float32), "int8", "mx", ctx=ctx)
    assert mx_codes(q) == (0xFF, [64, 0] + [0] * 30)
    assert ctx.flags == fpsim.Flag.INVALID and np.isnan(q.dequantize()).all()


def test_mxint8_saturation_and_minus_two():
    """amax 1.999 (k = 0): 1.999 × 64 = 127.94 -> 128, saturated to 127;
    -1.999 -> -128 = -2 in full range (gfloat), -127 in the symmetric
    variant the spec allows (-2 left unused)."""
    block = np.r_[1.999, -1.999, -1.99, np.zeros(29)].astype(np.float32)
    q = quantize(block, "int8", "mx")
    assert mx_codes(q)[0] == 127 and mx_codes(q)[1][:3] == [127, -128, -127]
    assert q.saturated[:3].all()     # |-1.99| > 127/64 too, though -127/64 is near it
    q = quantize(block, "mxint8_sym", "mx")
    assert mx_codes(q)[1][:3] == [127, -127, -127]
    q = quantize(block, INT8_SYM, "mx")             # an 8-bit integer is MX's INT8
    assert q.element_format == MXINT8_SYM


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(-(2.0 ** 100), 2.0 ** 100, width=32), min_size=32, max_size=32),
       st.sampled_from(["floor", "ceil", "even", "rceil", "rceil_exact"]))
def test_mxint8_error_is_half_a_quantum_times_the_scale(values, rule):
    x = np.float32(values)
    q = quantize(x, "int8", "mx", scale_rounding=rule)
    code = int(np.asarray(q.scale).view(np.uint8)[0])
    scale = Fraction(2) ** (code - 127)
    for v, d, sat in zip(x, q.dequantize(), q.saturated):
        if not sat:
            assert abs(Fraction(float(v)) - Fraction(float(d))) <= scale / 128
