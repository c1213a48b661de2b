"""fpsim.ops reductions (sum, mean, dot, matmul) against step-by-step
oracles written here with numpy float16/float32/float64 and ml_dtypes
bfloat16 arithmetic, each of which rounds every +, -, * correctly to nearest
even (bfloat16 through float32: 24 >= 2*8 + 2 bits, so the double rounding
is innocuous).  The oracles never call fpsim."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from sum_oracles import pairwise_sum, pieces_sum, seq_sum

import fpsim
from fpsim import ops

BF16 = ml_dtypes.bfloat16


def _data(shape, dtype, seed, spread=6.0):
    """Values over many binades, both signs, some exact zeros and repeats
    (so that sums cancel and ties occur), as ``dtype``."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape) * np.exp2(rng.uniform(-spread, spread, shape))
    x[rng.random(shape) < 0.05] = 0.0
    return x.astype(dtype)


def _bits(a):
    a = np.asarray(a)
    return a.view(f"u{a.dtype.itemsize}")


def _assert_same_bits(actual, expected):
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    mismatch = np.flatnonzero(_bits(actual).ravel() != _bits(expected).ravel())
    assert mismatch.size == 0, (f"{mismatch.size} of {actual.size} differ, first at "
                                f"{mismatch[0]}: {actual.ravel()[mismatch[0]]!r} vs "
                                f"{expected.ravel()[mismatch[0]]!r}")


# -- sum ---------------------------------------------------------------------------------------

ACCUMULATORS = [("fp32", np.float32), ("fp16", np.float16), ("bf16", BF16)]


# (FP16 cannot hold every BF16 value: that pair is left out.)
@pytest.mark.parametrize("dtype,acc_name,acc_dtype",
                         [(dt, n, adt) for dt in (np.float16, BF16) for n, adt in ACCUMULATORS
                          if not (dt is BF16 and adt is np.float16)])
def test_sequential_sum_matches_the_oracle(dtype, acc_name, acc_dtype):
    x = _data((9, 257), dtype, 1)
    got = ops.sum(x, axis=1, accumulate=acc_name, out="fp32")
    # The oracle adds in the accumulator's own numpy/ml_dtypes type.
    expected = seq_sum(x.astype(acc_dtype), acc_dtype).astype(np.float32)
    _assert_same_bits(got, expected)


def test_sum_default_out_is_the_input_format_and_axis_none_sums_everything():
    x = _data((5, 40), np.float16, 2)
    got = ops.sum(x)
    expected = seq_sum(x.reshape(-1).astype(np.float32), np.float32).astype(np.float16)
    _assert_same_bits(got, expected)
    assert got.shape == ()


@pytest.mark.parametrize("n", [0, 1, 2, 3, 5, 7, 8, 11, 64, 100, 129])
def test_pairwise_sum_matches_the_level_by_level_tree(n):
    x = _data((6, n), np.float16, n)
    got = ops.sum(x, axis=-1, accumulate="fp16", order="pairwise", out="fp16")
    _assert_same_bits(got, pairwise_sum(x, np.float16))


@pytest.mark.parametrize("order", [("blocked", 1), ("blocked", 4), ("blocked", 32),
                                   ("blocked", 1000), ("split", 1), ("split", 3),
                                   ("split", 8), ("split", 200)])
def test_blocked_and_split_sums(order):
    k = 150
    x = _data((4, k), np.float16, 3)
    kind, n = order
    if kind == "blocked":
        sizes = [min(n, k - i) for i in range(0, k, n)]
    else:
        sizes = [len(p) for p in np.array_split(np.arange(k), n)]
    got = ops.sum(x, axis=1, accumulate="fp16", order=order)
    _assert_same_bits(got, pieces_sum(x, np.float16, sizes))


