"""rne, rtz, rup and rdn agree with MPFR (gmpy2) emulating each format, and
the IEEE flags agree with the definitions.

MPFR emulates a format with precision ``p = mantissa_bits + 1``,
``subnormalize=True`` and ``emin = emin_fmt - p + 2`` (MPFR writes
``x = m × 2**e`` with ``0.5 <= m < 1``, so the smallest subnormal
``2**(emin_fmt - mantissa_bits)`` has MPFR exponent ``emin_fmt - p + 2``), and
an exponent range wide enough at the top that MPFR never overflows.  The
overflow rule is then applied here from IEEE 754 §7.4 / OCP FP8:

* OVERFLOW iff the value rounded to ``p`` bits with an unbounded exponent
  range exceeds ``max`` in magnitude; the result is ±inf for rne, for rup when
  positive and for rdn when negative, otherwise ±max;
* without infinities (E4M3) an infinite result is NaN, or ±max with
  ``saturate=True`` (which clamps every infinite result to ±max);
* INEXACT iff the delivered result differs from the exact input;
* UNDERFLOW iff tiny and inexact, tiny meaning (after rounding) the value
  rounded to ``p`` bits with unbounded exponent range is below min_normal, or
  (before rounding) the exact ``|x|`` is below min_normal.

Format parameters and the MPFR contexts come from tests/oracle.py (written
from the definitions, not read from fpsim).
"""

from __future__ import annotations

import math
from decimal import Decimal, localcontext
from fractions import Fraction

import gmpy2
import numpy as np
import pytest

import fpsim

from oracle import (
    SPECS,
    FormatSpec,
    floor_log2,
    mpfr_emulating,
    mpfr_fraction,
    mpfr_unbounded,
    overflows_to_infinity,
    pow2,
)

Flag = fpsim.Flag

NAMES = ["fp16", "bf16", "e4m3", "e5m2", "fp32", "tf32"]
FMT = {name: fpsim.format(name) for name in NAMES}
MODES = ["rne", "rtz", "rup", "rdn"]


def mpfr_round(x: Fraction, ctx) -> tuple[Fraction, int]:
    """``x`` rounded by MPFR under ``ctx``: (value, sign bit)."""
    with gmpy2.context(ctx):
        r = gmpy2.mpfr(gmpy2.mpq(x.numerator, x.denominator))
    assert gmpy2.is_finite(r), (x, r)
    return mpfr_fraction(r), int(gmpy2.is_signed(r))


def expected(spec: FormatSpec, x: Fraction, mode: str, saturate: bool):
    """(kind, sign, value, flags after, flags before) from MPFR plus the rules."""
    assert x != 0
    sign = int(x < 0)
    unbounded, _ = mpfr_round(x, mpfr_unbounded(spec, mode))
    if abs(unbounded) > spec.max:
        flags = Flag.OVERFLOW | Flag.INEXACT
        if overflows_to_infinity(mode, bool(sign)) and not saturate:
            return ("inf" if spec.has_inf else "nan"), sign, None, flags, flags
        v = -spec.max if sign else spec.max
        return "finite", sign, v, flags, flags
    bounded, bsign = mpfr_round(x, mpfr_emulating(spec, mode))
    # no overflow: MPFR's subnormalized result is the result
    assert abs(bounded) <= spec.max and bsign == sign
    inexact = bounded != x
    flags = Flag.INEXACT if inexact else Flag(0)
    after = flags | (Flag.UNDERFLOW if inexact and abs(unbounded) < spec.min_normal else Flag(0))
    before = flags | (Flag.UNDERFLOW if inexact and abs(x) < spec.min_normal else Flag(0))
    return "finite", sign, bounded, after, before


# -- inputs ------------------------------------------------------------------------

