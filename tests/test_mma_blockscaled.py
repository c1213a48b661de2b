"""Blackwell's block-scaled instructions (fpsim.mma.blockscaled) against an
independent oracle of MMA-Sim 2.1.1's arithmetic (tests/blockscaled_oracle.py,
Python integers and Fractions), on every element-format combination the
instructions take: random codes, adversarial blocks (truncation at the
alignment, cancellation, the largest scales, subnormal elements and results)
and special cases; and hand-derived results."""

from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import pytest
from blockscaled_oracle import ELEMENTS, WIDTH, gst_fdpa, st_fdpa
from blockscaled_oracle import codes as _codes
from blockscaled_oracle import fp32_codes as _fp32_codes

from fpsim import mma
from fpsim.mma import blockscaled


@pytest.mark.parametrize("fa, fb", list(itertools.product(ELEMENTS, ELEMENTS)))
@pytest.mark.parametrize("adversarial", [False, True], ids=["random", "adversarial"])
def test_mxf8f6f4_equals_the_oracle(fa, fb, adversarial):
    rng = np.random.default_rng(WIDTH[fa] * 31 + WIDTH[fb] + adversarial)
    n = 48
    unit = mma.block_scaled("b200", "mxfp8", a=fa, b=fb)
    a = _codes(rng, fa, (n, 32), adversarial)
    b = _codes(rng, fb, (n, 32), adversarial)
    if adversarial:
        sa = rng.choice([0, 1, 60, 100, 127, 150, 200, 253, 254, 255], n).astype(np.uint8)
        sb = rng.choice([0, 1, 90, 127, 130, 200, 254], n).astype(np.uint8)
    else:
        sa = rng.integers(0, 256, n).astype(np.uint8)
        sb = rng.integers(0, 256, n).astype(np.uint8)
    c = _fp32_codes(rng, n, adversarial)
    got = unit(a, b, c, scale_a=sa[:, None], scale_b=sb[:, None]).view(np.uint32)
    want = [st_fdpa(a[i].tolist(), b[i].tolist(), fa, fb, int(c[i]), int(sa[i]), int(sb[i]))
            for i in range(n)]
    assert got.tolist() == want


KINDS_FP4 = [("mxfp4", None, None), ("mxf4nvf4", "e8m0", 32), ("mxf4nvf4", "e8m0", 16),
             ("nvfp4", None, None)]


@pytest.mark.parametrize("recipe, scale, block", KINDS_FP4)
@pytest.mark.parametrize("adversarial", [False, True], ids=["random", "adversarial"])
def test_fp4_kinds_equal_the_oracle(recipe, scale, block, adversarial):
    unit = mma.block_scaled("rtx-pro-6000", recipe, scale=scale, block=block)
    p = unit.params
    rng = np.random.default_rng(len(recipe) + p.block + adversarial)
    n, per = 48, 64 // p.block
    a = _codes(rng, "e2m1", (n, 64), adversarial)
    b = _codes(rng, "e2m1", (n, 64), adversarial)
    if adversarial:
        b[::3, :16] = a[::3, :16] ^ 0x8          # a group that cancels to 0
        a[1::3, 16:32] = 0                        # an all-zero group
    if p.scale == "ue4m3":
        pool = [0, 1, 7, 8, 0x38, 0x70, 0x7E, 0x7F, 0x80, 0xB8, 0xFE] if adversarial else None
    else:
        pool = [0, 1, 60, 127, 200, 227, 254, 255] if adversarial else None
    if pool is None:
        sa = rng.integers(0, 256, (n, per)).astype(np.uint8)
        sb = rng.integers(0, 256, (n, per)).astype(np.uint8)
    else:
        sa = rng.choice(pool, (n, per)).astype(np.uint8)
        sb = rng.choice(pool, (n, per)).astype(np.uint8)
    c = _fp32_codes(rng, n, adversarial)
    got = unit(a, b, c, scale_a=sa, scale_b=sb).view(np.uint32)
    want = [gst_fdpa(a[i].tolist(), b[i].tolist(), int(c[i]), sa[i].tolist(), sb[i].tolist(),
                     p.scale, p.block) for i in range(n)]
    assert got.tolist() == want


