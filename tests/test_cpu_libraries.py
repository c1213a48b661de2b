"""The CPU library rows (fpsim.mma.cputable) against outputs the real libraries
gave, recorded in tests/data/cpu-gemms/cpu-libraries.npz by
examples/cpu_gemms/record_cpu_gemms.py (numpy 2.4.6 with OpenBLAS 0.3.31's
SkylakeX kernels, torch 2.13.0+cpu, jax 0.10.2, ml_dtypes 0.6.0 on a 2-core
AMD EPYC, Zen 4, 2026-11-29: the recording's own metadata says).

The inputs are made again here from PCG64's raw stream (numpy promises its
bit generators' streams stable), so the recording holds only outputs.  No
test reads this machine's BLAS: the rows run on fpsim's engine and are
compared with what the libraries wrote on the recording machine.  A row
either reproduces a recorded output bit for bit or refuses the shape (a
kernel it has not decoded); the refusals are listed below, so a rule that
starts to guess is noticed.
"""

from __future__ import annotations

import json
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import fpsim.mma as mma

RECORDING = Path(__file__).parent / "data" / "cpu-gemms" / "cpu-libraries.npz"

#: (name, library, input format, output format, takes C, threads)
CALLS = [
    ("numpy-fp32", "numpy", "fp32", "fp32", False, 1),
    ("numpy-fp32-2threads", "numpy", "fp32", "fp32", False, 2),
    ("numpy-fp64", "numpy", "fp64", "fp64", False, 1),
    ("numpy-fp64-2threads", "numpy", "fp64", "fp64", False, 2),
    ("numpy-fp16", "numpy", "fp16", "fp16", False, 1),
    ("ml_dtypes-bf16", "ml_dtypes", "bf16", "fp32", False, 1),
    ("ml_dtypes-e4m3", "ml_dtypes", "e4m3", "fp32", False, 1),
    ("torch-bf16-mm", "torch", "bf16", "bf16", False, 1),
    ("torch-bf16-addmm", "torch", "bf16", "bf16", True, 1),
    ("torch-fp32-mm", "torch", "fp32", "fp32", False, 1),
    ("torch-fp32-addmm", "torch", "fp32", "fp32", True, 1),
    ("jax-fp32-highest", "jax", "fp32", "fp32", False, 1),
    ("jax-bf16", "jax", "bf16", "bf16", False, 1),
    ("jax-bf16-to-fp32", "jax", "bf16", "fp32", False, 1),
]
#: skinny, small, square, K not a multiple of any block, K over 4,000, tails
SHAPES = [(7, 4096, 5), (3, 5, 4), (6, 40, 18), (9, 100, 11), (64, 64, 64), (64, 300, 64),
          (33, 777, 45), (16, 1001, 64), (16, 1001, 16), (8, 4500, 64), (7, 1000, 8)]
KINDS = ("normal", "wide")

#: OpenBLAS's Haswell kernels (OPENBLAS_CORETYPE=Haswell: any AVX2 CPU without
#: AVX-512), recorded in tests/data/cpu-gemms/openblas-haswell.npz by
#: examples/cpu_gemms/record_openblas_haswell.py.
HASWELL = Path(__file__).parent / "data" / "cpu-gemms" / "openblas-haswell.npz"
HASWELL_CALLS = [
    ("haswell-fp32", "numpy:haswell", "fp32", "fp32", False, 1),
    ("haswell-fp32-2threads", "numpy:haswell", "fp32", "fp32", False, 2),
    ("haswell-bf16", "ml_dtypes:haswell", "bf16", "fp32", False, 1),
    ("haswell-fp64", "numpy:haswell", "fp64", "fp64", False, 1),
    ("haswell-fp64-2threads", "numpy:haswell", "fp64", "fp64", False, 2),
]
#: every region of the kernel: 12-row blocks (first 8 columns, last whole 8
#: by parity), 4-row blocks, chunks of 320 columns and their halves, K panels
HASWELL_SHAPES = [(14, 100, 40), (26, 100, 50), (30, 1000, 40), (64, 64, 64), (7, 500, 9),
                  (13, 100, 17), (40, 50, 100), (25, 60, 33), (12, 30, 15), (10, 50, 400),
                  (17, 9, 1000), (22, 9, 650), (14, 9, 1279), (64, 100, 64), (7, 4096, 5),
                  (9, 2000, 40), (40, 400, 33), (45, 700, 45), (12, 5000, 10), (13, 60, 700)]
#: dgemm's: odd M (its last row), chunks of 512 columns, two threads' halves
HASWELL_SHAPES_FP64 = [(9, 40, 13), (11, 41, 6), (13, 100, 9), (5, 9, 1100), (3, 20, 600),
                       (9, 8000, 9), (41, 400, 33), (13, 3000, 30), (45, 700, 45), (64, 64, 64)]
