"""The decoding a Float carries for the arithmetic (fpsim.value.decoded).

Interned Floats (formats up to 16 bits, made by ``round``/``from_bits``) are
decoded when made; any other Float (``Float(fmt, bits)``, wider formats) is
decoded when an operation first reads it.  These tests check the decoding
against the public view of each value, and that both kinds of operand give
the same results, flags included; the FP32 chain checks fresh results used as
operands against numpy's float32 arithmetic.
"""

from __future__ import annotations

import random
from fractions import Fraction

import numpy as np
import pytest

import fpsim
from fpsim import FP16, FP32, arith
from fpsim.value import Float, decoded

SMALL = [f for f in fpsim.formats() if f.width <= 16]
WIDE = [f for f in fpsim.formats() if f.width > 16]


def _check_decoding(x: Float) -> None:
    cls, negative, sig, exp = decoded(x)
    assert negative == x.is_negative, hex(x.bits)
    if x.is_nan:
        assert cls == (3 if x.is_signaling else 2), hex(x.bits)
        return
    if x.is_inf:
        assert cls == 1, hex(x.bits)
        return
    fmt = x.fmt
    assert cls == 0, hex(x.bits)
    assert Fraction(sig) * Fraction(2) ** exp == abs(x.value), hex(x.bits)
    assert 0 <= sig < 1 << fmt.precision, hex(x.bits)
    # Normal significands carry the implicit bit; subnormal ones do not.
    assert (sig >> fmt.mantissa_bits == 1) == (not x.is_subnormal and not x.is_zero), hex(x.bits)


@pytest.mark.parametrize("fmt", SMALL, ids=lambda f: f.name)
def test_every_code_decodes_to_its_value_interned_or_not(fmt):
    for code in range(1 << fmt.width):
        interned, fresh = fmt.from_bits(code), Float(fmt, code)
        assert fresh is not interned
        _check_decoding(interned)
        assert decoded(fresh) == decoded(interned), hex(code)


@pytest.mark.parametrize("fmt", WIDE, ids=lambda f: f.name)
def test_wide_codes_decode_to_their_values(fmt):
    rng = random.Random(fmt.width)
    top = fmt.sign_bit | fmt.magnitude_mask
    edges = [0, 1, fmt.max_code, fmt.max_code + 1, top, fmt.sign_bit, fmt.sign_bit | 1,
             (1 << fmt.mantissa_bits) - 1, 1 << fmt.mantissa_bits]
    for code in edges + [rng.getrandbits(fmt.width) for _ in range(20000)]:
        x = fmt.from_bits(code)
        _check_decoding(x)
        _check_decoding(x)  # the second read is the stored decoding


SPECIAL_VALUES = [0.0, -0.0, 1.0, -1.5, 2.0**-24, -(2.0**-20), 65504.0, float("inf"),
                  float("-inf"), float("nan")]


@pytest.mark.parametrize("fmt", [FP16, fpsim.BF16, fpsim.E4M3, fpsim.E5M2], ids=lambda f: f.name)
def test_fresh_operands_give_the_results_and_flags_of_interned_ones(fmt):
    rng = random.Random(7)
    codes = [fmt.round(v, saturate=True).bits for v in SPECIAL_VALUES]
    codes += [rng.getrandbits(fmt.width) for _ in range(300)]
    if fmt.has_nan and fmt.specials.value == "ieee":
        codes.append(fmt.inf_code | 1)  # a signaling NaN
    ops = {"add": arith.add, "sub": arith.sub, "mul": arith.mul, "div": arith.div}
    for a in codes:
        for b in rng.sample(codes, 12):
            for name, op in ops.items():
                got = []
                for x, y in ((fmt.from_bits(a), fmt.from_bits(b)), (Float(fmt, a), Float(fmt, b))):
                    ctx = fpsim.Context()
                    got.append((op(x, y, ctx).bits, ctx.flags))
                assert got[0] == got[1], (name, hex(a), hex(b))
            c = rng.choice(codes)
            got = []
            for x, y, z in ((fmt.from_bits(a), fmt.from_bits(b), fmt.from_bits(c)),
                            (Float(fmt, a), Float(fmt, b), Float(fmt, c))):
                ctx = fpsim.Context()
                got.append((arith.fma(x, y, z, ctx).bits, arith.sqrt(x, ctx).bits, ctx.flags))
            assert got[0] == got[1], ("fma/sqrt", hex(a), hex(b), hex(c))


def test_fp32_chain_of_fresh_results_matches_numpy_float32():
    # Each fpsim result is a new, undecoded FP32 Float that the next step
    # reads as an operand; numpy's float32 arithmetic rounds to nearest even.
    rng = np.random.default_rng(3)
    a = rng.uniform(0.5, 1.5, 3000).astype(np.float32)
    b = rng.uniform(-1.0, 1.0, 3000).astype(np.float32)
    x, want = FP32.round(1.0), np.float32(1.0)
    ctx = fpsim.Context()
    for ai, bi in zip(a, b):
        fa, fb = FP32.from_bits(int(ai.view(np.uint32))), FP32.from_bits(int(bi.view(np.uint32)))
        x = arith.sqrt(arith.abs(arith.div(arith.sub(arith.mul(x, fa, ctx), fb, ctx), fa, ctx)),
                       ctx)
        x = arith.add(x, fb, ctx)
        want = np.sqrt(np.abs((want * ai - bi) / ai)) + bi
        assert x.bits == int(want.view(np.uint32))
