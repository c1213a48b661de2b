"""Black-box kernels for tests/test_cli_probe.py and tests/test_mma_probe.py,
written without fpsim's arithmetic except where a preset is the point."""

from __future__ import annotations

import numpy as np

import fpsim.mma as mma

_H100 = mma.preset("h100", "fp16")


def h100_fp16(a, b, c):
    """The H100 FP16 -> FP32 instruction itself (K <= 16)."""
    return _H100(a, b, c)


def h100_gemm(A, B, C):
    """A GEMM built on the H100 instruction, chaining K in blocks of 16."""
    M, K = A.shape
    N = B.shape[1]
    a = np.repeat(A[:, None, :], N, axis=1)
    b = np.repeat(B.T[None, :, :], M, axis=0)
    return _H100(a, b, C, chain=True)


def fp32_loop(a, b, c):
    """acc = c; acc = fl32(acc + a[k]*b[k]) for k in order (FP16 products are
    exact in FP32)."""
    acc = c.astype(np.float32)
    for k in range(a.shape[1]):
        acc = (acc + a[:, k].astype(np.float32) * b[:, k].astype(np.float32)).astype(np.float32)
    return acc


def raises(a, b, c):
    raise RuntimeError("device lost")


def wrong_shape(a, b, c):
    return np.zeros((a.shape[0], 2), np.float32)


def wrong_dtype(a, b, c):
    return np.zeros(a.shape[0], np.float64)


_SCALED = mma.cublas("h100", ("e4m3", "e5m2"))


def scaled_mm_e4m3_e5m2(A, B):
    """torch._scaled_mm-like: E4M3 x E5M2 with unit scales, promoted every
    128 products, refusing dimensions that are not multiples of 16."""
    if any(d % 16 for d in (*A.shape, B.shape[1])):
        raise RuntimeError("expected all dimensions to be multiples of 16")
    return _SCALED(A, B)