def _one(unit, a_items, b_items, c, sa, sb):
    k = unit.k
    a = np.zeros((1, k), np.uint8)
    b = np.zeros((1, k), np.uint8)
    for i, v in a_items.items():
        a[0, i] = v
    for i, v in b_items.items():
        b[0, i] = v
    per = k // unit.params.block
    one = 0x38 if unit.params.scale == "ue4m3" else 127     # the scale 1.0
    sa = np.array([sa + [one] * (per - len(sa))], np.uint8)
    sb = np.array([sb + [one] * (per - len(sb))], np.uint8)
    return int(unit(a, b, np.float32([c]), scale_a=sa, scale_b=sb).view(np.uint32)[0])


def test_hand_derived_results():
    """Each worked out by hand from the rules (module docstring)."""
    st = mma.preset("b200", "mxfp8")
    # -1 * 2**-30 against c = 1: below 2**-25 of the largest exponent, it truncates away
    assert _one(st, {0: 0xB8}, {0: 0x38}, 1.0, [127 - 30], [127]) == 0x3F800000
    # zero products take exponent -133, not their scales': c = 1 survives scales of 2**127
    assert _one(st, {}, {i: 0x7E for i in range(32)}, 1.0, [254], [254]) == 0x3F800000
    # 32 * 448**2 * 2**254 overflows: an infinity, though the rounding is toward zero
    a = {i: 0x7E for i in range(32)}
    assert _one(st, a, a, 0.0, [254], [254]) == 0x7F800000
    # 2**24 + 1 rounds toward zero
    assert _one(st, {0: 0x38}, {0: 0x38}, 2.0**24, [127], [127]) == 0x4B800000
    # a NaN scale makes NaN even where every element is zero
    assert _one(st, {}, {}, 1.0, [255], [127]) == 0x7FFFFFFF
    # a zero result is +0: 1 - 1
    assert _one(st, {0: 0xB8}, {0: 0x38}, 1.0, [127], [127]) == 0x00000000
    fp4 = mma.preset("b200", "mxfp4")
    # -2**-42 against c = 1 at 35 bits: truncated away
    assert _one(fp4, {0: 0x1}, {0: 0x9}, 1.0, [127 - 40], [127]) == 0x3F800000
    # a group that cancels (6*6 - 6*6) keeps its scale's exponent 100: c = 1 truncates away
    assert _one(fp4, {0: 0x7, 1: 0x7}, {0: 0x7, 1: 0xF}, 1.0, [227], [127]) == 0x00000000
    # the same group all zero takes exponent -139: c survives
    assert _one(fp4, {}, {0: 0x7, 1: 0xF}, 1.0, [227], [127]) == 0x3F800000
    nv = mma.preset("b200", "nvfp4")
    # a UE4M3 scale's significand multiplies: 1.5 * 1.5 * (1 * 1.125) = 2.53125
    assert _one(nv, {0: 0x3}, {0: 0x3}, 0.0, [0x38], [0x39]) == np.float32(2.53125).view(
        np.uint32)
    # the sign bit of a UE4M3 scale is ignored; 0x7F (and 0xFF) is NaN
    assert _one(nv, {0: 0x3}, {0: 0x3}, 0.0, [0xB8], [0x38]) == np.float32(2.25).view(
        np.uint32)
    assert _one(nv, {}, {}, 0.0, [0xFF], [0x38]) == 0x7FFFFFFF


