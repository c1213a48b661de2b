"""Hostile input, round 2: the caller's numpy error state, exotic numeric
inputs, random bits, and junk arguments.

* The caller's environment changes nothing: under ``np.seterr(all="raise")``,
  ``np.errstate(all="raise")`` or warnings turned into errors, every public
  call returns the bits it returns in numpy's default state (the oracle),
  raises what it raises there, and leaves the caller's state as it was.
* Every numpy scalar type is read exactly (np.longdouble by its exact ratio;
  oracles: the exact value, worked by hand, against each format's grid) or
  refused by name; an array subclass (np.matrix, np.recarray, np.memmap)
  is read as the plain array of its data (oracle: the same call on that
  ndarray); codes out of a format's range are a ValueError.
* Random bits and their widths are checked one way everywhere, with one
  message.
* Junk arguments (negative, float for int, None, str, huge, bool where int)
  raise TypeError or ValueError naming the parameter, never a wrong answer
  or a foreign exception.
"""

from __future__ import annotations

import math
import threading
import time
import warnings
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

import fpsim
import fpsim.testfloat as tf
from fpsim import Flag, array, ops, quant, rounding, testing
from fpsim.modes import Rounding
from fpsim.testing import packing

F16, F32, BF16 = np.float16, np.float32, ml_dtypes.bfloat16


def refused(error, call, *fragments):
    """``call()`` raises ``error`` whose message holds every fragment."""
    with pytest.raises(error) as info:
        call()
    for fragment in fragments:
        assert fragment in str(info.value), (fragment, str(info.value))
    return info.value


# -- class 4: the caller's numpy error state ------------------------------------------

# Ordinary inputs whose steps underflow, overflow, divide by zero and meet
# NaNs and infinities inside numpy (fpsim handles each case itself).
V32 = F32([1.0, -100.0, 50.0, -1e4, 1e-30, 3e38, -3e38, 1e-45, np.inf, -np.inf, np.nan, 0.0,
           -0.0, 88.0, -88.0, 100.0, 65504.0, 70000.0])
with np.errstate(over="ignore"):
    V16, VBF = V32.astype(F16), V32.astype(BF16)
V64 = np.float64([1e-300, 1e300, -1e-320, 1.0, np.nan, np.inf, 1e-45, 3.4e38, 1e39, -5e-324])
ROWS32, ROWS16, ROWSBF = V32.reshape(2, -1), V16.reshape(2, -1), VBF.reshape(2, -1)
BLOCK = np.tile(V32[:16], 2).reshape(1, 32)
FINITE = V32[np.isfinite(V32)]


