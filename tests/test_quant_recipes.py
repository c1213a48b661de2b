"""fpsim.quant.recipe: the rows' API (options, bugs, refusals), the
specification rows equal to quantize()'s keywords (issue 46: "the spec rows
are unchanged"), the library rows' documented quirks on hand-built inputs,
and the log2 rounding they rest on against MPFR.  The rows against the
libraries themselves: tests/test_quant_peers.py."""

from __future__ import annotations

import gmpy2
import ml_dtypes
import numpy as np
import pytest

from fpsim import quant
from fpsim.formats import BF16, FP16, FP32
from fpsim.quant._log2 import ceil_log2_rounded, floor_log2_rounded


def _codes(a) -> np.ndarray:
    a = np.asarray(a)
    return a if a.dtype.kind == "u" else a.view(f"u{a.itemsize}")


def _same(q1, q2) -> bool:
    return (np.array_equal(_codes(q1.data), _codes(q2.data))
            and np.array_equal(_codes(q1.scale), _codes(q2.scale)))


@pytest.mark.parametrize("elem, rule", [("e4m3", r) for r in quant.SCALE_ROUNDINGS]
                         + [("e2m1", "floor"), ("e3m2", "even")])
def test_spec_mx_rows_are_quantizes_keywords(elem, rule):
    name = {"e4m3": "mxfp8", "e2m1": "mxfp4", "e3m2": "mxfp6"}[elem]
    rng = np.random.default_rng(7)
    x = (rng.standard_normal((6, 64)) * np.exp2(rng.integers(-20, 20, (6, 1)))).astype(np.float32)
    x[0, :32] = 0
    a = quant.quantize(x, quant.recipe("spec", name, element=elem, scale_rounding=rule))
    b = quant.quantize(x, elem, "mx", scale_rounding=rule)
    assert _same(a, b)
    assert np.array_equal(a.dequantize(), b.dequantize())


def test_spec_and_te_fp8_rows_are_quantizes_keywords():
    rng = np.random.default_rng(8)
    x = (rng.standard_normal((5, 16)) * 3).astype(np.float32)
    for scaling in ("tensor", "channel"):
        a = quant.quantize(x, quant.recipe("spec", "fp8", scaling=scaling))
        assert _same(a, quant.quantize(x, "e4m3", scaling))
        a = quant.quantize(x, quant.recipe("te", "fp8", scaling=scaling, element="e5m2"))
        assert _same(a, quant.quantize(x, "e5m2", scaling, scale_rule="max/amax"))
    nv = quant.recipe("te", "nvfp4")
    assert _same(quant.quantize(x, nv, axis=1), quant.quantize(x, "e2m1", "nvfp4", axis=1))


def test_a_k_minus_127_block_is_halved_by_torchaos_divisor_floor_alone():
    """torchao FLOOR (mx_tensor.py:359): the divisor is 2**-126 while code 0
    (2**-127) is stored; bugs=False gives the specification's elements."""
    x = np.zeros((1, 32), np.float32)
    x[0, :3] = [2.0**-120, -2.0**-121, 3 * 2.0**-124]
    q = quant.quantize(x, quant.recipe("torchao", "mxfp8"))
    assert int(np.asarray(q.scale).view(np.uint8)[0, 0]) == 0
    assert q.data.view(np.uint8)[0, :3].tolist() == [0x68, 0xE0, 0x54]       # 64, -32, 12
    assert q.dequantize()[0, :3].tolist() == [2.0**-121, -2.0**-122, 1.5 * 2.0**-124]
    fixed = quant.quantize(x, quant.recipe("torchao", "mxfp8", bugs=False))
    spec = quant.quantize(x, "e4m3", "mx")
    assert _same(fixed, spec)
    assert fixed.dequantize()[0, :3].tolist() == [2.0**-120, -2.0**-121, 3 * 2.0**-124]


