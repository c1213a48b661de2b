"""Special inputs of the quantization recipes: a NaN or an infinity in an
MX block (OCP MX v1.0: a NaN shared scale X makes every value of its block
NaN, whatever the elements hold), and all-zero or tiny amaxes in every
recipe that divides by amax (MX, NVFP4, tensor/channel scaling, delayed
scaling).  The expected codes come from the specs' rules worked by hand,
numpy float32 arithmetic and ml_dtypes casts, never from fpsim."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import fpsim
from fpsim.quant import SCALE_ROUNDINGS, DelayedScaling, error_report, quantize

F32_MAX = np.float32(np.finfo(np.float32).max)
# element format -> (ml_dtypes type or None for MXINT8, largest value)
NO_NAN = {"e2m1": (ml_dtypes.float4_e2m1fn, 6.0), "e3m2": (ml_dtypes.float6_e3m2fn, 28.0),
          "e2m3": (ml_dtypes.float6_e2m3fn, 7.5), "int8": (None, 127 / 64)}
WITH_NAN = {"e4m3": (ml_dtypes.float8_e4m3fn, 448.0), "e5m2": (ml_dtypes.float8_e5m2, 57344.0)}


def element_codes(values: np.ndarray, name: str) -> list[int]:
    """The codes of finite ``values`` cast into the element format,
    saturating (clipped to ±max first), round to nearest even: ml_dtypes
    for the floats, rint(x × 64) for MXINT8 (two's complement, full range)."""
    dtype, top = {**NO_NAN, **WITH_NAN}[name]
    clipped = np.clip(values.astype(np.float64), -top, top)
    if dtype is None:
        return np.clip(np.rint(clipped * 64), -128, 127).astype(np.int64).tolist()
    return clipped.astype(np.float32).astype(dtype).view(np.uint8).astype(np.int64).tolist()


def our_codes(q, name: str) -> tuple[list[int], list[int]]:
    scale = np.asarray(q.scale).view(np.uint8).reshape(-1).astype(np.int64).tolist()
    data = np.asarray(q.data)
    data = data.astype(np.int64) if name == "int8" else data.view(np.uint8).astype(np.int64)
    return scale, data.reshape(-1).tolist()


# -- a NaN in an MX block ---------------------------------------------------------------------

@pytest.mark.parametrize("rule", SCALE_ROUNDINGS)
@pytest.mark.parametrize("name", list(NO_NAN))
def test_mx_nan_block_of_elements_without_nan_has_the_nan_scale(name, rule):
    """The block's X is NaN (0xFF); the elements are x / 2**0 rounded (the
    NaN scale's k is 0), the NaN itself code 0, which raises INVALID; the
    block dequantizes to NaN everywhere.  The other block is untouched."""
    top = NO_NAN[name][1]
    nan_block = np.r_[1.0, np.nan, -0.75, 2 * top, np.zeros(28)]
    clean = np.r_[3.0, -0.5, np.zeros(30)]
    x = np.stack([nan_block, clean]).astype(np.float32)
    ctx = fpsim.Context()
    q = quantize(x, name, "mx", ctx=ctx, scale_rounding=rule)
    scale, data = our_codes(q, name)
    assert scale[0] == 0xFF
    finite = nan_block.copy()
    finite[1] = 0.0
    assert data[:32] == element_codes(finite, name)        # 2 × max saturates
    assert data[1] == 0 and fpsim.Flag.INVALID in ctx.flags
    assert q.saturated[0, 3] and not q.saturated[0, :3].any()
    assert np.isnan(q.dequantize()[0]).all()
    # the clean block is what it is alone
    alone = quantize(clean.astype(np.float32), name, "mx", scale_rounding=rule)
    assert [scale[1]] + data[32:] == sum(our_codes(alone, name), [])
    assert np.array_equal(q.dequantize()[1], alone.dequantize())
    r = error_report(x, q)
    assert r.nan_produced == 31     # every non-NaN element of the NaN block


@pytest.mark.parametrize("name", list(WITH_NAN))
def test_mx_nan_block_of_elements_with_nan_keeps_its_nan_code(name):
    """MXFP8: the NaN scale, and the NaN element stored as the element's
    NaN (ml_dtypes' code for NaN, sign included), without INVALID."""
    block = np.r_[1.0, np.nan, -3.0, np.zeros(29)].astype(np.float32)
    ctx = fpsim.Context()
    q = quantize(block, name, "mx", ctx=ctx)
    scale, data = our_codes(q, name)
    want = element_codes(np.where(np.isnan(block), 0.0, block), name)
    want[1] = int(np.float32(np.nan).astype(WITH_NAN[name][0]).view(np.uint8))
    assert scale == [0xFF] and data == want and ctx.flags == fpsim.Flag(0)
    assert np.isnan(q.dequantize()).all()


def test_mx_nan_block_with_stochastic_rounding_and_other_axis():
    x = np.zeros((32, 2), np.float32)
    x[:, 0] = np.linspace(-1, 1, 32)
    x[5, 1] = np.nan
    q = quantize(x, "e2m1", "mx", axis=0, rounding="sr", rng=7)
    # column 0: amax 1, k = floor(log2 1) - emax(E2M1) = -2 (code 125); column 1: NaN
    assert np.asarray(q.scale).view(np.uint8).tolist() == [[125, 0xFF]]
    assert np.isnan(q.dequantize()[:, 1]).all() and not np.isnan(q.dequantize()[:, 0]).any()


def test_mx_infinity_keeps_a_finite_scale_and_saturates():
    """gfloat's rule: amax = inf gives k = 127 (floor(log2 inf) clamped);
    inf / 2**127 saturates to the max (INVALID), 1 / 2**127 flushes to 0."""
    block = np.r_[1.0, -np.inf, np.zeros(30)].astype(np.float32)
    ctx = fpsim.Context()
    q = quantize(block, "e2m1", "mx", ctx=ctx)
    scale, data = our_codes(q, "e2m1")
    assert scale == [254] and data[:2] == [0, element_codes(np.array([-6.0]), "e2m1")[0]]
    assert fpsim.Flag.INVALID in ctx.flags
    q = quantize(block, "e2m1", "mx", scale_rounding="rceil")   # FP32 d = inf: NaN scale
    assert our_codes(q, "e2m1")[0] == [0xFF]


# -- zero and tiny amax ----------------------------------------------------------------------

@pytest.mark.parametrize("rule", SCALE_ROUNDINGS)
@pytest.mark.parametrize("name", [*NO_NAN, *WITH_NAN])
def test_mx_all_zero_block(name, rule):
    """k = -127 (E8M0 code 0, as gfloat and torchao), zero elements, no flag
    (but rceil's INEXACT of fp32(1 / max), a step that runs for every block)."""
    x = np.zeros((2, 32), np.float32)
    x[1, 3] = -0.0
    ctx = fpsim.Context()
    q = quantize(x, name, "mx", ctx=ctx, scale_rounding=rule)
    scale, data = our_codes(q, name)
    assert scale == [0, 0] and data == element_codes(x.reshape(-1), name)
    allowed = fpsim.Flag.INEXACT if rule == "rceil" else fpsim.Flag(0)
    assert ctx.flags & ~allowed == fpsim.Flag(0) and not q.dequantize().any()


def nvfp4_te_oracle(x: np.ndarray):
    """NVFP4 of one row in numpy float32, with Transformer Engine's
    special cases: s_enc = min(2688 / amax, FP32 max), 1 for a zero or
    infinite amax; the multiplier s_enc / S_b clamped to FP32 max, 0 where
    S_b is 0; casts saturating (clipped first) through ml_dtypes."""
    f32 = np.float32
    a = np.abs(x.astype(np.float64))
    amax_t = f32(a.max())
    with np.errstate(all="ignore"):
        s_enc = f32(1) if amax_t == 0 or np.isinf(amax_t) else min(f32(2688) / amax_t, F32_MAX)
        amax_b = a.reshape(-1, 16).max(-1).astype(f32)
        d = (amax_b / f32(6)).astype(f32)
        scale = np.clip((d * s_enc).astype(np.float64), -448, 448).astype(f32).astype(
            ml_dtypes.float8_e4m3fn)
        s_b = scale.astype(f32)
        mult = np.where(s_b == 0, f32(0), np.minimum(s_enc / s_b, F32_MAX)).astype(f32)
        y = x.astype(f32) * np.repeat(mult, 16)
    q = np.clip(y.astype(np.float64), -6, 6).astype(f32).astype(ml_dtypes.float4_e2m1fn)
    return q, scale, f32(s_enc)


@pytest.mark.parametrize("x", [
    np.zeros(32),                                             # all zero
    np.r_[np.full(16, 2.0 ** -149), np.zeros(16)],            # s_enc overflows; S_b = 0
    np.r_[2.0 ** -126, -(2.0 ** -127), np.zeros(30)],         # s_enc overflows; S_b > 0
    np.r_[1e-30, 3e-31, np.zeros(14), 2.0 ** -140, np.zeros(15)],
    np.r_[np.inf, 1.0, np.zeros(14), -2.0, np.zeros(15)],     # amax_t infinite: s_enc = 1
], ids=["zero", "min-subnormal", "min-normal", "tiny", "inf"])
def test_nvfp4_zero_tiny_and_infinite_amax(x):
    x = x.astype(np.float32)
    want, want_scale, want_s_enc = nvfp4_te_oracle(x)
    q = quantize(x, "e2m1", "nvfp4")
    assert np.array_equal(q.data.view(np.uint8), want.view(np.uint8))
    assert np.array_equal(q.scale.view(np.uint8), want_scale.view(np.uint8))
    assert np.float32(q.tensor_scale).tobytes() == want_s_enc.tobytes()
    assert not np.isnan(q.dequantize()).any()


def test_nvfp4_all_zero_tensor_hand_derived():
    """amax_t = 0: s_enc = 1 (no division, so no flag), every block scale
    E4M3(0 / 6 × 1) = 0, multiplier 0, elements +0 (and -0 for -0)."""
    x = np.zeros((2, 16), np.float32)
    x[0, 1] = -0.0
    ctx = fpsim.Context()
    q = quantize(x, "e2m1", "nvfp4", ctx=ctx)
    assert float(q.tensor_scale) == 1.0 and q.scale.view(np.uint8).tolist() == [[0], [0]]
    assert q.data.view(np.uint8).tolist() == [[0, 8] + [0] * 14, [0] * 16]
    assert ctx.flags == fpsim.Flag(0) and not q.dequantize().any()
    with pytest.raises(ValueError, match="cannot represent"):
        quantize(np.r_[1.0, np.nan, np.zeros(14)].astype(np.float32), "e2m1", "nvfp4")


@pytest.mark.parametrize("scale_format", ["fp32", "fp16", "bf16"])
@pytest.mark.parametrize("rule", ["amax/max", "max/amax"])
def test_tensor_and_channel_zero_groups_get_scale_one(rule, scale_format):
    """A zero group: scale 1 (Transformer Engine's compute_scale_from_amax),
    no division (no flag), zero elements (signs kept); the other groups as
    if quantized alone."""
    x = np.float32([[0.0, -0.0, 0.0], [1.5, -3.0, 0.25]])
    ctx = fpsim.Context()
    q = quantize(x, "e4m3", "channel", ctx=ctx, scale_rule=rule, scale_format=scale_format)
    assert float(q.scale[0]) == 1.0
    assert q.data[0].view(np.uint8).tolist() == [0, 0x80, 0]
    assert not (fpsim.Flag.DIVIDE_BY_ZERO | fpsim.Flag.INVALID) & ctx.flags
    alone = quantize(x[1:], "e4m3", "tensor", scale_rule=rule, scale_format=scale_format)
    assert q.data[1].view(np.uint8).tolist() == alone.data[0].view(np.uint8).tolist()
    q = quantize(np.zeros(4, np.float32), "e2m1", scale_rule=rule, scale_format=scale_format)
    assert float(q.scale) == 1.0 and not q.dequantize().any()


def test_eps_still_floors_a_zero_group():
    """With eps, the floor comes first (as in Transformer Engine): the zero
    group's scale is eps (amax/max) or max / eps (max/amax), not 1."""
    x = np.zeros(4, np.float32)
    assert float(quantize(x, "e4m3", eps=2.0 ** -10).scale) == 2.0 ** -10
    q = quantize(x, "e4m3", scale_rule="max/amax", eps=0.5)
    assert float(q.scale) == 896.0 and not q.dequantize().any()


def test_tiny_nonzero_amax_is_not_a_zero_group():
    """amax = 2**-24 in FP16 is not zero, but amax / 448 underflows to 0 in
    FP16: 1 / 0 = inf, 0 × inf = NaN, the failure eps= is there for."""
    x = np.float16([0.0, 2.0 ** -24])
    q = quantize(x, "e4m3", scale_format="fp16")
    assert np.isnan(q.data[0].astype(np.float64)) and float(q.data[1]) == 448.0


def test_delayed_scaling_tiny_amax_gives_the_largest_scale():
    """448 / 2**-140 overflows FP32: the scale becomes FP32's max
    (Transformer Engine's _default_sf_compute), and the next step's zeros
    stay zeros instead of 0 × inf = NaN."""
    ds = DelayedScaling("e4m3", history_len=1)
    ds.step(np.float32([2.0 ** -140, 0.0]))
    assert np.float32(ds.scale) == F32_MAX
    x = np.float32([0.0, 2.0 ** -140, 1e-38])
    q = ds.step(x)
    with np.errstate(over="ignore"):
        y = (x * F32_MAX).astype(np.float64)
    want = np.clip(y, -448, 448).astype(np.float32).astype(ml_dtypes.float8_e4m3fn)
    assert q.data.view(np.uint8).tolist() == want.view(np.uint8).tolist()
    ds = DelayedScaling("e4m3", history_len=1, scale_format="fp16")
    ds.step(np.float16([2.0 ** -24]))                     # 448 / 2**-24 > 65504
    assert float(ds.scale) == 65504.0
