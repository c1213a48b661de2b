"""Every pair of E4M3 codes and every pair of E5M2 codes through add, sub,
mul and div, in every deterministic rounding mode, against a vectorized
numpy oracle written here from the definitions.

The oracle
----------
* Operands are decoded by tests/oracle.py from the OCP FP8 definitions (not
  by fpsim) into float64: E5M2 is IEEE-like (bias 15, top exponent reserved:
  inf and NaNs, 0x7D/0xFD signaling, 0x7E/0x7F quiet); E4M3 has bias 7, no
  infinity, and only S.1111.111 is NaN (max 448).
* Sums, differences and products of two such values are exact in float64:
  E5M2 values are multiples of 2**-16 below 2**16, so a sum is a multiple of
  2**-16 below 2**17 (33 bits); E4M3 values are multiples of 2**-9 below
  2**9; a product of two significands of at most 4 bits has at most 8 bits,
  and every exponent is far inside float64's range.  (Checked against
  Fractions once per format below.)  Quotients are not exact in float64: they
  are rounded from the integer significands ``SA / SB × 2**(EA - EB)`` with
  integer arithmetic.
* Rounding an exact ``x != 0``: ``e = floor(log2|x|)``, the quantum is
  ``q = max(e, emin) - m``; ``lo = floor(|x| / 2**q)`` and the discarded
  fraction is compared with 1/2; the mode picks ``lo`` or ``lo + 1`` (rto:
  the odd one when inexact).  OVERFLOW (with INEXACT) when the rounded
  magnitude exceeds max: ±inf for rne, rna, and the directed mode away from
  zero, ±max for rtz, rto and the directed mode toward zero; without
  infinities (E4M3) an infinite result is NaN of its sign; ``saturate=True``
  makes it ±max.  Tiny (after rounding): the value rounded at quantum
  ``e - m`` (unbounded exponent) is below min_normal; UNDERFLOW iff tiny and
  inexact.
* Specials (IEEE 754-2019 §6, §7): a NaN operand gives a NaN (INVALID if
  any is signaling; under the default ``ieee`` policy the first signaling
  NaN, else the first NaN, quieted, with its sign and payload; for ``sub``
  the NaN ``b`` keeps its own sign); inf - inf, 0 × inf, 0/0 and inf/inf are
  INVALID with the default NaN (+qNaN 0x7E in E5M2); x/0 for finite nonzero
  x is DIVIDE_BY_ZERO and an infinity of the sign (NaN in E4M3, ±max when
  saturating); an exact zero sum is +0, or -0 in rdn, unless both terms are
  zeros of the same sign; products and quotients of zeros have the xor sign.
"""

from __future__ import annotations

import functools
import itertools
from fractions import Fraction

import numpy as np
import pytest

import fpsim
from fpsim import arith

from oracle import overflows_to_infinity, pow2, rounds_away, spec_of

INVALID, DIV0, OVERFLOW, UNDERFLOW, INEXACT = 1, 2, 4, 8, 16  # IEEE 754 flag bits
assert [f.value for f in (fpsim.Flag.INVALID, fpsim.Flag.DIVIDE_BY_ZERO, fpsim.Flag.OVERFLOW,
                          fpsim.Flag.UNDERFLOW, fpsim.Flag.INEXACT)] == [1, 2, 4, 8, 16]

MODES = ["rne", "rna", "rtz", "rup", "rdn", "rto"]
OPS = ["add", "sub", "mul", "div"]
FUNCS = {"add": arith.add, "sub": arith.sub, "mul": arith.mul, "div": arith.div}


