"""CPU GEMMs by name: what ``numpy``'s ``@``, ``torch.mm`` on the CPU,
``jnp.dot`` on the CPU and an ml_dtypes array's ``@`` compute, as rows of a
table of :class:`~fpsim.mma.accumulation.Accumulation` parts.

A CPU library chooses its kernel by shape (a small-matrix kernel below some
``M·N·K``, a blocked level-3 driver above), by thread count and by the
instructions of the CPU, and one kernel may treat some rows or columns of
the output differently (a tail of columns a SIMD width does not cover).  A
row of :data:`CPU_LIBRARIES` states all of that as data: its
:class:`Part` s, each an accumulation with the shapes it applies to
(``when``, an expression in ``M``, ``K``, ``N`` and ``T``, the threads the
library runs on) and the output rows and columns it covers (later parts
override earlier ones where both apply).  A part whose accumulation is
None marks shapes whose kernel has not been decoded: computing there
raises ``ValueError`` instead of guessing.  Each row names the versions and
CPU it was measured on and the source of each rule; on other versions,
CPUs or kernels, run :func:`fpsim.mma.probe` with ``size=``.

>>> import numpy as np, fpsim.mma as mma
>>> g = mma.cpu("numpy", "fp16")
>>> g
<CPUGEMM numpy fp16 -> fp16: a @ b (numpy's own loop for float16)>
>>> a = np.full((1, 4096), 1.0, np.float16)
>>> float(g(a, a.T)[0, 0])       # one FP32 sum, rounded once (FP16 sums stop at 2048)
4096.0
>>> print(mma.cpu("numpy", "fp32").describe(64, 1000, 64))
M=64, K=1000, N=64, threads=1:
  rows 0:64, columns 0:64: one FP32 chain, FMA, K blocks of 448 (halve_up, unroll 16)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..array.engine import as_array, format_of_dtype, value_dtype
from ..formats import format as _lookup
from . import _args, _chains
from ._finish import unit_nans
from ._parts import Part
from .accumulation import DEFAULT_NAN, Accumulation

__all__ = ["cpu", "cpu_kernel", "CPUGEMM", "CPULibrary", "Part", "CPU_LIBRARIES",
           "cpu_libraries"]

@dataclass(frozen=True)
class CPULibrary:
    """A row of the table: one library call on some formats (``inputs``, the
    pair of A's and B's, and ``out``), what it is (``call``), where and when
    it was ``measured``, and its :class:`Part` s.

    >>> row = cpu("torch", "bf16").row
    >>> row.inputs, row.out, len(row.parts)
    (('bf16', 'bf16'), 'bf16', 3)
    """

    library: str
    inputs: tuple[str, str]
    out: str
    call: str
    measured: str
    parts: tuple[Part, ...]


_OPENBLAS = ("numpy 2.4.6 with scipy-openblas 0.3.31 (DYNAMIC_ARCH, SkylakeX kernels chosen "
             "on an AMD EPYC Zen 4 with AVX-512), 2026-11-29")
_TORCH = ("torch 2.13.0+cpu (MKL 2024.2, oneDNN 3.12, ATen CPU capability AVX512) on an AMD "
          "EPYC Zen 4 with AVX512_BF16, 2026-11-29")
_JAX = "jax 0.10.2 / jaxlib 0.10.2 (XLA CPU, YNNPACK) on an AMD EPYC Zen 4, 2026-11-29"
_MLD = "ml_dtypes 0.6.0 with numpy 2.4.6 / scipy-openblas 0.3.31 (SkylakeX kernels), 2026-11-29"

_SMALL = "M * N * K <= 1000000"


def _openblas_parts(acc: str, q: int) -> tuple[Part, ...]:
    """OpenBLAS's sgemm (``acc="fp32"``) or dgemm on the SkylakeX kernels:
    a small-matrix kernel up to M·N·K = 1e6, whose last ``N mod w`` columns
    (w = 16 floats or 8 doubles; where that is at most w/2 and K >= 2w:
    the kernel's ``if (mm > w/2 || K < 2w)`` takes the plain chain) sum
    along K in ``w`` lanes; above it, the level-3 driver's K panels."""
    w, t = (16, "s") if acc == "fp32" else (8, "d")
    small = ("OpenBLAS interface/gemm.c: small_matrix_permit (M·N·K <= 1e6) -> "
             f"kernel/x86_64/{t}gemm_small_kernel_nn_skylakex.c")
    tail = f"{_SMALL} and 1 <= N % {w} <= {w // 2} and K >= {2 * w}"
    four = f"N // {w} * {w} + N % {w} // 4 * 4"
    lanes = Accumulation(accumulator=acc, lanes=w, join="pairs")
    parts = [Part(Accumulation(accumulator=acc), when=_SMALL, source=small),
             Part(lanes, when=tail, cols=f"N // {w} * {w}:{four}",
                  source=small + ": the K-direction path, REDUCE_4"),
             Part(lanes, when=tail, rows=":M // 4 * 4", cols=f"{four}:",
                  source=small + ": the K-direction path, REDUCE_4"),
             Part(lanes.replace(join="halves"), when=tail, rows="M // 4 * 4:", cols=f"{four}:",
                  source=small + ": the K-direction path, the compiler's "
                  f"_mm512_reduce_add_p{t}")]
    param = f"param.h SKYLAKEX {t.upper()}GEMM_DEFAULT_Q = {q}, UNROLL_M = 16"
    parts += [
        Part(Accumulation(accumulator=acc, k_block=q, k_block_rule="halve_up", k_unroll=16),
             when="M * N * K > 1000000 and T == 1",
             source=f"OpenBLAS driver/level3/level3.c (K panels), {param}"),
        Part(Accumulation(accumulator=acc, k_block=q, k_block_rule="halve"),
             when="M * N * K > 1000000 and T >= 2",
             source=f"OpenBLAS driver/level3/level3_thread.c (K panels), {param}"),
        Part(None, when="M == 1 or N == 1", source="gemv: not decoded"),
    ]
    if acc == "fp64":
        parts.append(Part(None, when="M * N * K > 1000000 and T >= 2 and N % 8 != 0",
                          cols="N // 8 * 8:", source="dgemm on 2+ threads: the last N mod 8 "
                          "columns follow another order (at 33x777x45): not decoded"))
    return tuple(parts)


_F32 = _openblas_parts("fp32", 448)

_HASWELL = ("numpy 2.4.6 with scipy-openblas 0.3.31, OPENBLAS_CORETYPE=Haswell (the kernels "
            "OpenBLAS takes on any AVX2 x86 CPU without AVX-512: Haswell to Zen 3), measured on "
            "an AMD EPYC Zen 4, 2026-11-29")
_HSRC = ("OpenBLAS kernel/x86_64/sgemm_kernel_8x4_haswell_2.c (COMPUTE_n12: COMPUTE_H_m8n6 "
         "and COMPUTE_T_m8n6 keep two accumulator sets, even and odd k, COMPUTE_L/R_m16n6 one; "
         "COMPUTE_NORMAL(4): COMPUTE_m8n4 two), driver/level3/level3.c (min_i by GEMM_P, "
         "min_jj 12 or 4 on the first min_i), param.h HASWELL (SGEMM P = Q = 320, unroll 8x4)")
#: One thread: T == 1, or too little work for two (interface/gemm.c: M·N·K
#: below 2 × 262144), or a split level3_thread.c gives one thread (N < 16
#: columns and at most 8 rows: GEMM_LOCAL).
_HASWELL_ONE = ("(T == 1 or M * N * K < 524288 or N < 16 and M <= 8) and M >= 2 and N >= 2")
_HASWELL_TWO = ("T == 2 and M * N * K >= 524288 and not (N < 16 and M <= 8) and M >= 2 "
                "and N >= 2")
_HSRC2 = ("OpenBLAS driver/level3/level3_thread.c (gemm_driver's split of M' and N', "
          "inner_thread's DIVIDE_RATE halves, min_jj on its own part; K panels halved as (r + "
          "1) / 2), interface/gemm.c (two threads from M·N·K >= 2 × 262144), measured on "
          "0.3.31 with OPENBLAS_NUM_THREADS=2 (the split's rounding differs from the source "
          "read: examples/cpu_gemms/record_openblas_haswell.py)")
_DSRC = ("OpenBLAS kernel/x86_64/dgemm_kernel_4x8_haswell.S, driver/level3/level3.c, "
         "param.h HASWELL (DGEMM P = 512, Q = 256, unroll 4x8), measured with "
         "OPENBLAS_CORETYPE=Haswell (examples/cpu_gemms/record_openblas_haswell.py)")


def _haswell_defs(P: int, u: int, threads: int) -> tuple[tuple[str, str], ...]:
    """The names the Haswell rows' ``where`` reads, on one or two threads.

    Columns (M' = N): each thread's columns [lo, hi) go in chunks of ``P``
    while 2P remain, then halves rounded up to the unroll ``u`` (level3.c:
    ``r // 2``; level3_thread.c, past its first chunk: ``(r + 1) // 2``);
    column j's chunk starts at c0, is m wide, j is x into it (g whole 8s).
    Rows (N' = M): each thread's rows [ss, se) (one thread: all of them; two:
    its half of its part, DIVIDE_RATE), i is y into them; a run of 12-row
    blocks (q rows), then the rest (rr): 4s where the 12/4 split (min_jj)
    applies (``jjs``: a thread's own part in its first chunk), else the
    kernel's 8, 4, 2, 1.

    Two threads (level3_thread.c, measured on 0.3.31, where the split
    rounds differently from the source read): ``wide`` where the columns
    split between the threads (N >= 16 and not M > N >= 16: the objective
    n·tm + m·tn), at ceil8(ceil(N / 2)), and the rows, whose parts each
    thread packs, at ceil(M / 2) raised to 8 and rounded up to 8; else
    every thread takes all columns and half the rows, at ceil(M / 2)."""
    if threads == 1:
        cols: tuple[tuple[str, str], ...] = (("lo", "0"), ("hi", "N"))
        half = "rest // 2"
    else:
        cols = (("wide", "N >= 16 and not (M >= 16 and M > N)"),
                ("w0", "wide * (((N + 1) // 2 + 7) // 8 * 8) + (1 - wide) * N"),
                ("tm", "j >= w0"),
                ("lo", "tm * w0"),
                ("hi", "tm * N + (1 - tm) * w0"))
        half = "rest // 2 + (f > 0) * (rest % 2)"
    chunks = (
        ("f", f"(hi - lo >= {2 * P}) * ((hi - lo - {P}) // {P})"),
        ("t0", f"lo + {P} * f"),
        ("rest", "hi - t0"),
        ("a", f"rest + (rest > {P}) * (({half} + {u - 1}) // {u} * {u} - rest)"),
        ("c0", f"(j < t0) * (lo + (j - lo) // {P} * {P}) + (j >= t0) * (t0 + (j >= t0 + a) * a)"),
        ("m", f"(j < t0) * {P} + (j >= t0) * ((j < t0 + a) * a + (j >= t0 + a) * (rest - a))"),
        ("x", "j - c0"),
        ("g", "m // 8"),
    )
    if threads == 1:
        rows: tuple[tuple[str, str], ...] = (("ss", "0"), ("se", "M"), ("jjs", "c0 == 0"))
    else:
        rows = (("hw", "(M + 1) // 2"),
                ("h8", "hw + (1 < hw < 8) * (8 - hw)"),
                ("h8r", "h8 + (M >= 8 and h8 > 8) * ((h8 + 7) // 8 * 8 - h8)"),
                ("h", "wide * (h8r - (h8r > M) * (h8r - M)) + (1 - wide) * hw"),
                ("p", "i >= h"),
                ("s", "p * h"),
                ("e", "p * M + (1 - p) * h"),
                ("dv", "(e - s + 1) // 2"),
                ("ss", "s + (i - s >= dv) * dv"),
                ("se", "ss + dv - (ss + dv > e) * (ss + dv - e)"),
                ("jjs", "(wide * (p == tm) + (1 - wide)) * (c0 == lo)"))
    run = (("y", "i - ss"), ("q", "(se - ss) // 12 * 12"), ("rr", "se - ss - q"),
           ("left", "y % 12 < 6"))
    return cols + chunks + rows + run


#: Where Haswell's sgemm keeps two accumulator sets: in a 12-row block the
#: left 6 rows (COMPUTE_H_m8n6) on the chunk's first 8 columns and, where g
#: is even, on its last whole 8 (COMPUTE_T_m8n6(L)), the right 6 on the last
#: whole 8 where g is odd (COMPUTE_T_m8n6(R)); a 4-row block on every whole
#: 8 (COMPUTE_m8n4).
_SGEMM_LANES = ("(y < q and m >= 16 and (x < 8 and left or x // 8 == g - 1 and left == (g % 2 "
                "== 0))) or (x < g * 8 and y >= q and (jjs and y < q + rr // 4 * 4 or not jjs "
                "and 4 <= rr <= 7 and y < q + 4))")
#: Where Haswell's dgemm sums in 4 lanes: the last row of an odd run of rows
#: (the kernel's n = 1 remainder), on the columns its 4-wide loop covers.
_DGEMM_LANES = "(se - ss) % 2 == 1 and i == se - 1 and x < m // 4 * 4"


def _haswell_parts(acc: str) -> tuple[Part, ...]:
    """OpenBLAS's sgemm (``acc="fp32"``) or dgemm on the Haswell kernels, on
    one thread and on two: FMA chains in K panels, and the elements whose
    kernel keeps several accumulators (:data:`_SGEMM_LANES`,
    :data:`_DGEMM_LANES`)."""
    if acc == "fp32":
        P, Q, u, src, where = 320, 320, 8, _HSRC, _SGEMM_LANES
        lanes = Accumulation(lanes=2, tail="lane0", unroll=8)
        what = ("two accumulator sets (k mod 2) in a loop of 8, the K mod 8 products into the "
                "first, added at the save")
    else:
        P, Q, u, src, where = 512, 256, 4, _DSRC, _DGEMM_LANES
        lanes = Accumulation(accumulator="fp64", lanes=4, tail="lane0", unroll=8, join="pairs")
        what = ("the n = 1 remainder, 4 lanes (k mod 4) in a loop of 8, the tail into the first, "
                "joined by pairs")
    parts = [Part(None, source="gemv (M or N is 1), and level3_thread.c's split among 3 or "
                  "more threads: not decoded")]
    for threads, when, rule, how in (
            (1, _HASWELL_ONE, {"k_block_rule": "halve_up", "k_unroll": u}, src),
            (2, _HASWELL_TWO, {"k_block_rule": "halve"}, _HSRC2 + "; " + src)):
        parts += [Part(Accumulation(accumulator=acc, k_block=Q, **rule), when=when,
                       source=how + ": one FMA chain per K panel"),
                  Part(lanes.replace(k_block=Q, **rule), when=when,
                       defs=_haswell_defs(P, u, threads), where=where, source=how + ": " + what)]
    return tuple(parts)


_F32_HASWELL = _haswell_parts("fp32")
_F64_HASWELL = _haswell_parts("fp64")
_ATEN = ("ATen aten/src/ATen/native/mkldnn/Matmul.cpp checksize (M·K·N > 4096 -> oneDNN); "
         "aten/src/ATen/native/BlasKernel.cpp sum() with ilp_factor 4")
_ONEDNN = ("oneDNN brg_matmul:avx512_core_bf16 (ONEDNN_VERBOSE): VDPBF16PS, K blocks of "
           "512 (K < 1024) or 1024, measured")
_BF16_TORCH = (
    Part(Accumulation(lanes=4, tail="lane0", c_joins="last"), when="M * K * N <= 4096",
         source=_ATEN),
    Part(Accumulation(pair_swap=True, k_block=512, ftz=True, c_joins="last"),
         when="M * K * N > 4096 and K < 1024",
         source=_ONEDNN),
    Part(Accumulation(pair_swap=True, k_block=1024, ftz=True, c_joins="last"),
         when="M * K * N > 4096 and K >= 1024", source=_ONEDNN),
)
_MKL = ("MKL 2024.2 sgemm (MKL_VERBOSE: SGEMM), measured with FPRev rows: FMA chains in K "
        "blocks of 192; an even K up to 384 in two halves; an odd K's last product alone")
_MKL_SKINNY = ("MKL 2024.2 sgemm where N <= 11 or M <= 3 (N >= 2), measured by "
               "examples/cpu_gemms/mkl_skinny.py (torch.mm and torch.addmm at M = 1 to 1000, "
               "N = 2 to 2000, K = 2 to 4500, 1 and 2 threads): ")
#: The first (-i·N) mod 4 elements of output row i, where at least 4 follow:
#: the elements before the first 16-byte boundary of the row (C's base
#: 16-byte aligned, as torch allocates it), which MKL's aligned stores miss.
_PEELED = (("peel", "(4 - i * N % 4) % 4"),)
_F32_TORCH = (
    Part(None, source="MKL sgemm at N = 1 (its gemv path: at 7x256x1 four lanes after a "
         "four-product prologue, measured, not decoded at other K and alignments)"),
    Part(Accumulation(products="rounded", c_joins="start"), when="N >= 2 and (N <= 11 or M <= 3)",
         source=_MKL_SKINNY + "one chain of rounded products (vmulps, vaddps) from C"),
    Part(Accumulation(products="rounded", apart=4, c_joins="start"),
         when="N >= 2 and (N <= 11 or M <= 3)", defs=_PEELED,
         where="j < peel and N - peel >= 4",
         source=_MKL_SKINNY + "the elements before the first 16-byte boundary of each output "
         "row (its first (-i·N) mod 4, where at least 4 follow) take runs of 8 products: 4 "
         "into the chain, 4 summed apart and added (FPRev at 7x4096x5, element (3, 0))"),
    Part(Accumulation(k_block=192, k_block_rule="even_halves"), when="M >= 4 and N >= 12",
         source=_MKL + " (seen at M = 4 to 256, N = 12 to 1000, K = 64 to 4500)"),
)
_YNN = "XLA CPU's ynn_fusion (YNNPACK), measured with FPRev rows"
_F32_JAX = (
    Part(None, source="YNNPACK chooses its kernel by a cost model not decoded: at 64xKx32 and "
         "64xKx96 neither rule below holds, at 30x1001x21 one FMA chain; run the probe"),
    Part(Accumulation(k_block=512), when="N % 64 == 0 and M >= 8",
         source=_YNN + ": K blocks of 512 (seen at N = 64, 128, 256, 512, M = 8 to 256)"),
    Part(Accumulation(lanes=4, join="pairs", tail="after"), when="N <= 16 and K >= 18",
         source=_YNN + ": four FMA lanes, the K mod 4 tail's products rounded and added last "
         "(seen at N = 5, 16, M = 7 to 200)"),
)

#: The table: (library, input format, output format) -> its row.
CPU_LIBRARIES: dict[tuple[str, str, str], CPULibrary] = {}


def _row(row: CPULibrary) -> None:
    CPU_LIBRARIES[(row.library, row.inputs[0], row.out)] = row


_row(CPULibrary("numpy", ("fp32", "fp32"), "fp32", "a @ b (float32: OpenBLAS sgemm)",
                _OPENBLAS, _F32))
_row(CPULibrary("numpy", ("fp64", "fp64"), "fp64", "a @ b (float64: OpenBLAS dgemm)",
                _OPENBLAS, _openblas_parts("fp64", 384)))
_row(CPULibrary("numpy", ("fp16", "fp16"), "fp16", "a @ b (numpy's own loop for float16)",
                "numpy 2.4.6, 2026-11-29 (any CPU: numpy's C loop, no BLAS)",
                (Part(Accumulation(), source="numpy/_core/src/umath/matmul.c.src: "
                      "@TYPE@_matmul_inner_noblas (float accumulator, one rounding at the end)"),)))
_row(CPULibrary("numpy:haswell", ("fp32", "fp32"), "fp32",
                "a @ b (float32: OpenBLAS sgemm on its Haswell kernels)", _HASWELL, _F32_HASWELL))
_row(CPULibrary("numpy:haswell", ("fp64", "fp64"), "fp64",
                "a @ b (float64: OpenBLAS dgemm on its Haswell kernels)", _HASWELL, _F64_HASWELL))
for _fmt in ("bf16", "e4m3"):
    _row(CPULibrary("ml_dtypes", (_fmt, _fmt), "fp32",
                    "a @ b (the float32 result of OpenBLAS sgemm on the values)", _MLD, _F32))
    _row(CPULibrary("ml_dtypes:haswell", (_fmt, _fmt), "fp32", "a @ b (the float32 result of "
                    "OpenBLAS sgemm on its Haswell kernels)", _MLD + ", " + _HASWELL,
                    _F32_HASWELL))
_row(CPULibrary("torch", ("bf16", "bf16"), "bf16", "torch.mm(a, b) / torch.addmm(c, a, b) on the "
                "CPU (C joins in FP32 after the sum)", _TORCH, _BF16_TORCH))
_row(CPULibrary("torch", ("fp32", "fp32"), "fp32", "torch.mm(a, b) / torch.addmm(c, a, b) on "
                "the CPU (MKL sgemm)", _TORCH, _F32_TORCH))
_row(CPULibrary("jax", ("fp32", "fp32"), "fp32",
                "jnp.dot(a, b, precision=jax.lax.Precision.HIGHEST) on the CPU", _JAX, _F32_JAX))
_row(CPULibrary("jax", ("bf16", "bf16"), "bf16", "jnp.dot(a, b) on bfloat16 arrays (the FP32 "
                "rule on the values, rounded once to BF16)", _JAX, _F32_JAX))
_row(CPULibrary("jax", ("bf16", "bf16"), "fp32",
                "jnp.dot(a, b, preferred_element_type=jnp.float32) on bfloat16 arrays", _JAX,
                (Part(None, source="YNNPACK's choice: at 12x5000x15 neither rule below, at "
                      "3x5x4 one plain chain: not decoded"),
                 Part(Accumulation(pair_swap=True, k_block=2048), when="N >= 16 and K >= 40",
                      source=_YNN + ": VDPBF16PS-style pairs, K blocks of 2048 (seen at N = 16 "
                      "to 64, K = 40 to 4500)"),
                 Part(Accumulation(pair_swap=True), when="N <= 8 and K >= 40",
                      source=_YNN + ": VDPBF16PS-style pairs, no K blocks (seen at N = 5, 8, K "
                      "= 100 to 4096)"),
                 Part(Accumulation(pair_swap=True), when="9 <= N <= 15 and 40 <= K <= 2048",
                      source=_YNN + ": VDPBF16PS-style pairs (seen at N = 11, K = 100)"))))


def cpu_libraries() -> list[tuple[str, str, str]]:
    """The rows of the table, as ``(library, input, output)``.

    >>> ("numpy", "fp32", "fp32") in cpu_libraries()
    True
    """
    return sorted(CPU_LIBRARIES)


def _dtype(name: str) -> np.dtype:
    dt = value_dtype(name)
    assert dt is not None, name      # every row's formats have a value dtype
    return dt


class CPUGEMM:
    """A CPU library's GEMM: ``g(A, B)`` or ``g(A, B, C)``, arrays of the
    row's input and output dtypes (numpy, ml_dtypes or framework arrays),
    returning the library's result, bit for bit, as a numpy array of the
    output dtype.  ``threads`` is the number the library runs on (OpenBLAS
    cuts K differently with two or more)."""

    def __init__(self, row: CPULibrary, threads: int = 1):
        self.row = row
        self.threads = _args.count("cpu()", "threads", threads)

    def __repr__(self) -> str:
        r = self.row
        return f"<CPUGEMM {r.library} {r.inputs[0]} -> {r.out}: {r.call}>"

    def plan(self, M: int, K: int, N: int) -> list[tuple[tuple[int, int, int, int], Part]]:
        """The parts that apply at this shape and own some output element,
        with their regions, in order (later ones override earlier ones).

        >>> [(reg, p.accumulation.lanes) for reg, p in cpu("torch", "bf16").plan(2, 3, 4)]
        [((0, 2, 0, 4), 4)]
        """
        return [(reg, p) for reg, p, _mine in self._owned(M, K, N)]

    def _owned(self, M: int, K: int, N: int
               ) -> list[tuple[tuple[int, int, int, int], Part, np.ndarray]]:
        """The parts that own some element, each with its region and the
        mask of its region's elements it owns (later parts override)."""
        env = {"M": M, "K": K, "N": N, "T": self.threads}
        applied = [(p.region(env), p) for p in self.row.parts if p.applies(env)]
        owner = np.full((M, N), -1, np.int32)
        for i, ((r0, r1, c0, c1), p) in enumerate(applied):
            owner[r0:r1, c0:c1][p.cells(env)] = i
        out = []
        for i, ((r0, r1, c0, c1), p) in enumerate(applied):
            mine = owner[r0:r1, c0:c1] == i
            if mine.any():
                out.append(((r0, r1, c0, c1), p, mine))
        return out

    def describe(self, M: int, K: int, N: int) -> str:
        """The accumulation of each region of the output at this shape.

        >>> print(cpu("numpy", "fp64").describe(9, 100, 11))
        M=9, K=100, N=11, threads=1:
          rows 0:9, columns 0:11: one FP64 chain, FMA
          rows 0:8, columns 8:11: 8 FP64 lanes (k mod 8), joined pairs, FMA
          rows 8:9, columns 8:11: 8 FP64 lanes (k mod 8), joined halves, FMA
        """
        lines = [f"M={M}, K={K}, N={N}, threads={self.threads}:"]
        for (r0, r1, c0, c1), p in self.plan(M, K, N):
            what = "not decoded" if p.accumulation is None else str(p.accumulation)
            where = "" if p.where is None else f" where {p.where}"
            lines.append(f"  rows {r0}:{r1}, columns {c0}:{c1}{where}: {what}")
        return "\n".join(lines)

    def _operand(self, x: Any, fmt: str, name: str, ndim: int) -> np.ndarray:
        arr = as_array(x)
        want = _dtype(fmt)
        if arr.dtype != want:
            got = format_of_dtype(arr.dtype)
            raise TypeError(f"{self!r}: {name} must be {want} ({fmt}), got "
                            f"{got.name if got else arr.dtype}")
        if arr.ndim != ndim:
            raise ValueError(f"{self!r}: {name} must be {ndim}-D, got shape {arr.shape}")
        return arr.astype(np.float64)

    def __call__(self, A: Any, B: Any, C: Any = None) -> np.ndarray:
        fa, fb = self.row.inputs
        a = self._operand(A, fa, "A", 2)
        b = self._operand(B, fb, "B", 2)
        M, K = a.shape
        if b.shape[0] != K:
            raise ValueError(f"{self!r}: A is {a.shape}, B is {b.shape}: K differs")
        N = b.shape[1]
        c = None
        if C is not None:
            c = self._operand(C, self.row.out, "C", 2)
            if c.shape != (M, N):
                raise ValueError(f"{self!r}: C must be {(M, N)}, got {c.shape}")
        return self.compute(a, b, c)

    def compute(self, a: np.ndarray, b: np.ndarray, c: np.ndarray | None) -> np.ndarray:
        """The result for float64 values ``a`` (M×K), ``b`` (K×N) and ``c``
        (M×N, or None), each exact in its format, as the output's dtype.

        >>> import numpy as np
        >>> cpu("numpy", "fp16").compute(np.ones((1, 3)), np.ones((3, 1)), None)
        array([[3.]], dtype=float16)
        """
        M, K = a.shape
        N = b.shape[1]
        values = np.full((M, N), np.nan)
        for (r0, r1, c0, c1), p, mine in self._owned(M, K, N):
            if p.accumulation is None:
                rows, cols = np.nonzero(mine)
                raise ValueError(f"{self!r}: the kernel at M={M}, K={K}, N={N} (e.g. row "
                                 f"{r0 + rows[0]}, column {c0 + cols[0]}) is not decoded "
                                 f"({p.source}); run fpsim.mma.probe(fn, ..., shape='gemm', "
                                 "size=(M, K, N)) on the library itself")
            if mine.all():             # the whole region: views, no copies
                res = _chains.run(p.accumulation, a[r0:r1, None, :], b[:, c0:c1].T[None, :, :],
                                  None if c is None else c[r0:r1, c0:c1], self.row.out)
                values[r0:r1, c0:c1] = res
                continue
            for rows, cols in _blocks(mine):
                ri, ci = rows + r0, cols + c0
                # (np.take keeps each operand's rows contiguous along K)
                res = _chains.run(p.accumulation, a.take(ri, axis=0)[:, None, :],
                                  b.take(ci, axis=1).T[None, :, :],
                                  None if c is None else c[np.ix_(ri, ci)], self.row.out)
                values[np.ix_(ri, ci)] = res
        return to_dtype(values, self.row.out)


def _blocks(mine: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """The elements of a bool mask as (rows, columns) index pairs whose grids
    cover exactly the True elements: one pair per distinct row pattern (a
    part's kernel tiles repeat, so there are few), so each accumulation runs
    on its own elements only."""
    patterns, inverse = np.unique(np.packbits(mine, axis=1), axis=0, return_inverse=True)
    out = []
    for n in range(len(patterns)):
        rows = np.flatnonzero(inverse.ravel() == n)
        cols = np.flatnonzero(mine[rows[0]])
        if cols.size:
            out.append((rows, cols))
    return out


def to_dtype(values: np.ndarray, out: str) -> np.ndarray:
    """Float64 values of ``out`` as an array of its dtype, NaN as x86's
    default NaN."""
    dt = _dtype(out)
    with np.errstate(over="ignore", invalid="ignore"):
        codes = values.astype(dt).view(f"u{dt.itemsize}")
    return unit_nans(codes, _lookup(out), DEFAULT_NAN[out]).view(dt)


def cpu(library: str, fmt: Any, out: Any = None, *, threads: int = 1,
        kernels: str | None = None) -> CPUGEMM:
    """What a CPU library's GEMM computes: a :class:`CPUGEMM` from the row of
    ``fpsim.mma.cputable.CPU_LIBRARIES`` for ``library`` (``"numpy"``, ``"torch"``,
    ``"jax"``, ``"ml_dtypes"``), the input format ``fmt`` and the output
    ``out`` (default: the only row's, or the input format).  ``kernels``:
    None (the kernels of the machine the row was measured on), or a
    family the library takes on other CPUs (``"haswell"``: OpenBLAS on any
    AVX2 CPU without AVX-512, the row ``"numpy:haswell"``).

    >>> cpu("torch", "bf16")
    <CPUGEMM torch bf16 -> bf16: torch.mm(a, b) / torch.addmm(c, a, b) on the CPU ...>
    >>> cpu("numpy", "fp32", kernels="haswell")
    <CPUGEMM numpy:haswell fp32 -> fp32: a @ b (float32: OpenBLAS sgemm on its Haswell kernels)>
    >>> cpu("numpy", "e5m2")
    Traceback (most recent call last):
      ...
    ValueError: no CPU row for numpy e5m2; known: jax bf16 -> bf16, jax bf16 -> fp32, ...
    """
    if not isinstance(library, str):
        raise TypeError(f"cpu(): library must be a string, got {type(library).__name__}")
    if kernels is not None:
        if not isinstance(kernels, str):
            raise TypeError(f"cpu(): kernels must be a string or None, got "
                            f"{type(kernels).__name__}")
        library = f"{library}:{kernels.lower()}"
    name = _lookup(fmt).name
    rows = [r for (lib, f, _o), r in CPU_LIBRARIES.items() if lib == library and f == name]
    if out is not None:
        o = _lookup(out).name
        rows = [r for r in rows if r.out == o]
    elif len(rows) > 1:
        rows = [r for r in rows if r.out == name] or rows[:1]
    if not rows:
        known = ", ".join(f"{lib} {f} -> {o}" for lib, f, o in cpu_libraries())
        want = f"{library} {name}" + (f" -> {_lookup(out).name}" if out is not None else "")
        raise ValueError(f"no CPU row for {want}; known: {known}")
    return CPUGEMM(rows[0], threads)


def cpu_kernel(accumulation: Accumulation, inputs: Any = "fp32", out: Any = None) -> CPUGEMM:
    """A GEMM that sums every output element by one
    :class:`~fpsim.mma.Accumulation`
    (your own kernel's order, or a variation of a library's), as a
    :class:`CPUGEMM`: ``g(A, B)``, ``g(A, B, C)``.  ``inputs``: one format
    or a pair (A's, B's); ``out``: the output format (default: the
    accumulator's).

    >>> import numpy as np
    >>> g = cpu_kernel(Accumulation(lanes=4, join="pairs"), "fp16", "fp32")
    >>> a = np.float16([[1.0, 2.0**-24, 2.0**-24, 2.0**-24, 2.0**-24]])
    >>> float(g(a, np.ones((5, 1), np.float16))[0, 0])   # the small products meet first
    1.0000001192092896
    """
    if not isinstance(accumulation, Accumulation):
        raise TypeError(f"cpu_kernel(): accumulation must be an Accumulation, got "
                        f"{type(accumulation).__name__}")
    fa, fb = (inputs if isinstance(inputs, (tuple, list)) else (inputs, inputs))
    names = (_lookup(fa).name, _lookup(fb).name)
    o = _lookup(out).name if out is not None else accumulation.accumulator
    for n in names + (o,):
        if value_dtype(n) is None:
            raise ValueError(f"cpu_kernel(): {n} has no numpy dtype for its values; accepted: "
                             "fp64, fp32, fp16, bf16 and the FP8/FP6/FP4 formats of ml_dtypes")
    if o not in ("fp64", "fp32", "fp16", "bf16"):
        raise ValueError(f"cpu_kernel(): out={o}; accepted: fp64, fp32, fp16, bf16")
    row = CPULibrary("kernel", names, o, str(accumulation), "stated by the caller",
                     (Part(accumulation, source="cpu_kernel()"),))
    return CPUGEMM(row)
