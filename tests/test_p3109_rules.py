"""The rules IEEE P3109 adds to IEEE 754's, under ``Context(p3109=...)``:
the Interim Report v4.0 (the default), v3.2.1 and release 3, against
tests/p3109_oracle.py (the texts transcribed rule by rule, no fpsim), on
every pair of codes of the eight-bit formats for add, sub, mul and div, on
conversions, and on the report's worked cases; ``p3109="ieee"`` keeps IEEE
754's rules (tests/test_p3109_modes.py).

The oracle has no flags (the report defines none); fpsim's flags for the
new cases are checked by hand: x / 0 and a NaN from a negative value raise
INVALID, a negative value clamped to 0 raises INEXACT.
"""

from __future__ import annotations

import functools
import zlib
from fractions import Fraction

import numpy as np
import pytest
from p3109_oracle import (
    INF,
    MODES_R3,
    MODES_V4,
    NAN,
    NINF,
    SATURATIONS,
    eight_bit_formats,
    operate,
    project,
    round_to_precision,
)
from p3109_oracle import (
    SATURATE as SATURATE_OF,
)

import fpsim
from fpsim import arith, ops
from fpsim import array as fa

Flag = fpsim.Flag
OPS = ("add", "sub", "mul", "div")
# the report's saturation modes by fpsim's settings
SATURATE = {"SatFinite": True, "SatPropagate": "satpropagate", "SatNone": "satnone"}
FORMATS = {f.name: f for f in eight_bit_formats()}
# the default run: signed extended, unsigned extended with P = 1 (ties by the
# code's parity) and signed finite, every op, mode and saturation mode; the
# other 27 formats in tox -e exhaustive
QUICK = ["binary8p3se", "binary8p1ue", "binary8p4sf"]


def _bits(name, value, **settings):
    return fpsim.format(name).round(value, **settings).bits


# -- the report's own cases and the examples, by hand ----------------------------

def test_division_by_zero_is_nan():
    f = fpsim.format("binary8p3se")
    for sat in (False, True, "satpropagate", "satnone"):
        for text in ("v4.0", "3"):
            ctx = fpsim.Context(saturate=sat, p3109=text)
            # v4.0 §4.10.5: ωDivide(∗, 0) → NaN (2 / 0, 0 / 0, inf / 0)
            for a in (0x40, 0x00, 0x7F, 0xC0):
                assert arith.div(f.from_bits(a), f.from_bits(0), ctx).bits == 0x80
            assert ctx.flags == Flag.INVALID
        ieee = fpsim.Context(saturate=sat, p3109="ieee")
        got = arith.div(f.from_bits(0x40), f.from_bits(0x00), ieee).bits
        assert got == (0x7E if sat is True else 0x7F) and ieee.flags == Flag.DIVIDE_BY_ZERO
    # the array engine and the reciprocal agree
    codes = fa.div(np.array([0x40, 0x00, 0x7F], np.uint8), np.zeros(3, np.uint8), fmt=f)
    assert codes.tolist() == [0x80] * 3
    assert ops.reciprocal(np.array([0], np.uint8), fmt=f).tolist() == [0x80]
    # v4.0 §4.10.8: ωRSqrt(X) if X <= 0 → NaN
    assert ops.rsqrt(np.array([0], np.uint8), fmt=f).tolist() == [0x80]
    assert ops.rsqrt(np.array([0], np.uint8), fmt=f, p3109="ieee").tolist() == [0x7F]
    # IEEE formats keep IEEE 754's rule whatever the setting
    assert arith.div(fpsim.FP16.round(1), fpsim.FP16.round(0)).bits == 0x7C00


