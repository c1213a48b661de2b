"""The block-scaled GEMM's tile path (fpsim.mma._blocktile, behind
BlockScaledModel.gemm) against the instruction itself chained output by
output (the row model, which tests/test_mma_blockscaled.py and
tests/test_mmasim.py check against an independent oracle and MMA-Sim):
every element-format pair of mxf8f6f4 and every scale choice of the FP4
kinds, on random and adversarial operands, scales and c, with chains of
several instructions, overflow passed along the chain, NaN and infinite
inputs (the outputs the row model computes) and tile boundaries; and
directly against the oracle chained along K."""

from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import pytest
from blockscaled_oracle import ELEMENTS, gst_fdpa, st_fdpa
from blockscaled_oracle import codes as _codes
from blockscaled_oracle import fp32_codes as _fp32_codes

from fpsim import mma
from fpsim.mma import _blocktile

KINDS_FP4 = [("mxfp4", None, None), ("mxf4nvf4", "e8m0", 32), ("mxf4nvf4", "e8m0", 16),
             ("nvfp4", None, None)]


def _row_model(unit, a, b, sa, sb, c):
    """The GEMM as the instruction chained along K, one output per row."""
    M, K = a.shape
    N = b.shape[1]
    return unit(np.broadcast_to(a[:, None, :], (M, N, K)), np.broadcast_to(b.T[None], (M, N, K)),
                c, scale_a=np.broadcast_to(sa[:, None, :], (M, N, sa.shape[1])),
                scale_b=np.broadcast_to(sb.T[None], (M, N, sb.shape[0])), chain=True)


def _scales(rng, unit, shape, adversarial):
    if unit.params.scale == "ue4m3":
        pool = [0, 1, 7, 8, 0x30, 0x38, 0x40, 0x70, 0x7E, 0x80, 0xB8, 0xFE]
        if not adversarial:
            return rng.integers(0x20, 0x50, shape).astype(np.uint8)
    else:
        pool = [0, 1, 60, 100, 127, 150, 200, 227, 253, 254]
        if not adversarial:
            return rng.integers(100, 150, shape).astype(np.uint8)
    return rng.choice(pool, shape).astype(np.uint8)


def _finite(codes, name):
    """Element codes with NaNs and infinities made finite (E4M3: S.1111.111;
    E5M2: S.11111.xx), for blocks the tile path computes."""
    c = codes.copy()
    if name == "e4m3":
        c[(c & 0x7F) == 0x7F] -= 1
    elif name == "e5m2":
        top = (c & 0x7C) == 0x7C
        c[top] = (c[top] & 0x80) | 0x7B
    return c


