"""Comparisons under DAZ: a unit that reads subnormal operands as zero (x86's
DAZ, Arm's FZ) compares them as zeros too; the scalar and array paths agree
on every pair of E4M3 codes, and on hand-picked FP16 cases."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import fpsim
from fpsim import arith, array

F16 = fpsim.FP16


@pytest.mark.parametrize("daz,expected", [(False, (False, True, True)),
                                          (True, (True, False, False))])
def test_a_subnormal_compares_as_zero_only_under_daz(daz, expected):
    ctx = fpsim.Context(daz=daz)
    tiny, zero, neg_tiny = F16.from_bits(0x0001), F16.from_bits(0x0000), F16.from_bits(0x8001)
    assert (arith.eq(tiny, zero, ctx), arith.lt(zero, tiny, ctx),
            arith.lt(neg_tiny, tiny, ctx)) == expected
    got = (array.eq(np.uint16([1]), np.uint16([0]), ctx, fmt="fp16")[0],
           array.lt(np.uint16([0]), np.uint16([1]), ctx, fmt="fp16")[0],
           array.lt(np.uint16([0x8001]), np.uint16([1]), ctx, fmt="fp16")[0])
    assert tuple(bool(g) for g in got) == expected
    # normal values are untouched
    assert arith.lt(F16.from_bits(0x0400), F16.from_bits(0x0401), ctx)


@pytest.mark.exhaustive
@pytest.mark.parametrize("name", ["eq", "lt", "le", "gt", "ge", "unordered"])
def test_every_e4m3_pair_scalar_equals_array_under_daz(name):
    ctx = fpsim.Context(daz=True)
    codes = np.arange(256, dtype=np.uint8)
    a, b = (x.ravel() for x in np.meshgrid(codes, codes, indexing="ij"))
    got, flags = getattr(array, name)(a, b, ctx, fmt="e4m3", return_flags=True)
    for i, (x, y) in enumerate(itertools.product(range(256), repeat=2)):
        c = fpsim.Context(daz=True)
        expected = getattr(arith, name)(fpsim.E4M3.from_bits(x), fpsim.E4M3.from_bits(y), c)
        assert (bool(got[i]), int(flags[i])) == (expected, c.flags.value), (name, x, y)