def test_torchaos_rceil_log2_puts_the_scale_one_power_low():
    """amax = 448 · 2**20 · (1 + 2**-23): RN32(log2(amax / 448)) is 20, so
    torchao's CPU RCEIL takes 2**20 and the amax element saturates; the
    exact rule (rceil_exact) takes 2**21."""
    x = np.zeros((1, 32), np.float32)
    x[0, 0] = np.float32(448 * 2.0**20 * (1 + 2.0**-23))
    x[0, 1] = 448 * 2.0**17
    q = quant.quantize(x, quant.recipe("torchao", "mxfp8", scale_rounding="rceil"))
    assert int(np.asarray(q.scale).view(np.uint8)[0, 0]) == 127 + 20
    assert q.data.view(np.uint8)[0, :2].tolist() == [0x7E, 0x66]     # 448 (clamped), 56
    exact = quant.quantize(x, "e4m3", "mx", scale_rounding="rceil_exact")
    assert int(np.asarray(exact.scale).view(np.uint8)[0, 0]) == 127 + 21
    # the flag alone: the exact ceil(log2(RN32(amax / 448))), still torchao's reciprocal
    fixed = quant.quantize(x, quant.recipe("torchao", "mxfp8", scale_rounding="rceil",
                                           bugs={"rceil_code0_unscaled"}))
    assert int(np.asarray(fixed.scale).view(np.uint8)[0, 0]) == 127 + 21
    assert fixed.data.view(np.uint8)[0, :2].tolist() == [0x76, 0x5E]  # 224.0000267 -> 224, 28
    # ModelOpt's MXFP8 takes the same rounded log2 (mxfp8_tensor.py 57-63)
    mo = quant.quantize(x, quant.recipe("modelopt", "mxfp8"))
    assert int(np.asarray(mo.scale).view(np.uint8)[0, 0]) == 127 + 20
    mo = quant.quantize(x, quant.recipe("modelopt", "mxfp8", bugs={"nan_scale_lost"}))
    assert int(np.asarray(mo.scale).view(np.uint8)[0, 0]) == 127 + 21


def test_torchaos_power_of_two_scale_rounds_log2_first():
    """torchao.float8's round_scales_to_power_of_2 (float8_utils.py:246):
    amax = 448 · 2**-20 · (1 + 2**-23) gives the FP32 scale 448 / amax just
    below 2**20, whose rounded log2 is 20: the scale 2**20 takes amax above
    448, clamped.  Without log2_rounded: 2**19, amax to 224."""
    x = np.zeros((1, 4), np.float32)
    x[0, 0] = np.float32(448 * 2.0**-20 * (1 + 2.0**-23))
    r = quant.recipe("torchao", "fp8", impl="training", round_scales_to_power_of_2=True)
    assert r.bugs == {"log2_rounded"}
    q = quant.quantize(x, r)
    assert float(q.scale) == 2.0**20 and int(q.data.view(np.uint8)[0, 0]) == 0x7E
    q = quant.quantize(x, quant.recipe("torchao", "fp8", impl="training",
                                       round_scales_to_power_of_2=True, bugs=False))
    assert float(q.scale) == 2.0**19 and int(q.data.view(np.uint8)[0, 0]) == 0x76


def test_torchaos_nvfp4_reciprocal_breaks_a_tie():
    """Block [11.25, 4.6875, 2.34375, 9.375]: S_b = 1.875, RN32(1 / 1.875) is
    above 1/1.875, so the tie 4.6875 / 1.875 = 2.5 goes up to 3 (0x5), where
    the division would give the even 2 (0x4)."""
    x = np.zeros((1, 16), np.float32)
    x[0, :4] = [11.25, 4.6875, 2.34375, 9.375]
    q = quant.quantize(x, quant.recipe("torchao", "nvfp4"))
    assert int(np.asarray(q.scale).view(np.uint8)[0, 0]) == 0x3F
    assert q.data.view(np.uint8)[0, :4].tolist() == [0x7, 0x5, 0x3, 0x7]


