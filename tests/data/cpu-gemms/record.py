"""Re-record tests/data/cpu-gemms/jax-0.10.2-bf16-dot-probe.npz: every call
``fpsim.mma.probe`` makes to ``jnp.dot`` of bfloat16 into bfloat16 (+ C in
FP32, rounded to bfloat16), as the SHA-256 of the inputs and the output's
bits.  Run ``python tests/data/cpu-gemms/record.py`` from the repository's
root with jax installed (recorded with jax 0.10.2 on a 2-core AMD EPYC,
Zen 4, 2026-11-29)."""

from __future__ import annotations

import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
from test_probe_cpu_library import RECORDING, call_key  # noqa: E402

import fpsim.mma as mma  # noqa: E402

calls: dict[str, np.ndarray] = {}


def dot(A, B, C):
    r = jnp.dot(jnp.asarray(A, jnp.bfloat16), jnp.asarray(B, jnp.bfloat16),
                preferred_element_type=jnp.bfloat16)
    D = np.asarray((r.astype(jnp.float32) + jnp.asarray(C, jnp.float32)).astype(jnp.bfloat16))
    calls[call_key(A, B, C)] = D.view(np.uint16)
    return D


if __name__ == "__main__":
    result = mma.probe(dot, "bf16", "bf16", shape="gemm")
    keys = sorted(calls)
    np.savez_compressed(RECORDING, keys=np.array(keys),
                        **{f"d{i}": calls[k] for i, k in enumerate(keys)})
    print(f"jax {jax.__version__}: {len(keys)} calls recorded; matches: {result.matches}")
