"""Hypothesis properties of the arithmetic for FP16, BF16, E4M3, E5M2 and
FP32 in every deterministic rounding mode, with flush-to-zero and
denormals-are-zero on and off.

Expectations are derived here from IEEE 754-2019 with exact Fractions and a
decoder written from the format definitions in tests/oracle.py (never
fpsim's own decoding):

* ``x × 1 = x`` and ``x + (-0) = x`` (§6.3: the sum of two zeros of opposite
  sign is +0 except in roundTowardNegative, where it is -0; of two zeros of
  the same sign, that zero);
* ``add`` and ``mul`` are commutative, bits and flags (NaN results included
  when at most one operand is a NaN, under the default ``ieee`` policy);
* ``fma(a, b, -0) = mul(a, b)``, except that an exact +0 product plus -0 is
  -0 in roundTowardNegative;
* sqrt's rdn and rup results bracket the exact root (``rdn² <= x <= rup²``),
  are equal or adjacent, and every other mode picks one of them;
* remainder is exact: ``x = n y + r`` with ``n`` nearest ``x/y`` (ties to even);
* flags are consistent with the exact result: INEXACT iff the delivered
  result differs from it; OVERFLOW and UNDERFLOW imply INEXACT and
  ``|exact| > max`` or ``0 < |exact| < min_normal``; the result is one of the
  two format neighbours of the exact value, on the side the directed mode asks.

DAZ: a subnormal operand reads as a zero of its sign.  FTZ: a tiny result is
replaced by a zero of its sign, with UNDERFLOW | INEXACT.
"""

from __future__ import annotations

from hypothesis import assume, given, settings
from hypothesis import strategies as st

import fpsim
from fpsim import arith

from oracle import SPECS, FormatSpec, exact_result, nearest_even

Flag = fpsim.Flag
NO_FLAGS = Flag(0)
INEXACT, UNDERFLOW, OVERFLOW = Flag.INEXACT, Flag.UNDERFLOW, Flag.OVERFLOW
INVALID, DIV0 = Flag.INVALID, Flag.DIVIDE_BY_ZERO

NAMES = ["fp16", "bf16", "e4m3", "e5m2", "fp32"]
FMT = {name: fpsim.format(name) for name in NAMES}
MODES = ["rne", "rna", "rtz", "rup", "rdn", "rto"]
EXAMPLES = 150


def daz_read(spec: FormatSpec, code: int, daz: bool) -> int:
    """The operand as the operation sees it: a subnormal is a signed zero under DAZ."""
    if daz and spec.classify(code) == "subnormal":
        return code & spec.sign_bit
    return code


@st.composite
def codes_of(draw, spec, n):
    """Operand codes: uniform, or near zero, near max, and the specials."""
    def one():
        r = draw(st.integers(0, 9))
        if r < 4:
            return draw(st.integers(0, (1 << spec.width) - 1))
        sign = draw(st.sampled_from([0, spec.sign_bit]))
        if r < 6:  # zeros, subnormals, smallest normals
            return draw(st.integers(0, 3 << spec.m)) | sign
        if r < 7:  # around 1
            return draw(st.integers((spec.bias - 2) << spec.m, (spec.bias + 3) << spec.m)) | sign
        if r < 9:  # the top binades
            return draw(st.integers(spec.max_code - (3 << spec.m), spec.max_code)) | sign
        return draw(st.sampled_from([0, 1, spec.max_code, spec.max_code + 1,
                                     spec.max_code + 2, (1 << (spec.width - 1)) - 1])) | sign
    return [one() for _ in range(n)]


@st.composite
def setting(draw, n_operands=2, ftz_daz=True):
    name = draw(st.sampled_from(NAMES))
    spec = SPECS[name]
    mode = draw(st.sampled_from(MODES))
    ftz = draw(st.booleans()) if ftz_daz else False
    daz = draw(st.booleans()) if ftz_daz else False
    codes = draw(codes_of(spec, n_operands))
    return spec, fpsim.Context(rounding=mode, ftz=ftz, daz=daz), codes


def call(func, spec, ctx, *codes):
    ctx.clear_flags()
    fmt = FMT[spec.name]
    r = func(*[fmt.from_bits(c) if isinstance(c, int) else c for c in codes], ctx=ctx)
    assert r.fmt is fmt
    return r.bits, ctx.flags


# -- commutativity ----------------------------------------------------------------------

@settings(max_examples=3 * EXAMPLES)
@given(setting())
def test_add_and_mul_are_commutative(s):
    spec, ctx, (a, b) = s
    assume(not (spec.is_nan(a) and spec.is_nan(b)))  # two NaNs: the first one is chosen
    for func in (arith.add, arith.mul):
        assert call(func, spec, ctx, a, b) == call(func, spec, ctx, b, a), (func, hex(a), hex(b))


@settings(max_examples=EXAMPLES)
@given(setting(3))
def test_fma_is_commutative_in_its_factors(s):
    spec, ctx, (a, b, c) = s
    assume(not (spec.is_nan(a) and spec.is_nan(b)))
    assert call(arith.fma, spec, ctx, a, b, c) == call(arith.fma, spec, ctx, b, a, c)


