"""Scalar rounding speed: fpsim's ``FP16.round(float)`` against gfloat's
``round_float`` (and E4M3 likewise), on the same inputs, in the same run.

Prints the median time per call over several repeats and the ratio
gfloat / fpsim (above 1 means fpsim is faster).  Not a test: run it with
``python benchmarks/bench_round.py`` or ``tox -e bench``.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

import fpsim

try:
    from gfloat import RoundMode, round_float
    from gfloat.formats import format_info_binary16, format_info_ocp_e4m3
except ImportError:  # pragma: no cover
    raise SystemExit("this benchmark needs gfloat: pip install 'fpsim[test]'") from None


def _inputs(n: int, limit: float, seed: int) -> list[float]:
    rng = random.Random(seed)
    # Uniform magnitudes would almost never reach the subnormal range, so mix
    # log-uniform magnitudes across the format's whole range with signs.
    xs = []
    for _ in range(n):
        mag = 2.0 ** rng.uniform(-30, 17) if rng.random() < 0.5 else rng.uniform(0, limit)
        xs.append(mag if rng.random() < 0.5 else -mag)
    return xs


def _median_per_call(fn, xs: list[float], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for x in xs:
            fn(x)
        times.append((time.perf_counter() - t0) / len(xs))
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=20000, help="inputs per repeat")
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()

    cases = [
        ("fp16 rne", fpsim.FP16, format_info_binary16, 65504.0, {}),
        ("fp16 rne getcontext", fpsim.FP16, format_info_binary16, 65504.0, None),
        ("e4m3 rne", fpsim.E4M3, format_info_ocp_e4m3, 448.0, {}),
        ("e4m3 rne saturate", fpsim.E4M3, format_info_ocp_e4m3, 448.0, {"saturate": True}),
    ]
    print(f"{'case':<20} {'fpsim us':>9} {'gfloat us':>10} {'gfloat/fpsim':>13}")
    for name, fmt, fi, limit, opts in cases:
        xs = _inputs(args.n, limit * 1.1, seed=1)
        # opts None: no ctx argument, so each call looks up the current context.
        ctx = None if opts is None else fpsim.Context(**opts)
        sat = bool(opts and opts.get("saturate"))
        # Sanity: both compute the same values (gfloat raises nothing, so
        # compare values only; NaN compares by NaN-ness).
        for x in xs[:2000]:
            a = float(fmt.round(x, ctx))
            b = round_float(fi, x, RoundMode.TiesToEven, sat)
            assert a == b or (a != a and b != b), (x, a, b)
        t_fpsim = _median_per_call(lambda x, r=fmt.round, c=ctx: r(x, c), xs, args.repeats)
        t_gfloat = _median_per_call(
            lambda x, f=fi, s=sat: round_float(f, x, RoundMode.TiesToEven, s), xs, args.repeats)
        print(f"{name:<20} {t_fpsim * 1e6:>9.3f} {t_gfloat * 1e6:>10.3f} "
              f"{t_gfloat / t_fpsim:>13.2f}")
    print(f"\nmedian of {args.repeats} repeats x {args.n} inputs each; "
          "both return a value (fpsim a Float with bits and flags, gfloat a float)")


if __name__ == "__main__":
    main()
