"""The NaN a matrix unit writes: one code per unit and output format
(``MMAParams.nan``), whatever NaN came in, through every path that writes
one: the row model, the tile path, library GEMMs and their epilogues, and
the probe.

The expected codes are stated here, with their evidence, never computed by
fpsim:

* NVIDIA: PTX's canonical NaN, FP32 ``0x7FFFFFFF``, FP16 and BF16
  ``0x7FFF``.  MMA-Sim 2.1.1 writes it for every ``mma``, ``wgmma`` and
  ``tcgen05.mma`` output (compared below where mmasim is installed), and an
  H100 wrote it in every NaN cast and FP16/BF16 operation measured
  (``docs/stacks.rst``, "PyTorch on CUDA": FP32 -> FP16/BF16 casts of a
  NaN give ``0x7fff``, FP16 -> FP32 casts ``0x7fffffff``);
* AMD: the quiet NaN ``0x7FC00000``, as documented (``docs/mma.rst``, "NaN
  codes": not measured on an AMD GPU).
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

import fpsim
from fpsim import array, ops
from fpsim.formats import FP32
from fpsim.mma import gemm as _gemm
from fpsim.mma import model as _model

mma = fpsim.mma

#: PTX's canonical NaN, by output format.
CANONICAL = {"fp32": 0x7FFFFFFF, "fp16": 0x7FFF, "bf16": 0x7FFF}
#: AMD's NaN as fpsim documents it (unverified on hardware): the quiet bit alone.
QUIET = {"fp32": 0x7FC00000, "fp16": 0x7E00, "bf16": 0x7FC0}
#: Measured on an H100 with torch 2.11 (docs/stacks.rst): the code of every
#: NaN cast from FP32 into FP16 and BF16, and from FP16 into FP32.
H100_CAST_NAN = {("fp32", "fp16"): 0x7FFF, ("fp32", "bf16"): 0x7FFF,
                 ("fp16", "fp32"): 0x7FFFFFFF}

NAN, INF = math.nan, math.inf


def _amd(gpu: str) -> bool:
    return gpu.startswith("mi")


# the aligned units (the FMA-chain units' NaNs: tests/test_mma_fma_chain.py)
ALIGNED = [k for k in mma.presets() if isinstance(mma.preset(*k), mma.MMAModel)]
NVIDIA = [(g, i, o) for g, i, o in ALIGNED if not _amd(g)]
AMD = [(g, i, o) for g, i, o in ALIGNED if _amd(g)]


def _dtype(fmt):
    dt = array.value_dtype(fmt)
    return np.dtype(np.float32) if dt is None else dt  # TF32: float32 of exact values


def _values(values, fmt) -> np.ndarray:
    with np.errstate(invalid="ignore", over="ignore"):
        return np.asarray(values, np.float64).astype(_dtype(fmt))


def _codes(d: np.ndarray) -> list[int]:
    return d.view(np.uint32 if d.dtype.itemsize == 4 else np.uint16).reshape(-1).tolist()


def special_rows(unit):
    """Rows of one instruction (K = its issue width) that give a NaN: a
    quiet NaN a, a negative NaN b (signaling, with a payload, where the
    format has signaling NaNs), a NaN c, inf × 0, inf − inf, and an
    infinite product against c of the other sign (the last three where the
    input format has infinities)."""
    fa, fo = unit.input_format, unit.output_format
    K = unit.issue_k
    rows = []

    def row(a_at, b_at, c, label):
        a, b = np.ones(K), np.ones(K)
        for i, v in a_at.items():
            a[i] = v
        for i, v in b_at.items():
            b[i] = v
        rows.append((a, b, c, label))

    row({0: NAN}, {}, 0.0, "NaN a")
    row({}, {K - 1: -NAN}, 0.0, "negative NaN b")
    row({}, {}, NAN, "NaN c")
    if fa.has_inf:
        row({0: INF}, {0: 0.0}, 0.0, "inf x 0")
        row({0: INF, 1: -INF}, {}, 0.0, "inf - inf")
        row({0: -INF}, {}, INF, "-inf product, +inf c")
    a = _values([r[0] for r in rows], fa)
    b = _values([r[1] for r in rows], unit.input_b_format)
    c = _values([r[2] for r in rows], fo)
    _signaling(b, 1, K - 1, unit.input_b_format)
    return a, b, c, [r[3] for r in rows]


def _signaling(x: np.ndarray, i: int, j: int, fmt) -> None:
    """Make ``x[i, j]`` the negative signaling NaN with the lowest payload
    bit of ``fmt`` set, where ``fmt`` has signaling NaNs (TF32: in its
    float32 container)."""
    box = FP32 if array.value_dtype(fmt) is None else fmt
    if fmt.specials != "ieee" or fmt.mantissa_bits < 2:
        return
    low = 1 << (box.mantissa_bits - fmt.mantissa_bits)
    codes = x.view({1: np.uint8, 2: np.uint16, 4: np.uint32}[x.dtype.itemsize])
    codes[i, j] = box.sign_bit | box.inf_code | low


# -- the row model ---------------------------------------------------------------------


def test_every_nvidia_preset_writes_ptx_canonical_nan():
    seen = set()
    for gpu, fmt, out in NVIDIA:
        unit = mma.preset(gpu, fmt, out)
        assert unit.params.nan == "all_ones", (gpu, fmt, out)
        a, b, c, labels = special_rows(unit)
        got = _codes(unit(a, b, c))
        assert got == [CANONICAL[out]] * len(labels), (gpu, fmt, out, labels,
                                                       [hex(x) for x in got])
        seen.add(out)
    assert seen == {"fp32", "fp16"}


def test_every_amd_preset_writes_the_documented_quiet_nan():
    for gpu, fmt, out in AMD:
        unit = mma.preset(gpu, fmt, out)
        assert unit.params.nan == "quiet"
        a, b, c, labels = special_rows(unit)
        got = _codes(unit(a, b, c))
        assert got == [QUIET[out]] * len(labels), (gpu, fmt, out, labels,
                                                   [hex(x) for x in got])


def test_a_nan_in_a_later_block_of_a_chain_is_the_units():
    unit = mma.preset("a100", "fp16", "fp16")       # k = 8, chained over K = 24
    a = np.ones((2, 24), np.float16)
    a[0, 17] = np.nan
    a[1, 3], a[1, 20] = np.inf, -np.inf
    b = np.ones((2, 24), np.float16)
    assert _codes(unit(a, b, np.float16([1, 1]), chain=True)) == [0x7FFF, 0x7FFF]


def test_the_block_scaled_presets_write_the_same_nan():
    unit = mma.preset("b200", "mxfp8")
    a = np.full((2, 32), 0x38, np.uint8)             # E4M3 1.0
    a[0, 5] = 0x7F                                   # an E4M3 NaN element
    ones = np.full((2, 32), 0x38, np.uint8)
    scale = np.full((2, 1), 127, np.uint8)           # E8M0 1.0
    d = unit(a, ones, np.float32([0.0, np.nan]), scale_a=scale, scale_b=scale)
    assert _codes(d) == [CANONICAL["fp32"]] * 2


def test_nan_codes_follow_the_rule_in_every_format():
    p = mma.MMAParams("fp16", "fp32", k=4, nan="all_ones")
    assert [p.nan_code(f) for f in ("fp32", "fp16", "bf16")] == [0x7FFFFFFF, 0x7FFF, 0x7FFF]
    q = p.replace(nan="quiet")
    assert [q.nan_code(f) for f in ("fp32", "fp16", "bf16")] == [0x7FC00000, 0x7E00, 0x7FC0]
    # single-NaN formats: their NaN under both rules
    assert p.nan_code("e4m3") == q.nan_code("e4m3") == 0x7F
    assert p.nan_code("e4m3fnuz") == q.nan_code("e4m3fnuz") == 0x80
    with pytest.raises(ValueError, match="nan must be one of all_ones, quiet"):
        p.replace(nan="canonical")


# -- the tile path ---------------------------------------------------------------------


def _both_paths(unit, a, b, **kw):
    """ops.matmul on the tile path and on the row model: codes, both."""
    fast = ops.matmul(a, b, accumulate=unit, **kw)
    old = _gemm.TILE_PATH
    _gemm.TILE_PATH = False
    try:
        rows = ops.matmul(a, b, accumulate=unit, **kw)
    finally:
        _gemm.TILE_PATH = old
    return fast, rows


def _limited_bf16(rows=4, cols=3, k=8):
    """BF16 operands whose first output has products 2**128 and -2**128 in one
    block (NaN where products are limited), every value finite."""
    a = np.ones((rows, k), ml_dtypes.bfloat16)
    b = np.ones((k, cols), ml_dtypes.bfloat16)
    a[0, :2] = 2.0**127
    b[:2, 0] = [2.0, -2.0]
    return a, b


@pytest.mark.parametrize("nan, code", [("quiet", 0x7FC00000), ("all_ones", 0x7FFFFFFF)])
def test_limited_products_of_both_signs_give_the_units_nan_on_the_tile_path(nan, code):
    unit = mma.preset("mi300x", "bf16")
    unit = mma.MMAModel(unit.params.replace(nan=nan))
    a, b = _limited_bf16()
    fast, rows = _both_paths(unit, a, b)
    assert _codes(fast) == _codes(rows)
    assert _codes(fast)[0] == code and not np.isnan(fast.reshape(-1)[1:].astype(float)).any()


@pytest.mark.parametrize("native", [True, False])
@pytest.mark.parametrize("nan, code", [("quiet", 0x7FC00000), ("all_ones", 0x7FFFFFFF)])
def test_a_pairwise_tree_overflowing_both_ways_gives_the_units_nan(native, nan, code,
                                                                   monkeypatch):
    # CDNA2: (p0 + p1) overflows to +inf, (p2 + p3) to -inf; their sum is NaN
    monkeypatch.setattr(_model, "PAIRWISE_NATIVE", native)
    unit = mma.MMAModel(mma.preset("mi210", "bf16").params.replace(nan=nan))
    a = np.ones((3, 4), ml_dtypes.bfloat16)
    a[0] = [2.0**127, 2.0**127, -(2.0**127), -(2.0**127)]
    b = np.ones((4, 2), ml_dtypes.bfloat16)
    fast, rows = _both_paths(unit, a, b)
    assert _codes(fast) == _codes(rows)
    assert _codes(fast)[:2] == [code, code]
    assert _codes(unit(a[:1], b[:, 0][None], np.float32([0.0]))) == [code]


def test_nvidia_tile_path_and_row_model_write_the_canonical_nan():
    unit = mma.preset("h100", "fp16")
    a = np.ones((5, 40), np.float16)
    b = np.ones((40, 4), np.float16)
    fast, _ = _both_paths(unit, a, b)                 # finite: the tile path
    assert not np.isnan(fast).any()
    a[1, 33] = np.nan                                 # NaN operand: the row model
    a[2, 3], a[2, 30] = np.inf, -np.inf               # inf - inf across blocks
    b[7, 2] = np.inf                                  # column 2: +inf in rows 0, 3, 4
    d = ops.matmul(a, b, accumulate=unit)
    got = np.array(_codes(d)).reshape(5, 4)
    assert (got[1] == CANONICAL["fp32"]).all() and (got[2] == CANONICAL["fp32"]).all()
    assert (got[[0, 3, 4], 2] == 0x7F800000).all()     # +inf, not NaN
    # ops.matmul's own out= conversion (the call's IEEE policy) keeps the
    # all-ones payload: 0x7FFF, as the GPU's conversion
    d16 = ops.matmul(a, b, accumulate=unit, out="fp16")
    assert (np.array(_codes(d16)).reshape(5, 4)[1:3] == CANONICAL["fp16"]).all()


# -- library GEMMs ---------------------------------------------------------------------

LIBRARY = [
    ("cublas", "h100", "fp16", "fp32", {}),
    ("cublas", "h100", "fp16", "fp16", {}),
    ("cublas", "h100", "bf16", "bf16", {"split_k": 2}),
    ("cublas", "h200", "bf16", "fp32", {}),
    ("cublas", "h100", "e4m3", "fp32", {}),
    ("cublas", "h100", "e4m3", "bf16", {}),
    ("cublas", "h100", ("e4m3", "e5m2"), "fp16", {"fast_accum": True}),
    ("cublas", "h100", "tf32", "fp32", {"promote_every": 32}),
    ("cutlass", "v100", "fp16", "fp16", {}),
    ("cutlass", "a100", "bf16", "bf16", {"split_k": 2, "split_reduction": "serial"}),
    ("cutlass", "ada", "fp16", "fp32", {}),
    ("cutlass", "h100", "e4m3", "bf16", {}),
    ("cutlass", "b200", "fp16", "fp16", {"split_k": 2}),
    ("cutlass", "rtx-pro-6000", "e5m2", "fp32", {}),
    ("triton", "a100", "fp16", "fp16", {}),
    ("triton", "h100", "e4m3", "fp32", {"max_num_imprecise_acc": 64, "block_k": 128}),
    ("triton", "b200", "tf32", "bf16", {}),
    ("triton", "ada", "bf16", "bf16", {}),
]
_LIBS = {"cublas": mma.cublas, "cutlass": mma.cutlass, "triton": mma.triton}


def _library_operands(g, K=256, M=4, N=3):
    """A, B and C (values of the GEMM's formats) and the outputs that are
    NaN: row 0 has a NaN operand, output (1, 1) inf × 0 (without
    infinities: row 1 a negative NaN), (2, 0) a NaN C, row 3 inf - inf
    (without infinities: a NaN); the rest finite."""
    fa, fb, fo = g.model.input_format, g.model.input_b_format, g.out
    a, b = np.ones((M, K)), np.ones((K, N)) * 0.5
    c = np.zeros((M, N))
    nan = np.zeros((M, N), bool)
    a[0, 7] = NAN
    if fa.has_inf and fb.has_inf:
        a[1, 200] = INF
        b[200, 1] = 0.0
        a[3, 3], a[3, 150] = INF, -INF
        nan[1, 1] = True
    else:
        a[1, 200] = -NAN
        a[3, 150] = NAN
        nan[1] = True
    c[2, 0] = NAN
    nan[0] = nan[3] = nan[2, 0] = True
    return _values(a, fa), _values(b, fb), _values(c, fo), nan


def test_library_gemms_write_the_canonical_nan_in_their_output_format():
    # (one loop, not parametrized: every case in the default run, 1 s in all)
    for library, gpu, fmt, out, kw in LIBRARY:
        g = _LIBS[library](gpu, fmt, out, **kw)
        A, B, C, nan = _library_operands(g)
        got = np.array(_codes(g(A, B, C))).reshape(C.shape)
        assert [hex(x) for x in got[nan]] == [hex(CANONICAL[out])] * int(nan.sum()), g
        assert not np.isnan(array.decode(got[~nan].astype(np.uint64), out)).any(), g


def test_every_library_preset_schedule_writes_the_canonical_nan():
    # all three libraries on every NVIDIA architecture they know, 16-bit output
    from fpsim.mma.library import LIBRARIES
    from fpsim.mma.presets import GPUS

    for name, make in _LIBS.items():
        for arch in LIBRARIES[name]:
            gpu = next(g for g, (a, _) in GPUS.items() if a == arch)
            g = make(gpu, "fp16", "fp16")
            x = np.ones((2, 64), np.float16)
            x[1, 9] = np.nan
            got = _codes(g(x, np.ones((64, 2), np.float16)))
            assert got[2:] == [CANONICAL["fp16"]] * 2, (name, gpu, [hex(v) for v in got])


def test_a_nan_made_by_the_schedule_is_canonical():
    # Finite BF16 inputs (the tile path): slice 0 overflows to +inf, slice 1
    # to -inf; cuBLAS's FP32 merge of the slices is inf - inf.
    A = np.full((2, 128), 2.0**127, ml_dtypes.bfloat16)
    B = np.ones((128, 2), ml_dtypes.bfloat16)
    B[:64, 0], B[64:, 0] = 2.0, -2.0
    for out in ("fp32", "bf16"):
        d = mma.cublas("h100", "bf16", out, split_k=2)(A, B)
        assert _codes(d)[0::2] == [CANONICAL[out]] * 2


def test_a_nan_made_by_the_epilogue_is_canonical():
    # addmm with an FP32 output: the accumulator overflows to +inf, C is -inf,
    # and the epilogue's FP32 addition is inf - inf.
    A = np.full((1, 16), 2.0**127, ml_dtypes.bfloat16)
    B = np.full((16, 2), 2.0, ml_dtypes.bfloat16)
    C = np.float32([[-np.inf, 1.0]])
    d = mma.cublas("h100", "bf16", "fp32")(A, B, C)
    assert _codes(d) == [CANONICAL["fp32"], 0x7F800000]
    # a C holding a NaN with a payload and a sign: the epilogue writes the canonical NaN
    C16 = np.uint16([[0xFE01, 0x3C00]]).view(np.float16)
    d16 = mma.cublas("h100", "fp16", "fp16")(np.ones((1, 16), np.float16),
                                             np.ones((16, 2), np.float16), C16)
    assert _codes(d16) == [CANONICAL["fp16"], 0x4C40]      # 17 = 16 + 1


def test_cublas_16_bit_outputs_of_a_nan_accumulator_are_the_h100s_cast():
    # cuBLAS rounds the FP32 accumulator into the 16-bit output (captures in
    # tests/data/h100-cublas); the H100 casts every FP32 NaN to 0x7fff.
    x = np.ones((1, 32), np.float16)
    x[0, 0] = np.nan
    d = mma.cublas("h100", "fp16", "fp16")(x, np.ones((32, 1), np.float16))
    assert _codes(d) == [H100_CAST_NAN[("fp32", "fp16")]]
    y = np.ones((1, 32), ml_dtypes.bfloat16)
    y[0, 0] = np.nan
    d = mma.cublas("h100", "bf16", "bf16")(y, np.ones((32, 1), ml_dtypes.bfloat16))
    assert _codes(d) == [H100_CAST_NAN[("fp32", "bf16")]]
    # and the FP32 output's code is what the H100 widens an FP16 NaN to
    d = mma.cublas("h100", "fp16", "fp32")(x, np.ones((32, 1), np.float16))
    assert _codes(d) == [H100_CAST_NAN[("fp16", "fp32")]]


def test_no_recorded_gpu_output_holds_another_nan():
    # The evidence on file: no recorded instruction or cuBLAS output is a NaN
    # other than the canonical one (none is a NaN at all today).
    from pathlib import Path

    data = Path(__file__).parent / "data"
    checked = 0
    for path in sorted(data.glob("**/*.npz")):
        if "quant-peers" in path.parts:      # CPU libraries' quantizations, no GPU output
            continue
        z = np.load(path)
        for key in z.files:
            if key != "d" and "_d" not in key:          # outputs only: d, *_d32*, *_d16
                continue
            codes = z[key]
            # (tensorcore/: every d is FP32 bits, FP16 results widened)
            fmt = {4: "fp32", 2: "bf16" if "bf16" in key else "fp16"}[codes.dtype.itemsize]
            nan = np.isnan(array.decode(codes.astype(np.uint64), fmt))
            assert (codes[nan] == CANONICAL[fmt]).all(), (path.name, key)
            checked += codes.size
    assert checked > 100_000


# -- the probe -------------------------------------------------------------------------


@pytest.mark.parametrize("gpu, fmt, out, rule", [
    ("v100", "fp16", "fp16", "all_ones"),
    ("h100", "e4m3", "fp32", "all_ones"),            # E4M3 has no infinity: a NaN operand
    ("mi300x", "bf16", "fp32", "quiet"),
    ("mi210", "bf16", "fp32", "quiet"),
])
def test_the_probe_reads_the_nan_rule_back(gpu, fmt, out, rule):
    unit = mma.preset(gpu, fmt, out)
    r = mma.probe(lambda a, b, c: unit(a, b, c), fmt, out)
    assert r.findings["nan"].value == rule, str(r)
    assert r.params.nan == rule and gpu in r.matches


def test_the_probe_reads_the_nan_of_a_fnuz_unit_from_a_nan_operand():
    unit = mma.preset("mi300x", "e4m3fnuz")           # FNUZ: no infinity, NaN 0x80
    r = mma.probe(unit, "e4m3fnuz", "fp32")
    assert r.findings["nan"].value == "quiet"
    assert r.findings["nan"].evidence == [{"input": "a0=NaN, b0=1, c=0",
                                           "output": "0x7fc00000"}]


def test_the_probe_names_no_rule_for_a_negative_nan():
    def x86_like(a, b, c):  # FP32 products and sums: inf x 0 is x86's -NaN
        p = a.astype(np.float32) * b.astype(np.float32)
        with np.errstate(invalid="ignore"):
            out = c + p.sum(axis=1, dtype=np.float32)
        return np.where(np.isnan(out), np.uint32(0xFFC00000).view(np.float32), out)

    r = mma.probe(x86_like, "fp16", "fp32", max_k=4)
    assert r.findings["nan"].value is None
    assert "0xffc00000" in r.findings["nan"].how


def test_a_callable_refusing_the_nan_row_leaves_the_finding_open():
    unit = mma.preset("a100", "fp16")

    def finite_only(a, b, c):
        if not np.isfinite(a.astype(np.float64)).all():
            raise ValueError("infinite input")
        return unit(a, b, c)

    r = mma.probe(finite_only, "fp16", "fp32")
    assert r.findings["nan"].value is None and "infinite input" in r.findings["nan"].how
    assert r.params.nan == "quiet" and r.reproduces     # what no row could show


# -- MMA-Sim, where installed -----------------------------------------------------------

# (fpsim preset, MMA-Sim instruction: class, architecture, shape and types); one
# loop over them all (1 s), so that every architecture runs in every run
MMASIM = [
    (("v100", "fp16", "fp32"), ("MMA", "Volta", "m8n8k4.f32.f16.f16.f32")),
    (("v100", "fp16", "fp16"), ("MMA", "Volta", "m8n8k4.f16.f16.f16.f16")),
    (("a100", "bf16", "fp32"), ("MMA", "Ampere", "m16n8k16.f32.bf16.bf16.f32")),
    (("a100", "tf32", "fp32"), ("MMA", "Ampere", "m16n8k8.f32.tf32.tf32.f32")),
    (("a100", "fp16", "fp16"), ("MMA", "Ampere", "m16n8k16.f16.f16.f16.f16")),
    (("ada", "e4m3", "fp32"), ("MMA", "Ada Lovelace", "m16n8k32.f32.e4m3.e4m3.f32")),
    (("ada", "e5m2", "fp32"), ("MMA", "Ada Lovelace", "m16n8k32.f32.e5m2.e5m2.f32")),
    (("h100", "fp16", "fp32"), ("WGMMA", "Hopper", "m64n8k16.f32.f16.f16")),
    (("h100", "fp16", "fp16"), ("WGMMA", "Hopper", "m64n8k16.f16.f16.f16")),
    (("h100", "tf32", "fp32"), ("WGMMA", "Hopper", "m64n8k8.f32.tf32.tf32")),
    (("h100", "e5m2", "fp32"), ("WGMMA", "Hopper", "m64n8k32.f32.e5m2.e5m2")),
    (("b200", "bf16", "fp32"), ("TCGen05MMA", "Blackwell", "m64n8k16.kind::f16.f32.bf16.bf16")),
    (("b200", "fp16", "fp16"), ("TCGen05MMA", "Blackwell", "m64n8k16.kind::f16.f16.f16.f16")),
    (("b200", "e4m3", "fp32"),
     ("TCGen05MMA", "Blackwell", "m64n8k32.kind::f8f6f4.f32.e4m3.e4m3")),
    (("rtx-pro-6000", "e5m2", "fp32"),
     ("MMA", "RTX Blackwell", "m16n8k32.kind::f8f6f4.f32.e5m2.e5m2.f32")),
]


def _torch_dtype(torch, fmt):
    return {"fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16,
            "bf16": torch.bfloat16, "e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2,
            "e4m3fnuz": torch.float8_e4m3fnuz, "e5m2fnuz": torch.float8_e5m2fnuz}[fmt]


def _mmasim_codes(torch, op, unit, a, b, c):
    """MMA-Sim's results for fpsim's rows (the same values), as codes."""
    t = lambda x, f: torch.from_numpy(x.astype(np.float32)).to(_torch_dtype(torch, f))  # noqa
    fa, fo = unit.input_format.name, unit.output_format.name
    d = op.dpa(t(a, fa), t(b, fa), t(c, fo))
    return _codes(d.view(torch.int32 if d.dtype == torch.float32 else torch.int16).numpy())


def test_mmasim_writes_the_same_nan_as_every_nvidia_architecture():
    torch = pytest.importorskip("torch")
    nv = pytest.importorskip("mmasim.nv_ptx")
    for preset, (kind, arch, shape) in MMASIM:
        unit = mma.preset(*preset)
        op = getattr(nv, kind)(arch, shape)
        a, b, c, labels = special_rows(unit)
        theirs = [x & (0xFFFFFFFF if preset[2] == "fp32" else 0xFFFF)
                  for x in _mmasim_codes(torch, op, unit, a, b, c)]
        ours = _codes(unit(a, b, c))
        assert theirs == ours == [CANONICAL[preset[2]]] * len(labels), (preset, labels)


def test_mmasim_cdna3_writes_another_nan_than_fpsims_documented_one():
    # A deliberate, documented difference (docs/mma.rst, "NaN codes"): MMA-Sim's
    # CDNA3 models canonicalize NaN as its NVIDIA models do; fpsim keeps AMD's
    # quiet NaN, unverified on hardware.
    torch = pytest.importorskip("torch")
    amd = pytest.importorskip("mmasim.amd")
    unit = mma.preset("mi300x", "fp16")
    a, b, c, labels = special_rows(unit)
    op = amd.MFMA("CDNA3", "f32_32x32x8_f16")
    theirs = [x & 0xFFFFFFFF for x in _mmasim_codes(torch, op, unit, a, b, c)]
    assert theirs == [0x7FFFFFFF] * len(labels)
    assert _codes(unit(a, b, c)) == [QUIET["fp32"]] * len(labels)


# -- the sign of a zero (MMAParams.zero_sign) ---------------------------------------------------

def test_every_zero_an_nvidia_unit_writes_is_positive():
    """A negative product that the output rounds to zero: +0 on NVIDIA (as
    MMA-Sim 2.1.1's t_fdpa, `+ 0.0`), -0 under IEEE's rule (AMD's units,
    and an NVIDIA row given zero_sign="ieee").  Hand rows: -(2^-24 x 2^-24)
    = -2^-48 is below half of FP16's smallest subnormal 2^-24;
    -(2^-133 x 2^-20) = -2^-153, below half of FP32's 2^-149 and above
    Hopper's grid floor 2^(-133-25); E5M2's -(2^-16 x 2^-16) = -2^-32."""
    from fpsim.mma.model import MMAModel

    cases = [("h100", "fp16", "fp16", 2.0 ** -24, 2.0 ** -24),
             ("a100", "fp16", "fp16", 2.0 ** -24, 2.0 ** -24),
             ("v100", "fp16", "fp16", 2.0 ** -24, 2.0 ** -24),
             ("h100", "bf16", "fp32", 2.0 ** -133, 2.0 ** -20),
             ("ada", "e5m2", "fp16", 2.0 ** -16, 2.0 ** -16)]
    for gpu, fin, fout, x, y in cases:
        unit = mma.preset(gpu, fin, out=fout)
        k = unit.issue_k
        f = fpsim.format(fin)
        a, b = np.zeros((2, k)), np.zeros((2, k))
        a[:, -1], b[:, -1] = -x, y                    # the last block's product
        a[1, 0], b[1, 0] = 1.0, 1.0                   # row 1: 1 - 1 + the tiny one
        a[1, 1], b[1, 1] = -1.0, 1.0
        ac, bc = array.encode(a, f), array.encode(b, f)
        c = np.zeros(2, np.float32 if fout == "fp32" else np.float16)
        sign = fpsim.format(fout).sign_bit
        got = np.asarray(unit(ac, bc, c, fmt=fin)).view(f"u{c.itemsize}")
        assert got.tolist() == [0, 0], (gpu, fin, fout, got)
        ieee = MMAModel(unit.params.replace(zero_sign="ieee"))
        got = np.asarray(ieee(ac, bc, c, fmt=fin)).view(f"u{c.itemsize}")
        assert int(got[0]) == sign, (gpu, fin, fout, got)   # -0: the exact sum's sign
    for gpu, fin, fout in ALIGNED:
        p = mma.preset(gpu, fin, out=fout).params
        assert p.zero_sign == ("positive" if p.nan == "all_ones" else "ieee"), (gpu, fin)


def test_the_probe_reads_the_sign_of_a_zero():
    from fpsim.mma.model import MMAModel

    unit = mma.preset("h100", "fp16", out="fp16")
    assert mma.probe(unit, "fp16", "fp16").findings["zero_sign"].value == "positive"
    ieee = MMAModel(unit.params.replace(zero_sign="ieee"))
    r = mma.probe(ieee, "fp16", "fp16")
    assert r.findings["zero_sign"].value == "ieee" and r.params.zero_sign == "ieee"
    assert "h100" not in r.matches
