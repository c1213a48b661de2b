"""Differential runs against real stacks: numpy float16, ml_dtypes, PyTorch CPU.

Here the stack is the thing under test and fpsim's array engine
(:mod:`fpsim.array`, :mod:`fpsim.ops`) is the golden model, under the
settings of the stack's profile (:func:`fpsim.testing.profile`).  Every
test states what the stack is expected to do; where a stack's behaviour
cannot be expressed as a context setting (which NaN code it writes), the
profile's note says so and a test here pins the note down, so that a
change in the stack fails loudly instead of being absorbed.

* numpy float16 ``+ - * /`` and ``sqrt`` agree with round to nearest even
  bit for bit, NaN codes included under the x86 NaN policy (on x86-64);
* numpy float16 ``sum()`` accumulates in FP32 in numpy's pairwise order
  (blocks of 8 lanes, halves split at multiples of 8) and rounds once to
  FP16; it is neither FP16 sequential nor FP16 pairwise accumulation;
* ml_dtypes casts from float32 and float64 into every format with a value
  dtype agree under the ``ml_dtypes`` profile;
* torch CPU casts agree under the ``torch`` profile; fp16/bf16 matmul
  accumulates in FP32, within 1 ULP of ``fpsim.ops.matmul`` with FP32
  accumulation but not bit for bit in every element.
"""

from __future__ import annotations

import platform

import ml_dtypes
import numpy as np
import pytest

import fpsim
from fpsim import array, ops
from fpsim.testing import assert_bitwise_equal, assert_ulp_close, compare, profile

X86 = platform.machine().lower() in ("x86_64", "amd64")
F16 = np.float16
U16 = np.uint16


def codes(x: np.ndarray) -> np.ndarray:
    """The bit patterns of a float array, as unsigned integers."""
    return x.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[x.dtype.itemsize])


# -- samples ----------------------------------------------------------------------------

NOTABLE_FP16 = np.array([
    0x0000, 0x8000, 0x0001, 0x8001, 0x0002, 0x03FF, 0x83FF, 0x0400, 0x8400, 0x0401,
    0x3C00, 0xBC00, 0x3C01, 0x3BFF, 0x4000, 0xC000, 0x3555, 0x3E00, 0x5640, 0x7BFF, 0xFBFF,
    0x7BFE, 0x7800, 0x1400, 0x0200, 0x7C00, 0xFC00, 0x7E00, 0xFE00, 0x7E01, 0x7FFF, 0x7C01,
    0xFD55, 0x7D00,
], U16)


def float_sample(fmt: fpsim.Format, wide: type) -> np.ndarray:
    """Values of ``wide`` (float32 or float64) that test a cast into ``fmt``:
    every value of fmt, every midpoint between neighbours (ties) and the
    nearest ``wide`` values either side of it, the overflow threshold
    (max + half an ulp) and its neighbours, the subnormal boundaries, signed
    zeros, infinities, NaNs (quiet and signaling, with payloads), and random
    codes."""
    values = array.decode(np.arange(1 << fmt.width, dtype=np.uint64), fmt)
    values = np.unique(values[np.isfinite(values)])          # exact, sorted, float64
    top = values[-1] + (values[-1] - values[-2]) / 2          # max + half an ulp
    mids = np.concatenate([(values[:-1] + values[1:]) / 2, [top, 2 * values[-1]]])
    mids = mids[np.abs(mids) <= np.finfo(wide).max].astype(wide)
    pos = np.concatenate([values.astype(wide), mids, np.nextafter(mids, wide(np.inf)),
                          np.nextafter(mids, wide(0)), [np.finfo(wide).max, np.finfo(wide).tiny,
                                                        np.finfo(wide).smallest_subnormal]])
    pos = pos[np.isfinite(pos)]
    rng = np.random.default_rng(fmt.width)
    ints = {np.float32: np.uint32, np.float64: np.uint64}[wide]
    bits = np.finfo(wide).bits
    random = rng.integers(0, 1 << (bits - 1), 1 << 14, dtype=np.uint64).astype(ints).view(wide)
    nans = np.array([0x7FC00000, 0x7FC00001, 0x7FE00000, 0x7F800001, 0x7FFFFFFF, 0x7FA00000],
                    np.uint32).view(np.float32).astype(wide) if wide is np.float32 else \
        np.array([0x7FF8000000000000, 0x7FF0000000000001, 0x7FFC000000000000], np.uint64).view(wide)
    finite = np.concatenate([pos, -pos, random, [wide(0), -wide(0)]]).astype(wide)
    finite = finite[np.isfinite(finite)]
    return np.concatenate([finite, [wide(np.inf), -wide(np.inf)], nans, -nans]).astype(wide)


