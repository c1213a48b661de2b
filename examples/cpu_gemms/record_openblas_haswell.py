"""Re-record tests/data/cpu-gemms/openblas-haswell.npz: numpy's float32 and
float64 ``@`` and ml_dtypes' bfloat16 ``@`` on OpenBLAS's **Haswell** kernels (what
OpenBLAS takes on any AVX2 x86 CPU without AVX-512: Haswell to Zen 3),
forced with ``OPENBLAS_CORETYPE=Haswell`` on any x86 CPU with AVX2 and FMA,
on the inputs of tests/test_cpu_libraries.py (HASWELL_CALLS, haswell_shapes,
KINDS), as their bits, with the versions and the kernel family in ``meta``.

Run ``python examples/cpu_gemms/record_openblas_haswell.py`` from the
repository's root.  Each thread count runs in a process of its own
(OpenBLAS reads ``OPENBLAS_CORETYPE`` and ``OPENBLAS_NUM_THREADS`` when it
loads).  Recorded with numpy 2.4.6 (scipy-openblas 0.3.31) and ml_dtypes
0.6.0 on a 2-core AMD EPYC (Zen 4), 2026-11-29.
"""

from __future__ import annotations

import json
import platform
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def record(threads: int, out: str) -> None:
    sys.path.insert(0, str(ROOT / "tests"))
    import ml_dtypes
    import numpy as np
    from test_cpu_libraries import HASWELL_CALLS, KINDS, haswell_shapes, inputs, key, openblas_core

    core = openblas_core()
    if core != "Haswell":
        raise SystemExit(f"OpenBLAS took its {core} kernels, not Haswell's")
    got = {}
    for call in HASWELL_CALLS:
        if call[5] != threads:
            continue
        for shape in haswell_shapes(call):
            for kind in KINDS:
                A, B, _ = inputs(call, shape, kind)
                with np.errstate(all="ignore"):
                    D = A @ B
                got[key(call[0], shape, kind)] = D.view(f"u{D.dtype.itemsize}")
    meta = {"numpy": np.__version__, "ml_dtypes": ml_dtypes.__version__, "openblas_core": core,
            "machine": platform.processor() or platform.machine(),
            "cpu": next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo")
                         if ln.startswith("model name")), "unknown")}
    np.savez(out, meta=json.dumps(meta), **got)


def main() -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    from record_cpu_gemms import per_thread_count

    per_thread_count(__file__, "openblas-haswell.npz", OPENBLAS_CORETYPE="Haswell")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--threads":
        record(int(sys.argv[2]), sys.argv[3])
    else:
        main()