def _public_calls():
    sr = {"rounding": "sr", "rng": 3}
    calls = {
        "encode f64->fp32 (the report)": lambda: array.encode(np.float64([1e-300]), "fp32"),
        "encode f64->fp16": lambda: array.encode(V64, "fp16", return_flags=True),
        "encode f64->e4m3": lambda: array.encode(V64, "e4m3"),
        "encode f64->p3109": lambda: array.encode(V64, "binary8p3se"),
        "encode f32->bf16": lambda: array.encode(V32, "bf16"),
        "encode f32->e5m2 rtz": lambda: array.encode(V32, "e5m2", rounding="rtz"),
        "encode sr": lambda: array.encode(V64, "fp16", **sr),
        "round tf32": lambda: array.round(V64, "tf32"),
        "decode e4m3": lambda: array.decode(np.arange(256, dtype=np.uint8), "e4m3"),
        "decode fp16": lambda: array.decode(np.arange(0, 65536, 7, dtype=np.uint16), "fp16"),
        "decode e8m0": lambda: array.decode(np.arange(256, dtype=np.uint8), "e8m0"),
        "convert": lambda: array.convert(np.arange(0, 65536, 3, dtype=np.uint16), "fp16",
                                         "e4m3"),
        "add": lambda: array.add(V32, V32[::-1]),
        "add16": lambda: array.add(V16, V16[::-1], return_flags=True),
        "sub": lambda: array.sub(V32, V32[::-1]),
        "mul": lambda: array.mul(V32, V32[::-1]),
        "mul16": lambda: array.mul(V16, V16[::-1]),
        "mulbf": lambda: array.mul(VBF, VBF[::-1]),
        "div": lambda: array.div(V32, V32[::-1]),
        "div16": lambda: array.div(V16, V16[::-1]),
        "fma": lambda: array.fma(V32, V32[::-1], V32),
        "fma16": lambda: array.fma(V16, V16[::-1], V16),
        "sqrt": lambda: array.sqrt(V32),
        "sqrt16": lambda: array.sqrt(V16),
        "add sr": lambda: array.add(V16, V16[::-1], **sr),
        "add_sequence": lambda: array.add_sequence(ROWS32),
        "add_sequence16": lambda: array.add_sequence(ROWS16),
        "lt": lambda: array.lt(V32, V32[::-1], return_flags=True),
        "eq": lambda: array.eq(V16, V16[::-1]),
        "gelu tanh": lambda: ops.gelu(V16, approximate="tanh"),
        "sum": lambda: ops.sum(V32),
        "sum pairwise": lambda: ops.sum(V16, order="pairwise"),
        "mean": lambda: ops.mean(ROWS16, axis=1),
        "dot": lambda: ops.dot(V16, V16),
        "dot bf16": lambda: ops.dot(VBF, VBF, accumulate="bf16"),
        "matmul": lambda: ops.matmul(ROWS16, ROWS16.T),
        "matmul32": lambda: ops.matmul(ROWS32, ROWS32.T),
        "mse_loss": lambda: ops.mse_loss(V16, V16[::-1]),
        "cross_entropy": lambda: ops.cross_entropy(ROWS16, np.array([0, 3])),
        "golden exp": lambda: ops.golden("exp", fpsim.FP16.round(-20)),
        "quantize tensor": lambda: quant.quantize(ROWS32, "e4m3").data,
        "quantize channel": lambda: quant.quantize(ROWS32, "e4m3", "channel").data,
        "quantize mx": lambda: quant.quantize(BLOCK, "e2m1", "mx").data,
        "dequantize": lambda: quant.quantize(ROWS32, "e4m3", "channel").dequantize(),
        "error_report": lambda: str(quant.error_report(
            ROWS32, quant.quantize(ROWS32, "e4m3", "channel"))),
        "DelayedScaling": lambda: quant.DelayedScaling().step(V32).data,
        "LossScaler": lambda: quant.LossScaler().step(V32),
        "scale_sweep": lambda: quant.scale_sweep(V32).rows,
        "int round_array": lambda: quant.INT4.round_array(FINITE),
        "int round_array, wide grid": lambda: quant.IntFormat("q", 8, 60).round_array(
            np.float64([1e308, 1e-320])),
        "scale_table": lambda: quant.scale_table(),
        "compare": lambda: str(testing.compare(V32, V32[::-1])),
        "kappa": lambda: testing.kappa(V16, V16[::-1]),
        "TestFloat mulAdd": lambda: list(tf.generate("f16_mulAdd", n=200)),
        "TestFloat div sr": lambda: list(tf.generate("f32_div", fpsim.Context(rounding="sr"),
                                                     n=200)),
        "TestFloat to e4m3": lambda: list(tf.generate("f64_to_e4m3", n=200)),
        "scalar from numpy": lambda: fpsim.FP16.round(np.float64(1e-300)),
        "scalar from longdouble": lambda: fpsim.FP16.round(np.longdouble(1e-300)),
    }
    for name in ("exp", "log", "tanh", "erf", "rsqrt", "reciprocal"):
        for label, v in (("32", V32), ("16", V16), ("bf", VBF)):
            calls[f"{name}{label}"] = lambda n=name, v=v: getattr(ops, n)(v)
    for name in ("softmax", "log_softmax", "layer_norm", "rms_norm", "relu", "sigmoid", "silu",
                 "gelu"):
        for label, v in (("32", ROWS32), ("16", ROWS16), ("bf", ROWSBF)):
            calls[f"{name}{label}"] = lambda n=name, v=v: getattr(ops, n)(v)
    return calls


