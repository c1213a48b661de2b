"""Speed at real sizes (issue 19): each figure beside the plain-numpy
reference that computes the same bits, measured in the same run.

* ``ops.matmul`` with FP32 sequential accumulation of FP16, BF16 and E4M3
  inputs, M = N = K = 384 (``--gemm``), against the obvious numpy loop
  ``for k: acc = float32(acc + float32(a[:, k]) * float32(b[k, :]))`` (a
  product of two values of these formats is exact in float32, so the loop
  rounds exactly where the declared numerics do: its bits are checked equal
  to fpsim's before timing);
* softmax, log_softmax, layer_norm, rms_norm and gelu with FP32 compute on
  1024 x 1024 FP16 (``--rows``), against plain numpy float32 implementations
  of the same formulas with float32 results (not bit-checked: numpy's exp is
  not correctly rounded and it has no erf, so gelu's reference uses a
  float32 polynomial; the figure is the cost of exactness);
* ``array.add``/``sub``/``mul`` in FP16 and BF16, round to nearest even, on
  10^7 elements (``-n``), against ``(a.astype(float64) OP
  b.astype(float64)).astype(dtype)`` (exact in float64, one rounding: the
  same bits, checked), by default and on one thread as the reference runs
  (``workers=1``; issue 43's goal for BF16: at most 2x), and every other
  rounding mode against RNE's time;
* ``array.encode`` float32 -> BF16, FP16, E4M3, E5M2 against ml_dtypes' /
  numpy's ``astype`` (the same bits, checked, except E4M3, where ml_dtypes
  saturates out-of-range values and the OCP rule gives NaN).

Every fpsim call is made once before it is timed: tables built on first
use are not part of a figure.

The issue's goals are printed beside each ratio.  Prints medians of
``--repeats`` calls (5), fpsim's and the reference's called in turn so that
a burst of load elsewhere slows both; asserts nothing about time.  Run
``python benchmarks/bench_speed.py [--quick]`` on an otherwise idle machine:
under load fpsim's figures degrade more than numpy's.
"""

from __future__ import annotations

import argparse
import tracemalloc
from typing import Any

import ml_dtypes
import numpy as np
from _timing import median_pair

import fpsim
from fpsim import _threads, array, ops

F32 = np.float32


