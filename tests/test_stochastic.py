"""Stochastic rounding (``rounding="sr"``).

The rule under test (fpsim.rounding, rule 3): with ``R = sr_bits`` and a
random integer ``r`` in ``[0, 2**R)``, let ``frac`` be the discarded fraction
of the last place and ``t = floor(frac * 2**R)``; the result rounds away
from zero iff ``t + r >= 2**R``.  So over all ``2**R`` values of ``r``
exactly ``t`` round away from zero.  Expected codes are derived by hand in
the comments.
"""

from __future__ import annotations

import math
import random
from fractions import Fraction

import numpy as np
import pytest

import fpsim
from fpsim import BF16, E4M3, FP16, Flag

E3M2 = fpsim.Format("e3m2", 3, 2, 3, specials="none")
INEXACT, UNDERFLOW, OVERFLOW = Flag.INEXACT, Flag.UNDERFLOW, Flag.OVERFLOW
ULP1 = Fraction(1, 1024)  # FP16 ulp in [1, 2): 2**-10
SUB = Fraction(1, 2**24)  # FP16 min_subnormal: 2**(-14 - 10)


def sr(fmt, x, r, bits=4, **kw):
    ctx = fpsim.Context()
    y = fmt.round(x, ctx=ctx, rounding="sr", sr_bits=bits, random_bits=r, **kw)
    return y.bits, ctx.flags


# -- the exact rule, exhaustively for R = 4 ----------------------------------

# (format, lo, hi, code of lo, code of hi, sign): x = sign * (lo + k/16 * (hi - lo))
CASES = [
    # FP16 [1, 2): 1 = 0x3C00, 1 + 2**-10 = 0x3C01
    (FP16, Fraction(1), 1 + ULP1, 0x3C00, 0x3C01, 1),
    # FP16 negative, same interval: sign bit 0x8000
    (FP16, Fraction(1), 1 + ULP1, 0xBC00, 0xBC01, -1),
    # FP16 subnormals 5 * 2**-24 = 0x0005 and 6 * 2**-24 = 0x0006
    (FP16, 5 * SUB, 6 * SUB, 0x0005, 0x0006, 1),
    # FP16 between zero and min_subnormal: +0 and 0x0001
    (FP16, Fraction(0), SUB, 0x0000, 0x0001, 1),
    # -0 and -min_subnormal
    (FP16, Fraction(0), SUB, 0x8000, 0x8001, -1),
    # FP16 binade crossing: 2 - 2**-10 = 0x3FFF, 2 = 0x4000
    (FP16, 2 - ULP1, Fraction(2), 0x3FFF, 0x4000, 1),
    # FP16 largest subnormal 1023 * 2**-24 = 0x03FF to min_normal 2**-14 = 0x0400
    (FP16, 1023 * SUB, 1024 * SUB, 0x03FF, 0x0400, 1),
    # BF16 [1, 2) has ulp 2**-7: 1 = 0x3F80, 1 + 2**-7 = 0x3F81
    (BF16, Fraction(1), 1 + Fraction(1, 128), 0x3F80, 0x3F81, 1),
    # E4M3 [2**-4, 2**-3) has ulp 2**-7: 12 * 2**-7 = 1.100b * 2**-4 -> E = -4 + 7 = 3,
    # f = 100b: 0x1C; 13 * 2**-7 = 1.101b * 2**-4: 0x1D
    (E4M3, Fraction(12, 128), Fraction(13, 128), 0x1C, 0x1D, 1),
]


@pytest.mark.parametrize("fmt,lo,hi,lo_code,hi_code,sign", CASES,
                         ids=[f"{c[0].name}-{c[3]:#x}-{c[4]:#x}" for c in CASES])
def test_exactly_k_of_16_random_values_round_away_when_frac_is_k_over_16(
        fmt, lo, hi, lo_code, hi_code, sign):
    for k in range(16):
        x = sign * (lo + Fraction(k, 16) * (hi - lo))
        if x == 0 and sign < 0:
            x = -0.0  # a Fraction has no negative zero
        results = [sr(fmt, x, r) for r in range(16)]
        for r, (bits, flags) in enumerate(results):
            # the rule itself: away from zero iff floor(frac * 16) + r >= 16
            assert bits == (hi_code if k + r >= 16 else lo_code), (k, r)
            assert (INEXACT in flags) == (k != 0)
        assert sum(bits == hi_code for bits, _ in results) == k