CALLS = _public_calls()


def _outcome(call):
    """What a call gives, comparable bit for bit: its result's bytes (and
    dtype and shape), or its exception's type and message."""
    try:
        return "result", _bits(call())
    except Exception as exc:  # noqa: BLE001  (the exception is the outcome)
        return "raised", type(exc).__name__, str(exc)


def _bits(x):
    if isinstance(x, np.ndarray):
        return x.dtype.str, x.shape, x.tobytes()
    if isinstance(x, (tuple, list)):
        return type(x).__name__, [_bits(v) for v in x]
    return repr(x)


@pytest.fixture(scope="module")
def default_outcomes():
    with np.errstate(all="warn"), warnings.catch_warnings():
        warnings.simplefilter("ignore")   # numpy's default state, its warnings not shown
        return {name: _outcome(call) for name, call in CALLS.items()}


def test_the_reported_calls_raise_nothing_under_seterr_raise():
    old = np.seterr(all="raise")
    try:
        codes = array.encode(np.float64([1e-300]), "fp32")   # FloatingPointError before
        x = np.float32([1.0, -100.0, 50.0, -1e4])
        for fn in (ops.exp, ops.sigmoid, ops.silu, ops.softmax, ops.log_softmax):
            fn(x)
            fn(x.astype(F16))
        assert np.geterr()["under"] == "raise"   # the caller's state, kept
    finally:
        np.seterr(**old)
    assert codes.tolist() == [0]   # 1e-300 underflows FP32 to +0


@pytest.mark.parametrize("state", ["raise", "warn"])
def test_public_calls_give_the_default_states_bits_under_any_error_state(state,
                                                                        default_outcomes):
    with np.errstate(all=state), warnings.catch_warnings():
        warnings.simplefilter("error")
        got = {name: _outcome(call) for name, call in CALLS.items()}
        assert np.geterr() == {k: state for k in ("divide", "over", "under", "invalid")}
    differ = [name for name in CALLS if got[name] != default_outcomes[name]]
    assert not differ, {name: got[name][:3] for name in differ}


def test_error_state_with_a_callback_calls_it_never():
    seen = []
    with np.errstate(all="call", call=lambda kind, flag: seen.append(kind)):
        ops.softmax(np.float32([[-1e4, 0.0]]))
        array.encode(np.float64([1e-300, 1e300]), "fp16")
    assert seen == []


def test_pool_threads_run_pieces_under_the_callers_error_state():
    # numpy keeps an error state per thread: the pool's threads, made
    # before, ran pieces of a call in numpy's default state, whatever the
    # caller's (a call's own "ignore" did not reach them).
    from fpsim import _threads

    def piece(i):
        time.sleep(0.05)   # (so that the pool's thread takes some pieces)
        return threading.current_thread().name, np.geterr()["over"], np.geterr()["under"]

    for state in ("ignore", "raise"):
        with np.errstate(all=state):
            results = _threads.run_pieces(piece, range(6), 2)
        assert any(name != threading.current_thread().name for name, _, _ in results)
        assert {(over, under) for _, over, under in results} == {(state, state)}


# -- class 5: exotic numeric inputs --------------------------------------------------------

LONG = np.finfo(np.longdouble).nmant > 52
needs_long = pytest.mark.skipif(not LONG, reason="np.longdouble is float64 on this platform")


