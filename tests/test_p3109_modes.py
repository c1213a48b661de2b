"""IEEE P3109's saturation modes (SatFinite, SatPropagate, OvfInf) and its
rounding modes beyond IEEE 754's (TowardMaxMagnitude, StochasticA/B/C),
against references written here and in tests/oracle.py from the report's
definitions (as the working group's draft states them), and against gfloat
0.5.2, which implements SatFinite (``sat=True``) and the three stochastic
roundings (``StochasticFastest`` is A, ``StochasticFast`` B, ``Stochastic``
C).

These tests hold the P3109 formats to IEEE 754's rules (``p3109="ieee"``);
the rules the report adds (x / 0 is NaN, negative values into unsigned
formats, round to odd beyond ±max) are tests/test_p3109_rules.py's.

The saturation rule (the report's ``Saturate``, applied to the value rounded
with an unbounded exponent; ``to_inf`` is IEEE 754's "the mode carries an
overflow to infinity"):

==================  =====================  =====================  =================
setting             finite beyond ±max     infinite operand       x / 0
==================  =====================  =====================  =================
False (IEEE, OCP)   ±inf if to_inf, else   ±inf; no inf: NaN,     ±inf; no inf: NaN
                    ±max; no inf: NaN      INVALID
True (SatFinite)    ±max                   ±max, INVALID          ±max
"satpropagate"      ±max                   ±inf; no inf: ±max,    ±inf; no inf: ±max
                                           INVALID
"ovfinf"            ±inf if to_inf, else   as satpropagate        as satpropagate
                    ±max; no inf: ±max
==================  =====================  =====================  =================

A finite overflow raises OVERFLOW and INEXACT whatever the setting; x / 0
raises DIVIDE_BY_ZERO only.
"""

from __future__ import annotations

import random
from fractions import Fraction

import gfloat
import numpy as np
import pytest
from gfloat.formats import format_info_p3109
from gfloat.types import Domain, RoundMode, Signedness

import fpsim
from fpsim import arith
from fpsim import array as fa

from oracle import SPECS, flags_as, pow2, ref_rational

Flag = fpsim.Flag
SATURATIONS = [False, True, "satpropagate", "ovfinf"]
# IEEE-style, OCP (no infinity), no infinity and no NaN, FNUZ, and P3109
# signed/unsigned, extended/finite (P >= 2: ties by the significand).
NAMES = ["fp16", "e5m2", "e4m3", "e2m1", "e4m3fnuz", "binary8p3se", "binary8p3sf",
         "binary8p4ue", "binary8p5uf", "binary8p2se"]
MODES = ["rne", "rna", "rtz", "rup", "rdn", "raz", "rto"]


def values_around(spec, rng, n=100):
    """Exact values over the format's range and beyond: near max, near the
    smallest subnormal, midpoints, and random magnitudes."""
    out = [spec.max, spec.max + spec.ulp_at_max / 2, spec.max + spec.ulp_at_max,
           spec.max * 4, spec.min_sub / 2, spec.min_sub * 3 / 4, Fraction(1, 3)]
    for _ in range(n):
        e = rng.randint(spec.emin - spec.m - 2, spec.emax + 2)
        out.append(Fraction(rng.randint(1, 1 << (spec.m + 4)), 1 << (spec.m + 3)) * pow2(e))
    signs = [1, -1] if spec.signed else [1]
    return [s * v for v in out for s in signs]


def decoded(name, x):
    """(kind, sign, value) of an fpsim result, read with the oracle's decoder
    (the NaN's sign is not compared)."""
    kind, sign, value = SPECS[name].decode(x.bits)
    return (kind, None if kind == "nan" else sign, value)


def expected(name, v, mode, saturate, r=0, sr_bits=32):
    kind, sign, value, flags = ref_rational(SPECS[name], v, mode, saturate=saturate, r=r,
                                            sr_bits=sr_bits)
    return (kind, None if kind == "nan" else sign, value), flags_as(Flag, flags)


