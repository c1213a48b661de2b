"""Ties-away (rna), round-to-odd (rto) and flush-to-zero against a reference
rounding written here from the definitions with Fractions.

The reference (``ref_round``) finds the two representable neighbours of
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

Format parameters are written here from the definitions, not read from fpsim.
"""

from __future__ import annotations

import functools
from fractions import Fraction

import numpy as np
import pytest

import fpsim

Flag = fpsim.Flag
NO_FLAGS = Flag(0)

# name -> (fpsim format, (exponent_bits, mantissa_bits, bias, specials))
SPECS = {
    "fp16": (fpsim.FP16, (5, 10, 15, "ieee")),
    "bf16": (fpsim.BF16, (8, 7, 127, "ieee")),
    "e4m3": (fpsim.E4M3, (4, 3, 7, "fn")),
    "e5m2": (fpsim.E5M2, (5, 2, 15, "ieee")),
    "e4m3fnuz": (fpsim.E4M3FNUZ, (4, 3, 8, "fnuz")),
}
NAMES = list(SPECS)
ALL_MODES = ["rne", "rna", "rtz", "rup", "rdn", "rto", "sr"]
SR_BITS = 32


@functools.cache
def pow2(k: int) -> Fraction:
    return Fraction(1 << k) if k >= 0 else Fraction(1, 1 << -k)


def floor_log2(v: Fraction) -> int:
    """floor(log2(v)) for v > 0, exactly."""
    n, d = v.numerator, v.denominator
    e = n.bit_length() - d.bit_length()
    if (n << max(-e, 0)) < (d << max(e, 0)):
        e -= 1
    return e


class Spec:
    def __init__(self, name):
        self.fmt, (e, m, bias, specials) = SPECS[name]
        self.e, self.m, self.bias, self.specials = e, m, bias, specials
        self.emin = 1 - bias
        top = (1 << e) - 1
        if specials == "ieee":
            max_sig, emax = (1 << (m + 1)) - 1, top - 1 - bias
        elif specials == "fn":
            max_sig, emax = (1 << (m + 1)) - 2, top - bias
        else:  # fnuz: every positive code is finite
            max_sig, emax = (1 << (m + 1)) - 1, top - bias
        self.emax = emax
        self.max = max_sig * pow2(emax - m)
        self.min_normal = pow2(self.emin)
        self.min_sub = pow2(self.emin - m)
        self.has_inf = specials == "ieee"
        self.has_neg_zero = specials != "fnuz"

    def decode(self, code: int) -> tuple[str, int, Fraction | None]:
        e, m, bias = self.e, self.m, self.bias
        sign = (code >> (e + m)) & 1
        ef = (code >> m) & ((1 << e) - 1)
        frac = code & ((1 << m) - 1)
        top = (1 << e) - 1
        if self.specials == "ieee" and ef == top:
            return ("inf" if frac == 0 else "nan"), sign, None
        if self.specials == "fn" and ef == top and frac == (1 << m) - 1:
            return "nan", sign, None
        if self.specials == "fnuz" and sign and ef == 0 and frac == 0:
            return "nan", sign, None
        sig, exp = (frac, 1 - bias - m) if ef == 0 else ((1 << m) | frac, ef - bias - m)
        v = sig * pow2(exp)
        return "finite", sign, (-v if sign else v)


SPEC = {name: Spec(name) for name in NAMES}


def round_significand(num: int, den: int, mode: str, negative: bool, r: int) -> tuple[int, bool]:
    """Round num/den >= 0 to an integer by ``mode``; (integer, inexact)."""
    lo, rem = divmod(num, den)
    if rem == 0:
        return lo, False
    twice = 2 * rem  # compare the discarded fraction rem/den with 1/2
    if mode == "rne":
        up = twice > den or (twice == den and lo % 2 == 1)
    elif mode == "rna":
        up = twice >= den
    elif mode == "rtz":
        up = False
    elif mode == "rup":
        up = not negative
    elif mode == "rdn":
        up = negative
    elif mode == "rto":
        up = lo % 2 == 0  # of lo and lo + 1, keep the odd one
    elif mode == "sr":
        t = (rem << SR_BITS) // den  # floor(frac × 2**R)
        up = t + r >= (1 << SR_BITS)
    else:  # pragma: no cover
        raise AssertionError(mode)
    return lo + (1 if up else 0), True