def test_the_orders_give_different_fp16_sums():
    x = np.full(4096, 0.1, np.float16)
    results = {str(o): float(ops.sum(x, accumulate="fp16", order=o))
               for o in ("sequential", "pairwise", ("blocked", 64), ("split", 16))}
    assert results["sequential"] == 256.0  # 256 + 0.1 rounds back to 256 in FP16
    assert results["pairwise"] == float(pairwise_sum(x.reshape(1, -1), np.float16)[0])
    assert len(set(results.values())) > 1


def test_sum_over_tuple_axes_and_3d():
    x = _data((3, 4, 5), np.float16, 4)
    got = ops.sum(x, axis=(0, 2), out="fp32")
    terms = np.moveaxis(x, (0, 2), (1, 2)).reshape(4, 15).astype(np.float32)
    _assert_same_bits(got, seq_sum(terms, np.float32))


def test_sum_of_nothing_is_plus_zero_and_zeros_keep_the_accumulators_sign():
    assert _bits(ops.sum(np.zeros((2, 0), np.float16), axis=1)).tolist() == [0, 0]
    negz = np.full(3, -0.0, np.float16)
    assert _bits(ops.sum(negz)).item() == 0x0000          # +0 + -0 = +0
    assert _bits(ops.sum(negz, rounding="rdn")).item() == 0x8000   # toward -inf: -0


def test_codes_in_codes_out():
    x = _data((50,), np.float16, 5)
    got = ops.sum(x.view(np.uint16), fmt="fp16", out="fp32")
    assert got.dtype == np.uint32
    _assert_same_bits(got, _bits(seq_sum(x.astype(np.float32)[None], np.float32)[0]))
    tf = ops.sum(x, out="tf32")  # no dtype for TF32: codes
    assert tf.dtype == np.uint32


def test_flags_overflow_and_saturation():
    x = np.array([65504.0, 65504.0], np.float16)
    ctx = fpsim.Context()
    assert np.isinf(ops.sum(x, ctx=ctx, accumulate="fp16"))
    assert fpsim.Flag.OVERFLOW in ctx.flags
    assert float(ops.sum(x, accumulate="fp16", saturate=True)) == 65504.0
    assert float(ops.sum(x)) == np.inf                      # FP32 sum 131008, then out=fp16
    assert float(ops.sum(x, out="fp32")) == 131008.0


def test_daz_flushes_subnormal_inputs():
    x = np.full(10, 2.0**-24, np.float16)
    assert float(ops.sum(x, accumulate="fp16")) == 10 * 2.0**-24
    assert float(ops.sum(x, accumulate="fp16", daz=True)) == 0.0


def test_stochastic_rounding_is_reproducible_from_the_seed():
    x = np.full(2000, 0.1, np.float16)
    runs = [float(ops.sum(x, accumulate="fp16", rounding="sr",
                          rng=np.random.default_rng(7))) for _ in range(2)]
    assert runs[0] == runs[1]
    assert abs(runs[0] - 2000 * 0.0999755859375) < 20  # no stagnation at 256


# -- mean ---------------------------------------------------------------------------------------

def test_mean_is_the_sum_divided_by_n_in_the_accumulator():
    x = _data((7, 33), np.float16, 6)
    s = seq_sum(x.astype(np.float32), np.float32)
    expected = (s / np.float32(33)).astype(np.float32).astype(np.float16)
    _assert_same_bits(ops.mean(x, axis=1), expected)


def test_mean_of_nothing_is_nan_and_invalid():
    ctx = fpsim.Context()
    assert np.isnan(ops.mean(np.zeros(0, np.float16), ctx=ctx))
    assert fpsim.Flag.INVALID in ctx.flags


# -- dot and matmul -----------------------------------------------------------------------------

