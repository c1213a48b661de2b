"""E8M0 scale rounding rules of scaling="mx" (scale_rounding=): each rule
against an oracle written here from its definition with Fractions and
math.frexp (floor, ceil, even, rceil_exact; rceil with numpy float32 for its
two FP32 operations), against a re-implementation of torchao's bit-level
algorithm on FP32 patterns (floor, ceil, even), the elements against
gfloat's block encoding given the scale, the conformance table, and bad
input."""

from __future__ import annotations

import math
from fractions import Fraction

import gfloat
import ml_dtypes
import numpy as np
import pytest
from gfloat import formats as gf

from fpsim.quant import SCALE_ROUNDINGS, quantize, scale_table

ELEMS = {  # name: (max, emax, trailing significand bits, gfloat block format)
    "e4m3": (Fraction(448), 8, 3, gf.format_info_mxfp8_e4m3),
    "e5m2": (Fraction(57344), 15, 2, gf.format_info_mxfp8_e5m2),
    "e3m2": (Fraction(28), 4, 2, gf.format_info_mxfp6_e3m2),
    "e2m3": (Fraction(15, 2), 2, 3, gf.format_info_mxfp6_e2m3),
    "e2m1": (Fraction(6), 2, 1, gf.format_info_mxfp4_e2m1),
    "int8": (Fraction(127, 64), 0, 6, gf.format_info_mxint8),
}
NAN = "NaN"


def floor_log2(a: Fraction) -> int:
    m, e = math.frexp(float(a)) if a.denominator == 1 or float(a) == a else (None, None)
    if m is not None and Fraction(m) * Fraction(2) ** e == a:
        return e - 1                        # frexp: a = m × 2**e, m in [0.5, 1)
    k = a.numerator.bit_length() - a.denominator.bit_length()
    return k if Fraction(2) ** k <= a else k - 1


def ceil_log2(a: Fraction) -> int:
    k = floor_log2(a)
    return k if Fraction(2) ** k == a else k + 1


def oracle(amax: float, name: str, rule: str):
    """The rule's unclamped exponent from its definition, then E8M0's clamp;
    'NaN' for the NaN scale."""
    top, emax, m, _ = ELEMS[name]
    if math.isnan(amax):
        return NAN
    if rule == "rceil":
        with np.errstate(all="ignore"):
            d = np.float32(amax) * (np.float32(1) / np.float32(float(top)))
        if not np.isfinite(d):
            return NAN
        if d == 0:
            return -127
        k = ceil_log2(Fraction(float(d)))
        return NAN if k > 127 else max(k, -127)
    if math.isinf(amax):
        return 127
    if amax == 0:
        return -127
    a = Fraction(amax)
    if rule == "floor":
        k = floor_log2(a) - emax
    elif rule == "ceil":
        k = ceil_log2(a) - emax
    elif rule == "even":
        q = Fraction(2) ** (floor_log2(a) - m)       # the last place of m fraction bits
        rounded = math.floor(a / q + Fraction(1, 2)) * q   # ties away (a > 0)
        k = floor_log2(rounded) - emax
    else:  # rceil_exact
        k = ceil_log2(a / top)
    return max(-127, min(127, k))


def our_scale(q) -> list:
    codes = np.asarray(q.scale).view(np.uint8).reshape(-1)
    return [NAN if c == 0xFF else int(c) - 127 for c in codes]


def edge_amaxes() -> list[float]:
    f32 = np.float32
    out = [0.0, 2.0 ** -149, 2.0 ** -127, 1.5 * 2.0 ** -127, 2.0 ** -126, 1.0, 1.75, 1.8,
           1.9375, 1.96875, 1.984375, 2.0 - 2.0 ** -23, float(np.finfo(f32).max),
           float(np.nextafter(f32(1), f32(2))), 65504.0, np.inf]
    for top, _, _, _ in ELEMS.values():
        t = f32(float(top))
        for j in (-20, 0, 3):
            v = f32(np.ldexp(t, j))
            out += [float(v), float(np.nextafter(v, f32(np.inf))), float(np.nextafter(v, f32(0)))]
    return out


