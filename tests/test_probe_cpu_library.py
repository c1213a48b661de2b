"""The probe on a CPU library's GEMM (issue 42): a candidate is named only
if it also gives the summation-order (FPRev) rows' outputs, so a CPU
library whose chains are no GPU's tree is not named as a GPU.

``jnp.dot`` of bfloat16 into bfloat16 on XLA's CPU backend (jax 0.10.2,
YNNPACK) sums K in four FP32 chains by ``k mod 4``; the library stage's
candidates ``mi210``/``mi250`` (a pairwise tree of 4, promoted every 4 or 8
products) give every output of its GEMM-shaped calls, but not the FPRev
rows'.  The default run replays the calls the probe made to jax on the
2-core AMD EPYC (Zen 4) of 2026-11-29 (``tests/data/cpu-gemms``: the SHA-256
of each call's inputs and the output's bits, recorded by
``examples/cpu_gemms/record_probe_calls.py``); ``tox -e frameworks`` runs the real
jax as well (``tests/test_frameworks.py``).  The same for ml_dtypes'
float8_e4m3fn ``@``, whose float32 result is numpy's sgemm: replayed, so
that no test depends on this machine's BLAS kernel.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

import ml_dtypes
import numpy as np

from fpsim import mma

RECORDING = Path(__file__).parent / "data" / "cpu-gemms" / "jax-0.10.2-bf16-dot-probe.npz"
E4M3_RECORDING = Path(__file__).parent / "data" / "cpu-gemms" / "ml_dtypes-e4m3-matmul-probe.npz"


def call_key(A, B, C) -> str:
    """The SHA-256 of a call's inputs (dtype, shape and bytes of each)."""
    h = hashlib.sha256()
    for x in (A, B, C):
        x = np.ascontiguousarray(x)
        h.update(str(x.dtype).encode())
        h.update(str(x.shape).encode())
        h.update(x.tobytes())
    return h.hexdigest()


def replaying(path: Path, dtype) -> Callable:
    """A GEMM ``fn(A, B, C)`` answering the recorded calls of ``path``."""
    data = np.load(path)
    table = {str(k): data[f"d{i}"] for i, k in enumerate(data["keys"])}

    def replay(A, B, C):
        k = call_key(A, B, C)
        assert k in table, ("the probe made a call not recorded: re-record "
                            "(examples/cpu_gemms/record_probe_calls.py)")
        return table[k].view(dtype)

    return replay


def test_a_replayed_xla_cpu_dot_is_not_named_as_a_gpu():
    r = mma.probe(replaying(RECORDING, ml_dtypes.bfloat16), "bf16", "bf16", shape="gemm")
    assert r.matches == [] and not r.reproduces, str(r)
    assert "not the summation-order rows'" in r.findings["schedule"].how, str(r)
    # the tree it read: four chains by k mod 4, joined pairwise
    assert r.order.startswith("((((((((((((((((((p0 + p4) + p8)"), r.order


def test_a_replayed_ml_dtypes_e4m3_matmul_is_not_named_as_a_gpu():
    """ml_dtypes' float8_e4m3fn ``@`` is numpy's sgemm on the values (one
    FP32 chain here): it was named b200, rtx-pro-6000, b200-rn and b200-fit
    with "reproduces every output" (issue 42); the FPRev rows (+M = 65536
    and -M among 2**-18) read its chain, which no Blackwell block has."""
    r = mma.probe(replaying(E4M3_RECORDING, np.float32), "e4m3", "fp32", shape="gemm")
    assert r.matches == [] and not r.reproduces, str(r)
    assert "not the summation-order rows'" in r.findings["schedule"].how, str(r)
    assert r.order.startswith("((((((((((((((((((((((((((((((((((((((((((((((((((((((((((("
                              "(((((p0 + p1) + p2)"), r.order
