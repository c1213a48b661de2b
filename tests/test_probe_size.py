"""fpsim.mma.probe(..., size=(M, K, N)): reading a black-box GEMM at the
size it is called at.

The black boxes here are independent of the code under test: plain numpy
float32 loops written out below (one rounded product and one rounded sum a
step, K blocks added in order), math.fsum (an exact sum, which no candidate
models), and the CPU library rows themselves, which tests/test_cpu_libraries
proves equal to the real libraries' recorded outputs.  The real libraries
are probed in tests/test_frameworks.py (tox -e frameworks).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import fpsim.mma as mma


def loop_gemm(block: int | None):
    """numpy float32: acc = RN(acc + RN(a·b)) along each K block, the
    blocks' sums added in order."""
    def gemm(A: np.ndarray, B: np.ndarray) -> np.ndarray:
        K = A.shape[1]
        total = None
        step = block or K
        for lo in range(0, K, step):
            acc = np.zeros((A.shape[0], B.shape[1]), np.float32)
            for k in range(lo, min(K, lo + step)):
                acc = acc + A[:, k:k + 1] * B[k:k + 1, :]
            total = acc if total is None else total + acc
        return total
    return gemm


def test_a_blocked_loop_is_read_and_reproduced() -> None:
    r = mma.probe(loop_gemm(96), "fp32", "fp32", shape="gemm", size=(12, 300, 10))
    assert r.findings["k_blocks"].value == [96, 96, 96, 12]
    assert r.reproduces is True and r.mismatches == 0
    acc = r.gemm.plan(12, 300, 10)[0][1].accumulation
    assert (acc.products, acc.k_block, acc.lanes) == ("rounded", 96, 1)
    rng = np.random.default_rng(5)
    A = (rng.standard_normal((12, 300)) * np.exp2(rng.integers(-20, 20, (12, 300)))).astype(
        np.float32)
    B = rng.standard_normal((300, 10)).astype(np.float32)
    assert np.array_equal(r.gemm(A, B).view(np.uint32), loop_gemm(96)(A, B).view(np.uint32))
    assert r.matches == []          # no library row is this loop
    assert "reproduces every output" in str(r)


def test_an_exact_sum_is_not_claimed() -> None:
    def exact(A: np.ndarray, B: np.ndarray) -> np.ndarray:
        A64, B64 = A.astype(float), B.astype(float)
        return np.array([[math.fsum(A64[i] * B64[:, j]) for j in range(B.shape[1])]
                         for i in range(A.shape[0])], np.float32)
    r = mma.probe(exact, "fp32", "fp32", shape="gemm", size=(4, 48, 3))
    assert r.reproduces is False
    assert r.matches == []
    assert "reproduces every output" not in str(r)


@pytest.mark.parametrize("lib, fmt, out, size", [
    ("numpy", "fp32", "fp32", (16, 1001, 64)),      # OpenBLAS's K panels: 448, 288, 265
    ("numpy", "fp32", "fp32", (6, 40, 18)),         # the small kernel's tail columns
    ("numpy", "fp64", "fp64", (9, 100, 11)),        # dgemm's tail: pairs, last row halves
    ("torch", "bf16", "bf16", (16, 1001, 64)),      # VDPBF16PS: odd first, blocks of 512
    ("jax", "fp32", "fp32", (9, 100, 11)),          # four lanes, the tail added last
])
def test_library_rows_are_named_at_their_size(lib: str, fmt: str, out: str, size: tuple) -> None:
    row = mma.cpu(lib, fmt, out)
    r = mma.probe(row, fmt, out, shape="gemm", size=size)
    assert r.reproduces is True
    assert f"{lib} {fmt} -> {out} (threads=1)" in r.matches


def test_torch_addmm_row_with_c() -> None:
    row = mma.cpu("torch", "bf16")
    r = mma.probe(row, "bf16", "bf16", shape="gemm", size=(3, 20, 4))
    assert r.reproduces is True and "torch bf16 -> bf16 (threads=1)" in r.matches


def test_gpu_instructions_are_candidates_too() -> None:
    g = mma.cublas("h100", "fp16", out="fp32")
    r = mma.probe(lambda A, B: g(A, B), "fp16", "fp32", shape="gemm", size=(8, 64, 8))
    assert r.reproduces is True
    assert any(m.startswith("h100") for m in r.matches)


@pytest.mark.parametrize("size, match", [
    ((4, 5), "three positive ints"), ((4, 0, 5), "three positive ints"),
    ((4, True, 5), "three positive ints"), ("4x5x6", "three positive ints"),
    ((1 << 10, 1 << 10, 1 << 10), "2\\*\\*28"),
])
def test_bad_sizes_are_refused(size: object, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        mma.probe(loop_gemm(None), "fp32", "fp32", shape="gemm", size=size)


def test_size_needs_the_gemm_shape() -> None:
    with pytest.raises(ValueError, match="shape='gemm'"):
        mma.probe(loop_gemm(None), "fp32", "fp32", size=(2, 3, 4))


def test_a_callable_that_raises_is_a_probe_error() -> None:
    def broken(A, B):
        raise RuntimeError("no")
    with pytest.raises(mma.ProbeError):
        mma.probe(broken, "fp32", "fp32", shape="gemm", size=(2, 8, 2))


def two_kernels(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """numpy float32, rounded products: the first 8 columns of rows r mod 12
    < 6 in two lanes (k mod 2, main loop unrolled by 8, the tail into lane
    0), every other element one chain (as OpenBLAS's Haswell kernel tiles
    its output)."""
    M, K = A.shape
    main = K - K % 8
    chain = np.zeros((M, B.shape[1]), np.float32)
    lane = [np.zeros_like(chain), np.zeros_like(chain)]
    for k in range(K):
        p = A[:, k:k + 1] * B[k:k + 1, :]
        chain = chain + p
        j = k % 2 if k < main else 0
        lane[j] = lane[j] + p
    out = chain.copy()
    rows = (np.arange(M) % 12) < 6
    out[rows, :8] = (lane[0] + lane[1])[rows, :8]
    return out


def test_regions_of_two_kernels_are_found() -> None:
    r = mma.probe(two_kernels, "fp32", "fp32", shape="gemm", size=(14, 100, 20))
    assert r.reproduces is True
    plan = r.gemm.plan(14, 100, 20)
    lanes = {(reg, p.accumulation.lanes, p.accumulation.unroll) for reg, p in plan
             if p.accumulation is not None and p.accumulation.lanes == 2}
    assert lanes and all(u in (8, 16) for _reg, _w, u in lanes)
    A = np.random.default_rng(1).standard_normal((14, 100)).astype(np.float32)
    B = np.random.default_rng(2).standard_normal((100, 20)).astype(np.float32)
    assert np.array_equal(r.gemm(A, B).view(np.uint32), two_kernels(A, B).view(np.uint32))
