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


def test_the_tile_path_covers_every_preset_but_exact_accumulation():
    left = {(g, i, o) for g, i, o in mma.presets()} - set(PRESETS)
    assert left and all(mma.preset(*key).params.accumulation == "exact" for key in left)
    assert {g for g, _, _ in PRESETS} >= {"v100", "a100", "ada", "h100", "b200", "b200-fit",
                                          "mi210", "mi250", "mi300a", "mi300x"}


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
