"""Infinities that arise inside the unit: a block of a chain that overflows
passes its infinity on as the next block's ``c``, where an infinity of the
other sign makes the unit's NaN; and, with ``products_limited`` (CDNA2,
CDNA3), a product beyond the output's range is the infinity of its sign,
meeting the block's other infinities as one (spec/mma.md, "Specials").

The expected codes are derived by hand, row by row (the comments give the
arithmetic); where mmasim is installed, MMA-Sim 2.1.1 is run on the same
rows (its NVIDIA NaN is fpsim's; on AMD it writes 0x7FFFFFFF where fpsim
writes the quiet NaN: docs/mma.rst, "NaN codes", so there only NaN-ness is
compared).  The tile path of the library GEMM engine must agree with the
row model on the rows it takes (finite operands)."""

from __future__ import annotations

import numpy as np
import pytest

import fpsim.mma as mma
from fpsim.mma import LibraryGEMM, Schedule, _tile
from fpsim.mma import gemm as engine

# bf16 codes
B_MAX2 = 0x7F00      # 2**127
B_TWO = 0x4000       # 2.0
B_ONEHALF_126 = 0x7EC0  # 1.5 * 2**126
B_ONE = 0x3F80       # 1.0
B_NEG_ONE = 0xBF80   # -1.0
B_INF, B_NEG_INF = 0x7F80, 0xFF80
F16_INF, F16_NEG_INF = 0x7C00, 0xFC00
F32_INF, F32_NEG_INF = 0x7F800000, 0xFF800000
NV_NAN32, NV_NAN16, AMD_NAN32 = 0x7FFFFFFF, 0x7FFF, 0x7FC00000


def _row(k, blocks, fill=0):
    """A row of ``k * blocks`` codes, every one ``fill``."""
    return [fill] * (k * blocks)


def _codes(d):
    return d.view(np.uint32 if d.dtype.itemsize == 4 else np.uint16).reshape(-1).tolist()


def _bf16_overflow_then_inf(k):
    """Block 0: 2**127 x 2 + 2**127 x 2 = 2**129 (the sum, or each product,
    beyond FP32's range): +inf; block 1: -inf x 1."""
    a, b = _row(k, 2), _row(k, 2)
    a[0] = a[1] = B_MAX2
    b[0] = b[1] = B_TWO
    a[k], b[k] = B_NEG_INF, B_ONE
    return a, b


def _bf16_inf_then_overflow(k):
    """Block 0: -inf x 1: -inf; block 1 overflows positive: -inf stays."""
    a, b = _row(k, 2), _row(k, 2)
    a[0], b[0] = B_NEG_INF, B_ONE
    a[k] = a[k + 1] = B_MAX2
    b[k] = b[k + 1] = B_TWO
    return a, b


# (preset, (a row, b row) of bf16 codes, c (fp32 value), expected code, why)
BF16_ROWS = [
    (("a100", "bf16", "fp32"), _bf16_overflow_then_inf(8), 0.0, NV_NAN32,
     "block 0 overflows to +inf, block 1 holds -inf"),
    (("a100", "bf16", "fp32"), _bf16_inf_then_overflow(8), 0.0, F32_NEG_INF,
     "block 0 is -inf, block 1's finite overflow adds to it"),
    (("h100", "bf16", "fp32"), _bf16_overflow_then_inf(16), 0.0, NV_NAN32,
     "block 0 overflows to +inf, block 1 holds -inf"),
    (("b200", "bf16", "fp32"), _bf16_overflow_then_inf(16), 0.0, NV_NAN32,
     "block 0 overflows to +inf, block 1 holds -inf"),
    (("mi100", "bf16", "fp32"), _bf16_overflow_then_inf(2), 0.0, AMD_NAN32,
     "CDNA1, k=2: block 0's exact sum 2**129 rounds to +inf, block 1 holds -inf"),
    (("mi210", "bf16", "fp32"), _bf16_overflow_then_inf(4), 0.0, AMD_NAN32,
     "CDNA2: block 0's products 2**128 are +inf, block 1 holds -inf"),
    (("mi300x", "bf16", "fp32"), _bf16_overflow_then_inf(8), 0.0, AMD_NAN32,
     "CDNA3: block 0's products 2**128 are +inf, block 1 holds -inf"),
    (("mi300x", "bf16", "fp32"), _bf16_inf_then_overflow(8), 0.0, AMD_NAN32,
     "CDNA3: block 0 is -inf, block 1's products 2**128 are +inf"),
]


