"""Scalar arithmetic speed: fpsim's add, mul, div, fma and sqrt in FP16 and
BF16 against gmpy2 (MPFR, in C) emulating the same format, on the same
operands, in the same run.

Prints the median time per operation and the ratio fpsim / gmpy2 (the
project's goal is at most 10).  Not a test: ``python benchmarks/bench_arith.py``.

Method: the operands are cut into chunks, and each chunk is timed on both
sides one right after the other, the order alternating; the ratio shown is
the median of these paired ratios, so that the load of a shared machine,
which changes over milliseconds, falls on both sides of each pair alike.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

import fpsim
from fpsim import arith

try:
    import gmpy2
except ImportError:  # pragma: no cover
    raise SystemExit("this benchmark needs gmpy2: pip install 'fpsim[test]'") from None


def _mpfr_context(fmt: fpsim.Format) -> gmpy2.context:
    # MPFR writes x = m × 2**e with 0.5 <= m < 1: emax is one above IEEE's,
    # and the smallest subnormal 2**(emin - p + 1) has MPFR exponent emin - p + 2.
    p = fmt.precision
    return gmpy2.context(precision=p, emin=fmt.emin - p + 2, emax=fmt.emax + 1,
                         subnormalize=True, round=gmpy2.RoundToNearest)


def _per_op(fn, args: list[tuple]) -> float:
    t0 = time.perf_counter()
    for a in args:
        fn(*a)
    return (time.perf_counter() - t0) / len(args)


def _paired(ours, theirs, args: list[tuple], gargs: list[tuple], repeats: int,
            chunk: int) -> tuple[float, float, float]:
    """Median time per operation of each side and median of the paired
    ratios, timing both sides on each chunk of operands in turn."""
    _per_op(ours, args)  # warm-up: first-use tables, interned results, specialized bytecode
    _per_op(theirs, gargs)
    t_ours, t_theirs, ratios = [], [], []
    for r in range(repeats):
        for i in range(0, len(args), chunk):
            a, g = args[i:i + chunk], gargs[i:i + chunk]
            if (r + i // chunk) % 2:
                y, x = _per_op(theirs, g), _per_op(ours, a)
            else:
                x, y = _per_op(ours, a), _per_op(theirs, g)
            t_ours.append(x)
            t_theirs.append(y)
            ratios.append(x / y)
    return statistics.median(t_ours), statistics.median(t_theirs), statistics.median(ratios)


def _cases(ctx: fpsim.Context) -> list[tuple]:
    """(name, fpsim call, gmpy2 call) on operand triples (a, b, c)."""
    return [
        ("add", lambda a, b, c: arith.add(a, b, ctx), lambda a, b, c: a + b),
        ("mul", lambda a, b, c: arith.mul(a, b, ctx), lambda a, b, c: a * b),
        ("div", lambda a, b, c: arith.div(a, b, ctx), lambda a, b, c: a / b),
        ("fma", lambda a, b, c: arith.fma(a, b, c, ctx),
         lambda a, b, c: gmpy2.fma(a, b, c)),
        ("sqrt", lambda a, b, c: arith.sqrt(arith.abs(a), ctx),
         lambda a, b, c: gmpy2.sqrt(abs(a))),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=20000, help="operand tuples per repeat")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--chunk", type=int, default=1000, help="operand tuples per timed pair")
    args = parser.parse_args()
    rng = random.Random(2)
    print(f"{'op':<10} {'fpsim ns':>9} {'gmpy2 ns':>9} {'fpsim/gmpy2':>12}")
    for fmt in (fpsim.FP16, fpsim.BF16):
        ctx = fpsim.Context()
        gctx = _mpfr_context(fmt)
        values = [fmt.round(rng.uniform(-1000, 1000), ctx) for _ in range(3 * args.n)]
        triples = [tuple(values[3 * i: 3 * i + 3]) for i in range(args.n)]
        with gmpy2.context(gctx):
            g = [tuple(gmpy2.mpfr(float(v)) for v in t) for t in triples]
            # Sanity: same results as MPFR for add (values, not flags).
            for (a, b, _), (ga, gb, _) in zip(triples[:1000], g[:1000]):
                assert float(arith.add(a, b, ctx)) == float(ga + gb)
            cases = _cases(ctx)
            for name, ours, theirs in cases:
                t_ours, t_theirs, ratio = _paired(ours, theirs, triples, g, args.repeats,
                                                  args.chunk)
                print(f"{fmt.name + ' ' + name:<10} {t_ours * 1e9:>9.0f} {t_theirs * 1e9:>9.0f} "
                      f"{ratio:>12.1f}")
    print(f"\nmedians over {args.repeats} repeats x {args.n} operations, timed in chunks of "
          f"{args.chunk}, fpsim and gmpy2 in turn on each chunk; the ratio is the median of "
          "the paired ratios.  sqrt includes an abs on both sides")


if __name__ == "__main__":
    main()
