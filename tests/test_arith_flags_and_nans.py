"""Exceptional cases of the arithmetic, each derived by hand from IEEE
754-2019 (§6.2 NaNs, §6.3 signs, §7 exceptions, §9.6 minimum/maximum), the
OCP FP8 spec (E4M3: S.1111.111 is the only NaN, no infinity), and the NaN
policies fpsim documents (``ieee``, ``x86``, ``arm_default_nan``, ``riscv``).

Codes used throughout (derivations from the field layouts):

* FP16 (1.5.10, bias 15): 1 = 0x3C00, 2 = 0x4000, 0.5 = 0x3800, max 65504 =
  0x7BFF, min_normal 2**-14 = 0x0400, min_sub 2**-24 = 0x0001, inf 0x7C00,
  default qNaN 0x7E00 (quiet bit = fraction MSB 0x0200), sNaN e.g. 0x7C01.
* FP32 (1.8.23): 1 = 0x3F800000, inf 0x7F800000, qNaN 0x7FC00000 (quiet bit
  0x00400000), sNaN e.g. 0x7F800001.
* BF16 (1.8.7): 1 = 0x3F80, inf 0x7F80, qNaN 0x7FC0, sNaN 0x7F81.
* E5M2 (1.5.2, bias 15): 1 = 0x3C, inf 0x7C, sNaN 0x7D, qNaN 0x7E/0x7F,
  max 57344 = 0x7B.
* E4M3 (1.4.3, bias 7): 1 = 0x38, 16 = 0x58, 32 = 0x60, 448 = 0x7E (max),
  NaN 0x7F/0xFF only.
* E4M3FNUZ (bias 8): 1 = 0x40, max 240 = 0x7F, the single NaN 0x80, no -0.
"""

from __future__ import annotations

import numpy as np
import pytest

import fpsim
from fpsim import BF16, E4M3, E4M3FNUZ, E5M2, E5M2FNUZ, FP16, FP32, arith

Flag = fpsim.Flag
NONE = Flag(0)
INVALID, DIV0, OVERFLOW = Flag.INVALID, Flag.DIVIDE_BY_ZERO, Flag.OVERFLOW
UNDERFLOW, INEXACT = Flag.UNDERFLOW, Flag.INEXACT

# per format: one, two, +inf (or None), default qNaN, an sNaN, its quieted form, sign bit
F = {
    "fp16": dict(fmt=FP16, one=0x3C00, two=0x4000, inf=0x7C00, qnan=0x7E00, snan=0x7C05,
                 qsnan=0x7E05, sign=0x8000),
    "fp32": dict(fmt=FP32, one=0x3F800000, two=0x40000000, inf=0x7F800000, qnan=0x7FC00000,
                 snan=0x7F812345, qsnan=0x7FC12345, sign=0x80000000),
    "bf16": dict(fmt=BF16, one=0x3F80, two=0x4000, inf=0x7F80, qnan=0x7FC0, snan=0x7F85,
                 qsnan=0x7FC5, sign=0x8000),
    "e5m2": dict(fmt=E5M2, one=0x3C, two=0x40, inf=0x7C, qnan=0x7E, snan=0x7D, qsnan=0x7F,
                 sign=0x80),
}
IEEE_NAMES = list(F)


def run(func, *args, **kw):
    """(result bits, flags) of one call in a fresh context."""
    ctx = fpsim.Context()
    r = func(*args, ctx=ctx, **kw)
    return r.bits, ctx.flags


def vals(name, *codes):
    fmt = F[name]["fmt"]
    return [fmt.from_bits(c) for c in codes]


# -- INVALID: signaling NaN operands -------------------------------------------------------

