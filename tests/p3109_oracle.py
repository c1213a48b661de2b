"""The tests' oracle for IEEE P3109: the Interim Report's own definitions,
transcribed rule by rule with Fractions and integers, for v4.0 (26 June
2026), v3.2.1 (12 January 2026) and release 3 (v3.0, 29 July 2025).

Never imports fpsim.  Each function cites the section it transcribes:

* v4.0 §4.7.2 ``ωDecode`` (release 3 §4.7.1): codes to values;
* v4.0 §4.7.4 ``ωRoundToPrecision`` (release 3 §4.7.3): rounding with an
  unbounded exponent above and ``max(., 1 - B)`` below (subnormals);
* v4.0 §4.7.5 ``ωSaturate`` (v3.2.1 §4.9.4, release 3 §4.7.4
  ``Saturate``): the saturation modes' table, verbatim;
* v4.0 §4.7.3 ``ωProject``: round, then saturate, then encode;
* v4.0 §4.10.3-§4.10.5 (release 3 §4.9.3-§4.9.5): the special cases of Add,
  Subtract, Multiply and Divide.

Values are Fractions, ``INF``/``NINF`` the infinities and ``NAN`` the NaN.
Rounding modes go by fpsim's short names (``rne`` NearestTiesToEven, ``rna``
NearestTiesToAway, ``rtz`` TowardZero, ``rup`` TowardPositive, ``rdn``
TowardNegative, ``rto`` ToOdd; release 3 has no ToOdd), saturation modes by
the report's (``SatFinite``, ``SatPropagate``, ``SatNone``; release 3 calls
the third ``OvfInf``).
"""

from __future__ import annotations

import functools
from fractions import Fraction

INF, NINF, NAN = "+inf", "-inf", "nan"
TEXTS = ("v4.0", "v3.2.1", "3")
SATURATIONS = ("SatFinite", "SatPropagate", "SatNone")
MODES_V4 = ("rne", "rna", "rtz", "rup", "rdn", "rto")
MODES_R3 = ("rne", "rna", "rtz", "rup", "rdn")


@functools.cache
def pow2(k: int) -> Fraction:
    return Fraction(1 << k) if k >= 0 else Fraction(1, 1 << -k)


def floor_log2(v: Fraction) -> int:
    n, d = v.numerator, v.denominator
    e = n.bit_length() - d.bit_length()
    if (n << max(-e, 0)) < (d << max(e, 0)):
        e -= 1
    return e


