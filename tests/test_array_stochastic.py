"""Stochastic rounding in the array engine (:mod:`fpsim.array`).

With ``random_bits=`` the array engine must equal the scalar model given the
same random integer per element (``fmt.round(x, rounding="sr",
random_bits=r)``), code for code and flag for flag, for every ``sr_bits``.
With ``rng=`` it draws one integer per element, in order, so a seed or a
numpy Generator gives reproducible results, the same as passing those draws
as ``random_bits=``, and the same however the array is chunked.
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

import fpsim
from fpsim import BF16, E4M3, E5M2, FP16, FP32, FP64, Flag, array

E3M2 = fpsim.Format("e3m2", 3, 2, 3, specials="none")
E8M0 = fpsim.Format("e8m0", 8, 0, 127, specials="fn", subnormals=False, signed=False)

SR_BITS = [1, 5, 32, 64]
DESTINATIONS = [FP16, BF16, E4M3, E5M2, E8M0, E3M2]
UINT = {16: np.uint16, 32: np.uint32, 64: np.uint64}


def ids(f):
    return f.name


def values64(n=300, seed=0):
    """float64 inputs: ties and near-ties of the small formats, subnormals
    of FP16 and of float64, values past max, zeros, infinities and NaNs."""
    rng = np.random.default_rng(seed)
    exps = rng.integers(-140, 140, n)
    parts = [np.ldexp(rng.random(n) + 1.0, exps),
             np.ldexp(rng.integers(1, 1 << 12, n).astype(np.float64), rng.integers(-30, 5, n)),
             rng.standard_normal(n) * 300,
             np.array([1.0, 1.5, 1 + 2.0**-11, 1 + 3 * 2.0**-12, 2.0**-24, 2.0**-25,
                       3 * 2.0**-26, 65504.0, 65520.0, 70000.0, 448.0, 464.0, 480.0, 1e30,
                       5e-324, 2.0**-1030, 0.0, np.inf, np.nan, 2.0**-127, 2.0**127,
                       1.5 * 2.0**127, 2.0**-128, 3 * 2.0**-129])]
    v = np.concatenate(parts)
    signs = np.where(rng.random(v.size) < 0.5, -1.0, 1.0)
    return np.concatenate([v, -v, v * signs])


def random_bits(size, sr_bits, seed):
    return np.random.default_rng(seed).integers(0, 1 << sr_bits, size, dtype=np.uint64)


def scalar_sr(src, codes, dst, settings, rand):
    """Scalar reference: one Context per setting, flags cleared before each
    element, the element's random integer passed as ``random_bits=``."""
    ctx = fpsim.Context(rounding="sr", **settings)
    out, flags = [], []
    for c, r in zip(np.asarray(codes).reshape(-1).tolist(), np.asarray(rand).reshape(-1).tolist()):
        ctx.clear_flags()
        out.append(fpsim.convert(src.from_bits(c), dst, ctx, random_bits=r).bits)
        flags.append(ctx.flags.value)
    return np.array(out, dtype=array.code_dtype(dst)), np.array(flags, dtype=np.uint8)


def without_nans(values, dst):
    return values if dst.has_nan else values[~np.isnan(values)]


def assert_same(got, want, what=""):
    (gc, gf), (wc, wf) = got, want
    bad = np.flatnonzero((gc.reshape(-1) != wc) | (gf.reshape(-1) != wf))
    assert bad.size == 0, (
        f"{what}: {bad.size} elements differ; first: index {bad[0]}, scalar "
        f"0x{int(wc[bad[0]]):x} {Flag(int(wf[bad[0]]))!r}, array 0x{int(gc.reshape(-1)[bad[0]]):x} "
        f"{Flag(int(gf.reshape(-1)[bad[0]]))!r}")


# -- random_bits= equals the scalar model --------------------------------------------------

SETTINGS = [{}, {"ftz": True}, {"daz": True, "tininess": "before"}, {"saturate": True}]


@pytest.mark.parametrize("sr_bits", SR_BITS)
@pytest.mark.parametrize("dst", DESTINATIONS, ids=ids)
def test_random_bits_from_float64_equal_scalar(dst, sr_bits):
    values = without_nans(values64(), dst)
    bits = values.view(np.uint64)
    rand = random_bits(values.size, sr_bits, seed=sr_bits)
    for settings in SETTINGS:
        ctx = fpsim.Context(rounding="sr", sr_bits=sr_bits, **settings)
        want = scalar_sr(FP64, bits, dst, {"sr_bits": sr_bits, **settings}, rand)
        got = array.encode(values, dst, ctx, random_bits=rand, return_flags=True)
        assert_same(got, want, f"{dst.name} sr_bits={sr_bits} {settings}")
        assert ctx.flags == Flag(int(np.bitwise_or.reduce(want[1])))
        # same bits in, same result out
        again = array.encode(values, dst, ctx, random_bits=rand.copy(), return_flags=True)
        assert_same(again, want, "second call")


