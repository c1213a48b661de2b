"""Sweep speed: every FP16 operand pair (2**32 = 4,294,967,296, rne) of
numpy's float16 add checked against the golden model with
:func:`fpsim.sweep.run`, on Dask's local scheduler.

Printed beside it, measured in the same run:

* numpy alone computing the same float16 additions chunk by chunk (the
  candidate's own cost, the floor of any sweep that runs it);
* the in-process rate of one core on chunks spread over the space, and the
  rate per core of the Dask run, from which the time on an N-worker cluster
  is estimated (chunks are independent: the rate adds up per core, less the
  scheduler's overhead);
* the memory one chunk takes (tracemalloc's peak while one chunk is done).

The project's goal: the full sweep under 10 minutes on its 2-core machine.
Prints; asserts nothing about time.  ``--quick`` sweeps a 1/64 stratified
sample instead (the figures then are per tuple the same, minus fixed costs).
Run ``python benchmarks/bench_sweep.py [--quick] [--scheduler processes]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import tracemalloc

import numpy as np

from fpsim import sweep
from fpsim.sweep._task import evaluate


def np_add(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a + b


def numpy_only(chunks: int, chunk_size: int) -> float:
    """Seconds numpy takes for the float16 additions of ``chunks`` chunks,
    operands made as the sweep makes them."""
    t0 = time.perf_counter()
    for c in range(chunks):
        flat = np.arange(c * chunk_size, (c + 1) * chunk_size, dtype=np.uint64)
        a = (flat >> np.uint64(16)).astype(np.uint16).view(np.float16)
        b = (flat & np.uint64(0xFFFF)).astype(np.uint16).view(np.float16)
        with np.errstate(all="ignore"):
            np_add(a, b)
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a 1/64 sample, not every pair")
    parser.add_argument("--scheduler", default="processes", help="local, processes (default), "
                        "or a distributed scheduler's address")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    candidate = "bench_sweep:np_add"
    spec = sweep.plan("add", "fp16", candidate)
    chunk = spec.chunk_size

    # One core, in this process, on 64 chunks spread over the space.
    evaluate(spec, 0)  # the golden model's tables, built once per process
    picks = range(0, spec.chunks, spec.chunks // 64)
    t0 = time.perf_counter()
    for c in picks:
        evaluate(spec, c)
    one_core = len(picks) * chunk / (time.perf_counter() - t0)
    tracemalloc.start()
    evaluate(spec, 1000)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()

    sample = 1 / 64 if args.quick else None
    t0 = time.perf_counter()
    r = sweep.run("add", "fp16", candidate, sample=sample, scheduler=args.scheduler,
                  workers=args.workers)
    wall = time.perf_counter() - t0
    rate = r.done / wall
    workers = args.workers if args.scheduler in ("local", "threads", "processes") else None
    np_seconds = numpy_only(64, chunk) * (r.done / (64 * chunk))

    what = "a 1/64 sample of" if args.quick else "all"
    print(f"sweep of {what} FP16 add pairs (numpy float16 add against fpsim, rne): "
          f"{r.done:,} tuples, verdict {r.verdict}, {r.report.beyond_tolerance} beyond "
          f"tolerance, {r.report.within_tolerance:,} NaN pairs with other NaN codes")
    print(f"  {r.scheduler}: {wall:8.1f} s  ({rate / 1e6:.2f} M tuples/s"
          + (f", {rate / workers / 1e6:.2f} M/s per worker)" if workers else ")"))
    print(f"  numpy alone, same additions:   {np_seconds:8.1f} s  (sweep / numpy = "
          f"{wall / np_seconds:.1f}x)")
    print(f"  in process, one core:          {one_core / 1e6:8.2f} M tuples/s -> "
          f"{2 ** 32 / one_core:.0f} s for all 2**32 pairs")
    for n in (2, 8, 32, 128):
        print(f"  estimate on {n:>3} cores at this run's rate per core: "
              f"{2 ** 32 / (rate / (workers or 1) * n):7.0f} s for all pairs")
    print(f"  memory of one chunk of {chunk:,} tuples: {peak / 2 ** 20:.0f} MiB "
          f"({peak / chunk:.0f} bytes per tuple)")


if __name__ == "__main__":
    main()