@pytest.mark.parametrize("name", IEEE_NAMES)
def test_signaling_nan_operand_of_every_operation(name):
    """Any operation on a signaling NaN raises INVALID and (ieee policy)
    returns that NaN quieted, payload and sign kept."""
    f = F[name]
    s, one = f["fmt"].from_bits(f["snan"]), f["fmt"].from_bits(f["one"])
    ns = f["fmt"].from_bits(f["snan"] | f["sign"])
    q, nq = f["qsnan"], f["qsnan"] | f["sign"]
    cases = [
        (arith.add, (s, one), q), (arith.add, (one, s), q), (arith.sub, (one, s), q),
        (arith.sub, (ns, one), nq), (arith.sub, (one, ns), nq),  # b keeps its own sign
        (arith.mul, (s, one), q), (arith.mul, (one, ns), nq), (arith.div, (s, one), q),
        (arith.div, (one, s), q), (arith.fma, (s, one, one), q), (arith.fma, (one, s, one), q),
        (arith.fma, (one, one, s), q), (arith.fma, (one, one, ns), nq), (arith.sqrt, (s,), q),
        (arith.sqrt, (ns,), nq), (arith.remainder, (s, one), q), (arith.remainder, (one, s), q),
        (arith.round_to_integral, (s,), q), (arith.scaleb, (s, 3), q), (arith.logb, (s,), q),
        (arith.next_up, (s,), q), (arith.next_down, (ns,), nq), (arith.minimum, (s, one), q),
        (arith.maximum, (one, s), q),
        # minimumNumber / maximumNumber return the number, still INVALID
        (arith.minimum_number, (s, one), f["one"]), (arith.maximum_number, (one, ns), f["one"]),
    ]
    for func, args, want in cases:
        assert run(func, *args) == (want, INVALID), (func.__name__, args)


@pytest.mark.parametrize("name", IEEE_NAMES)
def test_signaling_nan_in_comparisons(name):
    f = F[name]
    s, one = f["fmt"].from_bits(f["snan"]), f["fmt"].from_bits(f["one"])
    for func in (arith.eq, arith.ne, arith.lt, arith.le, arith.gt, arith.ge, arith.unordered):
        for signaling in (False, True):
            ctx = fpsim.Context()
            func(s, one, ctx, signaling=signaling)
            assert ctx.flags == INVALID, func.__name__
            ctx = fpsim.Context()
            func(one, f["fmt"].from_bits(f["qnan"]), ctx, signaling=signaling)
            assert ctx.flags == (INVALID if signaling else NONE), func.__name__


# -- INVALID: operations with no meaningful result -----------------------------------------

@pytest.mark.parametrize("name", IEEE_NAMES)
def test_invalid_operations_give_the_default_nan(name):
    f = F[name]
    fmt, sg = f["fmt"], f["sign"]
    inf, ninf = fmt.from_bits(f["inf"]), fmt.from_bits(f["inf"] | sg)
    zero, nzero = fmt.from_bits(0), fmt.from_bits(sg)
    one, none = fmt.from_bits(f["one"]), fmt.from_bits(f["one"] | sg)
    tiny_neg = fmt.from_bits(1 | sg)
    maxneg = fmt.from_bits((f["inf"] - 1) | sg)
    qnan = f["qnan"]
    cases = [
        (arith.add, (inf, ninf)), (arith.add, (ninf, inf)), (arith.sub, (inf, inf)),
        (arith.sub, (ninf, ninf)),                                  # inf - inf
        (arith.mul, (zero, inf)), (arith.mul, (inf, nzero)), (arith.mul, (nzero, ninf)),
        (arith.div, (zero, zero)), (arith.div, (nzero, zero)), (arith.div, (zero, nzero)),
        (arith.div, (inf, inf)), (arith.div, (ninf, inf)), (arith.div, (inf, ninf)),
        (arith.sqrt, (none,)), (arith.sqrt, (tiny_neg,)), (arith.sqrt, (maxneg,)),
        (arith.sqrt, (ninf,)),
        (arith.fma, (zero, inf, one)), (arith.fma, (inf, zero, one)),
        (arith.fma, (nzero, inf, inf)), (arith.fma, (ninf, zero, ninf)),
        (arith.fma, (inf, one, ninf)), (arith.fma, (one, ninf, inf)),  # inf - inf in fma
        (arith.remainder, (one, zero)), (arith.remainder, (one, nzero)),
        (arith.remainder, (inf, one)), (arith.remainder, (ninf, inf)),
        (arith.remainder, (inf, zero)),
        (arith.remainder, (zero, zero)),
    ]
    for func, args in cases:
        assert run(func, *args) == (qnan, INVALID), (func.__name__, [a.bits for a in args])


@pytest.mark.parametrize("name", IEEE_NAMES)
def test_fma_zero_times_inf_with_a_nan_addend(name):
    """fma(0, inf, c) and fma(inf, 0, c): INVALID even when c is a quiet NaN
    (IEEE 754-2019 §7.2(c) leaves that case to the implementation; fpsim
    documents INVALID), and the result is then c's NaN (ieee policy)."""
    f = F[name]
    fmt, sg = f["fmt"], f["sign"]
    inf, zero, nzero = fmt.from_bits(f["inf"]), fmt.from_bits(0), fmt.from_bits(sg)
    payload_nan = f["qsnan"] | sg  # a negative quiet NaN with a payload
    c = fmt.from_bits(payload_nan)
    assert run(arith.fma, zero, inf, c) == (payload_nan, INVALID)
    assert run(arith.fma, inf, nzero, c) == (payload_nan, INVALID)
    # a signaling c: quieted, INVALID (once)
    assert run(arith.fma, zero, inf, fmt.from_bits(f["snan"])) == (f["qsnan"], INVALID)
    # a quiet NaN c with a finite product: no flag
    assert run(arith.fma, fmt.from_bits(f["one"]), inf, c) == (payload_nan, NONE)


