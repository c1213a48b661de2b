"""What reading framework arrays costs: fpsim calls on PyTorch tensors and
JAX arrays against the same calls on the numpy arrays of the same bits,
measured in the same run.

* ``array.add`` on BF16 and E4M3, and ``array.round`` float32 -> E4M3, with
  torch CPU tensors (contiguous and transposed), JAX CPU arrays and numpy
  arrays as inputs;
* ``as_numpy`` of an NVFP4 ``float4_e2m1fn_x2`` tensor (the unpacking)
  against ``array.round`` of the same number of elements;
* ``like`` (a result back as a torch tensor) against the call that made it.

Goal: the framework input costs at most 10% more than numpy's on arrays of
a million elements (the read is a view, a copy only where the dtype is
packed or the device is not the CPU).  Prints medians and ratios; asserts
nothing.  Needs torch and JAX (``tox -e frameworks`` installs both); run
``python benchmarks/bench_frameworks.py [-n 1000000]``.
"""

from __future__ import annotations

import argparse

import numpy as np
from _timing import median_pair

from fpsim import array

try:
    import torch
except ImportError:  # pragma: no cover
    raise SystemExit("this benchmark needs torch: pip install torch") from None
try:
    import jax
except ImportError:  # pragma: no cover
    jax = None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=10**6)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    side = int(np.sqrt(args.n))
    rng = np.random.default_rng(0)
    x32 = (rng.standard_normal((side, side)) * 8).astype(np.float32)
    print(f"{side}x{side} elements, median of {args.repeats}; ratio = framework / numpy")
    print(f"{'call':44} {'numpy ms':>9} {'framework ms':>13} {'ratio':>6}")

    def row(label: str, ours, peer) -> None:
        mine, theirs = median_pair(ours, peer, args.repeats)
        print(f"{label:44} {theirs * 1e3:9.2f} {mine * 1e3:13.2f} {mine / theirs:6.2f}")

    for fmt in ("bf16", "e4m3"):
        x = array.round(x32, fmt, saturate=True)
        t = torch.from_numpy(x.view(f"u{x.itemsize}").astype(f"i{x.itemsize}")).view(
            torch.bfloat16 if fmt == "bf16" else torch.float8_e4m3fn)
        tt = t.t().contiguous().t()
        xt = np.ascontiguousarray(x.T).T
        row(f"array.add {fmt}, torch contiguous", lambda t=t: array.add(t, t),
            lambda x=x: array.add(x, x))
        row(f"array.add {fmt}, torch transposed", lambda tt=tt: array.add(tt, tt),
            lambda xt=xt: array.add(xt, xt))
        if jax is not None:
            j = jax.device_put(x)
            row(f"array.add {fmt}, JAX CPU", lambda j=j: array.add(j, j),
                lambda x=x: array.add(x, x))
    t32 = torch.from_numpy(x32)
    row("array.round float32 -> e4m3, torch", lambda: array.round(t32, "e4m3"),
        lambda: array.round(x32, "e4m3"))
    fp4 = array.round(x32, "e2m1", saturate=True)
    packed = torch.from_numpy(rng.integers(0, 256, (side, side // 2), dtype=np.uint8)).view(
        torch.float4_e2m1fn_x2)
    row("as_numpy(float4_e2m1fn_x2) vs round to e2m1", lambda: array.as_numpy(packed),
        lambda: array.round(x32, "e2m1", saturate=True))
    row("like(e2m1 result, torch) vs round to e2m1", lambda: array.like(fp4, t32),
        lambda: array.round(x32, "e2m1", saturate=True))


if __name__ == "__main__":
    main()