def test_round_to_odd_beyond_max_under_satnone():
    e = fpsim.format("binary8p3se")
    x, y = e.from_bits(0x7E), e.from_bits(0x41)  # 49152 x 2.5
    # v4.0 §4.7.5 l.46: a signed extended format's overflow is +inf, ToOdd too
    assert arith.mul(x, y, rounding="rto", saturate="satnone").bits == 0x7F
    assert arith.mul(x, -y, rounding="rto", saturate="satnone").bits == 0xFF
    assert arith.mul(x, y, rounding="rto", saturate="satnone", p3109="ieee").bits == 0x7E
    # l.40: an unsigned extended format's is M^hi (code 0xFD): 3.3e9 in binary8p3ue
    assert _bits("binary8p3ue", 3.3e9, rounding="rto", saturate="satnone") == 0xFD
    assert _bits("binary8p3ue", 3.3e9, saturate="satnone") == 0xFE  # nearest: +inf


@pytest.mark.parametrize("text", ["v4.0", "v3.2.1", "3"])
def test_negative_values_into_unsigned_formats(text):
    u = "binary8p3ue"
    third = "SatNone" if text == "v4.0" else "OvfInf"
    for mode in MODES_R3 if text == "3" else MODES_V4:
        for sat in ("satfinite", "satpropagate", third.lower()):
            ctx = fpsim.Context(rounding=mode, saturate=sat, p3109=text)
            # a value that rounds to 0 is 0 in every saturation mode (rounding
            # precedes saturation); toward -inf and to odd round it away from 0
            tiny = fpsim.format(u).round(-1e-12, ctx)
            if mode in ("rdn", "rto"):
                away_nan = text == "v4.0" and sat == "satnone"
                assert tiny.bits == (0xFF if away_nan else 0), (mode, sat)
            else:
                assert tiny.bits == 0 and ctx.flags == Flag.INEXACT | Flag.UNDERFLOW
            ctx.clear_flags()
            got = fpsim.format(u).round(-1.0, ctx).bits
            nan = text == "v4.0" and sat == "satnone" and mode not in ("rtz", "rup")
            assert got == (0xFF if nan else 0x00), (mode, sat)
            assert ctx.flags == (Flag.INVALID if nan else Flag.INEXACT)
    # -inf: SatFinite gives 0; SatPropagate 0 in v4.0 and v3.2.1 (release 3 keeps
    # -inf, which no unsigned code holds: fpsim gives the NaN); the third mode the
    # NaN in v4.0, 0 in v3.2.1 (release 3: -inf kept)
    assert _bits(u, "-inf", saturate=True, p3109=text) == 0
    assert _bits(u, "-inf", saturate="satpropagate", p3109=text) == (0xFF if text == "3"
                                                                    else 0)
    assert _bits(u, "-inf", saturate="satnone", p3109=text) == (0 if text == "v3.2.1"
                                                               else 0xFF)
    # IEEE 754's rule: NaN, INVALID
    assert _bits(u, -1.0, saturate=True, p3109="ieee") == 0xFF


def test_negative_results_of_operations_into_unsigned_formats():
    u = fpsim.format("binary8p3ue")
    one, two = u.round(1), u.round(2)
    assert arith.sub(one, two, saturate=True).bits == 0            # -1: M^lo = 0
    assert arith.sub(one, two, saturate="satnone").bits == 0xFF    # NaN
    assert arith.sub(one, two, saturate="satnone", rounding="rtz").bits == 0
    assert arith.sub(one, two, saturate="satnone", p3109="3").bits == 0
    assert arith.sub(one, one, saturate="satnone").bits == 0       # exact 0


def test_the_setting():
    assert fpsim.Context().p3109 is fpsim.modes.P3109.V4_0
    assert fpsim.Context(p3109="release 3").p3109 is fpsim.modes.P3109.RELEASE_3
    assert "p3109='3'" in repr(fpsim.Context(p3109="3"))
    assert "p3109" not in repr(fpsim.Context())
    with pytest.raises(ValueError, match="unknown IEEE P3109 text 'v5'; accepted: 'v4.0'"):
        fpsim.Context(p3109="v5")
    with pytest.raises(TypeError, match="p3109 must be a name"):
        fpsim.Context(p3109=4.0)
    c = fpsim.Context(p3109="ieee")
    import pickle

    assert pickle.loads(pickle.dumps(c)).p3109 is fpsim.modes.P3109.IEEE
    assert c.copy().p3109 is c.p3109