def test_sqrt_of_negative_zero_is_negative_zero_without_flags():
    for name in IEEE_NAMES:
        f = F[name]
        assert run(arith.sqrt, f["fmt"].from_bits(f["sign"])) == (f["sign"], NONE)
        assert run(arith.sqrt, f["fmt"].from_bits(0)) == (0, NONE)
        assert run(arith.sqrt, f["fmt"].from_bits(f["inf"])) == (f["inf"], NONE)
    assert run(arith.sqrt, E4M3.from_bits(0x80)) == (0x80, NONE)


def test_e4m3_invalid_operations():
    one, zero, nzero = E4M3.from_bits(0x38), E4M3.from_bits(0), E4M3.from_bits(0x80)
    assert run(arith.div, zero, zero) == (0x7F, INVALID)
    assert run(arith.div, nzero, zero) == (0x7F, INVALID)     # the default NaN is positive
    assert run(arith.sqrt, E4M3.from_bits(0xB8)) == (0x7F, INVALID)
    assert run(arith.remainder, one, zero) == (0x7F, INVALID)
    # E4M3's NaN is quiet: propagating it raises nothing
    assert run(arith.add, E4M3.from_bits(0xFF), one) == (0xFF, NONE)
    assert run(arith.mul, one, E4M3.from_bits(0x7F)) == (0x7F, NONE)


# -- DIVIDE_BY_ZERO -----------------------------------------------------------------------------

@pytest.mark.parametrize("name", IEEE_NAMES)
def test_division_by_zero_signs(name):
    f = F[name]
    fmt, sg, inf = f["fmt"], f["sign"], f["inf"]
    one, tiny, big = f["one"], 1, inf - 1
    for a, b, want in [
        (one, 0, inf), (one, sg, inf | sg), (one | sg, 0, inf | sg), (one | sg, sg, inf),
        (tiny, 0, inf), (big | sg, 0, inf | sg),
    ]:
        assert run(arith.div, fmt.from_bits(a), fmt.from_bits(b)) == (want, DIV0), (a, b)
    # inf / 0 is an exact infinity, no flag; 0 / 0 is INVALID, not DIVIDE_BY_ZERO
    assert run(arith.div, fmt.from_bits(inf), fmt.from_bits(sg)) == (inf | sg, NONE)
    assert run(arith.div, fmt.from_bits(0), fmt.from_bits(0))[1] == INVALID
    # logB(±0) = -inf, DIVIDE_BY_ZERO
    assert run(arith.logb, fmt.from_bits(0)) == (inf | sg, DIV0)
    assert run(arith.logb, fmt.from_bits(sg)) == (inf | sg, DIV0)


def test_division_by_zero_in_formats_without_infinity():
    one, none, zero, nzero = (E4M3.from_bits(c) for c in (0x38, 0xB8, 0x00, 0x80))
    # no infinity: NaN of the result's sign, DIVIDE_BY_ZERO
    assert run(arith.div, one, zero) == (0x7F, DIV0)
    assert run(arith.div, one, nzero) == (0xFF, DIV0)
    assert run(arith.div, none, zero) == (0xFF, DIV0)
    assert run(arith.div, none, nzero) == (0x7F, DIV0)
    # saturating: ±max (448 = 0x7E)
    for a, b, want in ((one, zero, 0x7E), (one, nzero, 0xFE), (none, nzero, 0x7E)):
        bits, flags = run(arith.div, a, b, saturate=True)
        assert bits == want and DIV0 in flags and OVERFLOW not in flags, (a, b, bits, flags)
    # E5M2 saturating: ±57344 = 0x7B
    bits, flags = run(arith.div, E5M2.from_bits(0xBC), E5M2.from_bits(0x00), saturate=True)
    assert bits == 0xFB and DIV0 in flags
    # FNUZ: the single NaN 0x80
    assert run(arith.div, E4M3FNUZ.from_bits(0x40), E4M3FNUZ.from_bits(0x00)) == (0x80, DIV0)
    assert run(arith.logb, E4M3.from_bits(0x00)) == (0xFF, DIV0)  # -inf -> NaN of its sign


