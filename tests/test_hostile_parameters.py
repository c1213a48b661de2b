"""Hostile input, rule 6: parameters are validated where they enter.

A parameter of the wrong type raises TypeError, one of the wrong value
ValueError; the message names the parameter and says what is accepted, and
it comes before any step runs, so no flag reaches the context.  Accepted
edge values are checked against independent oracles (numpy's float32
rounding, Python's random module, hand-derived results)."""

from __future__ import annotations

import math
import random
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fpsim
from fpsim import array, ops, quant
from fpsim.quant import DelayedScaling, LossScaler, quantize, scale_sweep

F16 = np.float16
FP32_MAX = float(np.finfo(np.float32).max)
FP32_TINY = float(np.finfo(np.float32).smallest_subnormal)


def refused(error, call, *fragments):
    """``call()`` raises ``error`` whose message holds every fragment."""
    with pytest.raises(error) as info:
        call()
    for fragment in fragments:
        assert fragment in str(info.value), (fragment, str(info.value))


# -- LossScaler ---------------------------------------------------------------------

@pytest.mark.parametrize("value", [math.nan, 0, 0.0, -1, -math.inf, math.inf, 1e-50, 1e39,
                                   -0.0, Decimal("NaN"), Decimal("1e400"), 10**400])
def test_init_scale_must_be_a_positive_finite_fp32_value(value):
    refused(ValueError, lambda: LossScaler(init_scale=value), "init_scale=", "accepted a positive")


@pytest.mark.parametrize("value", ["65536", None, True, [1.0], 1j, np.array([2.0])],
                         ids=repr)
def test_init_scale_must_be_a_number(value):
    refused(TypeError, lambda: LossScaler(init_scale=value), "init_scale must be a real number")


@pytest.mark.parametrize("name,value", [
    ("growth_factor", 1.0), ("growth_factor", 1.00000001),  # FP32 value 1: no growth
    ("growth_factor", 0.5), ("growth_factor", math.inf), ("growth_factor", math.nan),
    ("growth_factor", 1e39),
    ("backoff_factor", 1.0), ("backoff_factor", 0.999999999),  # FP32 value 1: no backoff
    ("backoff_factor", 0), ("backoff_factor", 1e-50), ("backoff_factor", -0.5),
    ("backoff_factor", math.nan), ("growth_interval", 0), ("growth_interval", -3)])
def test_factors_and_interval_values(name, value):
    refused(ValueError, lambda: LossScaler(**{name: value}), f"{name}=", "accepted")


@pytest.mark.parametrize("name,value", [("growth_factor", "2"), ("backoff_factor", None),
                                        ("growth_interval", 2.5), ("growth_interval", True),
                                        ("growth_interval", "10")])
def test_factors_and_interval_types(name, value):
    refused(TypeError, lambda: LossScaler(**{name: value}), name)


@settings(max_examples=200)
@given(st.floats(FP32_TINY / 2, FP32_MAX, exclude_min=True))
def test_accepted_scales_are_their_fp32_values(x):
    # numpy's float64 -> float32 conversion rounds to nearest even, once
    expect = float(np.float32(x))
    if expect == 0 or math.isinf(expect):
        refused(ValueError, lambda: LossScaler(init_scale=x), "init_scale=")
    else:
        assert LossScaler(init_scale=x).scale == expect


def test_accepted_scales_of_other_types():
    assert LossScaler(init_scale=Fraction(1, 3)).scale == float(np.float32(1 / 3))
    assert LossScaler(init_scale=Decimal("65536")).scale == 65536.0
    assert LossScaler(init_scale=np.float16(2.0), growth_interval=np.int64(3)).scale == 2.0
    assert LossScaler(init_scale=np.array(8.0)).scale == 8.0
    # the smallest FP32 subnormal is positive: a valid (if odd) scale
    assert LossScaler(init_scale=FP32_TINY).scale == FP32_TINY


@pytest.mark.parametrize("value,error", [(None, TypeError), ("False", TypeError),
                                         ([True], TypeError), (2, ValueError),
                                         (0.5, ValueError), (math.nan, ValueError)])
def test_found_inf_is_a_flag(value, error):
    s = LossScaler(init_scale=4.0)
    refused(error, lambda: s.update(value), "found_inf=", "accepted True or False")
    assert s.scale == 4.0  # unchanged


@pytest.mark.parametrize("value,scale", [(True, 2.0), (np.True_, 2.0), (np.array(True), 2.0),
                                         (1.0, 2.0), (0, 8.0), (False, 8.0)])
