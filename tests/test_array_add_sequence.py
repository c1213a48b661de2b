"""fpsim.array.add_sequence: the running sum along the first axis equals the
step-by-step loop it declares, codes and flags: against numpy's float32
additions (IEEE round-to-nearest-even) with exact Fractions deciding
INEXACT, and against the scalar model in every mode and format; for FP32 in
round-to-nearest-even both through the machine's float32 addition and,
with that lane switched off, through the kernel; for FP16 in
round-to-nearest-even against numpy's float16 additions, with and without
the lane of exact float64 sums rounded by numpy's cast."""

from __future__ import annotations

from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

import fpsim
from fpsim import array
from fpsim.array import _native


def fp32_terms(seed: int, k: int = 40, n: int = 120) -> np.ndarray:
    """Terms whose running sums cancel, reach subnormals, stay exact or
    lose bits, with zeros of both signs."""
    rng = np.random.default_rng(seed)
    t = (rng.standard_normal((k, n)) * np.exp2(rng.integers(-30, 30, (k, n)))).astype(np.float32)
    t[:, :10] = np.float32(2.0**-126) * rng.integers(-3, 4, (k, 10)).astype(np.float32)
    t[:, 10:20] = np.where(rng.random((k, 10)) < 0.5, np.float32(-0.0), np.float32(0.0))
    t[1::2, 20:30] = -t[0::2, 20:30]  # exact cancellation to zero
    t[:, 30:40] = np.float32(2.0**-149) * rng.integers(-5, 6, (k, 10)).astype(np.float32)
    return t


def numpy_oracle(terms: np.ndarray, initial: np.ndarray) -> tuple[np.ndarray, bool]:
    """numpy float32 additions one at a time, and whether any was inexact
    (the float32 sum against the exact sum of the two Fractions)."""
    acc = initial.copy()
    inexact = False
    for row in terms:
        new = acc + row
        for a, b, s in zip(acc.tolist(), row.tolist(), new.tolist()):
            if np.isfinite(s) and Fraction(a) + Fraction(b) != Fraction(s):
                inexact = True
        acc = new
    return acc, inexact


def scalar_oracle(codes: np.ndarray, fmt, ctx_kwargs: dict, initial: np.ndarray | None
                  ) -> tuple[list[int], fpsim.Flag]:
    ctx = fpsim.Context(**ctx_kwargs)
    make = fmt.from_bits
    acc = [make(0)] * codes.shape[1] if initial is None else [make(int(c)) for c in initial]
    for row in codes:
        acc = [fpsim.arith.add(a, make(int(c)), ctx) for a, c in zip(acc, row)]
    return [a.bits for a in acc], ctx.flags


@pytest.mark.parametrize("native_lane", [True, False])
def test_fp32_rne_against_numpy(native_lane, monkeypatch):
    if not native_lane:
        monkeypatch.setattr(_native, "float32_adds_are_ieee", lambda: False)
    else:
        assert _native.float32_adds_are_ieee()  # the lane is really exercised here
    for seed in range(4):
        terms = fp32_terms(seed)
        initial = np.where(np.arange(terms.shape[1]) % 2, np.float32(-0.0), np.float32(0.0))
        want, inexact = numpy_oracle(terms, np.zeros(terms.shape[1], np.float32))
        ctx = fpsim.Context()
        got = array.add_sequence(terms, ctx)
        assert got.dtype == np.float32
        assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
        assert ctx.flags == (fpsim.Flag.INEXACT if inexact else fpsim.Flag(0))
        want, _ = numpy_oracle(terms, initial)
        got = array.add_sequence(terms, fpsim.Context(), initial=initial)
        assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


def fp16_terms(seed: int, k: int = 60, n: int = 90) -> np.ndarray:
    """FP16 terms whose running sums cancel, pass through subnormals, stay
    exact or lose bits, with zeros of both signs."""
    rng = np.random.default_rng(seed)
    t = (rng.standard_normal((k, n)) * np.exp2(rng.integers(-20, 12, (k, n)))).astype(np.float16)
    t[:, :10] = np.float16(2.0**-24) * rng.integers(-9, 10, (k, 10)).astype(np.float16)
    t[:, 10:20] = np.where(rng.random((k, 10)) < 0.5, np.float16(-0.0), np.float16(0.0))
    t[1::2, 20:30] = -t[0::2, 20:30]  # exact cancellation to zero
    t[:, 30:40] = np.float16(1.0) + np.float16(2.0**-10) * rng.integers(0, 4, (k, 10))
    return t