class Spec:
    """The oracle's spec of an FP8 format (tests/oracle.py), decoded into
    numpy arrays indexed by code."""

    def __init__(self, name, fmt):
        spec = spec_of(name)
        self.name, self.fmt = name, fmt
        self.e, self.m, self.bias, self.has_inf = spec.e, spec.m, spec.bias, spec.has_inf
        self.emin, self.sign_bit = spec.emin, spec.sign_bit
        self.max_code, self.inf_code, self.quiet = spec.max_code, spec.inf_code, spec.quiet
        # the default NaN: +qNaN (E5M2), the single NaN 0x7F (E4M3)
        self.default_nan = spec.quiet(spec.inf_code) if spec.has_inf else 0x7F
        self.min_normal = float(spec.min_normal)
        decoded = [spec.decode(c) for c in range(256)]
        kind = np.array([k for k, _, _ in decoded])
        self.is_nan, self.is_inf = kind == "nan", kind == "inf"
        self.is_snan = np.array([spec.classify(c) == "snan" for c in range(256)])
        self.neg = np.array([s == 1 for _, s, _ in decoded])
        # |value| = sig × 2**exp, sig an integer at the value's quantum (0 for inf, NaN)
        finite = [abs(v) if k == "finite" else Fraction(0) for k, _, v in decoded]
        exp = [spec.quantum(a or spec.min_sub) for a in finite]
        self.exp = np.array(exp, dtype=np.int64)
        self.sig = np.array([int(a / pow2(q)) for a, q in zip(finite, exp)], dtype=np.int64)
        mag = np.where(self.is_inf, np.inf, [float(a) for a in finite])
        # -0.0 for the code of -0; NaN codes give NaN
        self.vals = np.where(self.is_nan, np.nan, np.where(self.neg, -mag, mag))
        # the non-negative finite values in code order (increasing): code = index
        self.pos_vals = mag[: self.max_code + 1]
        assert np.all(np.diff(self.pos_vals) > 0)
        self.max = float(self.pos_vals[-1])


SPECS = {
    "e4m3": Spec("e4m3", fpsim.E4M3),
    "e5m2": Spec("e5m2", fpsim.E5M2),
}
NAMES = list(SPECS)


def test_decoding_from_the_definitions():
    e4, e5 = SPECS["e4m3"], SPECS["e5m2"]
    assert (e4.max, e4.max_code, e4.pos_vals[1], e4.min_normal) == (448, 0x7E, 2**-9, 2**-6)
    assert (e5.max, e5.max_code, e5.pos_vals[1], e5.min_normal) == (57344, 0x7B, 2**-16, 2**-14)
    assert np.isnan(e4.vals[[0x7F, 0xFF]]).all() and np.isnan(e4.vals).sum() == 2
    assert e5.vals[0x7C] == np.inf and e5.vals[0xFC] == -np.inf
    assert np.flatnonzero(e5.is_snan).tolist() == [0x7D, 0xFD]
    assert np.isnan(e5.vals).sum() == 6
    assert e4.vals[0x80] == 0 and np.signbit(e4.vals[0x80])


# -- the vectorized rounding ------------------------------------------------------

def decide(lo, cmp, inexact, neg, mode):
    """The rounded magnitude in units of the quantum: lo is the truncated
    magnitude, cmp the sign of (discarded fraction - 1/2)."""
    return lo + (inexact & rounds_away(mode, lo, cmp, neg))


def split_float(mag, q):
    """(lo, cmp, inexact) of mag / 2**q for exact float64 magnitudes."""
    scaled = np.ldexp(mag, -q)  # exact: a power-of-two scaling far inside range
    lo = np.floor(scaled)
    frac = scaled - lo  # exact
    return lo.astype(np.int64), np.sign(frac - 0.5).astype(np.int64), frac != 0


def split_ratio(num, den, exp, q):
    """(lo, cmp, inexact) of num/den × 2**(exp - q) with int64 arithmetic (the
    shifts stay below 40 bits for these formats: asserted)."""
    s = exp - q
    assert np.all(np.abs(s) < 40)
    n = np.where(s >= 0, num << np.maximum(s, 0), num)
    d = np.where(s >= 0, den, den << np.maximum(-s, 0))
    lo, rem = np.divmod(n, d)
    return lo, np.sign(2 * rem - d), rem != 0