def scaled(v: Fraction, q: int) -> tuple[int, int]:
    """v / 2**q as (numerator, denominator)."""
    n, d = v.numerator, v.denominator
    return (n, d << q) if q >= 0 else (n << -q, d)


def ref_round(spec: Spec, x: Fraction, mode: str, saturate=False, ftz=False,
              tininess="after", r=0):
    """(kind, sign, value, flags) of rounding the exact ``x`` into ``spec``."""
    negative = x < 0
    zero_sign = int(negative and spec.has_neg_zero)
    if x == 0:
        return "finite", zero_sign, Fraction(0), NO_FLAGS
    v = abs(x)
    e = floor_log2(v)
    q = max(e, spec.emin) - spec.m
    sig, inexact = round_significand(*scaled(v, q), mode, negative, r)
    rounded = sig * pow2(q)
    if rounded > spec.max:
        to_inf = (mode in ("rne", "rna", "sr") or (mode == "rup" and not negative)
                  or (mode == "rdn" and negative))
        flags = Flag.OVERFLOW | Flag.INEXACT
        if to_inf and not saturate:
            return ("inf" if spec.has_inf else "nan"), int(negative), None, flags
        return "finite", int(negative), (-spec.max if negative else spec.max), flags
    if tininess == "before":
        tiny = v < spec.min_normal
    elif mode == "sr":
        tiny = rounded < spec.min_normal
    else:  # rounded to p bits with unbounded exponent range
        sig_u, _ = round_significand(*scaled(v, e - spec.m), mode, negative, r)
        tiny = sig_u * pow2(e - spec.m) < spec.min_normal
    if tiny and ftz:
        return "finite", zero_sign, Fraction(0), Flag.UNDERFLOW | Flag.INEXACT
    flags = Flag.INEXACT if inexact else NO_FLAGS
    if tiny and inexact:
        flags |= Flag.UNDERFLOW
    if rounded == 0:
        return "finite", zero_sign, Fraction(0), flags
    return "finite", int(negative), (-rounded if negative else rounded), flags


# -- the reference checks itself against a few values from the definitions ------------