@pytest.mark.parametrize("fmt,lo,hi,lo_code,hi_code,sign", CASES[:3],
                         ids=[f"{c[0].name}-{c[3]:#x}" for c in CASES[:3]])
def test_a_fraction_finer_than_sr_bits_is_truncated_to_sr_bits(fmt, lo, hi, lo_code,
                                                               hi_code, sign):
    # frac = (k + 1/2)/16 or (k + 1/1000)/16 still gives t = k: k of 16 round away
    for k in range(16):
        for extra in (Fraction(1, 2), Fraction(1, 1000), Fraction(999, 1000)):
            x = sign * (lo + (k + extra) / 16 * (hi - lo))
            ups = [r for r in range(16) if sr(fmt, x, r)[0] == hi_code]
            assert ups == list(range(16 - k, 16)), (k, extra, ups)


def test_exact_values_ignore_the_random_bits():
    for x, code in ((1, 0x3C00), (Fraction(3, 2), 0x3E00), (-SUB, 0x8001), (65504, 0x7BFF)):
        for r in range(16):
            assert sr(FP16, x, r) == (code, Flag(0))


def test_one_random_bit():
    # R = 1: frac = 1/2 gives t = 1: up iff r = 1; frac = 0.49 gives t = 0: never up
    assert [sr(FP16, 1 + ULP1 / 2, r, bits=1)[0] for r in (0, 1)] == [0x3C00, 0x3C01]
    assert [sr(FP16, 1 + ULP1 * Fraction(49, 100), r, bits=1)[0] for r in (0, 1)] == \
        [0x3C00, 0x3C00]


def test_sixty_four_random_bits():
    top = 2**64 - 1
    # frac = 2**-64: t = 1, so only r = 2**64 - 1 rounds up
    x = 1 + ULP1 * Fraction(1, 2**64)
    assert sr(FP16, x, top, bits=64)[0] == 0x3C01
    assert sr(FP16, x, top - 1, bits=64)[0] == 0x3C00
    # frac = 2**-70: t = 0, never up
    assert sr(FP16, 1 + ULP1 * Fraction(1, 2**70), top, bits=64)[0] == 0x3C00
    # r = 0 never rounds up (t < 2**64)
    assert sr(FP16, 1 + ULP1 * Fraction(2**64 - 1, 2**64), 0, bits=64)[0] == 0x3C00


# -- determinism --------------------------------------------------------------

INPUTS = [Fraction(1) + ULP1 * Fraction(k, 7) for k in range(1, 7)] + \
    [Fraction(-27, 10) * SUB, Fraction(314159, 100000), "0.1", 1 / 3, -2 / 3]


def _sequence(ctx, n=300):
    return [FP16.round(INPUTS[i % len(INPUTS)], ctx=ctx).bits for i in range(n)]


def test_the_same_seed_gives_the_same_results():
    a = _sequence(fpsim.Context(rounding="sr", rng=1234))
    b = _sequence(fpsim.Context(rounding="sr", rng=1234))
    c = _sequence(fpsim.Context(rounding="sr", rng=random.Random(1234)))
    assert a == b == c
    assert a != _sequence(fpsim.Context(rounding="sr", rng=1235))


def test_the_same_random_bits_give_the_same_result():
    for x in INPUTS:
        for r in (0, 1, 2**31, 2**32 - 1, 123456789):
            results = {
                FP16.round(x, rounding="sr", random_bits=r).bits,
                FP16.round(x, ctx=fpsim.Context(rounding="sr", rng=5), random_bits=r).bits,
                FP16.round(x, ctx=fpsim.Context(rounding="sr", rng=6), random_bits=r).bits,
            }
            assert len(results) == 1


def test_context_rng_results_equal_explicit_draws_from_a_twin_context():
    ctx, twin = fpsim.Context(rounding="sr", rng=99), fpsim.Context(rounding="sr", rng=99)
    via_ctx = _sequence(ctx, 100)
    explicit = [FP16.round(INPUTS[i % len(INPUTS)], rounding="sr",
                           random_bits=twin.random_bits()).bits for i in range(100)]
    assert via_ctx == explicit


def test_a_random_number_is_consumed_even_by_an_exact_rounding():
    # rule 3: the stream position never depends on the data
    y = Fraction(1) + ULP1 * Fraction(1, 2)
    a, b = fpsim.Context(rounding="sr", rng=7), fpsim.Context(rounding="sr", rng=7)
    FP16.round(1, ctx=a)                    # exact
    FP16.round(Fraction(1, 3), ctx=b)       # inexact
    assert [FP16.round(y, ctx=a).bits for _ in range(200)] == \
        [FP16.round(y, ctx=b).bits for _ in range(200)]


