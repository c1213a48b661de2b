"""Peer bugs recorded in docs/stacks.rst ("Where peers differ"), and the
conventions in which peers legitimately differ from fpsim.

Each bug test asserts two things:

* the peer *still* shows the bug, so that the release that fixes it fails
  here with a message saying which section of docs/stacks.rst to update;
* fpsim's result equals the exact answer, computed here with Fraction
  arithmetic from the format's definition (``round_exact``, ``e8m0_exact``),
  never by fpsim.

Checked with ml_dtypes 0.6.0 and gfloat 0.5.2.
"""

from __future__ import annotations

import math
from fractions import Fraction
from importlib.metadata import version

import ml_dtypes
import numpy as np
import pytest

import fpsim
from fpsim import array

gfloat = pytest.importorskip("gfloat")
from gfloat import RoundMode, encode_float, round_float, round_ndarray  # noqa: E402
from gfloat.formats import (  # noqa: E402
    format_info_ocp_e2m1,
    format_info_ocp_e2m3,
    format_info_ocp_e3m2,
    format_info_ocp_e4m3,
    format_info_ocp_e5m2,
    format_info_ocp_e8m0,
    format_info_p3109,
)

ML = f"ml_dtypes {ml_dtypes.__version__}"
GF = f"gfloat {version('gfloat')}"
UPDATE = "update docs/stacks.rst, 'Where peers differ'"


# -- the exact oracle (Fractions, from the definitions; no fpsim) ---------------------------

def pow2(k: int) -> Fraction:
    return Fraction(2) ** k


def floor_log2(a: Fraction) -> int:
    """floor(log2 a) for a > 0, exactly."""
    e = a.numerator.bit_length() - a.denominator.bit_length()   # e or e - 1
    return e - 1 if a < pow2(e) else e


def round_exact(x: Fraction, p: int, emin: int, ties: str = "even") -> Fraction:
    """x rounded to nearest in a binary format of precision p (the implicit
    bit included) with subnormals below 2**emin and an unbounded exponent
    range above; ``ties`` "even" or "away".  (A zero result is Fraction 0,
    without a sign.)"""
    if x == 0:
        return Fraction(0)
    a = abs(x)
    q = pow2(max(floor_log2(a), emin) - p + 1)         # the spacing at a
    n = math.floor(a / q)
    r = a - n * q
    if r > q / 2 or (r == q / 2 and (ties == "away" or n % 2 == 1)):
        n += 1
    return n * q if x > 0 else -n * q


def e8m0_exact(x: Fraction) -> Fraction:
    """x > 0 rounded to the nearest E8M0 value (2**e, -127 <= e <= 127; no
    zero, no subnormals), ties (1.5 * 2**e) up as in OCP MX practice; the
    range below 2**-127 rounds to 2**-127, the nearest value there."""
    assert 0 < x <= pow2(127)
    if x <= pow2(-127):
        return pow2(-127)
    lo = pow2(floor_log2(x))
    hi = 2 * lo
    return lo if x - lo < hi - x else hi


def in_e8m0(v: float) -> bool:
    """Whether v is a value of E8M0: 2**e with -127 <= e <= 127."""
    m, e = math.frexp(v)
    return v > 0 and m == 0.5 and -127 <= e - 1 <= 127


def grid(p: int, emin: int, emax: int) -> list[Fraction]:
    """Every non-negative value of a binary format of precision p with
    subnormals, from 0 up to the binade 2**emax (complete binades only)."""
    values = [Fraction(n) * pow2(emin - p + 1) for n in range(1 << (p - 1))]
    for e in range(emin, emax + 1):
        values += [Fraction(n) * pow2(e - p + 1) for n in range(1 << (p - 1), 1 << p)]
    return values


def midpoints(values: list[Fraction]) -> list[Fraction]:
    return [(a + b) / 2 for a, b in zip(values, values[1:])]


# -- ml_dtypes: float64 casts round twice, through float32 --------------------------------

