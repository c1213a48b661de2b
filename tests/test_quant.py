"""fpsim.quant.quantize against step-by-step oracles written here with numpy
float16/float32 arithmetic (IEEE round-to-nearest-even, one rounding per
operation) and ml_dtypes casts, the seed failure (an FP16 scale turning
zeros into NaN) exactly, the error report, and bad input."""

from __future__ import annotations

from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

import fpsim
from fpsim.quant import MXINT8, error_report, quantize

NP_TYPES = {"fp32": np.float32, "fp16": np.float16, "bf16": ml_dtypes.bfloat16}
ELEMENTS = {"e4m3": (ml_dtypes.float8_e4m3fn, 448.0), "e5m2": (ml_dtypes.float8_e5m2, 57344.0),
            "e3m2": (ml_dtypes.float6_e3m2fn, 28.0), "e2m3": (ml_dtypes.float6_e2m3fn, 7.5),
            "e2m1": (ml_dtypes.float4_e2m1fn, 6.0)}


# -- the oracle ------------------------------------------------------------------------------

def group_amax(x: np.ndarray, scaling, axis: int) -> np.ndarray:
    a = np.abs(x.astype(np.float64))
    if scaling == "tensor":
        return np.array(a.max())
    if scaling == "channel":
        return a.max(axis=tuple(i for i in range(a.ndim) if i != axis))
    bh, bw = scaling[1]
    h, w = a.shape
    return a.reshape(h // bh, bh, w // bw, bw).max(axis=(1, 3))


def expand(per_group: np.ndarray, shape, scaling, axis: int) -> np.ndarray:
    if scaling == "tensor":
        return np.broadcast_to(per_group, shape)
    if scaling == "channel":
        s = [1] * len(shape)
        s[axis] = shape[axis]
        return np.broadcast_to(per_group.reshape(s), shape)
    bh, bw = scaling[1]
    return np.repeat(np.repeat(per_group, bh, axis=0), bw, axis=1)


def oracle(x, element, scaling="tensor", scale_format="fp32", rule="amax/max", axis=0,
           eps=None):
    """The recipe in numpy: every step one IEEE operation in the scale
    format's numpy type; the final cast clips to ±max (saturation) and casts
    with ml_dtypes (round to nearest even), or rounds to an integer for INT8."""
    t = NP_TYPES[scale_format]
    amax = group_amax(x, scaling, axis).astype(t)
    emax = t(448.0 if element == "e4m3" else 127 if element == "int8"
             else ELEMENTS[element][1])
    with np.errstate(all="ignore"):
        if rule == "amax/max":
            scale = amax / emax
            if eps is not None:
                scale = np.where(scale < t(eps), t(eps), scale).astype(t)
            mult = t(1.0) / scale
        else:
            if eps is not None:
                amax = np.where(amax < t(eps), t(eps), amax).astype(t)
            scale = emax / amax
            mult = scale
        y = x.astype(t) * expand(mult, x.shape, scaling, axis).astype(t)
        if element == "int8":
            k = np.rint(np.clip(y.astype(np.float64), -256, 256))
            return np.clip(k, -128, 127).astype(np.int8), scale
        dtype, top = ELEMENTS[element]
        q = np.clip(y.astype(np.float64), -top, top).astype(np.float32).astype(dtype)
    return q, scale


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return (a.shape == b.shape and a.dtype == b.dtype
            and np.array_equal(a.reshape(-1).view(np.uint8), b.reshape(-1).view(np.uint8)))


def same_or_both_nan(a: np.ndarray, b: np.ndarray) -> bool:
    """Bits equal, or both NaN: a NaN's sign is the unit's choice (x86 makes
    0 × inf the negative NaN; fpsim's default policy, the positive one)."""
    nan = np.isnan(a.astype(np.float64)) & np.isnan(b.astype(np.float64))
    return same_bits(np.where(nan, 0, a).astype(a.dtype), np.where(nan, 0, b).astype(b.dtype))


def tensor(seed: int, shape, dtype) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape) * np.exp2(rng.integers(-8, 8, shape))
    x[rng.random(shape) < 0.05] = 0.0
    return x.astype(dtype)


# -- the seed failure --------------------------------------------------------------------------

