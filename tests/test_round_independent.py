"""Ties-away (rna), round-to-odd (rto) and flush-to-zero against a reference
rounding written from the definitions with Fractions.

The reference (``ref_round`` in tests/oracle.py) finds the two representable neighbours of
``x`` at the quantum ``2**(max(floor(log2|x|), emin) - mantissa_bits)`` and
picks one by the mode:

* rna: the nearer, ties to the larger magnitude;
* rto: ``x`` if exact, else the neighbour whose integer significand at that
  quantum is odd;
* rne / rtz / rup / rdn: the IEEE 754 definitions;
* sr: fpsim's documented rule (round away iff ``floor(frac × 2**R) + r >= 2**R``).

Overflow (the rounded magnitude exceeds max): OVERFLOW | INEXACT, and the
result is ±inf for rne, rna, sr and the directed mode away from zero, ±max
otherwise (rto overflows like rtz: fpsim's documented choice).  Without
infinities (E4M3, E4M3FNUZ) an infinite result is NaN, or ±max with
``saturate=True``.

Tininess: ``after`` means the value rounded to the format's precision with an
unbounded exponent range is below min_normal (for sr, the delivered result:
fpsim's documented choice); ``before`` means ``|x| < min_normal``.  Tiny and
inexact raises UNDERFLOW; with ``ftz`` a tiny result becomes a zero of the
input's sign (+0 in FNUZ formats) with UNDERFLOW | INEXACT.

Format parameters come from tests/oracle.py: written from the definitions,
not read from fpsim.
"""

from __future__ import annotations

import functools
from fractions import Fraction

import numpy as np
import pytest

import fpsim

from oracle import SPECS, FormatSpec, flags_as, floor_log2, pow2, ref_rational

Flag = fpsim.Flag

NAMES = ["fp16", "bf16", "e4m3", "e5m2", "e4m3fnuz"]
FMT = {name: fpsim.format(name) for name in NAMES}
ALL_MODES = ["rne", "rna", "rtz", "rup", "rdn", "rto", "sr"]
SR_BITS = 32


def ref_round(spec: FormatSpec, x: Fraction, mode: str, saturate=False, ftz=False,
              tininess="after", r=0):
    """(kind, sign, value, flags) of rounding the exact ``x`` into ``spec``
    (the oracle's reference, flags as fpsim.Flag)."""
    kind, sign, value, flags = ref_rational(spec, x, mode, saturate=saturate, ftz=ftz,
                                            tininess=tininess, r=r)
    return kind, sign, value, flags_as(Flag, flags)


# -- the reference checks itself against a few values from the definitions ------------

def test_reference_rounding_reproduces_hand_computed_cases():
    fp16, e4m3 = SPECS["fp16"], SPECS["e4m3"]
    assert (fp16.max, fp16.min_sub, e4m3.max, SPECS["e4m3fnuz"].max) == (
        65504, pow2(-24), 448, 240)
    one = Fraction(1)
    half_ulp = pow2(-11)
    assert ref_round(fp16, one + half_ulp, "rna")[2] == one + 2 * half_ulp
    assert ref_round(fp16, -(one + half_ulp), "rna")[2] == -(one + 2 * half_ulp)
    assert ref_round(fp16, one + half_ulp, "rne")[2] == one
    assert ref_round(fp16, one + half_ulp, "rto")[2] == one + 2 * half_ulp
    assert ref_round(fp16, one + 3 * half_ulp, "rto")[2] == one + 2 * half_ulp
    assert ref_round(e4m3, Fraction(464), "rna")[0] == "nan"
    assert ref_round(e4m3, Fraction(464), "rne")[2] == 448
    assert ref_round(e4m3, Fraction(449), "rto")[2] == 448  # 480 would be the odd one
    assert ref_round(fp16, Fraction(65519), "rto")[2] == 65504  # 2047 × 32 is odd
    assert ref_round(fp16, pow2(-25), "rna")[2] == pow2(-24)


# -- inputs ---------------------------------------------------------------------------

