"""The tests' independent oracle: binary floating-point formats as their
definitions describe them, decoded and rounded exactly with Fractions and
integers, and the MPFR (gmpy2) contexts and numpy / ml_dtypes types that
emulate them.

This module never imports fpsim.  Every parameter is written here from the
definitions (IEEE 754-2019, bfloat16, NVIDIA TF32, the OCP 8-bit Floating
Point spec, the OCP Microscaling spec, ml_dtypes' float8 "fnuz" types), so a
test compares fpsim with something fpsim did not compute.  A test may look a
spec up by an fpsim format's name (``spec_of``); nothing else is read from it.

Notation: ``e`` exponent bits, ``m`` fraction bits, precision ``p = m + 1``.
For ``v > 0`` the quantum (last place) of the format at ``v`` is ``2**q``
with ``q = max(floor(log2 v), emin) - m``; above max the same rule continues
(an unbounded exponent range).
"""

from __future__ import annotations

import enum
import functools
import math
from fractions import Fraction

import gmpy2
import ml_dtypes
import numpy as np


@functools.cache
def pow2(k: int) -> Fraction:
    return Fraction(1 << k) if k >= 0 else Fraction(1, 1 << -k)


def floor_log2(v: Fraction) -> int:
    """floor(log2 v) for v > 0, exactly (from the bit lengths, no floats)."""
    n, d = v.numerator, v.denominator
    e = n.bit_length() - d.bit_length()  # floor(log2 v) is e or e - 1
    if (n << max(-e, 0)) < (d << max(e, 0)):
        e -= 1
    assert pow2(e) <= v < pow2(e + 1)
    return e


# -- formats ------------------------------------------------------------------------