def _case(unit, fa, fb, rng, M, N, K, adversarial):
    p = unit.params
    a = _finite(_codes(rng, fa, (M, K), adversarial), fa)
    b = _finite(_codes(rng, fb, (K, N), adversarial), fb)
    sa = _scales(rng, unit, (M, K // p.block), adversarial)
    sb = _scales(rng, unit, (K // p.block, N), adversarial)
    c = _fp32_codes(rng, M * N, adversarial).reshape(M, N)
    if not adversarial:  # ordinary values, with finite c of every binade
        c = (rng.standard_normal((M, N)) * np.exp2(rng.integers(-40, 40, (M, N)))).astype(
            np.float32).view(np.uint32)
    c[(c & 0x7F800000) == 0x7F800000] = 0x7F7FFFFF   # finite: the largest
    return a, b, sa, sb, c


def _same(unit, a, b, sa, sb, c, tiles_only=False):
    if tiles_only:  # every output on the tile path: the row model is not called
        unit._chain = None
    try:
        got = unit.gemm(a, b, sa, sb, c).view(np.uint32)
    finally:
        unit.__dict__.pop("_chain", None)
    want = _row_model(unit, a, b, sa, sb, c).view(np.uint32)
    bad = np.argwhere(got != want)
    assert not bad.size, (bad[:5].tolist(), got[tuple(bad[0])], want[tuple(bad[0])])
    return got


@pytest.mark.parametrize("fa, fb", list(itertools.product(ELEMENTS, ELEMENTS)))
@pytest.mark.parametrize("adversarial", [False, True], ids=["random", "adversarial"])
def test_mxf8f6f4_tiles_equal_the_instruction_chained(fa, fb, adversarial):
    unit = mma.block_scaled("b200", "mxfp8", a=fa, b=fb)
    rng = np.random.default_rng([ELEMENTS.index(fa), ELEMENTS.index(fb), adversarial])
    _same(unit, *_case(unit, fa, fb, rng, 24, 20, 128, adversarial), tiles_only=True)


@pytest.mark.parametrize("recipe, scale, block", KINDS_FP4)
@pytest.mark.parametrize("adversarial", [False, True], ids=["random", "adversarial"])
def test_fp4_tiles_equal_the_instruction_chained(recipe, scale, block, adversarial):
    unit = mma.block_scaled("b200", recipe, scale=scale, block=block)
    rng = np.random.default_rng([len(recipe), unit.params.block, adversarial])
    for K in (32, 64, 192):  # a short instruction, one, several
        a, b, sa, sb, c = _case(unit, "e2m1", "e2m1", rng, 20, 18, K, adversarial)
        if adversarial:
            b[:16, ::3] = a[:18:3, :16].T ^ 0x8  # groups that cancel to 0
            a[1::3, 16:32] = 0                    # all-zero groups
        _same(unit, a, b, sa, sb, c, tiles_only=_no_nan_scale(sa, sb, unit))


def _no_nan_scale(sa, sb, unit):
    """Whether no scale is a NaN (UE4M3 S.1111.111, E8M0 0xFF)."""
    nan = 0x7F if unit.params.scale == "ue4m3" else 0xFF
    mask = 0x7F if unit.params.scale == "ue4m3" else 0xFF
    return not ((sa & mask) == nan).any() and not ((sb & mask) == nan).any()


@pytest.mark.parametrize("recipe", ["mxfp8", "mxfp4", "nvfp4"])
def test_specials_go_to_the_instruction_and_overflow_passes_along_the_chain(recipe):
    unit = mma.preset("b200", recipe)
    p = unit.params
    fmt = p.a
    rng = np.random.default_rng(len(recipe))
    a, b, sa, sb, c = _case(unit, fmt, fmt, rng, 16, 12, 4 * p.k, False)
    nan_scale = 0x7F if p.scale == "ue4m3" else 0xFF
    big = 0xFE if p.scale == "ue4m3" else 254
    # rows 7 and 8 overflow in their first instruction, with either sign
    a[7:9, :p.k] = 0x77 if fmt == "e4m3" else 0x7
    a[8, :p.k] |= 0x80 if fmt == "e4m3" else 0x8
    sa[7:9, :p.k // p.block] = big
    sb[:p.k // p.block] = big
    sa[2, 1] = nan_scale                       # a NaN scale in row 2
    sb[0, 5] = nan_scale                       # and in column 5
    if fmt == "e4m3":
        a[3, 7] = 0x7F                         # a NaN element
    c = c.view(np.float32).copy()
    c[4, 4], c[5, 6], c[6, 7] = np.nan, np.inf, -np.inf
    got = _same(unit, a, b, sa, sb, c).view(np.float32)
    assert np.isnan(got[2]).all() and np.isnan(got[:, 5]).all()
    if p.scale == "e8m0":  # (UE4M3 scales reach 448: no FP4 sum overflows FP32)
        assert np.isinf(got[7:9]).any() and not np.isnan(got[7:9, 6:]).any()
    # codes, ml_dtypes values and a c broadcast from a row give the same bits
    _same(unit, a, b, sa, sb, np.float32(1.5))


def test_tile_boundaries_and_empty_shapes(monkeypatch):
    unit = mma.preset("b200", "mxfp8")
    rng = np.random.default_rng(5)
    args = _case(unit, "e4m3", "e4m3", rng, 37, 29, 96, True)
    whole = unit.gemm(*args).view(np.uint32)
    monkeypatch.setattr(_blocktile, "_LIMIT", 32 * 7)        # tiles of 1 row
    monkeypatch.setattr(_blocktile, "_COLUMNS", 8)           # and 8 columns
    assert np.array_equal(unit.gemm(*args).view(np.uint32), whole)
    _same(unit, *args)
    e = np.zeros((0, 32), np.uint8)
    assert unit.gemm(e, np.zeros((32, 3), np.uint8), np.zeros((0, 1), np.uint8),
                     np.full((1, 3), 127, np.uint8)).shape == (0, 3)
    z = unit.gemm(np.zeros((2, 0), np.uint8), np.zeros((0, 3), np.uint8),
                  np.zeros((2, 0), np.uint8), np.zeros((0, 3), np.uint8),
                  np.float32([[-0.0, 2.5, 1e-45]] * 2))
    assert z.view(np.uint32).tolist() == [[0, 0x40200000, 1]] * 2   # -0 + nothing is +0


@pytest.mark.parametrize("recipe", ["mxfp8", "nvfp4"])
def test_gemm_equals_the_oracle_chained_along_k(recipe):
    unit = mma.preset("rtx-pro-6000", recipe)
    p = unit.params
    rng = np.random.default_rng(9)
    a, b, sa, sb, c = _case(unit, p.a, p.b, rng, 5, 4, 128, True)
    got = unit.gemm(a, b, sa, sb, c).view(np.uint32)
    per = p.k // p.block
    for i in range(5):
        for j in range(4):
            code = int(c[i, j])
            for lo in range(0, 128, p.k):
                x, y = a[i, lo:lo + p.k].tolist(), b[lo:lo + p.k, j].tolist()
                s = slice(lo // p.block, lo // p.block + per)
                if p.group == 1:
                    code = st_fdpa(x, y, p.a, p.b, code, int(sa[i, s][0]), int(sb[s, j][0]))
                else:
                    code = gst_fdpa(x, y, code, sa[i, s].tolist(), sb[s, j].tolist(), p.scale,
                                    p.block)
            assert int(got[i, j]) == code, (i, j)


def test_gemm_refuses_bad_shapes():
    unit = mma.preset("b200", "mxfp8")
    a = np.zeros((2, 64), np.uint8)
    s = np.full((2, 2), 127, np.uint8)
    with pytest.raises(ValueError, match=r"scale_b has shape \(2, 3\); accepted \(2, 2\)"):
        unit.gemm(a, a.T, s, np.full((2, 3), 127, np.uint8))
    with pytest.raises(ValueError, match=r"scale_a has shape \(2, 3\); accepted \(2, 2\)"):
        unit.gemm(a, a.T, np.full((2, 3), 127, np.uint8), s)
    with pytest.raises(ValueError, match="K=48 is not a multiple of the scale block"):
        unit.gemm(a[:, :48], a[:, :48].T, s, s)
    with pytest.raises(ValueError, match=r"gemm\(\) takes a \(M, K\) and b \(K, N\)"):
        unit.gemm(a, a, s, s)
    with pytest.raises(ValueError, match=r"c must have the outputs' shape \(2, 2\)"):
        unit.gemm(a, a.T, s, s.T, np.zeros((3, 3), np.float32))
    with pytest.raises(TypeError, match="c: dtype float64 is not fp32; accepted: arrays of "
                                        "dtype float32, unsigned integer codes of fp32"):
        unit.gemm(a, a.T, s, s.T, np.zeros((2, 2)))
    with pytest.raises(TypeError, match="a is float64; accepted: unsigned integer codes of "
                                        "e4m3 or float8_e4m3fn values"):
        unit.gemm(a.astype(float), a.T, s, s.T)
    with pytest.raises(TypeError, match="scale_a is float32; accepted: uint8 codes or "
                                        "float8_e8m0fnu values"):
        unit.gemm(a, a.T, s.astype(np.float32), s.T)


def _windowed(rng, name, shape, along):
    """Element codes whose nonzero exponents stay in a window per block of
    32 along ``along``, the window's place and width (0 to 12 binades) drawn
    per block: spreads on both sides of what the exact lane takes."""
    e_bits = {"e4m3": 4, "e5m2": 5, "e3m2": 3, "e2m3": 2, "e2m1": 2}[name]
    m_bits = {"e4m3": 3, "e5m2": 2, "e3m2": 2, "e2m3": 3, "e2m1": 1}[name]
    top = (1 << e_bits) - (2 if name == "e5m2" else 1)      # (E4M3's top field: no NaN below)
    rows, K = (shape[0], shape[1]) if along == 1 else (shape[1], shape[0])
    blocks = K // 32
    width = rng.integers(0, 13, (rows, blocks, 1))
    start = rng.integers(0, top + 1, (rows, blocks, 1))
    field = np.minimum(start + rng.integers(0, 13, (rows, blocks, 32)) % (width + 1), top)
    mant = rng.integers(0, 1 << m_bits, (rows, blocks, 32))
    if name == "e4m3":
        mant = np.where(field == top, np.minimum(mant, 6), mant)
    sign = rng.integers(0, 2, (rows, blocks, 32))
    codes = (sign << (e_bits + m_bits)) | (field << m_bits) | mant
    codes[rng.random(codes.shape) < 0.1] = 0
    codes = codes.reshape(rows, K).astype(np.uint8)
    return codes if along == 1 else codes.T.copy()


@pytest.mark.parametrize("fa, fb", [("e4m3", "e4m3"), ("e5m2", "e4m3"), ("e2m1", "e3m2"),
                                    ("e5m2", "e5m2"), ("e2m3", "e2m1")])
def test_the_exact_lane_and_the_cut_lane_agree_at_their_boundary(fa, fb, monkeypatch):
    """The exact lane (a float64 matrix product, no term cut) takes the
    outputs whose exponents prove nothing is cut; the others are cut term
    by term.  With windows of exponents around the bound and c of every
    size, both lanes run, and each, alone, gives the row model's bits."""
    unit = mma.block_scaled("b200", "mxfp8", a=fa, b=fb)
    rng = np.random.default_rng([ELEMENTS.index(fa), ELEMENTS.index(fb)])
    M, N, K = 40, 36, 128
    a = _windowed(rng, fa, (M, K), 1)
    b = _windowed(rng, fb, (K, N), 0)
    sa = rng.integers(124, 131, (M, K // 32)).astype(np.uint8)
    sb = rng.integers(124, 131, (K // 32, N)).astype(np.uint8)
    c = (rng.choice([-1, 1], (M, N)) * rng.random((M, N))
         * np.exp2(rng.integers(-30, 20, (M, N)))).astype(np.float32)
    c[rng.random((M, N)) < 0.1] = 0.0
    cut = []
    real = _blocktile._cut_sum

    def counted(p, S, P, *rest):
        cut.append(P[0].size)
        return real(p, S, P, *rest)

    got = _same(unit, a, b, sa, sb, c, tiles_only=True)
    monkeypatch.setattr(_blocktile, "_cut_sum", counted)
    monkeypatch.setattr(_blocktile, "_WHOLE", 1.0)   # the cut outputs gathered, counted
    assert np.array_equal(unit.gemm(a, b, sa, sb, c).view(np.uint32), got)
    share = sum(cut) / (M * N * K // 32)
    assert 0.05 < share < 0.95, share      # both lanes ran
    monkeypatch.setattr(_blocktile, "rounds_to_nearest", lambda: False)
    cut.clear()
    assert np.array_equal(unit.gemm(a, b, sa, sb, c).view(np.uint32), got)
    assert sum(cut) == M * N * K // 32     # the cut lane alone


def test_a_term_one_bit_below_the_grid_is_cut():
    """At the bound itself: E4M3 products 2**8 (powers of two: the largest
    exponent E exactly) and a negative one whose lowest bit (odd
    significands) lies ``d`` bits below 2**(E - 25).  For d = 1 the
    term loses that bit, which FP32's rounding toward zero shows for about
    half the significands; for d <= 0 nothing is cut.  Every output is the
    row model's."""
    unit = mma.preset("b200", "mxfp8")
    rng = np.random.default_rng(3)
    rows = 256
    spread_a = rng.integers(7, 12, rows)              # + 10 (b) + 6 bits vs F = 25
    a = np.zeros((rows, 32), np.uint8)
    a[:, 0] = (4 + 7) << 3                            # 2**4
    a[:, 1] = ((4 - spread_a + 7) << 3) | rng.choice([1, 3, 5, 7], rows)
    b = np.zeros((32, 2), np.uint8)
    b[0] = (4 + 7) << 3                               # 2**4
    b[1] = 0x80 | (1 << 3) | np.array([7, 5])         # -1.875 and -1.625 × 2**-6
    s1, s2 = np.full((rows, 1), 127, np.uint8), np.full((1, 2), 127, np.uint8)
    got = _same(unit, a, b, s1, s2, None, tiles_only=True)
    exact = 256.0 + (a[:, 1:2].view(ml_dtypes.float8_e4m3fn).astype(np.float64)
                     * b[1:2].view(ml_dtypes.float8_e4m3fn).astype(np.float64))
    # where the cut bit shows: the exact sum rounded toward zero differs
    rz = exact.astype(np.float32)
    away = np.abs(rz.astype(np.float64)) > np.abs(exact)
    rz[away] = np.nextafter(rz[away], np.float32(0))
    shows = rz != got.view(np.float32)
    assert shows[spread_a == 10].any() and not shows[spread_a < 10].any()