def _in_block(k):
    """One block: 2**127 x 2 = 2**128 (beyond FP32's range) and -inf x 1."""
    a, b = _row(k, 1), _row(k, 1)
    a[0], b[0] = B_MAX2, B_TWO
    a[1], b[1] = B_NEG_INF, B_ONE
    return a, b


def _in_block_same_sign(k):
    a, b = _in_block(k)
    a[1] = B_INF
    return a, b


IN_BLOCK_ROWS = [
    (("mi210", "bf16", "fp32"), _in_block(4), 0.0, AMD_NAN32,
     "CDNA2: the product 2**128 is +inf (an FP32 product), meeting -inf"),
    (("mi300x", "bf16", "fp32"), _in_block(8), 0.0, AMD_NAN32,
     "CDNA3: the product 2**128 is +inf, meeting -inf"),
    (("mi300x", "bf16", "fp32"), _in_block_same_sign(8), 0.0, F32_INF,
     "CDNA3: the product 2**128 is +inf, meeting +inf"),
    (("mi300x", "bf16", "fp32"), _in_block(8), float("inf"), AMD_NAN32,
     "CDNA3: c = +inf meets -inf"),
    # CDNA1 does not limit its products: its exact sum 2**128 - inf is -inf
    (("mi100", "bf16", "fp32"), _in_block(2), 0.0, F32_NEG_INF,
     "CDNA1: products are exact; -inf decides"),
]

B_X = 0x7F40          # 1.5 * 2**127: finite, but two of them overflow FP32
B_TINY = 0x0001       # 2**-133, subnormal: CDNA2 reads it as +0


def _cdna2(a, b):
    """One block of 4 (mi210's k), bf16 codes, padded with zero products."""
    return a + [0] * (4 - len(a)), b + [0] * (4 - len(b))


# CDNA2 adds in IEEE FP32 (MMA-Sim's ftz_mul / ftz_add: each product of
# flushed operands rounded to FP32, (p0 + p1) + (p2 + p3), then c + that,
# each sum rounded to FP32): infinities and NaNs follow IEEE 754 inside the
# tree, with no screen before it.  X = 1.5 * 2**127; X + X = 3 * 2**127 is
# above FP32's largest 2**128 - 2**104, so it rounds to +inf.
CDNA2_ROWS = [
    (("mi210", "bf16", "fp32"), _cdna2([B_X, B_X, B_NEG_INF], [B_ONE] * 3), 0.0, AMD_NAN32,
     "CDNA2: (X + X) = +inf meets (-inf + 0) = -inf: NaN"),
    (("mi210", "bf16", "fp32"), _cdna2([B_X, B_X], [B_ONE] * 2), float("-inf"), AMD_NAN32,
     "CDNA2: c = -inf meets the tree's sum (X + X) = +inf: NaN"),
    (("mi210", "bf16", "fp32"), (_row(4, 2)[:4] + [B_X, B_X, 0, 0],
                                 [0] * 4 + [B_ONE, B_ONE, 0, 0]), float("-inf"), AMD_NAN32,
     "CDNA2: block 0 keeps c = -inf, block 1's (X + X) = +inf meets it: NaN"),
    (("mi210", "bf16", "fp32"), ([B_X, B_X, 0, 0, B_X | 0x8000, B_X | 0x8000, 0, 0],
                                 [B_ONE, B_ONE, 0, 0, B_ONE, B_ONE, 0, 0]), 0.0, AMD_NAN32,
     "CDNA2: block 0's +inf (X + X) meets block 1's (-X - X) = -inf: NaN"),
    (("mi210", "bf16", "fp32"), _cdna2([B_INF], [B_TINY]), 0.0, AMD_NAN32,
     "CDNA2: inf x 2**-133, the subnormal read as +0: inf x 0 = NaN"),
    (("mi210", "bf16", "fp32"), _cdna2([B_INF], [0]), 0.0, AMD_NAN32,
     "CDNA2: inf x 0 = NaN"),
    (("mi210", "bf16", "fp32"), _cdna2([0x7FC0], [B_ONE]), 0.0, AMD_NAN32,
     "CDNA2: a NaN operand: NaN"),
    (("mi210", "bf16", "fp32"), _cdna2([B_X, B_NEG_INF, B_X], [B_ONE] * 3), 0.0, F32_NEG_INF,
     "CDNA2: (X - inf) = -inf meets (X + 0) = X, finite: -inf"),
    (("mi210", "bf16", "fp32"), _cdna2([B_X | 0x8000, B_X | 0x8000, B_NEG_INF], [B_ONE] * 3),
     0.0, F32_NEG_INF, "CDNA2: (-X - X) = -inf meets -inf: -inf"),
    (("mi210", "bf16", "fp32"), _cdna2([B_INF], [B_ONE]), float("-0.0"), F32_INF,
     "CDNA2: inf x 1, c = -0: +inf"),
]

