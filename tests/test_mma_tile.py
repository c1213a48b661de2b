"""The tile path of the library GEMM engine (fpsim.mma._tile) equals the row
model (fpsim.mma.MMAModel, chain=True), code for code, on every preset it
applies to: random codes over each input format's whole finite range
(subnormals, zeros of both signs, values whose products overflow the
output), K that is and is not a multiple of the block, C joining the
accumulator, split-K and promotion; and inputs that are not finite go to
the row model.  The row model itself is checked against recorded GPU
outputs in test_mma.py and test_mma_library.py."""

from __future__ import annotations

import itertools
import zlib

import numpy as np
import pytest

import fpsim.mma as mma
from fpsim import array
from fpsim.formats import format as lookup
from fpsim.mma import LibraryGEMM, Schedule, _tile
from fpsim.mma import gemm as engine

PRESETS = [(g, i, o) for g, i, o in mma.presets() if _tile.applies(mma.preset(g, i, o))]


def _finite_codes(fmt, shape, rng, zeros=0.1):
    """Random codes of ``fmt`` over its finite values, some zeros of both signs."""
    f = lookup(fmt)
    codes = rng.integers(0, 1 << f.width, shape, dtype=np.uint64)
    values = array.decode(codes, f)
    bad = ~np.isfinite(values)
    codes[bad] = codes[bad] & np.uint64(f.sign_bit)  # NaN/inf codes become signed zeros
    z = rng.random(shape) < zeros
    codes[z] = codes[z] & np.uint64(f.sign_bit)
    codes[~np.isfinite(array.decode(codes, f))] = 0  # FNUZ: the sign bit alone is its NaN
    return codes.astype(array.code_dtype(f))


def _both(g, a, b, c=None, fmt=None, expect_tiles=True):
    """The GEMM on the tile path and on the row model (checking that the
    first did run tiles, and the second none)."""
    calls = []
    real = _tile.chain_tile

    def counted(*args):
        calls.append(1)
        return real(*args)

    engine.TILE_PATH = True
    _tile.chain_tile = counted
    try:
        fast = g(a, b, c, fmt=fmt)
        assert bool(calls) == expect_tiles
        calls.clear()
        engine.TILE_PATH = False
        rows = g(a, b, c, fmt=fmt)
        assert not calls
    finally:
        engine.TILE_PATH = True
        _tile.chain_tile = real
    return fast, rows


def test_the_tile_path_covers_every_preset():
    # every aligned unit (the FMA-chain units, fpsim.mma.fmachain, run the CPU engine)
    assert set(PRESETS) == {k for k in mma.presets() if isinstance(mma.preset(*k), mma.MMAModel)}
    assert {g for g, _, _ in PRESETS} >= {"v100", "a100", "ada", "h100", "b200", "b200-fit",
                                          "mi100", "mi210", "mi250", "mi300a", "mi300x"}


@pytest.mark.parametrize("gpu, fin, fout", PRESETS, ids=[f"{g}-{i}-{o}" for g, i, o in PRESETS])
@pytest.mark.parametrize("K", [1, 17, 70])
def test_tile_path_equals_the_row_model_on_random_codes(gpu, fin, fout, K):
    rng = np.random.default_rng(zlib.crc32(f"{gpu} {fin} {fout} {K}".encode()))
    model = mma.preset(gpu, fin, fout)
    f = lookup(fin)
    wide = (_finite_codes(fin, (6, K), rng), _finite_codes(fin, (K, 5), rng))
    # a few binades: the grid's last bits decide
    narrow = tuple(array.encode(rng.standard_normal(s) * 2.0 ** rng.integers(-3, 4, s), f)
                   for s in ((6, K), (K, 5)))
    schedules = (Schedule(compute=None), Schedule(compute=None, c_joins="accumulator"),
                 Schedule(compute=None, split_k=2, split_grain=8) if K >= 16
                 else Schedule(compute=None, promote_every=model.k))
    for (a, b), schedule in itertools.product((wide, narrow), schedules):
        g = LibraryGEMM(model, schedule, fout)
        c = _finite_codes(fout, (6, 5), rng, zeros=0.3)
        fast, rows = _both(g, a, b, c, fmt=fin)
        assert fast.dtype == rows.dtype
        assert (fast == rows).all(), (schedule, np.argwhere(fast != rows)[:3])