def rand_int(rng, bits: int) -> int:
    return int.from_bytes(rng.bytes((bits + 7) // 8), "little") >> (-bits % 8)


def random_rationals(rng, spec: FormatSpec, n: int) -> list[Fraction]:
    """Random rationals with random binary exponents from below min_subnormal/2
    to beyond max, and random sign."""
    out = []
    lo, hi = spec.emin - spec.m - 3, spec.emax + 3
    for _ in range(n):
        num = rand_int(rng, int(rng.integers(1, 90))) | 1
        den = rand_int(rng, int(rng.integers(1, 90))) | 1
        v = Fraction(num, den)
        v *= pow2(int(rng.integers(lo, hi + 1)) - floor_log2(v))
        out.append(-v if rng.integers(2) else v)
    return out


def random_values_of_format(rng, spec: FormatSpec, n: int) -> list[tuple[Fraction, Fraction]]:
    """Random pairs of adjacent positive finite values (a, next above a),
    including the pair (max, max + ulp) above which lies overflow."""
    width = 1 + spec.e + spec.m
    pairs = []
    codes = rng.integers(0, 1 << (width - 1), n).tolist() + [0, 1, (1 << spec.m) - 1,
                                                             1 << spec.m]
    for c in codes:
        kind, _, a = spec.decode(c)
        if kind != "finite":
            continue
        if a == spec.max:
            b = spec.max + spec.ulp_at_max
        else:
            kind_b, _, b = spec.decode(c + 1)
            if kind_b != "finite":
                continue
        pairs.append((a, b))
    pairs.append((spec.max, spec.max + spec.ulp_at_max))
    return pairs


def ties_and_neighbours(rng, spec: FormatSpec, n: int) -> list[Fraction]:
    """Exact values, exact midpoints and both, nudged by a tiny rational."""
    out = []
    for a, b in random_values_of_format(rng, spec, n):
        mid = (a + b) / 2
        tiny = (b - a) / (1 << int(rng.integers(20, 80)))
        for v in (a, b, mid, mid + tiny, mid - tiny, a + tiny, b - tiny):
            if v > 0:
                out += [v, -v]
    return out


def special_region_values(spec: FormatSpec) -> list[Fraction]:
    mn, ms, mx = spec.min_normal, spec.min_sub, spec.max
    eps = pow2(-spec.p - 30)
    vals = [
        ms, ms / 2, ms / 2 + ms * eps, ms / 2 - ms * eps, ms / 4, ms * 3 / 2, ms * 3 / 4,
        mn, mn - ms / 2, mn - ms / 2 + mn * eps, mn - ms / 2 - mn * eps, mn - ms,
        # the tininess-after boundary: below min_normal, but rounding to p bits
        # with unbounded exponent reaches it (or not)
        mn * (1 - pow2(-spec.p - 1)), mn * (1 - pow2(-spec.p - 1)) * (1 + eps),
        mn * (1 - pow2(-spec.p - 1)) * (1 - eps), mn * (1 - pow2(-spec.p)),
        mn * (1 - pow2(-spec.p - 2)), mn / 2, mn / 2 * (1 - eps),
        mx, mx - spec.ulp_at_max / 2, mx + spec.ulp_at_max / 4,
        mx + spec.ulp_at_max / 2, mx + spec.ulp_at_max / 2 + mx * eps,
        mx + spec.ulp_at_max / 2 - mx * eps, mx + spec.ulp_at_max,
        mx + spec.ulp_at_max * 3 / 2, 2 * mx, 4 * mx, pow2(spec.emax + 1),
    ]
    return [s * v for v in vals for s in (1, -1)]


def decimal_strings(rng, spec: FormatSpec, n: int) -> list[str]:
    """Random long decimal strings, and the exact decimal expansions of
    midpoints with a 1 appended far to the right (just above the tie) or
    with a tiny decimal subtracted (just below)."""
    out = []
    lo, hi = spec.emin - spec.m - 3, spec.emax + 3
    for _ in range(n):
        digits = "".join(str(d) for d in rng.integers(0, 10, int(rng.integers(1, 40))))
        k = int(rng.integers(lo, hi + 1))
        e10 = math.floor(k * math.log10(2))
        sign = "-" if rng.integers(2) else ""
        out.append(f"{sign}{int(rng.integers(1, 10))}.{digits}e{e10}")
    with localcontext() as dctx:
        dctx.prec = 1000
        for a, b in random_values_of_format(rng, spec, n // 4):
            mid = (a + b) / 2
            exact = Decimal(mid.numerator) / Decimal(mid.denominator)
            text = format(exact, "f")
            if "." not in text:
                text += "."
            nfrac = len(text.split(".")[1])
            below = exact - Decimal(1).scaleb(-nfrac - 25)
            out += [text, text + "0" * 25 + "1", format(below, "f")]
            out += ["-" + text + "0" * 10 + "1"]
    return out


def random_float64(rng, spec: FormatSpec, n: int) -> list[float]:
    lo = max(spec.emin - spec.m - 3, -1074)
    hi = spec.emax + 3
    sign = rng.choice([-1.0, 1.0], n)
    sig = rng.uniform(1.0, 2.0, n)
    exps = rng.integers(lo, hi + 1, n)
    vals = np.ldexp(sig, exps) * sign
    bits = rng.integers(0, 1 << 63, n // 2, dtype=np.uint64)  # raw patterns, some
    raw = bits.view(np.float64)
    raw = raw[np.isfinite(raw) & (np.abs(raw) < 2.0 ** (hi + 1)) & (raw != 0)]
    return vals.tolist() + raw.tolist()


OTHER_SPELLINGS = [
    # (fpsim input, exact value): huge and tiny decimals, rationals, hex floats
    ("1e5000", Fraction(10) ** 5000), ("-1e5000", -Fraction(10) ** 5000),
    ("1e-5000", Fraction(1, 10**5000)), ("-1e-5000", -Fraction(1, 10**5000)),
    (1e300, Fraction(1e300)), (-5e-324, Fraction(-5e-324)), (10**400, Fraction(10**400)),
    ("1/3", Fraction(1, 3)), ("-2/3", Fraction(-2, 3)), ("65519/1", Fraction(65519)),
    ("123456789e-30", Fraction(123456789, 10**30)), (Fraction(-1, 3 * 2**140), None),
] + [(h, Fraction(float.fromhex(h))) for h in (
    "0x1.ffcp15", "0x1.ffep15", "-0x1.ffep15", "0x1.002p0", "0x1.0020000000001p0",
    "0x1.8p-24", "0x1p-25", "0x1.0000000000001p-25", "-0x1.fffffffffffffp-15",
    "0x1.c8p8", "0x1.dp8", "0x1.cp8", "0x1.00001p-133", "0x1p-134", "0x1.fep127",
    "0x1.ff8p127", "0x1.ffffffp127", "0x1.fffffep-127", "0x1.000001p0", "0x1.0000018p0")]


def all_inputs(name: str, seed: int, scale: int = 1):
    """(input given to fpsim, exact value) pairs."""
    spec = SPECS[name]
    rng = np.random.default_rng(seed)
    items = [(v, v) for v in random_rationals(rng, spec, 1500 * scale)]
    items += [(v, v) for v in ties_and_neighbours(rng, spec, 150 * scale)]
    items += [(v, v) for v in special_region_values(spec)]
    items += [(s, Fraction(s)) for s in decimal_strings(rng, spec, 200 * scale)]
    items += [(f, Fraction(f)) for f in random_float64(rng, spec, 600 * scale)]
    items += [(Decimal(s), Fraction(s)) for s in decimal_strings(rng, spec, 20 * scale)]
    items += [(g, g if v is None else v) for g, v in OTHER_SPELLINGS]
    return items


# -- checks ------------------------------------------------------------------------------

def check(name: str, mode: str, saturate: bool, items) -> int:
    spec = SPECS[name]
    fmt = FMT[name]
    ctx_after = fpsim.Context(rounding=mode, saturate=saturate)
    ctx_before = fpsim.Context(rounding=mode, saturate=saturate, tininess="before")
    bad = []
    checked = 0
    for given, x in items:
        if x == 0:
            continue
        kind, sign, value, flags_after, flags_before = expected(spec, x, mode, saturate)
        for ctx, want_flags in ((ctx_after, flags_after), (ctx_before, flags_before)):
            ctx.clear_flags()
            r = fmt.round(given, ctx)
            got_kind, got_sign, got_value = spec.decode(r.bits)
            ok = got_kind == kind and ctx.flags == want_flags
            if ok and kind != "nan":
                ok = got_sign == sign and got_value == value
            if not ok:
                bad.append((str(given), x, kind, sign, value, str(want_flags),
                            hex(r.bits), str(ctx.flags), ctx.tininess.value))
        checked += 1
    assert not bad, f"{len(bad)} mismatches; first: {bad[:4]}"
    return checked


def test_mpfr_emulation_reproduces_known_fp16_results():
    # Sanity of the oracle set-up (values from the IEEE binary16 definition).
    s = SPECS["fp16"]
    assert mpfr_round(Fraction(1, 100000), mpfr_emulating(s, "rne"))[0] == Fraction(168, 2**24)
    assert mpfr_round(Fraction(1, 2**25), mpfr_emulating(s, "rne"))[0] == 0
    assert mpfr_round(Fraction(3, 2**25), mpfr_emulating(s, "rne"))[0] == Fraction(2, 2**24)
    assert mpfr_round(Fraction(1, 2**25), mpfr_emulating(s, "rup"))[0] == Fraction(1, 2**24)
    assert mpfr_round(Fraction(65520), mpfr_unbounded(s, "rne"))[0] == 65536
    assert mpfr_round(Fraction(3, 2**26), mpfr_unbounded(s, "rne"))[0] == Fraction(3, 2**26)
    assert (s.max, s.min_sub) == (65504, Fraction(1, 2**24))
    assert SPECS["e4m3"].max == 448 and SPECS["bf16"].emax == 127


@pytest.mark.parametrize("saturate", [False, True], ids=["nonsat", "sat"])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", NAMES)
def test_rounding_and_flags_match_mpfr(name, mode, saturate):
    items = all_inputs(name, seed=NAMES.index(name) * 10 + MODES.index(mode))
    assert check(name, mode, saturate, items) > 2500


@pytest.mark.exhaustive
@pytest.mark.parametrize("saturate", [False, True], ids=["nonsat", "sat"])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", NAMES)
def test_rounding_and_flags_match_mpfr_large_sample(name, mode, saturate):
    items = all_inputs(name, seed=1000 + NAMES.index(name) * 10 + MODES.index(mode), scale=10)
    assert check(name, mode, saturate, items) > 25000


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", NAMES)
def test_long_decimal_strings_round_like_their_exact_value(name, mode):
    # The documented example and its neighbours, for every mode.
    spec = SPECS[name]
    one_plus_half_ulp = Fraction(1) + pow2(-spec.p)
    with localcontext() as dctx:
        dctx.prec = 200
        text = format(Decimal(one_plus_half_ulp.numerator) / one_plus_half_ulp.denominator, "f")
    strings = [text, text + "000000000000000000001", "-" + text + "0000000001",
               "1.000488281250000000001", "1.00048828125", "-1.000488281250000000001",
               "0." + "0" * 30 + "1", "65519.99999999999999999999", "65520.0000000000000000001",
               "447.9999999999999999999999", "464.00000000000000000000001", "1e-5", "-3e-8"]
    items = [(s, Fraction(s)) for s in strings]
    check(name, mode, False, items)


@pytest.mark.parametrize("name", NAMES)
def test_zeros_round_to_zeros_of_their_sign_without_flags(name):
    fmt = FMT[name]
    for mode in MODES:
        for given, neg in ((0, False), (0.0, False), (-0.0, True), (Fraction(0), False),
                           ("-0", True), ("0e-400", False), (Decimal("-0.000"), True)):
            ctx = fpsim.Context(rounding=mode)
            r = fmt.round(given, ctx)
            kind, sign, value = SPECS[name].decode(r.bits)
            assert (kind, sign, value) == ("finite", int(neg), 0), (given, mode, hex(r.bits))
            assert ctx.flags == Flag(0)
