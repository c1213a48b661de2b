"""The scalar operations against references written here from IEEE 754-2019
with Fractions and integers: rna and rto for add/sub/mul/div/fma/sqrt, the
exact-zero sign rules, remainder, roundToIntegral, scaleB, logB, the
comparisons, and minimum/maximum (§9.6).

The rounding reference (``ref_round`` in tests/oracle.py) takes an exact
nonzero result through ``split(q)``, which returns, at the quantum ``2**q``,
the truncated magnitude ``lo = floor(|x| / 2**q)``, the sign of the discarded
fraction minus 1/2, and whether anything was discarded.  For a rational result ``split`` is a
``divmod``; for a square root it uses the integer square root (the root of
``y = x / 2**(2q)`` has ``floor = isqrt(floor(y))``, is exact iff ``y`` is a
perfect square, and is compared with ``lo + 1/2`` by squaring).  Then:

* quantum ``q = max(e, emin) - m`` with ``e = floor(log2 |x|)``;
* rna: the nearer neighbour, ties away from zero; rto: ``x`` if exact, else
  the neighbour with an odd significand at that quantum;
* overflow when the rounded magnitude exceeds max: OVERFLOW | INEXACT, and
  ±inf for rne/rna, ±max for rto (fpsim's documented choice, like rtz); with
  no infinity (E4M3) the infinite result is NaN; ``saturate`` gives ±max;
* tiny: ``after``, the rounding at quantum ``e - m`` (unbounded exponent) is
  below min_normal; ``before``, ``|x| < min_normal``; UNDERFLOW iff tiny and
  inexact; with ``ftz`` a tiny result is a zero of its sign with
  UNDERFLOW | INEXACT.

Format parameters come from tests/oracle.py: written from the definitions,
not read from fpsim.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

import fpsim
from fpsim import arith

from oracle import (
    SPECS,
    FormatSpec,
    flags_as,
    floor_log2,
    nearest_even,
    pow2,
    ref_rational,
    ref_sqrt,
    round_at_quantum,
    split_rational,
)
from oracle import Flag as RefFlag

Flag = fpsim.Flag
NO_FLAGS = Flag(0)
INEXACT, UNDERFLOW, OVERFLOW = Flag.INEXACT, Flag.UNDERFLOW, Flag.OVERFLOW
INVALID, DIV0 = Flag.INVALID, Flag.DIVIDE_BY_ZERO

NAMES = ["fp16", "bf16", "e5m2", "e4m3", "fp32"]
FMT = {name: fpsim.format(name) for name in NAMES}
MODES = ["rne", "rna", "rtz", "rup", "rdn", "rto"]


def with_fpsim_flags(want):
    """An oracle (kind, sign, value, flags) with the flags as fpsim.Flag."""
    return (*want[:3], flags_as(Flag, want[3]))


def ref_sqrt_via_round_to_odd(spec, x: Fraction, mode):
    """The other construction: round sqrt(x) to odd two bits below the target
    quantum (integer square root), then round that value in the target mode
    (Boldo & Melquiond: round-to-odd with 2 extra bits makes the second
    rounding correct).  Overflow and underflow cannot occur for sqrt here."""
    e = floor_log2(x) // 2
    q = max(e, spec.emin) - spec.m - 2
    y = x / pow2(2 * q)
    r = math.isqrt(y.numerator // y.denominator)
    odd = r if Fraction(r * r) == y else r | 1
    return ref_rational(spec, odd * pow2(q), mode)


# -- operands -----------------------------------------------------------------------

class Gen:
    def __init__(self, spec: FormatSpec, rng):
        self.s, self.rng = spec, rng

    def pick(self, n):
        return int(self.rng.integers(n))

    def sign(self):
        return self.s.sign_bit if self.pick(2) else 0

    def finite(self, lo_field=0, hi_field=None):
        s = self.s
        top = (1 << s.e) - 1
        hi = (top - 1 if s.has_inf else top) if hi_field is None else hi_field
        while True:
            mag = (int(self.rng.integers(lo_field, hi + 1)) << s.m) | int(
                self.rng.integers(0, 1 << s.m))
            if mag <= s.max_code:
                return mag | self.sign()

    def operand(self):
        r = self.pick(8)
        top = (1 << self.s.e) - 1 - self.s.has_inf
        if r == 0:
            return self.finite(0, 1)  # subnormals and zeros
        if r == 1:
            return self.finite(max(top - 1, 0), top)  # near max
        if r == 2:  # simple values: few significand bits, powers of two
            return self.s.encode(Fraction(int(self.rng.integers(1, 8)),
                                          1 << int(self.rng.integers(0, 4)))) | self.sign()
        return self.finite()

    def near(self, v: Fraction, spread=2):
        s = self.s
        c = s.floor_code(abs(v)) + int(self.rng.integers(-spread, spread + 1))
        return min(max(c, 0), s.max_code) | (s.sign_bit if v < 0 else 0)

    def half_ulp_of(self, code):
        """A value that makes ``code + it`` an exact tie (or an exact value)."""
        s = self.s
        v = abs(s.value(code))
        e = max(floor_log2(v), s.emin) if v else s.emin
        half = pow2(e - s.m - 1) * int(self.rng.integers(1, 4))
        if half < s.min_sub:
            half = s.min_sub
        return s.floor_code(half) | self.sign()

    def case(self, op):
        s = self.s
        if op == "sqrt":
            if self.pick(3) == 0:
                root = s.value(self.finite(s.bias // 2, s.bias + s.emax // 2))
                return (self.near(root * root, spread=1) & ~s.sign_bit,)
            return (self.operand() & ~s.sign_bit,)
        a, b, c = self.operand(), self.operand(), self.operand()
        r = self.pick(4)
        if op in ("add", "sub", "fma") and r == 0:  # cancellation
            if op == "fma":
                c = self.near(-s.value(a) * s.value(b), spread=2)
            else:
                b = self.near(s.value(a) * (-1 if op == "add" else 1), spread=3)
        elif op in ("add", "sub") and r == 1:  # ties and near-ties
            b = self.half_ulp_of(a)
        elif op in ("mul", "fma") and r == 1:  # products with p + 1 or p + 2 bits: ties
            b = s.encode(Fraction(int(self.rng.choice([3, 5, 7])), 4)) | self.sign()
        elif op == "div" and r == 1:  # quotients near min_sub and near max
            target = s.min_sub if self.pick(2) else s.max
            b = self.near(s.value(a) / target * Fraction(int(self.rng.integers(4, 17)), 8))
        if op == "div" and s.value(b) == 0:
            b |= 1  # the smallest subnormal: division by zero is tested elsewhere
        return (a, b, c) if op == "fma" else (a, b)


def make_cases(name, op, seed, n):
    gen = Gen(SPECS[name], np.random.default_rng(seed))
    return sorted({gen.case(op) for _ in range(n)})


# -- expected results of the operations ----------------------------------------------

def expected_op(spec, op, codes, mode, **kw):
    vals = [spec.value(c) for c in codes]
    signs = [bool(c & spec.sign_bit) for c in codes]
    if op == "sqrt":
        x = vals[0]
        if x == 0:
            return "finite", int(signs[0]), Fraction(0), NO_FLAGS
        return with_fpsim_flags(ref_sqrt(spec, x, mode, **kw))
    if op in ("add", "sub", "fma"):
        if op == "fma":
            terms = [(vals[0] * vals[1], signs[0] != signs[1]), (vals[2], signs[2])]
        else:
            neg_b = signs[1] != (op == "sub")
            terms = [(vals[0], signs[0]), (-vals[1] if op == "sub" else vals[1], neg_b)]
        exact = terms[0][0] + terms[1][0]
        if exact == 0:
            both_zero_same = (terms[0][0] == 0 and terms[1][0] == 0
                              and terms[0][1] == terms[1][1])
            negative = terms[0][1] if both_zero_same else mode == "rdn"
            return "finite", int(negative), Fraction(0), NO_FLAGS
    else:
        exact = vals[0] * vals[1] if op == "mul" else vals[0] / vals[1]
        if exact == 0:
            return "finite", int(signs[0] != signs[1]), Fraction(0), NO_FLAGS
    return with_fpsim_flags(ref_rational(spec, exact, mode, **kw))


FUNCS = {"add": arith.add, "sub": arith.sub, "mul": arith.mul, "div": arith.div,
         "fma": arith.fma, "sqrt": arith.sqrt}
OPS = list(FUNCS)


def check(name, op, mode, cases, saturate=False, ftz=False, tininess="after"):
    spec = SPECS[name]
    ctx = fpsim.Context(rounding=mode, saturate=saturate, ftz=ftz, tininess=tininess)
    bad = []
    for codes in cases:
        want = expected_op(spec, op, codes, mode, saturate=saturate, ftz=ftz, tininess=tininess)
        ctx.clear_flags()
        r = FUNCS[op](*[FMT[name].from_bits(c) for c in codes], ctx=ctx)
        kind, sign, value = spec.decode(r.bits)
        ok = kind == want[0] and ctx.flags == want[3]
        if ok and kind != "nan":
            ok = (sign, value) == (want[1], want[2])
        if not ok:
            bad.append(([hex(c) for c in codes], "want", want[0], want[1], str(want[2]),
                        str(want[3]), "got", hex(r.bits), str(value), str(ctx.flags)))
    assert not bad, f"{name} {op} {mode}: {len(bad)} mismatches; first: {bad[:3]}"
    return len(cases)


def test_reference_reproduces_hand_derived_results():
    fp16, e4m3 = SPECS["fp16"], SPECS["e4m3"]
    one, half_ulp = Fraction(1), pow2(-11)
    # 1 + 2**-11 is the tie between 1 and 1 + 2**-10: rna away, rne even, rto odd
    assert ref_rational(fp16, one + half_ulp, "rna")[2] == one + 2 * half_ulp
    assert ref_rational(fp16, -(one + half_ulp), "rna")[2] == -(one + 2 * half_ulp)
    assert ref_rational(fp16, one + half_ulp, "rne")[2] == one
    assert ref_rational(fp16, one + half_ulp, "rto")[2] == one + 2 * half_ulp
    assert ref_rational(fp16, one + 3 * half_ulp, "rto")[2] == one + 2 * half_ulp
    # E4M3: 464 is the tie between 448 and 480 (> max): rna overflows to NaN;
    # rto: 449 truncates to 448 (significand 1110b, even), the odd one is 480: overflow
    assert ref_rational(e4m3, Fraction(464), "rna")[0] == "nan"
    assert ref_rational(e4m3, Fraction(449), "rto")[2:] == (
        448, RefFlag.OVERFLOW | RefFlag.INEXACT)
    assert ref_rational(fp16, Fraction(65519), "rto")[2:] == (65504, RefFlag.INEXACT)  # 2047 odd
    assert ref_rational(fp16, pow2(-25), "rna")[2:] == (
        pow2(-24), RefFlag.UNDERFLOW | RefFlag.INEXACT)
    # sqrt(2) in FP16: 1.0110101000001...b; 11 bits 1.0110101000 = 0x3DA8, the
    # next bit is 0 -> rne/rna/rtz/rdn 1448/1024, rup 1449/1024, rto 1449/1024 (odd)
    assert ref_sqrt(fp16, Fraction(2), "rna")[2] == Fraction(1448, 1024)
    assert ref_sqrt(fp16, Fraction(2), "rto")[2] == Fraction(1449, 1024)
    assert ref_sqrt(fp16, Fraction(4), "rto")[2:] == (2, RefFlag(0))
    assert ref_sqrt(fp16, pow2(-24), "rto")[2:] == (pow2(-12), RefFlag(0))


@pytest.mark.parametrize("name", NAMES)
def test_two_sqrt_references_agree(name):
    """Integer-sqrt neighbours and round-to-odd at two extra bits agree."""
    spec = SPECS[name]
    rng = np.random.default_rng(5)
    codes = rng.integers(1, spec.max_code + 1, 300).tolist() + [1, 2, 3, spec.max_code]
    for code in codes:
        x = spec.value(code)
        for mode in MODES:
            assert ref_sqrt(spec, x, mode) == ref_sqrt_via_round_to_odd(spec, x, mode), (
                name, hex(code), mode)


N_CASES = {"fp32": 250, "fp16": 250, "bf16": 250, "e5m2": 200, "e4m3": 200}


# saturation is exercised on the FP8 formats
VARIANTS = [(name, op, mode, variant) for name in NAMES for op in OPS for mode in ("rna", "rto")
            for variant in ("plain", "ftz-before", "saturate")
            if variant != "saturate" or name in ("e4m3", "e5m2")]


@pytest.mark.parametrize("name,op,mode,variant", VARIANTS)
def test_rna_and_rto_match_the_reference(name, op, mode, variant):
    seed = 100 * NAMES.index(name) + 10 * OPS.index(op) + (mode == "rto")
    cases = make_cases(name, op, seed, N_CASES[name])
    kw = {"plain": {}, "ftz-before": {"ftz": True, "tininess": "before"},
          "saturate": {"saturate": True}}[variant]
    assert check(name, op, mode, cases, **kw) > 60


@pytest.mark.parametrize("mode", ["rne", "rtz", "rup", "rdn"])
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("name", ["fp16", "e4m3"])
def test_other_modes_with_ftz_match_the_reference(name, op, mode):
    cases = make_cases(name, op, 7 + OPS.index(op), 150)
    assert check(name, op, mode, cases, ftz=True) > 60


@pytest.mark.exhaustive
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("name", NAMES)
def test_all_modes_large_sample(name, op, mode):
    cases = make_cases(name, op, 10_000 + 100 * NAMES.index(name) + OPS.index(op), 3000)
    check(name, op, mode, cases)
    check(name, op, mode, cases, ftz=True, tininess="before")


# -- exact zero results ---------------------------------------------------------------

def zsign(x):
    assert x.is_zero, x
    return "-" if x.is_negative else "+"


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", NAMES)
def test_exact_zero_sums(name, mode):
    """IEEE 754-2019 §6.3: an exact zero sum of opposite-signed terms (or
    x - x) is +0 in every mode but roundTowardNegative, where it is -0; the
    sum of two zeros of the same sign keeps that sign."""
    spec = SPECS[name]
    fmt = FMT[name]
    rdn = mode == "rdn"
    opp = "-" if rdn else "+"
    pz, nz = fmt.from_bits(0), fmt.from_bits(spec.sign_bit)
    ctx = fpsim.Context(rounding=mode)
    for code in (1, 0x11, spec.max_code, spec.encode(Fraction(1)), spec.encode(Fraction(-3))):
        x = fmt.from_bits(code)
        nx = fmt.from_bits(code ^ spec.sign_bit)
        assert zsign(arith.sub(x, x, ctx)) == opp
        assert zsign(arith.sub(nx, nx, ctx)) == opp
        assert zsign(arith.add(x, nx, ctx)) == opp
        assert zsign(arith.add(nx, x, ctx)) == opp
        # fma: x × 1 - x and x × (-1) + x
        one = fmt.from_bits(spec.encode(Fraction(1)))
        assert zsign(arith.fma(x, one, nx, ctx)) == opp
        assert zsign(arith.fma(nx, one, x, ctx)) == opp
    assert zsign(arith.add(nz, nz, ctx)) == "-"
    assert zsign(arith.add(pz, pz, ctx)) == "+"
    assert zsign(arith.add(pz, nz, ctx)) == opp
    assert zsign(arith.add(nz, pz, ctx)) == opp
    assert zsign(arith.sub(nz, pz, ctx)) == "-"      # -0 + -0
    assert zsign(arith.sub(pz, nz, ctx)) == "+"      # +0 + +0
    assert zsign(arith.sub(pz, pz, ctx)) == opp      # +0 + -0
    assert zsign(arith.sub(nz, nz, ctx)) == opp      # -0 + +0
    # fma with a zero product: the product's sign is the xor of the factors'
    two = fmt.from_bits(spec.encode(Fraction(2)))
    m2 = fmt.from_bits(spec.encode(Fraction(-2)))
    assert zsign(arith.fma(pz, m2, nz, ctx)) == "-"   # -0 + -0
    assert zsign(arith.fma(nz, m2, nz, ctx)) == opp   # +0 + -0
    assert zsign(arith.fma(pz, two, pz, ctx)) == "+"  # +0 + +0
    assert zsign(arith.fma(nz, two, pz, ctx)) == opp  # -0 + +0
    assert zsign(arith.fma(nz, nz, nz, ctx)) == opp   # +0 + -0
    assert ctx.flags == NO_FLAGS


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", NAMES)
def test_rounded_zero_keeps_the_sign_of_the_exact_result(name, mode):
    """A nonzero exact result that rounds to zero has its own sign (§6.3),
    also in fma where the addend is a zero of the other sign."""
    spec = SPECS[name]
    fmt = FMT[name]
    tiny, ntiny = fmt.from_bits(1), fmt.from_bits(1 | spec.sign_bit)
    pz, nz = fmt.from_bits(0), fmt.from_bits(spec.sign_bit)
    ctx = fpsim.Context(rounding=mode)
    # min_sub**2 is far below min_sub/2: rup rounds a positive one up to min_sub
    # (rdn a negative one down to -min_sub), rto to the odd min_sub; the rest to zero
    for a, b, c, negative in ((tiny, tiny, nz, False), (tiny, ntiny, pz, True),
                              (ntiny, ntiny, nz, False)):
        ctx.clear_flags()
        r = arith.fma(a, b, c, ctx)
        away = mode == "rto" or (mode == "rup" and not negative) or (mode == "rdn" and negative)
        assert r.bits == (1 if away else 0) | (spec.sign_bit if negative else 0), (mode, r)
        assert ctx.flags == UNDERFLOW | INEXACT
        ctx.clear_flags()
        r = arith.mul(a, b, ctx)
        assert r.bits == (1 if away else 0) | (spec.sign_bit if negative else 0), (mode, r)


# -- remainder --------------------------------------------------------------------------

@pytest.mark.parametrize("name", NAMES)
def test_remainder_identity(name):
    """remainder(x, y) = x - n y exactly, n the integer nearest x/y (ties to
    even), |r| <= |y|/2, a zero result has x's sign, and no flag is raised."""
    spec = SPECS[name]
    fmt = FMT[name]
    gen = Gen(spec, np.random.default_rng(77 + NAMES.index(name)))
    pairs = [(gen.operand(), gen.operand()) for _ in range(1500)]
    # ties (x/y = k + 1/2) and exact multiples
    for _ in range(300):
        y = gen.finite(spec.bias - 2, spec.bias + 2)
        k = int(gen.rng.integers(-20, 21))
        for mult in (Fraction(2 * k + 1, 2), Fraction(k)):
            x = spec.encode_or_none(spec.value(y) * mult)
            if x is not None:
                pairs.append((x, y))
    ctx = fpsim.Context()
    checked = 0
    for a, b in pairs:
        x, y = spec.value(a), spec.value(b)
        if y == 0:
            continue
        n = nearest_even(x / y)
        r = x - n * y
        assert abs(r) <= abs(y) / 2
        ctx.clear_flags()
        got = arith.remainder(fmt.from_bits(a), fmt.from_bits(b), ctx)
        kind, sign, value = spec.decode(got.bits)
        assert (kind, value) == ("finite", r), (hex(a), hex(b), got, r)
        if r == 0:
            assert sign == (a >> (spec.e + spec.m)), (hex(a), hex(b), got)
        assert ctx.flags == NO_FLAGS, (hex(a), hex(b), ctx.flags)
        checked += 1
    assert checked > 1000