@pytest.mark.parametrize("sr_bits", SR_BITS)
@pytest.mark.parametrize("dst", [FP16, BF16, E4M3, E5M2], ids=ids)
def test_random_bits_from_float32_equal_scalar(dst, sr_bits):
    with np.errstate(over="ignore"):
        values = values64(200, seed=3).astype(np.float32)
    rand = random_bits(values.size, sr_bits, seed=100 + sr_bits)
    for settings in SETTINGS:
        want = scalar_sr(FP32, values.view(np.uint32), dst, {"sr_bits": sr_bits, **settings},
                         rand)
        got = array.encode(values, dst, fpsim.Context(), rounding="sr", sr_bits=sr_bits,
                           random_bits=rand, return_flags=True, **settings)
        assert_same(got, want, f"{dst.name} sr_bits={sr_bits} {settings}")


@pytest.mark.parametrize("sr_bits", SR_BITS)
@pytest.mark.parametrize("src,dst", [(FP16, E4M3), (BF16, E5M2), (FP16, E8M0), (BF16, FP16)],
                         ids=ids)
def test_random_bits_from_codes_equal_scalar(src, dst, sr_bits):
    """Every 5th code of a 16-bit source (NaNs included) and every code in one
    array (more codes than the lookup-table threshold: stochastic rounding
    never uses the table)."""
    for step in (5, 1):
        codes = np.arange(0, 1 << 16, step, dtype=np.uint16)
        if step == 1:
            codes = codes[::-1].copy()
        rand = random_bits(codes.size, sr_bits, seed=step * sr_bits)
        settings = {"sr_bits": sr_bits} if step == 1 else {"sr_bits": sr_bits, "ftz": True}
        want = scalar_sr(src, codes, dst, settings, rand)
        got = array.convert(codes, src, dst, fpsim.Context(rounding="sr", **settings),
                            random_bits=rand, return_flags=True)
        assert_same(got, want, f"{src.name} -> {dst.name} sr_bits={sr_bits} step={step}")


@pytest.mark.parametrize("sr_bits", SR_BITS)
def test_random_bits_from_ml_dtypes_array_equal_scalar(sr_bits):
    codes = np.arange(1 << 16, dtype=np.uint16)[::7].copy()
    values = codes.view(ml_dtypes.bfloat16)
    rand = random_bits(codes.size, sr_bits, seed=7)
    want = scalar_sr(BF16, codes, E4M3, {"sr_bits": sr_bits}, rand)
    got = array.encode(values, E4M3, rounding="sr", sr_bits=sr_bits, random_bits=rand,
                       return_flags=True, ctx=fpsim.Context())
    assert_same(got, want, f"bf16 array sr_bits={sr_bits}")


@pytest.mark.parametrize("sr_bits", SR_BITS)
def test_extreme_random_bits_broadcast(sr_bits):
    """A scalar random_bits broadcasts to every element: 0 never rounds away
    from zero, 2**sr_bits - 1 rounds away whenever the discarded fraction
    reaches 2**-sr_bits."""
    values = values64(100, seed=sr_bits)
    bits = values.view(np.uint64)
    for r in (0, (1 << sr_bits) - 1, 1 << (sr_bits - 1)):
        rand = np.full(values.size, r, dtype=np.uint64)
        want = scalar_sr(FP64, bits, FP16, {"sr_bits": sr_bits}, rand)
        got = array.encode(values, FP16, fpsim.Context(rounding="sr", sr_bits=sr_bits),
                           random_bits=np.uint64(r), return_flags=True)
        assert_same(got, want, f"random_bits={r}")
        got = array.encode(values, FP16, fpsim.Context(rounding="sr", sr_bits=sr_bits),
                           random_bits=r, return_flags=True)
        assert_same(got, want, f"random_bits={r} (a Python int)")