def test_found_inf_spellings(value, scale):
    s = LossScaler(init_scale=4.0, growth_interval=1)
    s.update(value)
    assert s.scale == scale  # backoff 0.5 after an inf; growth ×2 after a clean step


# -- scale_sweep --------------------------------------------------------------------

G = np.float32([1e-8, 3e-6, 1e-3, 2.0])


@pytest.mark.parametrize("scales", [[-1, math.nan], [math.nan], [0], [-0.0], [math.inf],
                                    [1.0, 1e39], [1e-50], [Decimal("-2")]])
def test_scale_sweep_scales_must_be_positive_fp32_values(scales):
    refused(ValueError, lambda: scale_sweep(G, scales=scales), "scale_sweep(): scales[",
            "accepted a positive")


@pytest.mark.parametrize("scales", [5, "12", b"12", ["1"], [None], [True]], ids=repr)
def test_scale_sweep_scales_must_be_numbers(scales):
    refused(TypeError, lambda: scale_sweep(G, scales=scales), "scale")


def test_scale_sweep_formats_and_gradients():
    refused(TypeError, lambda: scale_sweep(G, formats="fp16"), "formats must be a sequence",
            "('fp16', 'bf16')")
    refused(ValueError, lambda: scale_sweep(G, formats=("fp16", "fp17")), "unknown format")
    for g in (["1e-3"], [1 + 2j], np.array([None, 1.0])):
        refused(TypeError, lambda: scale_sweep(g), "gradients", "accepted real numbers")
    # A valid sweep: 1e-8 × 1 underflows FP16 (below 2**-25), the others do not.
    rows = scale_sweep(G, scales=[1], formats=["fp16"]).rows
    assert rows == [{"scale": 1.0, "format": "fp16", "underflow": 0.25, "overflow": 0.0}]
    # and Python numbers other than floats are gradients too
    rows = scale_sweep([Fraction(1, 2), 2], scales=[Fraction(1, 4)], formats=["fp16"]).rows
    assert rows == [{"scale": 0.25, "format": "fp16", "underflow": 0.0, "overflow": 0.0}]


# -- DelayedScaling and quantize --------------------------------------------------------

@pytest.mark.parametrize("kw,error,fragment", [
    ({"history_len": 0}, ValueError, "history_len=0; accepted an integer >= 1"),
    ({"history_len": 1.5}, TypeError, "history_len must be an integer"),
    ({"interval": "2"}, TypeError, "interval must be an integer"),
    ({"interval": 0}, ValueError, "interval=0"),
    ({"margin": -1}, ValueError, "margin=-1; accepted an integer >= 0"),
    ({"margin": 2.0}, TypeError, "margin must be an integer"),
    ({"rounding": "bogus"}, ValueError, "unknown rounding mode 'bogus'; accepted"),
    ({"saturate": 1}, TypeError, "saturate must be True or False"),
    ({"ctx": "rne"}, TypeError, "ctx must be an fpsim.Context"),
    ({"amax_compute": "mean"}, ValueError, "amax_compute='mean'; accepted"),
])
def test_delayed_scaling_parameters(kw, error, fragment):
    refused(error, lambda: DelayedScaling(**kw), fragment)


@pytest.mark.parametrize("margin", [1100, 10**6, 2**70])
def test_delayed_scaling_margins_beyond_float64(margin):
    # s = (448 / amax) / 2**margin: 2**margin overflows FP32 to +inf (round to
    # nearest), and 448 / inf is +0.  A margin past 1023 raised OverflowError.
    ctx = fpsim.Context()
    ds = DelayedScaling(margin=margin, ctx=ctx)
    ds.step(np.float32([1.0, -0.5]))
    assert float(ds.scale) == 0.0
    assert fpsim.Flag.OVERFLOW in ctx.flags


def test_delayed_scaling_margin_below_float64s_limit_is_unchanged():
    ds = DelayedScaling(margin=3)
    ds.step(np.float32([1.0]))
    assert float(ds.scale) == 448.0 / 8  # (448 / 1) / 2**3, exact


