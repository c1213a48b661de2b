"""Differential-harness speed: ``fpsim.testing.compare`` of two 10^7-element
FP16 arrays (a kernel's output with injected 1-ULP errors in 0.1% of the
elements, NaNs, infinities and a flipped zero sign, against the golden
array), beside numpy's own checks of the same arrays in the same run:
``numpy.testing.assert_array_max_ulp`` (which computes ULP distances but no
kinds, histogram or offenders) and ``numpy.array_equal`` of the bit views
(the cheapest possible bit-exact check).  Then the dump readers: ``python -m
fpsim diff`` of the same arrays written as raw dumps and as ``.npy`` files
(read chunk by chunk with explicit reads; the files are in the page cache
after the first run).

The project's goal: under 1 s for compare on its 2-core machine.  Prints
medians; asserts nothing about time.  Run ``python benchmarks/bench_testing.py``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import tempfile
from pathlib import Path

import numpy as np
from _timing import median_seconds

from fpsim.cli import main as cli
from fpsim.testing import compare


def arrays(n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    golden = (rng.standard_normal(n) * 100).astype(np.float16)
    kernel = golden.copy()
    bits = kernel.view(np.uint16)
    bits[::1000] += 1                       # 1 ULP (or a changed kind at the top)
    kernel[5::100_000] = np.nan
    kernel[7::100_000] = np.inf
    golden[9] = -0.0
    kernel[9] = 0.0
    return kernel, golden


def numpy_max_ulp(a: np.ndarray, b: np.ndarray) -> None:
    try:
        np.testing.assert_array_max_ulp(a, b, maxulp=1)
    except AssertionError:
        pass


def diff(*argv: object) -> None:
    with contextlib.redirect_stdout(io.StringIO()):
        status = cli(["diff", *map(str, argv)])
    assert status in (0, 1), status


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=10**7)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    kernel, golden = arrays(args.n)
    report = compare(kernel, golden, max_ulp=1)
    print(f"compare of {args.n:,} FP16 pairs: {report.exact:,} exact, "
          f"{report.within_tolerance:,} within 1 ULP, {report.beyond_tolerance:,} beyond "
          f"({report.nan_mismatch} NaN, {report.inf_mismatch} inf, "
          f"{report.signed_zero_mismatch} zero sign)")
    rows = [
        ("fpsim compare, max_ulp=1", lambda: compare(kernel, golden, max_ulp=1)),
        ("fpsim compare, identical arrays", lambda: compare(golden, golden)),
        ("numpy assert_array_max_ulp", lambda: numpy_max_ulp(kernel, golden)),
        ("numpy array_equal of the bits",
         lambda: np.array_equal(kernel.view(np.uint16), golden.view(np.uint16))),
    ]
    folder = tempfile.TemporaryDirectory()
    d = Path(folder.name)
    kernel.tofile(d / "k.bin")
    golden.tofile(d / "g.bin")
    np.save(d / "k.npy", kernel)
    np.save(d / "g.npy", golden)
    rows += [
        ("diff of raw dumps, max_ulp=1",
         lambda: diff(d / "k.bin", d / "g.bin", "--fmt", "fp16", "--max-ulp", "1")),
        ("diff of .npy files, max_ulp=1",
         lambda: diff(d / "k.npy", d / "g.npy", "--max-ulp", "1")),
    ]
    times = {name: median_seconds(fn, args.repeats) for name, fn in rows}
    folder.cleanup()
    peer = times["numpy assert_array_max_ulp"]
    print(f"{'':34}{'median':>10}  vs numpy max_ulp")
    for name, t in times.items():
        print(f"{name:<34}{t:>9.3f}s  {t / peer:>6.2f}x")
    print(f"goal: compare under 1 s -> {'met' if times[rows[0][0]] < 1 else 'NOT met'}")


if __name__ == "__main__":
    main()