def test_random_bits_broadcast_over_a_2d_array():
    values = values64(20, seed=1)[:60].reshape(6, 10)
    row = random_bits(10, 8, seed=2)
    ctx = fpsim.Context(rounding="sr", sr_bits=8)
    got, flags = array.encode(values, E5M2, ctx, random_bits=row, return_flags=True)
    assert got.shape == flags.shape == (6, 10)
    full = np.broadcast_to(row, (6, 10))
    want = scalar_sr(FP64, values.view(np.uint64), E5M2, {"sr_bits": 8}, full)
    assert_same((got, flags), want, "broadcast row")
    # a 2-D random_bits array of the input's shape, element for element
    grid = random_bits(60, 8, seed=3).reshape(6, 10)
    got = array.encode(values, E5M2, ctx, random_bits=grid, return_flags=True)
    assert_same(got, scalar_sr(FP64, values.view(np.uint64), E5M2, {"sr_bits": 8}, grid),
                "2-D random_bits")


def test_random_bits_of_any_integer_dtype():
    values = values64(50, seed=4)
    rand = random_bits(values.size, 5, seed=4)
    want = array.encode(values, BF16, rounding="sr", sr_bits=5, random_bits=rand)
    for dt in (np.uint8, np.int8, np.int16, np.uint32, np.int64):
        got = array.encode(values, BF16, rounding="sr", sr_bits=5, random_bits=rand.astype(dt))
        np.testing.assert_array_equal(got, want)


# -- rng= -----------------------------------------------------------------------------------

@pytest.mark.parametrize("sr_bits", SR_BITS)
def test_rng_seed_is_reproducible(sr_bits):
    values = values64(200, seed=5)
    kw = {"rounding": "sr", "sr_bits": sr_bits, "return_flags": True}
    a = array.encode(values, E4M3, fpsim.Context(), rng=1234, **kw)
    b = array.encode(values, E4M3, fpsim.Context(), rng=1234, **kw)
    c = array.encode(values, E4M3, fpsim.Context(), rng=np.random.default_rng(1234), **kw)
    for other in (b, c):
        np.testing.assert_array_equal(a[0], other[0])
        np.testing.assert_array_equal(a[1], other[1])


@pytest.mark.parametrize("sr_bits", SR_BITS)
def test_rng_draws_one_integer_per_element_in_order(sr_bits):
    """rng= gives the same result as random_bits= holding the generator's
    draws in element order, hence the scalar model's result with those bits."""
    values = values64(200, seed=6).reshape(-1, 3)[:200]
    draws = np.random.default_rng(99).integers(0, 1 << sr_bits, values.size, dtype=np.uint64)
    got = array.encode(values, FP16, fpsim.Context(), rounding="sr", sr_bits=sr_bits,
                       rng=np.random.default_rng(99), return_flags=True)
    want = scalar_sr(FP64, values.view(np.uint64), FP16, {"sr_bits": sr_bits}, draws)
    assert_same(got, want, f"rng, sr_bits={sr_bits}")


@pytest.mark.parametrize("sr_bits", SR_BITS)
def test_rng_generator_matches_a_scalar_context_with_the_same_generator(sr_bits):
    """A scalar loop whose context draws from a Generator (one draw per
    rounding) sees the same stream as the array engine given an equal one."""
    values = values64(100, seed=8)
    ctx = fpsim.Context(rounding="sr", sr_bits=sr_bits, rng=np.random.default_rng(2024))
    want_codes, want_flags = [], []
    for c in values.view(np.uint64).tolist():
        ctx.clear_flags()
        want_codes.append(fpsim.convert(FP64.from_bits(c), BF16, ctx).bits)
        want_flags.append(ctx.flags.value)
    got = array.encode(values, BF16, fpsim.Context(rounding="sr", sr_bits=sr_bits),
                       rng=np.random.default_rng(2024), return_flags=True)
    assert_same(got, (np.array(want_codes, np.uint16), np.array(want_flags, np.uint8)),
                f"Generator stream, sr_bits={sr_bits}")


def test_a_generator_advances_between_calls():
    """Passing the same Generator twice continues its stream (a seed restarts it)."""
    values = np.full(2000, 1 + 2.0**-12)  # FP16 1 + ulp/2: up or down at random
    gen = np.random.default_rng(3)
    first = array.encode(values, FP16, rounding="sr", rng=gen)
    second = array.encode(values, FP16, rounding="sr", rng=gen)
    assert set(np.unique(first).tolist()) == {0x3C00, 0x3C01}
    assert not np.array_equal(first, second)
    np.testing.assert_array_equal(first, array.encode(values, FP16, rounding="sr", rng=3))


