"""An independent oracle of Blackwell's block-scaled MMA (MMA-Sim 2.1.1's
ST-FDPA and GST-FDPA, mmasim/arithmetic/fdpa.py), written from its source in
Python integers and Fractions, one output at a time: decoders of each code,
the terms, their truncation toward zero and the FP32 rounding toward zero,
without fpsim."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

NAN, INF, FIN = "nan", "inf", "fin"

ELEMENTS = ("e4m3", "e5m2", "e3m2", "e2m3", "e2m1")
WIDTH = {"e4m3": 8, "e5m2": 8, "e3m2": 6, "e2m3": 6, "e2m1": 4}

# name -> (exponent bits, mantissa bits, bias, has infinities, NaN only at all ones)
LAYOUT = {"e4m3": (4, 3, 7, False, True), "e5m2": (5, 2, 15, True, False),
          "e3m2": (3, 2, 3, False, False), "e2m3": (2, 3, 1, False, False),
          "e2m1": (2, 1, 1, False, False), "fp32": (8, 23, 127, True, False)}


def decode(code: int, name: str) -> tuple:
    """(FIN, value, exponent) with value = s * 2**exponent... as MMA-Sim's
    frexp_and_normalize: exponent = max(floor(log2|x|), emin), the value
    exact; (INF, sign) or (NAN,)."""
    E, M, bias, has_inf, nan_ones = LAYOUT[name]
    sign = -1 if (code >> (E + M)) & 1 else 1
    e = (code >> M) & ((1 << E) - 1)
    m = code & ((1 << M) - 1)
    if e == (1 << E) - 1:
        if has_inf:
            return (NAN,) if m else (INF, sign)
        if nan_ones and m == (1 << M) - 1:
            return (NAN,)
    if e == 0:
        return (FIN, sign * Fraction(m, 1 << M) * Fraction(2) ** (1 - bias), 1 - bias)
    return (FIN, sign * (1 + Fraction(m, 1 << M)) * Fraction(2) ** (e - bias), e - bias)


def decode_scale(code: int, scale: str) -> tuple:
    if scale == "e8m0":
        return (NAN,) if code == 0xFF else (FIN, Fraction(2) ** (code - 127), code - 127)
    return decode(code & 0x7F, "e4m3")            # UE4M3: the sign bit is ignored


def _rz_fp32(S: int, q: int) -> int:
    """S * 2**q rounded toward zero into FP32; 2**128 or more: infinity;
    zero: +0."""
    if S == 0:
        return 0
    sign = 0x80000000 if S < 0 else 0
    M = abs(S)
    E = q + M.bit_length() - 1
    if E < -126:
        sh = -149 - q
        m = M << -sh if sh <= 0 else M >> sh
        return sign | m if m else 0
    if E > 127:
        return sign | 0x7F800000
    sh = M.bit_length() - 24
    m = M >> sh if sh > 0 else M << -sh
    return sign | ((E + 127) << 23) | (m - (1 << 23))


def _special(items: list) -> int | None:
    if any(t[0] == NAN for t in items):
        return 0x7FFFFFFF
    signs = {t[1] for t in items if t[0] == INF}
    if len(signs) == 2:
        return 0x7FFFFFFF
    if signs:
        return 0xFF800000 if -1 in signs else 0x7F800000
    return None


def _fused(terms: list, F: int) -> int:
    """terms: (exact value, exponent); aligned to the largest exponent with F
    fraction bits, each truncated toward zero, added exactly, rounded."""
    emax = max(e for _, e in terms)
    S = sum(math.trunc(v * Fraction(2) ** (F - emax)) for v, _ in terms)
    return _rz_fp32(S, emax - F)


def st_fdpa(a: list, b: list, fa: str, fb: str, c: int, sa: int, sb: int, scale: str = "e8m0",
            F: int = 25, e_zero: int = -133) -> int:
    """kind::mxf8f6f4: element codes a, b (32), FP32 code c, scale codes."""
    alpha, beta = decode_scale(sa, scale), decode_scale(sb, scale)
    if alpha[0] == NAN or beta[0] == NAN:
        return 0x7FFFFFFF
    items, terms = [], []
    for x, y in zip(a, b):
        u, v = decode(x, fa), decode(y, fb)
        if NAN in (u[0], v[0]):
            items.append((NAN,))
        elif INF in (u[0], v[0]):
            other = v if u[0] == INF else u
            if other[0] == FIN and other[1] == 0:
                items.append((NAN,))
            else:
                su = u[1] if u[0] == INF else (1 if u[1] > 0 else -1)
                sv = v[1] if v[0] == INF else (1 if v[1] > 0 else -1)
                items.append((INF, su * sv))
        else:
            value = u[1] * v[1] * alpha[1] * beta[1]
            terms.append((value, e_zero if value == 0 else u[2] + v[2] + alpha[2] + beta[2]))
    cc = decode(c, "fp32")
    if cc[0] != FIN:
        items.append(cc)
    special = _special(items)
    if special is not None:
        return special
    terms.append((cc[1], e_zero if cc[1] == 0 else cc[2]))
    return _fused(terms, F)


def gst_fdpa(a: list, b: list, c: int, sa: list, sb: list, scale: str, block: int,
             G: int = 16, F: int = 35, e_zero: int = -139) -> int:
    """kind::mxf4 / mxf4nvf4: E2M1 codes a, b (64), scale codes per block."""
    alphas = [decode_scale(s, scale) for s in sa]
    betas = [decode_scale(s, scale) for s in sb]
    cc = decode(c, "fp32")
    if any(s[0] == NAN for s in alphas + betas) or cc[0] == NAN:
        return 0x7FFFFFFF
    if cc[0] == INF:
        return 0xFF800000 if cc[1] < 0 else 0x7F800000
    terms = []
    for g in range(len(a) // G):
        prods = [decode(a[k], "e2m1")[1] * decode(b[k], "e2m1")[1]
                 for k in range(g * G, (g + 1) * G)]
        alpha, beta = alphas[g * G // block], betas[g * G // block]
        zero = all(p == 0 for p in prods) or alpha[1] == 0 or beta[1] == 0
        terms.append((sum(prods) * alpha[1] * beta[1],
                      e_zero if zero else alpha[2] + beta[2]))
    terms.append((cc[1], e_zero if cc[1] == 0 else cc[2]))
    return _fused(terms, F)


def codes(rng, name, shape, adversarial):
    """Random element codes; adversarial: zeros, subnormals and near-max
    magnitudes mixed in (test inputs, not part of the oracle)."""
    top = 1 << WIDTH[name]
    c = rng.integers(0, top, shape, dtype=np.uint16)
    if adversarial:
        # zeros, the largest magnitudes and subnormals (exponent field 0)
        pick = rng.random(shape)
        c = np.where(pick < 0.2, 0, c)
        sub = rng.integers(0, 1 << (WIDTH[name] - 1 - {"e4m3": 4, "e5m2": 5, "e3m2": 3,
                                                         "e2m3": 2, "e2m1": 2}[name]), shape)
        c = np.where((pick >= 0.2) & (pick < 0.4), sub, c)
        c = np.where((pick >= 0.4) & (pick < 0.5), top // 2 - 2, c)   # near the max
    return c.astype(np.uint8)


def fp32_codes(rng, n, adversarial):
    """Random FP32 codes of c; adversarial: values of every binade and zeros."""
    if not adversarial:
        return rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    v = rng.standard_normal(n) * np.exp2(rng.integers(-150, 128, n))
    v[rng.random(n) < 0.2] = 0.0
    with np.errstate(over="ignore"):  # (beyond FP32's range: infinities)
        return v.astype(np.float32).view(np.uint32)