def numpy_gemm(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Sequential FP32 accumulation of exact float32 products, k = 0, 1, ..."""
    a32, b32 = a.astype(F32), b.astype(F32)
    acc = np.zeros((a.shape[0], b.shape[1]), F32)
    for k in range(a.shape[1]):
        acc = acc + a32[:, k:k + 1] * b32[k:k + 1, :]  # float32 ops: one rounding each
    return acc


def numpy_gemm_blocked(a: np.ndarray, b: np.ndarray, block: int) -> np.ndarray:
    """Blocks of ``block`` consecutive k summed sequentially from +0, each
    block's sum added into an outer FP32 sum from +0."""
    outer = np.zeros((a.shape[0], b.shape[1]), F32)
    for start in range(0, a.shape[1], block):
        outer = outer + numpy_gemm(a[:, start:start + block], b[start:start + block, :])
    return outer


def numpy_gemm_pairwise(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The tree of adjacent pairs of products (a binary counter: partial sums
    of equal size merge at once)."""
    a32, b32 = a.astype(F32), b.astype(F32)
    stack: list[tuple[int, np.ndarray]] = []
    for k in range(a.shape[1]):
        t, size = a32[:, k:k + 1] * b32[k:k + 1, :], 1
        while stack and stack[-1][0] == size:
            t, size = stack.pop()[1] + t, size * 2
        stack.append((size, t))
    t = stack.pop()[1]
    while stack:
        t = stack.pop()[1] + t
    return t


def numpy_softmax(x: np.ndarray) -> np.ndarray:
    x = x.astype(F32)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def numpy_log_softmax(x: np.ndarray) -> np.ndarray:
    x = x.astype(F32)
    s = x - x.max(axis=-1, keepdims=True)
    return s - np.log(np.exp(s).sum(axis=-1, keepdims=True))


def numpy_layer_norm(x: np.ndarray) -> np.ndarray:
    x = x.astype(F32)
    mu = x.mean(axis=-1, keepdims=True)
    d = x - mu
    var = (d * d).mean(axis=-1, keepdims=True)
    return d / np.sqrt(var + F32(1e-5))


def numpy_rms_norm(x: np.ndarray) -> np.ndarray:
    x = x.astype(F32)
    return x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + F32(1e-6))


def numpy_gelu(x: np.ndarray) -> np.ndarray:
    # numpy has no erf: Abramowitz and Stegun 7.1.26 in float32 (error below
    # 1.5e-7), the vectorized formula a numpy user would write
    x = x.astype(F32)
    z = np.abs(x) * F32(0.70710677)
    t = F32(1) / (F32(1) + F32(0.3275911) * z)
    poly = t * (F32(0.25482960) + t * (F32(-0.28449672) + t * (F32(1.4214138)
                + t * (F32(-1.4531521) + t * F32(1.0614054)))))
    erf = np.copysign(F32(1) - poly * np.exp(-z * z), x)
    return F32(0.5) * x * (F32(1) + erf)


def line(name: str, ours: float, peer: float, goal: str) -> None:
    print(f"{name:<40} {ours * 1e3:>10.1f} {peer * 1e3:>10.1f} {ours / peer:>8.1f}x   {goal}")


def header(title: str) -> None:
    print(f"\n{title:<40} {'fpsim ms':>10} {'ref ms':>10} {'ratio':>9}   goal")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gemm", type=int, default=384, help="M = N = K of the GEMMs")
    parser.add_argument("--big-gemm", type=int, default=1024, help="M = N = K of the large one")
    parser.add_argument("--rows", type=int, default=1024, help="rows = columns of the norms")
    parser.add_argument("-n", type=int, default=10**7, help="elements of the array ops")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="small sizes, one repeat")
    args = parser.parse_args()
    if args.quick:
        args.gemm, args.big_gemm, args.rows, args.n, args.repeats = 64, 96, 128, 10**5, 1
    rng = np.random.default_rng(0)
    np.seterr(all="ignore")

    m = args.gemm
    header(f"matmul {m}^3, FP32 accumulation")
    orders = (("sequential", "sequential", numpy_gemm),
              ("blocked 32", ("blocked", 32), lambda a, b: numpy_gemm_blocked(a, b, 32)),
              ("pairwise", "pairwise", numpy_gemm_pairwise))
    for name, dt in (("fp16", np.float16), ("bf16", ml_dtypes.bfloat16),
                     ("e4m3", ml_dtypes.float8_e4m3fn)):
        a = rng.standard_normal((m, m)).astype(dt)
        b = rng.standard_normal((m, m)).astype(dt)
        for label, order, peer in orders:
            ours = ops.matmul(a, b, accumulate="fp32", out="fp32", order=order)
            assert np.array_equal(ours.view(np.uint32), peer(a, b).view(np.uint32)), name
            t_ours, t_ref = median_pair(lambda a=a, b=b, order=order: ops.matmul(
                a, b, accumulate="fp32", out="fp32", order=order),
                lambda a=a, b=b, peer=peer: peer(a, b), args.repeats)
            line(f"{name} inputs, {label}", t_ours, t_ref, "<= 2x")
    big = args.big_gemm
    ga = rng.standard_normal((big, big)).astype(np.float16)
    gb = rng.standard_normal((big, big)).astype(np.float16)
    ours = ops.matmul(ga, gb, out="fp32")
    assert np.array_equal(ours.view(np.uint32), numpy_gemm(ga, gb).view(np.uint32))
    t_big, t_ref = median_pair(lambda: ops.matmul(ga, gb, out="fp32"),
                               lambda: numpy_gemm(ga, gb), args.repeats)
    line(f"fp16 inputs, sequential, {big}^3", t_big, t_ref, "under 2 s")

    header(f"{args.rows}x{args.rows} FP16, FP32 compute")
    x = (rng.standard_normal((args.rows, args.rows)) * 3).astype(np.float16)
    for name, fn, ref in (("softmax", ops.softmax, numpy_softmax),
                          ("log_softmax", ops.log_softmax, numpy_log_softmax),
                          ("layer_norm", ops.layer_norm, numpy_layer_norm),
                          ("rms_norm", ops.rms_norm, numpy_rms_norm),
                          ("gelu", ops.gelu, numpy_gelu)):
        fn(x)  # warm: tables built once
        t_ours, t_ref = median_pair(lambda fn=fn: fn(x), lambda ref=ref: ref(x), args.repeats)
        line(name, t_ours, t_ref, "<= 3x")

    header(f"array ops, {args.n:,} elements")
    for fmt, dt in ((fpsim.FP16, np.float16), (fpsim.BF16, ml_dtypes.bfloat16)):
        a = (rng.standard_normal(args.n) * 100).astype(dt)
        b = (rng.standard_normal(args.n) * 100).astype(dt)
        for op, npop in (("add", np.add), ("sub", np.subtract), ("mul", np.multiply)):
            fn = getattr(array, op)
            ref = lambda a=a, b=b, npop=npop, dt=dt: npop(a.astype(np.float64),
                                                          b.astype(np.float64)).astype(dt)
            assert np.array_equal(fn(a, b).view(np.uint16), ref().view(np.uint16))
            rne = lambda fn=fn, a=a, b=b: fn(a, b)  # noqa: E731
            t_rne, t_ref = median_pair(rne, ref, args.repeats)
            goal = "<= 1.5x" if fmt is fpsim.FP16 else "<= 2x"
            line(f"{fmt.name} {op} rne", t_rne, t_ref, goal)
            # numpy's reference runs on one thread: so does fpsim here
            t_one, t_ref = median_pair(lambda fn=fn, a=a, b=b: fn(a, b, workers=1), ref,
                                       args.repeats)
            line(f"{fmt.name} {op} rne, workers=1", t_one, t_ref, goal)
            for mode in ("rtz", "rup", "rdn", "rna", "rto"):
                ctx = fpsim.Context(rounding=mode)
                fn(a, b, ctx)  # a mode's tables are built once, on its first call
                t, t_mode_rne = median_pair(lambda fn=fn, a=a, b=b, ctx=ctx: fn(a, b, ctx), rne,
                                            args.repeats)
                line(f"{fmt.name} {op} {mode} (ref: rne)", t, t_mode_rne, "<= 3x")

    header(f"encode float32, {args.n:,} elements")
    x32 = (rng.standard_normal(args.n) * np.exp2(rng.uniform(-20, 10, args.n))).astype(F32)
    for fmt, dt in ((fpsim.BF16, ml_dtypes.bfloat16), (fpsim.FP16, np.float16),
                    (fpsim.E4M3, ml_dtypes.float8_e4m3fn), (fpsim.E5M2, ml_dtypes.float8_e5m2)):
        codes = array.encode(x32, fmt)  # warm, and the same bits as the peer's cast
        assert np.array_equal(codes, x32.astype(dt).view(codes.dtype)) or fmt is fpsim.E4M3
        t_ours, t_ref = median_pair(lambda fmt=fmt: array.encode(x32, fmt),
                                    lambda dt=dt: x32.astype(dt), args.repeats)
        line(f"float32 -> {fmt.name}", t_ours, t_ref, "<= 3x")

    # Both cores: the same call with workers=1 as the reference (a ratio
    # below 1 is the speed-up of the default, which uses every CPU).
    header(f"threads: default ({_threads.available_cpus()} CPUs; row-wise ops: workers=2) "
           "vs workers=1")
    x16 = (rng.standard_normal(args.n) * 100).astype(np.float16)
    y16 = (rng.standard_normal(args.n) * 100).astype(np.float16)
    for label, call in ((f"matmul fp16 {big}^3", lambda w: ops.matmul(ga, gb, out="fp32",
                                                                     workers=w)),
                        (f"softmax {args.rows}^2", lambda w: ops.softmax(x, workers=w or 2)),
                        (f"layer_norm {args.rows}^2",
                         lambda w: ops.layer_norm(x, workers=w or 2)),
                        (f"add fp16, {args.n:,}", lambda w: array.add(x16, y16, workers=w)),
                        (f"float32 -> bf16, {args.n:,}", lambda w: array.encode(
                            x32, "bf16", workers=w))):
        t_default, t_one = median_pair(lambda call=call: call(None), lambda call=call: call(1),
                                       args.repeats)
        line(label, t_default, t_one, "a speed-up (below 1x)")

    # Peak memory of a call: its inputs plus the most it allocates at once
    # (numpy reports its arrays to tracemalloc; the output is among them),
    # against the bytes of its inputs plus its output.
    print(f"\n{'peak memory of a call':<40} {'peak MB':>10} {'in+out MB':>10} {'ratio':>9}")
    for label, call, inputs in (
            (f"matmul fp16 {big}^3", lambda: ops.matmul(ga, gb, out="fp32"), (ga, gb)),
            (f"add fp16, {args.n:,}", lambda: array.add(x16, y16), (x16, y16)),
            (f"float32 -> bf16, {args.n:,}", lambda: array.encode(x32, "bf16"), (x32,)),
            (f"softmax {args.rows}^2", lambda: ops.softmax(x), (x,))):
        allocated, result = peak_bytes(call)
        held = sum(v.nbytes for v in inputs) + result.nbytes
        peak = allocated + sum(v.nbytes for v in inputs)
        print(f"{label:<40} {peak / 2**20:>10.1f} {held / 2**20:>10.1f} {peak / held:>8.1f}x")


def peak_bytes(call: Any) -> tuple[int, Any]:
    """The most memory allocated at once during ``call()`` (numpy reports
    its arrays to tracemalloc), and its result."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        result = call()
        return tracemalloc.get_traced_memory()[1], result
    finally:
        tracemalloc.stop()


if __name__ == "__main__":
    main()