# -- chunking ------------------------------------------------------------------------------

@pytest.mark.parametrize("chunk_size", [1, 7, 1000, array.DEFAULT_CHUNK])
@pytest.mark.parametrize("sr_bits", [5, 64])
def test_chunking_does_not_change_results(sr_bits, chunk_size):
    values = values64(150, seed=10)
    rand = random_bits(values.size, sr_bits, seed=11)
    kw = {"rounding": "sr", "sr_bits": sr_bits, "return_flags": True}
    ref = array.encode(values, E5M2, fpsim.Context(), random_bits=rand, **kw)
    ref_rng = array.encode(values, E5M2, fpsim.Context(), rng=17, **kw)
    ctx = fpsim.Context()
    got = array.encode(values, E5M2, ctx, random_bits=rand, chunk_size=chunk_size, **kw)
    assert_same(got, (ref[0], ref[1]), f"random_bits, chunk_size={chunk_size}")
    assert ctx.flags == Flag(int(np.bitwise_or.reduce(ref[1])))
    got = array.encode(values, E5M2, fpsim.Context(), rng=17, chunk_size=chunk_size, **kw)
    assert_same(got, (ref_rng[0], ref_rng[1]), f"rng, chunk_size={chunk_size}")


@pytest.mark.parametrize("chunk_size", [1, 7, 4096])
def test_chunking_of_deterministic_modes(chunk_size):
    """Chunks of the non-stochastic kernel, and of a 16-bit source large
    enough for the lookup table, give what one chunk gives."""
    values = values64(150, seed=12).reshape(-1, 2)
    codes = np.arange(1 << 16, dtype=np.uint16).reshape(256, 256)
    if chunk_size == 1:
        codes = codes[::16]  # 4096 one-element chunks: few enough to be quick
    for mode in ("rne", "rup", "rto"):
        ref = array.encode(values, E4M3, rounding=mode, ftz=True, return_flags=True)
        got = array.encode(values, E4M3, rounding=mode, ftz=True, return_flags=True,
                           chunk_size=chunk_size)
        assert_same(got, (ref[0].reshape(-1), ref[1].reshape(-1)), f"{mode} floats")
        ref = array.convert(codes, FP16, E5M2, rounding=mode, return_flags=True)
        got = array.convert(codes, FP16, E5M2, rounding=mode, return_flags=True,
                            chunk_size=chunk_size)
        assert_same(got, (ref[0].reshape(-1), ref[1].reshape(-1)), f"{mode} codes")


# -- the rule itself, through the array engine ----------------------------------------------

def test_every_random_integer_for_a_4_bit_rule():
    """Over all 16 values of r with sr_bits=4, a value k/16 of the way from
    one FP16 code to the next rounds away from zero for exactly k of them
    (the rule of fpsim.rounding, rule 3)."""
    ulp = 2.0**-10
    for k in range(16):
        x = 1 + k / 16 * ulp
        got = array.encode(np.full(16, x), FP16, rounding="sr", sr_bits=4,
                           random_bits=np.arange(16))
        assert int((got == 0x3C01).sum()) == k
        assert math.isclose(float(array.decode(got, FP16).mean()), x, rel_tol=0, abs_tol=1e-12)


def test_arrays_longer_than_the_default_chunk():
    """More than two default chunks: the random stream continues across chunk
    boundaries (the same as one chunk holding everything)."""
    n = 2 * array.DEFAULT_CHUNK + 5
    rng = np.random.default_rng(21)
    values = np.ldexp(rng.random(n) + 1.0, rng.integers(-30, 20, n))
    rand = random_bits(n, 32, seed=22)
    for kw in ({"random_bits": rand}, {"rng": 23}):
        ref = array.encode(values, E4M3, rounding="sr", chunk_size=n, return_flags=True, **kw)
        got = array.encode(values, E4M3, rounding="sr", return_flags=True, **kw)
        assert_same(got, ref, f"default chunks, {list(kw)}")
    # the scalar model on the elements around the first chunk boundary
    edge = slice(array.DEFAULT_CHUNK - 50, array.DEFAULT_CHUNK + 50)
    want = scalar_sr(FP64, values[edge].view(np.uint64), E4M3, {}, rand[edge])
    got = array.encode(values, E4M3, rounding="sr", random_bits=rand, return_flags=True)
    assert_same((got[0][edge], got[1][edge]), want, "around the chunk boundary")