def test_ml_dtypes_float64_cast_rounds_twice_reproduction():
    # 0x1.2ffffffe00000p+0 lies 2**-31 below 1.1875, the midpoint of E4M3's
    # 1.125 and 1.25: it rounds to 1.125.  float32 rounds it onto 1.1875
    # (2**-31 is within half of float32's 2**-23 spacing), and the tie then
    # goes to the even 1.25.
    x = float.fromhex("0x1.2ffffffe00000p+0")
    exact = round_exact(Fraction(x), 4, -6)
    assert exact == Fraction(9, 8)
    assert round_exact(round_exact(Fraction(x), 24, -126), 4, -6) == Fraction(5, 4)
    assert fpsim.E4M3.round(x).value == exact
    assert float(array.round(np.array([x]), "e4m3")[0]) == exact
    got = np.array([x]).astype(ml_dtypes.float8_e4m3fn)[0]
    assert float(got) == 1.25, f"{ML} fixed the float64 double rounding: {UPDATE}"
    assert float(np.float64(x).astype(ml_dtypes.float8_e4m3fn)) == 1.25
    # The scalar constructor rounds once.
    assert float(ml_dtypes.float8_e4m3fn(x)) == 1.125


# (fpsim name, ml_dtypes type, precision p, emin, emax of the complete binades swept)
DOUBLE = [("e4m3", ml_dtypes.float8_e4m3fn, 4, -6, 7),
          ("e5m2", ml_dtypes.float8_e5m2, 3, -14, 15),
          ("e2m3", ml_dtypes.float6_e2m3fn, 4, 0, 2),
          ("e3m2", ml_dtypes.float6_e3m2fn, 3, -2, 4)]


@pytest.mark.parametrize("name,dtype,p,emin,emax", DOUBLE, ids=[d[0] for d in DOUBLE])
def test_ml_dtypes_float64_casts_round_twice_near_every_midpoint(name, dtype, p, emin, emax):
    # For every midpoint m between neighbours, m (1 - 2**-30) and m (1 + 2**-30)
    # (float64 values; float32 rounds both onto m): once rounded they go down
    # and up; ml_dtypes gives the tie's even neighbour for both.
    mids = midpoints(grid(p, emin, emax))
    xs = [m * (1 + s * pow2(-30)) for m in mids for s in (-1, 1)]
    x64 = np.array([float(x) for x in xs])
    assert all(Fraction(float(x)) == x for x in xs)          # exact in float64
    once = [round_exact(x, p, emin) for x in xs]
    twice = [round_exact(round_exact(x, 24, -126), p, emin) for x in xs]
    got = [Fraction(float(v)) for v in x64.astype(dtype)]
    differ = sum(g != o for g, o in zip(got, once))
    assert got == twice and differ == len(mids), \
        f"{ML} no longer rounds float64 -> {dtype.__name__} through float32 " \
        f"({differ} of {len(xs)} differ from one rounding): {UPDATE}"
    assert [Fraction(float(v)) for v in array.round(x64, name)] == once
    assert [fpsim.format(name).round(float(x)).value for x in x64[::7]] == once[::7]


NARROW = [("bf16", "bfloat16"), ("e4m3", "float8_e4m3fn"), ("e5m2", "float8_e5m2"),
          ("e4m3fnuz", "float8_e4m3fnuz"), ("e5m2fnuz", "float8_e5m2fnuz"),
          ("e4m3b11fnuz", "float8_e4m3b11fnuz"), ("e3m4", "float8_e3m4"),
          ("e4m3ieee", "float8_e4m3"), ("e2m3", "float6_e2m3fn"), ("e3m2", "float6_e3m2fn"),
          ("e2m1", "float4_e2m1fn"), ("e8m0", "float8_e8m0fnu")]


@pytest.mark.parametrize("name,dtype_name", NARROW, ids=[n[0] for n in NARROW])
def test_ml_dtypes_float64_casts_round_twice_in_every_narrow_type(name, dtype_name):
    # Just beside the tie between 1 and 1 + eps (1 and 2 in E8M0, whose
    # ties go up): float32 rounds onto the tie, which then goes the wrong way.
    dtype = getattr(ml_dtypes, dtype_name)
    if name == "e8m0":
        x, exact, twice = 1.5 - 2.0**-40, Fraction(1), 2.0          # below the tie 1.5
        assert Fraction(x) - 1 < 2 - Fraction(x)
    else:
        eps = Fraction(float(ml_dtypes.finfo(dtype).eps))            # 1 + eps follows 1
        x = float(1 + eps / 2 + pow2(-40))                            # above the tie
        exact, twice = 1 + eps, 1.0
        assert (1 + eps) - Fraction(x) < Fraction(x) - 1
    got = float(np.array([x]).astype(dtype)[0])
    assert got == twice, f"{ML} {dtype_name} now rounds float64 {x!r} to {got}: {UPDATE}"
    assert fpsim.format(name).round(x).value == exact