# -- against the texts, every pair of codes ----------------------------------------------

@functools.cache
def _exact_results(name: str, op: str) -> tuple[list, np.ndarray]:
    """The distinct exact results of ``op`` over every pair of codes, and
    for each pair (a * 256 + b) the index of its result."""
    f = FORMATS[name]
    values = [f.decode(c) for c in range(256)]
    index: dict = {}
    where = np.empty(65536, np.int64)
    for i, (x, y) in enumerate((x, y) for x in values for y in values):
        where[i] = index.setdefault(operate(op, x, y), len(index))
    return list(index), where


@functools.cache
def _rounded(name: str, op: str, mode: str) -> tuple[list, np.ndarray]:
    """v4.0 §4.7.4 RoundToPrecision of each distinct exact result (the same
    function in release 3): the distinct rounded values, and for each pair
    the index of its rounded value."""
    f = FORMATS[name]
    distinct, where = _exact_results(name, op)
    index: dict = {}
    to = np.array([index.setdefault(round_to_precision(x, f.p, f.bias, mode), len(index))
                   for x in distinct], np.int64)
    return list(index), to[where]


def _oracle_codes(name: str, op: str, mode: str, sat: str, text: str) -> np.ndarray:
    """The code of every pair: ωProject = Saturate and Encode of the
    rounded value (-1 where the text defines none)."""
    f = FORMATS[name]
    rounded, where = _rounded(name, op, mode)
    saturate = SATURATE_OF[text]
    codes = []
    for r in rounded:
        s = saturate(sat, mode, r, f.signed, f.extended, f.m_lo, f.m_hi)
        codes.append(-1 if s is None else f.encode(s))
    return np.array(codes, np.int64)[where]


def _check_format(name: str, texts=("v4.0", "v3.2.1", "3")) -> int:
    a = np.repeat(np.arange(256, dtype=np.uint8), 256)
    b = np.tile(np.arange(256, dtype=np.uint8), 256)
    fmt = fpsim.format(name)
    compared = 0
    for text in texts:
        for mode in MODES_R3 if text == "3" else MODES_V4:
            for sat in SATURATIONS:
                for op in OPS:
                    want = _oracle_codes(name, op, mode, sat, text)
                    got = getattr(fa, op)(a, b, fmt=fmt, rounding=mode, saturate=SATURATE[sat],
                                          p3109=text).astype(np.int64)
                    defined = want >= 0
                    bad = np.flatnonzero(defined & (got != want))
                    assert not bad.size, (
                        f"{name} {op} {mode} {sat} {text}: {bad.size} differ, e.g. "
                        + ", ".join(f"{hex(i >> 8)},{hex(i & 255)}: want {hex(want[i])} got "
                                    f"{hex(got[i])}" for i in bad[:3]))
                    compared += int(defined.sum())
    return compared


@pytest.mark.parametrize("name", QUICK)
def test_every_pair_of_codes_equals_the_texts(name):
    assert _check_format(name) > 0


@pytest.mark.exhaustive
@pytest.mark.parametrize("name", [n for n in FORMATS if n not in QUICK])
def test_every_pair_of_codes_equals_the_texts_in_every_eight_bit_format(name):
    assert _check_format(name) > 0


def test_the_scalar_path_equals_the_texts_on_a_sample():
    """fpsim.arith (the scalar path), on a sample of pairs of each quick
    format, every mode and saturation mode, v4.0."""
    for name in QUICK:
        fmt, f = fpsim.format(name), FORMATS[name]
        rng = np.random.default_rng(zlib.crc32(name.encode()))
        pairs = rng.integers(0, 256, (150, 2))
        for mode in MODES_V4:
            for sat in SATURATIONS:
                ctx = fpsim.Context(rounding=mode, saturate=SATURATE[sat])
                for op in OPS:
                    for x, y in pairs.tolist():
                        want = project(f, operate(op, f.decode(x), f.decode(y)), mode, sat)
                        got = getattr(arith, op)(fmt.from_bits(x), fmt.from_bits(y), ctx).bits
                        assert got == want, (name, op, mode, sat, hex(x), hex(y))