def test_fp16_scale_turns_zeros_into_nan():
    """[[0, 0, 0.1, 0.1]] in FP16 to E5M2, scale computed in FP16: amax /
    57344 = 1.7285e-06 is subnormal, its reciprocal overflows to inf, and
    0 × inf is NaN."""
    x = np.float16([[0, 0, 0.1, 0.1]])
    ctx = fpsim.Context()
    q = quantize(x, "e5m2", scale_format="fp16", ctx=ctx)
    assert q.data.dtype == ml_dtypes.float8_e5m2
    got = q.data.astype(np.float64)
    assert np.isnan(got[0, :2]).all() and got[0, 2:].tolist() == [57344.0, 57344.0]
    scale = np.float16(0.1) / np.float16(57344)
    assert q.scale.dtype == np.float16 and q.scale.view(np.uint16) == scale.view(np.uint16)
    assert 1.72e-6 < float(scale) < 1.73e-6 and float(scale) < 2.0**-14   # subnormal
    with np.errstate(over="ignore"):
        assert np.isinf(np.float16(1) / scale)
    for flag in ("UNDERFLOW", "OVERFLOW", "INVALID", "INEXACT"):
        assert fpsim.Flag[flag] in ctx.flags


def test_fp32_scale_fixes_it():
    q = quantize(np.float16([[0, 0, 0.1, 0.1]]), "e5m2", scale_format="fp32")
    assert q.data.astype(np.float64).tolist() == [[0.0, 0.0, 57344.0, 57344.0]]


def test_eps_in_fp16_fixes_it():
    """The scale floored at FP16's smallest normal: its reciprocal 16384 is
    finite, 0.1 × 16384 = 1638.4 rounds to 1536 in E5M2."""
    q = quantize(np.float16([[0, 0, 0.1, 0.1]]), "e5m2", scale_format="fp16", eps=2.0**-14)
    assert q.data.astype(np.float64).tolist() == [[0.0, 0.0, 1536.0, 1536.0]]
    assert not np.isnan(q.dequantize()).any()


# -- against the oracle ----------------------------------------------------------------------

RECIPES = ["tensor", "channel", ("block", (1, 16)), ("block", (8, 8))]


@pytest.mark.parametrize("element", ["e4m3", "e5m2", "e3m2", "e2m3", "e2m1", "int8"])
@pytest.mark.parametrize("scale_format", ["fp32", "fp16"])
@pytest.mark.parametrize("rule", ["amax/max", "max/amax"])
def test_recipes_equal_the_numpy_oracle(element, scale_format, rule):
    for i, scaling in enumerate(RECIPES):
        for dtype in (np.float16, np.float32, ml_dtypes.bfloat16):
            x = tensor(i, (16, 32), dtype)
            if scale_format == "fp16" and dtype is not np.float16:
                x = x.astype(np.float16).astype(dtype)  # values FP16 holds: no overflow of x
            axis = i % 2
            want, want_scale = oracle(x, element, scaling, scale_format, rule, axis)
            q = quantize(x, "int8" if element == "int8" else element, scaling,
                         scale_format=scale_format, scale_rule=rule, axis=axis)
            assert same_bits(np.asarray(q.scale), np.asarray(want_scale)), (scaling, dtype)
            assert same_bits(q.data, want), (scaling, dtype)


def test_eps_against_the_oracle():
    x = tensor(3, (16, 32), np.float16)
    x[:8] = np.float16(1e-4) * np.sign(x[:8])   # rows whose amax / max is tiny
    for rule in ("amax/max", "max/amax"):
        want, _ = oracle(x, "e4m3", "channel", "fp16", rule, 0, eps=2.0**-14)
        q = quantize(x, "e4m3", "channel", scale_format="fp16", scale_rule=rule, eps=2.0**-14)
        assert same_or_both_nan(q.data, want)
        # amax/max: the floored scale keeps every row finite; max/amax: amax
        # (1e-4) is above eps, 448 / amax overflows FP16, and zeros become NaN
        assert np.isnan(q.data.astype(np.float64)).any() == (rule == "max/amax")


def test_typed_values_in_and_out():
    x = tensor(1, (4, 8), np.float32)
    q = quantize(x, "e2m1", "channel", axis=1)
    assert q.data.dtype == ml_dtypes.float4_e2m1fn and q.scale.shape == (8,)
    assert q.scale.dtype == np.float32 and q.amax.dtype == np.float32
    q = quantize(x, "int8")
    assert q.data.dtype == np.int8 and q.scale.shape == ()
    q = quantize(x, "e4m3", ("block", (2, 4)))
    assert q.scale.shape == (2, 2)
    codes = x.view(np.uint32)
    assert same_bits(quantize(codes, "e4m3", fmt="fp32").data, quantize(x, "e4m3").data)


