"""fpsim.mma.FMAChainModel (FP64 mma/mfma, CDNA's FP32 mfma: chains of
fused multiply-adds) against Berkeley SoftFloat's f64_mulAdd/f32_mulAdd
step by step (the oracle of tests/test_cpu_accumulation.py), in the
default run; against MMA-Sim itself in tests/test_mmasim_fma_chains.py."""

from __future__ import annotations

import numpy as np
import pytest
from test_cpu_accumulation import _bits_equal, oracle

import fpsim.mma as mma
from fpsim import ops
from fpsim.mma.presets import FMA_CHAINS, GPUS

UNITS = [(g, f) for arch, f, _k, _n in FMA_CHAINS for g, (a, _l) in GPUS.items() if a == arch]


def _rows(rng, fmt: str, n: int, K: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    dt = np.float64 if fmt == "fp64" else np.float32
    span = 300 if fmt == "fp64" else 40
    a = rng.standard_normal((n, K)) * np.exp2(rng.integers(-span, span + 1, (n, K)))
    b = rng.standard_normal((n, K)) * np.exp2(rng.integers(-span, span + 1, (n, K)))
    c = rng.standard_normal(n) * np.exp2(rng.integers(-span, span + 1, n))
    q = n // 4
    a[:q, 1::2], b[:q, 1::2] = a[:q, :-1:2], -b[:q, :-1:2]     # cancelling pairs
    c[q:2 * q] = 0.0
    c[q:2 * q:2] = -0.0
    a[2 * q:3 * q, 0] = np.where(rng.random(q) < 0.5, 0.0, -0.0)   # signed zero products
    tiny = 2.0 ** (-1070 if fmt == "fp64" else -147)
    a[3 * q:, :] *= tiny / np.abs(a[3 * q:, :]).max()                # subnormal products, sums
    return a.astype(dt), b.astype(dt), c.astype(dt)


@pytest.mark.parametrize("gpu, fmt", UNITS)
def test_fma_chain_unit_equals_softfloat(gpu, fmt):
    unit = mma.preset(gpu, fmt, fmt)
    assert isinstance(unit, mma.FMAChainModel) and unit.output_format.name == fmt
    rng = np.random.default_rng(sum(map(ord, gpu + fmt)))
    for K in sorted({1, 3, unit.k, 2 * unit.k + 1}):
        a, b, c = _rows(rng, fmt, 48, K)
        got = unit(a, b, c, chain=K > unit.k)
        acc = unit.accumulation
        want = np.array([oracle(acc, a[r].astype(float), b[r].astype(float), float(c[r]), fmt)
                         for r in range(len(c))])
        assert _bits_equal(got.astype(np.float64), want), (gpu, fmt, K)


@pytest.mark.parametrize("gpu, fmt", [("h100", "fp64"), ("mi300x", "fp32"), ("mi210", "fp64")])
def test_every_nan_is_the_units_code(gpu, fmt):
    unit = mma.preset(gpu, fmt, fmt)
    dt, ut = (np.float64, np.uint64) if fmt == "fp64" else (np.float32, np.uint32)
    payload = ut(0x7FF0000000000ABC) if fmt == "fp64" else ut(0x7F800ABC)   # signalling
    snan = np.array([payload]).view(dt)[0]
    a = np.array([[snan, 1], [np.inf, 1], [np.inf, 1], [1, 1]], dt)
    b = np.array([[1, 1], [0, 1], [1, 1], [1, 1]], dt)
    c = np.array([0, 0, -np.inf, np.nan], dt)
    got = unit(a, b, c).view(ut)
    assert (got == ut(unit.nan)).all(), [hex(x) for x in got]
    assert unit.nan == (0xFFF8000000000000 if gpu == "h100" else
                        0x7FF8000000000000 if fmt == "fp64" else 0x7FC00000)


def test_a_short_k_is_not_padded_and_a_long_one_needs_chain():
    unit = mma.preset("a100", "fp64", "fp64")
    assert unit.k == 4
    got = unit(np.array([[0.0]]), np.array([[1.0]]), -0.0)   # fma(+0, 1, -0) = +0 only
    assert np.signbit(got[0]) is np.False_
    got = unit(np.zeros((1, 0)), np.zeros((1, 0)), -0.0)     # no product: c itself
    assert np.signbit(got[0])
    with pytest.raises(ValueError, match="chain=True"):
        unit(np.ones((1, 5)), np.ones((1, 5)))
    with pytest.raises(TypeError, match="dtype|fp64"):
        unit(np.ones((1, 4), np.float32), np.ones((1, 4), np.float32))
    with pytest.raises(ValueError, match="no fp64->fp32|has no"):
        mma.preset("a100", "fp64", "fp32")
    with pytest.raises(ValueError, match="has no"):
        mma.preset("v100", "fp64", "fp64")        # Volta has no FP64 mma


def test_a_gemm_on_the_instruction_is_one_chain_from_c():
    rng = np.random.default_rng(5)
    A, B = rng.standard_normal((6, 37)), rng.standard_normal((37, 5))
    C = rng.standard_normal((6, 5))
    unit = mma.preset("mi300x", "fp64", "fp64")
    got = ops.matmul(A, B, accumulate=unit, c=C)
    rows = unit(np.broadcast_to(A[:, None, :], (6, 5, 37)),
                np.broadcast_to(B.T[None], (6, 5, 37)), C, chain=True)
    assert np.array_equal(got.view(np.uint64), rows.view(np.uint64))
    own = mma.cpu_kernel(mma.Accumulation(accumulator="fp64", c_joins="start"), "fp64")
    assert np.array_equal(got.view(np.uint64), own(A, B, C).view(np.uint64))
    with pytest.raises(ValueError, match="takes fp64 x fp64 -> fp64"):
        ops.matmul(A.astype(np.float32), B.astype(np.float32), accumulate=unit)
    with pytest.raises(ValueError, match="split_k"):
        ops.matmul(A, B, accumulate=unit, split_k=2)


def test_bad_units_are_refused():
    with pytest.raises(ValueError, match="fp64, fp32"):
        mma.FMAChainModel("fp16", 4, 0x7E00)
    with pytest.raises(ValueError, match="positive"):
        mma.FMAChainModel("fp64", 0, 0x7FF8000000000000)
    with pytest.raises(ValueError, match="not a NaN code"):
        mma.FMAChainModel("fp32", 4, 0x7F800000)