def split(sample: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    nan = np.isnan(sample)
    return sample[~nan], sample[nan]


def assert_nan_signs(actual: np.ndarray, expected: np.ndarray, fmt: fpsim.Format) -> None:
    """Where ``expected`` is NaN, ``actual`` is NaN of the same sign (the
    payloads are the profile's notes)."""
    a, e = codes(actual).astype(np.uint64), codes(expected).astype(np.uint64)
    a_nan = np.isnan(actual.astype(np.float64))
    e_nan = np.isnan(expected.astype(np.float64))
    assert (a_nan == e_nan).all(), "NaN-ness differs"
    if fmt.signed and fmt.sign_bit:
        sign = np.uint64(fmt.sign_bit)
        assert ((a[e_nan] & sign) == (e[e_nan] & sign)).all(), "NaN sign differs"


# -- (a) numpy float16 arithmetic --------------------------------------------------------

BINARY = [("add", np.add), ("sub", np.subtract), ("mul", np.multiply), ("div", np.divide)]


def _pairs() -> tuple[np.ndarray, np.ndarray]:
    every = np.arange(1 << 16, dtype=U16)
    x = np.concatenate([np.repeat(every, len(NOTABLE_FP16)), np.tile(NOTABLE_FP16, 1 << 16)])
    y = np.concatenate([np.tile(NOTABLE_FP16, 1 << 16), np.repeat(every, len(NOTABLE_FP16))])
    rng = np.random.default_rng(16)
    x = np.concatenate([x, rng.integers(0, 1 << 16, 10**6, dtype=U16)])
    y = np.concatenate([y, rng.integers(0, 1 << 16, 10**6, dtype=U16)])
    return x.view(F16), y.view(F16)


@pytest.fixture(scope="module")
def fp16_pairs() -> tuple[np.ndarray, np.ndarray]:
    return _pairs()


@pytest.mark.parametrize("name,ufunc", BINARY, ids=[b[0] for b in BINARY])
def test_numpy_float16_binary_ops_are_round_to_nearest_even(name, ufunc, fp16_pairs):
    # Every code against the notable codes (both ways) and 10**6 random pairs.
    x, y = fp16_pairs
    with np.errstate(all="ignore"):
        got = ufunc(x, y)
    ctx = profile("numpy").context("fp16")
    expected = getattr(array, name)(x, y, ctx)
    assert_ulp_close(got, expected, max_ulp=0, nan="any")   # every non-NaN bit, NaN-ness
    if X86:
        # NaN codes: the x86 rule (first NaN operand quieted, default NaN
        # 0xfe00); add and multiply commute their operands.
        first, second = (y, x) if name in ("add", "mul") else (x, y)
        assert_bitwise_equal(got, getattr(array, name)(first, second, ctx))


def test_numpy_float16_sqrt_every_code():
    x = np.arange(1 << 16, dtype=U16).view(F16)
    with np.errstate(all="ignore"):
        got = np.sqrt(x)
    expected = array.sqrt(x, profile("numpy").context("fp16"))
    if X86:
        assert_bitwise_equal(got, expected)   # sqrt(-x) is the negative default NaN 0xfe00
    else:
        assert_ulp_close(got, expected, max_ulp=0, nan="any")


def test_numpy_float16_astype_from_float32_and_float64():
    fmt = fpsim.FP16
    for wide in (np.float32, np.float64):
        finite, nans = split(float_sample(fmt, wide))
        with np.errstate(all="ignore"):
            assert_bitwise_equal(finite.astype(F16), array.round(finite, fmt))
            assert_nan_signs(nans.astype(F16), array.round(nans, fmt), fmt)


def test_numpy_float16_astype_keeps_signaling_nans_signaling():
    # The numpy profile's fp16 note: float32 -> float16 truncates the payload
    # and keeps a signaling NaN signaling (fpsim quiets it, with INVALID).
    snan = np.array([0x7F800001, 0xFF812345], np.uint32).view(np.float32)
    with np.errstate(invalid="ignore"):
        got = codes(snan.astype(F16))
    assert [hex(c) for c in got] == ["0x7c01", "0xfc09"]
    assert [hex(c) for c in array.encode(snan, "fp16")] == ["0x7e00", "0xfe09"]


# -- (b) numpy float16 sum ---------------------------------------------------------------

def _add32(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return array.add(x, y)   # float32 arrays: one rounding to nearest even per lane


def numpy_pairwise_fp32(t: np.ndarray) -> np.ndarray:
    """numpy's pairwise summation (``@TYPE@_pairwise_sum``,
    numpy/_core/src/umath/loops_utils.h.src) with every addition an FP32
    addition of fpsim: fewer than 8 terms summed in order from -0; up to 128
    terms in 8 lanes, lane k summing terms k, k+8, ..., the lanes combined
    as ((r0+r1)+(r2+r3))+((r4+r5)+(r6+r7)) and the remainder added in order;
    more terms split at n/2 rounded down to a multiple of 8."""
    n = len(t)
    if n < 8:
        res = np.float32([-0.0])
        for i in range(n):
            res = _add32(res, t[i:i + 1])
        return res
    if n <= 128:
        r = t[0:8].copy()
        m = n - n % 8
        for i in range(8, m, 8):
            r = _add32(r, t[i:i + 8])
        res = _add32(_add32(_add32(r[0:1], r[1:2]), _add32(r[2:3], r[3:4])),
                     _add32(_add32(r[4:5], r[5:6]), _add32(r[6:7], r[7:8])))
        for i in range(m, n):
            res = _add32(res, t[i:i + 1])
        return res
    half = n // 2
    half -= half % 8
    return _add32(numpy_pairwise_fp32(t[:half]), numpy_pairwise_fp32(t[half:]))


def numpy_half_sum(x: np.ndarray) -> np.float16:
    """What numpy's float16 ``add.reduce`` is found to compute: the first
    element widened to FP32, plus the FP32 pairwise sum of the others,
    rounded once to FP16."""
    t = x.astype(np.float32)
    return array.round(_add32(t[0:1], numpy_pairwise_fp32(t[1:])), "fp16")[0]


SUM_LENGTHS = [7, 8, 9, 100, 128, 129, 1000, 4097, 10**5]


@pytest.mark.parametrize("n", SUM_LENGTHS)
def test_numpy_float16_sum_is_fp32_pairwise_rounded_once(n):
    rng = np.random.default_rng(n)
    x = (rng.standard_normal(n) * np.exp(rng.uniform(-8, 8, n))).astype(F16)
    with np.errstate(over="ignore"):
        got = x.sum()
    assert codes(np.array(got)) == codes(np.array(numpy_half_sum(x)))


def test_numpy_float16_sum_accumulates_in_fp32_not_fp16():
    # FP16 accumulation of 0.1 stalls at 256 sequentially; numpy does not.
    x = np.full(4096, 0.1, F16)
    assert float(ops.sum(x, accumulate="fp16")) == 256.0
    assert float(x.sum()) == float(numpy_half_sum(x)) == float(ops.sum(x)) == 409.5
    # 60000 + 60000 overflows FP16, not FP32.
    y = np.array([60000, 60000, -60000, -60000], F16)
    assert float(y.sum()) == float(numpy_half_sum(y)) == 0.0
    for order in ("sequential", "pairwise"):
        assert not np.isfinite(ops.sum(y, accumulate="fp16", order=order))


def test_numpy_float16_sum_order_in_fp32_is_pairwise_not_sequential():
    # 1 + 100000 * 2**-24: sequentially in FP32 each 2**-24 is half an ulp
    # of 1 and is lost (ties to even); numpy sums the small terms first.
    x = np.concatenate([[1.0], np.full(10**5, 2.0**-24)]).astype(F16)
    assert float(ops.sum(x, accumulate="fp32", order="sequential")) == 1.0
    assert float(x.sum()) == float(numpy_half_sum(x)) == 1.005859375


# -- (c) ml_dtypes casts -----------------------------------------------------------------

ML_FORMATS = ["bf16", "e4m3", "e5m2", "e4m3fnuz", "e5m2fnuz", "e3m2", "e2m3", "e2m1", "e8m0"]


@pytest.mark.parametrize("wide", [np.float32, np.float64], ids=["from_fp32", "from_fp64"])
@pytest.mark.parametrize("name", ML_FORMATS)
def test_ml_dtypes_casts_agree_under_the_ml_dtypes_profile(name, wide):
    fmt = fpsim.format(name)
    dtype = array.value_dtype(fmt)
    ctx = profile("ml_dtypes").context(fmt)
    finite, nans = split(float_sample(fmt, wide))
    if name == "e8m0":   # the profile's e8m0 note: FP32 subnormals above 2**-127
        finite = finite[~e8m0_subnormal_band(finite)]
    with np.errstate(all="ignore"):
        got = finite.astype(dtype)
    # The profile's note: from float64, ml_dtypes rounds to float32 first.
    source = finite if wide is np.float32 else array.round(finite, "fp32")
    assert_bitwise_equal(codes(got), array.encode(source, fmt, ctx), fmt)
    if fmt.specials.value != "none":
        with np.errstate(all="ignore"):
            assert_nan_signs(nans.astype(dtype), array.round(nans, fmt, ctx), fmt)


def e8m0_subnormal_band(x: np.ndarray) -> np.ndarray:
    """Where ``x`` lies strictly between 2**-127 and 1.5 * 2**-127, below
    the tie: FP32 subnormals that ml_dtypes and torch round up to 2**-126."""
    a = np.abs(x.astype(np.float64))
    return (a > 2.0**-127) & (a < 1.5 * 2.0**-127)


def test_ml_dtypes_float64_casts_round_twice():
    # 431.99999999999994 lies just below 432, the tie between E4M3's 416 and
    # 448: rounded once it is 416; through float32 it becomes the tie 432
    # and then 448 (ties to even).
    x = np.array([431.99999999999994])
    assert float(x[0].astype(ml_dtypes.float8_e4m3fn)) == 448.0
    assert float(array.round(x, "e4m3")[0]) == 416.0
    assert float(array.round(array.round(x, "fp32"), "e4m3")[0]) == 448.0


def test_e8m0_rounds_fp32_subnormals_up():
    # The ml_dtypes and torch e8m0 notes: 1.01 * 2**-127 (an FP32 subnormal)
    # gives 2**-126 although 2**-127 is nearer.
    x = np.array([1.01 * 2.0**-127, 1.3 * 2.0**-127], np.float32)
    assert [hex(c) for c in codes(x.astype(ml_dtypes.float8_e8m0fnu))] == ["0x1", "0x1"]
    assert [hex(c) for c in array.encode(x, "e8m0")] == ["0x0", "0x0"]


def test_ml_dtypes_nan_notes():
    # The ml_dtypes profile's notes: bf16 and e5m2 NaNs lose their payload;
    # formats without NaN turn NaN into a zero of the opposite sign.
    nans = np.array([0x7FE00000, 0xFFC00001], np.uint32).view(np.float32)
    assert [hex(c) for c in codes(nans.astype(ml_dtypes.bfloat16))] == ["0x7fc0", "0xffc0"]
    assert [hex(c) for c in array.encode(nans, "bf16")] == ["0x7fe0", "0xffc0"]
    assert [hex(c) for c in codes(nans.astype(ml_dtypes.float8_e5m2))] == ["0x7e", "0xfe"]
    assert [hex(c) for c in array.encode(nans, "e5m2")] == ["0x7f", "0xfe"]
    with np.errstate(invalid="ignore"):
        assert [hex(c) for c in codes(nans.astype(ml_dtypes.float4_e2m1fn))] == ["0x8", "0x0"]
    with pytest.raises(ValueError, match="no NaN"):
        array.encode(nans, "e2m1")


# -- (d) torch CPU -----------------------------------------------------------------------

TORCH_FORMATS = [("fp16", "float16"), ("bf16", "bfloat16"), ("e4m3", "float8_e4m3fn"),
                 ("e5m2", "float8_e5m2"), ("e4m3fnuz", "float8_e4m3fnuz"),
                 ("e5m2fnuz", "float8_e5m2fnuz"), ("e8m0", "float8_e8m0fnu")]


def torch_codes(torch, t) -> np.ndarray:
    """The codes of a tensor of 8 or 16 bits, as unsigned numpy integers."""
    width = t.element_size()
    raw = t.view({1: torch.uint8, 2: torch.int16}[width]).numpy()
    return raw.view({1: np.uint8, 2: np.uint16}[width])


def torch_cast(torch, x: np.ndarray, dtype_name: str) -> np.ndarray:
    """``torch.from_numpy(x).to(dtype)``, returned as codes."""
    return torch_codes(torch, torch.from_numpy(x).to(getattr(torch, dtype_name)))


@pytest.mark.parametrize("name,dtype_name", TORCH_FORMATS, ids=[f[0] for f in TORCH_FORMATS])
def test_torch_casts_agree_under_the_torch_profile(name, dtype_name):
    torch = pytest.importorskip("torch")
    if not hasattr(torch, dtype_name):
        pytest.skip(f"torch {torch.__version__} has no {dtype_name}")
    fmt = fpsim.format(name)
    ctx = profile("torch").context(fmt)
    finite, nans = split(float_sample(fmt, np.float32))
    if name == "e8m0":   # the torch profile's e8m0 notes: zero, negatives, FP32 subnormals
        finite = finite[(finite > 0) & ~e8m0_subnormal_band(finite)]
    got = torch_cast(torch, finite, dtype_name)
    assert_bitwise_equal(got, array.encode(finite, fmt, ctx), fmt)
    nan_codes = torch_cast(torch, nans, dtype_name)
    assert np.isnan(array.decode(nan_codes, fmt)).all()


def test_torch_notes():
    torch = pytest.importorskip("torch")
    x = np.array([1000.0, np.inf, -np.inf], np.float32)
    assert [hex(c) for c in torch_cast(torch, x, "float8_e4m3fn")] == ["0x7e", "0x7e", "0xfe"]
    assert [hex(c) for c in torch_cast(torch, x, "float8_e5m2")] == ["0x64", "0x7c", "0xfc"]
    nan = np.array([np.nan, -np.nan], np.float32)
    assert [hex(c) for c in torch_cast(torch, nan, "bfloat16")] == ["0xffff", "0xffff"]
    assert [hex(c) for c in torch_cast(torch, nan, "float8_e5m2")] == ["0x7f", "0xff"]
    if hasattr(torch, "float8_e8m0fnu"):
        zero_neg = np.array([0.0, -0.0, -1.0, -3.0], np.float32)
        assert [hex(c) for c in torch_cast(torch, zero_neg, "float8_e8m0fnu")] == \
            ["0x0", "0x0", "0x7f", "0x81"]
        assert [hex(c) for c in array.encode(zero_neg, "e8m0")] == ["0xff"] * 4


@pytest.mark.parametrize("dtype_name", ["float16", "bfloat16"])
def test_torch_cpu_matmul_accumulates_in_fp32(dtype_name):
    # torch CPU reduced-precision matmul accumulates in FP32 in an order that
    # no declared fpsim order reproduces in every element: FP32 accumulation
    # stays within 1 ULP (a handful of elements differ), FP16/BF16
    # accumulation is far away.
    torch = pytest.importorskip("torch")
    name = {"float16": "fp16", "bfloat16": "bf16"}[dtype_name]
    dtype = array.value_dtype(fpsim.format(name))
    rng = np.random.default_rng(3)
    total = mismatched = 0
    for m, k, n in ((8, 16, 8), (16, 256, 16), (8, 1000, 8), (4, 4096, 4)):
        a = rng.standard_normal((m, k)).astype(dtype)
        b = rng.standard_normal((k, n)).astype(dtype)
        tdtype = getattr(torch, dtype_name)
        ta = torch.from_numpy(a.astype(np.float32)).to(tdtype)   # exact
        tb = torch.from_numpy(b.astype(np.float32)).to(tdtype)
        got = torch_codes(torch, ta @ tb)
        expected = ops.matmul(a, b)              # FP32 accumulation, exact products
        assert_ulp_close(got, codes(expected), max_ulp=1, fmt=name)
        total += got.size
        mismatched += compare(got, codes(expected), name).beyond_tolerance
        narrow = ops.matmul(a, b, accumulate=name)
        if k >= 256:
            assert compare(got, codes(narrow), name, max_ulp=1).beyond_tolerance > 0
    assert mismatched <= total // 100


def test_torch_cpu_scaled_mm_dequantizes_then_runs_an_fp32_matmul():
    # On the CPU, torch._scaled_mm is not cuBLAS's FP8 GEMM: each operand is
    # converted to FP32 and multiplied by its scale, then the two are
    # multiplied in FP32 (in the CPU BLAS's order).  It is not what
    # fpsim.mma.cublas("h100", "e4m3") models (docs/library_gemms.rst):
    # almost no element agrees with the H100's truncated accumulation.
    torch = pytest.importorskip("torch")
    if not hasattr(torch, "_scaled_mm"):
        pytest.skip("this torch has no _scaled_mm")
    import fpsim.mma as mma

    rng = np.random.default_rng(5)
    m, k, n = 16, 1024, 16
    a = (rng.standard_normal((m, k)) * 4).astype(ml_dtypes.float8_e4m3fn)
    b = (rng.standard_normal((k, n)) * 4).astype(ml_dtypes.float8_e4m3fn)
    ta = torch.from_numpy(a.view(np.uint8)).view(torch.float8_e4m3fn)
    # _scaled_mm's B is column-major: the transpose of a row-major (N, K)
    tb = torch.from_numpy(np.ascontiguousarray(b.T).view(np.uint8)).view(torch.float8_e4m3fn).t()
    for sa, sb in ((1.0, 1.0), (0.375, 1.75)):
        scale_a, scale_b = torch.tensor(sa), torch.tensor(sb)
        got = torch._scaled_mm(ta, tb, scale_a=scale_a, scale_b=scale_b,
                               out_dtype=torch.float32)
        assert torch.equal(got, (ta.float() * scale_a) @ (tb.float() * scale_b))
        h100 = mma.cublas("h100", "e4m3")(a, b, scale_a=sa, scale_b=sb)
        assert compare(got.numpy(), h100).exact < m * n // 10
