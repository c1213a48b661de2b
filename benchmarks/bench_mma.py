"""Matrix-unit models (issue 18): the speed of fpsim.mma at real sizes,
beside plain numpy doing the nearest computation it can in the same run.

* 10^5 rows of K = 32 E4M3 products through the ``h100`` FP8 instruction
  (one ``model(a, b, c)`` call), against numpy's float32 dot products of
  the same rows (``einsum``: not the unit's arithmetic, the cost of touching
  the data);
* a 512 x 512 x 512 FP16 GEMM through the ``h100`` FP16 instruction,
  chained along K (``fpsim.ops.matmul(a, b, accumulate=model)``: 32
  instructions per output element), against the numpy float32 loop over k
  and against ``fpsim.ops.matmul`` with IEEE FP32 accumulation.

* library GEMMs (issue 29): a ``--library`` (default 1024) cubed GEMM
  through ``fpsim.mma.cublas("h100", "e4m3")`` (FP8, promoted every 128)
  and ``cublas("h100", "fp16", split_k=4)``, each beside the plain chain of
  the same instruction on the same inputs (``ops.matmul(accumulate=...)``),
  which is what the schedules add their FP32 steps to.

The issue's goals: the first in at most a few seconds, the second under a
minute, on the project's 2-core machine; the library GEMMs print their time
(their speed goal is a separate issue).  Prints medians; asserts nothing
about time.  Run ``python benchmarks/bench_mma.py [--quick]``.
"""

from __future__ import annotations

import argparse

import ml_dtypes
import numpy as np
from _timing import median_seconds

import fpsim.mma as mma
from fpsim import ops

F32 = np.float32


def numpy_gemm(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Sequential FP32 accumulation of exact float32 products."""
    a32, b32 = a.astype(F32), b.astype(F32)
    acc = np.zeros((a.shape[0], b.shape[1]), F32)
    for k in range(a.shape[1]):
        acc = acc + a32[:, k:k + 1] * b32[k:k + 1, :]
    return acc


def line(name: str, ours: float, peer: float, peer_name: str, goal: str) -> None:
    print(f"{name:<44} {ours:>9.3f} s {peer:>9.3f} s {ours / peer:>8.1f}x  "
          f"{peer_name:<24} {goal}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10**5)
    parser.add_argument("--gemm", type=int, default=512, help="M = N = K of the GEMM")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--library", type=int, default=1024,
                        help="M = N = K of the library GEMMs (one run each: minutes at 1024)")
    parser.add_argument("--quick", action="store_true", help="small sizes, one repeat")
    args = parser.parse_args()
    if args.quick:
        args.rows, args.gemm, args.repeats, args.library = 10**4, 64, 1, 256
    rng = np.random.default_rng(0)
    print(f"{'':<44} {'fpsim':>11} {'peer':>11} {'ratio':>9}  {'peer':<24} goal")

    h100_fp8 = mma.preset("h100", "e4m3")
    a = rng.standard_normal((args.rows, 32)).astype(ml_dtypes.float8_e4m3fn)
    b = rng.standard_normal((args.rows, 32)).astype(ml_dtypes.float8_e4m3fn)
    c = np.zeros(args.rows, F32)
    h100_fp8(a, b, c)  # warm: first-use work is not part of the figure
    ours = median_seconds(lambda: h100_fp8(a, b, c), args.repeats)
    peer = median_seconds(lambda: np.einsum("ij,ij->i", a.astype(F32), b.astype(F32)),
                          args.repeats)
    line(f"h100 e4m3 instruction, {args.rows:,} rows of K=32", ours, peer, "numpy float32 einsum",
         "a few seconds")

    n = args.gemm
    h100_fp16 = mma.preset("h100", "fp16")
    x = rng.standard_normal((n, n)).astype(np.float16)
    y = rng.standard_normal((n, n)).astype(np.float16)
    ours = median_seconds(lambda: ops.matmul(x, y, accumulate=h100_fp16), args.repeats)
    peer = median_seconds(lambda: numpy_gemm(x, y), args.repeats)
    ieee = median_seconds(lambda: ops.matmul(x, y, out="fp32"), args.repeats)
    line(f"matmul {n}^3 fp16 on h100, chained", ours, peer, "numpy float32 k-loop",
         "under 60 s")
    line(f"matmul {n}^3 fp16 on h100, chained", ours, ieee, "fpsim FP32 accumulation", "")

    n = args.library
    for fmt, dt, kw, label in (("e4m3", ml_dtypes.float8_e4m3fn, {}, "promoted every 128"),
                               ("fp16", np.float16, {"split_k": 4}, "split_k=4")):
        x = rng.standard_normal((n, n)).astype(dt)
        y = rng.standard_normal((n, n)).astype(dt)
        g = mma.cublas("h100", fmt, **kw)
        ours = median_seconds(lambda g=g, x=x, y=y: g(x, y), 1)
        chain = median_seconds(lambda x=x, y=y, m=g.model: ops.matmul(x, y, accumulate=m), 1)
        line(f"cublas h100 {fmt} {n}^3, {label}", ours, chain, "the plain chain", "print")


if __name__ == "__main__":
    main()
