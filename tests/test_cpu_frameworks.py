"""The real CPU libraries probed at the user's size (tox -e frameworks: torch's
CPU build and JAX installed).

For every black box of issue 42 — numpy's float32, float64 and float16 ``@``,
ml_dtypes' bfloat16 and float8_e4m3fn ``@``, ``torch.mm``, ``torch.addmm`` and
``torch.bmm`` on bfloat16, ``torch.mm`` and ``torch.addmm`` on float32, ``jnp.dot`` on float32
(HIGHEST), bfloat16 and bfloat16 into float32 — at a skinny, a square, a K
that is a multiple of no block and a K over 4,000, ``probe(..., size=)``
either reproduces the call bit for bit (checked again on fresh normal, wide
and cancelling inputs) or says it does not: never a false "reproduces".  No
assertion depends on which kernel this machine's libraries chose, except
that where the machine is the one the rows were measured on (OpenBLAS's
SkylakeX kernels, torch's AVX512 capability), the library's own row must be
the one named.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")
jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

import ml_dtypes  # noqa: E402
from test_cpu_libraries import openblas_core  # noqa: E402

import fpsim.mma as mma  # noqa: E402
from fpsim.array import value_dtype  # noqa: E402

torch.set_num_threads(1)

SKINNY, SQUARE, ODD_K, LONG_K = (7, 4096, 5), (64, 64, 64), (16, 1001, 64), (8, 4500, 64)


def _t(x: np.ndarray):
    if x.dtype == ml_dtypes.bfloat16:
        return torch.from_numpy(x.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(x)


def _n(t) -> np.ndarray:
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return t.numpy()


BOXES = {
    "numpy fp32": ("fp32", "fp32", lambda A, B: A @ B, ("numpy", "fp32", "fp32")),
    "numpy fp64": ("fp64", "fp64", lambda A, B: A @ B, ("numpy", "fp64", "fp64")),
    "numpy fp16": ("fp16", "fp16", lambda A, B: A @ B, ("numpy", "fp16", "fp16")),
    "ml_dtypes bf16": ("bf16", "fp32", lambda A, B: A @ B, ("ml_dtypes", "bf16", "fp32")),
    "ml_dtypes e4m3": ("e4m3", "fp32", lambda A, B: A @ B, ("ml_dtypes", "e4m3", "fp32")),
    "torch.mm bf16": ("bf16", "bf16", lambda A, B: _n(torch.mm(_t(A), _t(B))),
                      ("torch", "bf16", "bf16")),
    "torch.addmm bf16": ("bf16", "bf16", lambda A, B, C: _n(torch.addmm(_t(C), _t(A), _t(B))),
                         ("torch", "bf16", "bf16")),
    "torch.bmm bf16": ("bf16", "bf16", lambda A, B: _n(torch.bmm(_t(A)[None], _t(B)[None])[0]),
                       None),
    "torch.mm fp32": ("fp32", "fp32", lambda A, B: _n(torch.mm(_t(A), _t(B))),
                      ("torch", "fp32", "fp32")),
    "torch.addmm fp32": ("fp32", "fp32", lambda A, B, C: _n(torch.addmm(_t(C), _t(A), _t(B))),
                         ("torch", "fp32", "fp32")),
    "jnp.dot fp32": ("fp32", "fp32", lambda A, B: np.asarray(
        jnp.dot(A, B, precision=jax.lax.Precision.HIGHEST)), ("jax", "fp32", "fp32")),
    "jnp.dot bf16": ("bf16", "bf16", lambda A, B: np.asarray(jnp.dot(A, B)),
                     ("jax", "bf16", "bf16")),
    "jnp.dot bf16->fp32": ("bf16", "fp32", lambda A, B: np.asarray(
        jnp.dot(A, B, preferred_element_type=jnp.float32)), ("jax", "bf16", "fp32")),
}

def _cpu_flags() -> tuple[str, str]:
    """This CPU's vendor and flags, from /proc/cpuinfo ("" where unreadable)."""
    try:
        with open("/proc/cpuinfo") as f:
            text = f.read()
    except OSError:
        return "", ""
    vendor = next((ln.split(":", 1)[1].strip() for ln in text.splitlines()
                   if ln.startswith("vendor_id")), "")
    flags = next((ln.split(":", 1)[1] for ln in text.splitlines() if ln.startswith("flags")), "")
    return vendor, f" {flags} "


#: The machine the rows were measured on: an AMD Zen 4 (AVX-512 with
#: AVX512_BF16, which oneDNN's BF16 kernel needs), OpenBLAS's SkylakeX kernels,
#: torch's AVX512 capability.  Elsewhere the libraries may take other kernels,
#: and only the probe's honesty is asserted.
MEASURED_HERE = (openblas_core() == "SkylakeX"
                 and torch.backends.cpu.get_cpu_capability() == "AVX512"
                 and _cpu_flags()[0] == "AuthenticAMD"
                 and " avx512_bf16 " in _cpu_flags()[1])