def test_the_exponent_of_zero_terms_sets_the_grid():
    """Where every nonzero term lies below the zero terms' exponent, that
    exponent is the largest and sets the grid: 2**-148 - 2**-156 keeps its
    second term on the grid of -133 - 25 and rounds toward zero to 2**-149
    (a grid from -126 would drop it, giving 2**-148)."""
    st = mma.preset("b200", "mxfp8")
    assert _one(st, {0: 0x38, 1: 0x98}, {0: 0x38, 1: 0x18}, 0.0, [0], [106]) == 1
    # GST: 0.25 * 2**-146 and -0.25 * 2**-168 (scales per block of 16), on the
    # grid of -139 - 35; zero groups and c at -139
    nv16 = mma.block_scaled("b200", "mxf4nvf4", scale="e8m0", block=16)
    assert _one(nv16, {0: 0x1, 16: 0x9}, {0: 0x1, 16: 0x1}, 0.0, [54, 43], [54, 43]) == 1
    fp4 = mma.preset("b200", "mxfp4")    # blocks of 32: the second group in the next block
    assert _one(fp4, {0: 0x1, 32: 0x9}, {0: 0x1, 32: 0x1}, 0.0, [54, 43], [54, 43]) == 1


def test_subnormal_results_are_kept_and_truncated():
    st = mma.preset("b200", "mxfp8")
    # 1.5 * 1.75 * 2**-127 * 2**-20 = 10.5 * 2**-149: the subnormal 10 * 2**-149, truncated
    assert _one(st, {0: 0x3C}, {0: 0x3E}, 0.0, [0], [107]) == 10
    # 1.5 * 1.5 * 2**-147 = 9 * 2**-149 exactly
    assert _one(st, {0: 0x3C}, {0: 0x3C}, 0.0, [0], [107]) == 9
    # the negative of a result that truncates to zero is +0
    assert _one(st, {0: 0xB8}, {0: 0x38}, 0.0, [0], [0]) == 0


def test_values_and_codes_give_the_same_bits_and_chain_is_instructions_in_order():
    rng = np.random.default_rng(5)
    unit = mma.preset("b200", "mxfp8")
    a = rng.integers(0, 256, (6, 96)).astype(np.uint8)
    a[(a & 0x7F) == 0x7F] = 0      # no NaN codes: values and codes both
    b = rng.integers(0, 256, (6, 96)).astype(np.uint8)
    b[(b & 0x7F) == 0x7F] = 0
    sa = rng.integers(100, 150, (6, 3)).astype(np.uint8)
    sb = rng.integers(100, 150, (6, 3)).astype(np.uint8)
    c = rng.standard_normal(6).astype(np.float32)
    whole = unit(a, b, c, scale_a=sa, scale_b=sb, chain=True)
    d = c
    for j in range(3):
        s = slice(32 * j, 32 * (j + 1))
        d = unit(a[:, s], b[:, s], d, scale_a=sa[:, j:j + 1], scale_b=sb[:, j:j + 1])
    assert np.array_equal(whole.view(np.uint32), d.view(np.uint32))
    typed = unit(a.view(ml_dtypes.float8_e4m3fn), b.view(ml_dtypes.float8_e4m3fn), c,
                 scale_a=sa.view(ml_dtypes.float8_e8m0fnu),
                 scale_b=sb.view(ml_dtypes.float8_e8m0fnu), chain=True)
    assert np.array_equal(typed.view(np.uint32), whole.view(np.uint32))