def test_dequantize_is_the_exact_product_rounded_once():
    x = tensor(5, (4, 8), np.float32)
    for rule in ("amax/max", "max/amax"):
        q = quantize(x, "e4m3", "channel", scale_rule=rule)
        scale = q.scale.astype(np.float64)[:, None]
        elems = q.data.astype(np.float64)
        for got, e, s in zip(q.dequantize().ravel(), elems.ravel(),
                             np.broadcast_to(scale, elems.shape).ravel()):
            exact = Fraction(e) * Fraction(s) if rule == "amax/max" else Fraction(e) / Fraction(s)
            assert got == float(exact)   # float() of a Fraction rounds to nearest


def test_stochastic_rounding_picks_a_neighbour_reproducibly():
    x = tensor(2, (8, 32), np.float32)
    a = quantize(x, "e4m3", rounding="sr", rng=np.random.default_rng(7))
    b = quantize(x, "e4m3", rounding="sr", rng=np.random.default_rng(7))
    assert same_bits(a.data, b.data)
    grid = np.sort(np.arange(256, dtype=np.uint8).view(ml_dtypes.float8_e4m3fn)
                   .astype(np.float64))
    grid = np.unique(grid[np.isfinite(grid)])
    scale = float(a.scale)
    y = (x.astype(np.float32) * (np.float32(1) / np.float32(scale))).astype(np.float64)
    got = a.data.astype(np.float64)
    lo = grid[np.searchsorted(grid, y, side="right") - 1]
    hi = grid[np.minimum(np.searchsorted(grid, y, side="left"), grid.size - 1)]
    assert ((got == lo) | (got == hi)).all()
    assert (got != quantize(x, "e4m3").data.astype(np.float64)).any()  # some rounded the other way


def test_mxint8_cast_is_twos_complement_and_saturates():
    """MXINT8 elements: multiples of 2**-6 from -2 (code -128) to 127/64;
    values beyond saturate.  (Scaled by amax, |x × multiplier| never passes
    127/64, so quantize() itself never reaches -128.)"""
    from fpsim.quant._elements import cast
    y = np.float32([-3.0, -2.0, -1.995, -1.99, 0.5 / 64, 1.5 / 64, 1.984375, 1.99, 5.0])
    got = cast(y.view(np.uint32), fpsim.FP32, MXINT8, fpsim.Context())
    assert got.dtype == np.int8
    assert got.tolist() == [-128, -128, -128, -127, 0, 2, 127, 127, 127]
    assert MXINT8.min == -2 and MXINT8.max == Fraction(127, 64) and MXINT8.emax == 0


# -- the error report ------------------------------------------------------------------------

def test_error_report_counts_and_errors():
    x = np.float32([[0.0, 1e-9, 1.0, -2.0], [100.0, np.nan, 3.0, -0.5]])
    q = quantize(x, "e4m3", "channel", axis=0, scale_format="fp16")
    r = error_report(x, q, per_block=True)
    y = q.dequantize()
    finite = np.isfinite(x) & np.isfinite(y)
    err = np.abs(x[finite].astype(np.float64) - y[finite])
    assert r.total == 8
    assert r.max_abs_error == err.max()
    sig = np.sum(x[finite].astype(np.float64) ** 2)
    assert r.sqnr_db == pytest.approx(10 * np.log10(sig / np.sum(err ** 2)))
    assert r.flushed_to_zero == 1            # 1e-9 is far below the row's last E4M3 step
    # the NaN makes its row's amax and scale NaN: the row's 3 numbers become NaN
    assert r.nan_produced == 3 and r.per_block[1]["nan_produced"] == 3
    assert [b["block"] for b in r.per_block] == [(0,), (1,)]
    assert r.per_block[0]["flushed_to_zero"] == 1 and r.per_block[1]["total"] == 4
    d = r.to_dict()
    assert {"total", "max_abs_error", "max_rel_error", "sqnr_db", "saturated",
            "flushed_to_zero", "nan_produced", "inf_produced", "per_block"} <= set(d)
    assert "SQNR" in str(r) and "saturated" in str(r)


def test_error_report_of_the_seed_failure():
    x = np.float16([[0, 0, 0.1, 0.1]])
    r = error_report(x, quantize(x, "e5m2", scale_format="fp16"))
    assert (r.nan_produced, r.saturated, r.inf_produced) == (2, 2, 0)


# -- bad input -------------------------------------------------------------------------------