# -- ml_dtypes: E8M0 of float32 subnormals ------------------------------------------------

def test_ml_dtypes_e8m0_rounds_fp32_codes_above_2_to_minus_127_up():
    # Every float32 strictly between 2**-127 (0x00400000) and 1.5 * 2**-127
    # (0x00600000), all subnormals: nearest is 2**-127 (code 0x00); ml_dtypes
    # gives 2**-126 (code 0x01).
    x = np.arange(0x00400001, 0x00600000, dtype=np.uint32).view(np.float32)
    got = x.astype(ml_dtypes.float8_e8m0fnu).view(np.uint8)
    up = int((got == 1).sum())
    assert up == len(x) == 2**21 - 1, \
        f"{ML} float8_e8m0fnu maps {up} of {len(x)} float32 codes in " \
        f"(2**-127, 1.5 * 2**-127) to 2**-126: {UPDATE}"
    assert float(ml_dtypes.float8_e8m0fnu(float(x[0]))) == 2.0**-126     # scalars too
    assert (array.encode(x, "e8m0") == 0).all()
    for v in x[::4099].tolist() + [float(x[-1])]:
        exact = e8m0_exact(Fraction(v))
        assert exact == pow2(-127), v
        assert fpsim.E8M0.round(v).value == exact, v
    # The band's ends agree: 2**-127 is a value, 1.5 * 2**-127 a tie (up).
    ends = np.array([0x00400000, 0x00600000, 0x003FFFFF], np.uint32).view(np.float32)
    assert ends.astype(ml_dtypes.float8_e8m0fnu).view(np.uint8).tolist() == [0, 1, 0]
    assert array.encode(ends, "e8m0").tolist() == [0, 1, 0]
    assert [e8m0_exact(Fraction(float(v))) for v in ends] == [pow2(-127), pow2(-126), pow2(-127)]


def test_torch_e8m0_rounds_fp32_codes_above_2_to_minus_127_up():
    # docs/stacks.rst: torch does the same (measured on torch 2.11 CUDA and
    # 2.13 CPU; not installed everywhere).
    torch = pytest.importorskip("torch")
    if not hasattr(torch, "float8_e8m0fnu"):
        pytest.skip(f"torch {torch.__version__} has no float8_e8m0fnu")
    x = np.arange(0x00400001, 0x00600000, 4097, dtype=np.uint32).view(np.float32)
    got = torch.from_numpy(x).to(torch.float8_e8m0fnu).view(torch.uint8).numpy()
    assert (got == 1).all(), f"torch {torch.__version__} fixed E8M0 of FP32 subnormals: {UPDATE}"


# -- gfloat: E8M0 below 2**-127 -----------------------------------------------------------

def test_gfloat_e8m0_rounds_below_2_to_minus_127_outside_the_format():
    # gfloat rounds in an unbounded exponent range: below 3 * 2**-129 (the
    # midpoint of 2**-128 and 2**-127) it returns powers of two that E8M0
    # does not have (its round_float promises "one of the values in the
    # format"); the nearest value, the smallest, is 2**-127.
    fi = format_info_ocp_e8m0
    assert round_float(fi, 2.0**-140) == 2.0**-140, f"{GF} fixed E8M0 below 2**-127: {UPDATE}"
    assert encode_float(fi, round_float(fi, 2.0**-140)) == 0xFF          # the NaN code
    rng = np.random.default_rng(8)
    xs = [2.0**-k for k in range(128, 1075)]
    xs += (3 * 2.0**-129 * rng.random(500)).tolist()
    xs = [x for x in xs if 0 < x < 3 * 2.0**-129]
    outside = [x for x in xs if not in_e8m0(round_float(fi, x))]
    nd_outside = [x for x, r in zip(xs, round_ndarray(fi, np.array(xs))) if not in_e8m0(r)]
    assert len(outside) == len(nd_outside) == len(xs), \
        f"{GF}: {len(outside)} of {len(xs)} E8M0 roundings below 3 * 2**-129 are outside " \
        f"the format: {UPDATE}"
    for x in xs:
        assert e8m0_exact(Fraction(x)) == pow2(-127)
        assert fpsim.E8M0.round(x).bits == 0, x
    assert (array.encode(np.array(xs), "e8m0") == 0).all()


# -- gfloat: round_float with ties away, just below half the smallest subnormal -----------