# -- OVERFLOW: the first overflowing values ------------------------------------------------------

FP16_CASES = [
    # FP16 max is 65504 = (2 - 2**-10) × 2**15; ulp there is 32, so 65520 is the
    # midpoint between max and 2**16 (whose significand, 1.0, is "even").
    # (a, b, mode, result, flags)
    (65504, 16, "rne", 0x7C00, OVERFLOW | INEXACT),             # tie -> 65536: overflow
    (65504, 15.9921875, "rne", 0x7BFF, INEXACT),                # 16 - 2**-7: below the tie
    (65504, 16, "rna", 0x7C00, OVERFLOW | INEXACT),
    (65504, 15.9921875, "rna", 0x7BFF, INEXACT),
    (65504, 32, "rtz", 0x7BFF, OVERFLOW | INEXACT),             # 65536 exactly: > max
    (65504, 31.984375, "rtz", 0x7BFF, INEXACT),                 # 32 - 2**-6
    (65504, 2**-24, "rup", 0x7C00, OVERFLOW | INEXACT),         # anything above max: inf
    (65504, 0, "rup", 0x7BFF, NONE),
    (65504, 32, "rdn", 0x7BFF, OVERFLOW | INEXACT),             # positive, toward -inf: max
    (65504, 31.984375, "rdn", 0x7BFF, INEXACT),
    (-65504, -2**-24, "rdn", 0xFC00, OVERFLOW | INEXACT),       # negative, toward -inf: -inf
    (-65504, -2**-24, "rup", 0xFBFF, INEXACT),                  # toward +inf: stays -max
    (-65504, -32, "rup", 0xFBFF, OVERFLOW | INEXACT),
    (-65504, -16, "rne", 0xFC00, OVERFLOW | INEXACT),
    (-65504, -32, "rtz", 0xFBFF, OVERFLOW | INEXACT),
    # rto: 65520 truncates to 65504 (significand 2047, odd): no overflow;
    # 65536 is exact with an unbounded exponent, above max: overflow, max
    (65504, 16, "rto", 0x7BFF, INEXACT),
    (65504, 31.984375, "rto", 0x7BFF, INEXACT),
    (65504, 32, "rto", 0x7BFF, OVERFLOW | INEXACT),
]


@pytest.mark.parametrize("a,b,mode,want,flags", FP16_CASES)
def test_fp16_first_overflowing_sums(a, b, mode, want, flags):
    x, y = FP16.round(a), FP16.round(b)
    assert x.value == a and y.value == b  # operands are exact
    assert run(arith.add, x, y, rounding=mode) == (want, flags)
    assert run(arith.sub, x, -y, rounding=mode) == (want, flags)


@pytest.mark.parametrize("mode,want", [
    # E4M3: max 448 = 1.110b × 2**8, ulp 32; 464 is the tie with 480 (1.111b × 2**8,
    # which would be the NaN code), and 480 > max
    ("rne", [(16, 0x7E, INEXACT), (32, 0x7F, OVERFLOW | INEXACT)]),    # 464 ties to even 448
    ("rna", [(16, 0x7F, OVERFLOW | INEXACT), (8, 0x7E, INEXACT)]),
    ("rtz", [(16, 0x7E, INEXACT), (32, 0x7E, OVERFLOW | INEXACT)]),
    ("rup", [(2**-9, 0x7F, OVERFLOW | INEXACT)]),
    ("rdn", [(16, 0x7E, INEXACT), (32, 0x7E, OVERFLOW | INEXACT)]),
    # rto: 448 + anything below 32 truncates to 448 (even): the odd neighbour 480 > max
    ("rto", [(2**-9, 0x7E, OVERFLOW | INEXACT), (32, 0x7E, OVERFLOW | INEXACT)]),
])
def test_e4m3_first_overflowing_sums(mode, want):
    for b, bits, flags in want:
        assert run(arith.add, E4M3.round(448), E4M3.round(b), rounding=mode) == (bits, flags)
        sat = bits if bits != 0x7F else 0x7E
        assert run(arith.add, E4M3.round(448), E4M3.round(b), rounding=mode,
                   saturate=True) == (sat, flags)
        assert run(arith.add, E4M3.round(-448), E4M3.round(-b), rounding=mode,
                   saturate=True)[0] == sat | 0x80