@needs_long
def test_longdouble_is_read_by_its_exact_value():
    # 10**400 > FP32's max: toward zero, the largest finite value, with
    # OVERFLOW and INEXACT (float() made it inf with no flag)
    ctx = fpsim.Context(rounding="rtz")
    r = fpsim.FP32.round(np.longdouble(10) ** 400, ctx)
    assert r.bits == 0x7F7FFFFF and ctx.flags == Flag.OVERFLOW | Flag.INEXACT
    ctx = fpsim.Context()
    assert fpsim.FP32.round(-np.longdouble(10) ** 400, ctx).bits == 0xFF800000
    assert ctx.flags == Flag.OVERFLOW | Flag.INEXACT
    x = np.longdouble(1) + np.longdouble(2) ** -60   # float() rounds it to 1.0
    assert Fraction(*x.as_integer_ratio()) == 1 + Fraction(1, 2**60)
    # strictly above 1: toward +inf it is 1 + 2**-52 (FP64), 1 + 2**-23 (FP32)
    assert fpsim.FP64.round(x, rounding="rup").bits == 0x3FF0000000000001
    assert fpsim.FP32.round(x, rounding="rup").bits == 0x3F800001
    assert fpsim.FP32.round(x, rounding="rdn").bits == 0x3F800000
    # 2**-16400 is below float64's range (float() gives 0): toward +inf the
    # smallest subnormal, tiny and inexact
    ctx = fpsim.Context(rounding="rup")
    assert fpsim.FP64.round(np.longdouble(2) ** -16400, ctx).bits == 1
    assert ctx.flags == Flag.UNDERFLOW | Flag.INEXACT
    assert fpsim.FP64.round(-np.longdouble(0)).bits == 1 << 63
    assert fpsim.FP16.round(-np.longdouble("inf")).bits == 0xFC00
    assert fpsim.FP16.round(np.longdouble("nan")).is_nan


@needs_long
def test_longdouble_integer_elements_and_gradients():
    # INT8: 0.5 + 2**-60 is above the tie: rounds up (it was refused)
    x = np.longdouble(0.5) + np.longdouble(2) ** -60
    assert quant.INT8.round(x) == 1 and quant.INT8.round(np.longdouble(10) ** 400) == 127
    assert quant.INT8.round(-np.longdouble("inf")) == -128
    # scale_sweep reads each gradient exactly: a finite 10**400 in a Python
    # list or as an np.longdouble is a value (that overflows FP32 to inf), not
    # an OverflowError
    for g in ([10**400, 1.0], [np.longdouble(10) ** 400, 1.0]):
        assert quant.scale_sweep(g, scales=[1.0], formats=["fp16"]).rows == \
            quant.scale_sweep([math.inf, 1.0], scales=[1.0], formats=["fp16"]).rows


def test_integers_beyond_float64_are_gradients():
    rows = quant.scale_sweep([Fraction(10**400), 2**64], scales=[1.0], formats=["fp16"]).rows
    assert rows == [{"scale": 1.0, "format": "fp16", "underflow": 0.0, "overflow": 1.0}]


def test_other_numpy_scalars_are_refused_by_name():
    # a structured scalar reached float() (a foreign TypeError); complex,
    # datetime and string scalars were already refused so
    for x in (np.zeros((), dtype=[("a", "f4")]), np.complex64(1), np.clongdouble(1),
              np.array(1 + 1j), np.datetime64(1, "s"), np.array("1.5")):
        refused(TypeError, lambda: fpsim.FP16.round(x), "cannot read numpy dtype", str(x.dtype))


