"""Hypothesis properties of ``Format.round``.

Every expectation here is derived from the format parameters of
tests/oracle.py, written from the definitions (never from fpsim's own derived
attributes), with exact :class:`~fractions.Fraction` arithmetic.

Notation used throughout (``x`` nonzero, ``a = |x|``):

* ``q(a) = max(floor(log2 a), emin) - m`` is the quantum (last place) of the
  format at ``a``; the *neighbours* of ``a`` are ``lo = floor(a / 2**q) * 2**q``
  and ``hi = lo + 2**q`` (``hi = lo = a`` when ``a`` is on the grid).  Above
  ``max`` the grid continues with the same rule (unbounded exponent range).
* The *unbounded-range* rounding of ``a`` uses ``floor(log2 a) - m`` (no
  ``emin`` clamp); it decides tininess-after.

The profile is deterministic (``derandomize=True``, no example database) so
that CI runs are reproducible; with ``HYPOTHESIS_PROFILE=dev`` (the conftest's
exploratory profile) these tests run 3000 fresh random examples each.
"""

from __future__ import annotations

import math
import os
from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import fpsim
from fpsim import BF16, E4M3, E4M3FNUZ, E5M2, FP16, FP32, Flag

from oracle import (
    FormatSpec,
    floor_log2,
    overflows_to_infinity,
    pow2,
    round_at_quantum,
    spec_of,
    split_rational,
)