@pytest.mark.parametrize("saturate", SATURATIONS, ids=str)
@pytest.mark.parametrize("name", NAMES)
def test_rounding_a_finite_value_under_each_saturation_and_mode(name, saturate):
    spec, fmt = SPECS[name], fpsim.format(name)
    rng = random.Random(f"{name}{saturate}")
    cases = 0
    for v in values_around(spec, rng):
        for mode in MODES:
            with fpsim.localcontext(rounding=mode, saturate=saturate, p3109="ieee") as ctx:
                ctx.clear_flags()
                got = fmt.round(v)
                assert (decoded(name, got), ctx.flags) == expected(name, v, mode, saturate), \
                    (name, v, mode, saturate)
            cases += 1
    assert cases > 700


def expected_infinity(fmt, negative, saturate, from_operand):
    """The table in the module docstring: (kind, sign, value), flags."""
    spec = SPECS[fmt.name]
    sign = int(negative)
    maxv = -spec.max if negative else spec.max
    clamp_flag = Flag.INVALID if from_operand else Flag.DIVIDE_BY_ZERO
    keep_flag = Flag(0) if from_operand else Flag.DIVIDE_BY_ZERO
    if saturate is True:
        return ("finite", sign, maxv), clamp_flag
    if spec.has_inf:
        return ("inf", sign, None), keep_flag
    if saturate is False and spec.has_nan:
        return ("nan", None, None), clamp_flag
    return ("finite", sign, maxv), clamp_flag


@pytest.mark.parametrize("saturate", SATURATIONS, ids=str)
@pytest.mark.parametrize("name", NAMES)
def test_infinite_operands_and_division_by_zero(name, saturate):
    fmt = fpsim.format(name)
    signs = [False, True] if fmt.signed else [False]
    for negative in signs:
        with fpsim.localcontext(saturate=saturate, p3109="ieee") as ctx:
            ctx.clear_flags()
            got = fmt.round(float("-inf") if negative else float("inf"))
            assert (decoded(name, got), ctx.flags) == expected_infinity(fmt, negative,
                                                                         saturate, True)
            if fmt.has_inf:  # an infinite operand in arithmetic: inf + 1 and inf * 2
                inf = fmt.round(float("-inf") if negative else float("inf"), saturate=False)
                for op, other in ((arith.add, 1), (arith.mul, 2)):
                    ctx.clear_flags()
                    got = op(inf, fmt.round(other))
                    assert (decoded(name, got), ctx.flags) == expected_infinity(
                        fmt, negative, saturate, True), (op, negative)
            ctx.clear_flags()
            got = arith.div(fmt.round(-1 if negative else 1), fmt.round(0))
            assert (decoded(name, got), ctx.flags) == expected_infinity(fmt, negative,
                                                                         saturate, False)


def test_saturation_names_and_values():
    assert fpsim.Context(saturate="SatFinite").saturate is True
    assert fpsim.Context(saturate="SatPropagate").saturate is fpsim.Saturation.SAT_PROPAGATE
    assert fpsim.Context(saturate="OVF_INF").saturate is fpsim.Saturation.OVF_INF
    assert fpsim.Context(saturate="SatNone").saturate is fpsim.Saturation.SAT_NONE
    assert fpsim.Saturation.OVF_INF is fpsim.Saturation.SAT_NONE  # release 3's name
    assert fpsim.Context(saturate=fpsim.Saturation.SAT_FINITE).saturate is True
    assert "saturate='satnone'" in repr(fpsim.Context(saturate="ovfinf"))
    # the report's worked rule: E4M3 (no infinity) under OvfInf never gives NaN
    assert fpsim.E4M3.round(1e6, saturate="ovfinf").bits == 0x7E
    assert fpsim.E4M3.round(1e6).bits == 0x7F
    assert fpsim.FP16.round(1e6, saturate="satpropagate").bits == 0x7BFF
    assert fpsim.FP16.round(float("inf"), saturate="satpropagate").bits == 0x7C00