def test_a_numpy_generator_works_as_rng():
    a = _sequence(fpsim.Context(rounding="sr", rng=np.random.default_rng(2024)))
    b = _sequence(fpsim.Context(rounding="sr", rng=np.random.default_rng(2024)))
    assert a == b
    # every result is one of the two neighbours of 1 + k/7 ulp
    assert set(a[:6]) <= {0x3C00, 0x3C01}
    assert {0x3C00, 0x3C01} <= set(a[:6] + a[11:17] + a[22:28])
    # the full 64-bit range of draws works too
    ctx = fpsim.Context(rounding="sr", sr_bits=64, rng=np.random.default_rng(1))
    assert {FP16.round(1 + ULP1 / 2, ctx=ctx).bits for _ in range(200)} == {0x3C00, 0x3C01}


def test_context_sr_bits_limits_the_probability_resolution():
    # sr_bits = 1 in the context: frac = 1/4 has t = floor(1/4 * 2) = 0: never up
    ctx = fpsim.Context(rounding="sr", sr_bits=1, rng=3)
    assert {FP16.round(1 + ULP1 / 4, ctx=ctx).bits for _ in range(200)} == {0x3C00}
    # frac = 3/4: t = 1, up with probability 1/2
    assert {FP16.round(1 + ULP1 * 3 / 4, ctx=ctx).bits for _ in range(200)} == {0x3C00, 0x3C01}


# -- unbiased in expectation --------------------------------------------------

N = 20000

MEAN_CASES = [
    # FP16 1 + 0.3 ulp: neighbours 1 and 1 + 2**-10
    ("fp16-1+0.3ulp", FP16, 1 + ULP1 * Fraction(3, 10), Fraction(1), 1 + ULP1, 0),
    # FP16 subnormal 2.7 * 2**-24: neighbours 2 and 3 * 2**-24
    ("fp16-subnormal", FP16, Fraction(27, 10) * SUB, 2 * SUB, 3 * SUB, 1),
    # BF16 -3.14159: [2, 4) has ulp 2**-6; 3.14159 * 64 = 201.06..., so the
    # magnitude lies between 201/64 and 202/64
    ("bf16-negative", BF16, -Fraction(314159, 100000), Fraction(201, 64), Fraction(202, 64), 2),
    # E4M3 0.1: [2**-4, 2**-3) has ulp 2**-7; 0.1 * 128 = 12.8
    ("e4m3-0.1", E4M3, Fraction(1, 10), Fraction(12, 128), Fraction(13, 128), 3),
]


@pytest.mark.parametrize("use_numpy", [False, True], ids=["random.Random", "numpy"])
@pytest.mark.parametrize("name,fmt,x,lo,hi,seed", MEAN_CASES, ids=[c[0] for c in MEAN_CASES])
def test_stochastic_rounding_is_unbiased(name, fmt, x, lo, hi, seed, use_numpy):
    rng = np.random.default_rng(seed) if use_numpy else seed
    ctx = fpsim.Context(rounding="sr", rng=rng)
    sign = -1 if x < 0 else 1
    counts = {}
    for _ in range(N):
        v = fmt.round(x, ctx=ctx).value
        counts[v] = counts.get(v, 0) + 1
    assert set(counts) <= {sign * lo, sign * hi}
    mean = sum(v * c for v, c in counts.items()) / N
    # Each result is sign * (lo + B * u) with u = hi - lo and B ~ Bernoulli(p),
    # p = floor(frac * 2**32) / 2**32, which is within 2**-32 of
    # frac = (|x| - lo) / u.  So E[result] is within u * 2**-32 of x and the
    # standard error of the mean of N draws is u * sqrt(p (1 - p) / N).
    # Tolerance: 5 standard errors plus that truncation bias (a correct
    # implementation fails with probability ~6e-7; the seeds are fixed anyway).
    u = hi - lo
    p = float((abs(x) - lo) / u)
    tolerance = 5 * float(u) * math.sqrt(p * (1 - p) / N) + float(u) * 2**-32
    assert abs(float(mean - x)) <= tolerance, (name, float(mean), float(x), tolerance)


# -- bad random_bits ----------------------------------------------------------