def test_overflow_of_products_and_quotients():
    # FP16 256 × 256 = 65536 > max
    assert run(arith.mul, FP16.round(256), FP16.round(256)) == (0x7C00, OVERFLOW | INEXACT)
    assert run(arith.mul, FP16.round(256), FP16.round(-256), rounding="rtz") == (
        0xFBFF, OVERFLOW | INEXACT)
    # 1 / 2**-24 = 2**24 > max
    assert run(arith.div, FP16.from_bits(0x3C00), FP16.from_bits(0x0001)) == (
        0x7C00, OVERFLOW | INEXACT)
    # E5M2 57344 × 2: overflow; saturating gives max 0x7B
    assert run(arith.mul, E5M2.from_bits(0x7B), E5M2.from_bits(0x40), saturate=True) == (
        0x7B, OVERFLOW | INEXACT)
    # FNUZ: no infinity: overflow gives the NaN 0x80 (240 × 2 = 480 > 240)
    assert run(arith.mul, E4M3FNUZ.round(240), E4M3FNUZ.round(2)) == (0x80, OVERFLOW | INEXACT)
    assert run(arith.mul, E4M3FNUZ.round(240), E4M3FNUZ.round(-2), saturate=True) == (
        0xFF, OVERFLOW | INEXACT)


# -- UNDERFLOW: tininess before and after rounding ------------------------------------------------

# a = 0x3BFE = 1 - 2**-10, b = 0x0401 = 2**-14 (1 + 2**-10):
# a × b = 2**-14 (1 - 2**-20), below min_normal 2**-14 by 2**-34.
# With an unbounded exponent, the 11-bit numbers just below 2**-14 are spaced
# 2**-25, so rne/rna/rup reach 2**-14 (not tiny after rounding) while rtz/rdn
# give 2**-14 - 2**-25 (tiny).  The delivered result (subnormal quantum 2**-24)
# is 0x0400 or 0x03FF = 2**-14 - 2**-24.
@pytest.mark.parametrize("mode,bits,after,before", [
    ("rne", 0x0400, INEXACT, UNDERFLOW | INEXACT),
    ("rna", 0x0400, INEXACT, UNDERFLOW | INEXACT),
    ("rup", 0x0400, INEXACT, UNDERFLOW | INEXACT),
    ("rtz", 0x03FF, UNDERFLOW | INEXACT, UNDERFLOW | INEXACT),
    ("rdn", 0x03FF, UNDERFLOW | INEXACT, UNDERFLOW | INEXACT),
    ("rto", 0x03FF, UNDERFLOW | INEXACT, UNDERFLOW | INEXACT),
])
def test_tininess_before_and_after_rounding_for_mul(mode, bits, after, before):
    a, b = FP16.from_bits(0x3BFE), FP16.from_bits(0x0401)
    assert a.value * b.value == (1 - 2**-20) * 2**-14
    assert run(arith.mul, a, b, rounding=mode) == (bits, after)
    assert run(arith.mul, a, b, rounding=mode, tininess="before") == (bits, before)
    # negated: the mirror image (rup <-> rdn)
    mirror = {"rup": "rdn", "rdn": "rup"}.get(mode, mode)
    assert run(arith.mul, -a, b, rounding=mirror) == (bits | 0x8000, after)
    # with FTZ, only a tiny result is flushed: after -> kept if it reached min_normal
    ftz_bits, ftz_flags = run(arith.mul, a, b, rounding=mode, ftz=True)
    if UNDERFLOW in after:
        assert (ftz_bits, ftz_flags) == (0x0000, UNDERFLOW | INEXACT)
    else:
        assert (ftz_bits, ftz_flags) == (0x0400, INEXACT)
    assert run(arith.mul, a, b, rounding=mode, ftz=True, tininess="before") == (
        0x0000, UNDERFLOW | INEXACT)


def test_exact_tiny_results_raise_no_underflow():
    # 2**-14 × 0.5 = 2**-15 = 0x0200 exactly: tiny but exact: no flag
    assert run(arith.mul, FP16.from_bits(0x0400), FP16.from_bits(0x3800)) == (0x0200, NONE)
    assert run(arith.mul, FP16.from_bits(0x0400), FP16.from_bits(0x3800),
               tininess="before") == (0x0200, NONE)
    # 2**-14 × (1 + 2**-10) × 0.5: 0x0200 + half a subnormal ulp: tie -> even 0x0200
    assert run(arith.mul, FP16.from_bits(0x0401), FP16.from_bits(0x3800)) == (
        0x0200, UNDERFLOW | INEXACT)


# -- FTZ and DAZ ----------------------------------------------------------------------------------

H = FP16.from_bits