def test_torchaos_fp8_scale_is_rounded_in_the_inputs_format():
    x = np.array([[3.140625, 0.5]], ml_dtypes.bfloat16)
    q = quant.quantize(x, quant.recipe("torchao", "fp8"))
    assert int(np.asarray(q.scale).view(np.uint32)) == 0x3BE60000      # RN_bf16(3.140625 / 448)
    assert q.dequantize().dtype == ml_dtypes.bfloat16
    assert int(q.dequantize()[0, 1].view(np.uint16)) == 0x3F01
    q32 = quant.quantize(x.astype(np.float32), quant.recipe("torchao", "fp8"))
    assert int(np.asarray(q32.scale).view(np.uint32)) == 0x3BE5B6DB
    assert q32.dequantize(dtype="bf16").dtype == ml_dtypes.bfloat16


def test_an_all_zero_tensor_is_nan_in_torchaos_fp8_and_one_in_tes():
    x = np.zeros((2, 4), np.float32)
    q = quant.quantize(x, quant.recipe("torchao", "fp8"))
    assert (q.data.view(np.uint8) == 0xFF).all()           # 0 / 0: x86's negative NaN
    q = quant.quantize(x, quant.recipe("te", "fp8"))
    assert float(q.scale) == 1.0 and (q.data.view(np.uint8) == 0).all()


@pytest.mark.parametrize("kw, match", [
    ({"library": "jax", "name": "fp8"}, "library='jax'"),
    ({"library": "torchao", "name": "int8"}, "name='int8'"),
    ({"library": "torchao", "name": "mxfp8", "scale_rounding": "nearest"}, "scale_rounding"),
    ({"library": "torchao", "name": "mxfp8", "element": "e2m1"}, "element"),
    ({"library": "torchao", "name": "fp8", "per_tensor_scale": True}, "unknown option"),
    ({"library": "torchao", "name": "fp8", "round_scales_to_power_of_2": True},
     "impl='training'"),
    ({"library": "torchao", "name": "mxfp8", "bugs": {"nan_element_bits"}}, "not this row's"),
    ({"library": "compressed-tensors", "name": "mxfp8", "element": "e5m2"}, "unknown option"),
    ({"library": "modelopt", "name": "mxfp6"}, "ModelOpt's"),
])
def test_bad_recipes_are_refused(kw, match):
    library, name = kw.pop("library"), kw.pop("name")
    with pytest.raises(ValueError, match=match):
        quant.recipe(library, name, **kw)


def test_a_recipe_takes_no_step_keywords_and_dequantize_dtype_needs_one():
    r = quant.recipe("torchao", "mxfp8")
    x = np.ones((1, 32), np.float32)
    with pytest.raises(ValueError, match="drop scale_rounding"):
        quant.quantize(x, r, scale_rounding="ceil")
    with pytest.raises(ValueError, match="dtype= applies"):
        quant.quantize(x, "e4m3").dequantize(dtype="bf16")
    assert sorted(quant.recipe("torchao", "mxfp4").bugs) == ["divisor_floor", "nan_element_bits"]
    assert set(quant.BUGS) >= {b for lib in ("torchao",) for n in ("mxfp8", "mxfp4", "nvfp4")
                               for b in quant.recipe(lib, n).bugs}


def _rn_log2(v: float, fmt) -> float:
    """log2(v) rounded to ``fmt``'s precision by MPFR (exponent range wide
    enough for every value here)."""
    ctx = gmpy2.context(precision=fmt.precision, round=gmpy2.RoundToNearest,
                        emin=-10000, emax=10000)
    with gmpy2.context(precision=200):
        exact = gmpy2.log2(gmpy2.mpfr(v))
    return float(ctx.plus(exact))


@pytest.mark.parametrize("fmt", [FP32, BF16, FP16], ids=lambda f: f.name)
def test_floor_and_ceil_of_the_rounded_log2_equal_mpfr(fmt):
    """Near every power of two of the format (the values where the rounded
    logarithm reaches the integer), and random values: floor and ceil of
    RN_fmt(log2 v) against MPFR's rounding of log2 at 200 bits."""
    p = fmt.precision
    emin, emax = fmt.emin - (p - 1), fmt.emax
    vals = []
    for k in range(emin, emax + 1, 1 if fmt is not FP32 else 3):
        for j in range(1, 40):
            vals += [2.0**k * (1 + j * 2.0 ** -(p - 1)), 2.0**k * (1 - j * 2.0**-p)]
    rng = np.random.default_rng(3)
    vals += list(np.ldexp(1 + rng.random(500), rng.integers(emin, emax, 500)))
    v = np.array(vals)
    v = v[(v > 0) & (v < float(fmt.max))]
    v = np.array([float(fmt.round(float(x)).value) for x in v]) if fmt is not FP32 \
        else v.astype(np.float32).astype(np.float64)
    fl, _ = floor_log2_rounded(v, fmt)
    ce, _ = ceil_log2_rounded(v, fmt)
    for x, f, c in zip(v, fl, ce):
        r = _rn_log2(float(x), fmt)
        assert (int(np.floor(r)), int(np.ceil(r))) == (f, c), (x, r, f, c)