@pytest.mark.parametrize("call, error, message", [
    (lambda u: u(np.zeros((1, 32), np.uint8), np.zeros((1, 32), np.uint8), None,
                 scale_a=np.zeros((1, 2), np.uint8), scale_b=np.zeros((1, 1), np.uint8)),
     ValueError, r"scale_a has shape \(1, 2\); accepted \(1, 1\)"),
    (lambda u: u(np.zeros((1, 32), np.uint8), np.zeros((1, 32), np.uint8), None,
                 scale_a=np.zeros((1, 1), np.float32), scale_b=np.zeros((1, 1), np.uint8)),
     TypeError, "scale_a is float32; accepted: uint8 codes or float8_e8m0fnu"),
    (lambda u: u(np.zeros((1, 48), np.uint8), np.zeros((1, 48), np.uint8), None,
                 scale_a=np.zeros((1, 1), np.uint8), scale_b=np.zeros((1, 1), np.uint8)),
     ValueError, r"K=48 is not a multiple of the scale block \(32"),
    (lambda u: u(np.zeros((1, 64), np.uint8), np.zeros((1, 64), np.uint8), None,
                 scale_a=np.zeros((1, 2), np.uint8), scale_b=np.zeros((1, 2), np.uint8)),
     ValueError, "K=64 products exceed this instruction's k=32; pass chain=True"),
    (lambda u: u(np.zeros((1, 32), np.uint8), np.zeros((1, 32), np.uint8), None),
     TypeError, "scale_a= is required"),
    (lambda u: u(np.zeros((1, 32), np.float16), np.zeros((1, 32), np.uint8), None,
                 scale_a=np.zeros((1, 1), np.uint8), scale_b=np.zeros((1, 1), np.uint8)),
     TypeError, "a is float16; accepted: unsigned integer codes of e4m3"),
    (lambda u: mma.block_scaled("b200", "mxfp4", a="e4m3"), ValueError,
     "mxf4 has no e4m3 elements; accepted: e2m1"),
    (lambda u: mma.block_scaled("b200", "mxfp8", scale="ue4m3"), ValueError,
     "mxf8f6f4 has no ue4m3 scale per 32 elements; accepted: e8m0 per 32"),
    (lambda u: mma.block_scaled("h100", "mxfp8"), ValueError,
     "block-scaled instructions are modelled on b200, rtx-pro-6000"),
    (lambda u: mma.preset("b200", "nvfp4", out="fp16"), ValueError,
     "block-scaled nvfp4 instructions write FP32"),
])
def test_bad_input_is_a_clear_error(call, error, message):
    unit = mma.preset("b200", "mxfp8")
    with pytest.raises(error, match=message):
        call(unit)


def test_the_kinds_are_data():
    assert set(blockscaled.KINDS) == {"mxf8f6f4", "mxf4", "mxf4nvf4"}
    for recipe, (kind, fa, fb, scale, block) in blockscaled.RECIPES.items():
        row = blockscaled.KINDS[kind]
        assert fa in row["elements"] and fb in row["elements"]
        assert (scale, block) in row["scales"]
        assert mma.preset("b200", recipe).params.kind == kind


# -- ops.matmul on quantized operands ------------------------------------------------


