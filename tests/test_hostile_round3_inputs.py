"""Hostile input, round 3 (issue 45, items 6, 7 and 9): lazy giant inputs,
arguments silently replaced or coerced, and values read loosely.

* A broadcast view of 2**40 elements costs nothing to pass: every array,
  operator, quantizer and matrix-unit entry point refuses it (and operands
  that broadcast into a result as large) from the shape alone, at once,
  with a MemoryError that names the call, the shape and the machine's
  memory (``fpsim.array.engine.check_size``), instead of walking it.
* Schedule and scale arguments follow one rule (``fpsim/mma/_args.py``):
  types checked, never coerced: a bool is no int, a float no count, a
  string or a complex number no number, the empty string no choice; 0 or
  False is refused, never replaced by the default.
* ``testfloat.verify`` names a line that is not text; ``IntFormat.round``
  reads ``Decimal("sNaN")`` as the NaN it is (a ValueError, as a float NaN
  is); ``strategies`` reads a np.longdouble bound exactly.

Oracles are hand-derived: FP16 codes worked by hand (1 = 0x3C00, its next
value 1 + 2**-10 = 0x3C01, its previous 1 - 2**-11 = 0x3BFF), products of
ones counted, and the exceptions the rules above state.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from decimal import Decimal
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings

import fpsim.testfloat as tf
from fpsim import array, mma, ops, quant, strategies
from fpsim.array import engine
from fpsim.mma import Schedule

F16, F32 = np.float16, np.float32
E4M3 = ml_dtypes.float8_e4m3fn
BOUND = 5.0   # seconds, on a loaded 2-core machine (each refusal takes well under 0.01 s)


def refused(exc, call, *fragments):
    """``call()`` raises ``exc`` with a one-line message holding every fragment."""
    with pytest.raises(exc) as info:
        call()
    message = str(info.value)
    assert "\n" not in message, message
    for fragment in fragments:
        assert fragment in message, (fragment, message)
    return message


# -- item 6: lazy giant inputs -------------------------------------------------------------

# (call, the name the refusal gives): each on N elements, N at least 2**40 and
# above this machine's memory.  Run in a subprocess with a timeout: before
# the fix, several walked their input for hours.
GIANT = [
    ("array.add(X16, F16(1))", "add()"),
    ("array.add(np.broadcast_to(np.uint16(1), (N,)), np.uint16(1), fmt='fp16')", "add()"),
    ("array.add(np.zeros((2**20, 1), F16), np.zeros((1, N >> 20), F16))", "add()"),
    ("array.sqrt(X16)", "sqrt()"),
    ("array.eq(X16, X16)", "eq()"),
    ("array.add_sequence(X16)", "add_sequence()"),
    ("array.encode(X64, 'fp16')", "encode()"),
    ("array.encode(np.broadcast_to(np.float64(1.5), (2**20, N >> 20)), 'fp16')", "encode()"),
    ("array.decode(np.broadcast_to(np.uint16(0x3C00), (N,)), 'fp16')", "decode()"),
    ("array.round(X64, 'fp16')", "encode()"),
    ("array.convert(X16, 'fp16', 'bf16')", "encode()"),
    ("ops.exp(X16)", "exp()"),
    ("ops.rsqrt(X16)", "rsqrt()"),
    ("ops.reciprocal(X16)", "reciprocal()"),
    ("ops.relu(X16)", "relu()"),
    ("ops.gelu(X16)", "gelu()"),
    ("ops.softmax(X16)", "softmax()"),
    ("ops.mse_loss(X16, X16)", "mse_loss()"),
    ("ops.sum(X16)", "sum()"),
    ("ops.mean(np.broadcast_to(F16(1), (2**20, N >> 20)), axis=1)", "mean()"),
    ("ops.dot(X16, X16)", "dot()"),
    ("ops.matmul(np.zeros((2**20, 1), F16), np.zeros((1, N >> 20), F16))", "matmul()"),
    ("quant.quantize(X32, 'e4m3')", "quantize()"),
    ("quant.INT8.round_array(X32)", "int8.round_array()"),
    ("quant.DelayedScaling().step(X32)", "DelayedScaling.step()"),
    ("quant.LossScaler().step(X32)", "LossScaler.step()"),
    ("quant.scale_sweep(X32, 'e4m3')", "scale_sweep()"),
    ("mma.preset('h100', 'fp16')(X16.reshape(-1, 16), X16.reshape(-1, 16))", "mma()"),
    ("mma.cublas('h100', 'fp16')(np.zeros((2**20, 16), F16), np.zeros((16, N >> 20), F16))",
     "LibraryGEMM()"),
    ("mma.block_scaled('b200', 'mxfp8').gemm(np.zeros((2**20, 32), np.uint8), "
     "np.zeros((32, N >> 20), np.uint8), np.zeros((2**20, 1), np.uint8), "
     "np.zeros((1, N >> 20), np.uint8))", "gemm()"),
]


def test_giant_broadcasts_are_refused_from_their_shape_at_once():
    # Issue 45, item 6: ops.exp of a 2**40-element broadcast walked every
    # element; array.encode of a (2**20, 2**20) one was refused after 13 s.
    cases = "\n".join(f"    ({call!r}, {name!r})," for call, name in GIANT)
    code = textwrap.dedent("""
        import os, time
        import numpy as np
        import fpsim.mma
        from fpsim import array, mma, ops, quant
        F16 = np.float16
        try:
            memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (AttributeError, ValueError, OSError):
            memory = 1 << 40
        N = 1 << max(40, memory.bit_length() + 1)
        X16 = np.broadcast_to(F16(1.5), (N,))
        X32 = np.broadcast_to(np.float32(1.5), (N,))
        X64 = np.broadcast_to(np.float64(1.5), (N,))
        CASES = [
        %s
        ]
        for call, name in CASES:
            t = time.perf_counter()
            try:
                eval(call)
            except MemoryError as e:
                message = str(e)
            else:
                raise AssertionError(f"{call}: not refused")
            elapsed = time.perf_counter() - t
            assert elapsed < %r, (call, elapsed)
            assert message.startswith(name), (call, message)
            assert "more than this machine's memory" in message and "shape (" in message, message
        print("ok")
    """) % (cases, BOUND)
    try:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("a giant broadcast input ran for more than 60 s")
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]


def test_the_size_check_reads_the_shape_against_the_machine_memory(monkeypatch):
    # With a machine of 1 MiB (patched), a broadcast view of 2**20 FP16
    # elements (2 MiB) is refused by name before any work; one of 2**10
    # elements computes as its copy does.
    monkeypatch.setattr(engine, "physical_memory", lambda: 1 << 20)
    big = np.broadcast_to(F16(1.5), (1 << 20,))
    refused(MemoryError, lambda: ops.exp(big), "exp(): x would hold 1,048,576 elements "
            "(shape (1048576,)) of 2 bytes, 2.0 MiB, more than this machine's memory (1.0 MiB)")
    refused(MemoryError, lambda: array.add(np.zeros((1024, 1), F16), np.zeros((1, 1024), F16)),
            "add(): the operands, broadcast, would hold 1,048,576 elements (shape (1024, 1024))")
    small = np.broadcast_to(F16(1.5), (1 << 10,))
    assert (ops.exp(small).view(np.uint16) == ops.exp(np.full(1 << 10, 1.5, F16)).view(
        np.uint16)).all()
    assert (array.encode(small, "e4m3") == 0x3C).all()    # 1.5 in E4M3: exponent 7, mantissa 4


def test_compare_refuses_a_giant_view_but_streams_a_mapped_dump(monkeypatch, tmp_path):
    # compare() streams its inputs in chunks, so a dump larger than memory
    # is compared through its memory map; an array that is no file and
    # larger than memory can only be a broadcast view: refused at once.
    # (Memory patched to 1 MiB; the dump and the view are 2 MiB.)
    from fpsim import testing

    monkeypatch.setattr(engine, "physical_memory", lambda: 1 << 20)
    big = np.broadcast_to(F16(1.5), (1 << 20,))
    for call in (lambda: testing.compare(big, big), lambda: testing.kappa(big, big),
                 lambda: testing.assert_ulp_close(big, big, max_ulp=1)):
        refused(MemoryError, call, "compare(): actual would hold 1,048,576 elements")
    path = tmp_path / "dump.bin"
    np.full(1 << 20, 1.5, F16).tofile(path)
    dump = np.memmap(path, F16, "r")
    assert testing.compare(dump, np.memmap(path, F16, "r")[::1]).exact == 1 << 20


def test_broadcast_views_of_ordinary_size_still_compute():
    # exp(1.5) = 4.4816890703...: FP16's neighbours are 4.48046875 (0x447B)
    # and 4.484375 (0x447C); the nearest is 0x447B.
    x = np.broadcast_to(F16(1.5), (3, 1000))
    assert (ops.exp(x).view(np.uint16) == 0x447B).all()
    assert float(ops.sum(np.broadcast_to(F16(1), (4096,)))) == 4096.0   # FP32 sum of ones
    assert (array.add(np.zeros((64, 1), F16), np.ones((1, 64), F16)) == 1).all()


# -- item 7: arguments accepted and silently replaced or coerced ------------------------------

def test_cutlass_refuses_arguments_it_used_to_replace_by_its_defaults():
    # split_grain=0 or False and epilogue_order='' fell back to the defaults
    # (128 bits of input: 8 products for FP16; the architecture's order).
    refused(ValueError, lambda: mma.cutlass("h100", "fp16", split_grain=0),
            "cutlass(): split_grain must be a positive int", "got 0")
    refused(TypeError, lambda: mma.cutlass("h100", "fp16", split_grain=False),
            "cutlass(): split_grain must be a positive int", "got bool False")
    refused(TypeError, lambda: mma.cutlass("h100", "fp16", split_grain=8.0),
            "split_grain", "got float 8.0")
    refused(ValueError, lambda: mma.cutlass("h100", "fp16", epilogue_order=""),
            "cutlass(): epilogue_order must be one of beta_c_first, alpha_acc_first",
            "got ''")
    refused(TypeError, lambda: mma.cutlass("h100", "fp16", epilogue_order=0),
            "epilogue_order", "got int 0")
    refused(TypeError, lambda: mma.cutlass("a100", "fp16", split_reduction=None),
            "split_reduction must be one of parallel, serial", "got NoneType None")
    refused(TypeError, lambda: mma.cutlass("h100", "e4m3", promotion_interval=2.0),
            "promotion_interval", "got float 2.0")
    refused(TypeError, lambda: mma.cutlass("h100", "e4m3", fast_accum=0),
            "fast_accum must be True or False", "got int 0")
    # what is given is what is used; None is the default
    s = mma.cutlass("h100", "fp16", split_k=2, split_grain=np.int64(16),
                    epilogue_order="beta_c_first").schedule
    assert (s.split_grain, type(s.split_grain), s.epilogue_order) == (16, int, "beta_c_first")
    s = mma.cutlass("h100", "fp16", split_grain=None, epilogue_order=None).schedule
    assert (s.split_grain, s.epilogue_order) == (8, "alpha_acc_first")


def test_library_gemm_scales_are_numbers_never_coerced():
    # "2", True and 2+0j were computed as 2, 1 and 2 (as alpha="1" was
    # already refused): now a TypeError naming scale_a.  The oracle of the
    # accepted ones: 32 products of ones, times 2.
    g = mma.cublas("h100", "e4m3")
    a = np.ones((1, 32), E4M3)
    for bad in ("2", True, 2 + 0j, np.complex64(2), np.array(["2"]), np.array([[True]]),
                np.array([[2 + 0j]]), np.array([[2]], object), b"2"):
        other = 1.0 if np.ndim(bad) == 0 else np.ones((1, 1))
        refused(TypeError, lambda: g(a, a.T, scale_a=bad, scale_b=other),
                "LibraryGEMM: scale_a must be a finite real number", "got ")
        refused(TypeError, lambda: g(a, a.T, scale_a=other, scale_b=bad),
                "LibraryGEMM: scale_b must be a finite real number")
    for bad in ("1", True, 1 + 0j, None):
        refused(TypeError, lambda: g(a, a.T, alpha=bad), "LibraryGEMM: alpha must be")
    # a value float64 would round is refused, not rounded
    wide = np.longdouble(2) + np.longdouble(2) ** -60
    if wide != 2:  # (where np.longdouble is wider than float64)
        refused(ValueError, lambda: g(a, a.T, scale_a=wide, scale_b=1.0), "not exact in float64")
    refused(ValueError, lambda: g(a, a.T, scale_a=np.array([[2**53 + 1]]),
                                  scale_b=np.ones((1, 1))), "float64 cannot hold exactly")
    for good in (2, 2.0, F32(2), np.int64(2), np.array(2.0)):
        assert g(a, a.T, scale_a=good, scale_b=1.0).tolist() == [[64.0]]
    assert g(a, a.T, scale_a=np.array([[2]], np.int32), scale_b=np.ones((1, 1), F16)
             ).tolist() == [[64.0]]


def test_block_scaled_refuses_a_float_block_when_built():
    # block=32.0 built an instruction that failed at its first call
    for bad in (32.0, True, "32", 32 + 0j):
        refused(TypeError, lambda: mma.block_scaled("b200", "mxfp8", block=bad),
                "block_scaled(): block must be a positive int", type(bad).__name__)
    refused(TypeError, lambda: mma.block_scaled("b200", "mxfp8", scale=8),
            "block_scaled(): scale must be", "got int 8")
    unit = mma.block_scaled("b200", "mxf4nvf4", scale="E8M0", block=np.int64(16))
    assert (unit.params.scale, unit.params.block, type(unit.params.block)) == ("e8m0", 16, int)
    a = np.full((1, 64), 0x2, np.uint8)                   # E2M1 code 2: 1.0
    s = np.full((1, 4), 127, np.uint8)                    # E8M0 127: 1.0
    assert unit.gemm(a, a.T, s, s.T).tolist() == [[64.0]]


def test_schedule_and_library_arguments_follow_one_rule():
    # counts: int (numpy's too), never bool, float or str; choices: the
    # strings listed, never ''; 0 for an option that does not apply is
    # given (cublas dropped promote_every=0 for FP16 silently)
    for name in ("split_k", "split_grain", "promote_every", "block_k"):
        refused(TypeError, lambda: Schedule(**{name: True}), f"Schedule: {name} must be",
                "got bool True")
        refused(TypeError, lambda: Schedule(**{name: 2.0}), name, "got float 2.0")
        refused(TypeError, lambda: Schedule(**{name: "2"}), name, "got str '2'")
        refused(ValueError, lambda: Schedule(**{name: 0}), name, "got 0")
    for name in ("split_merge", "c_joins", "epilogue", "epilogue_order", "rounding"):
        refused(ValueError, lambda: Schedule(**{name: ""}), f"Schedule: {name} must be one of")
        refused(TypeError, lambda: Schedule(**{name: None}), name, "got NoneType None")
    refused(TypeError, lambda: Schedule(merge_from_zero=1), "merge_from_zero must be True or "
            "False")
    refused(TypeError, lambda: Schedule(compute=32), "compute must be a format name")
    refused(ValueError, lambda: mma.cublas("h100", "fp16", promote_every=0),
            "cublas(): promote_every must be a positive int", "got 0")
    refused(TypeError, lambda: mma.cublas("h100", "fp16", split_k=2.0), "cublas(): split_k")
    refused(ValueError, lambda: mma.cublas("h100", "fp16", block_k=0), "block_k")
    refused(ValueError, lambda: mma.triton("h100", "e4m3", input_precision=""),
            "triton(): input_precision must be one of tf32, tf32x3, ieee")
    refused(TypeError, lambda: mma.triton("h100", "e4m3", max_num_imprecise_acc=64.0,
                                          block_k=128), "max_num_imprecise_acc", "got float")
    assert Schedule(split_k=np.int32(3), merge_from_zero=np.True_).split_k == 3
    # the operators take the same rule, naming themselves
    x, unit = np.ones((1, 16), F16), mma.preset("h100", "fp16")
    refused(TypeError, lambda: ops.matmul(x, x.T, accumulate=unit, split_k=1.5),
            "matmul(): split_k must be a positive int", "got float 1.5")
    refused(TypeError, lambda: ops.matmul(x, x.T, accumulate=unit, alpha=True),
            "matmul(): alpha must be a finite real number")
    nv = mma.block_scaled("b200", "mxfp8")
    refused(ValueError, lambda: ops.matmul(np.ones((1, 32), E4M3), np.ones((32, 1), E4M3),
                                           accumulate=nv, alpha=True), "takes none of alpha")


# -- item 9: values read loosely ------------------------------------------------------------

def test_verify_names_a_line_that_is_not_text():
    # verify("f16_mul", [None]) and [1] raised AttributeError ('NoneType'
    # object has no attribute 'strip')
    for lines, number, shown in (([None], 1, "NoneType None"), ([1], 1, "int 1"),
                                 ([b"3C00 4000 4000 00"], 1, "bytes b'3C00"),
                                 (["3C00 4000 4000 00", 2.5], 2, "float 2.5")):
        refused(TypeError, lambda: tf.verify("f16_mul", lines), f"line {number}: {shown}",
                "accepted: str lines")
    assert tf.verify("f16_mul", ["3C00 4000 4000 00"]).differ == 0    # 1 × 2 = 2, exact


def test_int_rounding_reads_a_decimal_nan_as_nan():
    # Decimal("sNaN") raised decimal.InvalidOperation (compared with
    # itself): every NaN, signaling or quiet, float or Decimal, is the
    # ValueError a float NaN gives
    for x in (float("nan"), Decimal("NaN"), Decimal("sNaN"), Decimal("-sNaN"),
              Decimal("sNaN123"), np.float32("nan")):
        refused(ValueError, lambda: quant.INT8.round(x), "int8.round():", "is NaN, which no "
                "integer holds")
    assert quant.INT8.round(Decimal("Infinity")) == 127 and \
        quant.INT8.round(Decimal("-Infinity")) == -128          # saturated, as float infinities
    assert quant.INT8.round(Decimal("-2.5")) == -2                # ties to even
    # the same NaN read where an eps is a Decimal
    refused(ValueError, lambda: ops.layer_norm(F16([[1, 2]]), eps=Decimal("sNaN")),
            "layer_norm(): eps=Decimal('sNaN')")
    refused(ValueError, lambda: quant.quantize(F32([1.0]), "e4m3", eps=Decimal("sNaN")),
            "quantize(): eps=Decimal('sNaN')")


LONG_MORE = np.finfo(np.longdouble).nmant > np.finfo(np.float64).nmant
ABOVE_ONE = np.longdouble(1) + np.longdouble(2) ** -60
BELOW_ONE = np.longdouble(1) - np.longdouble(2) ** -60


@pytest.mark.skipif(not LONG_MORE, reason="np.longdouble is float64 here")
def test_a_longdouble_bound_is_read_exactly():
    # 1 + 2**-60 read through float64 was 1.0, and 1.0 (0x3C00) was drawn
    # although it is below the bound: the smallest FP16 value at or above
    # it is 1 + 2**-10 (0x3C01); the largest at or below 1 - 2**-60 is
    # 1 - 2**-11 (0x3BFF)
    assert ABOVE_ONE > 1 and BELOW_ONE < 1
    assert strategies._bound_key("min_value", ABOVE_ONE) == (0, 1 + Fraction(1, 2**60), 0)

    @settings(max_examples=40, database=None)
    @given(strategies.codes("fp16", min_value=ABOVE_ONE, max_value=2))
    def above(c):
        assert 0x3C01 <= c <= 0x4000

    @settings(max_examples=40, database=None)
    @given(strategies.values("fp16", min_value=-1, max_value=BELOW_ONE))
    def below(x):
        assert -1 <= float(x) <= 1 - 2**-11

    above()
    below()
    t = time.perf_counter()
    refused(ValueError, lambda: strategies.codes("fp16", min_value=ABOVE_ONE,
                                                 max_value=np.longdouble(1)),
            "greater than max_value")   # (1.0 and 1.0, read through float64)
    assert time.perf_counter() - t < BOUND


def test_numpy_and_decimal_bounds_read_exactly_everywhere():
    # whatever the platform's np.longdouble: numpy scalars through their
    # bits, a -0 of any type excludes +0, NaN of any kind refused by name
    from hypothesis import find

    assert find(strategies.codes("fp16", min_value=np.float32(1 + 2**-20)), lambda c: True) \
        == 0x3C01
    assert find(strategies.codes("fp16", max_value=F16(-0.0)), lambda c: c & 0x7FFF == 0) \
        == 0x8000
    for nan in (np.float32("nan"), np.longdouble("nan"), Decimal("sNaN"), float("nan")):
        refused(ValueError, lambda: strategies.codes("fp16", min_value=nan),
                "min_value must not be NaN")


def test_a_bool_axis_is_refused_as_no_integer():
    # True is 1 to Python: an axis given as a bool is refused by its type,
    # never read as axis 1 (nor called "out of range" on an array where 1 is)
    x = np.ones((2, 2), F16)
    for op in (ops.sum, ops.mean):
        for axis in (True, np.True_, (0, True)):
            with pytest.raises(TypeError, match="not an integer|accepted None, an integer"):
                op(x, axis=axis)
