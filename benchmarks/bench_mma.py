"""Matrix-unit models at real sizes (issues 18, 29, 30): the speed of
fpsim.mma beside plain numpy doing the nearest computation it can, measured
in the same run.  Prints medians and ratios; asserts nothing about time
(the bits of the parallel runs are compared with the single-threaded ones
and printed as "same bits").

Sections, each line with its reference and the issue's goal:

1. ``instruction``: 10^5 rows of K = 32 E4M3 products through the ``h100``
   FP8 instruction, against numpy's float32 dot products of the same rows.
2. ``chained``: ``--gemm`` (512) cubed GEMMs through the ``h100`` FP16,
   BF16 and E4M3 instructions chained along K (``ops.matmul(accumulate=
   model)``, one thread), each against the numpy float32 loop over k on the
   same inputs (sequential FP32 accumulation of exact products): goal
   <= 8x per multiply-add.
3. ``library``: the library schedules built on the chain at the same size
   (cuBLAS FP8 promoted every 128, FP16 split-K 4, ``addmm`` with C into
   FP16), one thread, against the same numpy loop: goal <= 8x.
4. ``presets``: every other preset at ``--presets`` (256) cubed, one
   thread, against the H100 preset of the same input format (FP16 against
   h100 fp16 -> fp32; FNUZ FP8 against h100's OCP FP8): goal <= 2x.
   CDNA1's exact sums run on the row model (not a goal: printed).
5. ``1024^3``: ``cublas("h100", "e4m3")`` at ``--library`` (1024) cubed,
   default threads: goal under 10 s.
6. ``memory``: peak traced memory (tracemalloc: numpy's allocations) of the
   FP8 library GEMM at growing M, N, K, against its inputs and output: the
   excess over a small multiple of the inputs stays a fixed tile budget.
7. ``threads``: the chained FP16 GEMM on 1 thread and on every CPU.
8. ``dask``: a ``--dask`` (2048) squared x 1024 FP8 library GEMM on a
   ``distributed.LocalCluster`` of 1 and of 2 worker processes (the
   cluster's start not timed), against the same GEMM in this process on
   one thread (needs ``fpsim[dask]``; skipped without it).
9. ``blockscaled``: 10^5 rows of K = 64 through B200's block-scaled
   instructions (MXFP8, MXFP4, NVFP4, scales included, two instructions
   chained for MXFP8), against the unscaled B200 E4M3 instruction on as
   many products; and ``--presets`` (256) cubed GEMMs: ``ops.matmul`` of
   MXFP8 and MXFP4 operands quantized from normal data, and MXFP8 codes of
   every binade (every term cut), against the unscaled B200 E4M3 GEMM on
   the tile path (issue 34: goal <= 1x per multiply-add).

10. ``cpu``: the CPU library rows (:func:`fpsim.mma.cpu`) at ``--gemm``
    (512) cubed: numpy's sgemm and torch's MKL sgemm (FP32 FMA chains in K
    blocks), dgemm (FP64 FMA chains), numpy's FP16 loop, torch's BF16 oneDNN kernel (odd product
    first, FTZ) and XLA's four-lane FP32 kernel on a 512 x 512 x 16 shape,
    against the numpy float32 loop over k on the same shape (issue 42:
    goal <= 8x per multiply-add).

Run ``python benchmarks/bench_mma.py [--quick] [--only SECTION ...]`` on an
idle machine.
"""

from __future__ import annotations

import argparse
import os
import time
import tracemalloc

import ml_dtypes
import numpy as np
from _timing import median_pair, median_seconds

import fpsim.array
import fpsim.mma as mma
from fpsim import ops, quant

F32 = np.float32
DTYPES = {"fp16": np.float16, "bf16": ml_dtypes.bfloat16, "e4m3": ml_dtypes.float8_e4m3fn,
          "e5m2": ml_dtypes.float8_e5m2, "e4m3fnuz": ml_dtypes.float8_e4m3fnuz,
          "e5m2fnuz": ml_dtypes.float8_e5m2fnuz}