class P3109Format:
    """``binary{K}p{P}{s|u}{e|f}`` as §3 of the report defines it: the bias
    ``B = 2**(K-P-1)`` (signed) or ``2**(K-P)`` (unsigned), exponent field
    ``K - P`` (signed) or ``K - P + 1`` (unsigned) bits, ``P - 1`` fraction
    bits; the NaN is ``2**(K-1)`` (signed) or ``2**K - 1`` (unsigned); the
    extended domain's infinities are ``2**(K-1) - 1`` and ``2**K - 1``
    (signed), ``2**K - 2`` (unsigned)."""

    def __init__(self, k: int, p: int, signed: bool, extended: bool) -> None:
        self.k, self.p, self.signed, self.extended = k, p, signed, extended
        self.name = f"binary{k}p{p}{'s' if signed else 'u'}{'e' if extended else 'f'}"
        self.bias = 1 << (k - p - 1) if signed else 1 << (k - p)
        self.ebits = k - p if signed else k - p + 1
        self.nan = 1 << (k - 1) if signed else (1 << k) - 1
        if extended:
            self.pinf = (1 << (k - 1)) - 1 if signed else (1 << k) - 2
            self.ninf = (1 << k) - 1 if signed else None
        else:
            self.pinf = self.ninf = None
        # the largest finite code: below the infinity, else below the NaN
        # (signed: the largest positive code; unsigned: the NaN is the top code)
        if signed:
            top = (1 << (k - 1)) - (2 if extended else 1)
        else:
            top = (1 << k) - (3 if extended else 2)
        self.max_code = top
        self.m_hi = self.decode(top)
        self.m_lo = -self.m_hi if signed else Fraction(0)

    def decode(self, code: int) -> Fraction | str:
        """v4.0 §4.7.2 ωDecode."""
        k, p = self.k, self.p
        if code == self.nan:
            return NAN
        if code == self.pinf:
            return INF
        if code == self.ninf:
            return NINF
        negative = False
        if self.signed and code >> (k - 1):
            negative, code = True, code & ((1 << (k - 1)) - 1)
        e = code >> (p - 1)
        t = code & ((1 << (p - 1)) - 1)
        if e == 0:
            v = t * pow2(1 - self.bias - (p - 1))
        else:
            v = ((1 << (p - 1)) + t) * pow2(e - self.bias - (p - 1))
        return -v if negative else v

    def encode(self, x: Fraction | str) -> int:
        """v4.0 §4.7.2 ωEncode of a value of the format (the result of
        saturation): its code."""
        if x == NAN:
            return self.nan
        if x == INF:
            assert self.pinf is not None
            return self.pinf
        if x == NINF:
            assert self.ninf is not None
            return self.ninf
        assert isinstance(x, Fraction)
        if x == 0:
            return 0
        negative = x < 0
        assert self.signed or not negative
        v = -x if negative else x
        p = self.p
        q = max(floor_log2(v), 1 - self.bias) - p + 1
        s = v / pow2(q)
        assert s.denominator == 1, (self.name, x)
        s = s.numerator
        if s >= 1 << (p - 1):  # normal: the exponent field from the binade
            e = q + p - 1 + self.bias
            code = (e << (p - 1)) | (s - (1 << (p - 1)))
        else:
            code = s
        assert code <= self.max_code, (self.name, x)
        return code | (1 << (self.k - 1)) if negative else code


def code_is_even(floor_s: int, q: int, p: int, bias: int) -> bool:
    """v4.0 §4.7.4 CodeIsEven."""
    if p > 1:
        return floor_s % 2 == 0
    return floor_s == 0 or (q + bias) % 2 == 0


def rnite(x: Fraction) -> int:
    """v4.0 §4.7.4 RNITE: x rounded to an integer, ties to even."""
    f = x.numerator // x.denominator
    r = x - f
    if r < Fraction(1, 2) or (r == Fraction(1, 2) and f % 2 == 0):
        return f
    return f + 1