@pytest.mark.parametrize("name", ["fp16", "e5m2"])
def test_remainder_hand_derived(name):
    fmt = FMT[name]
    v = lambda x: fmt.round(x)  # exact small integers and halves
    ctx = fpsim.Context()
    cases = [
        (5, 2, 1),      # 5/2 = 2.5 -> n = 2 (even): 5 - 4 = 1
        (7, 2, -1),     # 3.5 -> 4: 7 - 8 = -1
        (-7, 2, 1),     # -3.5 -> -4: -7 + 8 = 1
        (6, 4, -2),     # 1.5 -> 2: 6 - 8 = -2
        (3, 2, -1),     # 1.5 -> 2: 3 - 4 = -1
        (1, 0.5, 0),    # exact: +0
        (-1, 0.5, -0.0),  # exact: zero with x's sign
        (0.75, 1, -0.25),  # 0.75 -> 1
    ]
    for x, y, r in cases:
        got = arith.remainder(v(x), v(y), ctx)
        assert got.bits == v(r).bits, (x, y, got)
    inf = fmt.round("inf")
    assert arith.remainder(v(3), inf, ctx).bits == v(3).bits   # x REM inf = x
    assert arith.remainder(v(-0.0), v(3), ctx).bits == v(-0.0).bits
    assert ctx.flags == NO_FLAGS