# the H100 preset each input format is compared with
BASELINE = {"fp16": "fp16", "bf16": "bf16", "tf32": "tf32", "e4m3": "e4m3", "e5m2": "e5m2",
            "e4m3fnuz": "e4m3", "e5m2fnuz": "e5m2"}
SECTIONS = ("instruction", "chained", "library", "presets", "1024", "memory", "threads", "dask",
            "blockscaled", "cpu")


def numpy_gemm(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Sequential FP32 accumulation of exact float32 products."""
    a32, b32 = a.astype(F32), b.astype(F32)
    acc = np.zeros((a.shape[0], b.shape[1]), F32)
    for k in range(a.shape[1]):
        acc = acc + a32[:, k:k + 1] * b32[k:k + 1, :]
    return acc


def line(name: str, ours: float, peer: float, peer_name: str, goal: str) -> None:
    print(f"{name:<52} {ours:>9.3f} s {peer:>9.3f} s {ours / peer:>7.2f}x  "
          f"{peer_name:<28} {goal}", flush=True)


def operands(fmt: str, m: int, k: int, n: int, rng: np.random.Generator) -> tuple:
    """Random normal operands of ``fmt`` (values; TF32 as codes) and the
    keyword arguments ``ops.matmul`` needs for them."""
    x, y = rng.standard_normal((m, k)), rng.standard_normal((k, n))
    if fmt == "tf32":
        return fpsim.array.round(x, "tf32"), fpsim.array.round(y, "tf32"), {"fmt": "tf32"}
    return x.astype(DTYPES[fmt]), y.astype(DTYPES[fmt]), {}


def same(x: np.ndarray, y: np.ndarray) -> str:
    return "same bits" if np.array_equal(x.view(np.uint8), y.view(np.uint8)) else "BITS DIFFER"


def section_instruction(args: argparse.Namespace, rng: np.random.Generator) -> None:
    h100_fp8 = mma.preset("h100", "e4m3")
    a = rng.standard_normal((args.rows, 32)).astype(ml_dtypes.float8_e4m3fn)
    b = rng.standard_normal((args.rows, 32)).astype(ml_dtypes.float8_e4m3fn)
    c = np.zeros(args.rows, F32)
    h100_fp8(a, b, c)  # warm: first-use work is not part of the figure
    ours = median_seconds(lambda: h100_fp8(a, b, c), args.repeats)
    peer = median_seconds(lambda: np.einsum("ij,ij->i", a.astype(F32), b.astype(F32)),
                          args.repeats)
    line(f"h100 e4m3 instruction, {args.rows:,} rows of K=32", ours, peer,
         "numpy float32 einsum", "a few seconds")


def section_chained(args: argparse.Namespace, rng: np.random.Generator) -> None:
    n = args.gemm
    for fmt in ("fp16", "bf16", "e4m3"):
        x, y, kw = operands(fmt, n, n, n, rng)
        model = mma.preset("h100", fmt)
        ours, peer = median_pair(
            lambda x=x, y=y, m=model, kw=kw: ops.matmul(x, y, accumulate=m, workers=1, **kw),
            lambda x=x, y=y: numpy_gemm(x, y), args.repeats)
        line(f"h100 {fmt} chained {n}^3, 1 thread", ours, peer, "numpy float32 k-loop",
             "<= 8x")


def section_library(args: argparse.Namespace, rng: np.random.Generator) -> None:
    n = args.gemm
    cases = (("e4m3", {}, "promoted every 128", False, "fp32"),
             ("fp16", {"split_k": 4}, "split_k=4", False, "fp32"),
             ("fp16", {}, "addmm C, out fp16", True, "fp16"))
    for fmt, kw, label, with_c, out in cases:
        x, y, _ = operands(fmt, n, n, n, rng)
        g = mma.cublas("h100", fmt, out=out, **kw)
        args_ = (x, y, rng.standard_normal((n, n)).astype(DTYPES[out] if out != "fp32"
                                                            else F32)) if with_c else (x, y)
        ours, peer = median_pair(lambda g=g, a=args_: g(*a, workers=1),
                                 lambda x=x, y=y: numpy_gemm(x, y), args.repeats)
        line(f"cublas h100 {fmt} {n}^3, {label}, 1 thread", ours, peer,
             "numpy float32 k-loop", "<= 8x")


def section_presets(args: argparse.Namespace, rng: np.random.Generator) -> None:
    n = args.presets
    base: dict[str, float] = {}
    data: dict[str, tuple] = {}
    for fmt in sorted(set(BASELINE.values())):
        data[fmt] = operands(fmt, n, n, n, rng)
        x, y, kw = data[fmt]
        model = mma.preset("h100", fmt)
        base[fmt] = median_seconds(
            lambda x=x, y=y, m=model, kw=kw: ops.matmul(x, y, accumulate=m, workers=1, **kw),
            args.repeats)
    for gpu, fin, fout in mma.presets():
        if (gpu, fout) == ("h100", "fp32"):
            continue
        model = mma.preset(gpu, fin, fout)
        if fin not in data:
            data[fin] = operands(fin, n, n, n, rng)
        x, y, kw = data[fin]
        ours = median_seconds(
            lambda x=x, y=y, m=model, kw=kw: ops.matmul(x, y, accumulate=m, workers=1, **kw),
            args.repeats)
        ref = BASELINE[fin]
        line(f"{gpu} {fin}->{fout} chained {n}^3", ours, base[ref], f"h100 {ref}->fp32",
             "<= 2x")


def section_1024(args: argparse.Namespace, rng: np.random.Generator) -> None:
    n = args.library
    x, y, _ = operands("e4m3", n, n, n, rng)
    g = mma.cublas("h100", "e4m3")
    t0 = time.perf_counter()
    g(x, y)
    ours = time.perf_counter() - t0
    peer = median_seconds(lambda: numpy_gemm(x, y), 1)
    line(f"cublas h100 e4m3 {n}^3, every CPU", ours, peer, "numpy float32 k-loop",
         "under 10 s")


def section_memory(args: argparse.Namespace, rng: np.random.Generator) -> None:
    g = mma.cublas("h100", "e4m3")
    sizes = ((128, 128, 128), (256, 256, 256), (512, 512, 512), (256, 4096, 256),
             (1024, 256, 1024))
    if args.quick:
        sizes = sizes[:2]
    print(f"{'memory: M x K x N':<52} {'peak':>11} {'in + out':>11} {'peak - 13 x in - out':>22}")
    for m, k, n in sizes:
        x, y, _ = operands("e4m3", m, k, n, rng)
        io = x.nbytes + y.nbytes + 4 * m * n
        tracemalloc.start()
        g(x, y, workers=1)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        # the engine keeps each operand as float64 values and int32 exponents
        # (12 bytes an element, 13 with its code): the rest is the tile budget
        rest = peak - 13 * (x.nbytes + y.nbytes) - 4 * m * n
        print(f"{f'  {m} x {k} x {n}':<52} {peak / 2**20:>9.1f} MB {io / 2**20:>8.1f} MB "
              f"{rest / 2**20:>19.1f} MB", flush=True)


def section_threads(args: argparse.Namespace, rng: np.random.Generator) -> None:
    n = args.gemm
    x, y, _ = operands("fp16", n, n, n, rng)
    model = mma.preset("h100", "fp16")
    one = ops.matmul(x, y, accumulate=model, workers=1)
    every = ops.matmul(x, y, accumulate=model)
    t_every, t_one = median_pair(lambda: ops.matmul(x, y, accumulate=model),
                                 lambda: ops.matmul(x, y, accumulate=model, workers=1),
                                 args.repeats)
    line(f"h100 fp16 chained {n}^3, {os.cpu_count()} threads", t_every, t_one, "1 thread",
         same(one, every))


def section_dask(args: argparse.Namespace, rng: np.random.Generator) -> None:
    try:
        import distributed
    except ImportError:
        print("dask: skipped (pip install 'fpsim[dask]')")
        return
    import dask

    # Dask's nanny starts workers with MALLOC_TRIM_THRESHOLD_=65536, which
    # also pins glibc's mmap threshold at 128 KiB: every work array of a tile
    # is then a fresh mapping whose pages fault in again (numpy steps on
    # 2 MB arrays measured 3.4x slower in such a worker).  Larger thresholds
    # give the worker this process's speed.
    dask.config.set({"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": 1 << 28,
                     "distributed.nanny.pre-spawn-environ.MALLOC_MMAP_THRESHOLD_": 1 << 26})
    n, k = args.dask, args.dask // 2
    x, y, _ = operands("e4m3", n, k, n, rng)
    g = mma.cublas("h100", "e4m3")
    t0 = time.perf_counter()
    ref = g(x, y, workers=1)
    alone = time.perf_counter() - t0
    for workers in (1, 2):
        with distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                      dashboard_address=None) as cluster:
            t0 = time.perf_counter()
            d = g(x, y, scheduler=cluster.scheduler_address)
            took = time.perf_counter() - t0
        line(f"cublas h100 e4m3 {n}x{k}x{n}, dask {workers} worker(s)", took, alone,
             "this process, 1 thread", same(ref, d))


def section_blockscaled(args: argparse.Namespace, rng: np.random.Generator) -> None:
    """Block-scaled instructions (fpsim.mma.blockscaled) per multiply-add,
    against the unscaled B200 E4M3 instruction on as many products."""
    rows = args.rows
    unscaled = mma.preset("b200", "e4m3")
    a = rng.standard_normal((rows, 64)).astype(ml_dtypes.float8_e4m3fn)
    b = rng.standard_normal((rows, 64)).astype(ml_dtypes.float8_e4m3fn)
    c = np.zeros(rows, F32)
    unscaled(a, b, c, chain=True)  # warm
    scales = rng.integers(120, 135, (rows, 2)).astype(np.uint8)
    fp4 = rng.integers(0, 16, (rows, 64)).astype(np.uint8)
    cases = (("mxfp8", a, b, scales), ("mxfp4", fp4, fp4[::-1].copy(), scales),
             ("nvfp4", fp4, fp4[::-1].copy(),
              np.repeat(rng.integers(0x30, 0x40, (rows, 2)), 2, axis=1).astype(np.uint8)))
    for recipe, x, y, s in cases:
        unit = mma.preset("b200", recipe)
        ours, peer = median_pair(
            lambda u=unit, x=x, y=y, s=s: u(x, y, c, scale_a=s, scale_b=s, chain=True),
            lambda: unscaled(a, b, c, chain=True), args.repeats)
        line(f"b200 {recipe} block-scaled, {rows:,} rows of K=64", ours, peer,
             "b200 e4m3 unscaled, same K", "<= 1x (issue 34)")
    # The GEMM: ops.matmul of MX-quantized operands against the unscaled
    # chained GEMM of the same E4M3 values (the tile path).
    n = args.presets
    x = rng.standard_normal((n, n)).astype(np.float32)
    y = rng.standard_normal((n, n)).astype(np.float32)
    qx, qy = quant.quantize(x, "e4m3", "mx", axis=1), quant.quantize(y, "e4m3", "mx", axis=0)
    mx = mma.preset("b200", "mxfp8")
    ours, peer = median_pair(lambda: ops.matmul(qx, qy, accumulate=mx),
                             lambda: ops.matmul(qx.data, qy.data, accumulate=unscaled, workers=1),
                             args.repeats)
    line(f"b200 mxfp8 GEMM {n}^3 (ops.matmul of MX operands)", ours, peer,
         "b200 e4m3 unscaled GEMM, tiles", "<= 1x (issue 34)")
    q4x, q4y = quant.quantize(x, "e2m1", "mx", axis=1), quant.quantize(y, "e2m1", "mx", axis=0)
    ours, peer = median_pair(
        lambda: ops.matmul(q4x, q4y, accumulate=mma.preset("b200", "mxfp4")),
        lambda: ops.matmul(qx.data, qy.data, accumulate=unscaled, workers=1), args.repeats)
    line(f"b200 mxfp4 GEMM {n}^3 (ops.matmul of MX operands)", ours, peer,
         "b200 e4m3 unscaled GEMM, tiles", "<= 1x (issue 34)")
    # Codes of the whole E4M3 range (NaNs made finite): exponents too far
    # apart for the exact lane, every term cut in the tile.
    ca = rng.integers(0, 256, (n, n)).astype(np.uint8)
    cb = rng.integers(0, 256, (n, n)).astype(np.uint8)
    ca[(ca & 0x7F) == 0x7F] -= 1
    cb[(cb & 0x7F) == 0x7F] -= 1
    s = rng.integers(120, 135, (n, n // 32)).astype(np.uint8)
    ea, eb = ca.view(ml_dtypes.float8_e4m3fn), cb.view(ml_dtypes.float8_e4m3fn)
    ours, peer = median_pair(lambda: mx.gemm(ca, cb, s, s.T.copy()),
                             lambda: ops.matmul(ea, eb, accumulate=unscaled, workers=1),
                             args.repeats)
    line(f"b200 mxfp8 GEMM {n}^3, E4M3 codes of every binade", ours, peer,
         "b200 e4m3 unscaled GEMM, tiles", "<= 1x (issue 34)")


def section_cpu(args: argparse.Namespace, rng: np.random.Generator) -> None:
    n = args.gemm
    cases = (("numpy", "fp32", None, (n, n, n)), ("torch", "fp32", None, (n, n, n)),
             ("numpy:haswell", "fp32", None, (n, n, n)), ("torch", "fp32", None, (n, n, 7)),
             ("numpy", "fp64", None, (n, n, n)),
             ("numpy", "fp16", None, (n, n, n)), ("torch", "bf16", None, (n, n, n)),
             ("jax", "fp32", None, (n, n, 16)))
    for lib, fmt, out, (m, k, nn) in cases:
        g = mma.cpu(lib, fmt, out)
        dt = fpsim.array.value_dtype(fmt)
        x = rng.standard_normal((m, k)).astype(dt)
        y = rng.standard_normal((k, nn)).astype(dt)
        g(x[:16, :], y[:, :16])  # warm: first-use work (conversion tables) is not timed
        ours, peer = median_pair(lambda g=g, x=x, y=y: g(x, y),
                                 lambda x=x, y=y: numpy_gemm(x, y), args.repeats)
        line(f"cpu {lib} {fmt} {m}x{k}x{nn}: {g.describe(m, k, nn).splitlines()[1][22:48]}",
             ours, peer, "numpy float32 k-loop", "<= 8x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10**5)
    parser.add_argument("--gemm", type=int, default=512, help="M = N = K of sections 2, 3, 7")
    parser.add_argument("--presets", type=int, default=256, help="M = N = K of section 4")
    parser.add_argument("--library", type=int, default=1024, help="M = N = K of section 5")
    parser.add_argument("--dask", type=int, default=2048, help="M = N of section 8 (K = half)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", nargs="+", choices=SECTIONS, default=SECTIONS)
    parser.add_argument("--quick", action="store_true", help="small sizes, one repeat")
    args = parser.parse_args()
    if args.quick:
        args.rows, args.gemm, args.presets, args.library, args.dask = 10**4, 256, 32, 128, 256
        args.repeats = 1
    rng = np.random.default_rng(0)
    print(f"{'':<52} {'fpsim':>11} {'reference':>11} {'ratio':>8}  {'reference':<28} goal")
    for name in args.only:
        globals()[f"section_{name}"](args, rng)


if __name__ == "__main__":
    main()
