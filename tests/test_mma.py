"""fpsim.mma: the matrix-unit models reproduce real GPU outputs bit for bit,
and behave as stated on cases worked out by hand or by independent means.

The recorded outputs (tests/data/tensorcore/, BSD-2-Clause, see the README
there) are the oracle for the presets; hand-derived values (each derivation
in a comment), exact rational arithmetic (fractions) and numpy's own float32
arithmetic are the oracles for the rest.  Nothing here takes its expected
value from fpsim.mma itself.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import fpsim
import fpsim.mma as mma
from fpsim.mma import MMAModel, MMAParams

DATA = Path(__file__).parent / "data" / "tensorcore"
INPUT_DTYPES = {"fp16": np.float16, "bf16": ml_dtypes.bfloat16, "tf32": np.float32,
                "e4m3": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2}
RECORDED = sorted(DATA.glob("*.npz"))


def _load(path: Path):
    """(gpu, input, output, a, b, c, d bits) of a recorded file, the operands
    in the dtypes a caller would use."""
    gpu, fin, fout = path.stem.lower().split("_")
    z = np.load(path)
    a32, b32 = z["a"].view(np.float32), z["b"].view(np.float32)
    dt = INPUT_DTYPES[fin]
    a, b = a32.astype(dt), b32.astype(dt)
    assert np.array_equal(a.astype(np.float32), a32) and np.array_equal(b.astype(np.float32), b32)
    c = z["c"].view(np.float32)
    if fout == "fp16":  # the harness rounded c to FP16 (nearest even) before the instruction
        c = c.astype(np.float16)
    return gpu, fin, fout, a, b, c, z["d"]


def test_every_recorded_file_is_present():
    names = {p.stem for p in RECORDED}
    assert len(names) == 16
    assert {"H100_E4M3_fp32", "V100_fp16_fp16", "B200_tf32_fp32"} <= names
    assert (DATA / "LICENCE").exists() and (DATA / "README.md").exists()


@pytest.mark.parametrize("path", RECORDED, ids=[p.stem for p in RECORDED])
def test_preset_reproduces_every_recorded_row(path):
    gpu, fin, fout, a, b, c, d = _load(path)
    model = mma.preset(gpu, fin, out=fout)
    assert a.shape[1] <= model.k
    got = model(a, b, c)
    assert got.dtype == (np.float16 if fout == "fp16" else np.float32)
    bits = got.astype(np.float32).view(np.uint32)
    bad = np.nonzero(bits != d)[0]
    assert bad.size == 0, (f"{path.stem}: {bad.size}/{d.size} rows differ, first row {bad[0]}: "
                           f"got {got[bad[0]]!r}, GPU {d[bad[0]:bad[0] + 1].view(np.float32)}")


def test_recorded_data_tells_the_parameters_apart():
    """The recorded rows pin the parameters: one more or one fewer alignment
    bit, or the other final rounding, fails many rows."""
    _, fin, fout, a, b, c, d = _load(DATA / "H100_fp16_fp32.npz")
    base = mma.preset("h100", fin, fout).params
    for change in ({"extra_bits": 1}, {"extra_bits": 3}, {"rounding": "rne"}):
        got = MMAModel(base.replace(**change))(a, b, c).view(np.uint32)
        assert (got != d).sum() > 300, change


# -- hand-derived cases -------------------------------------------------------------------

def test_alignment_truncation_differs_from_the_exact_dot_product():
    # 1.5*1.5 = 2.25 sets the largest exponent (0: the product is kept in
    # [1, 4)); V100 keeps 23 bits below it, so -2**-24 = -(2**-12 * 2**-12)
    # is cut to 0 and the result is 2.25.  The exact value 2.25 - 2**-24,
    # rounded toward zero in FP32 (ulp 2**-22 there), is 2.25 - 2**-22.
    a = np.float16([[1.5, -2.0**-12, 0, 0]])
    b = np.float16([[1.5, 2.0**-12, 0, 0]])
    c = np.float32([0.0])
    assert mma.preset("v100", "fp16")(a, b, c)[0] == np.float32(2.25)
    # H100 keeps 2 more bits: the term survives, and RTZ gives 2.25 - 2**-22.
    h100 = mma.preset("h100", "fp16")
    a16 = np.zeros((1, 16), np.float16)
    b16 = np.zeros((1, 16), np.float16)
    a16[0, :2], b16[0, :2] = a[0, :2], b[0, :2]
    assert h100(a16, b16, c)[0] == np.float32(2.25 - 2.0**-22)
    exact = Fraction(9, 4) - Fraction(1, 2**24)
    assert fpsim.FP32.round(exact, fpsim.Context(rounding="rtz")).value == Fraction(9, 4) - \
        Fraction(1, 2**22)


def test_hopper_fp8_keeps_13_bits():
    # 1*1 plus 31 products 2**-7 * 2**-7 = 2**-14, below the 13-bit grid of
    # 1.0 (2**-13): each is dropped, so d = 1.0; the exact sum is
    # 1 + 31 * 2**-14 = 1.00189208984375.
    a = np.full((1, 32), 2.0**-7, ml_dtypes.float8_e4m3fn)
    b = np.full((1, 32), 2.0**-7, ml_dtypes.float8_e4m3fn)
    a[0, 0] = b[0, 0] = 1.0
    assert mma.preset("h100", "e4m3")(a, b, np.float32([0]))[0] == 1.0
    # Blackwell keeps 25 bits: 1 + 31 * 2**-14 is exact in FP32.
    assert mma.preset("b200", "e4m3")(a, b, np.float32([0]))[0] == 1 + 31 * 2.0**-14
    # 13-bit results: 1 + 2**-13 + 2**-14 (2**-6 * 2**-7 and 2**-7 * 2**-7)
    # truncates to 1 + 2**-13 (rtz), whose low 10 FP32 fraction bits are 0.
    a = np.zeros((1, 32), ml_dtypes.float8_e4m3fn)
    b = np.zeros((1, 32), ml_dtypes.float8_e4m3fn)
    a[0, :3] = [1.0, 2.0**-6, 2.0**-7]
    b[0, :3] = [1.0, 2.0**-7, 2.0**-7]
    got = mma.preset("h100", "e4m3")(a, b, np.float32([0]))[0]
    assert got == 1 + 2.0**-13
    assert int(np.float32(got).view(np.uint32)) & 0x3FF == 0


def test_fp16_output_rounds_to_nearest_even():
    # 1 + 2**-11 is halfway between FP16 1 and 1 + 2**-10: ties to even -> 1.
    # 1 + 2**-10 + 2**-11 is halfway between 1 + 2**-10 and 1 + 2**-9: -> 1 + 2**-9.
    m = mma.preset("h100", "fp16", out="fp16")
    a = np.zeros((2, 16), np.float16)
    b = np.zeros((2, 16), np.float16)
    a[:, 0] = b[:, 0] = 1.0
    a[0, 1], b[0, 1] = 2.0**-11, 1.0
    a[1, 1:3], b[1, 1:3] = [2.0**-10, 2.0**-11], 1.0
    got = m(a, b, np.float16([0, 0]))
    assert got.dtype == np.float16
    assert got.tolist() == [1.0, 1 + 2.0**-9]


def test_cdna3_adds_c_after_the_products():
    # Three products 2**-12 * 2**-13 = 2**-25 and c = 1.  Aligned together
    # with c (1 extra bit: grid 2**-24) each product is cut to 0: d = 1.
    # CDNA3 sums the products first (3 * 2**-25, exact), then aligns that sum
    # to c with 7 more bits: d = 1 + 3 * 2**-25 before rounding, which rounds
    # to nearest in FP32 (ulp 2**-23) as 1 + 2**-23.
    a = np.zeros((1, 8), np.float16)
    b = np.zeros((1, 8), np.float16)
    a[0, :3], b[0, :3] = 2.0**-12, 2.0**-13
    c = np.float32([1.0])
    # (MMA-Sim's late register: 8 bits below c, the sum cut to 31 normalized
    # bits; the MATLAB model's: 7 bits, no cut.  Both give 1 + 2**-23 here.)
    for name in ("mi300x", "mi300x-matlab"):
        mi300 = mma.preset(name, "fp16")
        assert mi300(a, b, c)[0] == np.float32(1 + 2.0**-23)
        first = MMAModel(mi300.params.replace(c_joins="first", late_extra_bits=0,
                                              normalized_bits=None))
        assert first(a, b, c)[0] == 1.0


def test_cdna3_fp8_odd_and_even_products_align_separately():
    # 16 * 16 = 256 at position 0 (even group, grid 2**(8 - 24) = 2**-16) and
    # -2**-10 * 2**-10 = -2**-20 at position 1 (odd group, its own exponent).
    # Joining the odd sum to the even one shifts it by 22 places rounding
    # down (toward -inf): -2**-20 becomes -2**-16.  d = 256 - 2**-16, which
    # FP32 holds (ulp 2**-16 below 256).  Aligned together, truncation toward
    # zero would drop the term: 256.
    dt = ml_dtypes.float8_e4m3fnuz
    a = np.zeros((1, 16), dt)
    b = np.zeros((1, 16), dt)
    a[0, :2] = [16.0, -(2.0**-10)]
    b[0, :2] = [16.0, 2.0**-10]
    m = mma.preset("mi300x", "e4m3fnuz")
    assert m(a, b, np.float32([0]))[0] == np.float32(256 - 2.0**-16)
    joined = MMAModel(m.params.replace(accumulation="aligned"))
    assert joined(a, b, np.float32([0]))[0] == 256.0


def test_overflow_is_infinite_even_when_rounding_toward_zero():
    # 2**127 * 2 twice = 2**129 > FP32 max: IEEE rtz would give max, the unit inf.
    a = np.zeros((2, 16), ml_dtypes.bfloat16)
    b = np.zeros((2, 16), ml_dtypes.bfloat16)
    a[:, :2], b[:, :2] = 2.0**127, 2.0
    a[1, :2] = -(2.0**127)
    got = mma.preset("h100", "bf16")(a, b, np.float32([0, 0]))
    assert got.tolist() == [np.inf, -np.inf]


def test_specials_are_decided_over_the_row():
    m = mma.preset("a100", "fp16")
    a = np.ones((5, 8), np.float16)
    b = np.ones((5, 8), np.float16)
    c = np.zeros(5, np.float32)
    a[0, 3] = np.nan                       # NaN operand
    a[1, 3], b[1, 3] = np.inf, 0.0         # inf * 0
    a[2, 3], a[2, 4] = np.inf, -np.inf     # +inf and -inf products
    a[3, 3] = -np.inf                      # one infinity
    c[4] = np.inf                          # infinite c
    got = m(a, b, c)
    assert np.isnan(got[:3]).all()
    assert got[3] == -np.inf and got[4] == np.inf
    assert got[:3].view(np.uint32).tolist() == [0x7FFFFFFF] * 3  # PTX's canonical NaN


def test_exact_zero_is_positive_zero():
    m = mma.preset("h100", "fp16")
    a = np.zeros((1, 16), np.float16)
    b = np.zeros((1, 16), np.float16)
    a[0, :2], b[0, :2] = [1.0, -1.0], 1.0
    got = m(a, b, np.float32([-0.0]))
    assert got.view(np.uint32)[0] == 0


# -- independent oracles -------------------------------------------------------------

def _random_rows(dtype, n, k, seed, scale=4.0):
    rng = np.random.default_rng(seed)
    a = (rng.standard_normal((n, k)) * scale).astype(dtype)
    b = (rng.standard_normal((n, k)) * scale).astype(dtype)
    c = (rng.standard_normal(n) * scale).astype(np.float32)
    return a, b, c


@pytest.mark.parametrize("fmt", ["fp16", "bf16"])
def test_cdna1_is_the_exact_sum_rounded_once(fmt):
    m = mma.preset("mi100", fmt)
    a, b, c = _random_rows(INPUT_DTYPES[fmt], 400, m.k, seed=1)
    got = m(a, b, c)
    for i in range(len(c)):
        exact = sum(Fraction(float(x)) * Fraction(float(y)) for x, y in zip(a[i], b[i]))
        exact += Fraction(float(c[i]))
        want = float(fpsim.FP32.round(exact).value) if exact else 0.0
        assert got[i] == np.float32(want), i


def test_cdna2_is_a_pairwise_tree_of_float32_additions():
    # numpy's float32 arithmetic is IEEE round-to-nearest-even; the unit
    # flushes subnormal products and sums (none occur at this scale).
    m = mma.preset("mi250", "fp16")
    a, b, c = _random_rows(np.float16, 2000, 4, seed=2)
    p = a.astype(np.float32) * b.astype(np.float32)
    want = c + ((p[:, 0] + p[:, 1]) + (p[:, 2] + p[:, 3]))
    assert np.array_equal(m(a, b, c).view(np.uint32), want.view(np.uint32))


def test_cdna2_flushes_subnormal_inputs():
    m = mma.preset("mi210", "fp16")
    a = np.float16([[2.0**-20, 1.0, 0, 0]])    # an FP16 subnormal: read as 0
    b = np.float16([[2.0**10, 1.0, 0, 0]])
    assert m(a, b, np.float32([0]))[0] == 1.0
    full = MMAModel(m.params.replace(input_subnormals=True))
    assert full(a, b, np.float32([0]))[0] == np.float32(1 + 2.0**-10)


def test_codes_with_fmt_give_the_same_result():
    m = mma.preset("h100", "e5m2")
    a, b, c = _random_rows(ml_dtypes.float8_e5m2, 50, 32, seed=3, scale=1.0)
    by_value = m(a, b, c)
    by_code = m(a.view(np.uint8), b.view(np.uint8), c, fmt="e5m2")
    assert np.array_equal(by_value.view(np.uint32), by_code.view(np.uint32))


def test_tf32_takes_float32_values_it_holds():
    m = mma.preset("a100", "tf32")
    a = np.float32([[1.5, 2.0, 0, 0]])
    assert m(a, a, np.float32([1.0]))[0] == 1 + 2.25 + 4
    with pytest.raises(ValueError, match="not exact in tf32"):
        m(np.float32([[1 + 2.0**-20, 0, 0, 0]]), a, np.float32([0]))


# -- chaining ----------------------------------------------------------------------------

def test_chain_feeds_each_block_result_to_the_next_block_in_order():
    m = mma.preset("a100", "fp16")     # k = 8
    a, b, c = _random_rows(np.float16, 300, 19, seed=4)
    got = m(a, b, c, chain=True)
    pad = np.zeros((300, 5), np.float16)
    a24, b24 = np.concatenate([a, pad], 1), np.concatenate([b, pad], 1)
    d = c
    for j in range(3):
        d = m(a24[:, 8 * j:8 * j + 8], b24[:, 8 * j:8 * j + 8], d)
    assert np.array_equal(got.view(np.uint32), d.view(np.uint32))


def test_short_k_is_padded_with_zero_products():
    m = mma.preset("h100", "tf32")     # k = 8
    rng = np.random.default_rng(5)
    a = rng.standard_normal((20, 4)).astype(np.float32).view(np.uint32) & np.uint32(0xFFFFE000)
    a = a.view(np.float32)
    b = a[::-1].copy()
    c = np.ones(20, np.float32)
    padded = np.concatenate([a, np.zeros((20, 4), np.float32)], 1)
    padded_b = np.concatenate([b, np.zeros((20, 4), np.float32)], 1)
    assert np.array_equal(m(a, b, c), m(padded, padded_b, c))


def test_batch_shape_is_kept():
    m = mma.preset("v100", "fp16", out="fp16")
    a = np.ones((2, 3, 4), np.float16)
    got = m(a, a, np.zeros((2, 3), np.float16))
    assert got.shape == (2, 3) and got.dtype == np.float16
    assert (got == 4).all()


# -- presets and bad input ----------------------------------------------------------------

def test_every_listed_preset_builds():
    names = mma.gpus()
    for gpu in ("v100", "a100", "a2", "a30", "ada", "l40s", "h100", "h200", "b200", "b200-rn",
                "rtx-pro-6000", "mi100", "mi210", "mi250", "mi300a", "mi300x"):
        assert gpu in names
    for gpu, fin, fout in mma.presets():
        m = mma.preset(gpu, fin, out=fout)
        assert m.input_format.name == fin and m.output_format.name == fout and m.k >= 1
        assert isinstance(m, mma.MMAModel) or (fin == fout and fin in ("fp32", "fp64"))


def test_instruction_k_of_the_published_models():
    ks = {("v100", "fp16"): 4, ("a100", "fp16"): 8, ("h100", "fp16"): 16, ("h100", "e4m3"): 32,
          ("b200", "e5m2"): 32, ("mi300x", "e4m3fnuz"): 16, ("mi100", "bf16"): 2}
    for (gpu, fmt), k in ks.items():
        assert mma.preset(gpu, fmt).k == k


def test_gpu_names_ignore_case_and_punctuation():
    assert mma.preset("RTX PRO 6000", "fp16").name == "rtx-pro-6000"
    assert mma.preset("B200_RN", "fp16").params.rounding == "rne"


def test_unknown_gpu_lists_the_gpus():
    with pytest.raises(ValueError, match="unknown GPU 'k80'.*v100, t4, a100"):
        mma.preset("k80", "fp16")


def test_format_the_gpu_lacks_lists_its_formats():
    with pytest.raises(ValueError, match="v100 has no e4m3->fp32 instruction; it has: "
                                         "fp16->fp32, fp16->fp16"):
        mma.preset("v100", "e4m3")
    with pytest.raises(ValueError, match=r"a100 has no mixed e4m3 x e5m2 instruction; its "
                                         r"mixed pairs: none"):
        mma.preset("a100", ("e4m3", "e5m2"))
    with pytest.raises(ValueError, match=r"mi300x has no mixed e4m3fnuz x bf16 instruction; its "
                                         r"mixed pairs: \(e4m3fnuz, e5m2fnuz\), "
                                         r"\(e5m2fnuz, e4m3fnuz\)"):
        mma.preset("mi300x", ("e4m3fnuz", "bf16"))
    with pytest.raises(ValueError, match="mi300x has no e4m3->fp32.*e4m3fnuz->fp32"):
        mma.preset("mi300x", "e4m3")
    with pytest.raises(ValueError, match=r"unknown format 'fp7' \(a100 has: fp16->fp32"):
        mma.preset("a100", "fp7")


def test_k_too_long_is_an_error_naming_k_and_chain():
    m = mma.preset("v100", "fp16")
    a = np.ones((1, 5), np.float16)
    with pytest.raises(ValueError, match=r"K=5 products exceed this instruction's k=4.*chain=True"):
        m(a, a, np.float32([0]))


def test_mismatched_shapes_are_errors():
    m = mma.preset("v100", "fp16")
    with pytest.raises(ValueError, match="same shape"):
        m(np.ones((2, 4), np.float16), np.ones((3, 4), np.float16), np.zeros(2, np.float32))
    with pytest.raises(ValueError, match=r"c must have the outputs' shape \(2,\) \(or one that "
                                         r"broadcasts to it\); got \(3,\)"):
        m(np.ones((2, 4), np.float16), np.ones((2, 4), np.float16), np.zeros(3, np.float32))


def test_wrong_dtypes_are_type_errors_naming_the_accepted_ones():
    m = mma.preset("h100", "e4m3")
    x = np.ones((1, 32), np.float32)
    with pytest.raises(TypeError, match="not e4m3; accepted: arrays of dtype float8_e4m3fn"):
        m(x, x, np.float32([0]))
    y = np.ones((1, 32), ml_dtypes.float8_e4m3fn)
    with pytest.raises(TypeError, match="c: dtype float16 is not fp32; accepted: arrays of dtype "
                                        "float32, unsigned integer codes of fp32, or a Python "
                                        "number exact in fp32"):
        m(y, y, np.float16([0]))
    with pytest.raises(TypeError, match="without fmt="):
        m(y.view(np.uint8), y.view(np.uint8), np.float32([0]))
    with pytest.raises(ValueError, match="does not match the model's input format"):
        m(y.view(np.uint8), y.view(np.uint8), np.float32([0]), fmt="e5m2")


def test_params_are_validated():
    with pytest.raises(ValueError, match="accumulation must be one of"):
        MMAParams("fp16", "fp32", k=4, accumulation="kulisch")
    with pytest.raises(ValueError, match="extra_bits must be None"):
        MMAParams("fp16", "fp32", k=4, accumulation="exact")
    with pytest.raises(ValueError, match="power of two"):
        MMAParams("fp16", "fp32", k=6, accumulation="pairwise", extra_bits=None, c_joins="last")
    with pytest.raises(ValueError, match="unknown format"):
        MMAParams("fp17", "fp32", k=4)
    with pytest.raises(ValueError, match="result_bits applies to"):
        MMAParams("fp16", "fp32", k=4, accumulation="pairwise", extra_bits=None,
                  c_joins="last", result_bits=10)


def test_calls_leave_the_callers_flags_alone():
    with fpsim.localcontext(fpsim.Context()) as ctx:
        m = mma.preset("v100", "fp16")
        a, b, c = _random_rows(np.float16, 10, 4, seed=6)
        m(a, b, c)
        assert not ctx.flags