def test_ftz_flushes_tiny_results_of_each_operation():
    cases = [
        # (func, args, exact result bits without ftz)
        (arith.mul, (H(0x0400), H(0x3800)), 0x0200),        # 2**-15
        (arith.add, (H(0x0401), H(0x8400)), 0x0001),        # 2**-14(1 + 2**-10) - 2**-14
        (arith.sub, (H(0x0400), H(0x0001)), 0x03FF),
        (arith.add, (H(0x8401), H(0x0400)), 0x8001),        # negative: -0 when flushed
        (arith.div, (H(0x0400), H(0x4000)), 0x0200),
        (arith.fma, (H(0x0400), H(0x3800), H(0x0000)), 0x0200),
        (arith.fma, (H(0x0400), H(0xB800), H(0x8000)), 0x8200),
        (arith.scaleb, (H(0x3C00), -20), 0x0010),
    ]
    for func, args, bits in cases:
        assert run(func, *args) == (bits, NONE), func.__name__
        assert run(func, *args, ftz=True) == (bits & 0x8000, UNDERFLOW | INEXACT), func.__name__
    # results at least min_normal are untouched
    assert run(arith.mul, H(0x0800), H(0x3800), ftz=True) == (0x0400, NONE)
    # sqrt never has a tiny result in FP16: sqrt(2**-24) = 2**-12 (field 3: 0x0C00)
    assert run(arith.sqrt, H(0x0001), ftz=True) == (0x0C00, NONE)


def test_daz_reads_subnormal_operands_as_zero():
    sub, nsub = H(0x0001), H(0x8001)
    one = H(0x3C00)
    # add: 1 + 2**-24 rounds to 1 (inexact); with DAZ it is 1 + 0, exact
    assert run(arith.add, one, sub) == (0x3C00, INEXACT)
    assert run(arith.add, one, sub, daz=True) == (0x3C00, NONE)
    # the sum of two subnormals of opposite sign: +0 (or -0 in rdn)
    assert run(arith.add, sub, nsub, daz=True, rounding="rdn") == (0x8000, NONE)
    assert run(arith.add, nsub, nsub, daz=True) == (0x8000, NONE)   # -0 + -0
    # mul: 2**-24 × 1024 = 2**-14; with DAZ, 0 × 1024 = +0, -0 for a negative operand
    assert run(arith.mul, sub, H(0x6400)) == (0x0400, NONE)
    assert run(arith.mul, sub, H(0x6400), daz=True) == (0x0000, NONE)
    assert run(arith.mul, nsub, H(0x6400), daz=True) == (0x8000, NONE)
    # div: 1 / 2**-24 overflows; with DAZ it is 1 / 0
    assert run(arith.div, one, sub) == (0x7C00, OVERFLOW | INEXACT)
    assert run(arith.div, one, nsub, daz=True) == (0xFC00, DIV0)
    assert run(arith.div, sub, sub, daz=True) == (0x7E00, INVALID)  # 0/0
    # fma: 1 × 1 - 2**-24 = 1 - 2**-24 rounds to 1 (inexact); with DAZ exact
    assert run(arith.fma, one, one, nsub) == (0x3C00, INEXACT)
    assert run(arith.fma, one, one, nsub, daz=True) == (0x3C00, NONE)
    assert run(arith.fma, sub, H(0x7C00), one, daz=True) == (0x7E00, INVALID)  # 0 × inf
    # sqrt: sqrt(-2**-24) is INVALID; with DAZ it is sqrt(-0) = -0, no flag
    assert run(arith.sqrt, nsub) == (0x7E00, INVALID)
    assert run(arith.sqrt, nsub, daz=True) == (0x8000, NONE)
    assert run(arith.sqrt, sub, daz=True) == (0x0000, NONE)
    # the context setting works as the keyword does
    ctx = fpsim.Context(daz=True)
    assert arith.mul(sub, H(0x6400), ctx).bits == 0x0000 and ctx.flags == NONE


# -- NaN policies ---------------------------------------------------------------------------------

S32 = FP32.from_bits
QA, QB = 0x7FC0000A, 0xFFC0000B          # quiet NaNs with payloads 0xA, 0xB
SA, SB = 0x7F80000A, 0xFF80000B          # signaling NaNs with the same payloads
ONE32 = 0x3F800000


