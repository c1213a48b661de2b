"""Re-record tests/data/cpu-gemms/cpu-libraries.npz: the outputs of numpy's,
ml_dtypes', torch's and JAX's CPU GEMMs on the inputs of
tests/test_cpu_libraries.py (its CALLS, SHAPES and KINDS), as their bits, with
the versions and the OpenBLAS kernel in ``meta``.

Run ``python examples/cpu_gemms/record_cpu_gemms.py`` from the repository's
root with torch and jax installed.  Each thread count runs in a process of
its own (OpenBLAS reads ``OPENBLAS_NUM_THREADS`` when it loads).  Recorded
with numpy 2.4.6 (OpenBLAS 0.3.31, SkylakeX kernels), torch 2.13.0+cpu,
jax 0.10.2 and ml_dtypes 0.6.0 on a 2-core AMD EPYC (Zen 4), 2026-11-29.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def record(threads: int, out: str) -> None:
    sys.path.insert(0, str(ROOT / "tests"))
    import jax
    import jax.numpy as jnp
    import ml_dtypes
    import numpy as np
    import torch
    from test_cpu_libraries import CALLS, KINDS, SHAPES, inputs, key, openblas_core

    torch.set_num_threads(threads)

    def to_torch(x):
        if x.dtype == ml_dtypes.bfloat16:
            return torch.from_numpy(x.view(np.int16)).view(torch.bfloat16)
        return torch.from_numpy(x)

    def from_torch(t):
        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)

    fns = {
        "numpy": lambda A, B, C: A @ B,
        "ml_dtypes": lambda A, B, C: A @ B,
        "torch-bf16-mm": lambda A, B, C: from_torch(torch.mm(to_torch(A), to_torch(B))),
        "torch-bf16-addmm": lambda A, B, C: from_torch(torch.addmm(to_torch(C), to_torch(A),
                                                                   to_torch(B))),
        "torch-fp32-mm": lambda A, B, C: torch.mm(to_torch(A), to_torch(B)).numpy(),
        "torch-fp32-addmm": lambda A, B, C: torch.addmm(to_torch(C), to_torch(A),
                                                        to_torch(B)).numpy(),
        "jax-fp32-highest": lambda A, B, C: np.asarray(
            jnp.dot(A, B, precision=jax.lax.Precision.HIGHEST)),
        "jax-bf16": lambda A, B, C: np.asarray(jnp.dot(A, B)),
        "jax-bf16-to-fp32": lambda A, B, C: np.asarray(
            jnp.dot(A, B, preferred_element_type=jnp.float32)),
    }
    got = {}
    for call in CALLS:
        name, lib, _fmt, _out, _c, t = call
        if t != threads:
            continue
        fn = fns.get(name, fns.get(lib))
        for shape in SHAPES:
            for kind in KINDS:
                A, B, C = inputs(call, shape, kind)
                with np.errstate(all="ignore"):
                    D = fn(A, B, C)
                got[key(name, shape, kind)] = D.view(f"u{D.dtype.itemsize}")
    meta = {"numpy": np.__version__, "torch": torch.__version__, "jax": jax.__version__,
            "ml_dtypes": ml_dtypes.__version__, "openblas_core": openblas_core(),
            "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "machine": platform.processor() or platform.machine(),
            "cpu": next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo")
                         if ln.startswith("model name")), "unknown")}
    np.savez(out, meta=json.dumps(meta), **got)


def per_thread_count(script: str, name: str, **env_extra: str) -> None:
    """Run ``script --threads T OUT`` for T = 1 and 2, each in a process of
    its own with the thread variables (and ``env_extra``) set, and merge
    the outputs into ``tests/data/cpu-gemms/<name>``."""
    import numpy as np

    parts = []
    for threads in (1, 2):
        out = f"/tmp/{Path(name).stem}-{threads}.npz"
        env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads),
                   MKL_NUM_THREADS=str(threads), **env_extra)
        subprocess.run([sys.executable, script, "--threads", str(threads), out], env=env,
                       check=True)
        parts.append(dict(np.load(out)))
    merged = {**parts[1], **parts[0]}
    dest = ROOT / "tests" / "data" / "cpu-gemms" / name
    np.savez_compressed(dest, **merged)
    print(f"{dest}: {len(merged) - 1} outputs")


def main() -> None:
    per_thread_count(__file__, "cpu-libraries.npz")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--threads":
        record(int(sys.argv[2]), sys.argv[3])
    else:
        main()