def rand_int(rng, bits: int) -> int:
    return int.from_bytes(rng.bytes((bits + 7) // 8), "little") >> (-bits % 8)


def random_rationals(rng, spec: FormatSpec, n: int, lo: int | None = None,
                     hi: int | None = None) -> list[Fraction]:
    lo = spec.emin - spec.m - 3 if lo is None else lo
    hi = spec.emax + 2 if hi is None else hi
    out = []
    for _ in range(n):
        v = Fraction(rand_int(rng, int(rng.integers(1, 70))) | 1,
                     rand_int(rng, int(rng.integers(1, 70))) | 1)
        v *= pow2(int(rng.integers(lo, hi + 1)) - floor_log2(v))
        out.append(-v if rng.integers(2) else v)
    return out


def ties_and_neighbours(rng, spec: FormatSpec, n: int) -> list[Fraction]:
    """Exact values, exact midpoints of adjacent values (including max and
    the next value above it with unbounded exponent), and tiny nudges."""
    vals = [*spec.finite_values(), spec.max + pow2(spec.emax - spec.m)]
    idx = rng.choice(len(vals) - 1, min(n, len(vals) - 1), replace=False).tolist()
    idx += [0, 1, len(vals) - 2, len(vals) - 3]
    out = []
    for i in idx:
        a, b = vals[i], vals[i + 1]
        mid = (a + b) / 2
        tiny = (b - a) / (1 << int(rng.integers(8, 60)))
        for v in (a, mid, mid + tiny, mid - tiny, a + tiny, b - tiny):
            if v > 0:
                out += [v, -v]
    return out


def special_values(spec: FormatSpec) -> list[Fraction]:
    mn, ms, mx = spec.min_normal, spec.min_sub, spec.max
    p = spec.m + 1
    ulp_max = pow2(spec.emax - spec.m)
    eps = pow2(-p - 40)
    vals = [ms, ms / 2, ms / 2 * (1 + eps), ms / 2 * (1 - eps), ms / 4, ms * 3 / 2, ms / 3,
            mn, mn - ms / 2, mn - ms, mn * (1 - pow2(-p - 1)), mn * (1 - pow2(-p - 1)) * (1 + eps),
            mn * (1 - pow2(-p - 1)) * (1 - eps), mn * (1 - pow2(-p)), mn / 2, mn * 3 / 4,
            mx, mx + ulp_max / 4, mx + ulp_max / 2, mx + ulp_max / 2 * (1 + eps),
            mx + ulp_max, mx + 3 * ulp_max / 2, mx * 3, pow2(spec.emax + 1),
            pow2(spec.emax + 1) - ulp_max / 2]
    return [s * v for v in vals for s in (1, -1)]


def random_floats(rng, spec: FormatSpec, n: int) -> list[float]:
    lo, hi = spec.emin - spec.m - 3, spec.emax + 2
    vals = np.ldexp(rng.uniform(1, 2, n), rng.integers(lo, hi + 1, n))
    return (vals * rng.choice([-1.0, 1.0], n)).tolist()


def mixed_inputs(name: str, seed: int):
    spec = SPECS[name]
    rng = np.random.default_rng(seed)
    items = [(v, v) for v in random_rationals(rng, spec, 2000)]
    items += [(v, v) for v in ties_and_neighbours(rng, spec, 300)]
    items += [(v, v) for v in special_values(spec)]
    items += [(f, Fraction(f)) for f in random_floats(rng, spec, 1000)]
    return items


def check(name, items, mode, saturate=False, ftz=False, tininess="after", rng=None) -> int:
    spec = SPECS[name]
    ctx = fpsim.Context(rounding=mode, saturate=saturate, ftz=ftz, tininess=tininess)
    bad = []
    for given, x in items:
        r = int(rng.integers(0, 1 << SR_BITS, dtype=np.uint64)) if mode == "sr" else 0
        kind, sign, value, flags = ref_round(spec, x, mode, saturate, ftz, tininess, r)
        ctx.clear_flags()
        res = FMT[name].round(given, ctx, random_bits=r) if mode == "sr" else \
            FMT[name].round(given, ctx)
        got = spec.decode(res.bits)
        ok = got[0] == kind and ctx.flags == flags
        if ok and kind != "nan":
            ok = got[1] == sign and got[2] == value
        if not ok:
            bad.append((str(given), mode, r, (kind, sign, value, str(flags)),
                        (hex(res.bits), got, str(ctx.flags))))
    assert not bad, f"{len(bad)} mismatches; first: {bad[:4]}"
    return len(items)


# -- rna and rto ------------------------------------------------------------------------

@pytest.mark.parametrize("saturate", [False, True], ids=["nonsat", "sat"])
@pytest.mark.parametrize("name", NAMES)
def test_rna_rounds_to_nearest_ties_away_like_the_reference(name, saturate):
    items = mixed_inputs(name, seed=100 + NAMES.index(name))
    assert check(name, items, "rna", saturate=saturate) > 4000


@pytest.mark.parametrize("saturate", [False, True], ids=["nonsat", "sat"])
@pytest.mark.parametrize("name", NAMES)
def test_rto_keeps_exact_values_and_otherwise_picks_the_odd_neighbour(name, saturate):
    items = mixed_inputs(name, seed=200 + NAMES.index(name))
    assert check(name, items, "rto", saturate=saturate) > 4000


@pytest.mark.parametrize("name", NAMES)
def test_rna_every_exact_tie_goes_to_the_larger_magnitude(name):
    spec = SPECS[name]
    vals = spec.finite_values()
    for a, b in zip(vals[:-1], vals[1:]):
        for s in (1, -1):
            res = FMT[name].round(s * (a + b) / 2, rounding="rna")
            assert spec.decode(res.bits) == ("finite", int(s < 0), s * b), (a, b, s)


@pytest.mark.parametrize("name", NAMES)
def test_rto_overflow_gives_max_like_rtz(name):
    spec = SPECS[name]
    ulp_max = pow2(spec.emax - spec.m)
    beyond = spec.max + ulp_max  # next value above max with unbounded exponent
    for x in (beyond, beyond + ulp_max / 8, 2 * beyond, pow2(spec.emax + 5)):
        for s in (1, -1):
            ctx = fpsim.Context(rounding="rto")
            res = FMT[name].round(s * x, ctx)
            assert spec.decode(res.bits) == ("finite", int(s < 0), s * spec.max), (s * x,)
            assert ctx.flags == Flag.OVERFLOW | Flag.INEXACT, (s * x, ctx.flags)
    # Between max and the next value up: the odd neighbour is max when max's
    # significand is odd (IEEE and FNUZ formats: no overflow), and the value
    # above max when it is even (E4M3, whose max 1.110b x 2**8 is even: overflow).
    max_sig_is_odd = (spec.max / ulp_max) % 2 == 1
    assert max_sig_is_odd == (spec.specials != "fn")
    for s in (1, -1):
        ctx = fpsim.Context(rounding="rto")
        res = FMT[name].round(s * (spec.max + ulp_max / 8), ctx)
        assert spec.decode(res.bits) == ("finite", int(s < 0), s * spec.max)
        want = Flag.INEXACT if max_sig_is_odd else Flag.OVERFLOW | Flag.INEXACT
        assert ctx.flags == want, (s, ctx.flags)


# -- flush to zero -----------------------------------------------------------------------

@functools.cache
def tiny_region_inputs(name: str, seed: int):
    spec = SPECS[name]
    rng = np.random.default_rng(seed)
    items = [(v, v) for v in random_rationals(rng, spec, 400, lo=spec.emin - spec.m - 3,
                                              hi=spec.emin + 1)]
    items += [(v, v) for v in special_values(spec)[:34]]  # the small ones
    vals = [v for v in spec.finite_values() if v <= 2 * spec.min_normal]
    mids = [(a + b) / 2 for a, b in zip(vals[:-1], vals[1:])]
    if len(vals) > 200:  # fp16, bf16: the ends and a sample between
        pick = set(rng.choice(len(vals), 150, replace=False).tolist())
        pick |= set(range(8)) | set(range(len(vals) - 8, len(vals)))
        pick |= {i for i, v in enumerate(vals) if abs(v - spec.min_normal) <= 4 * spec.min_sub}
        vals = [vals[i] for i in sorted(pick)]
        mids = [mids[i] for i in sorted(pick) if i < len(mids)]
    items += [(s * v, s * v) for v in vals for s in (1, -1)]  # exact subnormals and zero
    items += [(s * v, s * v) for v in mids for s in (1, -1)]
    floats = np.ldexp(rng.uniform(1, 2, 200), rng.integers(spec.emin - spec.m - 2,
                                                             spec.emin + 1, 200))
    items += [(float(f), Fraction(float(f))) for f in (floats * rng.choice([-1, 1], 200))]
    return items


@pytest.mark.parametrize("tininess", ["after", "before"])
@pytest.mark.parametrize("mode", ALL_MODES)
@pytest.mark.parametrize("name", NAMES)
def test_ftz_flushes_tiny_results_to_zero_of_the_input_sign(name, mode, tininess):
    items = tiny_region_inputs(name, seed=300 + NAMES.index(name))
    rng = np.random.default_rng(400 + ALL_MODES.index(mode))
    check(name, items, mode, ftz=True, tininess=tininess, rng=rng)
    # and the same inputs without ftz agree with the reference too
    check(name, items, mode, ftz=False, tininess=tininess, rng=rng)


@pytest.mark.parametrize("name", NAMES)
def test_ftz_flushed_zero_carries_the_sign_and_underflow_inexact(name):
    spec = SPECS[name]
    for mode in ALL_MODES:
        for s in (1, -1):
            ctx = fpsim.Context(rounding=mode, ftz=True)
            res = FMT[name].round(s * spec.min_sub, ctx, **({"random_bits": 0}
                                                          if mode == "sr" else {}))
            kind, sign, value = spec.decode(res.bits)
            assert (kind, value) == ("finite", 0), (mode, s, hex(res.bits))
            assert sign == int(s < 0 and spec.has_neg_zero), (mode, s, hex(res.bits))
            assert ctx.flags == Flag.UNDERFLOW | Flag.INEXACT, (mode, s, ctx.flags)


def test_ftz_keeps_min_normal_reached_by_rounding_when_tininess_is_after():
    # x just below min_normal that rounds to min_normal at full precision is
    # not tiny after rounding: kept.  Tiny before rounding: flushed.
    spec = SPECS["fp16"]
    x = spec.min_normal * (1 - pow2(-12))  # halfway to the next value below at p bits
    res = FMT["fp16"].round(x, ftz=True, tininess="after")
    assert spec.decode(res.bits)[2] == spec.min_normal
    res = FMT["fp16"].round(x, ftz=True, tininess="before")
    assert spec.decode(res.bits)[2] == 0
