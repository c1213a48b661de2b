"""Reference operators' speed, beside numpy's own (unrounded-step) version of
the same computation measured in the same run.

* a 256x256x256 matmul with FP16 inputs and FP32 accumulation, sequential
  order, exact products (goal: under 2 s on the project's 2-core machine),
  and with products rounded in FP32 (``compute="fp32"``, the same results);
* a sum over the last axis of a 4096x4096 FP16 array in FP32 (sequential and
  pairwise).

The peer is numpy's ``float32`` matmul/sum on the same data, which is neither
sequential nor bit-for-bit: it shows what exactness costs, it is not a
competitor.  Prints medians of a few runs; asserts nothing about time.
Run ``python benchmarks/bench_ops.py [--repeats 3]``.
"""

from __future__ import annotations

import argparse

import numpy as np
from _timing import median_seconds

from fpsim import ops


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    print(f"{'operator':<52} {'fpsim s':>8} {'numpy s':>8}   goal")
    a = rng.standard_normal((256, 256)).astype(np.float16)
    b = rng.standard_normal((256, 256)).astype(np.float16)
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    peer = median_seconds(lambda: a32 @ b32, args.repeats)
    for label, kw in (("matmul 256^3 fp16 in, fp32 acc, exact products", {}),
                      ("matmul 256^3 fp16 in, fp32 acc, compute=fp32", {"compute": "fp32"})):
        t = median_seconds(lambda kw=kw: ops.matmul(a, b, out="fp32", **kw), args.repeats)
        print(f"{label:<52} {t:>8.2f} {peer:>8.4f}   < 2 s")
    x = rng.standard_normal((4096, 4096)).astype(np.float16)
    x32 = x.astype(np.float32)
    peer = median_seconds(lambda: x32.sum(axis=1), args.repeats)
    for order in ("sequential", "pairwise"):
        t = median_seconds(lambda o=order: ops.sum(x, axis=1, order=o), args.repeats)
        print(f"{'sum 4096x4096 fp16 over rows, fp32 acc, ' + order:<52} {t:>8.2f} "
              f"{peer:>8.4f}")
    print(f"\nmedians of {args.repeats} runs")


if __name__ == "__main__":
    main()