#: shapes a Haswell row refuses (gemv, 3 or more threads: none here)
HASWELL_UNDECODED: set = set()

#: (call, shape) the rows refuse: kernels not decoded (see fpsim/mma/cputable.py)
UNDECODED = {
    ("numpy-fp64-2threads", (33, 777, 45)),
    ("jax-fp32-highest", (3, 5, 4)), ("jax-fp32-highest", (6, 40, 18)),
    ("jax-fp32-highest", (33, 777, 45)),
    ("jax-bf16", (3, 5, 4)), ("jax-bf16", (6, 40, 18)), ("jax-bf16", (33, 777, 45)),
    ("jax-bf16-to-fp32", (3, 5, 4)),
}

_DTYPES = {"fp32": np.float32, "fp64": np.float64, "fp16": np.float16,
           "bf16": ml_dtypes.bfloat16, "e4m3": ml_dtypes.float8_e4m3fn}
_SPREAD = {"fp32": 30, "fp64": 300, "fp16": 6, "bf16": 40, "e4m3": 3}


def operands(fmt: str, shape: tuple[int, int], seed: int, kind: str) -> np.ndarray:
    """Values of ``fmt`` from PCG64's raw 64-bit stream: a 24-bit (FP64:
    52-bit) significand, a random sign and, for ``"wide"``, an exponent
    over ``±_SPREAD[fmt]`` binades; rounded to the format by numpy or
    ml_dtypes (to nearest even)."""
    n = int(np.prod(shape))
    raw = np.random.PCG64(seed).random_raw(2 * n).astype(np.uint64)
    bits, spread = raw[:n], raw[n:]
    sig = (bits >> np.uint64(11)).astype(np.float64) * 2.0**-53 + 0.5       # [0.5, 1)
    sign = np.where((bits & np.uint64(1)) == 1, -1.0, 1.0)
    e = (spread % np.uint64(2 * _SPREAD[fmt] + 1)).astype(np.int64) - _SPREAD[fmt]
    x = sign * sig * (np.exp2(e) if kind == "wide" else 2.0)
    with np.errstate(over="ignore"):
        return x.reshape(shape).astype(_DTYPES[fmt])