@pytest.mark.parametrize("pair", [("e4m3", "e5m2"), ("e5m2", "e4m3")])
def test_tile_path_equals_the_row_model_on_mixed_fp8(pair):
    rng = np.random.default_rng(3)
    g = mma.cublas("h100", pair)
    a = _finite_codes(pair[0], (9, 300), rng)
    b = _finite_codes(pair[1], (300, 4), rng)
    fast, rows = _both(g, a, b, fmt=pair)
    assert (fast == rows).all()


def test_tiles_of_every_shape_give_the_same_bits(monkeypatch):
    rng = np.random.default_rng(4)
    a = _finite_codes("bf16", (37, 50), rng)
    b = _finite_codes("bf16", (50, 23), rng)
    g = mma.cublas("h100", "bf16")
    whole = g(a, b, fmt="bf16")
    monkeypatch.setattr(engine, "_TILE_OUTPUTS", 7)  # tiles of 2 x 3 outputs, ragged edges
    monkeypatch.setattr(engine, "_TILE_PRODUCTS", 0)
    assert (g(a, b, fmt="bf16") == whole).all()


def test_inputs_that_are_not_finite_take_the_row_model():
    model = mma.preset("h100", "fp16")
    a = np.ones((3, 40), np.float16)
    a[0, 5] = np.inf
    a[1, 7] = np.nan
    b = np.ones((40, 2), np.float16)
    b[9, 1] = 0.0
    a[2, 9] = np.inf  # inf x 0 in column 1: NaN there, inf in column 0
    fast, rows = _both(LibraryGEMM(model, Schedule(compute=None), "fp32"), a, b,
                       expect_tiles=False)
    assert np.array_equal(fast.view(np.uint32), rows.view(np.uint32))
    assert np.isinf(fast[0]).all() and np.isnan(fast[1]).all()
    assert np.isinf(fast[2, 0]) and np.isnan(fast[2, 1])


@pytest.mark.parametrize("out, mode, bits", [
    ("fp32", "rtz", None), ("fp32", "rtz", 13), ("fp32", "rtz", 10), ("fp32", "rne", None),
    ("fp32", "rup", None), ("fp32", "rdn", None), ("fp32", "rne", 13), ("fp16", "rne", None),
    ("bf16", "rne", None), ("fp16", "rtz", None)])
def test_the_fast_roundings_to_the_output_equal_the_kernel(out, mode, bits):
    from fpsim.mma import _finish

    f = lookup(out)
    rng = np.random.default_rng(zlib.crc32(f"{out} {mode} {bits}".encode()))
    e = rng.integers(f.emin - f.mantissa_bits - 10, f.emax + 10, 200_000)
    v = rng.uniform(1, 2, e.size) * np.exp2(e.astype(np.float64)) * rng.choice([-1, 1], e.size)
    tiny, top = 2.0**f.emin, 2.0 ** (f.emax + 1)
    edges = [tiny, -tiny, np.nextafter(tiny, 0), top, -top, np.nextafter(top, 0), float(f.max),
             0.0, -0.0, 2.0 ** (f.emin - f.mantissa_bits),
             3.0 * 2.0 ** (f.emin - f.mantissa_bits - 1)]
    v = np.concatenate([v, edges])
    # midpoints of the output's grid and their neighbours: ties decide
    m = f.mantissa_bits
    mid = ((rng.integers(1 << m, 1 << (m + 1), 1000) * 2 + 1)
           * np.exp2(rng.integers(f.emin - m - 2, f.emax - m, 1000).astype(np.float64)))
    v = np.concatenate([v, mid, np.nextafter(mid, 0), np.nextafter(mid, np.inf), -mid])
    for flush in (True, False):
        fast = _finish.round_to_output(v, f, mode, bits, flush)
        kernel = _finish._round_kernel(v, f, mode, bits, flush)
        assert np.array_equal(fast, kernel)


def test_fp16_outputs_without_the_machine_cast_take_the_kernel(monkeypatch):
    """Where numpy's float16 cast is not IEEE's (a hardware conversion under
    other settings), FP16 outputs are rounded by the kernel alone: the same
    codes."""
    from fpsim.array import _native

    rng = np.random.default_rng(12)
    a = _finite_codes("fp16", (20, 40), rng)
    b = _finite_codes("fp16", (40, 9), rng)
    g = LibraryGEMM(mma.preset("v100", "fp16", "fp16"), Schedule(compute=None), "fp16")
    want = g(a, b, fmt="fp16")
    monkeypatch.setattr(_native, "float16_casts_are_ieee", lambda: False)
    assert np.array_equal(g(a, b, fmt="fp16").view(np.uint16), want.view(np.uint16))