def test_random_bits_out_of_range_is_a_value_error():
    with pytest.raises(ValueError, match="random_bits=4294967296 out of range"):
        FP16.round(Fraction(1, 3), rounding="sr", random_bits=2**32)
    with pytest.raises(ValueError, match="out of range"):
        FP16.round(Fraction(1, 3), rounding="sr", random_bits=-1)
    with pytest.raises(ValueError, match=r"2\*\*sr_bits = 16"):
        FP16.round(Fraction(1, 3), rounding="sr", sr_bits=4, random_bits=16)
    # the largest accepted value
    FP16.round(Fraction(1, 3), rounding="sr", sr_bits=4, random_bits=15)


def test_random_bits_with_a_deterministic_mode_is_a_value_error():
    for mode in ("rne", "rna", "rtz", "rup", "rdn", "rto"):
        with pytest.raises(ValueError, match="only used by stochastic rounding"):
            FP16.round(Fraction(1, 3), rounding=mode, random_bits=0)
    # also when the override switches an sr context to another mode
    with pytest.raises(ValueError, match="only used by stochastic rounding"):
        FP16.round(1, ctx=fpsim.Context(rounding="sr"), rounding="rne", random_bits=0)


def test_random_bits_must_be_an_int():
    for bad in (1.0, "3", True, [1]):
        with pytest.raises(TypeError, match="random_bits must be an int"):
            FP16.round(Fraction(1, 3), rounding="sr", random_bits=bad)


# -- overflow and tininess under sr ------------------------------------------

def test_sr_overflow_to_infinity_in_fp16():
    # 65504 + 16 is halfway between max 65504 (0x7BFF) and 65536 (beyond max,
    # ulp 32 in [2**15, 2**16)); frac = 1/2, t = 8: r >= 8 rounds up and overflows
    x = 65504 + 16
    for r in range(16):
        if r >= 8:
            assert sr(FP16, x, r) == (0x7C00, OVERFLOW | INEXACT)
            assert sr(FP16, x, r, saturate=True) == (0x7BFF, OVERFLOW | INEXACT)
            assert sr(FP16, -x, r) == (0xFC00, OVERFLOW | INEXACT)
        else:
            assert sr(FP16, x, r) == (0x7BFF, INEXACT)
    # 65536 and above: every choice is beyond max
    for r in range(16):
        assert sr(FP16, 65536, r) == (0x7C00, OVERFLOW | INEXACT)
        assert sr(FP16, 70000, r) == (0x7C00, OVERFLOW | INEXACT)


def test_sr_overflow_in_formats_without_infinity():
    # E4M3: 460 = 448 + 12/32 of the ulp 32; t = floor(0.375 * 16) = 6
    ups = [r for r in range(16) if sr(E4M3, 460, r)[0] != 0x7E]
    assert ups == list(range(10, 16))
    for r in range(16):
        if r >= 10:   # would round to 480, which is the NaN code: overflow
            assert sr(E4M3, 460, r) == (0x7F, OVERFLOW | INEXACT)
            assert sr(E4M3, -460, r) == (0xFF, OVERFLOW | INEXACT)
            assert sr(E4M3, 460, r, saturate=True) == (0x7E, OVERFLOW | INEXACT)
        else:
            assert sr(E4M3, 460, r) == (0x7E, INEXACT)
    # a format with neither inf nor NaN delivers max (28 = 0x1F): 30 is
    # halfway between 28 and 32, so r >= 8 rounds up and overflows
    for r in range(16):
        expected = (0x1F, OVERFLOW | INEXACT) if r >= 8 else (0x1F, INEXACT)
        assert sr(E3M2, 30, r) == expected


def test_sr_tininess_after_uses_the_delivered_result():
    # x = 1023.75 * 2**-24, just below min_normal 2**-14: frac at the
    # subnormal quantum is 3/4, t = 12, so r >= 4 delivers min_normal 0x0400
    x = Fraction(4095, 4) * SUB
    for r in range(16):
        if r >= 4:
            assert sr(FP16, x, r) == (0x0400, INEXACT)  # not tiny after rounding
            assert sr(FP16, x, r, tininess="before") == (0x0400, UNDERFLOW | INEXACT)
            assert sr(FP16, x, r, ftz=True) == (0x0400, INEXACT)
        else:
            assert sr(FP16, x, r) == (0x03FF, UNDERFLOW | INEXACT)
            assert sr(FP16, x, r, ftz=True) == (0x0000, UNDERFLOW | INEXACT)
            assert sr(FP16, -x, r, ftz=True) == (0x8000, UNDERFLOW | INEXACT)