def gfloat_format(name):
    k, p, su, ef = 8, int(name[8]), name[9], name[10]
    return format_info_p3109(k, p, Signedness.Signed if su == "s" else Signedness.Unsigned,
                             Domain.Extended if ef == "e" else Domain.Finite)


@pytest.mark.parametrize("name", ["binary8p3se", "binary8p3sf", "binary8p4ue", "binary8p5uf"])
def test_satfinite_and_ovfinf_against_gfloat(name):
    """gfloat's ``sat=True`` is SatFinite; in an extended format its
    ``sat=False`` is OvfInf (overflow to infinity as the mode directs)."""
    fi, fmt, spec = gfloat_format(name), fpsim.format(name), SPECS[name]
    rng = random.Random(name)
    gmodes = {"rne": RoundMode.TiesToEven, "rtz": RoundMode.TowardZero,
              "rup": RoundMode.TowardPositive, "rdn": RoundMode.TowardNegative,
              "rna": RoundMode.TiesToAway}
    n = 0
    for v in values_around(spec, rng, 300):
        x = float(v)
        if x < 0 and not spec.signed:
            continue  # (gfloat returns the negative value: see docs/stacks.rst)
        for mode, gmode in gmodes.items():
            want = gfloat.round_float(fi, x, gmode, sat=True)
            assert float(fmt.round(x, rounding=mode, saturate=True)) == want, (x, mode)
            if spec.has_inf:
                want = gfloat.round_float(fi, x, gmode, sat=False)
                assert float(fmt.round(x, rounding=mode, saturate="ovfinf")) == want, (x, mode)
            n += 1
    assert n > 1000


# -- the stochastic roundings ------------------------------------------------------

@pytest.mark.parametrize("mode", ["sr", "sr_b", "sr_c"])
@pytest.mark.parametrize("name", ["fp16", "e4m3", "binary8p3se", "e2m1"])
def test_stochastic_variants_against_the_reference(name, mode):
    spec, fmt = SPECS[name], fpsim.format(name)
    rng = random.Random(f"{name}{mode}")
    for sr_bits in (1, 2, 3, 5, 13):
        for v in values_around(spec, rng, 60):
            for r in {0, 1, (1 << sr_bits) - 1, rng.randrange(1 << sr_bits)}:
                with fpsim.localcontext(rounding=mode, sr_bits=sr_bits) as ctx:
                    ctx.clear_flags()
                    got = fmt.round(v, random_bits=r)
                    assert (decoded(name, got), ctx.flags) == expected(
                        name, v, mode, False, r=r, sr_bits=sr_bits), (v, r, sr_bits)


def test_the_three_stochastic_rules_differ_as_the_report_says():
    # eta = 3/8 of the last place, N = 2 random bits, R = 2 (spec/p3109.md):
    # A: floor(1.5) + 2 = 3 < 4 (down); B: floor(3) + 5 = 8 >= 8 (up);
    # C: RNE(1.5) + 2 = 4 >= 4 (up).  1 + 3/8 ulp of FP16 at 1:
    v = 1 + Fraction(3, 8) * pow2(-10)
    got = [fpsim.FP16.round(v, rounding=m, sr_bits=2, random_bits=2).bits
           for m in ("sr", "sr_b", "sr_c")]
    assert got == [0x3C00, 0x3C01, 0x3C01]


@pytest.mark.parametrize("mode,gmode", [("sr", RoundMode.StochasticFastest),
                                        ("sr_b", RoundMode.StochasticFast),
                                        ("sr_c", RoundMode.Stochastic)])
def test_stochastic_variants_against_gfloat(mode, gmode):
    """gfloat evaluates the rules in float64; FP16 values into binary8p3se
    keep every step exact there."""
    fi, fmt = gfloat_format("binary8p3se"), fpsim.format("binary8p3se")
    codes = np.arange(0x10000, dtype=np.uint16)
    values = codes.view(np.float16).astype(np.float64)
    values = values[np.isfinite(values) & (np.abs(values) <= float(fmt.max))]
    rng = random.Random(mode)
    sr_bits = 4
    for x in values[::7]:
        r = rng.randrange(1 << sr_bits)
        want = gfloat.round_float(fi, float(x), gmode, srbits=r, srnumbits=sr_bits)
        got = float(fmt.round(float(x), rounding=mode, sr_bits=sr_bits, random_bits=r))
        assert got == want or (np.isnan(got) and np.isnan(want)), (x, r)