@pytest.mark.parametrize("fmt", ["bf16", "fp16"])
@pytest.mark.parametrize("subnormals", [True, False])
def test_the_pairwise_tree_by_float32_addition_equals_fpsim_array_add(monkeypatch, fmt,
                                                                       subnormals):
    from fpsim.mma import model as unit

    p = mma.preset("mi250", fmt).params.replace(output_subnormals=subnormals, k=8)
    rng = np.random.default_rng(int(subnormals))
    rows = 20_000
    # products of the whole input range: sums that overflow (inf - inf: NaN),
    # cancel exactly (signed zeros), fall subnormal; zeros of both signs
    f = lookup(fmt)
    a, b = (array.decode(_finite_codes(fmt, (8, rows), rng), f) for _ in range(2))
    products = a * b
    products[1, :500] = -products[0, :500]
    c = array.decode(_finite_codes("fp32", (rows,), rng, zeros=0.3), lookup("fp32"))
    native = unit.pairwise_tree(p, products, c)
    monkeypatch.setattr(unit, "PAIRWISE_NATIVE", False)
    assert np.array_equal(native, unit.pairwise_tree(p, products, c))


# -- CDNA1's exact sums --------------------------------------------------------------


def _round_to_odd_53(x: float, y: float) -> float:
    """x + y rounded to odd at 53 bits, by Python integers (the oracle)."""
    from fractions import Fraction

    s = Fraction(x) + Fraction(y)
    if s == 0:
        return 0.0
    neg, s = s < 0, abs(s)
    e = s.numerator.bit_length() - s.denominator.bit_length()
    while Fraction(2) ** e > s:
        e -= 1
    while Fraction(2) ** (e + 1) <= s:
        e += 1
    scaled = s / Fraction(2) ** (e - 52)  # in [2**52, 2**53)
    q = scaled.numerator // scaled.denominator
    if q * scaled.denominator != scaled.numerator:
        q |= 1
    v = float(Fraction(q) * Fraction(2) ** (e - 52))
    return -v if neg else v


def test_the_sum_rounded_to_odd_equals_integers():
    rng = np.random.default_rng(11)
    n = 20_000
    x = rng.standard_normal(n) * np.exp2(rng.integers(-60, 60, n).astype(float))
    gap = rng.integers(0, 120, n).astype(float)
    y = rng.standard_normal(n) * x * np.exp2(-gap)
    y[:2000] = -x[:2000] * (1 + rng.integers(-4, 5, 2000) * 2.0**-52)  # cancellations
    y[2000:2100] = -x[2000:2100]
    x[2100:2200] = 2.0 ** rng.integers(-30, 30, 100)  # powers of two, tails both ways
    y[2100:2200] = rng.choice([-1, 1], 100) * x[2100:2200] * 2.0**-70
    got = _tile._sum_to_odd(x, y, np.empty(n), (np.empty(n), np.empty(n)))
    want = np.array([_round_to_odd_53(a, b) for a, b in zip(x.tolist(), y.tolist())])
    assert np.array_equal(got, want)


@pytest.mark.parametrize("fin", ["fp16", "bf16"])
def test_exact_sums_at_ties_sticky_bits_and_wide_blocks_equal_the_row_model(fin):
    """c large and the products a half unit of c's last place plus or minus
    a far smaller product (a tie broken only by a sticky bit float64 cannot
    hold); rows and columns spanning the format's whole range (the row
    model's exact sum); every value finite."""
    f = lookup(fin)
    model = mma.preset("mi100", fin)
    k = model.k
    rng = np.random.default_rng(zlib.crc32(fin.encode()))
    m, n, K = 40, 30, 4 * k
    a = np.zeros((m, K))
    b = np.zeros((K, n))
    tiny = 2.0 ** (f.emin - f.mantissa_bits)
    # c + 1 + 2**-30: a tie of c's last place broken by a product 54 bits
    # below c's top (float64 cannot hold the sum: rounding to odd keeps it)
    small = 2.0**-15
    a[:, 0], b[0, :] = 1.0, 1.0
    a[:, 1] = rng.choice([small, -small, 2 * small, 0.0], m)
    b[1, :] = rng.choice([small, -small, 1.0], n)
    a[:, k:] = rng.standard_normal((m, K - k)) * np.exp2(rng.integers(-8, 9, (m, K - k)))
    b[k:, :] = rng.standard_normal((K - k, n)) * np.exp2(rng.integers(-8, 9, (K - k, n)))
    a[:5, 2 * k:3 * k] = rng.choice([float(f.max), -tiny, tiny * 3], (5, k))  # wide rows
    b[2 * k:3 * k, :4] = rng.choice([float(f.max) / 4, tiny, -1.0], (k, 4))
    # c = 2**6 and products 2**30 and ±2**-42 (FP16) or ±2**-260 (BF16) in the
    # first block: a tie of FP32 broken by a product no float64 sum holds
    low = 2.0 ** (f.emin - f.mantissa_bits + 3)
    for i in (5, 6):
        a[i, :k] = 0.0
        b[:k, i] = 0.0
        a[i, :2] = b[:2, i] = [2.0**15, low]
    a[6, 1] = -low
    a, b = array.encode(a, f), array.encode(b, f)
    # c: a large FP32 value with a unit in the last place of 2 (2**24 .. 2**25)
    c = array.encode((2.0**24 + 2 * rng.integers(0, 1 << 23, (m, n))) * rng.choice([-1, 1], (m, n)),
                     lookup("fp32"))
    c[5, 5] = c[6, 6] = array.encode(np.array([2.0**6]), lookup("fp32"))[0]
    for schedule in (Schedule(compute=None), Schedule(compute=None, c_joins="accumulator")):
        g = LibraryGEMM(model, schedule, "fp32")
        fast, rows = _both(g, a, b, c, fmt=fin)
        assert (fast.view(np.uint32) == rows.view(np.uint32)).all()