@pytest.mark.parametrize("kw,error,fragment", [
    ({"eps": -1.0}, ValueError, "eps=-1.0; accepted a positive number"),
    ({"eps": 0}, ValueError, "eps=0"),
    ({"eps": math.nan}, ValueError, "eps=nan"),
    ({"eps": math.inf}, ValueError, "eps=inf"),
    ({"eps": 10**400}, ValueError, "accepted a positive number"),
    ({"eps": "1e-3"}, TypeError, "eps must be a real number"),
    ({"rounding": "nearest_odd"}, ValueError, "unknown rounding mode"),
    ({"saturate": "yes"}, ValueError, "unknown saturation mode 'yes'"),
    ({"rng": -1}, ValueError, "rng seed -1 is negative; accepted an int >= 0"),
    ({"rng": 1.5}, TypeError, "rng must be a numpy.random.Generator or an int seed"),
    ({"rng": random.Random(1)}, TypeError, "rng must be a numpy.random.Generator"),
])
def test_quantize_parameters_are_checked_before_any_step(kw, error, fragment):
    ctx = fpsim.Context()
    refused(error, lambda: quantize(X, "e4m3", "channel", ctx, **kw), fragment)
    assert ctx.flags == fpsim.Flag(0)


X = np.float32([[1e-30, 2.0], [3.0, 1e30]])  # steps on these raise flags (INEXACT at least)


@pytest.mark.parametrize("rng,error", [(-1, ValueError), (1.5, TypeError), ("7", TypeError)])
def test_delayed_scaling_step_checks_rng_before_any_step(rng, error):
    ctx = fpsim.Context()
    ds = DelayedScaling(rounding="sr", ctx=ctx)
    refused(error, lambda: ds.step(X, rng=rng), "rng")
    assert ctx.flags == fpsim.Flag(0) and ds.steps == 0
    ds.step(X, rng=7)  # a seed is accepted, and the steps do raise flags
    assert ctx.flags != fpsim.Flag(0)


def test_quantize_ctx_type():
    refused(TypeError, lambda: quantize(np.float32([1.0]), "e4m3", ctx="rne"),
            "ctx must be an fpsim.Context")


# -- contexts and random sources ---------------------------------------------------------

@pytest.mark.parametrize("ctx", [5, "rtz", fpsim.Rounding.RTZ, {"rounding": "rtz"}], ids=repr)
def test_localcontext_takes_a_context(ctx):
    # refused where it is called, before a block is entered
    refused(TypeError, lambda: fpsim.localcontext(ctx), "localcontext() takes a Context or None",
            "by keyword")


def test_localcontext_still_takes_a_context_and_keywords():
    outer = fpsim.Context(rounding="rup")
    with fpsim.localcontext(outer, ftz=True) as inner:
        assert (inner.rounding.value, inner.ftz) == ("rup", True)
        assert fpsim.getcontext() is inner


@pytest.mark.parametrize("seed", [-1, -(2**70), np.int64(-5)], ids=repr)
def test_negative_seeds_are_refused_everywhere(seed):
    refused(ValueError, lambda: fpsim.Context(rng=seed), "rng seed", "accepted an int >= 0")
    refused(ValueError, lambda: array.round(np.float32([0.1]), "fp16", rounding="sr", rng=seed),
            "rng seed", "accepted an int >= 0")


def test_numpy_integer_seeds_are_seeds():
    # Context: a seed s starts random.Random(s)
    ctx = fpsim.Context(rng=np.uint8(3))
    assert ctx.random_bits(32) == random.Random(3).getrandbits(32)
    # array engine: a numpy integer seeds as the int does
    values = np.array([1 / 3, 0.1, 0.7, 1e-5] * 8)
    a = array.encode(values, "fp16", rounding="sr", rng=np.int32(7))
    assert a.tolist() == array.encode(values, "fp16", rounding="sr", rng=7).tolist()


class OutOfRange:
    """An object with numpy's integers() that draws numbers outside [low, high)."""

    def __init__(self, value):
        self.value = value

    def integers(self, low, high, size=None, dtype=None, endpoint=False):
        if size is None:
            return self.value
        return np.full(size, self.value, dtype=np.asarray(self.value).dtype)


@pytest.mark.parametrize("value", [2**40, 2**32, -3, 2**64 - 1], ids=repr)
def test_generators_drawing_out_of_range_are_refused(value):
    # 1/3 in FP16 lies between 0x3555 and 0x3556; an out-of-range random
    # number added to the discarded bits would force the rounding up.
    ctx = fpsim.Context(rounding="sr", sr_bits=32, rng=OutOfRange(value))
    refused(ValueError, lambda: fpsim.FP16.round(Fraction(1, 3), ctx), "rng drew",
            "[0, 2**32)")
    refused(ValueError, lambda: array.round(np.array([1 / 3]), "fp16", ctx), "rng.integers",
            "[0, 2**32)")
    refused(ValueError, lambda: array.round(np.array([1 / 3]), "fp16", rounding="sr",
                                            rng=OutOfRange(value)), "[0, 2**32)")