@settings(max_examples=EXAMPLES)
@given(setting())
def test_sub_is_add_of_the_negation(s):
    spec, ctx, (a, b) = s
    assume(not spec.is_nan(b))  # sub's NaN b keeps its own sign
    nb = b ^ spec.sign_bit
    assert call(arith.sub, spec, ctx, a, b) == call(arith.add, spec, ctx, a, nb)


@settings(max_examples=EXAMPLES)
@given(setting())
def test_negating_an_operand_mirrors_the_product(s):
    """mul(-a, b) = -mul(a, b) with rup and rdn exchanged (non-NaN results)."""
    spec, ctx, (a, b) = s
    mode = ctx.rounding.value
    mirror = {"rup": "rdn", "rdn": "rup"}.get(mode, mode)
    bits, flags = call(arith.mul, spec, ctx, a, b)
    assume(not spec.is_nan(bits))
    mctx = ctx.copy(rounding=mirror)
    for func in (arith.mul, arith.div):
        bits, flags = call(func, spec, ctx, a, b)
        if spec.is_nan(bits):
            continue
        assert call(func, spec, mctx, a ^ spec.sign_bit, b) == (bits ^ spec.sign_bit, flags)


# -- identities ---------------------------------------------------------------------------

def expected_identity(spec, ctx, x):
    """(bits, flags) of an operation that returns x exactly (x × 1, x + -0 for
    nonzero x): DAZ reads x, FTZ flushes a subnormal (tiny) result."""
    kind = spec.classify(x)
    if kind == "snan":
        return spec.quiet(x), INVALID
    if kind == "qnan":
        return x, NO_FLAGS
    if kind == "subnormal":
        if ctx.daz:
            return x & spec.sign_bit, NO_FLAGS
        if ctx.ftz:
            return x & spec.sign_bit, UNDERFLOW | INEXACT
    return x, NO_FLAGS


@settings(max_examples=2 * EXAMPLES)
@given(setting(1))
def test_times_one_is_identity(s):
    spec, ctx, (x,) = s
    one = FMT[spec.name].round(1)
    want = expected_identity(spec, ctx, x)
    assert call(arith.mul, spec, ctx, x, one) == want, hex(x)
    assert call(arith.mul, spec, ctx, one, x) == want, hex(x)
    assert call(arith.div, spec, ctx, x, one) == want, hex(x)


@settings(max_examples=2 * EXAMPLES)
@given(setting(1))
def test_adding_a_zero(s):
    spec, ctx, (x,) = s
    rdn = ctx.rounding.value == "rdn"
    pz, nz = 0, spec.sign_bit
    xr = daz_read(spec, x, ctx.daz)
    for zero in (pz, nz):
        if spec.classify(xr) == "zero":
            # two zeros: same sign -> that sign, opposite -> +0 (rdn: -0)
            want = (xr if xr == zero else (nz if rdn else pz)), NO_FLAGS
        else:
            want = expected_identity(spec, ctx, x)
        assert call(arith.add, spec, ctx, x, zero) == want, (hex(x), zero)
        assert call(arith.add, spec, ctx, zero, x) == want, (hex(x), zero)
        assert call(arith.sub, spec, ctx, x, zero ^ spec.sign_bit) == want, (hex(x), zero)


def test_signed_zero_sums_in_rne():
    for name in NAMES:
        f = FMT[name]
        sb = SPECS[name].sign_bit
        assert arith.add(f.from_bits(sb), f.from_bits(0), rounding="rne").bits == 0
        assert arith.add(f.from_bits(sb), f.from_bits(sb), rounding="rne").bits == sb
        assert arith.add(f.from_bits(sb), f.from_bits(0), rounding="rdn").bits == sb


@settings(max_examples=3 * EXAMPLES)
@given(setting())
def test_fma_with_negative_zero_addend_is_mul(s):
    spec, ctx, (a, b) = s
    nz = spec.sign_bit
    got = call(arith.fma, spec, ctx, a, b, nz)
    want = call(arith.mul, spec, ctx, a, b)
    ar, br = daz_read(spec, a, ctx.daz), daz_read(spec, b, ctx.daz)
    not_finite = ("inf", "qnan", "snan")
    exact_zero_product = (spec.classify(ar) == "zero" and spec.classify(br) not in not_finite
                          or spec.classify(br) == "zero" and spec.classify(ar) not in not_finite)
    if exact_zero_product and ctx.rounding.value == "rdn" and want[0] == 0:
        want = (nz, want[1])  # +0 + -0 = -0 toward -inf
    assert got == want, (hex(a), hex(b))


# -- sqrt ------------------------------------------------------------------------------------