def _chain_st(a_row, b_col, sa_row, sb_col, fa, fb):
    code = 0
    for j in range(len(a_row) // 32):
        s = slice(32 * j, 32 * (j + 1))
        code = st_fdpa(a_row[s], b_col[s], fa, fb, code, sa_row[j], sb_col[j])
    return code


def _chain_gst(a_row, b_col, sa_row, sb_col, block, scale="e8m0"):
    code, per = 0, 64 // block
    for j in range(len(a_row) // 64):
        s = slice(64 * j, 64 * (j + 1))
        code = gst_fdpa(a_row[s], b_col[s], code, sa_row[per * j:per * (j + 1)],
                        sb_col[per * j:per * (j + 1)], scale, block)
    return code


@pytest.mark.parametrize("elem", ["e4m3", "e5m2", "e3m2", "e2m1"])
def test_matmul_of_mx_results_equals_the_oracle_chained(elem):
    from fpsim import ops, quant
    rng = np.random.default_rng(len(elem))
    x = (rng.standard_normal((3, 128)) * np.exp2(rng.integers(-8, 8, (3, 128)))).astype(
        np.float32)
    y = rng.standard_normal((128, 4)).astype(np.float32)
    qx = quant.quantize(x, elem, "mx", axis=1)
    qy = quant.quantize(y, elem, "mx", axis=0)
    recipe = "mxfp4" if elem == "e2m1" else "mxfp8"
    unit = (mma.preset("b200", recipe) if recipe == "mxfp4"
            else mma.block_scaled("b200", "mxfp8", a=elem, b=elem))
    got = ops.matmul(qx, qy, accumulate=unit).view(np.uint32)
    ca, sa = qx.block_operand()[:2]
    cb, sb = qy.block_operand()[:2]
    for i in range(3):
        for j in range(4):
            args = (ca[i].tolist(), cb[:, j].tolist(), sa[i].tolist(), sb[:, j].tolist())
            want = _chain_gst(*args, 32) if recipe == "mxfp4" else _chain_st(*args, elem, elem)
            assert int(got[i, j]) == want, (i, j)
    bf16 = ops.matmul(qx, qy, accumulate=unit, out="bf16")
    assert np.array_equal(bf16, got.view(np.float32).astype(ml_dtypes.bfloat16))


def test_matmul_of_quantized_operands_refuses_what_does_not_fit():
    from fpsim import ops, quant
    x = np.ones((2, 64), np.float32)
    unit = mma.preset("b200", "mxfp8")
    qx = quant.quantize(x, "e4m3", "mx", axis=1)
    with pytest.raises(TypeError, match="takes fpsim.quant.quantize results"):
        ops.matmul(x, x.T, accumulate=unit)
    with pytest.raises(ValueError, match=r"y must be 2-D and quantized along K \(axis 0"):
        ops.matmul(qx, quant.quantize(np.ones((64, 32), np.float32), "e4m3", "mx", axis=1),
                   accumulate=unit)
    with pytest.raises(ValueError, match="y holds e5m2 elements with e8m0 scales per 32; the "
                                         "instruction takes e4m3"):
        ops.matmul(qx, quant.quantize(x.T.copy(), "e5m2", "mx", axis=0), accumulate=unit)
    with pytest.raises(ValueError, match="holds e2m1 elements with ue4m3 scales per 16"):
        ops.matmul(quant.quantize(x, "e2m1", "nvfp4", axis=1),
                   quant.quantize(x.T.copy(), "e2m1", "mx", axis=0),
                   accumulate=mma.preset("b200", "mxfp4"))
    with pytest.raises(ValueError, match="takes none of split_k"):
        ops.matmul(qx, quant.quantize(x.T.copy(), "e4m3", "mx", axis=0), accumulate=unit,
                   split_k=2)


@pytest.mark.parametrize("out", [None, "bf16", "fp16"])
def test_matmul_of_nvfp4_results_applies_the_tensor_scales_in_the_epilogue(out):
    """The tensor core's chained sums (the oracle), then Transformer
    Engine's alpha and cuBLASLt's FP32 epilogue, computed here with
    numpy's float32 arithmetic (IEEE's) from the tensors' own amaxes:
    alpha = ((1 × amax_x) × amax_w) × float(double(1 / (6·6·448·448)))."""
    from fpsim import ops, quant
    rng = np.random.default_rng(7)
    x = (rng.standard_normal((3, 128)) * 40).astype(np.float32)
    w = (rng.standard_normal((128, 4)) / 7).astype(np.float32)
    qx = quant.quantize(x, "e2m1", "nvfp4", axis=1)
    qw = quant.quantize(w, "e2m1", "nvfp4", axis=0)
    got = np.asarray(ops.matmul(qx, qw, accumulate=mma.preset("rtx-pro-6000", "nvfp4"),
                                out=out))
    ca, sa = qx.block_operand()[:2]
    cb, sb = qw.block_operand()[:2]
    acc = np.array([[_chain_gst(ca[i].tolist(), cb[:, j].tolist(), sa[i].tolist(),
                                sb[:, j].tolist(), 16, "ue4m3") for j in range(4)]
                    for i in range(3)], np.uint32).view(np.float32)
    inv = np.float32(np.float64(1.0) / np.float64(6 * 6 * 448 * 448))
    alpha = np.float32(1.0) * np.abs(x).max() * np.abs(w).max() * inv
    want = (alpha * acc).astype(np.float32)
    if out is not None:
        want = want.astype({"bf16": ml_dtypes.bfloat16, "fp16": np.float16}[out])
    assert got.dtype == want.dtype and np.array_equal(got.view(np.uint8), want.view(np.uint8))
    # the scaled sum is near the float64 product of the dequantized operands
    ref = qx.dequantize() @ qw.dequantize()
    assert np.allclose(got.astype(np.float64), ref, rtol=2e-2, atol=0.05)