def blocks(dtype) -> np.ndarray:
    rng = np.random.default_rng(7)
    amaxes = edge_amaxes()
    rows = [np.r_[a, -a / 3, np.zeros(30)] for a in amaxes]
    for _ in range(300):
        rows.append(rng.standard_normal(32) * np.exp2(rng.integers(-140, 120)))
    x = np.array(rows)
    with np.errstate(over="ignore"):
        return x.astype(dtype)


@pytest.mark.parametrize("rule", SCALE_ROUNDINGS)
@pytest.mark.parametrize("name", list(ELEMS))
@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16])
def test_scale_equals_the_definition(rule, name, dtype):
    x = blocks(dtype)
    q = quantize(x, name, "mx", scale_rounding=rule)
    amax = np.abs(x.astype(np.float64)).max(axis=1)
    assert our_scale(q) == [oracle(float(a), name, rule) for a in amax]


def torchao_bits(amax: np.float32, mbits: int, emax: int, rule: str):
    """torchao's FLOOR/CEIL/EVEN, re-implemented on the FP32 bit pattern:
    EVEN adds half an ulp of mbits fraction bits and clears the fraction;
    the biased exponent field minus 127 is the power of two; CEIL adds one
    when any fraction bit is set; clamp to [-127, 128]; a non-finite amax
    (after EVEN's addition) is the NaN scale."""
    bits = int(np.float32(amax).view(np.uint32))
    if rule == "even":
        bits = (bits + (1 << (23 - mbits - 1))) & 0xFF800000
    if (bits >> 23) & 0xFF == 0xFF:
        return NAN
    pow2 = ((bits >> 23) & 0xFF) - 127
    if rule == "ceil":
        pow2 += (bits & 0x7FFFFF) > 0
    k = max(-127, min(128, pow2 - emax))
    return NAN if k == 128 else k


@pytest.mark.parametrize("rule", ["floor", "ceil", "even"])
@pytest.mark.parametrize("name", ["e4m3", "e5m2", "e3m2", "e2m3", "e2m1"])
def test_scale_equals_torchao_bit_algorithm(rule, name):
    """On every FP32 amax but the largest binade (where EVEN's addition
    overflows to infinity in torchao) and infinities (torchao: NaN scale;
    fpsim, as gfloat: 2**127)."""
    _, emax, m, _ = ELEMS[name]
    rng = np.random.default_rng(8)
    pats = np.concatenate([rng.integers(0, 0x7F000000, 3000, dtype=np.uint32),
                           np.arange(0, 64, dtype=np.uint32),
                           (np.arange(-64, 64) + 0x3F800000).astype(np.uint32)])
    amax = pats.view(np.float32)
    x = np.zeros((amax.size, 32), np.float32)
    x[:, 0] = amax
    got = our_scale(quantize(x, name, "mx", scale_rounding=rule))
    assert got == [torchao_bits(a, m, emax, rule) for a in amax]


@pytest.mark.parametrize("rule", SCALE_ROUNDINGS)
@pytest.mark.parametrize("name", list(ELEMS))
def test_elements_equal_gfloat_given_the_scale(rule, name):
    fi = ELEMS[name][3]
    x = blocks(np.float32)[-100:]
    q = quantize(x, name, "mx", scale_rounding=rule)
    data = np.asarray(q.data)
    data = data.astype(np.int64) & 0xFF if name == "int8" else data.view(np.uint8)
    for row, k, got in zip(x, our_scale(q), data):
        scale = 2.0 ** k
        want = list(gfloat.encode_block(fi, scale, row.astype(np.float64) / scale))[1:]
        assert got.tolist() == want