@settings(max_examples=3 * EXAMPLES)
@given(st.sampled_from(NAMES), st.data())
def test_sqrt_brackets_the_exact_root(name, data):
    spec = SPECS[name]
    (x,) = data.draw(codes_of(spec, 1))
    x &= ~spec.sign_bit
    assume(spec.classify(x) not in ("inf", "qnan", "snan"))
    v = spec.value(x)
    d, fd = call(arith.sqrt, spec, fpsim.Context(rounding="rdn"), x)
    u, fu = call(arith.sqrt, spec, fpsim.Context(rounding="rup"), x)
    vd, vu = spec.value(d), spec.value(u)
    assert vd * vd <= v <= vu * vu, (hex(x), hex(d), hex(u))
    assert u in (d, d + 1), (hex(x), hex(d), hex(u))  # equal or adjacent
    exact = d == u
    assert fd == fu == (NO_FLAGS if exact else INEXACT)
    if exact:
        assert vd * vd == v
    mid = (vd + vu) / 2
    for mode in MODES:
        r, f = call(arith.sqrt, spec, fpsim.Context(rounding=mode), x)
        assert r in (d, u) and f == fd, (mode, hex(x))
        if mode in ("rne", "rna") and not exact:
            assert v != mid * mid  # no ties: sqrt of a p-bit number is never a midpoint
            assert r == (d if v < mid * mid else u), (mode, hex(x))
        if mode == "rtz":
            assert r == d
        if mode == "rto" and not exact:
            # of two adjacent codes one is odd: its significand's last bit is set
            assert r == (d if d & 1 else u), (hex(x), hex(r))


# -- remainder ---------------------------------------------------------------------------------

@settings(max_examples=3 * EXAMPLES)
@given(setting(2, ftz_daz=False))
def test_remainder_is_exact(s):
    spec, ctx, (a, b) = s
    assume(spec.classify(a) not in ("inf", "qnan", "snan"))
    assume(spec.classify(b) not in ("inf", "qnan", "snan", "zero"))
    x, y = spec.value(a), spec.value(b)
    r = x - nearest_even(x / y) * y
    bits, flags = call(arith.remainder, spec, ctx, a, b)
    assert flags == NO_FLAGS and spec.value(bits) == r, (hex(a), hex(b), hex(bits))
    assert abs(r) <= abs(y) / 2
    if r == 0:
        assert spec.negative(bits) == spec.negative(a)


# -- flags against the exact result ------------------------------------------------------------

OPS = {"add": arith.add, "sub": arith.sub, "mul": arith.mul, "div": arith.div,
       "fma": arith.fma}


@settings(max_examples=6 * EXAMPLES)
@given(st.sampled_from(list(OPS)), setting(3), st.sampled_from(["after", "before"]))
def test_flags_are_consistent_with_the_exact_result(op, s, tininess):
    spec, ctx, codes = s
    ctx.tininess = tininess
    codes = codes[:3 if op == "fma" else 2]
    read = [daz_read(spec, c, ctx.daz) for c in codes]
    assume(all(spec.classify(c) not in ("inf", "qnan", "snan") for c in read))
    assume(not (op == "div" and spec.classify(read[1]) == "zero"))
    exact = exact_result(op, [spec.value(c) for c in read])
    bits, flags = call(OPS[op], spec, ctx, *codes)
    assert INVALID not in flags and DIV0 not in flags
    mode = ctx.rounding.value
    kind = spec.classify(bits)
    if kind in ("inf", "qnan"):  # an overflow (E4M3: NaN)
        assert flags == OVERFLOW | INEXACT and abs(exact) > spec.max
        assert spec.negative(bits) == (exact < 0)
        assert mode in ("rne", "rna") or (mode == "rup" and exact > 0) or (
            mode == "rdn" and exact < 0)
        return
    v = spec.value(bits)
    if OVERFLOW in flags:
        assert flags == OVERFLOW | INEXACT and abs(exact) > spec.max and abs(v) == spec.max
        return
    if exact == 0:
        assert v == 0 and flags == NO_FLAGS
        return
    assert (INEXACT in flags) == (v != exact), (hex(bits), exact)
    if UNDERFLOW in flags:
        assert INEXACT in flags and abs(exact) < spec.min_normal
    if tininess == "before" and INEXACT in flags and abs(exact) < spec.min_normal:
        assert UNDERFLOW in flags
    if ctx.ftz:  # a subnormal result is tiny: never delivered
        assert v == 0 or abs(v) >= spec.min_normal, (hex(bits), exact)
    flushed = ctx.ftz and v == 0
    if flushed:
        assert flags == UNDERFLOW | INEXACT and abs(exact) < spec.min_normal
        assert spec.negative(bits) == (exact < 0)
        return
    lo, hi = spec.neighbours(exact)
    assert abs(v) in (lo, hi), (hex(bits), exact)
    if v != 0:
        assert (v < 0) == (exact < 0)
    else:
        assert spec.negative(bits) == (exact < 0)  # a rounded zero keeps the exact sign
    if mode == "rdn":
        assert v <= exact
    if mode == "rup":
        assert v >= exact
    if mode == "rtz":
        assert abs(v) <= abs(exact)
    if mode in ("rne", "rna") and lo != hi:
        d_lo, d_hi = abs(exact) - lo, hi - abs(exact)
        if d_lo != d_hi:
            assert abs(v) == (lo if d_lo < d_hi else hi), (hex(bits), exact)
        elif mode == "rna":
            assert abs(v) == hi
