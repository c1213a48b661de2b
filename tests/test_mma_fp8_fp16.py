"""FP8 inputs with an FP16 accumulator and output: ``mma.sync
m16n8k32.f16.{e4m3,e5m2}.{e4m3,e5m2}.f16`` on Ada and RTX Blackwell,
``wgmma.mma_async m64nNk32.f16.e4m3.e4m3`` on Hopper and ``tcgen05.mma
kind::f8f6f4 … .f16`` on Blackwell, following MMA-Sim 2.1.1 (no recorded
row contradicts it).

The oracle here is written from MMA-Sim's stated rules (``t_fdpa`` in
``mmasim/arithmetic/fdpa.py``, its parameters in ``mmasim/nv_ptx/sim.py``),
with Python's Fractions, not from fpsim's code: the FP16 ``c`` joins the
products as one more term (its exponent at least FP16's -14); a zero term has
the exponent ``e_zero``; every term is cut toward zero to ``F`` fractional
bits below the largest exponent and the terms are added exactly; the sum is
rounded once to FP16, to nearest even (a zero is +0).  Ada runs 32 products as two blocks
of 16, the first block's FP16 result the second's ``c``.

| architecture | F | products per block | e_zero |
|---|---|---|---|
| Ada (sm_89), ``mma`` | 13 | 16 | -20 |
| Hopper, ``wgmma`` | 13 | 32 | -21 |
| Blackwell, RTX Blackwell | 25 | 32 | -21 |

Recorded rows (``tests/data/tensorcore/open/``, whose ``c`` is not the one
the GPU used: see that folder's README): B200 E4M3 3,108 and E5M2 3,403 of
5,000 rows reproduced (MMA-Sim's model gives the same outputs on every row);
the H100 FP16-output files store ``c = 0`` for a nonzero ``c`` and are not
counted.  So these rows rest on MMA-Sim's model, not on a recording.
"""

from __future__ import annotations

import math
import zlib
from fractions import Fraction
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from fpsim import mma

F8 = {"e4m3": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2}
EMIN = {"e4m3": -6, "e5m2": -14}          # the smallest normal exponents
RULES = {  # gpu: (F, products per block, e_zero), MMA-Sim 2.1.1
    "ada": (13, 16, -20),
    "h100": (13, 32, -21),
    "b200": (25, 32, -21),
    "rtx-pro-6000": (25, 32, -21),
}
OPEN = Path(__file__).parent / "data" / "tensorcore" / "open"


def _exponent(x: Fraction, emin: int) -> int:
    """floor(log2 |x|), at least ``emin`` (a subnormal's)."""
    n, d = abs(x.numerator), x.denominator
    e = n.bit_length() - d.bit_length()
    if Fraction(n, d) < Fraction(2) ** e:
        e -= 1
    return max(e, emin)


def _block(a, b, c: Fraction, fa: str, fb: str, F: int, e_zero: int) -> Fraction:
    """One t_fdpa: the exact value of the cut sum (before its rounding)."""
    terms, exps = [], []
    for x, y in zip(a, b):
        x, y = Fraction(float(x)), Fraction(float(y))
        p = x * y
        terms.append(p)
        exps.append(e_zero if p == 0 else _exponent(x, EMIN[fa]) + _exponent(y, EMIN[fb]))
    terms.append(c)
    exps.append(e_zero if c == 0 else _exponent(c, -14))
    grid = Fraction(2) ** (max(exps) - F)
    return sum((math.trunc(t / grid) * grid for t in terms), Fraction(0))


def _fp16(x: Fraction) -> np.float16:
    # the cut sum has at most F + 7 significant bits: float64 holds it exactly,
    # so the one rounding is numpy's float64 -> float16 (to nearest even; past
    # 65520 it overflows to infinity)
    assert Fraction(float(x)) == x
    with np.errstate(over="ignore"):
        return np.float16(float(x)) + np.float16(0)   # t_fdpa's `+ 0.0`: a zero is +0


def oracle(gpu: str, a, b, c, fa: str, fb: str) -> np.ndarray:
    """Rows of finite FP8 products; ``c`` finite or infinite (an infinite
    ``c``, given or an earlier block's overflow, stays: every product is
    finite)."""
    F, block, e_zero = RULES[gpu]
    out = np.empty(len(a), np.float16)
    for r in range(len(a)):
        acc = np.float16(c[r])
        for j in range(0, a.shape[1], block):
            if np.isfinite(acc):
                acc = _fp16(_block(a[r, j:j + block], b[r, j:j + block], Fraction(float(acc)),
                                   fa, fb, F, e_zero))
        out[r] = acc
    return out