H = np.array([[1.0, 2.5, -3.0, 1e-5]], F16)
C = np.array([[0x3C00, 0x4000, 0x7C00, 1]], np.uint16)
SUBCLASS_CALLS = {
    "encode": lambda f: array.encode(f(H.astype(np.float64)), "e4m3"),
    "round": lambda f: array.round(f(H.astype(F32)), "bf16"),
    "decode": lambda f: array.decode(f(C), "fp16"),
    "convert": lambda f: array.convert(f(C), "fp16", "e5m2"),
    "add": lambda f: array.add(f(H), f(H)),
    "mul codes": lambda f: array.mul(f(C), f(C), fmt="fp16"),
    "fma": lambda f: array.fma(f(H), f(H), f(H)),
    "sqrt": lambda f: array.sqrt(f(H)),
    "lt": lambda f: array.lt(f(H), H),
    "add_sequence": lambda f: array.add_sequence(f(H)),
    "exp": lambda f: ops.exp(f(H)),
    "sum": lambda f: ops.sum(f(H)),
    "sum axis 0": lambda f: ops.sum(f(H), axis=0),
    "mean": lambda f: ops.mean(f(H), axis=1),
    "matmul": lambda f: ops.matmul(f(H), f(H.T)),
    "softmax": lambda f: ops.softmax(f(H)),
    "quantize": lambda f: quant.quantize(f(H.astype(F32)), "e4m3", "channel").scale,
    "error_report": lambda f: str(quant.error_report(
        f(H.astype(F32)), quant.quantize(H.astype(F32), "e4m3"))),
    "LossScaler": lambda f: quant.LossScaler().step(f(H)),
    "scale_sweep": lambda f: quant.scale_sweep(f(H)).rows,
    "DelayedScaling": lambda f: quant.DelayedScaling().step(f(H.astype(F32))).data,
    "kappa": lambda f: testing.kappa(f(H), H),
}


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")   # (np.matrix's own)
def test_array_subclasses_are_read_as_their_arrays(tmp_path):
    # np.matrix broke every array entry point (2-D results, * a matrix
    # product); a recarray and a memmap of numbers are read as their data
    wrong = {}
    for name, call in SUBCLASS_CALLS.items():
        want = _bits(call(lambda a: a))
        try:
            got = call(np.matrix)
        except Exception as exc:  # noqa: BLE001
            wrong[name] = f"{type(exc).__name__}: {exc}"
            continue
        if isinstance(got, np.ndarray) and type(got) is not np.ndarray or _bits(got) != want:
            wrong[name] = f"{type(got).__name__} {_bits(got)[:2]}, not {want[:2]}"
    assert not wrong, wrong
    mm = np.memmap(tmp_path / "h.bin", dtype=F16, mode="w+", shape=H.shape)
    mm[:] = H
    for a in (H.view(np.recarray), mm):
        for call in (lambda v: array.add(v, v), lambda v: ops.exp(v), lambda v: ops.sum(v),
                     lambda v: array.encode(v, "e4m3")):
            got = call(a)
            assert type(got) is np.ndarray and _bits(got) == _bits(call(H))


def test_testfloat_golden_codes_out_of_range_are_refused():
    one, two = np.array([0x3C00]), np.array([0x4000])
    refused(ValueError, lambda: tf.golden("f16_add", [np.array([0x13C00]), two]),
            "operand a", "out of range for fp16", "0..0xffff")   # truncated to 0x3C00 before
    refused(ValueError, lambda: tf.golden("f16_add", [one, np.array([-1])]), "operand b",
            "negative codes")
    refused(TypeError, lambda: tf.golden("f16_add", [np.array([1.5]), two]), "integer codes")
    refused(ValueError, lambda: tf.golden("e4m3_mul", [np.array([256]), np.array([1])]),
            "out of range for e4m3")
    refused(ValueError, lambda: tf.golden("f16_add", [np.array([1, 2]), two]),
            "different numbers of codes")
    refused(TypeError, lambda: tf.golden("f16_add", 5), "operands must be a list")
    # in range, as before: 1 + 2 = 3
    assert tf.golden("f16_add", [one, two]).results.tolist() == [0x4200]
    assert tf.golden("i64_to_f16", [np.array([2**64 - 1], np.uint64)]).results.tolist() == \
        [0xBC00]   # the i64 code of -1


# -- class 9: random bits ----------------------------------------------------------------------

SCALAR_RULE = "accepted 0 <= {name} < 2**sr_bits = {limit}"


@pytest.mark.parametrize("rand", [-1, 2**32, 2**70])
def test_int_round_random_bits_out_of_range(rand):
    refused(ValueError, lambda: quant.INT4.round(2.5, "sr", rand=rand), f"rand={rand}",
            SCALAR_RULE.format(name="rand", limit=2**32))
    # the scalar path's rule and message
    refused(ValueError, lambda: fpsim.FP16.round(Fraction(1, 3), rounding="sr",
                                                 random_bits=rand),
            SCALAR_RULE.format(name="random_bits", limit=2**32))


@pytest.mark.parametrize("rand", [1.5, True, None, "3", np.float64(2.0)], ids=repr)
def test_int_round_random_bits_types(rand):
    refused(TypeError, lambda: quant.INT4.round(2.5, "sr", rand=rand), "rand must be an int")