def _seq_matmul_fp32(a, b):
    """FP16/FP8 inputs, exact products (they fit FP32), FP32 accumulation:
    acc = acc + a[:, k] * b[k, :], one rounding per step."""
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    acc = np.zeros((a.shape[0], b.shape[1]), np.float32)
    for k in range(a.shape[1]):
        acc = acc + a32[:, k:k + 1] * b32[k:k + 1, :]
    return acc


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2])
def test_sequential_matmul_fp32_accumulate_bit_for_bit(dtype):
    a, b = _data((13, 70), dtype, 8, spread=3), _data((70, 11), dtype, 9, spread=3)
    _assert_same_bits(ops.matmul(a, b, out="fp32"), _seq_matmul_fp32(a, b))
    _assert_same_bits(ops.matmul(a, b), _seq_matmul_fp32(a, b).astype(dtype))


def test_matmul_with_products_rounded_in_fp16():
    a, b = _data((8, 40), np.float16, 10), _data((40, 6), np.float16, 11)
    acc = np.zeros((8, 6), np.float32)
    for k in range(40):
        p = a[:, k:k + 1] * b[k:k + 1, :]   # float16 product, rounded in FP16
        acc = acc + p.astype(np.float32)
    _assert_same_bits(ops.matmul(a, b, compute="fp16", out="fp32"), acc)


def test_matmul_pairwise_and_split_k():
    a, b = _data((5, 37), np.float16, 12), _data((37, 4), np.float16, 13)
    products = (a.astype(np.float32)[:, :, None] * b.astype(np.float32)[None, :, :])
    terms = np.moveaxis(products, 1, 2)  # (M, N, K), exact in FP32
    _assert_same_bits(ops.matmul(a, b, order="pairwise", out="fp32"),
                      pairwise_sum(terms, np.float32))
    sizes = [len(p) for p in np.array_split(np.arange(37), 4)]
    _assert_same_bits(ops.matmul(a, b, order=("split", 4), out="fp32"),
                      pieces_sum(terms, np.float32, sizes))


def test_matmul_fp16_accumulator_promoted_every_n_products():
    # Values k/8 with |v| <= 4: every product and partial sum is exact in
    # float64, so float64 then one cast to float16 is one rounding (fma).
    rng = np.random.default_rng(14)
    a = (rng.integers(-32, 33, (6, 300)) / 8).astype(np.float16)
    b = (rng.integers(-32, 33, (300, 5)) / 8).astype(np.float16)
    total = np.zeros((6, 5), np.float32)
    for start in range(0, 300, 64):
        acc = np.zeros((6, 5), np.float16)
        for k in range(start, min(start + 64, 300)):
            exact = acc.astype(np.float64) + a[:, k:k + 1].astype(np.float64) * b[k:k + 1, :]
            acc = exact.astype(np.float16)
        total = total + acc.astype(np.float32)
    got = ops.matmul(a, b, accumulate="fp16", promote_every=64, out="fp32")
    _assert_same_bits(got, total)


def test_fp16_accumulation_error_grows_with_k():
    rng = np.random.default_rng(15)
    errors = {}
    for k in (64, 4096):
        a = rng.uniform(0, 1, (1, k)).astype(np.float16)
        b = rng.uniform(0, 1, (k, 1)).astype(np.float16)
        exact = float((a.astype(np.float64) @ b.astype(np.float64))[0, 0])
        err = {acc: abs(float(ops.matmul(a, b, accumulate=acc, out="fp32")[0, 0]) - exact) / exact
               for acc in ("fp16", "fp32")}
        errors[k] = err
        assert err["fp32"] < 1e-6
    assert errors[4096]["fp16"] > 10 * errors[64]["fp16"]
    assert errors[4096]["fp16"] > 1e-3


def test_dot_is_matmul_of_a_row_and_a_column():
    x, y = _data((100,), np.float16, 16), _data((100,), np.float16, 17)
    got = ops.dot(x, y, out="fp32")
    _assert_same_bits(got, _seq_matmul_fp32(x[None, :], y[:, None])[0, 0])
    assert got.shape == ()