def _rows(rng, fmt: str, n: int, kind: str) -> np.ndarray:
    codes = rng.integers(0, 256, (n, 32)).astype(np.uint8)
    if kind == "adversarial":
        pick = rng.random((n, 32))
        codes[pick < 0.25] &= 0x87               # small exponents: subnormal products
        codes[(pick >= 0.25) & (pick < 0.4)] = 0  # zero terms
    v = codes.view(F8[fmt])
    finite = np.isfinite(v.astype(np.float32))
    return np.where(finite, v, F8[fmt](1.0)).astype(F8[fmt])


def _c(rng, n: int, kind: str) -> np.ndarray:
    if kind == "adversarial":
        c = rng.standard_normal(n) * np.exp2(rng.integers(-24, 12, n))
        c[rng.random(n) < 0.3] = 0
    else:
        c = rng.standard_normal(n) * 64
    return c.astype(np.float16)


def _same(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """The same bits (a zero's sign included: every zero is +0)."""
    return got.view(np.uint16) == want.view(np.uint16)


@pytest.mark.parametrize("gpu", sorted(RULES))
@pytest.mark.parametrize("pair", [("e4m3", "e4m3"), ("e5m2", "e5m2"), ("e4m3", "e5m2")])
@pytest.mark.parametrize("kind", ["random", "adversarial"])
def test_fp8_to_fp16_equals_mmasims_rules(gpu, pair, kind):
    fa, fb = pair
    rng = np.random.default_rng(zlib.crc32(f"{gpu} {pair} {kind}".encode()))
    a, b = _rows(rng, fa, 400, kind), _rows(rng, fb, 400, kind)
    c = _c(rng, 400, kind)
    unit = mma.preset(gpu, pair if fa != fb else fa, out="fp16")
    got = np.asarray(unit(a, b, c))
    want = oracle(gpu, a, b, c, fa, fb)
    assert got.dtype == np.float16
    bad = np.flatnonzero(~_same(got, want))
    assert not bad.size, [(int(r), float(got[r]), float(want[r])) for r in bad[:5]]


@pytest.mark.parametrize("gpu", sorted(RULES))
def test_fp8_to_fp16_specials(gpu):
    e4 = F8["e4m3"]
    a = np.array([[np.nan] + [1] * 31, [448] * 32, [448] * 32, [1] * 32], e4)
    b = np.array([[1] * 32, [448] * 32, [-448] * 32, [1] * 32], e4)
    c = np.float16([0, 0, 0, np.inf])
    got = np.asarray(mma.preset(gpu, "e4m3", out="fp16")(a, b, c)).view(np.uint16)
    # NaN input: PTX's canonical FP16 NaN; 32 x 448**2 overflows FP16 to +-inf;
    # an infinite c stays infinite
    assert [hex(int(x)) for x in got] == ["0x7fff", "0x7c00", "0xfc00", "0x7c00"]


def test_the_other_gpus_of_an_architecture_share_the_rows():
    # ada and l40s, h100 and h200: the same instruction
    rng = np.random.default_rng(7)
    a, b, c = _rows(rng, "e4m3", 50, "random"), _rows(rng, "e4m3", 50, "random"), _c(rng, 50,
                                                                                       "random")
    for one, other in (("ada", "l40s"), ("h100", "h200")):
        x = np.asarray(mma.preset(one, "e4m3", out="fp16")(a, b, c)).view(np.uint16)
        y = np.asarray(mma.preset(other, "e4m3", out="fp16")(a, b, c)).view(np.uint16)
        assert (x == y).all()


@pytest.mark.parametrize("name, expected", [("B200_E4M3_fp16", 3108), ("B200_E5M2_fp16", 3403)])
def test_recorded_b200_rows_reproduced_as_mmasims_model_does(name, expected):
    # operands, c and d stored as float32 bits (as tests/test_mma.py reads them);
    # c rounded to FP16, as the harness did before the instruction
    z = np.load(OPEN / f"{name}.npz")
    fmt = name.split("_")[1].lower()
    a, b = (z[k].view(np.float32).astype(F8[fmt]) for k in ("a", "b"))
    c = z["c"].view(np.float32).astype(np.float16)
    d = z["d"].view(np.float32).astype(np.float16)
    got = np.asarray(mma.preset("b200", fmt, out="fp16")(a, b, c))
    assert _same(got, oracle("b200", a, b, c, fmt, fmt)).all()
    assert int(_same(got, d).sum()) == expected
