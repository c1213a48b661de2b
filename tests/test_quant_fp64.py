"""FP64 in quantization (fpsim.quant): float64 inputs under every scaling,
scales computed in FP64 (``scale_format="fp64"``), FP64 elements, and what
stays refused (FP64 elements of MX blocks, an element max beyond the scale
format's).

The expected values come from numpy's IEEE float32 and float64 arithmetic
(round to nearest even, subnormals kept) for the scale steps, and from
exact fractions for every rounding into an element format (ml_dtypes is
no oracle here: it casts float64 to FP8 through float32, rounding twice).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

import fpsim
from fpsim import quant
from fpsim.modes import Flag

E4M3 = (3, -6, Fraction(448))          # fraction bits, emin, max
E5M2 = (2, -14, Fraction(57344))
MODES = ("rne", "rna", "rtz", "rup", "rdn", "raz")


def round_fraction(mag: Fraction, negative: bool, mode: str, fmt=E4M3) -> float:
    """The magnitude ``mag`` (exact, nonzero) of sign ``negative`` rounded
    into a small format, saturating: its value as a float."""
    m, emin, top = fmt
    e = mag.numerator.bit_length() - mag.denominator.bit_length()
    if Fraction(2) ** e > mag:
        e -= 1
    q = Fraction(2) ** (max(e, emin) - m)
    n = mag / q
    lo = n.numerator // n.denominator
    rem = n - lo
    up = {"rne": rem > Fraction(1, 2) or (rem == Fraction(1, 2) and lo % 2 == 1),
          "rna": rem >= Fraction(1, 2), "rtz": False, "raz": rem > 0,
          "rup": rem > 0 and not negative, "rdn": rem > 0 and negative}[mode]
    value = float(min((lo + up) * q, top))
    return -value if negative else value


def round_exact(v: float, mode: str, fmt=E4M3) -> float:
    """The float64 ``v`` rounded into a small format, saturating (NaN stays
    NaN, an infinity is the max, the sign of a zero is kept)."""
    if math.isnan(v):
        return math.nan
    negative = math.copysign(1.0, v) < 0
    if math.isinf(v):
        return -float(fmt[2]) if negative else float(fmt[2])
    if v == 0:
        return v
    return round_fraction(abs(Fraction(v)), negative, mode, fmt)


def same(got: np.ndarray, expected) -> bool:
    got = np.asarray(got, np.float64)
    expected = np.asarray(expected, np.float64)
    number = ~np.isnan(expected)   # (any NaN agrees with any NaN, whatever its sign)
    return bool(np.array_equal(got, expected, equal_nan=True)
                and np.array_equal(np.signbit(got[number]), np.signbit(expected[number])))


def wide_values(rng: np.random.Generator, shape, lo=-1074, hi=1023) -> np.ndarray:
    """float64 values of random signs, exponents from 2**lo to 2**hi and
    random significands: subnormals and huge magnitudes included."""
    codes = rng.integers(0, 1 << 64, size=shape, dtype=np.uint64)
    mag = np.ldexp(1.0 + (codes >> np.uint64(12)).astype(np.float64) / 2.0**52,
                   rng.integers(lo, hi, size=shape))
    return np.where(codes & np.uint64(1), -mag, mag)


# -- float64 inputs, scales in FP32 (the default) ------------------------------------------------

@pytest.mark.parametrize("scaling", ["tensor", "channel", ("block", (2, 4))])
def test_float64_inputs_with_fp32_scales_against_numpy(scaling):
    # x converted to FP32 once (a rounding of its own), then every step in FP32
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 8)) * np.ldexp(1.0, rng.integers(-30, 30, (4, 8)))
    x[1, 2] = 1.0 + 2.0**-40           # a value FP32 does not hold
    q = quant.quantize(x, "e4m3", scaling)
    a = np.abs(x)
    if scaling == "tensor":
        amax = a.max(keepdims=True)
    elif scaling == "channel":
        amax = a.max(axis=1, keepdims=True)
    else:
        amax = a.reshape(2, 2, 2, 4).max(axis=(1, 3))
    scale = amax.astype(np.float32) / np.float32(448)
    multiplier = np.float32(1) / scale
    if scaling == ("block", (2, 4)):
        multiplier = np.repeat(np.repeat(multiplier, 2, axis=0), 4, axis=1)
    scaled = x.astype(np.float32) * multiplier
    expected = [round_exact(float(v), "rne") for v in scaled.ravel()]
    assert same(q.data.astype(np.float64).ravel(), expected)
    assert same(np.asarray(q.scale).ravel(), scale.ravel())


# -- scales in FP64 -------------------------------------------------------------------------------

def fp64_recipe(x: np.ndarray, top: float, rule: str = "amax/max", eps: float | None = None):
    """Scale and multiplier of one tensor group in numpy float64."""
    amax = np.abs(x).max()
    if rule == "amax/max":
        scale = amax / top
        if eps is not None and scale < eps:
            scale = eps
        if amax == 0 and scale == 0:
            scale = 1.0
        return scale, 1.0 / scale
    if eps is not None and amax < eps:
        amax = eps
    scale = top / amax if amax != 0 else 1.0
    return scale, scale


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("rule", ["amax/max", "max/amax"])
def test_fp64_scales_against_numpy_and_exact_element_rounding(mode, rule):
    rng = np.random.default_rng(len(mode) + len(rule))
    x = wide_values(rng, 4000, lo=-1074, hi=-900)   # amax far below FP32's range
    x[:4] = [1e-300 * (1 + 2.0**-40), -3e-310, 0.0, -0.0]
    q = quant.quantize(x, "e4m3", scale_format="fp64", scale_rule=rule, rounding=mode)
    scale, multiplier = fp64_recipe(x, 448.0, rule)
    assert float(q.scale) == scale and float(q.amax) == np.abs(x).max()
    scaled = x * multiplier
    assert same(q.data.astype(np.float64), [round_exact(float(v), mode) for v in scaled])
    assert np.array_equal(q.saturated, np.abs(scaled) > 448)
    # dequantized: each element times (or over) the scale, exactly, rounded once
    back = q.dequantize()
    op = (lambda a, b: a * b) if rule == "amax/max" else (lambda a, b: a / b)
    expected = [float(op(Fraction(float(d)), Fraction(scale)))
                for d in q.data.astype(np.float64)]
    assert back.tolist() == expected


def test_fp64_scales_with_eps_per_channel_and_flags():
    x = np.array([[1e-310, -2e-310, 0.0], [3.0, 0.5, -1.0], [0.0, 0.0, 0.0]])
    ctx = fpsim.Context()
    q = quant.quantize(x, "e5m2", "channel", ctx, scale_format="fp64", eps=1e-300)
    expected_scale, data = [], []
    for row in x:
        scale, multiplier = fp64_recipe(row, 57344.0, eps=1e-300)
        expected_scale.append(scale)
        data += [round_exact(float(v), "rne", E5M2) for v in row * multiplier]
    assert np.asarray(q.scale).tolist() == expected_scale
    assert same(q.data.astype(np.float64).ravel(), data)
    # 3 / 57344 and the floored tiny row are inexact: INEXACT; no overflow anywhere
    assert ctx.flags & Flag.INEXACT and not ctx.flags & (Flag.OVERFLOW | Flag.INVALID)


def test_fp64_elements_with_fp64_scales_against_numpy():
    rng = np.random.default_rng(3)
    x = wide_values(rng, (6, 16), lo=-300, hi=300)
    x[0, :3] = [np.inf, -np.inf, 0.0]
    x[1, 0] = np.nan
    q = quant.quantize(x, "fp64", "channel", scale_format="fp64")
    top = np.finfo(np.float64).max
    for i, row in enumerate(x):
        with np.errstate(all="ignore"):
            amax = np.abs(row).max()
            scale = amax / top
            scaled = np.clip(row * (1.0 / scale), -top, top)   # saturating, NaN kept
        assert same(np.asarray(q.scale)[i], scale)
        assert same(q.data[i], scaled)
    assert q.data.dtype == np.float64 and q.scale.dtype == np.float64


# -- MX blocks of float64 inputs ------------------------------------------------------------------

def mx_reference(x: np.ndarray, mode: str, fmt=E4M3, emax: int = 8) -> tuple[list, list]:
    """OCP MX v1.0's FLOOR rule per block of 32, exactly: k = floor(log2
    amax) - emax clamped to E8M0's range, elements x / 2**k rounded."""
    ks, out = [], []
    for block in x.reshape(-1, 32):
        amax = float(np.abs(block).max())
        k = -127 if amax == 0 else max(-127, min(127, math.frexp(amax)[1] - 1 - emax))
        ks.append(k)
        for v in block.tolist():
            if v == 0:
                out.append(v)
            else:
                out.append(round_fraction(abs(Fraction(v)) / Fraction(2) ** k, v < 0, mode, fmt))
    return ks, out


