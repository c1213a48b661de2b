"""The probe names library GEMMs: fpsim.mma.probe(fn, ..., shape="gemm")
on the library presets used as black boxes (fn(A, B) and fn(A, B, C)),
on callables that need padded shapes, and on one that is no library GEMM.

Oracle: the schedule each black box was built with (the probe sees
nothing but its calls)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import fpsim.mma as mma

# (label, black box, inputs, out, expected schedule fields, a GPU that must match)
CASES = [
    ("cublas fp16", mma.cublas("h100", "fp16"), "fp16", "fp32",
     dict(split_k=1, promote_every=None), "h100"),
    ("cublas fp16 split 3", mma.cublas("h100", "fp16", split_k=3), "fp16", "fp32",
     dict(split_k=3, split_grain=64, split_merge="compute"), "h100"),
    ("cublas bf16 split 4", mma.cublas("h100", "bf16", split_k=4), "bf16", "fp32",
     dict(split_k=4, split_grain=64), "h100"),
    ("cublas fp16 -> fp16", mma.cublas("h100", "fp16", "fp16"), "fp16", "fp16",
     dict(split_k=1, output_rounding="rne"), "h100"),
    ("cublas fp16 -> fp16 split 3", mma.cublas("h100", "fp16", "fp16", split_k=3), "fp16",
     "fp16", dict(split_k=3, split_grain=64), "h100"),
    ("cublas e4m3", mma.cublas("h100", "e4m3"), "e4m3", "fp32",
     dict(split_k=1, promote_every=128), "h100"),
    ("cublas e4m3 fast", mma.cublas("h100", "e4m3", fast_accum=True), "e4m3", "fp32",
     dict(promote_every=None), "h100"),
    ("cublas e4m3 -> bf16", mma.cublas("h100", "e4m3", "bf16"), "e4m3", "bf16",
     dict(promote_every=128), "h100"),
    ("cublas e4m3 x e5m2", mma.cublas("h100", ("e4m3", "e5m2")), ("e4m3", "e5m2"), "fp32",
     dict(promote_every=128), "h100"),
    ("cublas tf32 tile 4", mma.cublas("h100", "tf32", block_k=4, promote_every=4), "tf32",
     "fp32", dict(promote_every=4, block_k=4), "h100"),
    ("cublas tf32 tile 32", mma.cublas("h100", "tf32", promote_every=32), "tf32", "fp32",
     dict(promote_every=32, block_k=None), "h100"),
    ("cutlass e4m3 interval 2", mma.cutlass("h100", "e4m3", promotion_interval=2), "e4m3",
     "fp32", dict(promote_every=64), "h100"),
    ("cutlass a100 split 2", mma.cutlass("a100", "fp16", split_k=2), "fp16", "fp32",
     dict(split_k=2, split_grain=8), "a100"),
    ("triton e4m3", mma.triton("h100", "e4m3"), "e4m3", "fp32", dict(promote_every=None),
     "h100"),
    ("cutlass e4m3 serial split -> fp16", mma.cutlass("h100", "e4m3", "fp16", split_k=2,
                                                       split_reduction="serial"),
     "e4m3", "fp16", dict(split_k=2, promote_every=128, split_merge="inplace"), "h100"),
]


def _boxes(g):
    def with_c(A, B, C):
        return g(A, B, C)

    def without_c(A, B):
        return g(A, B)

    return with_c, without_c


@pytest.mark.parametrize("takes_c", [False, True], ids=["fn(A,B)", "fn(A,B,C)"])
@pytest.mark.parametrize("label, g, inputs, out, want, gpu", CASES, ids=[c[0] for c in CASES])
def test_the_probe_recovers_each_library_schedule(label, g, inputs, out, want, gpu, takes_c):
    with_c, without_c = _boxes(g)
    r = mma.probe(with_c if takes_c else without_c, inputs, out, shape="gemm")
    assert r.schedule is not None, str(r)
    got = {k: r.schedule[k] for k in want}
    assert got == want, str(r)
    assert gpu in r.matches, str(r)
    assert r.reproduces
    assert r.schedule["c_joins"] == ("epilogue" if takes_c else "none (fn takes no C)")
    text = str(r)
    assert "schedule: split_k=" in text and f"matches: {r.matches[0]}" in text


def test_the_probe_finds_the_output_epilogue_and_where_c_joins():
    r = mma.probe(_boxes(mma.cublas("h100", "bf16", "bf16"))[0], "bf16", "bf16", shape="gemm")
    assert r.schedule["epilogue"] == "output", str(r)
    acc = mma.LibraryGEMM(mma.preset("a100", "bf16"), mma.Schedule(c_joins="accumulator"))
    r = mma.probe(_boxes(acc)[0], "bf16", "fp32", shape="gemm")
    assert r.schedule["c_joins"] == "accumulator" and "a100" in r.matches, str(r)


def test_a_callable_that_needs_multiples_of_16_is_padded():
    g = mma.cublas("h100", "e4m3")
    calls = []

    def scaled_mm(A, B):  # torch._scaled_mm refuses M, N, K that are not multiples of 16
        calls.append((A.shape, B.shape))
        if any(d % 16 for d in (*A.shape, B.shape[1])):
            raise RuntimeError("expected all dimensions to be multiples of 16")
        return g(A, B)

    r = mma.probe(scaled_mm, "e4m3", "fp32", shape="gemm")
    assert r.findings["shape"].value == 16
    assert "multiples of 16" in r.findings["shape"].how
    assert r.schedule["promote_every"] == 128 and "h100" in r.matches
    assert all(a[0] % 16 == 0 and a[1] % 16 == 0 and b[1] % 16 == 0 for a, b in calls[2:])


def test_a_gemm_that_is_no_chained_instruction_is_named_nothing():
    def exact(A, B):  # the exact sum of the products (math.fsum), rounded to FP32
        A, B = A.astype(np.float64), B.astype(np.float64)   # products exact in float64
        out = np.empty((A.shape[0], B.shape[1]), np.float32)
        for i, j in np.ndindex(out.shape):
            out[i, j] = math.fsum(A[i] * B[:, j])          # not `@`: no host BLAS order
        return out

    r = mma.probe(exact, "fp16", "fp32", shape="gemm")
    assert r.schedule is None and r.matches == [] and not r.reproduces
    assert "none of" in r.findings["schedule"].how


def test_bad_probe_arguments():
    with pytest.raises(ValueError, match="a pair .* is accepted with shape='gemm' only"):
        mma.probe(lambda a, b, c: c, ("e4m3", "e5m2"), "fp32")
    with pytest.raises(mma.ProbeError, match="raised at every shape tried"):
        mma.probe(lambda A, B: 1 / 0, "fp16", "fp32", shape="gemm")