def _expected(row: tuple[str, str, str] | None) -> tuple[str, str, str] | None:
    """The table row that must name ``row``'s call on this machine: the row
    itself where the table was measured (MEASURED_HERE), its ``:haswell``
    row where OpenBLAS took its Haswell kernels (numpy's and ml_dtypes'
    float32 sums), else None (only the probe's honesty is asserted)."""
    if row is None:
        return None
    if MEASURED_HERE:
        return row
    haswell = (row[0] + ":haswell", row[1], row[2])
    if openblas_core() == "Haswell" and haswell in mma.cputable.CPU_LIBRARIES:
        return haswell
    return None


def _threads(row: tuple[str, str, str]) -> int:
    """The threads the call runs on: OpenBLAS's (numpy, ml_dtypes) as many as
    it was given or CPUs; torch is set to one above; XLA's dot runs on one."""
    if row[0].split(":")[0] in ("numpy", "ml_dtypes"):
        return int(os.environ.get("OPENBLAS_NUM_THREADS", os.cpu_count() or 1))
    return 1


def _fresh(fmt: str, shape: tuple[int, int], rng: np.random.Generator, spread: int
           ) -> np.ndarray:
    x = rng.standard_normal(shape) * np.exp2(rng.integers(-spread, spread + 1, shape))
    limit = {"e4m3": 400.0, "fp16": 60000.0}.get(fmt, 1e300)
    with np.errstate(over="ignore"):
        return np.clip(x, -limit, limit).astype(value_dtype(fmt))


@pytest.mark.parametrize("size", [SKINNY, SQUARE, ODD_K, LONG_K],
                         ids=["skinny", "square", "odd-K", "long-K"])
@pytest.mark.parametrize("box", list(BOXES))
def test_probe_reproduces_or_says_not(box: str, size: tuple[int, int, int]) -> None:
    fin, fout, fn, row = BOXES[box]
    r = mma.probe(fn, fin, fout, shape="gemm", size=size)
    assert not any(m.split()[0] in mma.gpus() or "/" in m.split()[0] for m in r.matches), \
        r.matches                           # a CPU library is never named a GPU
    if not r.reproduces:
        assert r.gemm is None or r.mismatches != 0
        assert "reproduces every output" not in str(r)
        if _expected(row) is not None:
            g = mma.cpu(*_expected(row), threads=_threads(row))
            with pytest.raises(ValueError, match="not decoded"):
                g.compute(np.zeros(size[:2]), np.zeros(size[1:]), None)
        return
    M, K, N = size
    rng = np.random.default_rng(hash((box, size)) % 2**32)
    for spread in (0, 8):
        A = _fresh(fin, (M, K), rng, spread)
        B = _fresh(fin, (K, N), rng, spread)
        args = (A, B)
        if "addmm" in box:
            args = (A, B, _fresh(fout, (M, N), rng, spread))
        with np.errstate(all="ignore"):
            want = fn(*args)
            got = r.gemm(*args)
        assert np.array_equal(np.asarray(got).view(np.uint8), np.asarray(want).view(np.uint8)), \
            (box, size, spread)
    if _expected(row) is not None:
        row = _expected(row)
        g = mma.cpu(*row, threads=_threads(row))
        try:
            g.compute(np.zeros((M, K)), np.zeros((K, N)), None)
        except ValueError:
            return                          # a shape the row does not decode: the probe did
        name = f"{row[0]} {row[1]} -> {row[2]} (threads="       # numpy: as many as CPUs
        assert any(m.startswith(name) for m in r.matches), r.matches


@pytest.mark.skipif(not MEASURED_HERE, reason="the torch row was measured on MKL's AVX-512 path")
@pytest.mark.parametrize("threads", [1, 2])
def test_torch_fp32_row_at_skinny_shapes(threads: int) -> None:
    """MKL's sgemm where N <= 11 or M <= 3: one chain of rounded products,
    the elements before each row's first 16-byte boundary in runs of 8 with
    4 summed apart (examples/cpu_gemms/mkl_skinny.py): the row against
    torch.mm and torch.addmm, every bit, at shapes of each residue."""
    g = mma.cpu("torch", "fp32", threads=threads)
    rng = np.random.default_rng(threads)
    old = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        for M, K, N in [(7, 4096, 5), (13, 1000, 6), (9, 333, 7), (12, 257, 9), (5, 64, 10),
                        (11, 100, 11), (2, 500, 13), (3, 1000, 31), (1, 300, 7), (64, 200, 2)]:
            A = _fresh("fp32", (M, K), rng, 8)
            B = _fresh("fp32", (K, N), rng, 8)
            C = _fresh("fp32", (M, N), rng, 8)
            for want, got in ((torch.mm(_t(A), _t(B)).numpy(), g(A, B)),
                              (torch.addmm(_t(C), _t(A), _t(B)).numpy(), g(A, B, C))):
                assert np.array_equal(want.view(np.uint32), got.view(np.uint32)), (M, K, N)
    finally:
        torch.set_num_threads(old)