@pytest.mark.parametrize("sr_bits,error", [(0, ValueError), (65, ValueError),
                                           (8.0, TypeError), (True, TypeError)])
def test_int_round_sr_bits(sr_bits, error):
    refused(error, lambda: quant.INT4.round(2.5, "sr", rand=0, sr_bits=sr_bits), "sr_bits")


def test_int_round_accepts_random_bits_in_range():
    # 2.5: the discarded half, t = 2**(R-1); up iff t + r >= 2**R (rule 3)
    assert quant.INT4.round(2.5, "sr", rand=2**31 - 1) == 2
    assert quant.INT4.round(2.5, "sr", rand=2**31) == 3
    assert quant.INT4.round(2.5, "sr", rand=np.uint8(3), sr_bits=2) == 3
    refused(ValueError, lambda: quant.INT4.round(2.5, "sr", rand=4, sr_bits=2), "rand=4",
            SCALAR_RULE.format(name="rand", limit=4))


def test_the_rounding_kernel_checks_random_bits():
    refused(ValueError, lambda: rounding.quantize(5, 2, 0, 0, False, Rounding.SR, -1),
            SCALAR_RULE.format(name="random_bits", limit=2**32))
    refused(ValueError, lambda: rounding.round_exact(fpsim.FP16, False, 1, 3, 0, Rounding.SR,
                                                     rand=2**8, sr_bits=8), "random_bits=256")
    refused(ValueError, lambda: rounding.stochastic_up(Rounding.SR_B, 3, False, 4, 2),
            SCALAR_RULE.format(name="random_bits", limit=4))
    refused(TypeError, lambda: rounding.quantize(5, 2, 0, 0, False, Rounding.SR, 0.5),
            "random_bits must be an int")
    refused(ValueError, lambda: rounding.quantize(5, 2, 0, 0, False, Rounding.SR, 0, 0),
            "sr_bits must be between 1 and 64")
    # in range, the kernel's rule: 2.5 = 2 + 1/2, up iff 2**31 + r >= 2**32
    assert rounding.quantize(5, 2, 0, 0, False, Rounding.SR, 2**31) == (3, True)
    assert rounding.quantize(5, 2, 0, 0, False, Rounding.SR, 2**31 - 1) == (2, True)


def test_arrays_of_random_bits_share_the_rule_and_message():
    for call in (lambda r: array.encode(np.ones(3) / 3, "fp16", rounding="sr", random_bits=r),
                 lambda r: ops.exp(F16([1.0, 2.0, 3.0]), rounding="sr", random_bits=r),
                 lambda r: quant.INT4.round_array(F16([2.5, 1.0, 0.5]), "sr", random_bits=r)):
        for bad, held in (([1, 2, 2**32], 2**32), ([-1, 0, 0], -1)):
            refused(ValueError, lambda: call(np.array(bad)), f"it holds {held}",
                    SCALAR_RULE.format(name="random_bits", limit=2**32))
        refused(ValueError, lambda: call(np.array([1, 2])), "does not broadcast",
                "result's shape (3,)")
        refused(TypeError, lambda: call(np.array([0.5, 1, 2])), "integer array")


def test_testfloat_golden_random_bits():
    ctx = fpsim.Context(rounding="sr", sr_bits=8)
    ops_ = [np.array([0x3C00, 0x3C00]), np.array([0x0001, 0x0001])]
    refused(ValueError, lambda: tf.golden("f16_add", ops_, ctx, random_bits=np.array([0, 256])),
            "it holds 256", SCALAR_RULE.format(name="random_bits", limit=256))
    refused(ValueError, lambda: tf.golden("f16_add", ops_, ctx, random_bits=np.array([-1, 0])),
            "it holds -1")
    refused(ValueError, lambda: tf.golden("f16_add", ops_, ctx, random_bits=np.array([1])),
            "1 numbers for 2 cases")
    refused(ValueError, lambda: tf.golden("f16_add", ops_, random_bits=np.array([1, 2])),
            "only used by stochastic rounding")
    # 1 + 2**-24: 2**-14 of FP16's last place at 1 (2**-10), far below R = 8
    # bits: t = 0, never up
    g = tf.golden("f16_add", ops_, ctx, random_bits=np.array([0, 255]))
    assert g.results.tolist() == [0x3C00, 0x3C00]