def test_bad_input():
    x = np.ones((4, 6), np.float32)
    with pytest.raises(ValueError, match="unknown scaling"):
        quantize(x, "e4m3", "row")
    with pytest.raises(ValueError, match="not multiples of the tile"):
        quantize(x, "e4m3", ("block", (4, 4)))
    with pytest.raises(ValueError, match="tiles the last two axes"):
        quantize(np.ones(8, np.float32), "e4m3", ("block", (1, 4)))
    with pytest.raises(ValueError, match="axis=2"):
        quantize(x, "e4m3", "channel", axis=2)
    with pytest.raises(ValueError, match="element_format='e9m9' is not a format"):
        quantize(x, "e9m9")
    with pytest.raises(ValueError, match="scale_format='fp12'"):
        quantize(x, "e4m3", scale_format="fp12")
    with pytest.raises(ValueError, match="no sign or no zero"):
        quantize(x, "e8m0")
    with pytest.raises(ValueError, match="no sign or no zero"):
        quantize(x, "e4m3", scale_format="e8m0")
    with pytest.raises(ValueError, match=r"fp64's largest value 1.79769e\+308 is beyond "
                                         r"scale_format=fp32's .*\(scale_format='fp64'\)"):
        quantize(x, "fp64")   # FP64 scales (scale_format="fp64"): tests/test_quant_fp64.py
    with pytest.raises(ValueError, match="scale_rule"):
        quantize(x, "e4m3", scale_rule="amax")
    with pytest.raises(ValueError, match="e2m1 cannot represent"):
        quantize(np.float32([1.0, np.nan]), "e2m1")
    with pytest.raises(TypeError, match="fmt="):
        quantize(np.ones(4, np.uint16), "e4m3")
    with pytest.raises(ValueError, match="shape"):
        error_report(np.ones(3, np.float32), quantize(x, "e4m3"))


# -- NVFP4 -----------------------------------------------------------------------------------

def nvfp4_oracle(x: np.ndarray):
    """NVFP4's steps in numpy float32 and ml_dtypes casts (clipped first:
    the casts saturate)."""
    f32 = np.float32
    rows = x.shape[0]
    amax_t = f32(np.abs(x.astype(np.float64)).max())
    with np.errstate(all="ignore"):
        s_enc = f32(448.0 * 6.0) / amax_t
        amax_b = np.abs(x.astype(np.float64).reshape(rows, -1, 16)).max(-1).astype(f32)
        d = amax_b / f32(6.0)
        scale = np.clip((d * s_enc).astype(np.float64), -448, 448).astype(
            f32).astype(ml_dtypes.float8_e4m3fn)
        s_b = scale.astype(f32)
        mult = np.where(s_b == 0, f32(0), s_enc / s_b).astype(f32)
        y = x.astype(f32) * np.repeat(mult, 16, axis=-1)
    q = np.clip(y.astype(np.float64), -6, 6).astype(f32).astype(ml_dtypes.float4_e2m1fn)
    return q, scale, s_enc


def test_nvfp4_equals_the_numpy_oracle():
    for seed, dtype in enumerate((np.float32, np.float16, ml_dtypes.bfloat16)):
        x = tensor(seed, (8, 64), dtype)
        x[1, :16] = 0.0                          # a zero block
        x[2, 16:32] = x[2, 16:32] * 1e-7 if dtype is np.float32 else x[2, 16:32]
        want, want_scale, want_s_enc = nvfp4_oracle(x)
        q = quantize(x, "e2m1", "nvfp4")
        assert q.scale.shape == (8, 4) and q.data.shape == x.shape
        assert same_bits(q.scale, want_scale)
        assert same_bits(q.tensor_scale, np.asarray(want_s_enc))
        assert same_bits(q.data, want)
        assert not np.isnan(q.dequantize()).any()


def test_nvfp4_hand_derived():
    """amax_t = 6 × 448 / 2**k picks s_enc = 2**k exactly: x = [6, 3, 0.5, 0, ...]
    in one block with amax_t = 6: s_enc = 2688 / 6 = 448; d = 6 / 6 = 1,
    1 × 448 = 448 = the E4M3 block scale; multiplier 448 / 448 = 1; the
    elements are 6, 3, 0.5 themselves, and dequantize to 6 × 448 / 448."""
    x = np.float32([6.0, 3.0, 0.5] + [0.0] * 13)
    q = quantize(x, "e2m1", "nvfp4")
    assert float(q.tensor_scale) == 448.0 and q.scale.astype(float).tolist() == [448.0]
    assert q.data.astype(float)[:3].tolist() == [6.0, 3.0, 0.5]
    assert q.dequantize()[:3].tolist() == [6.0, 3.0, 0.5]
    with pytest.raises(ValueError, match="E2M1"):
        quantize(x, "e4m3", "nvfp4")