def inputs(call: tuple, shape: tuple[int, int, int], kind: str
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    name, _lib, fmt, out, with_c, _t = call
    M, K, N = shape
    seed = sum(map(ord, name)) * 1000 + M * 7 + K * 3 + N + (500 if kind == "wide" else 0)
    A = operands(fmt, (M, K), seed, kind)
    B = operands(fmt, (K, N), seed + 1, kind)
    C = operands(out, (M, N), seed + 2, kind) if with_c else None
    return A, B, C


def openblas_core() -> str:
    """The kernel family OpenBLAS chose in this process ("SkylakeX",
    "Haswell", ...), read from the loaded library; "unknown" where none is
    loaded or it does not say."""
    import ctypes

    try:
        with open("/proc/self/maps") as maps:
            paths = {ln.split()[-1] for ln in maps if "openblas" in ln.lower() and ".so" in ln}
    except OSError:                      # not Linux
        return "unknown"
    for path in sorted(paths):
        lib = ctypes.CDLL(path)
        for sym in ("scipy_openblas_get_corename64_", "openblas_get_corename64_",
                    "openblas_get_corename"):
            f = getattr(lib, sym, None)
            if f is not None:
                f.restype = ctypes.c_char_p
                return f().decode()
    return "unknown"


def key(name: str, shape: tuple[int, int, int], kind: str) -> str:
    return f"{name}|{'x'.join(map(str, shape))}|{kind}"


@pytest.fixture(scope="module")
def recording() -> dict[str, np.ndarray]:
    with np.load(RECORDING) as z:
        return {k: z[k] for k in z.files}


def test_the_recording_says_where_it_was_made(recording: dict[str, np.ndarray]) -> None:
    meta = json.loads(str(recording["meta"]))
    assert meta["openblas_core"] == "SkylakeX"
    assert meta["numpy"] == "2.4.6" and meta["torch"].startswith("2.13.0")
    assert meta["jax"] == "0.10.2"
    assert len(recording) - 1 == len(CALLS) * len(SHAPES) * len(KINDS)


@pytest.mark.parametrize("call", CALLS, ids=[c[0] for c in CALLS])
def test_rows_reproduce_the_recorded_outputs(call: tuple, recording: dict[str, np.ndarray]
                                             ) -> None:
    name, lib, fmt, out, with_c, threads = call
    g = mma.cpu(lib, fmt, out, threads=threads)
    refused = set()
    for shape in SHAPES:
        for kind in KINDS:
            A, B, C = inputs(call, shape, kind)
            want = recording[key(name, shape, kind)]
            try:
                got = g(A, B) if C is None else g(A, B, C)
            except ValueError as e:
                assert "not decoded" in str(e)
                refused.add((name, shape))
                continue
            bits = got.view(f"u{got.dtype.itemsize}")
            same = bits == want
            # a NaN the library wrote: the row writes x86's default NaN
            assert same.all(), (name, shape, kind, int((~same).sum()), np.argwhere(~same)[:4])
    assert refused == {u for u in UNDECODED if u[0] == name}


def haswell_shapes(call: tuple) -> list[tuple[int, int, int]]:
    return HASWELL_SHAPES_FP64 if call[2] == "fp64" else HASWELL_SHAPES


def test_haswell_rows_reproduce_the_recorded_outputs() -> None:
    """numpy's float32 and float64 and ml_dtypes' bfloat16 ``@`` on OpenBLAS's
    Haswell kernels, recorded with OPENBLAS_CORETYPE=Haswell: the ``:haswell`` rows
    give every bit, on one thread and on two (level3_thread.c's split)."""
    with np.load(HASWELL) as z:
        rec = {k: z[k] for k in z.files}
    meta = json.loads(str(rec["meta"]))
    assert meta["openblas_core"] == "Haswell" and meta["numpy"] == "2.4.6"
    assert len(rec) - 1 == sum(len(haswell_shapes(c)) for c in HASWELL_CALLS) * len(KINDS)
    refused = set()
    for call in HASWELL_CALLS:
        name, lib, fmt, out, _c, threads = call
        g = mma.cpu(lib, fmt, out, threads=threads)
        for shape in haswell_shapes(call):
            for kind in KINDS:
                A, B, _ = inputs(call, shape, kind)
                try:
                    got = g(A, B)
                except ValueError as e:
                    assert "not decoded" in str(e)
                    refused.add((name, shape))
                    continue
                same = got.view(f"u{got.dtype.itemsize}") == rec[key(name, shape, kind)]
                assert same.all(), (name, shape, kind, int((~same).sum()),
                                    np.argwhere(~same)[:4])
    assert refused == HASWELL_UNDECODED


@pytest.mark.parametrize("kw, err, match", [
    ({"when": "__import__('os')"}, ValueError, "not allowed"),
    ({"when": "M.real > 1"}, ValueError, "not allowed"),
    ({"when": "X > 1"}, ValueError, "unknown name 'X'"),
    ({"when": "N % 0 == 1"}, ValueError, "positive integer"),
    ({"when": "N // M > 1"}, ValueError, "positive integer"),
    ({"when": "K > 1.5"}, ValueError, "integer constants"),
    ({"when": "K >"}, ValueError, "not an expression"),
    ({"rows": "0"}, ValueError, "'lo:hi'"),
    ({"cols": 3}, ValueError, "'lo:hi'"),
    ({"when": 1}, TypeError, "string"),
    ({"rows": ":i"}, ValueError, "unknown name 'i'"),
    ({"cols": "j:"}, ValueError, "unknown name 'j'"),
    ({"when": "i > 1"}, ValueError, "unknown name 'i'"),
    ({"where": "k < 2"}, ValueError, "unknown name 'k'"),
    ({"where": "j.bit_length() < 2"}, ValueError, "not allowed"),
    ({"where": "x < 2", "defs": (("x", "j % 0"),)}, ValueError, "positive integer"),
    ({"where": "N < 2", "defs": (("N", "j"),)}, ValueError, "new identifier"),
    ({"defs": (("x", "j"),)}, ValueError, "defs without a where"),
    ({"where": "x", "defs": ["x", "j"]}, TypeError, "pairs"),
])
def test_part_expressions_are_checked(kw: dict, err: type, match: str) -> None:
    from fpsim.mma.cputable import Part
    with pytest.raises(err, match=match):
        Part(mma.Accumulation(), **kw)


def test_rows_refuse_wrong_operands() -> None:
    g = mma.cpu("numpy", "fp32")
    a = np.ones((3, 4), np.float32)
    with pytest.raises(TypeError, match="float32"):
        g(a.astype(np.float64), a.T)
    with pytest.raises(ValueError, match="K differs"):
        g(a, a)
    with pytest.raises(ValueError, match="2-D"):
        g(a[0], a.T)
    with pytest.raises(ValueError, match="no CPU row for numpy e5m2"):
        mma.cpu("numpy", "e5m2")
    with pytest.raises(TypeError, match="threads"):
        mma.cpu("numpy", "fp32", threads=1.0)


def test_kernels_name_a_row_of_the_table() -> None:
    assert mma.cpu("numpy", "fp32", kernels="Haswell").row.library == "numpy:haswell"
    assert mma.cpu("ml_dtypes", "bf16", kernels="haswell").row.out == "fp32"
    with pytest.raises(ValueError, match="no CPU row for numpy:zen5 fp32; known: .*numpy:haswell"):
        mma.cpu("numpy", "fp32", kernels="zen5")
    with pytest.raises(TypeError, match="kernels must be a string or None"):
        mma.cpu("numpy", "fp32", kernels=3)
