"""Quantization speed: quantize + dequantize of 10^7 float32 values with
MXFP8 (E4M3 elements, E8M0 scales per 32) and per-tensor FP8 (E4M3, FP32
scale), beside gfloat's MX encoding of the same data in the same run
(gfloat's vectorized ``round_ndarray`` + ``encode_ndarray`` on the scaled
values, block scales computed with numpy by gfloat's ``compute_scale_amax``
rule, and ``decode_ndarray`` for the dequantization).

The project's goal: under 2 s each on its 2-core machine.  Prints medians;
asserts nothing about time.  Run ``python benchmarks/bench_quant.py``.
"""

from __future__ import annotations

import argparse

import numpy as np
from _timing import median_seconds

from fpsim.quant import quantize

try:
    import gfloat
    from gfloat.formats import format_info_ocp_e4m3
except ImportError:  # pragma: no cover
    raise SystemExit("this benchmark needs gfloat: pip install 'fpsim[test]'") from None


def gfloat_mx(x: np.ndarray) -> np.ndarray:
    """MXFP8 E4M3 with gfloat: scales per block of 32 (gfloat's rule:
    2**(floor(log2 amax) - emax), clipped to 2**[-127, 127]), elements
    rounded and encoded by gfloat, then decoded and rescaled."""
    fi = format_info_ocp_e4m3
    blocks = x.reshape(-1, 32).astype(np.float64)
    amax = np.abs(blocks).max(axis=1, keepdims=True)
    with np.errstate(divide="ignore"):
        k = np.where(amax == 0, -127, np.clip(np.floor(np.log2(amax)) - fi.emax, -127, 127))
    scale = np.exp2(k)
    codes = gfloat.encode_ndarray(fi, gfloat.round_ndarray(fi, blocks / scale, sat=True))
    return (gfloat.decode_ndarray(fi, codes) * scale).reshape(x.shape)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=10**7)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(args.n) * np.exp2(rng.integers(-10, 10, args.n))).astype(
        np.float32).reshape(-1, 800)
    ours_mx = median_seconds(lambda: quantize(x, "e4m3", "mx").dequantize(), args.repeats)
    ours_tensor = median_seconds(lambda: quantize(x, "e4m3").dequantize(), args.repeats)
    theirs = median_seconds(lambda: gfloat_mx(x), args.repeats)
    same = np.array_equal(quantize(x, "e4m3", "mx").dequantize(), gfloat_mx(x))
    print(f"{args.n:,} float32 values, quantize + dequantize, median of {args.repeats}")
    print(f"{'':<34} {'seconds':>8}   goal")
    print(f"{'fpsim MXFP8 (E4M3, E8M0 per 32)':<34} {ours_mx:>8.2f}   < 2 s")
    print(f"{'fpsim per-tensor FP8 (E4M3, FP32)':<34} {ours_tensor:>8.2f}   < 2 s")
    print(f"{'gfloat MXFP8 (vectorized)':<34} {theirs:>8.2f}")
    print(f"fpsim / gfloat (MXFP8): {ours_mx / theirs:.2f}; same dequantized values: {same}")


if __name__ == "__main__":
    main()
