"""Re-record the recordings of tests/data/cpu-gemms: every call
``fpsim.mma.probe`` makes to a CPU library's GEMM, as the SHA-256 of the
inputs and the output's bits.

* ``jax-0.10.2-bf16-dot-probe.npz``: ``jnp.dot`` of bfloat16 into bfloat16
  (+ C in FP32, rounded to bfloat16);
* ``ml_dtypes-e4m3-matmul-probe.npz``: ml_dtypes' float8_e4m3fn ``@``
  (a float32 result, numpy's sgemm on the values; + C in FP32).

Run ``python examples/cpu_gemms/record_probe_calls.py`` from the repository's root
with jax installed (recorded with jax 0.10.2, numpy 2.4.6 with OpenBLAS
0.3.31's SkylakeX kernels and ml_dtypes 0.6.0 on a 2-core AMD EPYC, Zen 4,
2026-11-29)."""

from __future__ import annotations

import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
from test_probe_cpu_library import E4M3_RECORDING, RECORDING, call_key  # noqa: E402

import fpsim.mma as mma  # noqa: E402

calls: dict[str, np.ndarray] = {}


def dot(A, B, C):
    r = jnp.dot(jnp.asarray(A, jnp.bfloat16), jnp.asarray(B, jnp.bfloat16),
                preferred_element_type=jnp.bfloat16)
    D = np.asarray((r.astype(jnp.float32) + jnp.asarray(C, jnp.float32)).astype(jnp.bfloat16))
    calls[call_key(A, B, C)] = D.view(np.uint16)
    return D


def e4m3_matmul(A, B, C):
    e4m3 = ml_dtypes.float8_e4m3fn
    D = (np.asarray(A, e4m3) @ np.asarray(B, e4m3)).astype(np.float32) + np.asarray(
        C, np.float32)
    calls[call_key(A, B, C)] = D.view(np.uint32)
    return D


def record(path: Path, fn, fmt: str, out: str) -> None:
    calls.clear()
    result = mma.probe(fn, fmt, out, shape="gemm")
    keys = sorted(calls)
    np.savez_compressed(path, keys=np.array(keys),
                        **{f"d{i}": calls[k] for i, k in enumerate(keys)})
    print(f"{path.name}: {len(keys)} calls recorded; matches: {result.matches}")


if __name__ == "__main__":
    print(f"jax {jax.__version__}, numpy {np.__version__}, ml_dtypes {ml_dtypes.__version__}")
    record(RECORDING, dot, "bf16", "bf16")
    record(E4M3_RECORDING, e4m3_matmul, "e4m3", "fp32")