def test_the_pairwise_tree_without_flushes_where_products_are_at_least_2_to_the_minus_103():
    """normal_sums=True skips the flushes of products and partial sums: the
    same codes wherever every nonzero product is at least 2**-103, sums
    that cancel and results that fall subnormal (flushed) included."""
    from fpsim.mma import model as unit

    p = mma.preset("mi250", "bf16").params.replace(k=8)
    rng = np.random.default_rng(8)
    rows = 20_000
    products = (rng.standard_normal((8, rows)) * np.exp2(rng.integers(-103, 30, (8, rows)))
                ).astype(np.float32).astype(np.float64)
    products[np.abs(products) < 2.0**-103] = 2.0**-103
    products[:, :3000] = 2.0 ** rng.integers(-103, -90, (8, 3000)) * rng.choice([-1, 1], (8, 3000))
    products[1, :500] = -products[0, :500]
    products[rng.random((8, rows)) < 0.1] = 0.0
    c = array.decode(_finite_codes("fp32", (rows,), rng, zeros=0.3), lookup("fp32"))
    c[:3000] = -(products[:, :3000].sum(axis=0)) + rng.integers(-3, 4, 3000) * 2.0**-140
    want = unit.pairwise_tree(p, products, c)
    assert (array.decode(want, lookup("fp32"))[:3000] == 0).any()  # flushed results seen
    assert np.array_equal(unit.pairwise_tree(p, products, c, normal_sums=True), want)


@pytest.mark.parametrize("gpu", ["mi210", "mi250"])
def test_pairwise_tiles_with_subnormal_products_and_sums_equal_the_row_model(gpu):
    """BF16 products below FP32's smallest normal (flushed by the unit) and
    sums that cancel into the subnormal range, beside tiles whose products
    all exceed 2**-103 (no flush but the result's)."""
    rng = np.random.default_rng(zlib.crc32(gpu.encode()))
    f = lookup("bf16")
    model = mma.preset(gpu, "bf16")
    m, n, K = 12, 10, 24
    a = rng.standard_normal((m, K)) * np.exp2(rng.integers(-70, -55, (m, K)))
    b = rng.standard_normal((K, n)) * np.exp2(rng.integers(-70, -55, (K, n)))
    a[:, 1::2] = -a[:, 0::2]  # products that cancel pairwise, where b agrees
    b[1::2, :3] = b[0::2, :3] * (1 + 2.0**-7)
    big = (rng.standard_normal((m, K)), rng.standard_normal((K, n)))
    for x, y in ((a, b), big):
        g = LibraryGEMM(model, Schedule(compute=None), "fp32")
        fast, rows = _both(g, array.encode(x, f), array.encode(y, f), fmt="bf16")
        assert (fast.view(np.uint32) == rows.view(np.uint32)).all()