@pytest.mark.parametrize("mode", MODES)
def test_mx_blocks_of_float64_with_a_huge_range_against_fractions(mode):
    # blocks spanning 2**-1074 to 2**1000: the tiny values' quotients fall
    # below float64's range; under rup/rdn/raz they are the smallest
    # subnormal of E4M3, not zero
    rng = np.random.default_rng(7)
    x = wide_values(rng, (8, 64), lo=-1074, hi=1000)
    x[0, :4] = [5e-324, -5e-324, 3 * 5e-324, 1e300]
    ctx = fpsim.Context()
    q = quant.quantize(x, "e4m3", "mx", ctx, rounding=mode)
    ks, expected = mx_reference(x, mode)
    assert (np.asarray(q.scale).view(np.uint8).astype(int).ravel() - 127).tolist() == ks
    assert same(q.data.astype(np.float64).ravel(), expected)
    tiny = q.data.astype(np.float64)[0, :3].tolist()
    assert tiny == {"rne": [0.0, -0.0, 0.0], "rna": [0.0, -0.0, 0.0], "rtz": [0.0, -0.0, 0.0],
                    "rup": [2**-9, -0.0, 2**-9], "rdn": [0.0, -2**-9, 0.0],
                    "raz": [2**-9, -2**-9, 2**-9]}[mode]
    assert ctx.flags & Flag.UNDERFLOW and ctx.flags & Flag.INEXACT