def test_generators_drawing_the_wrong_count_are_refused():
    class Short:
        def integers(self, low, high, size=None, dtype=None, endpoint=False):
            return np.zeros(1, np.uint64)

    refused(ValueError, lambda: array.round(np.array([0.1, 0.2]), "fp16", rounding="sr",
                                            rng=Short()), "shape (1,)")


@settings(max_examples=50)
@given(st.integers(1, 64), st.integers(0, 2**64 - 1))
def test_in_range_stand_in_generators_round_as_the_kernel_says(sr_bits, raw):
    r = raw % (1 << sr_bits)
    # 1/3 = 0x3555 + 1/3 ulp in FP16: rounds up iff t + r >= 2**R, where t =
    # floor((1/3) × 2**R) (fpsim.rounding's rule, rule 3)
    t = (1 << sr_bits) // 3
    expect = 0x3556 if t + r >= (1 << sr_bits) else 0x3555
    ctx = fpsim.Context(rounding="sr", sr_bits=sr_bits, rng=OutOfRange(np.uint64(r)))
    assert fpsim.FP16.round(Fraction(1, 3), ctx).bits == expect


# -- masked arrays -----------------------------------------------------------------------

MASKED = np.ma.array([1.0, 2.0, 3.0], mask=[False, True, False], dtype=F16)


@pytest.mark.parametrize("call", [
    lambda: array.encode(MASKED, "fp16"),
    lambda: array.round(MASKED.astype(np.float32), "fp16"),
    lambda: array.add(MASKED, np.ones(3, F16)),
    lambda: array.decode(np.ma.array([0x3C00], mask=[True], dtype=np.uint16), "fp16"),
    lambda: array.encode(np.ones(3), "fp16", rounding="sr",
                         random_bits=np.ma.array([1, 2, 3], mask=[0, 1, 0])),
    lambda: ops.sum(MASKED),
    lambda: ops.matmul(MASKED.reshape(1, 3), np.ones((3, 1), F16)),
    lambda: ops.softmax(MASKED),
    lambda: ops.cross_entropy(np.ones((1, 3), F16), np.ma.array([0], mask=[True])),
    lambda: quant.quantize(MASKED, "e4m3"),
    lambda: LossScaler().step(MASKED),
    lambda: scale_sweep(MASKED),
    lambda: fpsim.FP16.round(np.ma.array(1.5, mask=True)),
], ids=["encode", "round", "add", "decode", "random_bits", "sum", "matmul", "softmax",
        "cross_entropy", "quantize", "LossScaler.step", "scale_sweep", "Format.round"])
def test_masked_arrays_are_refused(call):
    refused(TypeError, call, "masked", ".filled(value)")


def test_the_data_of_a_masked_array_is_accepted():
    # what the message suggests works, with the expected values (1 + 3 = 4;
    # the masked element filled with 0)
    assert float(ops.sum(MASKED.filled(0))) == 4.0
    assert float(ops.sum(MASKED.data)) == 6.0


def test_numpy_ma_being_imported_by_another_thread_breaks_no_call(monkeypatch):
    # A Dask worker imports numpy.ma in one thread while a task runs in
    # another: the check for masked arrays saw the half-made module and
    # raised AttributeError (found running library GEMMs on a cluster).
    import sys
    import types

    monkeypatch.setitem(sys.modules, "numpy.ma", types.ModuleType("numpy.ma"))
    assert array.decode(np.array([0x3C00], np.uint16), "fp16").tolist() == [1.0]
    assert fpsim.FP16.round(np.array(1.5)).value == 1.5


# -- numbers that would size an allocation are bounded where they enter -----------------------

def test_delayed_scaling_refuses_a_history_too_long_to_hold():
    from fpsim.quant import DelayedScaling

    with pytest.raises(ValueError, match="history_len=1,000,000,000; accepted 1 to 1,048,576"):
        DelayedScaling(history_len=10**9)
    assert DelayedScaling(history_len=1 << 20).history.shape == (1 << 20,)


@pytest.mark.parametrize("workers", [10**5, 10**9])
def test_local_workers_are_bounded(workers):
    from fpsim._schedulers import max_workers, runner

    with pytest.raises(ValueError, match="more than this machine runs usefully"):
        runner("local", workers, 10.0)
    assert max_workers() >= 64