@pytest.mark.parametrize("gpu", ["mi210", "mi250"])
def test_pairwise_tiles_whose_partial_sums_overflow_into_an_infinite_c_equal_the_row_model(gpu):
    """CDNA2's IEEE tree meets a C of +-inf or NaN with partial sums that
    overflow (finite BF16 operands: the tile path runs).  X = 1.5 * 2**127,
    X + X rounds to +inf in FP32; K = 8 is two blocks of 4; B = ones."""
    X = 1.5 * 2.0**127
    a = np.zeros((6, 8))
    a[0, :2] = X            # c = -inf meets block 0's +inf: NaN
    a[1, 4:6] = X           # block 0 keeps c = -inf, block 1's +inf meets it: NaN
    a[2, :2] = X            # c = +inf, +inf: +inf
    a[3, :2] = X            # block 0 +inf, block 1 (-X - X) = -inf: NaN (c = 0)
    a[3, 4:6] = -X
    a[4, :4] = [X, -1.0, 1.0, 1.0]  # c = -inf, finite sums: -inf
    a[5, 0] = 1.0           # c = NaN: NaN
    c = np.float32([-np.inf, -np.inf, np.inf, 0.0, -np.inf, np.nan])[:, None]
    f = lookup("bf16")
    g = LibraryGEMM(mma.preset(gpu, "bf16"), Schedule(compute=None), "fp32")
    fast, rows = _both(g, array.encode(a, f), array.encode(np.ones((8, 1)), f), c, fmt="bf16")
    assert (fast.view(np.uint32) == rows.view(np.uint32)).all()
    nan, inf, ninf = 0x7FC00000, 0x7F800000, 0xFF800000
    assert rows.view(np.uint32)[:, 0].tolist() == [nan, nan, inf, nan, ninf, nan]


@pytest.mark.parametrize("mode", ["rtz", "rdn", "rup", "rne"])
def test_the_two_operand_alignment_equals_python_integers(mode):
    """fpsim.mma._align.add_two (both operands rounded to the larger's grid,
    which leaves the larger one) against the rule in Python integers and
    fractions: the smaller operand cut to the larger's grid by ``mode``."""
    import math
    from fractions import Fraction

    from fpsim.mma import _align

    rng = np.random.default_rng(zlib.crc32(mode.encode()))
    n = 4000
    e1 = rng.integers(-300, 300, n)
    e2 = e1 + rng.integers(-80, 80, n)
    e1[rng.random(n) < 0.05] = _align.ABSENT
    e2[rng.random(n) < 0.05] = _align.ABSENT
    s1 = rng.integers(-(1 << 44), 1 << 44, n) >> rng.integers(0, 44, n)
    s2 = rng.integers(-(1 << 33), 1 << 33, n) >> rng.integers(0, 33, n)
    s1[e1 == _align.ABSENT] = 0
    s2[e2 == _align.ABSENT] = 0
    frac = np.full(n, 24, np.int64)
    g1, g2 = 7, 2
    x1 = np.ldexp(s1.astype(float), e1 - frac)
    x2 = np.ldexp(s2.astype(float), e2 - frac)
    big, total, fr = _align.add_two(e1, x1, e2, x2, frac, mode, g1, g2)
    cut = {"rtz": math.trunc, "rdn": math.floor, "rup": math.ceil, "rne": round}[mode]
    for i in range(n):
        a, b = int(e1[i]), int(e2[i])
        va = Fraction(int(s1[i])) * Fraction(2) ** (a - 24)
        vb = Fraction(int(s2[i])) * Fraction(2) ** (b - 24)
        if a == _align.ABSENT:
            want_e, want, want_f = b, vb, 24
        else:
            first_small = a < b
            want_e = max(a, b)
            want_f = 24 + (g1 if first_small else g2 if a > b else 0)
            small, large = (va, vb) if first_small else (vb, va)
            unit = Fraction(2) ** (want_e - want_f)
            want = large + cut(small / unit) * unit
        assert (int(big[i]), Fraction(float(total[i])), int(fr[i])) == (want_e, want, want_f), i


def test_exact_sums_when_the_unit_does_not_round_to_nearest(monkeypatch):
    """TwoSum needs the machine's nearest rounding: without it every output of
    an exact unit is the row model's sum (the same codes)."""
    rng = np.random.default_rng(13)
    a = _finite_codes("fp16", (7, 33), rng)
    b = _finite_codes("fp16", (33, 5), rng)
    c = _finite_codes("fp32", (7, 5), rng)
    g = LibraryGEMM(mma.preset("mi100", "fp16"), Schedule(compute=None), "fp32")
    want = g(a, b, c, fmt="fp16")
    monkeypatch.setattr(_tile, "rounds_to_nearest", lambda: False)
    fast, rows = _both(g, a, b, c, fmt="fp16")
    assert np.array_equal(fast.view(np.uint32), want.view(np.uint32))
    assert np.array_equal(rows.view(np.uint32), want.view(np.uint32))