ROWS = BF16_ROWS + IN_BLOCK_ROWS + CDNA2_ROWS
IDS = [f"{p[0]}-{why.split(':')[0][:30]}-{i}" for i, (p, _, _, _, why) in enumerate(ROWS)]


def _run(preset, row, c):
    unit = mma.preset(*preset)
    a = np.array([row[0]], np.uint16)
    b = np.array([row[1]], np.uint16)
    return unit(a, b, np.float32([c]), fmt="bf16", chain=a.shape[1] > unit.issue_k)


@pytest.mark.parametrize("preset, row, c, expected, why", ROWS, ids=IDS)
def test_infinities_arising_in_the_unit_meet_the_others(preset, row, c, expected, why):
    assert hex(_codes(_run(preset, row, c))[0]) == hex(expected), why


def test_fp16_chain_overflowing_to_inf_meets_minus_inf():
    # a100 fp16 -> fp16, k = 8: block 0 is 8 x 300 x 300 = 720000 > 65504: +inf;
    # block 1 holds -inf x 300: the canonical NaN 0x7FFF (not -inf).
    unit = mma.preset("a100", "fp16", "fp16")
    a = np.float16([[300.0] * 8 + [-np.inf] + [0.0] * 7])
    b = np.abs(a)
    assert _codes(unit(a, b, np.float16(0), chain=True)) == [NV_NAN16]
    a[0, 8] = np.inf  # the same sign: +inf
    assert _codes(unit(a, b, np.float16(0), chain=True)) == [F16_INF]


def test_fp16_output_c_overflowing_then_minus_inf():
    # ada fp16 -> fp16: c = 65504 plus 8 x 16 x 16 = 2048 rounds to +inf in
    # block 0 (65504 + 2048 >= 65520); block 1 holds -inf: NaN.
    unit = mma.preset("ada", "fp16", "fp16")
    a = np.float16([[16.0] * 8 + [-np.inf] + [0.0] * 7])
    b = np.float16([[16.0] * 8 + [1.0] + [0.0] * 7])
    assert _codes(unit(a, b, np.float16(65504.0), chain=True)) == [NV_NAN16]


# -- the tile path of the library GEMM engine (finite operands) ----------------------


def _tile_and_rows(preset, a, b):
    """The GEMM (one chain, C = +0) on the tile path and on the row model."""
    calls = []
    real = _tile.chain_tile

    def counted(*args):
        calls.append(1)
        return real(*args)

    g = LibraryGEMM(mma.preset(*preset), Schedule(compute=None), preset[2])
    engine.TILE_PATH, _tile.chain_tile = True, counted
    try:
        fast = g(a, b, fmt=preset[1])
        assert calls
        engine.TILE_PATH = False
        rows = g(a, b, fmt=preset[1])
    finally:
        engine.TILE_PATH, _tile.chain_tile = True, real
    return _codes(fast), _codes(rows)


@pytest.mark.parametrize("preset, k", [(("mi300x", "bf16", "fp32"), 8),
                                       (("mi210", "bf16", "fp32"), 4),
                                       (("mi250", "bf16", "fp32"), 4)])
def test_tile_path_passes_an_overflow_on_as_the_row_model_does(preset, k):
    # Rows of A (one output each, B = one column): block 0 overflows, block 1
    # holds a limited product (2**127 x +-2 = +-2**128) or finite ones.
    #   0: block 0 sum 1.5 * 2**127 * 2 = 3 * 2**127 -> +inf (no limited
    #      product); block 1 -2**128 -> NaN
    #   1: block 0 +2**128 -> +inf; block 1 -2**128 -> NaN
    #   2: block 0 +2**128 -> +inf; block 1 +2**128 -> +inf
    #   3: block 0 +2**128 -> +inf; block 1 -1 -> +inf
    #   4: block 0 -2**128 -> -inf; block 1 +2**128 -> NaN
    K = 2 * k
    a = np.zeros((5, K), np.uint16)
    b = np.zeros((K, 1), np.uint16)
    b[0, 0] = b[1, 0] = b[k, 0] = B_TWO
    a[0, 0] = a[0, 1] = B_ONEHALF_126
    a[0, k] = B_MAX2 | 0x8000
    a[1, 0], a[1, k] = B_MAX2, B_MAX2 | 0x8000
    a[2, 0], a[2, k] = B_MAX2, B_MAX2
    a[3, 0], a[3, k] = B_MAX2, B_NEG_ONE
    a[4, 0], a[4, k] = B_MAX2 | 0x8000, B_MAX2
    fast, rows = _tile_and_rows(preset, a, b)
    assert fast == rows
    assert rows == [AMD_NAN32, AMD_NAN32, F32_INF, F32_INF, AMD_NAN32]