def test_brevitas_rounds_log2_to_the_inputs_format():
    """bf16 amax 255 (one BF16 ulp below 256): log2 255 = 7.994 rounds to 8
    in BF16, so brevitas' MXFP8 scale is 2**(8 - 8) = 1 where OCP MX takes
    2**-1 (brevitas 0.13.4, tools/quant_peers/brevitas-0.13.4.md Q1b); 253
    (three ulps below) is the first one below the rounding."""
    x = np.zeros((2, 32), ml_dtypes.bfloat16)
    x[0, 0], x[1, 0] = 255, 253
    q = quant.quantize(x, quant.recipe("brevitas", "mxfp8"))
    assert np.asarray(q.scale).astype(float).ravel().tolist() == [1.0, 0.5]
    spec = quant.quantize(x, quant.recipe("spec", "mxfp8"))
    assert np.asarray(spec.scale).astype(float).ravel().tolist() == [0.5, 0.5]
    fixed = quant.quantize(x, quant.recipe("brevitas", "mxfp8", bugs=False))
    assert np.asarray(fixed.scale).astype(float).ravel().tolist() == [0.5, 0.5]


def test_brevitas_divides_in_the_inputs_format_and_fp16_zeros_are_nan():
    """FP16: 1e-10 rounds to 0, so an all-zero tensor's scale is 0 and 0 / 0
    is NaN (Q4c); its FP8 values are held as floats (NaN, no code)."""
    q = quant.quantize(np.zeros((1, 4), np.float16), quant.recipe("brevitas", "fp8"))
    assert float(q.scale) == 0.0 and np.isnan(q.dequantize()).all()
    q = quant.quantize(np.float32([[1.3125, 448.0]]), quant.recipe("brevitas", "fp8"))
    assert float(q.scale) == 1.0
    # x / 1 is exact here; a scale that is not 1: the quotient is rounded to FP32 first
    x = np.float32([[448.0, 0.0]])
    x[0, 1] = np.float32(1.3125) * np.float32(447.0 / 448.0)
    q = quant.quantize(x, quant.recipe("brevitas", "fp8"))
    assert q.data.dtype == ml_dtypes.float8_e4m3fn


def test_modelopts_mx_bugs_are_steps_that_bugs_false_removes():
    """ModelOpt MXFP4 (mxfp4_tensor.py): a NaN block's exponent cast to uint8
    is code 0 and every element -0 (0x8); its cast rounds the tie 0.75 down
    (to 0.5) and stores +0 as -0.  Without the bugs: OCP's NaN scale and
    round to nearest even."""
    x = np.zeros((2, 32), np.float32)
    x[0, :3] = [6.0, 0.75 * 1, 0.0]        # amax 6: scale 1, 0.75 a tie
    x[1, :2] = [1.0, np.nan]
    q = quant.quantize(x, quant.recipe("modelopt", "mxfp4"))
    assert np.asarray(q.scale).view(np.uint8).ravel().tolist() == [127, 0]
    assert q.data.view(np.uint8)[0, :3].tolist() == [0x7, 0x1, 0x8]
    assert (q.data.view(np.uint8)[1] == 0x8).all()
    fixed = quant.quantize(x, quant.recipe("modelopt", "mxfp4", bugs=False))
    assert np.asarray(fixed.scale).view(np.uint8).ravel().tolist() == [127, 255]
    assert fixed.data.view(np.uint8)[0, :3].tolist() == [0x7, 0x2, 0x0]