# -- conversions ---------------------------------------------------------------------------

def _sample_values(f, rng) -> list:
    """Every value of the format and its neighbours in float64, the
    midpoints between consecutive values and beyond ±max, negatives,
    infinities, NaN, tiny values, and random magnitudes."""
    vals = sorted({f.decode(c) for c in range(256)} - {NAN, INF, NINF})
    mids = [(x + y) / 2 for x, y in zip(vals, vals[1:])]
    out = []
    for v in vals + mids + [f.m_hi * 3 / 2, f.m_hi * 2, f.m_hi * 1000]:
        for s in (v, -v):
            out.append(Fraction(s))
            x = float(s)
            out += [Fraction(np.nextafter(x, np.inf)), Fraction(np.nextafter(x, -np.inf))]
    out += [Fraction(x) for x in rng.standard_normal(300) * 2.0 ** rng.integers(-140, 140, 300)]
    return [v for v in out if abs(v) < 2**1000] + [INF, NINF]


def _check_conversions(names, text):
    for name in names:
        f, fmt = FORMATS[name], fpsim.format(name)
        values = _sample_values(f, np.random.default_rng(zlib.crc32(name.encode())))
        floats = np.array([float(v) if isinstance(v, Fraction) else float(v.replace("+", ""))
                           for v in values])
        for mode in MODES_R3 if text == "3" else MODES_V4:
            for sat in SATURATIONS:
                got = fa.encode(floats, fmt, rounding=mode, saturate=SATURATE[sat], p3109=text)
                for v, g in zip(values, got.tolist()):
                    want = project(f, v, mode, sat, text)
                    if want is not None:
                        assert g == want, (name, v, mode, sat, text)


@pytest.mark.parametrize("text", ["v4.0", "v3.2.1", "3"])
def test_conversions_equal_the_texts(text):
    _check_conversions(QUICK, text)


@pytest.mark.exhaustive
@pytest.mark.parametrize("text", ["v4.0", "v3.2.1", "3"])
def test_conversions_equal_the_texts_in_every_eight_bit_format(text):
    _check_conversions([n for n in FORMATS if n not in QUICK], text)


# -- stochastic rounding (v4.0 §4.7.4) ---------------------------------------------------

@pytest.mark.parametrize("fmode, smode", [("sr", "sa"), ("sr_b", "sb"), ("sr_c", "sc")])
def test_stochastic_rounding_equals_the_text(fmode, smode):
    """StochasticA/B/C with N random bits R: RoundAway is ⌊ν·2^N⌋ + R ≥ 2^N,
    ⌊ν·2^(N+1)⌋ + (2R + 1) ≥ 2^(N+1), RNITE(ν·2^N) + R ≥ 2^N; fpsim's sr,
    sr_b and sr_c with sr_bits=N and random_bits=R, every R, N = 1 and 3."""
    for name in ("binary8p3se", "binary8p1ue"):
        f, fmt = FORMATS[name], fpsim.format(name)
        values = [v for v in _sample_values(f, np.random.default_rng(7)) if isinstance(v, Fraction)]
        floats = np.array([float(v) for v in values])
        for n in (1, 3):
            for r in range(1 << n):
                got = fa.encode(floats, fmt, rounding=fmode, sr_bits=n, saturate=True,
                                random_bits=np.full(floats.size, r, np.uint64))
                for v, g in zip(values, got.tolist()):
                    assert g == project(f, v, smode, "SatFinite", r=r, n=n), (name, v, n, r)