@pytest.mark.parametrize("a,b,ieee,x86,flags", [
    (QA, QB, QA, QA, NONE),             # two quiet NaNs: the first
    (ONE32, QB, QB, QB, NONE),          # one NaN: that one, its sign kept
    (QA, SB, QB, QA, INVALID),          # ieee prefers the signaling one, x86 the first
    (SA, QB, QA, QA, INVALID),          # (quieted: 0x7F80000A | 0x400000)
    (SA, SB, QA, QA, INVALID),
    (ONE32, SB, QB, QB, INVALID),
])
def test_nan_propagation_policies(a, b, ieee, x86, flags):
    for func in (arith.add, arith.mul, arith.div, arith.remainder, arith.minimum):
        assert run(func, S32(a), S32(b)) == (ieee, flags), func.__name__
        assert run(func, S32(a), S32(b), nan="ieee") == (ieee, flags)
        assert run(func, S32(a), S32(b), nan="x86") == (x86, flags), func.__name__
        for pol in ("arm_default_nan", "riscv"):
            assert run(func, S32(a), S32(b), nan=pol) == (0x7FC00000, flags), (func, pol)


def test_nan_policies_for_fma_three_operands():
    one = S32(ONE32)
    assert run(arith.fma, S32(QA), S32(SB), S32(QB)) == (QB, INVALID)
    assert run(arith.fma, S32(QA), S32(SB), S32(QB), nan="x86") == (QA, INVALID)
    assert run(arith.fma, one, one, S32(SA)) == (QA, INVALID)
    assert run(arith.fma, one, S32(QB), S32(SA)) == (QA, INVALID)
    assert run(arith.fma, one, S32(QB), S32(SA), nan="x86") == (QB, INVALID)
    assert run(arith.fma, one, S32(QB), S32(SA), nan="riscv") == (0x7FC00000, INVALID)


@pytest.mark.parametrize("pol,fp32,fp16,bf16,e5m2,e4m3", [
    ("ieee", 0x7FC00000, 0x7E00, 0x7FC0, 0x7E, 0x7F),
    ("x86", 0xFFC00000, 0xFE00, 0xFFC0, 0xFE, 0xFF),   # "QNaN floating-point indefinite"
    ("arm_default_nan", 0x7FC00000, 0x7E00, 0x7FC0, 0x7E, 0x7F),
    ("riscv", 0x7FC00000, 0x7E00, 0x7FC0, 0x7E, 0x7F),
])
def test_default_nan_of_each_policy(pol, fp32, fp16, bf16, e5m2, e4m3):
    for fmt, want in ((FP32, fp32), (FP16, fp16), (BF16, bf16), (E5M2, e5m2)):
        inf = fmt.round("inf")
        assert run(arith.sub, inf, inf, nan=pol) == (want, INVALID), fmt
        assert run(arith.mul, fmt.round(0), inf, nan=pol) == (want, INVALID), fmt
        assert run(arith.sqrt, fmt.round(-1), nan=pol) == (want, INVALID), fmt
    assert run(arith.div, E4M3.round(0), E4M3.round(0), nan=pol) == (e4m3, INVALID)
    # FNUZ formats have one NaN, whatever the policy
    for fmt in (E4M3FNUZ, E5M2FNUZ):
        assert run(arith.div, fmt.round(0), fmt.round(0), nan=pol) == (0x80, INVALID)
        assert run(arith.add, fmt.from_bits(0x80), fmt.round(1), nan=pol) == (0x80, NONE)


def test_non_propagating_policies_replace_every_nan():
    for pol in ("arm_default_nan", "riscv"):
        assert run(arith.add, S32(0xFFC12345), S32(ONE32), nan=pol) == (0x7FC00000, NONE)
        assert run(arith.sqrt, S32(0xFF812345), nan=pol) == (0x7FC00000, INVALID)
        assert run(arith.add, FP16.from_bits(0xFE05), FP16.round(1), nan=pol) == (0x7E00, NONE)
        assert run(arith.mul, E4M3.from_bits(0xFF), E4M3.round(1), nan=pol) == (0x7F, NONE)
    # the context setting works as the keyword does
    ctx = fpsim.Context(nan="riscv")
    assert arith.add(S32(0xFFC12345), S32(ONE32), ctx).bits == 0x7FC00000


def test_propagating_policies_keep_sign_and_payload():
    for pol in ("ieee", "x86"):
        assert run(arith.add, S32(0xFFC12345), S32(ONE32), nan=pol) == (0xFFC12345, NONE)
        assert run(arith.sqrt, S32(0xFF812345), nan=pol) == (0xFFC12345, INVALID)
        assert run(arith.sub, S32(ONE32), S32(0x7FC12345), nan=pol) == (0x7FC12345, NONE)
        assert run(arith.add, FP16.from_bits(0xFE05), FP16.round(1), nan=pol) == (0xFE05, NONE)
        assert run(arith.mul, E4M3.from_bits(0xFF), E4M3.round(1), nan=pol) == (0xFF, NONE)
        assert run(arith.mul, E5M2.from_bits(0xFD), E5M2.round(1), nan=pol) == (0xFF, INVALID)