# (fpsim name, gfloat format, precision p, emin, emax of the complete binades swept)
TIES_AWAY = [("e2m3", format_info_ocp_e2m3, 4, 0, 2),
             ("e3m2", format_info_ocp_e3m2, 3, -2, 4),
             ("e2m1", format_info_ocp_e2m1, 2, 0, 2),
             ("e4m3", format_info_ocp_e4m3, 4, -6, 7),
             ("e5m2", format_info_ocp_e5m2, 3, -14, 15)]


@pytest.mark.parametrize("name,fi,p,emin,emax", TIES_AWAY, ids=[t[0] for t in TIES_AWAY])
def test_gfloat_round_float_ties_away_rounds_below_the_first_midpoint_up(name, fi, p, emin,
                                                                        emax):
    # With ties away, round_float tests `delta + 0.5 >= 1.0` in float64:
    # for delta = 0.5 - 2**-54 (x just below half the smallest subnormal)
    # the sum rounds to 1.0, and x goes up instead of to zero.  No other
    # value near a midpoint is affected; round_ndarray is right.
    fmt = fpsim.format(name)
    tiny = float(pow2(emin - p + 1))                            # the smallest subnormal
    x = float.fromhex("0x1.fffffffffffffp-2") * tiny
    assert round_exact(Fraction(x), p, emin, "away") == 0
    for v in (x, -x):
        got = round_float(fi, v, RoundMode.TiesToAway)
        assert got == math.copysign(tiny, v), \
            f"{GF} round_float(TiesToAway) fixed {v.hex()} -> {got}: {UPDATE}"
        assert round_ndarray(fi, np.array([v]), RoundMode.TiesToAway)[0] == 0
        r = fmt.round(v, rounding="rna")
        assert r.value == 0 and r.is_negative == (v < 0)
    # The neighbours of every midpoint, three float64 steps either way.
    xs = []
    for m in midpoints(grid(p, emin, emax)):
        lo = hi = float(m)
        for _ in range(4):
            xs += [lo, hi]
            lo, hi = math.nextafter(lo, 0), math.nextafter(hi, math.inf)
    wrong = [v for v in xs if Fraction(round_float(fi, v, RoundMode.TiesToAway))
             != round_exact(Fraction(v), p, emin, "away")]
    assert wrong == [x], f"{GF} round_float(TiesToAway) wrong at {[w.hex() for w in wrong]}"
    ctx = fpsim.Context(rounding="rna")
    assert [fmt.round(v, ctx).value for v in xs] == \
        [round_exact(Fraction(v), p, emin, "away") for v in xs]


# -- gfloat: negative values into unsigned P3109 formats ----------------------------------

def test_gfloat_round_float_keeps_negative_values_in_unsigned_p3109_formats():
    # spec/p3109.md: an unsigned format has no negative value; the report's
    # rounding gives the NaN (fpsim: with INVALID).  gfloat returns -1.0 for
    # -1.0 and +inf for -inf in binary8p3ue.
    fi = format_info_p3109(8, 3, gfloat.Signedness.Unsigned, gfloat.Domain.Extended)
    got = round_float(fi, -1.0), round_float(fi, -math.inf)
    assert got == (-1.0, math.inf), f"{GF} fixed negative values into {fi}: got {got}: {UPDATE}"
    ue = fpsim.format("binary8p3ue")
    for v in (-1.0, -math.inf, -1e30, -2.0**-20):
        ctx = fpsim.Context()
        r = ue.round(v, ctx)
        assert r.is_nan and r.bits == 0xFF and fpsim.Flag.INVALID in ctx.flags, v


# -- conventions that differ legitimately -------------------------------------------------

def test_e8m0_ties_conventions():
    # A tie 1.5 * 2**e between 2**e and 2**(e+1): fpsim and ml_dtypes round
    # up; gfloat to the even exponent code (OCP MX leaves it open).
    ties = [0.75, 1.5, 3.0, 6.0, 12.0, 1.5 * 2.0**-127]
    up = [2.0 * 2.0 ** (math.frexp(t)[1] - 1) for t in ties]
    even = [0.5, 2.0, 2.0, 8.0, 8.0, 2.0**-127]                   # codes 126, 128, 128, 130
    assert [float(fpsim.E8M0.round(t).value) for t in ties] == up
    assert np.array(ties, np.float32).astype(ml_dtypes.float8_e8m0fnu).astype(float).tolist() \
        == up, f"{ML} changed its E8M0 ties: {UPDATE}"
    assert [round_float(format_info_ocp_e8m0, t) for t in ties] == even, \
        f"{GF} changed its E8M0 ties: {UPDATE}"