def round_finite(spec, neg, mode, saturate, e, split):
    """Codes and flags of rounding nonzero exact values (sign ``neg``, exponent
    ``e = floor(log2|x|)``, ``split(q)`` giving (lo, cmp, inexact) at quantum q)."""
    m = spec.m
    q = np.maximum(e, spec.emin) - m
    lo, cmp, inexact = split(q)
    k = decide(lo, cmp, inexact, neg, mode)
    mag = np.ldexp(k.astype(np.float64), q)
    # tininess after rounding: the rounding at quantum e - m, unbounded
    lo_u, cmp_u, inexact_u = split(e - m)
    k_u = decide(lo_u, cmp_u, inexact_u, neg, mode)
    tiny = np.ldexp(k_u.astype(np.float64), e - m) < spec.min_normal
    overflow = mag > spec.max
    flags = np.where(inexact, INEXACT, 0) | np.where(tiny & inexact, UNDERFLOW, 0)
    idx = np.searchsorted(spec.pos_vals, np.minimum(mag, spec.max))
    assert np.all(spec.pos_vals[idx] == np.minimum(mag, spec.max))
    codes = idx.astype(np.int64)
    # overflow
    to_inf = overflows_to_infinity(mode, neg)
    inf_code = spec.max_code if saturate else (spec.inf_code or 0x7F)
    codes = np.where(overflow, np.where(to_inf, inf_code, spec.max_code), codes)
    flags = np.where(overflow, OVERFLOW | INEXACT, flags)
    return codes | np.where(neg, spec.sign_bit, 0), flags


def floor_log2_float(mag):
    _, e2 = np.frexp(mag)
    return (e2 - 1).astype(np.int64)


def floor_log2_ratio(num, den):
    """floor(log2(num/den)) for positive int64 arrays below 2**50."""
    bn = np.frexp(num.astype(np.float64))[1].astype(np.int64)  # bit lengths (exact)
    bd = np.frexp(den.astype(np.float64))[1].astype(np.int64)
    t = bn - bd
    below = np.where(t >= 0, num < (den << np.maximum(t, 0)), (num << np.maximum(-t, 0)) < den)
    return t - below


@functools.cache
def all_pairs():
    a, b = np.meshgrid(np.arange(256), np.arange(256), indexing="ij")
    return a.ravel(), b.ravel()


@functools.cache
def float64_is_exact(name):
    """Sums and products of every pair, float64 against Fractions."""
    spec = SPECS[name]
    ca, cb = all_pairs()
    fin = ~(spec.is_nan | spec.is_inf)
    keep = fin[ca] & fin[cb]
    va, vb = spec.vals[ca[keep]], spec.vals[cb[keep]]
    for x, y, s, p in zip(va.tolist(), vb.tolist(), (va + vb).tolist(), (va * vb).tolist()):
        assert Fraction(x) + Fraction(y) == Fraction(s) and Fraction(x) * Fraction(y) == Fraction(p)
    return True


def oracle(name, op, mode, saturate, ca, cb):
    """(codes, flags) for operand code arrays ``ca``, ``cb``."""
    with np.errstate(invalid="ignore"):  # inf - inf, 0 × inf in float64: handled
        return _oracle(name, op, mode, saturate, ca, cb)


