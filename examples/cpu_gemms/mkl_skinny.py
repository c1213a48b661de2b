"""How MKL's sgemm (``torch.mm`` / ``torch.addmm`` on float32, CPU) sums at
skinny shapes: the measurement behind the torch fp32 row's parts for
``N <= 11 or M <= 3`` (``fpsim/mma/cputable.py``).

1. **FPRev** (Xie et al., "FPRev: revealing the order of floating-point
   summation"): for one output element, products ``i`` and ``j`` are set
   to ``+2**40`` and ``-2**40`` and every other to 1; the element then
   reads ``K - |T(i, j)|``, where ``T(i, j)`` is the smallest subtree of
   the summation holding both leaves.  At 7x4096x5, element (3, 0) gives
   ``T(0, j) = 2, 3, 4, 8, 8, 8, 8, 9, 10, 11, 12, 16, ...``: products
   ``8r .. 8r+3`` join the running sum one by one, ``8r+4 .. 8r+7`` are
   summed apart (``T(4, 5) = 2``, ``T(4, 7) = 4``) and joined as one.
2. **Every element, every shape**: each output element is compared, bit
   for bit on random inputs, with one chain of rounded products (numpy's
   own float32 products and sums, each one IEEE operation) and with that
   chain in runs of 8 (4 in, 4 apart); the elements the second fits are
   those before the first 16-byte boundary of their output row, the first
   ``(-i·N) mod 4`` of row ``i`` where at least 4 follow.

Run ``python examples/cpu_gemms/mkl_skinny.py`` with torch's CPU build
(measured with torch 2.13.0+cpu, MKL 2024.2, on a 2-core AMD EPYC Zen 4,
2026-11-29): it prints the FPRev row and, per shape, whether the rule
holds for every element (``True``) and how many elements differ.
"""

from __future__ import annotations

import numpy as np
import torch

f32 = np.float32


def chain(A: np.ndarray, B: np.ndarray, C: np.ndarray, apart: int | None) -> np.ndarray:
    """Rounded products summed from C, one by one, or in runs of
    ``2·apart`` whose last ``apart`` are summed apart and added."""
    K = A.shape[1]
    acc = C.copy()

    def p(k: int) -> np.ndarray:
        return (A[:, k, None] * B[None, k, :]).astype(f32)

    k = 0
    while apart and k + 2 * apart <= K:
        for t in range(apart):
            acc = acc + p(k + t)
        s = p(k + apart)
        for t in range(1, apart):
            s = s + p(k + apart + t)
        acc = acc + s
        k += 2 * apart
    for t in range(k, K):
        acc = acc + p(t)
    return acc


def peeled(M: int, N: int) -> np.ndarray:
    """The elements before the first 16-byte boundary of each row."""
    mask = np.zeros((M, N), bool)
    for i in range(M):
        n = (-i * N) % 4
        if N - n >= 4:
            mask[i, :n] = True
    return mask


def fprev_row(M: int = 7, K: int = 4096, N: int = 5, r: int = 3, c: int = 0,
              count: int = 16) -> list[int]:
    B = np.ones((K, N), f32)
    out = []
    for j in range(1, count + 1):
        A = np.ones((M, K), f32)
        A[r, 0], A[r, j] = 2.0**40, -(2.0**40)
        D = torch.mm(torch.from_numpy(A), torch.from_numpy(B)).numpy()
        out.append(K - int(D[r, c]))
    return out


def check(M: int, K: int, N: int, addmm: bool, rng: np.random.Generator) -> tuple[bool, int]:
    bad = np.zeros((M, N), bool)
    for _ in range(2):
        A = (rng.standard_normal((M, K)) * np.exp2(rng.integers(-8, 8, (M, K)))).astype(f32)
        B = rng.standard_normal((K, N)).astype(f32)
        C = (rng.standard_normal((M, N)) * 64).astype(f32) if addmm else np.zeros((M, N), f32)
        ta, tb, tc = (torch.from_numpy(x) for x in (A, B, C))
        D = (torch.addmm(tc, ta, tb) if addmm else torch.mm(ta, tb)).numpy().view(np.uint32)
        want = np.where(peeled(M, N), chain(A, B, C, 4), chain(A, B, C, None))
        bad |= want.view(np.uint32) != D
    return not bad.any(), int(bad.sum())


def main() -> None:
    torch.set_num_threads(1)
    print("FPRev T(0, j), 7x4096x5, element (3, 0):", fprev_row())
    rng = np.random.default_rng(7)
    shapes = [(M, 256, N) for M in (1, 2, 3, 4, 7, 12) for N in (2, 3, 5, 6, 7, 9, 10, 11)]
    shapes += [(M, K, N) for M in (2, 3) for K in (256, 1000) for N in (12, 13, 16, 31, 257)]
    shapes += [(M, 1000, N) for M in (64, 300) for N in (5, 7, 10)]
    shapes += [(7, 4500, 5), (33, 4500, 11), (2, 4500, 1000), (1000, 50, 6)]
    for threads in (1, 2):
        torch.set_num_threads(threads)
        for M, K, N in shapes:
            for addmm in (False, True):
                ok, n = check(M, K, N, addmm, rng)
                print(f"threads={threads} {'addmm' if addmm else 'mm   '} {M}x{K}x{N}: "
                      f"{ok} ({n} differ)")


if __name__ == "__main__":
    main()