# -- class 10: junk arguments -------------------------------------------------------------------

@pytest.mark.parametrize("flags,error", [(-1, ValueError), (32, ValueError), (2**70, ValueError),
                                         (1.5, TypeError), (True, TypeError), (None, TypeError),
                                         ("1", TypeError)], ids=repr)
def test_raise_flags_takes_flag_bits(flags, error):
    ctx = fpsim.Context()
    refused(error, lambda: ctx.raise_flags(flags), "flags", "accepted" if error is ValueError
            else "an fpsim.Flag or an int of flag bits")
    assert ctx.flags == Flag(0)   # (raise_flags(-1) raised all five)
    # and what it takes
    ctx.raise_flags(Flag.INEXACT)
    ctx.raise_flags(np.uint8(5))
    ctx.raise_flags(0)
    assert ctx.flags == Flag.INVALID | Flag.OVERFLOW | Flag.INEXACT


@pytest.mark.parametrize("index,error,fragment", [
    ([-1], packing.PackingError, "index -1 is outside shape (128, 4)"),   # returned -1
    ([512], packing.PackingError, "accepted flat indices 0..511"),
    ([1.5], TypeError, "index must hold integers"),                       # truncated to 1
    (["0"], TypeError, "index must hold integers"),
    (None, TypeError, "index must hold integers"),
])
def test_blocked_offsets_index(index, error, fragment):
    refused(error, lambda: packing.blocked_offsets(index, (128, 4)), fragment)


@pytest.mark.parametrize("shape,error", [((1.5, 4), TypeError), ((True, 4), TypeError),
                                         (5, TypeError), ("128", TypeError),
                                         ((2**40, 2**40), ValueError)], ids=repr)
def test_blocked_shapes(shape, error):
    refused(error, lambda: packing.blocked_offsets([0], shape), "shape")


def test_packing_counts():
    refused(ValueError, lambda: packing.packed_size(-5, "e2m1"), "count must be a non-negative")
    refused(TypeError, lambda: packing.packed_size(1.5, "e2m1"), "count must be a non-negative")
    refused(TypeError, lambda: packing.unpack(b"\x21", "e2m1", True), "count")
    # accepted values, with the published offsets (tests/test_packed_dumps.py)
    assert packing.blocked_offsets(np.array([5 * 8 + 2, 5 * 8 + 5]), (128, 8)).tolist() == \
        [82, 593]
    assert packing.packed_size(np.int64(5), "e3m2") == 4


@pytest.mark.parametrize("fmt", [5, 1.5, b"f16", fpsim.Format("fp16", 5, 10, 14)], ids=repr)
def test_testfloat_operations_format(fmt):
    refused((TypeError, ValueError), lambda: tf.operations(fmt), "operations()")


def test_testfloat_operations_of_an_integer_format_are_operations():
    names = tf.operations("i32")   # listed i32_add, which operation() refuses
    assert names and all(n.startswith("i32_to_") for n in names)
    for n in names:
        tf.operation(n)
    assert tf.operations(fpsim.FP16) == tf.operations("f16")