def _oracle(name, op, mode, saturate, ca, cb):
    spec = SPECS[name]
    va, vb = spec.vals[ca], spec.vals[cb]
    na, nb = spec.neg[ca], spec.neg[cb]
    nan_a, nan_b = spec.is_nan[ca], spec.is_nan[cb]
    inf_a, inf_b = spec.is_inf[ca], spec.is_inf[cb]
    zero_a, zero_b = (va == 0), (vb == 0)
    n = len(ca)
    codes = np.full(n, -1, np.int64)
    flags = np.zeros(n, np.int64)
    done = np.zeros(n, bool)

    def put(mask, c, f):
        mask = mask & ~done
        codes[mask] = np.broadcast_to(c, n)[mask]
        flags[mask] = np.broadcast_to(f, n)[mask]
        done[mask] = True

    def inf_result(neg, f):
        c = spec.max_code if saturate else (spec.inf_code if spec.has_inf else 0x7F)
        # An infinite operand clamped to max (saturating) is an invalid
        # operation, as converting an infinity is; x/0 (f = DIV0) keeps DIV0.
        if saturate and f == 0:
            f = INVALID
        return c | np.where(neg, spec.sign_bit, 0), f

    # NaN operands: the first signaling, else the first NaN, quieted
    sn_a, sn_b = spec.is_snan[ca], spec.is_snan[cb]
    chosen = np.where(sn_a, ca, np.where(sn_b, cb, np.where(nan_a, ca, cb)))
    put(nan_a | nan_b, spec.quiet(chosen), np.where(sn_a | sn_b, INVALID, 0))

    if op in ("add", "sub"):
        nb_eff = nb ^ (op == "sub")
        put(inf_a & inf_b & (na != nb_eff), spec.default_nan, INVALID)
        put(inf_a, *inf_result(na, 0))
        put(inf_b, *inf_result(nb_eff, 0))
        exact = va + vb if op == "add" else va - vb
        both_zero_same = zero_a & zero_b & (na == nb_eff)
        zero_sign = np.where(both_zero_same, na, mode == "rdn")
        put(exact == 0, np.where(zero_sign, spec.sign_bit, 0), 0)
    elif op == "mul":
        neg = na ^ nb
        put((inf_a & zero_b) | (zero_a & inf_b), spec.default_nan, INVALID)
        put(inf_a | inf_b, *inf_result(neg, 0))
        exact = va * vb
        put(exact == 0, np.where(neg, spec.sign_bit, 0), 0)
    else:  # div
        neg = na ^ nb
        put((inf_a & inf_b) | (zero_a & zero_b), spec.default_nan, INVALID)
        put(inf_a, *inf_result(neg, 0))
        put(inf_b | zero_a, np.where(neg, spec.sign_bit, 0), 0)
        put(zero_b, *inf_result(neg, DIV0))
    rest = ~done
    if op == "div":
        num, den = spec.sig[ca][rest], spec.sig[cb][rest]
        exp = spec.exp[ca][rest] - spec.exp[cb][rest]
        e = floor_log2_ratio(num, den) + exp
        c, f = round_finite(spec, neg[rest], mode, saturate, e,
                            lambda q: split_ratio(num, den, exp, q))
    else:
        assert float64_is_exact(name)
        x = exact[rest]
        mag = np.abs(x)
        c, f = round_finite(spec, x < 0, mode, saturate, floor_log2_float(mag),
                            lambda q: split_float(mag, q))
    codes[rest], flags[rest] = c, f
    return codes, flags


def run_fpsim(name, op, mode, saturate, ca, cb):
    spec = SPECS[name]
    xs = [spec.fmt.from_bits(c) for c in range(256)]
    func = FUNCS[op]
    ctx = fpsim.Context(rounding=mode, saturate=saturate)
    codes, flags = [], []
    for a, b in zip(ca.tolist(), cb.tolist()):
        ctx.clear_flags()
        r = func(xs[a], xs[b], ctx)
        codes.append(r.bits)
        flags.append(ctx.flags.value)
    return np.array(codes), np.array(flags)


def compare(name, op, mode, saturate, ca, cb):
    want_c, want_f = oracle(name, op, mode, saturate, ca, cb)
    got_c, got_f = run_fpsim(name, op, mode, saturate, ca, cb)
    bad = np.flatnonzero((want_c != got_c) | (want_f != got_f))
    detail = [(hex(ca[i]), hex(cb[i]), "want", hex(want_c[i]), int(want_f[i]),
               "got", hex(got_c[i]), int(got_f[i])) for i in bad[:5]]
    assert len(bad) == 0, f"{name} {op} {mode} sat={saturate}: {len(bad)} mismatches, {detail}"
    return len(ca)


# -- hand-derived spot checks of the oracle itself ----------------------------------