class FormatSpec:
    """A format from its definition: field widths, bias and which codes are
    special.  ``specials`` is

    * ``"ieee"``: IEEE 754-2019 §3.4: the all-ones exponent field is ±inf
      (fraction 0) or NaN, quiet iff the fraction's top bit is set (§6.2.1);
    * ``"fn"``: OCP FP8 E4M3 and OCP MX E8M0: no infinity, and only the
      all-ones magnitude (S.1111.111) is NaN;
    * ``"fnuz"``: no infinity and no -0: the code of -0 is the single NaN;
    * ``"none"``: every code is a finite number.

    Without ``subnormals`` (E8M0) exponent field 0 is an ordinary binade;
    without ``signed`` there is no sign bit.  With ``infinities`` (IEEE
    P3109's extended domain, for "fn" and "fnuz") the largest magnitude
    that is not NaN is ±inf.
    """

    def __init__(self, name: str, e: int, m: int, bias: int, specials: str,
                 signed: bool = True, subnormals: bool = True, infinities: bool = False):
        self.name, self.e, self.m, self.bias, self.specials = name, e, m, bias, specials
        self.signed, self.subnormals = signed, subnormals
        self.p = m + 1
        self.width = int(signed) + e + m
        self.sign_bit = 1 << (e + m) if signed else 0
        self.emin = (1 if subnormals else 0) - bias
        self.has_inf = specials == "ieee" or infinities
        self.has_nan = specials != "none"
        self.has_neg_zero = signed and specials != "fnuz"
        self.quiet_bit = 1 << (m - 1) if specials == "ieee" else 0
        all_ones = (1 << (e + m)) - 1
        # P3109 extended: inf just below the all-ones NaN ("fn"), or at the
        # all-ones magnitude ("fnuz", whose NaN is the -0 code)
        self.extra_inf = (all_ones - (specials == "fn")) if infinities else None
        self.inf_code = ((1 << e) - 1) << m if specials == "ieee" else self.extra_inf
        # What an overflow "to infinity" delivers (no infinity: NaN, the OCP
        # stand-in; neither: max).
        self.overflow_kind = "inf" if self.has_inf else "nan" if self.has_nan else "max"
        # The largest finite code: IEEE reserves the top binade, "fn" only
        # the all-ones code; "fnuz" and "none" codes below the sign are finite.
        self.max_code = all_ones - {"ieee": 1 << m, "fn": 1}.get(specials, 0) - int(infinities)
        self.max = self.value(self.max_code)
        self.emax = floor_log2(self.max)
        self.ulp_at_max = pow2(self.emax - m)
        self.min_normal = pow2(self.emin)
        self.min_sub = pow2(self.emin - m) if subnormals else self.min_normal
        self._values: tuple[Fraction, ...] | None = None

    def __repr__(self) -> str:
        return f"FormatSpec({self.name!r})"

    def decode(self, code: int) -> tuple[str, int, Fraction | None]:
        """(kind, sign, value) of ``code`` from its bit fields: kind is
        "finite" (value the signed Fraction), "inf" or "nan" (value None)."""
        e, m, bias = self.e, self.m, self.bias
        sign = (code >> (e + m)) & 1 if self.signed else 0
        ef = (code >> m) & ((1 << e) - 1)
        frac = code & ((1 << m) - 1)
        top = (1 << e) - 1
        if self.specials == "ieee" and ef == top:
            return ("inf" if frac == 0 else "nan"), sign, None
        if self.specials == "fn" and ef == top and frac == (1 << m) - 1:
            return "nan", sign, None
        if self.specials == "fnuz" and sign and ef == 0 and frac == 0:
            return "nan", sign, None
        if self.extra_inf is not None and code & ((1 << (e + m)) - 1) == self.extra_inf:
            return "inf", sign, None
        if ef == 0 and self.subnormals:  # subnormal: 0.fraction × 2**emin
            sig, exp = frac, 1 - bias - m
        else:  # normal: 1.fraction × 2**(ef - bias)
            sig, exp = (1 << m) | frac, ef - bias - m
        v = sig * pow2(exp)
        return "finite", sign, (-v if sign else v)

    def value(self, code: int) -> Fraction:
        """The value of a finite code."""
        kind, _, v = self.decode(code)
        assert kind == "finite", (self.name, hex(code))
        return v

    def is_nan(self, code: int) -> bool:
        return self.decode(code)[0] == "nan"

    def negative(self, code: int) -> bool:
        return bool(code & self.sign_bit)

    def classify(self, code: int) -> str:
        """"inf", "qnan", "snan", "zero", "subnormal" or "normal" (§5.7.2,
        sign aside); the single NaN of "fn" and "fnuz" formats is quiet."""
        kind, _, v = self.decode(code)
        if kind == "nan":
            return "snan" if self.specials == "ieee" and not code & self.quiet_bit else "qnan"
        if kind == "inf":
            return "inf"
        if v == 0:
            return "zero"
        return "subnormal" if abs(v) < self.min_normal else "normal"

    def quiet(self, code: int) -> int:
        """A NaN code with its quiet bit set (single-NaN formats: unchanged).
        Bitwise only, so it applies to numpy arrays of codes as well."""
        return code | self.quiet_bit

    def quantum(self, v: Fraction) -> int:
        """q such that 2**q is the spacing of the format's values at v > 0."""
        return max(floor_log2(v), self.emin) - self.m

    def neighbours(self, v: Fraction) -> tuple[Fraction, Fraction]:
        """The two grid values around |v| (equal when |v| is on the grid),
        the grid continued above max by the same quantum."""
        a = abs(v)
        if a == 0:
            return Fraction(0), Fraction(0)
        u = pow2(self.quantum(a))
        lo = (a // u) * u
        return lo, (lo if lo == a else lo + u)

    def finite_values(self) -> tuple[Fraction, ...]:
        """Every non-negative finite value, ascending."""
        if self._values is None:
            vals = {self.decode(c) for c in range(self.sign_bit or 1 << self.width)}
            self._values = tuple(sorted(v for kind, _, v in vals if kind == "finite"))
        return self._values

    def encode(self, v: Fraction) -> int:
        """The code of an exactly representable finite value (+0 for zero)."""
        mag = abs(v)
        if mag == 0:
            return 0
        e = max(floor_log2(mag), self.emin)
        sig = mag / pow2(e - self.m)
        assert sig.denominator == 1, v
        sig = int(sig)
        code = sig if sig < (1 << self.m) else ((e + self.bias) << self.m) | (sig - (1 << self.m))
        assert code <= self.max_code and self.value(code) == mag, v
        return code | (self.sign_bit if v < 0 else 0)

    def encode_or_none(self, v: Fraction) -> int | None:
        """The code of v if v is a nonzero representable value, else None."""
        if v == 0 or abs(v) > self.max:
            return None
        if (abs(v) / pow2(self.quantum(abs(v)))).denominator != 1:
            return None
        return self.encode(v)

    def floor_code(self, v: Fraction) -> int:
        """The code of the largest finite value <= v (v >= 0), clamped to max."""
        if v >= self.max:
            return self.max_code
        if v < self.min_sub:
            return 0
        e = max(floor_log2(v), self.emin)
        sig = int(v / pow2(e - self.m))  # floor: v > 0
        if sig < (1 << self.m):  # subnormal
            return sig
        return ((e + self.bias) << self.m) | (sig - (1 << self.m))


SPECS = {spec.name: spec for spec in [
    FormatSpec("fp32", 8, 23, 127, "ieee"),  # IEEE 754 binary32
    FormatSpec("tf32", 8, 10, 127, "ieee"),  # NVIDIA TF32: binary32's exponent, 10 bits
    FormatSpec("fp16", 5, 10, 15, "ieee"),  # IEEE 754 binary16: max 65504
    FormatSpec("bf16", 8, 7, 127, "ieee"),  # bfloat16: binary32's top 16 bits
    FormatSpec("e5m2", 5, 2, 15, "ieee"),  # OCP FP8 E5M2: IEEE-like, max 57344
    FormatSpec("e4m3", 4, 3, 7, "fn"),  # OCP FP8 E4M3: max S.1111.110 = 448
    FormatSpec("e4m3fnuz", 4, 3, 8, "fnuz"),  # max 0x7F = 1.875 × 2**7 = 240
    FormatSpec("e5m2fnuz", 5, 2, 16, "fnuz"),  # max 0x7F = 1.75 × 2**15 = 57344
    # OCP MX E8M0 scale: unsigned, no zero, every code 2**(c - 127), 0xFF NaN
    FormatSpec("e8m0", 8, 0, 127, "fn", signed=False, subnormals=False),
    # OCP MX element formats (MX spec v1.0 §5.3): no infinity, no NaN.
    FormatSpec("e3m2", 3, 2, 3, "none"),  # FP6 E3M2: max 1.75 × 2**4 = 28
    FormatSpec("e2m3", 2, 3, 1, "none"),  # FP6 E2M3: max 1.875 × 2**2 = 7.5
    FormatSpec("e2m1", 2, 1, 1, "none"),  # FP4 E2M1: max 1.5 × 2**2 = 6
    # ml_dtypes' other float8 types: float8_e3m4 and float8_e4m3 IEEE-like
    # (max 1.9375 × 2**3 = 15.5, 1.875 × 2**7 = 240), float8_e4m3b11fnuz
    # with bias 11 (max 1.875 × 2**4 = 30).
    FormatSpec("e3m4", 3, 4, 3, "ieee"),
    FormatSpec("e4m3ieee", 4, 3, 7, "ieee"),
    FormatSpec("e4m3b11fnuz", 4, 3, 11, "fnuz"),
]}


# IEEE P3109's eight-bit formats, from the Interim Report's rule: signed
# binary8p{P}s{e|f} has 8-P exponent and P-1 fraction bits, bias 2**(7-P), its
# NaN at the -0 code; unsigned binary8p{P}u{e|f} has 9-P exponent bits, bias
# 2**(8-P), its NaN at 0xFF; "e" (extended) puts ±inf at the largest
# magnitude below the NaN.
for _p in range(1, 9):
    for _d in "ef":
        if _p < 8:
            SPECS[f"binary8p{_p}s{_d}"] = FormatSpec(f"binary8p{_p}s{_d}", 8 - _p, _p - 1,
                                                     1 << (7 - _p), "fnuz",
                                                     infinities=_d == "e")
        SPECS[f"binary8p{_p}u{_d}"] = FormatSpec(f"binary8p{_p}u{_d}", 9 - _p, _p - 1,
                                                 1 << (8 - _p), "fn", signed=False,
                                                 infinities=_d == "e")


# The numpy / ml_dtypes type implementing each format (a second, external
# reference: the tests compare fpsim with its casts).
DTYPES = {
    "fp16": np.float16,
    "bf16": ml_dtypes.bfloat16,
    "e4m3": ml_dtypes.float8_e4m3fn,
    "e5m2": ml_dtypes.float8_e5m2,
    "e4m3fnuz": ml_dtypes.float8_e4m3fnuz,
    "e5m2fnuz": ml_dtypes.float8_e5m2fnuz,
    "e3m4": ml_dtypes.float8_e3m4,
    "e4m3ieee": ml_dtypes.float8_e4m3,
    "e4m3b11fnuz": ml_dtypes.float8_e4m3b11fnuz,
}


def spec_of(fmt) -> FormatSpec:
    """The spec written here for the format of that name (an fpsim format or
    a name); only the name is read."""
    return SPECS[getattr(fmt, "name", fmt)]


# -- flags ---------------------------------------------------------------------------

class Flag(enum.Flag):
    """The five exceptions of IEEE 754-2019 §7."""

    INVALID = enum.auto()
    DIVIDE_BY_ZERO = enum.auto()
    OVERFLOW = enum.auto()
    UNDERFLOW = enum.auto()
    INEXACT = enum.auto()


NO_FLAGS = Flag(0)


def flags_as(flag_type, flags: Flag):
    """``flags`` as the same-named members of another enum.Flag type (a test
    passes fpsim.Flag)."""
    out = flag_type(0)
    for member in Flag:
        if member in flags:
            out |= flag_type[member.name]
    return out


# -- rounding --------------------------------------------------------------------------
#
# An exact magnitude is handed to the rounding as ``split(q)``: at the
# quantum 2**q it returns ``lo = floor(|x| / 2**q)``, ``cmp``, the sign of
# (discarded fraction - 1/2), and whether anything was discarded.

def rounds_away(mode: str, lo, cmp, negative):
    """Whether an inexact magnitude goes up from ``lo`` to ``lo + 1``
    (IEEE 754-2019 §4.3; rto keeps the odd one).  Written with ``| ^ ==`` so
    that it applies elementwise to numpy arrays too."""
    if mode == "rne":
        return (cmp > 0) | ((cmp == 0) & (lo % 2 == 1))
    if mode == "rna":
        return cmp >= 0
    if mode == "rtz":
        return False
    if mode == "rup":
        return negative ^ True  # away from zero iff positive
    if mode == "rdn":
        return negative
    if mode == "rto":
        return lo % 2 == 0
    if mode == "raz":  # IEEE P3109's TowardMaxMagnitude
        return True
    raise AssertionError(mode)


def overflows_to_infinity(mode: str, negative):
    """IEEE 754-2019 §7.4: rne and rna (and sr) carry an overflow to
    infinity, the directed modes only when they round away from zero; rtz
    and rto deliver max (fpsim's documented choice for rto).  Elementwise
    on numpy arrays too."""
    if mode == "rup":
        return negative ^ True
    if mode == "rdn":
        return negative
    return mode in ("rne", "rna", "raz", "sr", "sr_b", "sr_c")


def split_rational(v: Fraction):
    """split(q) for the exact magnitude v >= 0."""
    n, d = v.numerator, v.denominator

    def split(q):
        num, den = (n, d << q) if q >= 0 else (n << -q, d)
        lo, rem = divmod(num, den)
        return lo, (2 * rem > den) - (2 * rem < den), rem != 0
    return split


def split_sqrt(x: Fraction):
    """split(q) for sqrt(x), x > 0: the root of ``y = x / 2**(2q)`` has floor
    ``isqrt(floor(y))``, is exact iff y is a perfect square, and is compared
    with ``lo + 1/2`` by squaring."""
    def split(q):
        y = x / pow2(2 * q)
        lo = math.isqrt(y.numerator // y.denominator)
        exact = Fraction(lo * lo) == y
        half = Fraction(2 * lo + 1, 2) ** 2
        return lo, (y > half) - (y < half), not exact
    return split


def round_at_quantum(split, q: int, mode: str, negative: bool, r: int = 0,
                     sr_bits: int = 32) -> tuple[int, bool]:
    """(k, inexact): the magnitude rounded by ``mode`` to ``k × 2**q``.  sr
    is fpsim's documented rule: away iff ``floor(frac × 2**sr_bits) + r >=
    2**sr_bits``, frac the discarded fraction (the next sr_bits bits)."""
    lo, cmp, inexact = split(q)
    if not inexact:
        return lo, False
    if mode == "sr":
        t = split(q - sr_bits)[0] - (lo << sr_bits)
        return lo + (t + r >= 1 << sr_bits), True
    # IEEE P3109's StochasticB and StochasticC with N = sr_bits random bits R
    # and eta the discarded fraction: B rounds away iff
    # floor(eta 2**(N+1)) + 2R + 1 >= 2**(N+1); C iff RNE(eta 2**N) + R >= 2**N.
    if mode == "sr_b":
        t = split(q - sr_bits - 1)[0] - (lo << (sr_bits + 1))
        return lo + (t + 2 * r + 1 >= 2 << sr_bits), True
    if mode == "sr_c":
        t_lo, t_cmp, _ = split(q - sr_bits)
        t = t_lo - (lo << sr_bits)
        t += (t_cmp > 0) | ((t_cmp == 0) & (t % 2 == 1))
        return lo + (t + r >= 1 << sr_bits), True
    return lo + rounds_away(mode, lo, cmp, negative), True


def ref_round(spec: FormatSpec, negative: bool, e: int, split, mode: str, saturate=False,
              ftz=False, tininess="after", r=0, sr_bits=32
              ) -> tuple[str, int, Fraction | None, Flag]:
    """(kind, sign, value, flags) of delivering a nonzero exact result of sign
    ``negative`` with ``e = floor(log2|x|)`` in ``spec``:

    * overflow when the rounded magnitude exceeds max: OVERFLOW | INEXACT and
      (``overflows_to_infinity``) the format's overflow kind, else ±max;
      ``saturate`` True (P3109's SatFinite) or ``"satpropagate"`` gives
      ±max; ``"ovfinf"`` gives ±inf where the format has it, else ±max
      (never NaN);
    * tiny ``after``: the rounding at quantum ``e - m`` (unbounded exponent)
      is below min_normal (for sr: the delivered result, fpsim's rule);
      ``before``: |x| < min_normal.  UNDERFLOW iff tiny and inexact;
    * with ``ftz`` a tiny result is a zero of its sign (+0 without -0) with
      UNDERFLOW | INEXACT.
    """
    m = spec.m
    q = max(e, spec.emin) - m
    k, inexact = round_at_quantum(split, q, mode, negative, r, sr_bits)
    rounded = k * pow2(q)
    sign = int(negative)
    zero_sign = int(negative and spec.has_neg_zero)
    if rounded > spec.max:
        flags = Flag.OVERFLOW | Flag.INEXACT
        to_inf = overflows_to_infinity(mode, negative)
        kind = {False: spec.overflow_kind, "ovfinf": "inf" if spec.has_inf else "max"}.get(
            saturate, "max")
        if to_inf and kind != "max":
            return kind, sign, None, flags
        return "finite", sign, (-spec.max if negative else spec.max), flags
    if tininess == "before":
        tiny = e < spec.emin
    elif mode in ("sr", "sr_b", "sr_c"):
        tiny = rounded < spec.min_normal
    else:
        tiny = round_at_quantum(split, e - m, mode, negative)[0] * pow2(e - m) < spec.min_normal
    if tiny and ftz and spec.subnormals:
        return "finite", zero_sign, Fraction(0), Flag.UNDERFLOW | Flag.INEXACT
    if not spec.subnormals and rounded < spec.min_normal:
        # A format without zero (E8M0): its smallest magnitude is the nearest
        # value it has to anything below it, in every mode.
        rounded, inexact = spec.min_normal, True
    flags = (Flag.INEXACT if inexact else NO_FLAGS) | (
        Flag.UNDERFLOW if tiny and inexact else NO_FLAGS)
    if rounded == 0:
        return "finite", zero_sign, Fraction(0), flags
    return "finite", sign, (-rounded if negative else rounded), flags


def ref_rational(spec: FormatSpec, x: Fraction, mode: str, **kw):
    """``ref_round`` of the exact rational x (a zero: that zero, no flags)."""
    if x == 0:
        return "finite", 0, Fraction(0), NO_FLAGS
    return ref_round(spec, x < 0, floor_log2(abs(x)), split_rational(abs(x)), mode, **kw)


def ref_sqrt(spec: FormatSpec, x: Fraction, mode: str, **kw):
    """``ref_round`` of sqrt(x), x > 0: floor(log2 sqrt x) = floor(floor(log2 x) / 2)."""
    return ref_round(spec, False, floor_log2(x) // 2, split_sqrt(x), mode, **kw)


def nearest_even(x: Fraction) -> int:
    """The integer nearest x, ties to even (the n of IEEE remainder, §5.3.1)."""
    n = math.floor(x)
    d = x - n
    if d > Fraction(1, 2) or (d == Fraction(1, 2) and n % 2):
        n += 1
    return n


def exact_result(op: str, vals: list[Fraction]) -> Fraction | None:
    """The exact rational result of a finite operation (None for sqrt)."""
    if op == "add":
        return vals[0] + vals[1]
    if op == "sub":
        return vals[0] - vals[1]
    if op == "mul":
        return vals[0] * vals[1]
    if op == "div":
        return vals[0] / vals[1]
    if op == "fma":
        return vals[0] * vals[1] + vals[2]
    return None


# -- MPFR --------------------------------------------------------------------------
#
# MPFR writes x = f × 2**E with 0.5 <= f < 1, so a format's smallest subnormal
# 2**(emin - m) has MPFR exponent emin - p + 2.

MPFR_ROUND = {
    "rne": gmpy2.RoundToNearest,
    "rtz": gmpy2.RoundToZero,
    "rup": gmpy2.RoundUp,
    "rdn": gmpy2.RoundDown,
    "raz": gmpy2.RoundAwayZero,  # IEEE P3109's TowardMaxMagnitude (fpsim's raz)
}


def mpfr_emulating(spec: FormatSpec, mode: str):
    """An MPFR context that rounds as the format does, subnormals included,
    with the largest exponent range MPFR allows above (it never overflows:
    the overflow rule is the test's to apply)."""
    return gmpy2.context(precision=spec.p, subnormalize=True,
                         emin=spec.emin - spec.p + 2, emax=gmpy2.get_emax_max(),
                         round=MPFR_ROUND[mode])


def mpfr_unbounded(spec: FormatSpec, mode: str):
    """An MPFR context rounding to p bits with an unbounded exponent range."""
    return gmpy2.context(precision=spec.p, subnormalize=False,
                         emin=gmpy2.get_emin_min(), emax=gmpy2.get_emax_max(),
                         round=MPFR_ROUND[mode])


def mpfr_fraction(r) -> Fraction:
    """A finite MPFR number as an exact Fraction."""
    n, d = r.as_integer_ratio()
    return Fraction(int(n), int(d))