# -- the array engine equals the scalar path ------------------------------------------

@pytest.mark.parametrize("saturate", SATURATIONS, ids=str)
@pytest.mark.parametrize("mode", ["rne", "rup", "raz", "sr_b", "sr_c"])
@pytest.mark.parametrize("name", ["binary8p3se", "e4m3", "binary8p4ue", "fp16"])
def test_array_arith_equals_scalar_on_every_pair(name, mode, saturate):
    """add and mul of every pair of codes of an 8-bit format (a sample of
    FP16 pairs), codes and flags, array against scalar."""
    fmt = fpsim.format(name)
    if fmt.width == 8:
        a, b = (c.ravel() for c in np.meshgrid(np.arange(256), np.arange(256)))
    else:
        g = np.random.default_rng(1)
        a, b = g.integers(0, 1 << 16, (2, 20000))
    a, b = a.astype(np.uint64), b.astype(np.uint64)
    stochastic = mode.startswith("sr")
    sr_bits = 5
    rand = (np.random.default_rng(2).integers(0, 1 << sr_bits, a.size, dtype=np.uint64)
            if stochastic else None)
    for op, scalar in (("add", arith.add), ("mul", arith.mul)):
        kw = dict(rounding=mode, saturate=saturate, sr_bits=sr_bits)
        if stochastic:
            kw["random_bits"] = rand
        codes, flags = getattr(fa, op)(a, b, fmt=fmt, return_flags=True, **kw)
        for i in range(0, a.size, 37):
            with fpsim.localcontext(rounding=mode, saturate=saturate, sr_bits=sr_bits) as ctx:
                ctx.clear_flags()
                extra = {"random_bits": int(rand[i])} if stochastic else {}
                want = scalar(fmt.from_bits(int(a[i])), fmt.from_bits(int(b[i])), **extra)
                assert int(codes[i]) == want.bits, (op, hex(a[i]), hex(b[i]))
                assert Flag(int(flags[i])) == ctx.flags, (op, hex(a[i]), hex(b[i]))


@pytest.mark.parametrize("saturate", SATURATIONS, ids=str)
@pytest.mark.parametrize("mode", ["rne", "rtz", "raz", "sr", "sr_b", "sr_c"])
@pytest.mark.parametrize("name", ["binary8p3se", "e4m3", "binary8p5uf", "fp16"])
def test_array_encode_equals_scalar(name, mode, saturate):
    fmt = fpsim.format(name)
    g = np.random.default_rng(3)
    values = np.concatenate([
        g.standard_normal(800) * float(fmt.max) / 4,
        g.standard_normal(300) * float(fmt.max) * 4,
        g.standard_normal(300) * float(fmt.min_normal),
        [np.inf, -np.inf, np.nan, 0.0, -0.0]])
    stochastic = mode.startswith("sr")
    for sr_bits in ((3, 40, 63) if stochastic else (32,)):
        rand = (g.integers(0, 1 << sr_bits, values.size, dtype=np.uint64)
                if stochastic else None)
        kw = dict(rounding=mode, saturate=saturate, sr_bits=sr_bits)
        if stochastic:
            kw["random_bits"] = rand
        codes, flags = fa.encode(values, fmt, return_flags=True, **kw)
        for i in range(values.size):
            with fpsim.localcontext(rounding=mode, saturate=saturate, sr_bits=sr_bits) as ctx:
                ctx.clear_flags()
                extra = {"random_bits": int(rand[i])} if stochastic else {}
                want = fmt.round(float(values[i]), **extra)
                assert int(codes[i]) == want.bits, (values[i], sr_bits)
                assert Flag(int(flags[i])) == ctx.flags, (values[i], sr_bits)