# -- roundToIntegral -----------------------------------------------------------------------

def ref_integral(spec, code, mode):
    """(code, inexact) of rounding a finite code to an integral value."""
    x = spec.value(code)
    negative = bool(code & spec.sign_bit)
    v = abs(x)
    k, _ = round_at_quantum(split_rational(v), 0, mode, negative)
    return spec.encode(Fraction(k)) | (spec.sign_bit if negative else 0), k != v


def integral_codes(name, sample):
    spec = SPECS[name]
    if sample is None:
        return range(1 << spec.width)
    rng = np.random.default_rng(11 + NAMES.index(name))
    # emphasise the interesting magnitudes: below 2**(m+1), where fractions exist
    small = [spec.floor_code(Fraction(int(k), 4)) | s for k in rng.integers(0, 1 << (
        spec.m + 3), sample // 2).tolist() for s in (0, spec.sign_bit)]
    return sorted(set(rng.integers(0, 1 << spec.width, sample).tolist() + small))


def check_integral(name, mode, codes):
    spec = SPECS[name]
    fmt = FMT[name]
    ctx = fpsim.Context(rounding=mode)
    n = 0
    for code in codes:
        kind = spec.decode(code)[0]
        x = fmt.from_bits(code)
        for exact in (False, True):
            ctx.clear_flags()
            r = arith.round_to_integral(x, exact=exact, ctx=ctx)
            if kind == "finite":
                want, inexact = ref_integral(spec, code, mode)
                assert r.bits == want, (hex(code), mode, exact, r)
                assert ctx.flags == (INEXACT if exact and inexact else NO_FLAGS), (
                    hex(code), mode, exact, ctx.flags)
            elif kind == "inf":
                assert (r.bits, ctx.flags) == (code, NO_FLAGS)
            else:  # NaN: quieted, INVALID only for a signaling one
                signaling = spec.has_inf and not (code >> (spec.m - 1)) & 1
                assert r.is_nan and not r.is_signaling
                assert ctx.flags == (INVALID if signaling else NO_FLAGS)
        n += 1
    return n


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", NAMES)
def test_round_to_integral(name, mode):
    sample = None if SPECS[name].width <= 8 else 1500
    assert check_integral(name, mode, integral_codes(name, sample)) > 250


@pytest.mark.exhaustive
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", ["fp16", "bf16"])
def test_round_to_integral_every_code(name, mode):
    assert check_integral(name, mode, integral_codes(name, None)) == 65536


def test_round_to_integral_hand_derived():
    f = fpsim.FP16.round
    cases = [  # (x, mode, result)
        (2.5, "rne", 2), (3.5, "rne", 4), (-2.5, "rne", -2), (2.5, "rna", 3), (-2.5, "rna", -3),
        (2.5, "rtz", 2), (-2.7, "rtz", -2), (2.1, "rup", 3), (-2.1, "rup", -2),
        (2.9, "rdn", 2), (-2.1, "rdn", -3), (2.5, "rto", 3), (4.25, "rto", 5), (3.0, "rto", 3),
        (0.4, "rne", 0.0), (-0.4, "rne", -0.0), (-0.4, "rup", -0.0), (0.4, "rdn", 0.0),
        (0.4, "rup", 1), (-0.4, "rdn", -1), (0.5, "rne", 0.0), (0.5, "rna", 1),
        (0.3, "rto", 1), (-0.3, "rto", -1), (1023.5, "rne", 1024), (1024.5, "rne", 1024),
        (65504, "rup", 65504),
    ]
    for x, mode, want in cases:
        ctx = fpsim.Context(rounding=mode)
        got = arith.round_to_integral(f(x), ctx=ctx)
        assert got.bits == f(want).bits, (x, mode, got)
        assert ctx.flags == NO_FLAGS
        got = arith.round_to_integral(f(x), exact=True, ctx=ctx)
        assert got.bits == f(want).bits
        assert ctx.flags == (INEXACT if f(x).value != f(want).value else NO_FLAGS), (x, mode)


# -- scaleB and logB ------------------------------------------------------------------------

def test_scaleb_hand_derived():
    fp16, e4m3 = FMT["fp16"], FMT["e4m3"]
    one = fp16.from_bits(0x3C00)
    cases = [
        # (format, operand bits, n, mode, result bits, flags)
        (fp16, 0x3C00, -24, "rne", 0x0001, NO_FLAGS),      # 2**-24: the smallest subnormal
        (fp16, 0x3C00, -14, "rne", 0x0400, NO_FLAGS),      # 2**-14: min normal
        (fp16, 0x3C00, 15, "rne", 0x7800, NO_FLAGS),       # 2**15
        (fp16, 0x3C00, 16, "rne", 0x7C00, OVERFLOW | INEXACT),   # 2**16 > max: inf
        (fp16, 0x3C00, 16, "rtz", 0x7BFF, OVERFLOW | INEXACT),   # toward zero: max
        (fp16, 0xBC00, 16, "rup", 0xFBFF, OVERFLOW | INEXACT),   # -2**16 up: -max
        # 2**-25 is half of 2**-24: rne ties to even (0), tiny and inexact
        (fp16, 0x3C00, -25, "rne", 0x0000, UNDERFLOW | INEXACT),
        (fp16, 0x3C00, -25, "rna", 0x0001, UNDERFLOW | INEXACT),
        (fp16, 0xBC00, -25, "rne", 0x8000, UNDERFLOW | INEXACT),
        # 1.5 × 2**-24 = 3 × 2**-25: tie between 1 and 2 (× 2**-24): to even 2
        (fp16, 0x3E00, -24, "rne", 0x0002, UNDERFLOW | INEXACT),
        # 1.5 × 2**-15 = 0.75 × 2**-14 = 768 × 2**-24: subnormal, exact: no flags
        (fp16, 0x3E00, -15, "rne", 0x0300, NO_FLAGS),
        # the smallest subnormal scaled up by 24 is 1 exactly
        (fp16, 0x0001, 24, "rne", 0x3C00, NO_FLAGS),
        (fp16, 0x7C00, -100, "rne", 0x7C00, NO_FLAGS),    # inf stays inf
        (fp16, 0x8000, 30, "rne", 0x8000, NO_FLAGS),      # -0 stays -0
        (fp16, 0x3C00, 0, "rne", 0x3C00, NO_FLAGS),
        (fp16, 0x3C00, -10**6, "rne", 0x0000, UNDERFLOW | INEXACT),
        (fp16, 0x3C00, -10**6, "rup", 0x0001, UNDERFLOW | INEXACT),
        (fp16, 0x3C00, 10**6, "rne", 0x7C00, OVERFLOW | INEXACT),
        # E4M3: 1 × 2**9 = 512 > 448: NaN; saturating would give 448
        (e4m3, 0x38, 9, "rne", 0x7F, OVERFLOW | INEXACT),
        (e4m3, 0x38, 8, "rne", 0x78, NO_FLAGS),           # 256 = 1.000b × 2**8
        (e4m3, 0x38, -9, "rne", 0x01, NO_FLAGS),          # 2**-9: min subnormal
    ]
    for fmt, bits, n, mode, want, flags in cases:
        ctx = fpsim.Context(rounding=mode)
        got = arith.scaleb(fmt.from_bits(bits), n, ctx)
        assert (got.bits, ctx.flags) == (want, flags), (fmt, hex(bits), n, mode, got, ctx.flags)
    ctx = fpsim.Context()
    assert arith.scaleb(one, 3, ctx, rounding="rup").bits == 0x4800  # 8
    nan = arith.scaleb(fp16.from_bits(0x7C01), 3, ctx)
    assert nan.bits == 0x7E01 and ctx.flags == INVALID


@pytest.mark.parametrize("n", [2**62, 10**30, 2**100], ids=["2**62", "10**30", "2**100"])
def test_scaleb_with_huge_exponents(n):
    """x × 2**n for |n| far beyond the format's range is an ordinary
    overflow or underflow: the work must not grow with |n| (a shift by |n|
    bits would need |n|/8 bytes of memory)."""
    fp16 = FMT["fp16"]
    one, none, zero = fp16.from_bits(0x3C00), fp16.from_bits(0xBC00), fp16.from_bits(0x8000)
    for x, k, mode, want, flags in [
        (one, -n, "rne", 0x0000, UNDERFLOW | INEXACT),
        (one, -n, "rup", 0x0001, UNDERFLOW | INEXACT),   # up to the smallest subnormal
        (none, -n, "rne", 0x8000, UNDERFLOW | INEXACT),
        (one, n, "rne", 0x7C00, OVERFLOW | INEXACT),
        (none, n, "rtz", 0xFBFF, OVERFLOW | INEXACT),
        (zero, n, "rne", 0x8000, NO_FLAGS),
        (zero, -n, "rne", 0x8000, NO_FLAGS),
    ]:
        ctx = fpsim.Context(rounding=mode)
        got = arith.scaleb(x, k, ctx)
        assert (got.bits, ctx.flags) == (want, flags), (x, k, mode, got)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", NAMES)
def test_scaleb_matches_the_reference(name, mode):
    spec = SPECS[name]
    gen = Gen(spec, np.random.default_rng(3 + MODES.index(mode)))
    ctx = fpsim.Context(rounding=mode)
    span = spec.emax - spec.emin + spec.m + 4
    for _ in range(300):
        code = gen.operand()
        n = int(gen.rng.integers(-span, span + 1))
        x = spec.value(code)
        ctx.clear_flags()
        got = arith.scaleb(FMT[name].from_bits(code), n, ctx)
        if x == 0:
            want = ("finite", code >> (spec.e + spec.m), Fraction(0), NO_FLAGS)
        else:
            want = with_fpsim_flags(ref_rational(spec, x * pow2(n), mode))
        kind, sign, value = spec.decode(got.bits)
        assert kind == want[0] and ctx.flags == want[3], (hex(code), n, got, want, ctx.flags)
        if kind != "nan":
            assert (sign, value) == want[1:3], (hex(code), n, got, want)


def test_logb_hand_derived():
    fp16, e4m3 = FMT["fp16"], FMT["e4m3"]
    cases = [
        (fp16, 0x3C00, 0x0000, NO_FLAGS),      # logb(1) = 0
        (fp16, 0x3E00, 0x0000, NO_FLAGS),      # logb(1.5) = 0
        (fp16, 0xC800, 0x4200, NO_FLAGS),      # logb(-8) = 3
        (fp16, 0x7BFF, 0x4B80, NO_FLAGS),      # logb(65504) = 15
        (fp16, 0x0400, 0xCB00, NO_FLAGS),      # logb(2**-14) = -14
        (fp16, 0x0001, 0xCE00, NO_FLAGS),      # logb(2**-24) = -24: the true exponent
        (fp16, 0x03FF, 0xCB80, NO_FLAGS),      # logb(1023 × 2**-24) = -15
        (fp16, 0x3800, 0xBC00, NO_FLAGS),      # logb(0.5) = -1
        (fp16, 0x0000, 0xFC00, DIV0),          # logb(0) = -inf, divide by zero
        (fp16, 0x8000, 0xFC00, DIV0),          # logb(-0) too
        (fp16, 0x7C00, 0x7C00, NO_FLAGS),      # logb(inf) = +inf
        (fp16, 0xFC00, 0x7C00, NO_FLAGS),      # logb(-inf) = +inf
        (fp16, 0x7E00, 0x7E00, NO_FLAGS),      # quiet NaN propagates
        (fp16, 0x7C01, 0x7E01, INVALID),       # signaling: quieted, INVALID
        (e4m3, 0x7E, 0x50, NO_FLAGS),          # logb(448) = 8 = 1.000b × 2**3: field 10
        (e4m3, 0x01, 0xD1, NO_FLAGS),          # logb(2**-9) = -9 = -1.001b × 2**3
    ]
    for fmt, bits, want, flags in cases:
        ctx = fpsim.Context()
        got = arith.logb(fmt.from_bits(bits), ctx)
        assert (got.bits, ctx.flags) == (want, flags), (fmt, hex(bits), got, ctx.flags)


@pytest.mark.parametrize("name", ["fp16", "bf16", "fp32"])
def test_logb_is_the_exponent(name):
    spec = SPECS[name]
    gen = Gen(spec, np.random.default_rng(9))
    for _ in range(500):
        code = gen.operand()
        x = spec.value(code)
        if x == 0:
            continue
        got = arith.logb(FMT[name].from_bits(code))
        assert got.value == floor_log2(abs(x)), (hex(code), got)


# -- comparisons ------------------------------------------------------------------------------

CMP = {"eq": arith.eq, "ne": arith.ne, "lt": arith.lt, "le": arith.le, "gt": arith.gt,
       "ge": arith.ge, "unordered": arith.unordered}
# IEEE 754-2019 §5.11 table 5.1/5.3: which predicates are signaling by default
DEFAULT_SIGNALING = {"eq": False, "ne": False, "lt": True, "le": True, "gt": True, "ge": True,
                     "unordered": False}


def truth(op, order):
    """The predicate given order -1/0/1, or None when unordered."""
    if order is None:
        return op in ("ne", "unordered")
    return {"eq": order == 0, "ne": order != 0, "lt": order < 0, "le": order <= 0,
            "gt": order > 0, "ge": order >= 0, "unordered": False}[op]


def order_of(spec, ca, cb):
    ka, sa, va = spec.decode(ca)
    kb, sb, vb = spec.decode(cb)
    if "nan" in (ka, kb):
        return None
    big = spec.max * 4
    va = (-big if sa else big) if ka == "inf" else va
    vb = (-big if sb else big) if kb == "inf" else vb
    return (va > vb) - (va < vb)


def code_subset(name):
    """Every special code and a fixed sample of the others."""
    spec = SPECS[name]
    rng = np.random.default_rng(31)
    keep = {c for c in range(256) if spec.decode(c)[0] != "finite" or (c & 0x7F) in (
        0, 1, spec.max_code)}
    return sorted(keep | set(rng.integers(0, 256, 40).tolist()))


def check_comparisons(name, a_codes, b_codes):
    spec = SPECS[name]
    fmt = FMT[name]
    xs = [fmt.from_bits(c) for c in range(256)]
    snan = [spec.has_inf and spec.decode(c)[0] == "nan" and not (c >> (spec.m - 1)) & 1
            for c in range(256)]
    ctx = fpsim.Context()
    for ca in a_codes:
        for cb in b_codes:
            order = order_of(spec, ca, cb)
            for op, func in CMP.items():
                for signaling in (False, True):
                    ctx.clear_flags()
                    got = func(xs[ca], xs[cb], ctx, signaling=signaling)
                    assert got is truth(op, order), (hex(ca), hex(cb), op)
                    invalid = order is None and (signaling or snan[ca] or snan[cb])
                    assert ctx.flags == (INVALID if invalid else NO_FLAGS), (
                        hex(ca), hex(cb), op, signaling)


@pytest.mark.parametrize("name", ["e5m2", "e4m3"])
def test_comparisons(name):
    """Every code against a sample (all specials included), every predicate,
    quiet and signaling."""
    check_comparisons(name, range(256), code_subset(name))


@pytest.mark.exhaustive
@pytest.mark.parametrize("name", ["e5m2", "e4m3"])
def test_comparisons_every_pair(name):
    check_comparisons(name, range(256), range(256))


def test_comparison_defaults_and_operators():
    fp16 = FMT["fp16"]
    qnan, snan, one = fp16.from_bits(0x7E00), fp16.from_bits(0x7C01), fp16.from_bits(0x3C00)
    for op, func in CMP.items():
        ctx = fpsim.Context()
        func(qnan, one, ctx)
        assert ctx.flags == (INVALID if DEFAULT_SIGNALING[op] else NO_FLAGS), op
        ctx = fpsim.Context()
        func(one, snan, ctx)  # a signaling NaN raises INVALID in every comparison
        assert ctx.flags == INVALID, op
    # -0 == +0; inf ordering
    assert arith.eq(fp16.from_bits(0x8000), fp16.from_bits(0))
    assert arith.lt(fp16.from_bits(0xFC00), fp16.from_bits(0xFBFF))
    assert arith.gt(fp16.from_bits(0x7C00), fp16.from_bits(0x7BFF))
    assert not arith.lt(fp16.from_bits(0x8000), fp16.from_bits(0))
    # Python operators: == quiet, < signaling, into the current context
    with fpsim.localcontext() as ctx:
        ctx.clear_flags()
        assert not (qnan == qnan) and (qnan != qnan)
        assert ctx.flags == NO_FLAGS
        assert not (qnan < one)
        assert ctx.flags == INVALID
        ctx.clear_flags()
        assert (one <= one) and not (one < one) and fp16.from_bits(0x8000) == 0
        assert ctx.flags == NO_FLAGS


def test_comparisons_are_exact_across_formats():
    """Comparisons may mix formats: the exact values are compared.  FP16 and
    BF16 values are FP32 values; their FP32 neighbours differ from them by
    one FP32 ulp, which only an exact comparison sees."""
    rng = np.random.default_rng(21)
    fp32 = SPECS["fp32"]
    checked = 0
    for _ in range(3000):
        sb = SPECS["fp16"] if rng.integers(2) else SPECS["bf16"]
        b = int(rng.integers(0, 1 << sb.width))
        if sb.decode(b)[0] != "finite":
            continue
        vb = sb.value(b)
        if rng.integers(4) == 0:
            a = int(rng.integers(0, 0x7F800000)) | (int(rng.integers(2)) << 31)
        else:
            a = fp32.encode(vb) if vb else (b >> (sb.width - 1)) << 31
            if a & 0x7FFFFFFF:
                a += int(rng.integers(-1, 2))
        va = fp32.value(a)
        x, y = FMT["fp32"].from_bits(a), FMT[sb.name].from_bits(b)
        assert arith.lt(x, y) == (va < vb) and arith.eq(x, y) == (va == vb), (hex(a), hex(b))
        assert arith.gt(x, y) == (va > vb) and arith.ge(y, x) == (vb >= va), (hex(a), hex(b))
        assert arith.le(y, x) == (vb <= va) and arith.ne(y, x) == (va != vb), (hex(a), hex(b))
        checked += 1
    assert checked > 2000


# -- minimum and maximum (IEEE 754-2019 §9.6) -------------------------------------------------

def minmax_expected(spec, ca, cb, op):
    """(code or 'nan', flags) per §9.6: minimum/maximum propagate NaN;
    minimumNumber/maximumNumber return the number when exactly one operand is
    NaN; a signaling NaN always raises INVALID; -0 < +0."""
    ka, kb = spec.decode(ca)[0], spec.decode(cb)[0]
    snan = any(spec.has_inf and k == "nan" and not (c >> (spec.m - 1)) & 1
               for k, c in ((ka, ca), (kb, cb)))
    flags = INVALID if snan else NO_FLAGS
    number = op.endswith("_number")
    if ka == "nan" or kb == "nan":
        if number and not (ka == "nan" and kb == "nan"):
            return (cb if ka == "nan" else ca), flags
        return "nan", flags
    order = order_of(spec, ca, cb)
    if order == 0 and (ca ^ cb) == spec.sign_bit:  # +0 and -0
        order = 1 if cb & spec.sign_bit else -1
    want_min = op.startswith("minimum")
    if order == 0:
        return ca, flags  # the same value and sign: either operand (same code)
    pick_a = (order < 0) == want_min
    return (ca if pick_a else cb), flags


MINMAX = {"minimum": arith.minimum, "maximum": arith.maximum,
          "minimum_number": arith.minimum_number, "maximum_number": arith.maximum_number}


def check_minmax(name, op, a_codes, b_codes):
    spec = SPECS[name]
    xs = [FMT[name].from_bits(c) for c in range(256)]
    ctx = fpsim.Context()
    for ca in a_codes:
        for cb in b_codes:
            for x, y in ((ca, cb), (cb, ca)):
                want, flags = minmax_expected(spec, x, y, op)
                ctx.clear_flags()
                got = MINMAX[op](xs[x], xs[y], ctx)
                if want == "nan":
                    assert got.is_nan and not got.is_signaling, (hex(x), hex(y), got)
                else:
                    assert got.bits == want, (hex(x), hex(y), op, got)
                assert ctx.flags == flags, (hex(x), hex(y), op, ctx.flags)


@pytest.mark.parametrize("op", list(MINMAX))
@pytest.mark.parametrize("name", ["e5m2", "e4m3"])
def test_minimum_maximum(name, op):
    check_minmax(name, op, range(256), code_subset(name))


@pytest.mark.exhaustive
@pytest.mark.parametrize("op", list(MINMAX))
@pytest.mark.parametrize("name", ["e5m2", "e4m3"])
def test_minimum_maximum_every_pair(name, op):
    check_minmax(name, op, range(256), range(256))


def test_minimum_maximum_hand_derived():
    fp16 = FMT["fp16"]
    pz, nz = fp16.from_bits(0), fp16.from_bits(0x8000)
    one, two = fp16.from_bits(0x3C00), fp16.from_bits(0x4000)
    qnan, snan = fp16.from_bits(0x7E05), fp16.from_bits(0x7C05)
    ctx = fpsim.Context()
    assert arith.minimum(pz, nz, ctx).bits == 0x8000 and arith.minimum(nz, pz, ctx).bits == 0x8000
    assert arith.maximum(pz, nz, ctx).bits == 0 and arith.maximum(nz, pz, ctx).bits == 0
    assert arith.minimum(one, two, ctx).bits == 0x3C00 and arith.maximum(one, two).bits == 0x4000
    assert arith.minimum(qnan, one, ctx).bits == 0x7E05   # NaN propagates (its payload)
    assert arith.maximum(one, qnan, ctx).bits == 0x7E05
    assert arith.minimum_number(qnan, one, ctx).bits == 0x3C00
    assert arith.maximum_number(two, qnan, ctx).bits == 0x4000
    assert arith.minimum_number(qnan, qnan, ctx).bits == 0x7E05
    assert ctx.flags == NO_FLAGS
    assert arith.minimum(snan, one, ctx).bits == 0x7E05    # quieted, payload kept
    assert ctx.flags == INVALID
    ctx.clear_flags()
    assert arith.maximum_number(snan, one, ctx).bits == 0x3C00
    assert ctx.flags == INVALID
    ctx.clear_flags()
    assert arith.minimum_number(snan, qnan, ctx).is_quiet_nan and ctx.flags == INVALID
    inf, ninf = fp16.from_bits(0x7C00), fp16.from_bits(0xFC00)
    assert arith.minimum(ninf, inf).bits == 0xFC00 and arith.maximum(ninf, inf).bits == 0x7C00