def test_reference_rounding_reproduces_hand_computed_cases():
    fp16, e4m3 = SPEC["fp16"], SPEC["e4m3"]
    assert (fp16.max, fp16.min_sub, e4m3.max, SPEC["e4m3fnuz"].max) == (
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


def random_rationals(rng, spec: Spec, n: int, lo: int | None = None,
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


@functools.cache
def grid_values(spec: Spec) -> tuple[Fraction, ...]:
    """Every non-negative finite value, ascending."""
    width = 1 + spec.e + spec.m
    vals = {spec.decode(c) for c in range(1 << (width - 1))}
    return tuple(sorted(v for kind, _, v in vals if kind == "finite"))


def ties_and_neighbours(rng, spec: Spec, n: int) -> list[Fraction]:
    """Exact values, exact midpoints of adjacent values (including max and
    the next value above it with unbounded exponent), and tiny nudges."""
    vals = [*grid_values(spec), spec.max + pow2(spec.emax - spec.m)]
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


def special_values(spec: Spec) -> list[Fraction]:
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


def random_floats(rng, spec: Spec, n: int) -> list[float]:
    lo, hi = spec.emin - spec.m - 3, spec.emax + 2
    vals = np.ldexp(rng.uniform(1, 2, n), rng.integers(lo, hi + 1, n))
    return (vals * rng.choice([-1.0, 1.0], n)).tolist()


def mixed_inputs(name: str, seed: int):
    spec = SPEC[name]
    rng = np.random.default_rng(seed)
    items = [(v, v) for v in random_rationals(rng, spec, 2000)]
    items += [(v, v) for v in ties_and_neighbours(rng, spec, 300)]
    items += [(v, v) for v in special_values(spec)]
    items += [(f, Fraction(f)) for f in random_floats(rng, spec, 1000)]
    return items


def check(name, items, mode, saturate=False, ftz=False, tininess="after", rng=None) -> int:
    spec = SPEC[name]
    ctx = fpsim.Context(rounding=mode, saturate=saturate, ftz=ftz, tininess=tininess)
    bad = []
    for given, x in items:
        r = int(rng.integers(0, 1 << SR_BITS, dtype=np.uint64)) if mode == "sr" else 0
        kind, sign, value, flags = ref_round(spec, x, mode, saturate, ftz, tininess, r)
        ctx.clear_flags()
        res = spec.fmt.round(given, ctx, random_bits=r) if mode == "sr" else \
            spec.fmt.round(given, ctx)
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
    spec = SPEC[name]
    vals = grid_values(spec)
    for a, b in zip(vals[:-1], vals[1:]):
        for s in (1, -1):
            res = spec.fmt.round(s * (a + b) / 2, rounding="rna")
            assert spec.decode(res.bits) == ("finite", int(s < 0), s * b), (a, b, s)


@pytest.mark.parametrize("name", NAMES)
def test_rto_overflow_gives_max_like_rtz(name):
    spec = SPEC[name]
    ulp_max = pow2(spec.emax - spec.m)
    beyond = spec.max + ulp_max  # next value above max with unbounded exponent
    for x in (beyond, beyond + ulp_max / 8, 2 * beyond, pow2(spec.emax + 5)):
        for s in (1, -1):
            ctx = fpsim.Context(rounding="rto")
            res = spec.fmt.round(s * x, ctx)
            assert spec.decode(res.bits) == ("finite", int(s < 0), s * spec.max), (s * x,)
            assert ctx.flags == Flag.OVERFLOW | Flag.INEXACT, (s * x, ctx.flags)
    # Between max and the next value up: the odd neighbour is max when max's
    # significand is odd (IEEE and FNUZ formats: no overflow), and the value
    # above max when it is even (E4M3, whose max 1.110b x 2**8 is even: overflow).
    max_sig_is_odd = (spec.max / ulp_max) % 2 == 1
    assert max_sig_is_odd == (spec.specials != "fn")
    for s in (1, -1):
        ctx = fpsim.Context(rounding="rto")
        res = spec.fmt.round(s * (spec.max + ulp_max / 8), ctx)
        assert spec.decode(res.bits) == ("finite", int(s < 0), s * spec.max)
        want = Flag.INEXACT if max_sig_is_odd else Flag.OVERFLOW | Flag.INEXACT
        assert ctx.flags == want, (s, ctx.flags)


# -- flush to zero -----------------------------------------------------------------------

@functools.cache
def tiny_region_inputs(name: str, seed: int):
    spec = SPEC[name]
    rng = np.random.default_rng(seed)
    items = [(v, v) for v in random_rationals(rng, spec, 400, lo=spec.emin - spec.m - 3,
                                              hi=spec.emin + 1)]
    items += [(v, v) for v in special_values(spec)[:34]]  # the small ones
    vals = [v for v in grid_values(spec) if v <= 2 * spec.min_normal]
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
    spec = SPEC[name]
    for mode in ALL_MODES:
        for s in (1, -1):
            ctx = fpsim.Context(rounding=mode, ftz=True)
            res = spec.fmt.round(s * spec.min_sub, ctx, **({"random_bits": 0}
                                                          if mode == "sr" else {}))
            kind, sign, value = spec.decode(res.bits)
            assert (kind, value) == ("finite", 0), (mode, s, hex(res.bits))
            assert sign == int(s < 0 and spec.has_neg_zero), (mode, s, hex(res.bits))
            assert ctx.flags == Flag.UNDERFLOW | Flag.INEXACT, (mode, s, ctx.flags)


def test_ftz_keeps_min_normal_reached_by_rounding_when_tininess_is_after():
    # x just below min_normal that rounds to min_normal at full precision is
    # not tiny after rounding: kept.  Tiny before rounding: flushed.
    spec = SPEC["fp16"]
    x = spec.min_normal * (1 - pow2(-12))  # halfway to the next value below at p bits
    res = spec.fmt.round(x, ftz=True, tininess="after")
    assert spec.decode(res.bits)[2] == spec.min_normal
    res = spec.fmt.round(x, ftz=True, tininess="before")
    assert spec.decode(res.bits)[2] == 0