@pytest.mark.parametrize("call,error,fragment", [
    (lambda: array.code_dtype(5), TypeError, "format name must be a str"),
    (lambda: array.value_dtype(None), TypeError, "format name must be a str"),
    (lambda: ops.softmax(F16([[1, 2]]), axis=None), TypeError, "axis=None"),
    (lambda: ops.log_softmax(F16([[1, 2]]), axis=None), TypeError, "axis=None"),
    (lambda: quant.error_report(F32([1.0]), None), TypeError, "q must be"),
    (lambda: quant.error_report(F32([1.0]), quant.quantize(F32([1.0]), "e4m3"), per_block="no"),
     TypeError, "per_block must be True or False"),
    (lambda: ops.layer_norm(F16([[1, 2]]), eps=None), TypeError, "eps must be a real number"),
    (lambda: ops.layer_norm(F16([[1, 2]]), eps=-1.0), ValueError, "eps=-1.0"),
    (lambda: ops.rms_norm(F16([[1, 2]]), eps=math.nan), ValueError, "eps=nan"),
    (lambda: ops.rms_norm(F16([[1, 2]]), eps=True), TypeError, "eps must be a real number"),
    (lambda: ops.softmax(F16([[1, 2]]), stable="no"), TypeError, "stable must be True or False"),
    (lambda: array.add(F16([1]), F16([2]), return_flags="no"), TypeError, "return_flags"),
    (lambda: array.encode(F16([1]), "e4m3", return_flags=1), TypeError, "return_flags"),
    (lambda: ops.exp(F16([1]), return_flags=0), TypeError, "return_flags"),
    (lambda: array.lt(F16([1]), F16([2]), signaling="no"), TypeError, "signaling"),
    (lambda: quant.scale_table("mx", "nearest"), ValueError, "scale_rounding='nearest'"),
    (lambda: quant.INT4.value(1.5), TypeError, "code must be an integer"),
    (lambda: quant.INT4.value(None), TypeError, "code must be an integer"),
    (lambda: quant.IntFormat(5, 4), TypeError, "name must be a str"),
    (lambda: quant.IntFormat("q", 4, symmetric="yes"), TypeError, "symmetric"),
    (lambda: quant.quantize(F32([[1, 2]]), "e4m3", block_size=16), ValueError, "block_size=16"),
    (lambda: ops.matmul(F16([[1]]), F16([[1]]), promote_to=5), ValueError, "promote_to=5"),
    (lambda: testing.assert_ulp_close(F16([1]), F16([1]), err_msg=5), TypeError, "err_msg"),
    (lambda: fpsim.arith.round_to_integral(fpsim.FP16.round(2.5), "no"), TypeError, "exact"),
    (lambda: tf.count("e4m3_add", level=True), TypeError, "level"),
    (lambda: list(tf.cases("e4m3_add", n=2, chunk_size=None)), ValueError, "chunk_size"),
    (lambda: tf.verify("e4m3_mul", ["38 40 40 00"], chunk_size=None), ValueError, "chunk_size"),
    (lambda: tf.verify("e4m3_mul", ["38 40 40 00"], flags="no"), TypeError, "flags"),
    (lambda: tf.verify("e4m3_mul", ["38 40 40 00"], nan_exact=1), TypeError, "nan_exact"),
    (lambda: tf.verify("e4m3_mul", "38 40 40 00"), TypeError, "splitlines"),
    (lambda: tf.verify("e4m3_mul", None), TypeError, "lines must be"),
    (lambda: list(tf.generate("e4m3_add", n=2, flags="no")), TypeError, "flags"),
    (lambda: tf.golden("e4m3_add", [np.array([1]), np.array([1])], exact=None), TypeError,
     "exact"),
], ids=lambda v: "" if callable(v) else str(v)[:40])
def test_junk_arguments_are_refused_by_name(call, error, fragment):
    refused(error, call, fragment)


def test_the_accepted_spellings_still_work():
    assert array.code_dtype("fp16") == np.uint16 and array.value_dtype("bf16") == BF16
    assert quant.INT4.value(np.int8(-8)) == -8
    assert float(ops.layer_norm(F16([[1, 3]]), eps=0)[0, 1]) == 1.0   # eps 0 is PyTorch's too
    assert ops.softmax(F16([[0, 0]]), stable=np.True_).tolist() == [[0.5, 0.5]]
    assert array.lt(F16([1]), F16([2]), signaling=np.False_).tolist() == [True]
    assert quant.quantize(F32([[1, 2]]), "e4m3", "tensor", axis=0).data.shape == (1, 2)
    assert fpsim.arith.round_to_integral(fpsim.FP16.round(2.5), True).value == 2
