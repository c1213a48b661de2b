"""Array engine speed and memory, against peers measured in the same run.

* encode float32 -> FP16, BF16, E4M3, E5M2 (rne) against ml_dtypes' / numpy's
  own ``astype`` (goal: geometric-mean slowdown at most 3x), and -> E2M1,
  E3M2, E2M3 likewise;
* encode float16 -> E4M3, E5M2 (rne; a 16-bit source takes the lookup path)
  against ``astype``;
* every rounding mode gfloat supports (rne, rna, rtz, rup, rdn) into E4M3
  against gfloat's ``round_ndarray`` + ``encode_ndarray`` (goal: at least 10x
  faster);
* peak extra memory of encoding float32 values to FP16 (tracemalloc), as a
  multiple of the output size (goal: at most 3x), with the proxy table
  already built and from a cold start (the table built inside the call);
* elementwise add and mul in E4M3, BF16 and FP16 (rne), in ns per element
  (goal: at most 20), beside ml_dtypes' / numpy's own ``x + y`` and
  ``x * y`` on the same arrays (which compute in float32 and round once more:
  the same results for these formats in rne, without flags).

Prints medians and ratios; asserts nothing about time.  Run
``python benchmarks/bench_array.py [-n 1000000 10000000]``.
"""

from __future__ import annotations

import argparse
import math
import tracemalloc

import ml_dtypes
import numpy as np
from _timing import median_seconds

import fpsim
from fpsim import array
from fpsim.array import _tables

try:
    from gfloat import RoundMode, encode_ndarray, round_ndarray
    from gfloat.formats import format_info_ocp_e4m3
except ImportError:  # pragma: no cover
    raise SystemExit("this benchmark needs gfloat: pip install 'fpsim[test]'") from None


def _values(n: int, dtype: type) -> np.ndarray:
    rng = np.random.default_rng(0)
    # Magnitudes spread over the formats' ranges, subnormals and overflow included.
    x = rng.standard_normal(n) * np.exp2(rng.uniform(-30, 18, n))
    with np.errstate(over="ignore"):
        return x.astype(dtype)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, nargs="+", default=[10**6, 10**7])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    targets = [(fpsim.FP16, np.float16), (fpsim.BF16, ml_dtypes.bfloat16),
               (fpsim.E4M3, ml_dtypes.float8_e4m3fn), (fpsim.E5M2, ml_dtypes.float8_e5m2)]
    np.seterr(over="ignore")  # the peers' casts warn on overflow to inf
    for n in args.n:
        x32 = _values(n, np.float32)
        x16 = _values(n, np.float16)
        print(f"\nn = {n:,}")
        print(f"{'encode':<24} {'fpsim ms':>9} {'peer ms':>9} {'fpsim/peer':>11}")
        ratios = []
        for fmt, dt in targets:
            codes = array.encode(x32, fmt)
            assert np.array_equal(codes, x32.astype(dt).view(codes.dtype)) or fmt.name == "e4m3"
            ours = median_seconds(lambda f=fmt, x=x32: array.encode(x, f), args.repeats)
            peer = median_seconds(lambda d=dt, x=x32: x.astype(d), args.repeats)
            ratios.append(ours / peer)
            print(f"{'float32 -> ' + fmt.name:<24} {ours * 1e3:>9.1f} {peer * 1e3:>9.1f} "
                  f"{ours / peer:>11.1f}")
        geo = math.exp(sum(map(math.log, ratios)) / len(ratios))
        print(f"{'geometric mean':<24} {'':>9} {'':>9} {geo:>11.1f}   (goal <= 3)")
        for fmt, dt in ((fpsim.E2M1, ml_dtypes.float4_e2m1fn), (fpsim.E3M2,
                        ml_dtypes.float6_e3m2fn), (fpsim.E2M3, ml_dtypes.float6_e2m3fn)):
            # (formats without NaN or infinity: the proxy table, NaN inputs
            # aside; ml_dtypes' cast handles overflow its own way)
            ours = median_seconds(lambda f=fmt, x=x32: array.encode(x, f), args.repeats)
            peer = median_seconds(lambda d=dt, x=x32: x.astype(d), args.repeats)
            print(f"{'float32 -> ' + fmt.name:<24} {ours * 1e3:>9.1f} {peer * 1e3:>9.1f} "
                  f"{ours / peer:>11.1f}")
        for fmt, dt in targets[2:]:
            array.encode(x16, fmt)  # builds the lookup table once
            ours = median_seconds(lambda f=fmt, x=x16: array.encode(x, f), args.repeats)
            peer = median_seconds(lambda d=dt, x=x16: x.astype(d), args.repeats)
            print(f"{'float16 -> ' + fmt.name:<24} {ours * 1e3:>9.1f} {peer * 1e3:>9.1f} "
                  f"{ours / peer:>11.1f}")

        m = min(n, 10**6)  # gfloat is slow: its side runs on at most 10**6 values
        xg = x32[:m].astype(np.float64)
        print(f"\n{'e4m3, ' + format(m, ',') + ' values':<24} {'fpsim ms':>9} {'gfloat ms':>9} "
              f"{'gfloat/fpsim':>13}")
        for name, mode in (("rne", RoundMode.TiesToEven), ("rna", RoundMode.TiesToAway),
                           ("rtz", RoundMode.TowardZero), ("rup", RoundMode.TowardPositive),
                           ("rdn", RoundMode.TowardNegative)):
            ours = median_seconds(lambda r=name, x=xg: array.encode(x, fpsim.E4M3, rounding=r),
                           args.repeats)
            peer = median_seconds(lambda r=mode, x=xg: encode_ndarray(
                format_info_ocp_e4m3, round_ndarray(format_info_ocp_e4m3, x, r)), 1)
            print(f"{name:<24} {ours * 1e3:>9.1f} {peer * 1e3:>9.1f} {peer / ours:>13.1f}"
                  "   (goal >= 10)")

        print()
        for state in ("warm", "cold"):
            if state == "cold":
                _tables.clear()
            tracemalloc.start()
            out = array.encode(x32, fpsim.FP16)
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            print(f"peak memory of encode float32 -> fp16 ({state}): {peak / 2**20:.1f} MiB = "
                  f"{(peak - out.nbytes) / out.nbytes:.2f}x the {out.nbytes / 2**20:.1f} MiB "
                  "output beyond it (goal <= 3x)")

        print(f"\n{'elementwise (rne)':<24} {'fpsim ns':>9} {'peer ns':>9} {'fpsim/peer':>11}")
        for fmt, dt in (targets[2], targets[1], targets[0]):
            x, y = _values(n, dt), _values(n, dt)[::-1].copy()
            for name, peer_op in (("add", np.add), ("mul", np.multiply)):
                op = getattr(array, name)
                op(x, y)  # builds the tables once
                ours = median_seconds(lambda o=op, a=x, b=y: o(a, b), args.repeats) / n
                with np.errstate(all="ignore"):  # the data hold infinities and NaNs on purpose
                    peer = median_seconds(lambda p=peer_op, a=x, b=y: p(a, b), args.repeats) / n
                print(f"{fmt.name + ' ' + name:<24} {ours * 1e9:>9.1f} {peer * 1e9:>9.1f} "
                      f"{ours / peer:>11.1f}   (goal <= 20 ns)")


if __name__ == "__main__":
    main()
