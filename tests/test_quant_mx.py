"""OCP MX quantization against gfloat's block encoding (compute_scale_amax,
encode_block) on random and adversarial blocks for every MX element format,
against examples derived by hand from the OCP MX v1.0 spec, and the round-up
scale variant against exact Fractions."""

from __future__ import annotations

from fractions import Fraction

import gfloat
import numpy as np
import pytest
from gfloat import formats as gf

from fpsim.quant import quantize

BLOCK_FORMATS = {
    "e4m3": gf.format_info_mxfp8_e4m3, "e5m2": gf.format_info_mxfp8_e5m2,
    "e3m2": gf.format_info_mxfp6_e3m2, "e2m3": gf.format_info_mxfp6_e2m3,
    "e2m1": gf.format_info_mxfp4_e2m1, "int8": gf.format_info_mxint8,
}


def gfloat_codes(block: np.ndarray, name: str) -> tuple[int, list[int]]:
    """gfloat's E8M0 scale code and element codes of one block of 32."""
    fi = BLOCK_FORMATS[name]
    vals = block.astype(np.float64)
    scale = gfloat.compute_scale_amax(fi.etype.emax, vals)
    codes = list(gfloat.encode_block(fi, scale, vals / scale))
    return codes[0], codes[1:]


def our_codes(q, name: str) -> tuple[np.ndarray, np.ndarray]:
    scale = np.asarray(q.scale).view(np.uint8)
    data = np.asarray(q.data)
    data = data.view(np.uint8) if name != "int8" else data.astype(np.int64) & 0xFF
    return scale, data


def adversarial_blocks(name: str) -> list[np.ndarray]:
    elem_max = float(BLOCK_FORMATS[name].etype.max)
    rng = np.random.default_rng(len(name))
    blocks = [np.zeros(32),                                    # all zero
              np.full(32, elem_max),                           # amax at the element max
              np.r_[elem_max * 1.999, rng.standard_normal(31)],  # saturates under the floor rule
              np.r_[2.0**-140, -(2.0**-145), np.zeros(30)],    # amax a subnormal of FP32
              np.r_[-0.0, 1.0, -1.0, 0.5, 2.0**-20, np.zeros(27)],
              np.r_[np.inf, 1.0, -3.0, np.zeros(29)],          # an infinity
              rng.standard_normal(32) * 2.0**100,
              rng.standard_normal(32) * 2.0**-100]
    return [b.astype(np.float32) for b in blocks]


@pytest.mark.parametrize("name", list(BLOCK_FORMATS))
def test_mx_equals_gfloat(name):
    rng = np.random.default_rng(1)
    blocks = adversarial_blocks(name) + [
        (rng.standard_normal(32) * np.exp2(rng.integers(-20, 20, 32))).astype(np.float32)
        for _ in range(200)]
    x = np.stack(blocks)
    q = quantize(x, name, "mx")
    assert q.scale.shape == (len(blocks), 1)
    scale, data = our_codes(q, name)
    for i, block in enumerate(blocks):
        want_scale, want = gfloat_codes(block, name)
        assert scale[i, 0] == want_scale, (i, block)
        assert data[i].tolist() == want, (i, block)


@pytest.mark.parametrize("name", ["e4m3", "e5m2"])
def test_a_block_with_nan_has_the_nan_scale(name):
    block = np.r_[1.0, np.nan, 2.0, np.zeros(29)].astype(np.float32)
    q = quantize(block, name, "mx")
    want_scale, want = gfloat_codes(block, name)
    assert int(np.asarray(q.scale).view(np.uint8)[0]) == want_scale == 0xFF
    assert np.isnan(q.dequantize()).all()
    assert np.isnan(np.asarray(q.data).astype(np.float64)[1])


@pytest.mark.parametrize("name", ["e2m1", "int8", "e3m2", "e2m3"])
def test_a_block_with_nan_has_the_nan_scale_in_formats_without_nan(name):
    """OCP MX v1.0: a NaN scale X makes the whole block NaN, so the NaN is
    carried by X (gfloat computes the same NaN scale, then refuses to
    encode the NaN element); the element that cannot hold it is code 0."""
    block = np.r_[1.0, np.nan, np.zeros(30)].astype(np.float32)
    fi = BLOCK_FORMATS[name]
    assert np.isnan(gfloat.compute_scale_amax(fi.etype.emax, block.astype(np.float64)))
    q = quantize(block, name, "mx")
    scale, data = our_codes(q, name)
    assert scale[0] == 0xFF and data[1] == 0
    assert np.isnan(q.dequantize()).all()


def test_hand_derived_from_the_spec():
    """MXFP8 E4M3 (emax 8): amax 3.5 → floor(log2 3.5) = 1, X = 2**(1 - 8) =
    2**-7 (E8M0 code 120); 3.5 / X = 448, 0.1 / X = 12.8 → 13 (E4M3 has 3
    fraction bits: 12, 13, 14 near 12.8; 13 is nearest).  MXFP4 E2M1 (emax 2):
    X = 2**(1 - 2) = 0.5 (code 126); 3.5 / 0.5 = 7 saturates to 6, 0.1 / 0.5
    = 0.2 rounds to 0 (below the smallest subnormal 0.5's half)."""
    block = np.r_[3.5, 0.1, np.zeros(30)].astype(np.float32)
    q = quantize(block, "e4m3", "mx")
    assert int(np.asarray(q.scale).view(np.uint8)[0]) == 120
    assert np.asarray(q.data).astype(np.float64)[:2].tolist() == [448.0, 13.0]
    q = quantize(block, "e2m1", "mx")
    assert int(np.asarray(q.scale).view(np.uint8)[0]) == 126
    assert np.asarray(q.data).astype(np.float64)[:2].tolist() == [6.0, 0.0]
    assert q.saturated[0] and not q.saturated[1:].any()


@pytest.mark.parametrize("name", ["e4m3", "e5m2", "e3m2", "e2m3", "e2m1", "int8"])
def test_round_up_scale_never_saturates(name):
    """mx_scale="ceil": the smallest k with amax / 2**k <= element max, from
    exact Fractions."""
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((50, 32)) * np.exp2(rng.integers(-30, 30, (50, 1)))).astype(
        np.float32)
    q = quantize(x, name, "mx", mx_scale="ceil")
    top = Fraction(BLOCK_FORMATS[name].etype.max)
    for row, code in zip(x, np.asarray(q.scale).view(np.uint8).ravel()):
        amax = max(Fraction(float(v)) for v in np.abs(row))
        k = int(code) - 127
        assert amax / Fraction(2) ** k <= top < amax / Fraction(2) ** (k - 1)
    assert not q.saturated.any()


def test_axis_and_shapes():
    x = np.arange(64 * 3, dtype=np.float32).reshape(64, 3)
    q = quantize(x, "e4m3", "mx", axis=0)
    assert q.scale.shape == (2, 3) and q.data.shape == (64, 3)
    assert q.recipe.describe().startswith("one E8M0 scale per 32 elements along axis 0")
    assert np.array_equal(q.scale, quantize(x.T.copy(), "e4m3", "mx").scale.T)
    with pytest.raises(ValueError, match="not a multiple of the MX block size"):
        quantize(np.ones((4, 40), np.float32), "e4m3", "mx")
    with pytest.raises(ValueError, match="E8M0"):
        quantize(np.ones(32, np.float32), "e4m3", "mx", scale_format="fp32")
    with pytest.raises(ValueError, match="mx_scale"):
        quantize(np.ones(32, np.float32), "e4m3", "mx", mx_scale="round")
