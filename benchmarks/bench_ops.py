"""Reference operators' speed, beside numpy's own (unrounded-step) version of
the same computation measured in the same run.

* a 256x256x256 matmul with FP16 inputs and FP32 accumulation, sequential
  order, exact products (goal: under 2 s on the project's 2-core machine),
  and with products rounded in FP32 (``compute="fp32"``, the same results);
* a sum over the last axis of a 4096x4096 FP16 array in FP32 (sequential and
  pairwise);
* softmax and layer_norm over the rows of a 4096x4096 FP16 array, computed
  and accumulated in FP32 (goal: under 5 s each);
* the correctly rounded exp, log, tanh, erf and rsqrt of 10^6 FP16 values
  (the peer: numpy's float32 functions, ``math.erf`` element by element).

The peer is numpy's ``float32`` matmul/sum on the same data, which is neither
sequential nor bit-for-bit: it shows what exactness costs, it is not a
competitor.

Each figure is measured twice, in fresh processes: with glibc's default
allocator settings, and with ``MALLOC_MMAP_THRESHOLD_`` and
``MALLOC_TRIM_THRESHOLD_`` raised to 256 MiB.  The array engine works on
chunks of 65,536 elements, whose temporaries (512 KiB each) glibc by default
maps from and returns to the system at every call, page faults included; a
process that has once freed a large array (any process holding tensors of
tens of MB) or that sets these variables keeps them instead.  The operators
make few, large calls (matmul computes the products of 16 steps of a 256 x
256 output at once, and running sums go through
``fpsim.array.add_sequence``), which keeps the difference small.

Prints medians of a few runs; asserts nothing about time.
Run ``python benchmarks/bench_ops.py [--repeats 3]``.
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys

import numpy as np
from _timing import median_seconds

from fpsim import ops

TUNED = {"MALLOC_MMAP_THRESHOLD_": str(1 << 28), "MALLOC_TRIM_THRESHOLD_": str(1 << 28)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        measure(args.repeats)
        return
    for label, extra in (("glibc default allocator settings", {}),
                         ("MALLOC_MMAP_THRESHOLD_ = MALLOC_TRIM_THRESHOLD_ = 256 MiB", TUNED)):
        print(f"-- {label}")
        sys.stdout.flush()
        subprocess.run([sys.executable, __file__, "--child", "--repeats", str(args.repeats)],
                       env={**os.environ, **extra}, check=True)
        print()


def measure(repeats: int) -> None:
    rng = np.random.default_rng(0)
    print(f"{'operator':<52} {'fpsim s':>8} {'numpy s':>8}   goal")
    a = rng.standard_normal((256, 256)).astype(np.float16)
    b = rng.standard_normal((256, 256)).astype(np.float16)
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    peer = median_seconds(lambda: a32 @ b32, repeats)
    for label, kw in (("matmul 256^3 fp16 in, fp32 acc, exact products", {}),
                      ("matmul 256^3 fp16 in, fp32 acc, compute=fp32", {"compute": "fp32"})):
        t = median_seconds(lambda kw=kw: ops.matmul(a, b, out="fp32", **kw), repeats)
        print(f"{label:<52} {t:>8.2f} {peer:>8.4f}   < 2 s")
    x = rng.standard_normal((4096, 4096)).astype(np.float16)
    x32 = x.astype(np.float32)
    peer = median_seconds(lambda: x32.sum(axis=1), repeats)
    for order in ("sequential", "pairwise"):
        t = median_seconds(lambda o=order: ops.sum(x, axis=1, order=o), repeats)
        print(f"{'sum 4096x4096 fp16 over rows, fp32 acc, ' + order:<52} {t:>8.2f} "
              f"{peer:>8.4f}")
    for name in ("softmax", "layer_norm"):
        t = median_seconds(lambda n=name: getattr(ops, n)(x), repeats)
        print(f"{name + ' 4096x4096 fp16, fp32 compute/accumulate':<52} {t:>8.2f} "
              f"{'':>8}   < 5 s")
    y = rng.standard_normal(10**6).astype(np.float16)
    y32 = y.astype(np.float32)
    peers = {"exp": np.exp, "log": np.log, "tanh": np.tanh,
             "erf": np.frompyfunc(math.erf, 1, 1), "rsqrt": lambda v: 1 / np.sqrt(v)}
    for name, peer_fn in peers.items():
        arg, arg32 = (np.abs(y), np.abs(y32)) if name in ("log", "rsqrt") else (y, y32)
        t = median_seconds(lambda n=name, a=arg: getattr(ops, n)(a), repeats)
        with np.errstate(all="ignore"):
            peer = median_seconds(lambda p=peer_fn, a=arg32: p(a), repeats)
        print(f"{name + ' of 10^6 fp16, correctly rounded':<52} {t:>8.3f} {peer:>8.4f}")
    print(f"medians of {repeats} runs")


if __name__ == "__main__":
    main()