settings.register_profile(
    "fpsim-ci", max_examples=60, derandomize=True, deadline=None, database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "fpsim-deep", max_examples=3000, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
PROFILE = settings.get_profile(
    "fpsim-deep" if os.environ.get("HYPOTHESIS_PROFILE") == "dev" else "fpsim-ci")

E3M2 = fpsim.Format("e3m2", 3, 2, 3, specials="none")

DETERMINISTIC = ("rne", "rna", "rtz", "rup", "rdn", "rto")
INEXACT, UNDERFLOW, OVERFLOW = Flag.INEXACT, Flag.UNDERFLOW, Flag.OVERFLOW
R = 32  # default sr_bits


# The formats under test with the oracle's spec of each (tests/oracle.py:
# field widths, bias and special codes written from the definitions), and
# e3m2, a format without specials made for these tests.
FORMATS = [FP16, BF16, FP32, E4M3, E5M2, E4M3FNUZ, E3M2]
SPECS = [spec_of(f) for f in FORMATS[:-1]] + [FormatSpec("e3m2", 3, 2, 3, "none")]
FMT = {spec.name: fmt for spec, fmt in zip(SPECS, FORMATS)}
SPEC_IDS = [s.name for s in SPECS]
by_spec = pytest.mark.parametrize("spec", SPECS, ids=SPEC_IDS)

# The largest finite value and its code, derived by hand (the oracle derives
# them from the special-code rules; checked against these in
# test_rounding_is_idempotent_on_representable_values).
MAX_BY_HAND = {
    "fp16": (Fraction(65504), 0x7BFF),  # (2**11 - 1) * 2**(15 - 10)
    "bf16": (Fraction(255 * 2**120), 0x7F7F),  # (2**8 - 1) * 2**(127 - 7)
    "fp32": (Fraction((2**24 - 1) * 2**104), 0x7F7FFFFF),  # (2**24 - 1) * 2**(127 - 23)
    # OCP E4M3: S.1111.111 is NaN, so max is S.1111.110 = 1.75 * 2**(15 - 7) = 448
    "e4m3": (Fraction(448), 0x7E),
    "e5m2": (Fraction(57344), 0x7B),  # OCP E5M2: IEEE-like, max = 1.75 * 2**15
    # E4M3FNUZ: every positive code finite, max = 1.875 * 2**(15 - 8) = 240
    "e4m3fnuz": (Fraction(240), 0x7F),
    "e3m2": (Fraction(28), 0x1F),  # e3m2 without specials: max = 1.75 * 2**(7 - 3)
}


def decode(spec: FormatSpec, bits: int) -> tuple:
    """("nan",) | ("inf", negative) | ("fin", negative, magnitude), from the
    oracle's field decoder."""
    kind, sign, value = spec.decode(bits)
    if kind == "nan":
        return ("nan",)
    if kind == "inf":
        return ("inf", bool(sign))
    return ("fin", bool(sign), abs(value))


def signed_value(d: tuple) -> Fraction | float:
    """A decoded result as a number for ordering (inf as float inf)."""
    if d[0] == "inf":
        return -math.inf if d[1] else math.inf
    if d[0] == "fin":
        return -d[2] if d[1] else d[2]
    raise AssertionError("NaN has no value")


def is_subnormal(spec: FormatSpec, bits: int) -> bool:
    return spec.classify(bits) == "subnormal"


def choose(mode: str, a: Fraction, q: int, negative: bool, r: int = 0) -> Fraction:
    """The multiple of 2**q that ``mode`` picks for the magnitude ``a`` of a
    value with the given sign (IEEE 754 §4.3; sr as in fpsim.rounding rule 3)."""
    return round_at_quantum(split_rational(a), q, mode, negative, r, sr_bits=R)[0] * pow2(q)


def expected_overflow(spec: FormatSpec, mode: str, negative: bool) -> tuple:
    if overflows_to_infinity(mode, negative) and spec.overflow_kind != "max":
        return ("inf", negative) if spec.overflow_kind == "inf" else ("nan",)
    return ("fin", negative, spec.max)


# -- input strategies ---------------------------------------------------------

def _represent(draw, value: Fraction, decimal_text: str | None = None):
    """Hand ``value`` to fpsim as a Fraction, a string, a Decimal or a float."""
    choices = ["fraction", "rational-string"]
    if decimal_text is not None:
        choices += ["decimal", "decimal-string"]
    try:
        if Fraction(float(value)) == value:
            choices.append("float")
    except OverflowError:
        pass
    how = draw(st.sampled_from(choices))
    if how == "fraction":
        return value
    if how == "rational-string":
        return f"{value.numerator}/{value.denominator}"
    if how == "decimal":
        return Decimal(decimal_text)
    if how == "decimal-string":
        return decimal_text
    return float(value)


@st.composite
def inputs(draw, spec: FormatSpec):
    """(object handed to fpsim, its exact nonzero value)."""
    kind = draw(st.sampled_from(["pow2", "decimal", "grid", "grid", "beyond-max",
                                 "below-min-normal"]))
    neg = draw(st.booleans())
    text = None
    if kind == "pow2":
        # n * 2**k with n of 1..70 bits and floor(log2) spread over the range
        nb = draw(st.integers(1, 70))
        n = draw(st.integers(1 << (nb - 1), (1 << nb) - 1))
        e = draw(st.integers(spec.emin - spec.m - 4, spec.emax + 3))
        value = n * pow2(e - nb + 1)
    elif kind == "decimal":
        digits = draw(st.integers(1, 10**25))
        lo10 = math.floor((spec.emin - spec.m) * math.log10(2)) - 2
        hi10 = math.ceil(math.log10(spec.max)) + 1
        exp10 = draw(st.integers(lo10, hi10)) - len(str(digits)) + 1
        value = digits * Fraction(10) ** exp10
        text = f"{'-' if neg else ''}{digits}e{exp10}"
    elif kind == "grid":
        # a representable value plus a small dyadic offset: hits ties, exact
        # values and the points right beside them
        m = spec.m
        # boundary codes (zero, the subnormal/normal edge, binade edges, max)
        # are drawn as often as arbitrary ones
        edges = [0, 1, (1 << m) - 1, 1 << m, (1 << m) + 1, (2 << m) - 1, 2 << m,
                 spec.max_code - 1, spec.max_code]
        code = draw(st.one_of(st.integers(0, spec.max_code), st.sampled_from(edges)))
        v = decode(spec, code)[2]
        q = max(code >> spec.m, 1) - spec.bias - spec.m
        k = draw(st.integers(0, 6))
        j = draw(st.integers(-(1 << k), 1 << k))
        value = v + Fraction(j, 1 << k) * pow2(q)
    elif kind == "below-min-normal":
        # just below min_normal, where tininess before and after differ
        k = draw(st.integers(0, 6))
        j = draw(st.integers(1, 1 << k))
        value = spec.min_normal - Fraction(j, 1 << k) * pow2(spec.emin - spec.m)
    else:
        q = floor_log2(spec.max) - spec.m
        k = draw(st.integers(0, 4))
        j = draw(st.integers(0, 5 << k))
        value = spec.max + Fraction(j, 1 << k) * pow2(q)
    assume(value > 0)
    if neg:
        value = -value
    return _represent(draw, value, text), value


# -- helpers ------------------------------------------------------------------

def run(spec: FormatSpec, obj, **kw) -> tuple[int, Flag]:
    ctx = fpsim.Context()
    fmt = FMT[spec.name]
    r = fmt.round(obj, ctx=ctx, **kw)
    assert r.fmt is fmt
    return r.bits, ctx.flags


def sign_ok(spec: FormatSpec, d: tuple, negative: bool) -> bool:
    """A finite result carries the sign of x (zero: -0 only where it exists)."""
    if d[2] == 0 and not spec.has_neg_zero:
        return d[1] is False
    return d[1] == negative


# -- properties -----------------------------------------------------------------

@by_spec
@PROFILE
@given(data=st.data())
def test_result_is_one_of_the_two_neighbours_or_an_overflow_value(spec, data):
    obj, x = data.draw(inputs(spec))
    a, negative = abs(x), x < 0
    lo, hi = spec.neighbours(a)
    r = data.draw(st.integers(0, 2**R - 1))
    for mode in (*DETERMINISTIC, "sr"):
        kw = {"random_bits": r} if mode == "sr" else {}
        bits, _ = run(spec, obj, rounding=mode, **kw)
        d = decode(spec, bits)
        if a <= spec.max:
            assert d[0] == "fin", (mode, x, d)
            assert d[2] in (lo, hi), (mode, x, d, lo, hi)
            assert sign_ok(spec, d, negative)
        else:
            # lo >= max here; the only finite answer is max itself
            assert d in (("fin", negative, spec.max), expected_overflow(spec, mode, negative)), \
                (mode, x, d)


@by_spec
@PROFILE
@given(data=st.data())
def test_directed_modes_bracket_the_exact_value(spec, data):
    obj, x = data.draw(inputs(spec))
    a, negative = abs(x), x < 0
    # rup: r >= x, and rdn: r <= x, wherever the format has a value on that
    # side of x.  Beyond max a format without infinity gives NaN (the OCP
    # stand-in for infinity) or, with no NaN either, max; OVERFLOW says so.
    for mode, beyond in (("rup", x > spec.max), ("rdn", x < -spec.max)):
        bits, flags = run(spec, obj, rounding=mode)
        d = decode(spec, bits)
        if beyond and spec.overflow_kind != "inf":
            assert OVERFLOW in flags
            assert d == expected_overflow(spec, mode, negative)
        else:
            assert d[0] != "nan"
            assert (signed_value(d) >= x) if mode == "rup" else (signed_value(d) <= x)
    # rtz: always finite, |r| <= |x|, same sign; in fact |r| = min(lo, max),
    # the largest representable magnitude not above |x|
    bits, _ = run(spec, obj, rounding="rtz")
    d = decode(spec, bits)
    assert d[0] == "fin" and sign_ok(spec, d, negative)
    assert d[2] <= a
    assert d[2] == min(spec.neighbours(a)[0], spec.max)


@by_spec
@PROFILE
@given(data=st.data())
def test_nearest_modes_pick_the_nearest_neighbour_and_break_ties_correctly(spec, data):
    """Precisely: let lo <= |x| <= hi be the neighbours at quantum u = 2**q(|x|).
    Without OVERFLOW the result magnitude is lo or hi and is within u/2 of
    |x|; when both are exactly u/2 away (a tie) rne takes the one whose
    significand |r|/u is even and rna takes hi.  OVERFLOW is raised exactly
    when that choice exceeds max, and then the result is +-inf (NaN where
    the format has no infinity, max where it has neither)."""
    obj, x = data.draw(inputs(spec))
    a, negative = abs(x), x < 0
    lo, hi = spec.neighbours(a)
    u = pow2(spec.quantum(a))
    for mode in ("rne", "rna"):
        bits, flags = run(spec, obj, rounding=mode)
        d = decode(spec, bits)
        if OVERFLOW not in flags:
            assert d[0] == "fin" and sign_ok(spec, d, negative)
            r = d[2]
            assert r in (lo, hi)
            assert abs(r - a) <= u / 2
            other = hi if r == lo else lo
            assert abs(r - a) <= abs(other - a)
            if lo != hi and a - lo == hi - a:  # a tie
                if mode == "rne":
                    assert (r / u) % 2 == 0, (x, r)
                else:
                    assert r == hi, (x, r)
        else:
            nearest = lo if a - lo < hi - a else hi
            if a - lo == hi - a:
                nearest = hi if mode == "rna" or (lo / u) % 2 == 1 else lo
            assert nearest > spec.max
            assert d == expected_overflow(spec, mode, negative)


@by_spec
@PROFILE
@given(data=st.data())
def test_every_mode_matches_its_neighbour_choice_and_overflow_rule(spec, data):
    obj, x = data.draw(inputs(spec))
    a, negative = abs(x), x < 0
    q = spec.quantum(a)
    r = data.draw(st.integers(0, 2**R - 1))
    for mode in (*DETERMINISTIC, "sr"):
        kw = {"random_bits": r} if mode == "sr" else {}
        bits, flags = run(spec, obj, rounding=mode, **kw)
        chosen = choose(mode, a, q, negative, r)
        if chosen > spec.max:
            assert decode(spec, bits) == expected_overflow(spec, mode, negative), (mode, x)
            assert flags == OVERFLOW | INEXACT
        else:
            d = decode(spec, bits)
            assert d[0] == "fin" and d[2] == chosen and sign_ok(spec, d, negative), (mode, x, d)
            if mode == "rto" and chosen != a:
                assert (chosen / pow2(q)) % 2 == 1  # round to odd: last bit set


@by_spec
@PROFILE
@given(data=st.data())
def test_rounding_is_monotonic(spec, data):
    obj, x = data.draw(inputs(spec))
    # y at or slightly above x, by a dyadic step of up to two quanta
    k = data.draw(st.integers(0, 6))
    j = data.draw(st.integers(0, 2 << k))
    y = x + Fraction(j, 1 << k) * pow2(spec.quantum(abs(x)))
    assume(y != 0)

    def key(bits, v):
        d = decode(spec, bits)
        if d[0] == "nan":  # only an overflow of v makes a NaN here
            return math.inf if v > 0 else -math.inf
        return signed_value(d)

    fmt = FMT[spec.name]
    for mode in DETERMINISTIC:
        rx = key(fmt.round(obj, rounding=mode).bits, x)
        ry = key(fmt.round(y, rounding=mode).bits, y)
        assert rx <= ry, (mode, x, y, rx, ry)


@by_spec
def test_rounding_is_idempotent_on_representable_values(spec):
    """Every finite code, handed back as the Float itself, its exact value and
    (when exact) a Python float, rounds to itself in every mode without
    flags.  Small formats exhaustively, the large ones on a stride."""
    assert (spec.max, spec.max_code) == MAX_BY_HAND[spec.name]
    fmt = FMT[spec.name]
    n_codes = 1 << (1 + spec.e + spec.m)
    stride = 1 if n_codes <= 256 else (97 if n_codes <= 65536 else 2**23 + 11)
    for code in range(0, n_codes, stride):
        d = decode(spec, code)
        if d[0] != "fin":
            continue
        v = -d[2] if d[1] else d[2]
        src = fmt.from_bits(code)
        for mode in (*DETERMINISTIC, "sr"):
            as_float = -float(d[2]) if d[1] else float(d[2])  # keeps -0.0
            for obj in (src, v, as_float):
                ctx = fpsim.Context(rounding=mode, rng=1)
                got = fmt.round(obj, ctx=ctx)
                if d[2] == 0 and not isinstance(obj, fpsim.Float) and type(obj) is not float:
                    assert got.bits == 0  # a Fraction zero has no sign
                else:
                    assert got.bits == code, (mode, hex(code), obj)
                assert ctx.flags == Flag(0)


@by_spec
@PROFILE
@given(data=st.data())
def test_rounding_is_idempotent_on_sampled_codes(spec, data):
    code = data.draw(st.integers(0, (1 << (1 + spec.e + spec.m)) - 1))
    d = decode(spec, code)
    assume(d[0] == "fin")
    v = -d[2] if d[1] else d[2]
    fmt = FMT[spec.name]
    for mode in (*DETERMINISTIC, "sr"):
        for obj in (fmt.from_bits(code), v if v != 0 else fmt.from_bits(code)):
            ctx = fpsim.Context(rounding=mode)
            assert fmt.round(obj, ctx=ctx).bits == code
            assert ctx.flags == Flag(0)


@by_spec
@PROFILE
@given(data=st.data())
def test_sign_symmetry(spec, data):
    """r(-x) == -r(x) for the sign-symmetric modes (rne, rna, rtz, rto, and
    sr with the same random integer); rup(-x) == -rdn(x); same flags.  In a
    format without -0 a zero (and FNUZ's single NaN) is its own negation."""
    _, x = data.draw(inputs(spec))
    x = abs(x)
    r = data.draw(st.integers(0, 2**R - 1))

    def negated(bits):
        d = decode(spec, bits)
        if spec.specials == "fnuz" and (d[0] == "nan" or d[2] == 0):
            return bits
        return bits ^ spec.sign_bit

    pairs = [(m, m) for m in ("rne", "rna", "rtz", "rto", "sr")]
    pairs += [("rup", "rdn"), ("rdn", "rup")]
    for pos_mode, neg_mode in pairs:
        kw = {"random_bits": r} if pos_mode == "sr" else {}
        b_pos, f_pos = run(spec, x, rounding=pos_mode, **kw)
        b_neg, f_neg = run(spec, -x, rounding=neg_mode, **kw)
        assert b_neg == negated(b_pos), (pos_mode, x, hex(b_pos), hex(b_neg))
        assert f_neg == f_pos


@by_spec
@PROFILE
@given(data=st.data())
def test_flags_are_consistent_with_the_result(spec, data):
    """For a finite nonzero x, in every mode, with and without ftz, with
    either tininess:

    * never INVALID or DIVIDE_BY_ZERO; OVERFLOW and UNDERFLOW each imply INEXACT;
    * INEXACT iff the delivered result is not exactly x (an inf/NaN result is
      never x);
    * OVERFLOW iff the mode's choice between the neighbours exceeds max;
    * tiny-before iff 0 < |x| < min_normal; tiny-after iff rounding |x| to
      the format's precision with unbounded exponent range gives less than
      min_normal (for sr: the delivered result, rule 5);
    * without ftz, UNDERFLOW iff tiny and inexact; with ftz a tiny result is
      a zero of x's sign (+0 without -0) with exactly UNDERFLOW|INEXACT,
      and a non-tiny one is unchanged from the ftz=False result.
    """
    obj, x = data.draw(inputs(spec))
    a, negative = abs(x), x < 0
    r = data.draw(st.integers(0, 2**R - 1))
    for mode in (*DETERMINISTIC, "sr"):
        kw = {"random_bits": r} if mode == "sr" else {}
        chosen = choose(mode, a, spec.quantum(a), negative, r)
        for tininess in ("after", "before"):
            if tininess == "before":
                tiny = a < spec.min_normal
            elif mode == "sr":
                tiny = chosen < spec.min_normal
            else:
                tiny = choose(mode, a, floor_log2(a) - spec.m, negative) < spec.min_normal
            plain_bits, plain = run(spec, obj, rounding=mode, tininess=tininess, **kw)
            ftz_bits, flushed = run(spec, obj, rounding=mode, tininess=tininess, ftz=True, **kw)
            for bits, flags in ((plain_bits, plain), (ftz_bits, flushed)):
                assert not flags & (Flag.INVALID | Flag.DIVIDE_BY_ZERO)
                if OVERFLOW in flags or UNDERFLOW in flags:
                    assert INEXACT in flags
                d = decode(spec, bits)
                exact = d[0] == "fin" and (-d[2] if d[1] else d[2]) == x
                assert (INEXACT in flags) == (not exact), (mode, x, d, flags)
                assert (OVERFLOW in flags) == (chosen > spec.max)
            if chosen > spec.max:
                continue
            assert (UNDERFLOW in plain) == (tiny and chosen != a), (mode, tininess, x, plain)
            if tiny:
                assert decode(spec, ftz_bits) == ("fin", negative and spec.has_neg_zero, 0)
                assert flushed == UNDERFLOW | INEXACT
            else:
                assert (ftz_bits, flushed) == (plain_bits, plain)


@by_spec
@PROFILE
@given(data=st.data())
def test_ftz_results_are_never_subnormal(spec, data):
    obj, _ = data.draw(inputs(spec))
    r = data.draw(st.integers(0, 2**R - 1))
    for mode in (*DETERMINISTIC, "sr"):
        kw = {"random_bits": r} if mode == "sr" else {}
        for tininess in ("after", "before"):
            bits, _ = run(spec, obj, rounding=mode, ftz=True, tininess=tininess, **kw)
            assert not is_subnormal(spec, bits), (mode, obj, hex(bits))


@by_spec
@PROFILE
@given(data=st.data())
def test_every_representation_of_a_number_rounds_alike(spec, data):
    """A value given as a Fraction, 'p/q' string, Decimal, decimal string or
    float is read exactly, so all give the same bits and flags."""
    _, x = data.draw(inputs(spec))
    forms = [x, f"{x.numerator}/{x.denominator}"]
    if Fraction(float(x)) == x:
        forms.append(float(x))
    d = x.denominator
    if d & (d - 1) == 0:  # dyadic: exactly n * 5**k / 10**k
        k = d.bit_length() - 1
        text = f"{x.numerator * 5**k}e-{k}"
        forms += [text, Decimal(text)]
    for mode in DETERMINISTIC:
        results = {run(spec, f, rounding=mode) for f in forms}
        assert len(results) == 1, (mode, x, results)


@by_spec
@pytest.mark.parametrize("mode", [*DETERMINISTIC, "sr"])
def test_zero_rounds_to_zero_of_its_sign_without_flags(spec, mode):
    for obj, negative in ((0, False), (Fraction(0), False), (0.0, False), (-0.0, True),
                          ("0", False), ("-0", True), (Decimal("-0"), True)):
        bits, flags = run(spec, obj, rounding=mode, ftz=True)
        assert decode(spec, bits) == ("fin", negative and spec.has_neg_zero, 0)
        assert flags == Flag(0)


# -- daz ----------------------------------------------------------------------

DAZ_SOURCES = [FP16, BF16, E4M3, E5M2, E4M3FNUZ]
DAZ_TARGETS = [FP32, FP16, E4M3, E4M3FNUZ]


@pytest.mark.parametrize("src", DAZ_SOURCES, ids=lambda f: f.name)
@pytest.mark.parametrize("dst", DAZ_TARGETS, ids=lambda f: f.name)
def test_daz_reads_a_subnormal_float_operand_as_a_zero_of_its_sign(src, dst):
    dst_spec = spec_of(dst)
    m = src.mantissa_bits
    sign_bit = 1 << (src.width - 1)
    for negative in (False, True):
        # all subnormal codes: exponent field 0, fraction nonzero
        for frac in range(1, 1 << m, max(1, (1 << m) // 97)):
            code = frac | (sign_bit if negative else 0)
            for mode in ("rne", "rup", "rdn", "rto"):
                ctx = fpsim.Context(rounding=mode, daz=True)
                got = dst.round(src.from_bits(code), ctx=ctx)
                assert decode(dst_spec, got.bits) == ("fin", negative and dst_spec.has_neg_zero, 0)
                assert ctx.flags == Flag(0)


def test_daz_leaves_normal_operands_and_plain_numbers_alone():
    # 0x0400 = FP16 min_normal 2**-14, exactly representable in FP32 (0x38800000)
    assert FP32.round(FP16.from_bits(0x0400), daz=True).bits == 0x38800000
    # without daz the subnormal 0x0001 = 2**-24 converts exactly: FP32 0x33800000
    assert FP32.round(FP16.from_bits(0x0001), daz=False).bits == 0x33800000
    # DAZ is about operands in a binary format; a Fraction is not one
    assert FP16.round(pow2(-24), daz=True).bits == 0x0001