def test_bf16_products_below_fp32s_range():
    # A bf16 product can be as small as 2**-266, far below FP32's smallest
    # subnormal 2**-149: added exactly to the accumulator, then rounded once.
    x = np.array([1.0, 2.0**-100], BF16)
    y = np.array([2.0**-130, 2.0**-100], BF16)
    ctx = fpsim.Context()
    assert float(ops.dot(x, y, ctx=ctx, out="fp32")) == 2.0**-130   # + 2**-200, to nearest
    assert fpsim.Flag.INEXACT in ctx.flags and fpsim.Flag.UNDERFLOW in ctx.flags
    assert float(ops.dot(x, y, out="fp32", rounding="rup")) == 2.0**-130 + 2.0**-149
    assert float(ops.dot(x, y, out="fp32", rounding="rtz")) == 2.0**-130


# -- bad input ------------------------------------------------------------------------------------

@pytest.mark.parametrize("order", ["tree", ("blocked", 0), ("split", -1), ("blocked", 2.5),
                                   ("blocked",), ("blocked", True)])
def test_unknown_order(order):
    with pytest.raises(ValueError, match="order="):
        ops.sum(np.ones(4, np.float16), order=order)


def test_bad_axes():
    with pytest.raises(ValueError, match="out of range"):
        ops.sum(np.ones((2, 3), np.float16), axis=2)
    with pytest.raises(ValueError, match="repeated axis"):
        ops.sum(np.ones((2, 3), np.float16), axis=(1, -1))


def test_mismatched_shapes():
    with pytest.raises(ValueError, match="M×K and a K×N"):
        ops.matmul(np.ones((2, 3), np.float16), np.ones((4, 2), np.float16))
    with pytest.raises(ValueError, match="two vectors of one length"):
        ops.dot(np.ones(3, np.float16), np.ones(4, np.float16))


def test_formats_that_cannot_hold_exact_products():
    with pytest.raises(ValueError, match="compute="):
        ops.matmul(np.ones((2, 2), np.float32), np.ones((2, 2), np.float32), accumulate="fp16")


def test_mixed_formats_and_codes_without_fmt():
    with pytest.raises(TypeError, match="convert first"):
        ops.dot(np.ones(3, np.float16), np.ones(3, BF16))
    with pytest.raises(TypeError, match="fmt="):
        ops.sum(np.ones(3, np.uint16))
    with pytest.raises(TypeError, match="disagrees"):
        ops.sum(np.ones(3, np.float16), fmt="bf16")
    with pytest.raises(TypeError, match="dtype"):
        ops.sum(np.ones(3, np.complex64))
    with pytest.raises(ValueError, match="codes out of range"):
        ops.sum(np.array([300], np.uint16), fmt="e4m3")


def test_unknown_format_keyword():
    with pytest.raises(ValueError, match="accumulate='fp17'"):
        ops.sum(np.ones(3, np.float16), accumulate="fp17")


def test_promote_every_needs_a_positive_count_and_the_sequential_order():
    a, b = np.ones((2, 8), np.float16), np.ones((8, 2), np.float16)
    with pytest.raises(ValueError, match="promote_every"):
        ops.matmul(a, b, promote_every=0)
    with pytest.raises(ValueError, match="declares the order"):
        ops.matmul(a, b, promote_every=4, order="pairwise")


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.float8_e5m2])
def test_exact_products_take_two_steps_with_the_fmas_bits_and_flags(dtype):
    # With daz=True the fma route is taken; without subnormal inputs daz
    # changes nothing, so both routes must agree, flags included.
    a, b = _data((9, 50), dtype, 20, spread=4), _data((50, 7), dtype, 21, spread=4)
    a[np.abs(a.astype(np.float32)) < 2.0**-14] = 0
    b[np.abs(b.astype(np.float32)) < 2.0**-14] = 0
    for mode in ("rne", "rtz", "rup", "rdn", "rna"):
        c1, c2 = fpsim.Context(rounding=mode), fpsim.Context(rounding=mode)
        fast = ops.matmul(a, b, c1, out="fp32")
        fused = ops.matmul(a, b, c2, out="fp32", daz=True)
        _assert_same_bits(fast, fused)
        assert c1.flags == c2.flags