@pytest.mark.parametrize("name,op,mode,a,b,code,flags", [
    # E4M3: 448 + 16 = 464, halfway between 448 (1.110b×2**8) and 480 (above max):
    # rne picks the even significand 1.110b = 448, inexact
    ("e4m3", "add", "rne", 0x7E, 0x58, 0x7E, INEXACT),
    # rna picks the larger magnitude, 480 > max: overflow, no infinity: NaN
    ("e4m3", "add", "rna", 0x7E, 0x58, 0x7F, OVERFLOW | INEXACT),
    # rto: 464 -> truncate 448 (significand 1110b even) -> odd is 480 > max: overflow, max
    ("e4m3", "add", "rto", 0x7E, 0x58, 0x7E, OVERFLOW | INEXACT),
    # 2**-9 × 2**-1 = 2**-10 is half the smallest subnormal: rne ties to 0, tiny
    ("e4m3", "mul", "rne", 0x01, 0x30, 0x00, UNDERFLOW | INEXACT),
    ("e4m3", "mul", "rup", 0x01, 0x30, 0x01, UNDERFLOW | INEXACT),
    ("e4m3", "mul", "rdn", 0x81, 0x30, 0x81, UNDERFLOW | INEXACT),
    # 1 - 1 = +0, but -0 in rdn
    ("e4m3", "sub", "rne", 0x38, 0x38, 0x00, 0), ("e4m3", "sub", "rdn", 0x38, 0x38, 0x80, 0),
    # 1/0 = inf (DIVIDE_BY_ZERO); E4M3 has none: NaN
    ("e4m3", "div", "rne", 0xB8, 0x00, 0xFF, DIV0), ("e5m2", "div", "rne", 0x3C, 0x80, 0xFC, DIV0),
    # 1/3 in E5M2 (3 bits): 0.0101...b = 1.0101..b × 2**-2 -> 1.01b × 2**-2 = 0.3125
    ("e5m2", "div", "rne", 0x3C, 0x42, 0x35, INEXACT),
    ("e5m2", "div", "rup", 0x3C, 0x42, 0x36, INEXACT),
    # inf - inf: the default NaN 0x7E; 0 × inf too
    ("e5m2", "sub", "rne", 0x7C, 0x7C, 0x7E, INVALID),
    ("e5m2", "mul", "rne", 0x00, 0xFC, 0x7E, INVALID),
    # sNaN 0x7D + 1: quieted (0x7F keeps the payload bit), INVALID; 0x7E + sNaN 0xFD -> 0xFF
    ("e5m2", "add", "rne", 0x7D, 0x3C, 0x7F, INVALID),
    ("e5m2", "add", "rne", 0x7E, 0xFD, 0xFF, INVALID),
    # 57344 × 2: overflow; rtz gives max 0x7B
    ("e5m2", "mul", "rne", 0x7B, 0x40, 0x7C, OVERFLOW | INEXACT),
    ("e5m2", "mul", "rtz", 0x7B, 0x40, 0x7B, OVERFLOW | INEXACT),
])
def test_oracle_reproduces_hand_derived_results(name, op, mode, a, b, code, flags):
    c, f = oracle(name, op, mode, False, np.array([a]), np.array([b]))
    assert (int(c[0]), int(f[0])) == (code, flags)
    got_c, got_f = run_fpsim(name, op, mode, False, np.array([a]), np.array([b]))
    assert (int(got_c[0]), int(got_f[0])) == (code, flags)


# -- the default run: every pair in rne; a fixed sample of pairs in every mode ---------

@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("name", NAMES)
def test_every_pair_rne(name, op):
    ca, cb = all_pairs()
    assert compare(name, op, "rne", False, ca, cb) == 65536


@functools.cache
def sample_pairs(name):
    rng = np.random.default_rng(2024 + NAMES.index(name))
    ca, cb = all_pairs()
    idx = rng.choice(len(ca), 3000, replace=False)
    return ca[idx], cb[idx]


@pytest.mark.parametrize("saturate", [False, True], ids=["nonsat", "sat"])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("name", NAMES)
def test_sample_of_pairs_every_mode(name, op, mode, saturate):
    ca, cb = sample_pairs(name)
    assert compare(name, op, mode, saturate, ca, cb) == 3000


# -- exhaustive: every pair, every mode ----------------------------------------------

@pytest.mark.exhaustive
@pytest.mark.parametrize("mode,saturate", [(m, False) for m in MODES] + [("rne", True)],
                         ids=[*MODES, "rne-sat"])
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("name", NAMES)
def test_every_pair_every_mode(name, op, mode, saturate):
    ca, cb = all_pairs()
    assert compare(name, op, mode, saturate, ca, cb) == 65536


def test_every_region_is_reached():
    """The pairs produce every flag and both overflow results in every mode."""
    ca, cb = all_pairs()
    for name, mode in itertools.product(NAMES, MODES):
        seen = 0
        for op in OPS:
            _, f = oracle(name, op, mode, False, ca, cb)
            seen |= int(np.bitwise_or.reduce(f))
        assert seen == 31, (name, mode, seen)