def test_recipe_report_names_what_each_bug_and_convention_changed():
    """A k = -127 block (torchao's divisor_floor halves it) and a block whose
    amax 3.5 makes ModelOpt's ceil(log2(amax / 6)) a power of two above OCP
    MX's floor(log2 amax) - 2: the report marks exactly those elements."""
    x = np.zeros((2, 32), np.float32)
    x[0, :2] = [2.0**-126, -2.0**-127]
    x[1, :3] = [3.5, 0.75, 0.25]
    r = quant.recipe_report(x, quant.recipe("torchao", "mxfp4"))
    assert np.argwhere(r.by_bug["divisor_floor"]).tolist() == [[0, 0], [0, 1]]
    assert not r.by_bug["nan_element_bits"].any() and not r.convention.any()
    m = quant.recipe_report(x, quant.recipe("modelopt", "mxfp4"))
    # scale 1 (ceil(log2(3.5 / 6)) = 0): the ties 3.5 and 0.75 go down (3, 0.5) where
    # round to nearest even takes 4 and 1; 0.25 goes to 0 either way; every zero is -0
    ties = m.by_bug["e2m1_ties_toward_zero"]
    assert ties[1, :3].tolist() == [True, True, False] and ties[1, 3:].all()
    # OCP MX: scale 2**-1, so 3.5 saturates to 3, 0.75 and 0.25 are exact
    assert m.convention[1, :3].tolist() == [True, True, True]
    assert not m.convention[0].any() and not m.convention[1, 3:].any()
    with pytest.raises(TypeError, match="Recipe"):
        quant.recipe_report(x, "e4m3")


@pytest.mark.parametrize("library, kw, match", [
    ("modelopt", {"scaling": "block"}, "block_size= goes with"),
    ("modelopt", {"block_size": 32}, "block_size= goes with"),
    ("compressed-tensors", {"scaling": "group"}, "group_size="),
    ("compressed-tensors", {"scaling": "block"}, "block="),
])
def test_block_options_go_together(library, kw, match):
    with pytest.raises(ValueError, match=match):
        quant.recipe(library, "fp8", **kw)


def test_brevitas_keeps_a_negative_zero_fnuz_cannot_hold():
    """brevitas' E4M3FNUZ value of -1e-6 (scale 1/240 of amax 1) is -0.0, a
    float the format has no code for (0x80 is its NaN): the code is 0x00 and
    the dequantized value -0 (bug negative_zero_held); without the bug, +0."""
    x = np.float32([[1.0, -1e-6]])
    q = quant.quantize(x, quant.recipe("brevitas", "fp8", element="e4m3fnuz"))
    assert q.data.view(np.uint8).tolist() == [[0x7F, 0x00]]
    assert np.signbit(q.dequantize()[0, 1])
    fixed = quant.quantize(x, quant.recipe("brevitas", "fp8", element="e4m3fnuz", bugs=False))
    assert not np.signbit(fixed.dequantize()[0, 1])


def test_inputs_a_library_refuses_are_refused():
    """torchao's to_mx and nvfp4_quantize assert BF16 or FP32 inputs
    (mx_tensor.py:225, nvfp4_tensor.py:798): so does its row."""
    x = np.ones((1, 32), np.float16)
    for name in ("mxfp8", "nvfp4"):
        with pytest.raises(ValueError, match="takes bf16 or fp32 inputs.*got fp16"):
            quant.quantize(x, quant.recipe("torchao", name))
    assert quant.quantize(x, quant.recipe("torchao", "fp8")).data.shape == (1, 32)
    r = quant.recipe_report(x.astype(np.float32), quant.recipe("spec", "mxfp8"))
    assert not r.bugs.any() and not r.convention.any() and r.by_bug == {}


