"""FP64 array arithmetic against numpy's own float64 operations (issue 43).

For each of add, sub, mul, div, sqrt and fma on 2**22 elements (``-n``) of
typical data (normal values times powers of two in ``[2**-20, 2**20]``),
the median time of:

* numpy's operation (``x + y``, ..., ``np.sqrt(x)``; fma against
  ``x * y + z``, which rounds twice: numpy has no fused multiply-add);
* ``fpsim.array`` in round to nearest even without per-element flags
  (goal: at most 2x numpy), with them (``return_flags=True``; goal: 8x),
  and in each other deterministic mode with them (goal: 10x);

all in one thread (``workers=1``, as numpy computes), and RNE without
flags also with fpsim's default threads.  fpsim's RNE results are checked
equal to numpy's before timing (fma: to an exact Fraction on a sample).

Prints medians and ratios; asserts nothing about time.  Run
``python benchmarks/bench_fp64.py [-n 4194304] [--repeats 5]`` on an
otherwise idle machine.
"""

from __future__ import annotations

import argparse
import math
from fractions import Fraction

import numpy as np
from _timing import median_pair

from fpsim import array

OPS = {"add": (2, np.add), "sub": (2, np.subtract), "mul": (2, np.multiply),
       "div": (2, np.divide), "sqrt": (1, np.sqrt), "fma": (3, lambda x, y, z: x * y + z)}
DIRECTED = ("rtz", "rup", "rdn", "rna", "raz", "rto")


def _data(n: int, k: int) -> np.ndarray:
    rng = np.random.default_rng(k)
    return rng.standard_normal(n) * np.exp2(rng.integers(-20, 21, n))


def _check(op: str, xs: list[np.ndarray]) -> None:
    got = getattr(array, op)(*xs)
    if op != "fma":
        assert np.array_equal(got.view(np.uint64), OPS[op][1](*xs).view(np.uint64)), op
        return
    for i in range(0, xs[0].size, max(1, xs[0].size // 2000)):
        a, b, c = (Fraction(float(x[i])) for x in xs)
        assert got[i] == float(a * b + c), i   # float(Fraction) rounds to nearest even


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=1 << 22)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--ops", nargs="*", default=list(OPS))
    args = parser.parse_args()
    n = args.n
    print(f"FP64 array arithmetic, {n:,} elements, medians of {args.repeats} "
          "(fpsim and numpy called in turn)")
    print(f"{'op':5} {'variant':24} {'numpy ns/el':>11} {'fpsim ns/el':>11} {'ratio':>7} goal")
    worst: dict[str, float] = {}
    for op in args.ops:
        arity, npop = OPS[op]
        xs = [_data(n, k) for k in range(arity)]
        if op == "sqrt":
            xs = [np.abs(xs[0])]
        _check(op, xs)
        fn = getattr(array, op)
        variants = [("rne", {"workers": 1}, "2x"),
                    ("rne, threads", {}, "-"),
                    ("rne, flags", {"workers": 1, "return_flags": True}, "8x")]
        variants += [(f"{m}, flags", {"workers": 1, "return_flags": True, "rounding": m},
                      "10x") for m in DIRECTED]
        for name, kw, goal in variants:
            ours, ref = median_pair(lambda kw=kw, fn=fn, xs=xs: fn(*xs, **kw),
                                    lambda npop=npop, xs=xs: npop(*xs), args.repeats)
            ratio = ours / ref
            print(f"{op:5} {name:24} {ref / n * 1e9:11.2f} {ours / n * 1e9:11.2f} "
                  f"{ratio:7.2f} {goal}")
            if goal != "-":
                worst[goal] = max(worst.get(goal, 0.0), ratio)
    print("worst ratio per goal: " + ", ".join(f"{g}: {r:.2f}" for g, r in worst.items()))
    print(f"(geometric means are not used: each goal is a bound per operation; "
          f"log2 n = {math.log2(n):.0f})")


if __name__ == "__main__":
    main()