def test_mx_refuses_fp64_elements_and_names_what_is_accepted():
    with pytest.raises(ValueError, match=r"element_format=fp64 cannot be an MX element.*"
                                         r"2\*\*-1074.*scaling='tensor', 'channel' or "
                                         r"\('block', \.\.\.\)"):
        quant.quantize(np.ones(32), "fp64", "mx")


# -- refusals and the other recipes ---------------------------------------------------------------

@pytest.mark.parametrize("elem, scale, message", [
    ("fp64", None, r"fp64's largest value 1.79769e\+308 is beyond scale_format=fp32's "
                   r"\(3.40282e\+38\).*\(scale_format='fp64'\)"),
    ("fp64", "bf16", r"beyond scale_format=bf16's"),
    ("bf16", "fp16", r"bf16's largest value 3.38953e\+38 is beyond scale_format=fp16's "
                     r"\(65504\).*\(scale_format='bf16'\)"),
])
def test_an_element_max_beyond_the_scale_format_is_refused(elem, scale, message):
    with pytest.raises(ValueError, match=message):
        quant.quantize(np.ones(4), elem, scale_format=scale)


def test_delayed_scaling_in_fp64_against_numpy():
    ds = quant.DelayedScaling("e4m3", history_len=2, scale_format="fp64", margin=1)
    x = np.array([3e-200, -1.5e-200, 0.0])
    first = ds.step(x)
    assert same(first.data.astype(np.float64), [round_exact(v, "rne") for v in x.tolist()])
    assert float(ds.scale) == (448.0 / 3e-200) / 2.0  # two roundings in float64
    second = ds.step(x)
    scaled = x * ((448.0 / 3e-200) / 2.0)
    assert same(second.data.astype(np.float64), [round_exact(v, "rne") for v in scaled.tolist()])