def round_to_precision(x: Fraction | str, p: int, bias: int, mode: str,
                       r: int = 0, n: int = 0) -> Fraction | str:
    """v4.0 §4.7.4 ωRoundToPrecision_{P,B,µ}(X); stochastic modes ``sa``,
    ``sb``, ``sc`` (StochasticA/B/C) take N = ``n`` random bits R = ``r``."""
    if not isinstance(x, Fraction) or x == 0:
        return x
    q = max(floor_log2(abs(x)), 1 - bias) - p + 1
    st = abs(x) / pow2(q)
    fl = st.numerator // st.denominator
    nu = st - fl
    even = code_is_even(fl, q, p, bias)
    half = Fraction(1, 2)
    away = {
        "rtz": False,
        "rup": nu > 0 and x > 0,
        "rdn": nu > 0 and x < 0,
        "rna": nu >= half,
        "rne": nu > half or (nu == half and not even),
        "rto": nu > 0 and even,
    }.get(mode)
    if away is None:
        nn = nu * pow2(n)
        away = {"sa": (nn.numerator // nn.denominator) + r >= 1 << n,
                "sb": ((nu * pow2(n + 1)).numerator // (nu * pow2(n + 1)).denominator)
                + 2 * r + 1 >= 1 << (n + 1),
                "sc": rnite(nn) + r >= 1 << n}[mode]
    s = fl + 1 if away else fl
    z = s * pow2(q)
    return -z if x < 0 else z


def saturate_v4(sat: str, mode: str, x: Fraction | str, signed: bool, extended: bool,
                m_lo: Fraction, m_hi: Fraction) -> Fraction | str:
    """v4.0 §4.7.5 ωSaturate_{M^lo, M^hi}(Sat, Round, X, Σ, ∆), rule by rule
    (line numbers of the report's page 22)."""
    if x == NAN:
        return NAN                                                  # 20
    if isinstance(x, Fraction) and m_lo <= x <= m_hi:
        return x                                                    # 21
    below = x == NINF or (isinstance(x, Fraction) and x < m_lo)
    above = x == INF or (isinstance(x, Fraction) and x > m_hi)
    assert below or above
    if sat == "SatFinite":
        return m_lo if below else m_hi                              # 23-26
    if sat == "SatPropagate":
        if x == INF:
            return INF if extended else m_hi                        # 28-29
        if x == NINF:
            return NINF if signed and extended else m_lo            # 30-31
        return m_lo if below else m_hi                              # 32-33
    assert sat == "SatNone"
    if x == INF:
        return INF if extended else m_hi                            # 35-36
    if x == NINF:
        if signed and extended:
            return NINF                                             # 37
        return NAN if not signed else m_lo                          # 38-39
    if above and mode == "rto" and not signed and extended:
        return m_hi                                                 # 40
    if above and mode in ("rtz", "rdn"):
        return m_hi                                                 # 41
    if below and mode in ("rtz", "rup"):
        return m_lo                                                 # 42
    if below:
        if signed and extended:
            return NINF                                             # 43
        return NAN if not signed else m_lo                          # 44-45
    return INF if extended else m_hi                                # 46-47


def saturate_v321(sat: str, mode: str, x: Fraction | str, signed: bool, extended: bool,
                  m_lo: Fraction, m_hi: Fraction) -> Fraction | str:
    """v3.2.1 §4.9.4 ωSaturate (p.21), rule by rule; its third mode OvfInf
    is passed as ``"SatNone"``.  (v3.2.1's Project calls any mode but
    SatFinite an error for finite formats, yet its Saturate defines the
    results, which are these.)"""
    if x == NAN:
        return NAN
    if isinstance(x, Fraction) and m_lo <= x <= m_hi:
        return x
    below = x == NINF or (isinstance(x, Fraction) and x <= m_lo)
    if sat == "SatFinite":
        return m_lo if below else m_hi
    if x == INF:
        return INF if extended else m_hi
    if x == NINF:
        return NINF if signed and extended else m_lo
    if sat == "SatPropagate":
        return m_lo if below else m_hi
    assert sat == "SatNone"
    if below and mode in ("rtz", "rup"):
        return m_lo
    if not below and mode in ("rtz", "rdn"):
        return m_hi
    if below:
        return NINF if signed and extended else m_lo
    return INF if extended else m_hi


def saturate_r3(sat: str, mode: str, x: Fraction | str, signed: bool, extended: bool,
                m_lo: Fraction, m_hi: Fraction) -> Fraction | str | None:
    """Release 3 §4.7.4 Saturate (v3.0 p.17), rule by rule, with the error
    clause of §4.7.2 Project ("It is an error if Sat ≠ SatFinite if ∆ =
    Finite"):

    * Saturate(∗, ∗, X ∈ [M^lo, M^hi]) → X
    * Saturate(SatFinite, ∗, X ≤ M^lo) → M^lo; (SatFinite, ∗, X ≥ M^hi) → M^hi
    * Saturate(SatPropagate, ∗, X ∈ {±∞}) → X; then X ≤ M^lo → M^lo,
      X ≥ M^hi → M^hi
    * Saturate(OvfInf, ∗, X ∈ {±∞}) → X
    * Saturate(OvfInf, TowardZero ∨ TowardPositive, X ≤ M^lo) → M^lo
    * Saturate(OvfInf, TowardZero ∨ TowardNegative, X ≥ M^hi) → M^hi
    * Saturate(OvfInf, ∗, X ≤ M^lo) → −∞ if Signed, M^lo if Unsigned
    * Saturate(OvfInf, ∗, X ≥ M^hi) → ∞

    ``None`` where the text defines no result: a finite-domain format under
    a mode other than SatFinite, and −∞ kept by SatPropagate or OvfInf in
    an unsigned format (no code holds it).  The third mode is passed as
    ``"SatNone"`` (v4.0's name for it)."""
    if x == NAN:
        return NAN
    if isinstance(x, Fraction) and m_lo <= x <= m_hi:
        return x
    below = x == NINF or (isinstance(x, Fraction) and x < m_lo)
    if sat == "SatFinite":
        return m_lo if below else m_hi
    if not extended:
        return None
    if x in (INF, NINF):
        return None if x == NINF and not signed else x
    if sat == "SatPropagate":
        return m_lo if below else m_hi
    assert sat == "SatNone"
    if below:
        if mode in ("rtz", "rup") or not signed:
            return m_lo
        return NINF
    if mode in ("rtz", "rdn"):
        return m_hi
    return INF


def project(fmt: P3109Format, x: Fraction | str, mode: str, sat: str, text: str = "v4.0",
            r: int = 0, n: int = 0) -> int | None:
    """v4.0 §4.7.3 ωProject: the code of X in ``fmt`` (None where the text
    leaves the result undefined)."""
    if x == NAN:
        return fmt.nan
    rounded = round_to_precision(x, fmt.p, fmt.bias, mode, r, n)
    saturate = SATURATE[text]
    s = saturate(sat, mode, rounded, fmt.signed, fmt.extended, fmt.m_lo, fmt.m_hi)
    if s is None:
        return None
    return fmt.encode(s)


def operate(op: str, x: Fraction | str, y: Fraction | str) -> Fraction | str:
    """The exact result of ``op`` on two decoded operands: v4.0 §4.10.3
    ωAdd and ωSubtract, §4.10.4 ωMultiply, §4.10.5 ωDivide (the same rules
    in release 3 §4.9.3-§4.9.5)."""
    if x == NAN or y == NAN:
        return NAN
    if op == "sub":
        if x in (INF, NINF) and x == y:
            return NAN
        y = NINF if y == INF else INF if y == NINF else -y
        op = "add"
    if op == "add":
        if {x, y} == {INF, NINF}:
            return NAN
        for v in (x, y):
            if v in (INF, NINF):
                return v
        return x + y
    sign = _sign(x) * _sign(y)
    if op == "mul":
        if x in (INF, NINF) or y in (INF, NINF):
            if x == 0 or y == 0:
                return NAN
            return INF if sign > 0 else NINF
        return x * y
    assert op == "div"
    if x in (INF, NINF) and y in (INF, NINF):
        return NAN
    if y == 0:
        return NAN
    if x in (INF, NINF):
        return INF if sign > 0 else NINF
    if y in (INF, NINF):
        return Fraction(0)
    return x / y


def _sign(v: Fraction | str) -> int:
    if v == INF:
        return 1
    if v == NINF:
        return -1
    return -1 if v < 0 else 1


@functools.cache
def eight_bit_formats() -> tuple[P3109Format, ...]:
    """Every K = 8 format: signed P = 1..7, unsigned P = 1..8, both domains."""
    out = []
    for signed, top in ((True, 7), (False, 8)):
        for p in range(1, top + 1):
            for extended in (True, False):
                out.append(P3109Format(8, p, signed, extended))
    return tuple(out)


#: Each text's Saturate.
SATURATE = {"v4.0": saturate_v4, "v3.2.1": saturate_v321, "3": saturate_r3}