def test_brevitas_mxint8_saturates_the_largest_element():
    """brevitas' MXINT8 scale over integer codes is 2**(floor(log2 amax) - 7)
    (PowerOfTwoIntScaling: 128), so amax 1.0 is code 128, saturated to 127,
    and -1.0 is -128 (Q2); OCP MX (bugs=False) gives 64 and -64."""
    x = np.zeros((1, 32), np.float32)
    x[0, :3] = [1.0, -1.0, 0.5]
    q = quant.quantize(x, quant.recipe("brevitas", "mxint8"))
    assert np.asarray(q.data)[0, :3].tolist() == [127, -128, 64]
    ocp = quant.quantize(x, quant.recipe("brevitas", "mxint8", bugs=False))
    assert np.asarray(ocp.data)[0, :3].tolist() == [64, -64, 32]
    assert np.array_equal(np.asarray(ocp.data), np.asarray(quant.quantize(x, "mxint8", "mx").data))


def test_modelopts_fake_quantization_does_not_give_its_amax_back():
    """ModelOpt's CPU fake quantization (_fp8_eager): scale = RN(1 / amax)
    × 448, dequantized by RN(1 / scale): the amax element 0xBF94E497 comes
    back as 0xBF94E498 (tools/quant_peers/modelopt-0.47.0.md, demo); the
    real quantization (FP8QTensor) gives it back exactly."""
    x = np.array([[0xBF94E497, 0x3F000000]], np.uint32).view(np.float32)
    fake = quant.quantize(x, quant.recipe("modelopt", "fp8", path="fake"))
    assert int(fake.dequantize().view(np.uint32)[0, 0]) == 0xBF94E498
    real = quant.quantize(x, quant.recipe("modelopt", "fp8"))
    assert int(real.dequantize().view(np.uint32)[0, 0]) == 0xBF94E497
    with pytest.raises(ValueError, match="per tensor"):
        quant.recipe("modelopt", "fp8", path="fake", scaling="channel")


def test_compressed_tensors_token_scales_and_its_2d_bug():
    """TOKEN (helpers.py 161-192): one scale per index of the first two
    axes; a 2-D tensor keeps both and reduces nothing, so CT takes one scale
    for it (token_2d_tensor); without the bug, one per row."""
    x = np.zeros((2, 3, 4), np.float32)
    x[..., 0] = np.arange(1, 7, dtype=np.float32).reshape(2, 3) * 448
    r = quant.recipe("compressed-tensors", "fp8", scaling="token")
    q = quant.quantize(x, r)
    assert np.asarray(q.scale).tolist() == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    assert (q.data.view(np.uint8)[..., 0] == 0x7E).all()                 # each 448
    two = quant.quantize(x[0], r)
    assert np.asarray(two.scale).shape == () and float(two.scale) == 3.0
    rows = quant.quantize(x[0], quant.recipe("compressed-tensors", "fp8", scaling="token",
                                             bugs=False))
    assert np.asarray(rows.scale).tolist() == [1.0, 2.0, 3.0]
    with pytest.raises(ValueError, match="token scaling takes no axis"):
        quant.quantize(x, r, axis=0)


def test_compressed_tensors_stores_an_infinite_mx_scale_as_one():
    """A NaN block (its amax's bits rounded up a binade: an infinite scale)
    is stored as 0x7F, scale 1, on x86 (compress_mx_scale, Q17): the NaN
    element keeps E4M3's NaN, the others read back as 0.  Without
    inf_scale_stored_one: OCP's NaN scale, the whole block NaN."""
    x = np.zeros((1, 64), ml_dtypes.bfloat16)
    x[0, :2], x[0, 32] = [np.nan, 1.0], 3.0
    q = quant.quantize(x, quant.recipe("compressed-tensors", "mxfp8"))
    assert np.asarray(q.scale).view(np.uint8).tolist() == [[127, 120]]          # 3: 2**(1 - 8)
    d = q.dequantize().astype(np.float64)
    assert np.isnan(d[0, 0]) and (d[0, 1:32] == 0).all() and d[0, 32] == 3.0
    fixed = quant.quantize(x, quant.recipe("compressed-tensors", "mxfp8",
                                           bugs={"mx_even_fp4_width"}))
    assert np.asarray(fixed.scale).view(np.uint8).tolist() == [[255, 120]]
    assert np.isnan(fixed.dequantize().astype(np.float64)[0, :32]).all()