# -- sign operations -------------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", [E4M3, E5M2, FP16, BF16])
def test_neg_abs_copysign_touch_only_the_sign_bit_and_raise_nothing(fmt):
    sign = 1 << (fmt.width - 1)
    codes = range(1 << fmt.width)
    if fmt.width > 8:
        rng = np.random.default_rng(1)
        codes = sorted(set(rng.integers(0, 1 << fmt.width, 3000).tolist()) | {
            0x7C01, 0xFC01, 0x7F81, 0xFF81, 0x7E00, 0x8000, 0})
    pos, neg_ = fmt.round(1), fmt.round(-1)
    with fpsim.localcontext() as ctx:
        ctx.clear_flags()
        for c in codes:
            x = fmt.from_bits(c)
            assert arith.neg(x).bits == c ^ sign
            assert (-x).bits == c ^ sign
            assert arith.abs(x).bits == c & ~sign
            assert abs(x).bits == c & ~sign
            assert arith.copysign(x, neg_).bits == c | sign
            assert arith.copysign(x, pos).bits == c & ~sign
            assert arith.copysign(x, fmt.from_bits(sign | 0x7F)).bits == c | sign  # a NaN's sign
            assert arith.neg(x).is_signaling == x.is_signaling  # an sNaN stays signaling
        assert ctx.flags == NONE


def test_sign_operations_in_fnuz_formats():
    f = E4M3FNUZ.from_bits
    # no -0: the zero and the single NaN (0x80) are their own negations
    assert arith.neg(f(0x00)).bits == 0x00 and arith.neg(f(0x80)).bits == 0x80
    assert arith.neg(f(0x01)).bits == 0x81 and arith.abs(f(0x81)).bits == 0x01
    assert arith.copysign(f(0x00), f(0xC0)).bits == 0x00
    assert arith.copysign(f(0x40), f(0xC0)).bits == 0xC0
    assert arith.abs(f(0x80)).bits == 0x80
    # x - x is +0 in every mode (there is no -0)
    assert run(arith.sub, f(0x40), f(0x40), rounding="rdn") == (0x00, NONE)


def test_next_up_and_down_on_nans():
    assert run(arith.next_up, FP16.from_bits(0x7C01)) == (0x7E01, INVALID)
    assert run(arith.next_down, FP16.from_bits(0xFE01)) == (0xFE01, NONE)
    assert run(arith.next_up, FP16.from_bits(0x7BFF)) == (0x7C00, NONE)
    assert run(arith.next_down, FP16.from_bits(0x0000)) == (0x8001, NONE)
    assert run(arith.next_up, E4M3.from_bits(0x7E)) == (0x7E, NONE)  # no infinity above max


def test_operators_use_the_current_context():
    one, tiny = FP16.from_bits(0x3C00), FP16.from_bits(0x0001)
    with fpsim.localcontext(rounding="rup") as ctx:
        ctx.clear_flags()
        assert (one + tiny).bits == 0x3C01            # 1 + 2**-24 rounded up: 1 + 2**-10
        assert (one - tiny).bits == 0x3C00            # 1 - 2**-24 rounded up: 1
        assert ctx.flags == INEXACT
        ctx.clear_flags()
        assert (one / FP16.round(3)).bits == 0x3556   # 1/3 = 0x3555.55..: up to 0x3556
        assert (tiny * tiny).bits == 0x0001 and ctx.flags == UNDERFLOW | INEXACT
        ctx.clear_flags()
        assert (-FP16.from_bits(0x7C01)).bits == 0xFC01
        assert abs(FP16.from_bits(0xFC01)).bits == 0x7C01
        assert ctx.flags == NONE                       # sign operations raise nothing
    with fpsim.localcontext(rounding="rdn", nan="x86") as ctx:
        ctx.clear_flags()
        assert (one - one).bits == 0x8000
        inf = FP16.from_bits(0x7C00)
        assert (inf - inf).bits == 0xFE00 and ctx.flags == INVALID
    with fpsim.localcontext(ftz=True) as ctx:
        assert (FP16.from_bits(0x0400) * FP16.from_bits(0x3800)).bits == 0x0000