def test_chain_tile_takes_an_infinite_c():
    # c = -inf (or NaN) given to the chain: the outputs keep it (finite
    # products), or become NaN where a limited product of the other sign meets it.
    unit = mma.preset("mi300x", "bf16")
    A = np.array([[2.0**127, 1.0, 1.0]])  # (K = 1, Mt = 3)
    B = np.array([[2.0]])
    c = np.array([[-np.inf], [-np.inf], [np.nan]])
    EA, EB = _tile.exponents(A, -126), _tile.exponents(B, -126)
    got = _codes(_tile.chain_tile(unit, A, EA, B, EB, c).astype(np.uint32))
    assert got == [AMD_NAN32, F32_NEG_INF, AMD_NAN32]


@pytest.mark.parametrize("gpu", ["mi210", "mi250"])
def test_cdna2_chain_tile_adds_an_infinite_c_in_its_ieee_tree(gpu):
    # One block of k = 4 (K = 2, zero-padded), X = 1.5 * 2**127 (X + X = 3 *
    # 2**127 rounds to +inf in FP32), B = one column of ones:
    #   0: c = -inf, X + X = +inf: -inf + inf = NaN
    #   1: c = -inf, X - 1 = X: -inf
    #   2: c = NaN: NaN
    #   3: c = +inf, X + X = +inf: +inf
    unit = mma.preset(gpu, "bf16")
    X = 1.5 * 2.0**127
    A = np.array([[X, X, 1.0, X], [X, -1.0, 1.0, X]])  # (K = 2, Mt = 4)
    B = np.ones((2, 1))
    c = np.array([[-np.inf], [-np.inf], [np.nan], [np.inf]])
    EA, EB = _tile.exponents(A, -126), _tile.exponents(B, -126)
    got = _codes(_tile.chain_tile(unit, A, EA, B, EB, c).astype(np.uint32))
    want = [AMD_NAN32, F32_NEG_INF, AMD_NAN32, F32_INF]
    assert got == want
    a = np.array([[B_X, B_X], [B_X, B_NEG_ONE], [B_ONE, B_ONE], [B_X, B_X]], np.uint16)
    rows = unit(a, np.full((4, 2), B_ONE, np.uint16), c.astype(np.float32)[:, 0], fmt="bf16")
    assert _codes(rows) == want


# -- MMA-Sim, where installed ----------------------------------------------------------

MMASIM = {
    ("a100", "bf16", "fp32"): ("nv_ptx", "MMA", "Ampere", "m16n8k16.f32.bf16.bf16.f32"),
    ("h100", "bf16", "fp32"): ("nv_ptx", "WGMMA", "Hopper", "m64n8k16.f32.bf16.bf16"),
    ("b200", "bf16", "fp32"): ("nv_ptx", "TCGen05MMA", "Blackwell",
                               "m64n8k16.kind::f16.f32.bf16.bf16"),
    ("mi100", "bf16", "fp32"): ("amd", "MFMA", "CDNA1", "f32_32x32x4bf16"),
    ("mi210", "bf16", "fp32"): ("amd", "MFMA", "CDNA2", "f32_32x32x8bf16_1k"),
    ("mi300x", "bf16", "fp32"): ("amd", "MFMA", "CDNA3", "f32_32x32x8_bf16"),
}


@pytest.mark.parametrize("preset, row, c, expected, why", ROWS, ids=IDS)
def test_mmasim_computes_the_same_rows(preset, row, c, expected, why):
    torch = pytest.importorskip("torch")
    module, kind, arch, shape = MMASIM[preset]
    sim = pytest.importorskip(f"mmasim.{module}")
    op = getattr(sim, kind)(arch, shape)
    a = torch.from_numpy(np.array([row[0]], np.uint16).view(np.int16)).view(torch.bfloat16)
    b = torch.from_numpy(np.array([row[1]], np.uint16).view(np.int16)).view(torch.bfloat16)
    d = op.dpa(a, b, torch.tensor([c], dtype=torch.float32))
    theirs = int(d.view(torch.int32).numpy()[0]) & 0xFFFFFFFF
    ours = _codes(_run(preset, row, c))[0]
    assert ours == expected, (why, hex(ours))
    if preset[0].startswith("mi") and expected == AMD_NAN32:
        assert np.isnan(np.uint32(theirs).view(np.float32)), (why, hex(theirs))
    else:
        assert theirs == ours == expected, (why, hex(theirs), hex(ours))