def test_rules_on_a_worked_block():
    """E2M1 (max 6 = 1.5 × 2**2, one fraction bit), amax 1.6 × 2**j: floor
    k = j - 2; ceil j - 1; even: 1.6 rounded to one fraction bit is 1.5
    (below 1.75), k = j - 2; rceil and rceil_exact: 1.6 / 6 = 0.267, k = -1
    + j; for amax 1.8 × 2**j even rounds to 2 and joins ceil."""
    for j in (-3, 0, 5):
        x = np.zeros((2, 32), np.float32)
        x[0, 0], x[1, 0] = 1.6 * 2.0 ** j, 1.8 * 2.0 ** j
        got = {r: our_scale(quantize(x, "e2m1", "mx", scale_rounding=r)) for r in SCALE_ROUNDINGS}
        assert got == {"floor": [j - 2, j - 2], "ceil": [j - 1, j - 1],
                       "even": [j - 2, j - 1], "rceil": [j - 1, j - 1],
                       "rceil_exact": [j - 1, j - 1]}


def test_rceil_in_fp32_differs_from_the_exact_ratio_for_int8():
    """fp32(1 / (127/64)) is below 64/127, so the FP32 amax just above
    127/64 gives d = 1 exactly: rceil k = 0 (and 1.98437511 saturates),
    rceil_exact k = 1."""
    a = np.nextafter(np.float32(127 / 64), np.float32(2))
    x = np.r_[a, np.zeros(31)].astype(np.float32)
    assert our_scale(quantize(x, "int8", "mx", scale_rounding="rceil")) == [0]
    assert our_scale(quantize(x, "int8", "mx", scale_rounding="rceil_exact")) == [1]
    assert np.float32(a) * (np.float32(1) / np.float32(127 / 64)) == np.float32(1)


def test_the_default_is_floor_and_mx_scale_is_the_older_name():
    x = np.r_[1.8, np.zeros(31)].astype(np.float32)
    assert quantize(x, "e2m1", "mx").recipe.scale_rounding == "floor"
    assert our_scale(quantize(x, "e2m1", "mx", mx_scale="ceil")) == our_scale(
        quantize(x, "e2m1", "mx", scale_rounding="rceil_exact"))
    assert "scale_rounding='even'" in quantize(x, "e2m1", "mx",
                                                scale_rounding="even").recipe.describe()


def test_conformance_table_rows():
    lines = scale_table("mx", "floor").splitlines()
    assert lines[0].split() == ["amax", "E4M3", "E5M2", "E3M2", "E2M3", "E2M1", "INT8"]
    rows = {line[:34].strip(): line[34:].split() for line in lines[2:]}
    assert rows["zero block"] == ["-127"] * 6
    assert rows["NaN in the block"] == ["NaN"] * 6   # OCP MX: X = NaN for every element
    assert rows["the element max"] == ["0"] * 6
    assert scale_table("mx", "rceil").splitlines()[-1].split()[-6:] == ["NaN"] * 6
    nv = scale_table("nvfp4").splitlines()
    assert nv[0].startswith("amax") and "448" in nv[7]
    with pytest.raises(ValueError, match="accepted 'mx' or 'nvfp4'"):
        scale_table("tensor")


def test_bad_input():
    x = np.ones(32, np.float32)
    with pytest.raises(ValueError,
                       match="scale_rounding='nearest'; accepted 'floor'.*'rceil_exact'"):
        quantize(x, "e4m3", "mx", scale_rounding="nearest")
    with pytest.raises(ValueError, match="scale_rounding=.*rounds E8M0 scales"):
        quantize(x, "e4m3", "tensor", scale_rounding="ceil")
    with pytest.raises(ValueError, match="NVFP4's block scales are E4M3"):
        quantize(np.ones(16, np.float32), "e2m1", "nvfp4", scale_rounding="rceil")
    with pytest.raises(ValueError, match="not both"):
        quantize(x, "e4m3", "mx", scale_rounding="floor", mx_scale="ceil")
    with pytest.raises(ValueError, match="mx_scale='even'"):
        quantize(x, "e4m3", "mx", mx_scale="even")
    with pytest.raises(ValueError, match="int2 is not an OCP MX element.*accepted"):
        quantize(x, "int2", "mx")
