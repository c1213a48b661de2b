"""matmul and dot on a matrix unit (``accumulate=`` an fpsim.mma model): the
chain of instructions along K that a library GEMM builds, tiled over the
output; bad combinations refused."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import fpsim
import fpsim.mma as mma
from fpsim import ops
from fpsim.mma import gemm as mma_gemm

E4M3 = ml_dtypes.float8_e4m3fn


def _chain_by_hand(model, a, b, fmt=None):
    """D[m, n] block by block: the instruction on k products at a time, its
    result the next block's c, from c = +0 (the composition under test,
    written out with one model call per block and element)."""
    m, kk = a.shape
    n = b.shape[1]
    dt = fpsim.array.value_dtype(model.output_format)
    d = np.zeros((m, n), dt)
    for i in range(m):
        for j in range(n):
            c = np.zeros(1, dt)
            for start in range(0, kk, model.k):
                c = model(a[i:i + 1, start:start + model.k],
                          b[start:start + model.k, j][None, :], c, fmt=fmt)
            d[i, j] = c[0]
    return d


def test_hand_derived_h100_fp8_chain():
    """Each block of 32 E4M3 products: 1 + 31 * 2**-14; H100 keeps 13 bits
    below the largest exponent, so each 2**-14 is cut: block 1 gives 1, block
    2 adds 1 to c = 1 and gives 2.  FP32 accumulation of the exact products
    gives 2 + 62 * 2**-14."""
    x = np.full((1, 64), 2.0**-7, E4M3)
    x[0, 0] = x[0, 32] = 1.0
    h100 = mma.preset("h100", "e4m3")
    assert ops.matmul(x, x.T, accumulate=h100).tolist() == [[2.0]]
    assert ops.matmul(x, x.T, out="fp32").tolist() == [[2.0 + 62 * 2.0**-14]]
    assert float(ops.dot(x[0], x[0], accumulate=h100)) == 2.0


@pytest.mark.parametrize("gpu,fmt,out", [("h100", "fp16", "fp32"), ("a100", "bf16", "fp32"),
                                         ("v100", "fp16", "fp16"), ("h100", "e5m2", "fp32"),
                                         ("b200", "fp16", "fp16")])
def test_matmul_is_the_chain_of_instructions(gpu, fmt, out):
    model = mma.preset(gpu, fmt, out=out)
    rng = np.random.default_rng(1)
    dt = fpsim.array.value_dtype(model.input_format)
    k = 2 * model.k + 3  # a last block padded with zeros
    a = (rng.standard_normal((5, k)) * 4).astype(dt)
    b = (rng.standard_normal((k, 4)) * 4).astype(dt)
    expected = _chain_by_hand(model, a, b)
    got = ops.matmul(a, b, accumulate=model)
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got.view(f"u{got.itemsize}"),
                                  expected.view(f"u{got.itemsize}"))


def test_tiles_do_not_change_the_result(monkeypatch):
    model = mma.preset("h100", "fp16")
    rng = np.random.default_rng(2)
    a = rng.standard_normal((7, 40)).astype(np.float16)
    b = rng.standard_normal((40, 9)).astype(np.float16)
    whole = ops.matmul(a, b, accumulate=model)
    monkeypatch.setattr(mma_gemm, "_TILE_ELEMENTS", 40 * 5)  # 5 outputs a tile
    np.testing.assert_array_equal(ops.matmul(a, b, accumulate=model).view(np.uint32),
                                  whole.view(np.uint32))


def test_out_converts_the_units_result_once():
    model = mma.preset("h100", "fp16")
    a = np.full((1, 16), 0.1, np.float16)
    wide = ops.matmul(a, a.T, accumulate=model)
    narrow = ops.matmul(a, a.T, accumulate=model, out="fp16")
    assert narrow.dtype == np.float16
    assert narrow[0, 0] == wide[0, 0].astype(np.float16)  # numpy's cast: nearest even


def test_empty_products():
    model = mma.preset("a100", "fp16")
    assert ops.matmul(np.zeros((2, 0), np.float16), np.zeros((0, 3), np.float16),
                      accumulate=model).tolist() == [[0.0] * 3] * 2
    assert ops.matmul(np.zeros((0, 4), np.float16), np.zeros((4, 3), np.float16),
                      accumulate=model).shape == (0, 3)


def test_codes_with_fmt():
    model = mma.preset("h100", "tf32")
    rng = np.random.default_rng(3)
    vals = fpsim.array.round(rng.standard_normal((3, 8)), "tf32")  # TF32 codes (uint32)
    got = ops.matmul(vals, vals.T, fmt="tf32", accumulate=model)
    expected = _chain_by_hand(model, vals, vals.T, fmt="tf32")
    np.testing.assert_array_equal(got.view(np.uint32), expected.view(np.uint32))


@pytest.mark.parametrize("kw,match", [
    ({"compute": "fp16"}, "drop compute="),
    ({"order": "pairwise"}, "drop order="),
    ({"promote_every": 4}, "promote_every=4 is not a multiple of the instruction.s k=16"),
    ({"workers": 0}, "workers="),
])
def test_the_unit_declares_its_own_numerics(kw, match):
    a = np.ones((2, 16), np.float16)
    with pytest.raises(ValueError, match=match):
        ops.matmul(a, a.T, accumulate=mma.preset("h100", "fp16"), **kw)


def test_inputs_of_another_format_are_refused():
    a = np.ones((2, 8), ml_dtypes.bfloat16)
    with pytest.raises(TypeError, match="takes x in fp16; got bf16"):
        ops.matmul(a, a.T, accumulate=mma.preset("a100", "fp16"))