@pytest.mark.parametrize("native_lane", [True, False])
def test_fp16_rne_against_numpy(native_lane, monkeypatch):
    """numpy's float16 addition rounds correctly (float32 holds 2 * 11 + 2
    bits: the double rounding through it is innocuous)."""
    if not native_lane:
        monkeypatch.setattr(_native, "float16_casts_are_ieee", lambda: False)
    else:
        assert _native.float16_casts_are_ieee()
    calls = []
    real = _native.running_sum_fp16
    monkeypatch.setattr(_native, "running_sum_fp16", lambda *a: calls.append(1) or real(*a))
    for seed in range(4):
        terms = fp16_terms(seed)
        for initial in (np.zeros(terms.shape[1], np.float16),
                        np.where(np.arange(terms.shape[1]) % 2, np.float16(-0.0),
                                 np.float16(0.0))):
            want, inexact = numpy_oracle(terms, initial)
            ctx = fpsim.Context()
            got = array.add_sequence(terms, ctx, initial=initial)
            assert got.dtype == np.float16
            assert np.array_equal(got.view(np.uint16), want.view(np.uint16))
            assert ctx.flags == (fpsim.Flag.INEXACT if inexact else fpsim.Flag(0))
    assert bool(calls) == native_lane


def test_fp16_overflow_and_specials_take_the_step_by_step_path():
    terms = np.float16([[60000.0, np.inf, np.nan, 1.0, 65504.0],
                        [60000.0, -np.inf, 1.0, -65504.0, 65504.0],
                        [-60000.0, 1.0, 1.0, 65504.0, -65504.0]])
    for saturate in (False, True):
        ctx = fpsim.Context(saturate=saturate)
        got = array.add_sequence(terms, ctx)
        want, flags = scalar_oracle(terms.view(np.uint16), fpsim.FP16,
                                    {"saturate": saturate}, None)
        assert got.view(np.uint16).tolist() == want
        assert ctx.flags == flags
        assert fpsim.Flag.OVERFLOW in flags


def test_exact_sums_raise_nothing():
    terms = np.float32([[1.0, 2.0**-149], [2.0, 2.0**-149], [-3.0, -2.0**-148]])
    ctx = fpsim.Context()
    got = array.add_sequence(terms, ctx)
    assert got.tolist() == [0.0, 0.0] and not np.signbit(got).any()
    assert ctx.flags == fpsim.Flag(0)


def test_overflow_and_specials_take_the_step_by_step_path():
    big = np.float32(3e38)
    terms = np.float32([[big, np.inf, np.nan, 1.0], [big, -np.inf, 1.0, -big],
                        [-big, 1.0, 1.0, big]])
    ctx = fpsim.Context()
    got = array.add_sequence(terms, ctx)
    want, flags = scalar_oracle(terms.view(np.uint32), fpsim.FP32, {}, None)
    assert got.view(np.uint32).tolist() == want
    assert ctx.flags == flags
    assert fpsim.Flag.OVERFLOW in flags and fpsim.Flag.INVALID in flags


@pytest.mark.parametrize("fmt", ["fp32", "fp16", "bf16", "e4m3", "e5m2"])
@pytest.mark.parametrize("settings", [
    {"rounding": "rne"}, {"rounding": "rtz"}, {"rounding": "rup"}, {"rounding": "rdn"},
    {"rounding": "rna"}, {"rounding": "rne", "ftz": True, "daz": True},
    {"rounding": "rne", "saturate": True}])
def test_every_mode_and_format_against_the_scalar_model(fmt, settings):
    f = fpsim.format(fmt)
    rng = np.random.default_rng(len(fmt) * 7 + len(settings))
    values = rng.standard_normal((12, 30)) * np.exp2(rng.integers(-12, 12, (12, 30)))
    codes = array.encode(values, f, saturate=True)
    initial = array.encode(rng.standard_normal(30), f)
    for init in (None, initial):
        ctx = fpsim.Context(**settings)
        got = array.add_sequence(codes, ctx, fmt=f, initial=init)
        want, flags = scalar_oracle(codes, f, settings, init)
        assert got.tolist() == want
        assert ctx.flags == flags


def test_stochastic_rounding_draws_like_the_loop():
    codes = array.encode(np.linspace(-3, 3, 60).reshape(6, 10), "bf16")
    got = array.add_sequence(codes, fmt="bf16", rounding="sr", rng=np.random.default_rng(5))
    acc = np.zeros(10, np.uint16)
    gen = np.random.default_rng(5)
    for row in codes:
        acc = array.add(acc, row, fmt="bf16", rounding="sr", rng=gen)
    assert np.array_equal(got, acc)


def test_typed_values_in_typed_values_out():
    t = np.ones((3, 2), ml_dtypes.bfloat16)
    got = array.add_sequence(t)
    assert got.dtype == ml_dtypes.bfloat16 and got.tolist() == [3.0, 3.0]


def test_bad_input():
    with pytest.raises(ValueError, match="at least one axis"):
        array.add_sequence(np.float32(1.0))
    with pytest.raises(ValueError, match="does not broadcast"):
        array.add_sequence(np.ones((3, 2), np.float32), initial=np.ones(3, np.float32))
    with pytest.raises(TypeError, match="both as values"):
        array.add_sequence(np.ones((3, 2), np.float32), initial=np.zeros(2, np.uint32))
    with pytest.raises(TypeError, match="needs fmt="):
        array.add_sequence(np.ones((3, 2), np.uint16))
