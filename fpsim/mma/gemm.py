"""The library GEMM engine: an instruction (:class:`~fpsim.mma.MMAModel`)
run along K as a :class:`~fpsim.mma.Schedule` says, and
:class:`LibraryGEMM`, the callable that the library presets
(:mod:`fpsim.mma.library`) return.

Every output element is computed on its own row of ``A`` and column of
``B``, in tiles of output elements (so that a tile's operands, not the whole
M×N×K, are in memory at once).  The instruction's chains are the model's
``chain=True``; every step the schedule adds (promotion, merging of slices,
epilogue) is one operation of :mod:`fpsim.array` rounded by the schedule's
``rounding``, and the conversion into the output format is one
:func:`fpsim.array.convert`.  The unit and the schedule's steps raise no
flags that a caller sees; only the final conversion may (through
``convert``, see :func:`run`).

A NaN the GEMM writes is the unit's (``model.params.nan``, in the output
format): the schedule's steps and its conversion run on the same GPU as the
instruction, and NVIDIA's FP32 arithmetic and conversions write PTX's
canonical NaN whatever NaN came in (``0x7FFFFFFF``; ``0x7FFF`` in FP16 and
BF16, measured on an H100: ``docs/stacks.rst``).  Each step keeps a NaN a
NaN, so the code is given once, to the accumulator that leaves the
schedule and to the output (:func:`run`).

>>> import numpy as np, fpsim.mma as mma
>>> from fpsim.mma import Schedule
>>> x = np.full((1, 256), 1.0, np.float16)
>>> y = np.full((256, 1), 2.0**-14, np.float16); y[0, 0] = 2.0**12
>>> g = mma.LibraryGEMM(mma.preset("h100", "fp16"), Schedule(), "fp32")
>>> float(g(x, y)[0, 0])      # one chain: each 2**-14 is below the grid of 4096 (2**-13)
4096.0
>>> g2 = mma.LibraryGEMM(mma.preset("h100", "fp16"), Schedule(split_k=2), "fp32")
>>> float(g2(x, y)[0, 0])     # the second slice's 128 products sum to 2**-7 on their own
4096.0078125
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import _threads
from .. import array as _array
from ..context import Context
from ..formats import Format
from ..formats import format as _lookup
from . import _args, _tile
from ._finish import unit_nans
from ._inputs import _values, codes_formats
from .model import MMAModel
from .schedule import Schedule

__all__ = ["LibraryGEMM", "run", "run_blocks", "epilogue_numbers"]

# Operand codes of one tile of the row model: (M×N pairs) × K elements for each
# of a and b.
_TILE_ELEMENTS = 1 << 22
# Outputs of one tile of the tile path: at least _TILE_OUTPUTS, and as many
# as make _TILE_PRODUCTS products a block (up to 2 x _TILE_OUTPUTS): the work
# arrays hold k x outputs elements (float64 and int32, a few MB).  Large
# enough that each numpy step outweighs its call (threads then overlap:
# 1.6-1.9x on 2 cores at 512^3, where tiles of 4096 outputs gained nothing),
# the units with fewer products a block taking more outputs (their steps
# per output weigh more).
_TILE_OUTPUTS = 16384
_TILE_PRODUCTS = 1 << 19

Convert = Callable[[np.ndarray, Format, Format], np.ndarray]


def block_model(model: MMAModel, schedule: Schedule) -> MMAModel:
    """The instruction as the schedule issues it: ``block_k`` products per
    block (zero-padded to the unit's block, which aligns the same)."""
    bk = schedule.block_k
    if bk is None or bk == model.k:
        return model
    if bk > model.k:
        raise ValueError(f"block_k={bk} exceeds the instruction's k={model.k} ({model!r}); "
                         f"accepted: block_k <= {model.k}")
    p = model.params
    if p.accumulation == "pairwise" and bk & (bk - 1):
        raise ValueError(f"block_k={bk}: a pairwise unit takes a power of two")
    return MMAModel(p.replace(k=bk, issue_k=None), name=model.name)


def check_schedule(model: MMAModel, schedule: Schedule,
                   K: int) -> tuple[MMAModel, list[tuple[int, int]]]:
    """The instruction as the schedule issues it (:func:`block_model`) and
    the slices of K, after checking that the schedule applies to the model
    (one-line ``ValueError`` naming what is accepted where not)."""
    unit = block_model(model, schedule)
    P = schedule.promote_every
    if P is not None and P % unit.k:
        raise ValueError(f"promote_every={P} is not a multiple of the instruction's k={unit.k} "
                         f"({model!r}); accepted: multiples of {unit.k}")
    return unit, schedule.slices(K) if K else [(0, 0)]


def run(model: MMAModel, schedule: Schedule, a: np.ndarray, b: np.ndarray, out: Format, *,
        c: np.ndarray | None = None, alpha: float = 1.0, beta: float = 0.0,
        scale_a: np.ndarray | None = None, scale_b: np.ndarray | None = None,
        convert: Convert | None = None, workers: int | None = None,
        scheduler: Any = None, timeout: float = 60.0) -> np.ndarray:
    """``D = epilogue(schedule(A @ B), C)`` as codes of ``out`` (M×N).

    ``a``: M×K codes of the model's input format; ``b``: K×N codes of its
    ``b`` format; ``c``: M×N codes of ``out`` (or None); ``scale_a``,
    ``scale_b``: float64 arrays broadcastable to (M, 1) and (1, N), or None;
    ``convert(codes, src, dst)`` does the conversion into ``out`` (default:
    :func:`fpsim.array.convert` rounded by the schedule's
    ``output_rounding``, its NaNs the unit's; a caller's ``convert``, as
    :func:`fpsim.ops.matmul`'s ``out=``, receives the unit's NaN and writes
    its own); ``workers``: threads for the tiles, as
    :func:`fpsim.ops.matmul` takes them (the bits never depend on it).
    ``scheduler``: where blocks of outputs run instead (:func:`run_blocks`;
    ``workers`` is then the number of local Dask workers, ``timeout`` how
    long to wait for a cluster).  Checked by the callers: shapes, formats,
    finiteness of ``alpha``, ``beta`` and the scales.
    """
    m, K = a.shape
    n = b.shape[1]
    unit, slices = check_schedule(model, schedule, K)
    joins = c is not None and beta != 0 and schedule.c_joins == "accumulator"
    if joins and (beta, alpha) != (1, 1):
        raise ValueError("C joins the accumulator in this schedule: alpha and beta must be 1")
    if alpha != 1 and schedule.split_merge == "inplace" and len(slices) > 1:
        raise ValueError("alpha with split_merge='inplace' (applied per slice by CUTLASS's serial "
                         "split-K) is not modelled; accepted: alpha=1")
    if scheduler is not None:
        if convert is not None:
            raise ValueError("scheduler=: the blocks convert into the output by the schedule's "
                             "output_rounding; a caller's convert= is not accepted")
        return run_blocks(model, schedule, a, b, out, c=c, alpha=alpha, beta=beta,
                          scale_a=scale_a, scale_b=scale_b, scheduler=scheduler,
                          workers=workers, timeout=timeout)
    ufmt = model.output_format
    cfmt = ufmt if schedule.compute is None else _lookup(schedule.compute)
    step = Context(rounding=schedule.rounding)
    nans = functools.partial(_unit_nans, model.params)
    if convert is None:
        final = Context(rounding=schedule.output_rounding)

        def convert(x: np.ndarray, s: Format, d: Format) -> np.ndarray:
            return nans(x if s == d else _array.convert(x, s, d, final), d)
    start_c = c if c is not None and schedule.c_joins == "accumulator" else None
    acc = np.zeros((m, n), _array.code_dtype(cfmt))
    if m * n:
        plan = _Plan(unit, a, b, start_c, out)
        pieces = plan.tiles()

        def piece(t: tuple[int, int, int, int]) -> np.ndarray:
            m0, m1, n0, n1 = t
            init = None if start_c is None else start_c[m0:m1, n0:n1].reshape(-1)
            return _accumulate(plan.chain(m0, m1, n0, n1), (m1 - m0) * (n1 - n0), schedule,
                               slices, ufmt, cfmt, out, init, step, convert)

        threads = _threads.thread_count(workers, m * n * K, len(pieces))
        for (m0, m1, n0, n1), d in zip(pieces, _threads.run_pieces(piece, pieces, threads)):
            acc[m0:m1, n0:n1] = d.reshape(m1 - m0, n1 - n0)
    acc = _scale(acc, cfmt, scale_a, scale_b, step)
    return _epilogue(acc, cfmt, out, schedule, c if schedule.c_joins == "epilogue" else None,
                     alpha, beta, step, convert, nans)


def _unit_nans(params: Any, codes: np.ndarray, fmt: Format) -> np.ndarray:
    """``codes`` of ``fmt`` with every NaN the unit's (``params.nan``)."""
    return unit_nans(codes, fmt, params.nan_code(fmt))


# Multiply-adds of one block of outputs that run_blocks hands to a scheduler:
# a few seconds of work on one core (2**30 for a 4096^3 GEMM: 64 blocks).
_BLOCK_MACS = 1 << 30


def run_blocks(model: MMAModel, schedule: Schedule, a: np.ndarray, b: np.ndarray,
               out: Format, *, c: np.ndarray | None = None, alpha: float = 1.0,
               beta: float = 0.0, scale_a: np.ndarray | None = None,
               scale_b: np.ndarray | None = None, scheduler: Any = "local",
               workers: int | None = None, timeout: float = 60.0) -> np.ndarray:
    """:func:`run` on blocks of outputs (about ``_BLOCK_MACS`` = 2**30
    multiply-adds each, every block all of K) spread over a scheduler, as
    the sweeps take it: ``"local"``/``"threads"`` (Dask's threads),
    ``"processes"``, a ``distributed`` scheduler's address
    (``tcp://host:8786``) or a ``distributed.Client``; ``workers``: Dask's
    local workers.  Each output depends on its row of A, its column of B,
    its element of C and its scales alone, so the bits are those of
    :func:`run`, whatever the blocks and wherever they ran
    (``tests/test_mma_gemm.py`` compares them)."""
    from .. import _schedulers

    m, K = a.shape
    n = b.shape[1]
    per = max(_TILE_OUTPUTS, _BLOCK_MACS // max(K, 1))
    bm = min(m, max(1, int(np.sqrt(per))))
    bn = min(n, max(1, per // bm))
    sa = None if scale_a is None else _array.engine.as_array(scale_a).astype(np.float64)
    sb = None if scale_b is None else _array.engine.as_array(scale_b).astype(np.float64)

    def items() -> Any:
        for m0 in range(0, m, bm):
            for n0 in range(0, n, bn):
                m1, n1 = min(m, m0 + bm), min(n, n0 + bn)
                yield ((m0, m1, n0, n1), a[m0:m1], b[:, n0:n1],
                       None if c is None else c[m0:m1, n0:n1],
                       sa if sa is None or sa.ndim == 0 else sa.reshape(-1)[m0:m1],
                       sb if sb is None or sb.ndim == 0 else sb.reshape(-1)[n0:n1])

    d = np.zeros((m, n), _array.code_dtype(out))
    if not m * n:
        return run(model, schedule, a, b, out, c=c, alpha=alpha, beta=beta, scale_a=sa,
                   scale_b=sb)
    work = _schedulers.runner(scheduler, workers, timeout)
    try:
        task = functools.partial(_block, model, schedule, out, alpha, beta)
        for item, codes in work.map(task, items()):
            m0, m1, n0, n1 = item[0]
            d[m0:m1, n0:n1] = codes
    finally:
        work.close()
    return d


def _block(model: MMAModel, schedule: Schedule, out: Format, alpha: float, beta: float,
           item: tuple[Any, ...]) -> np.ndarray:
    """One block of :func:`run_blocks` (module level: it pickles)."""
    _, a, b, c, sa, sb = item
    return run(model, schedule, a, b, out, c=c, alpha=alpha, beta=beta,
               scale_a=None if sa is None else sa.reshape(-1, 1),
               scale_b=None if sb is None else sb.reshape(1, -1), workers=1)


#: Set False to run every GEMM on the row model (the tests compare the two).
TILE_PATH = True


class _Plan:
    """How the output tiles of one GEMM are computed: the tile path
    (:mod:`fpsim.mma._tile`) where it applies and every input is finite,
    else the row model on gathered rows (at most :data:`_TILE_ELEMENTS`
    operand elements a tile)."""

    def __init__(self, unit: MMAModel, a: np.ndarray, b: np.ndarray, c: np.ndarray | None,
                 out: Format) -> None:
        self.unit, self.a, self.b = unit, a, b
        self.fmts = (unit.input_format, unit.input_b_format)
        m, K = a.shape
        n = b.shape[1]
        self.m, self.n, self.K = m, n, K
        self.fast = False
        if TILE_PATH and _tile.applies(unit):
            A = _tile.flush_inputs(_array.decode(np.ascontiguousarray(a.T), self.fmts[0]),
                                   self.fmts[0], unit)  # (K, M)
            B = _tile.flush_inputs(_array.decode(b, self.fmts[1]), self.fmts[1], unit)  # (K, N)
            finite = np.isfinite(A).all() and np.isfinite(B).all()
            if c is not None:
                finite = finite and bool(np.isfinite(_array.decode(c, out)).all())
            if finite:
                self.fast = True
                self.A, self.B = A, B
                self.EA = _tile.exponents(A, self.fmts[0].emin)
                self.EB = _tile.exponents(B, self.fmts[1].emin)
        if not self.fast:
            self.bt = np.ascontiguousarray(b.T)  # (N, K): column n of b as a row

    def tiles(self) -> list[tuple[int, int, int, int]]:
        m, n, K = self.m, self.n, self.K
        if self.fast:  # square-ish tiles: _TILE_PRODUCTS products of a block
            outputs = min(2 * _TILE_OUTPUTS, max(_TILE_OUTPUTS, _TILE_PRODUCTS // self.unit.k))
            tm = min(m, max(1, int(np.sqrt(outputs))))
            tn = min(n, max(1, outputs // tm))
        else:  # whole rows of outputs, as many as fit the operand budget
            per = max(1, _TILE_ELEMENTS // max(K, 1))
            tm, tn = max(1, min(m, per // n)), min(n, per)
        return [(m0, min(m, m0 + tm), n0, min(n, n0 + tn))
                for m0 in range(0, m, tm) for n0 in range(0, n, tn)]

    def chain(self, m0: int, m1: int, n0: int, n1: int) -> Callable[..., np.ndarray]:
        """``chain(lo, hi, c)``: the unit chained over products lo:hi of the
        tile's outputs from ``c`` (codes of the unit's output format, one
        per output in row-major order, or None for +0): codes."""
        unit = self.unit
        ufmt = unit.output_format
        dt = _array.code_dtype(ufmt)
        rows = (m1 - m0) * (n1 - n0)
        if self.fast:
            def fast(lo: int, hi: int, c: np.ndarray | None) -> np.ndarray:
                cv = None if c is None else _array.decode(c, ufmt).reshape(m1 - m0, n1 - n0)
                return _tile.chain_tile(unit, self.A[lo:hi, m0:m1], self.EA[lo:hi, m0:m1],
                                        self.B[lo:hi, n0:n1], self.EB[lo:hi, n0:n1],
                                        cv).reshape(-1).astype(dt, copy=False)
            return fast
        pairs = np.arange(m0, m1)[:, None] * self.n + np.arange(n0, n1)[None, :]
        pairs = pairs.reshape(-1)
        A = self.a[pairs // self.n]
        B = self.bt[pairs % self.n]

        def rows_model(lo: int, hi: int, c: np.ndarray | None) -> np.ndarray:
            d = unit(A[:, lo:hi], B[:, lo:hi], c, fmt=self.fmts, chain=True)
            return d.view(dt).reshape(rows)
        return rows_model


def _accumulate(chain: Callable[..., np.ndarray], rows: int, s: Schedule,
                slices: list[tuple[int, int]], ufmt: Format, cfmt: Format, out: Format,
                init: np.ndarray | None, step: Context, convert: Convert) -> np.ndarray:
    """Steps 1-6 of the schedule on ``rows`` outputs, the unit's chains
    given by ``chain(lo, hi, c)``: codes of ``cfmt``, one per output.
    ``init``: codes of ``out`` the accumulation starts from (C joining the
    accumulator), or None."""

    def run_chain(lo: int, hi: int, c: np.ndarray | None, cf: Format) -> np.ndarray:
        """The unit chained over products lo:hi from c (codes of cf, None: +0),
        as codes of the unit's output format."""
        if c is not None and cf != ufmt:
            c = _array.convert(c, cf, ufmt, step)
        if hi == lo:
            return np.zeros(rows, _array.code_dtype(ufmt)) if c is None else c
        return chain(lo, hi, c)

    def to_compute(x: np.ndarray, src: Format) -> np.ndarray:
        return x if src == cfmt else _array.convert(x, src, cfmt, step)

    start = None if init is None else to_compute(init, out)
    total = None
    for lo, hi in slices:
        if s.promote_every is None:
            part = to_compute(run_chain(lo, hi, start, cfmt), ufmt)
        else:
            part = np.zeros(rows, _array.code_dtype(cfmt)) if start is None else start
            for g0, g1 in s.groups(lo, hi):
                part = _array.add(part, to_compute(run_chain(g0, g1, None, ufmt), ufmt), step,
                                  fmt=cfmt)
        start = None
        if len(slices) == 1:
            return part
        if s.split_merge == "output":
            part = to_compute(convert(part, cfmt, out), out)
        if total is None and not (s.merge_from_zero and s.split_merge != "inplace"):
            total = part
        else:
            if total is None:
                total = np.zeros(rows, _array.code_dtype(cfmt))
            total = _array.add(total, part, step, fmt=cfmt)
        if s.split_merge == "inplace":
            total = to_compute(convert(total, cfmt, out), out)
    assert total is not None
    return total


def _scale(acc: np.ndarray, cfmt: Format, scale_a: np.ndarray | None,
           scale_b: np.ndarray | None, step: Context) -> np.ndarray:
    """The scales applied to ``acc`` in the compute format (see
    :mod:`fpsim.mma.schedule`)."""
    if scale_a is None and scale_b is None:
        return acc
    sa = _array.engine.as_array(1.0 if scale_a is None else scale_a).astype(np.float64)
    sb = _array.engine.as_array(1.0 if scale_b is None else scale_b).astype(np.float64)
    enc = lambda v: _array.encode(np.asarray(v, np.float64), cfmt, step)  # noqa: E731
    if sa.ndim == 0 and sb.ndim == 0:
        both = _array.mul(enc(sa.reshape(())), enc(sb.reshape(())), step, fmt=cfmt)
        return _array.mul(acc, both, step, fmt=cfmt)
    acc = _array.mul(acc, enc(sb.reshape(1, -1)), step, fmt=cfmt)
    return _array.mul(acc, enc(sa.reshape(-1, 1)), step, fmt=cfmt)


def _epilogue(acc: np.ndarray, cfmt: Format, out: Format, s: Schedule, c: np.ndarray | None,
              alpha: float, beta: float, step: Context, convert: Convert,
              nans: Convert) -> np.ndarray:
    """Step 7: ``alpha·acc + beta·C`` and the conversion into ``out``;
    ``nans(codes, fmt)`` gives the unit's NaN to what each conversion takes."""
    if s.epilogue == "output":
        acc, work = convert(nans(acc, cfmt), cfmt, out), out
    else:
        work = cfmt
    enc = lambda v: _array.encode(np.asarray(v, np.float64), work, step)  # noqa: E731
    if c is not None and beta != 0:
        c = c if out == work else _array.convert(c, out, work, step)
    else:
        c = None
    if s.epilogue_order == "beta_c_first":
        if c is None:
            if alpha != 1:
                acc = _array.mul(acc, enc(alpha), step, fmt=work)
        else:
            t = c if beta == 1 else _array.mul(c, enc(beta), step, fmt=work)
            acc = (_array.add(acc, t, step, fmt=work) if alpha == 1
                   else _array.fma(enc(alpha), acc, t, step, fmt=work))
    else:  # alpha_acc_first: z = r(alpha·acc), d = r(beta·C + z), also with beta = 0
        z = acc if alpha == 1 else _array.mul(acc, enc(alpha), step, fmt=work)
        if c is None:
            acc = _array.add(z, enc(0.0), step, fmt=work)
        else:
            acc = (_array.add(c, z, step, fmt=work) if beta == 1
                   else _array.fma(enc(beta), c, z, step, fmt=work))
    return convert(nans(acc, work), work, out)


# -- the callable ----------------------------------------------------------------------


class LibraryGEMM:
    """A library GEMM as a callable: ``g(A, B)``, ``g(A, B, C)``.

    ``model``: the instruction; ``schedule``: a :class:`~fpsim.mma.Schedule`;
    ``out``: the output format (``"fp32"``, ``"fp16"``, ``"bf16"``).
    ``name``: what the call models, in words (the library presets set it).

    ``g(A, B, C=None, *, alpha=1.0, beta=None, scale_a=None, scale_b=None,
    fmt=None)``:

    * ``A`` (M×K) and ``B`` (K×N): arrays of the input formats' dtypes
      (float16, bfloat16, ml_dtypes float8_*; TF32 as float32 arrays of
      exact values), or unsigned integer codes with ``fmt=`` naming the input
      format (a pair ``(a's, b's)`` where they differ).
    * ``C`` (M×N): of the output format (its dtype, or codes with ``fmt=``).
      ``beta`` defaults to 1 with ``C`` and 0 without it.
    * ``alpha``, ``beta``: numbers exact in the compute format.
    * ``scale_a``, ``scale_b``: FP8 scales, per tensor (numbers) or per row
      of ``A`` (shape (M, 1) or (M,)) and per column of ``B`` ((1, N) or
      (N,)); values exact in FP32.
    * Returns D (M×N) in the output format's dtype, or codes when ``A`` and
      ``B`` came as codes.
    * ``workers``: threads for the output tiles (None: every CPU for large
      GEMMs; the bits never depend on it).
    * ``scheduler``: run blocks of outputs on Dask instead, with the options
      the sweeps take: ``"local"`` (threads), ``"processes"``, a scheduler's
      address such as ``"tcp://127.0.0.1:8786"`` or a ``distributed.Client``
      (``workers``: Dask's local workers; ``timeout``: seconds to reach a
      cluster).  Same bits (:func:`fpsim.mma.gemm.run_blocks`); needs
      ``fpsim[dask]``.

    >>> import numpy as np, fpsim.mma as mma
    >>> g = mma.cublas("h100", "fp16", out="fp16")
    >>> x = np.float16([[1.0, 2.0**-11]])
    >>> g(x, np.float16([[1.0], [1.0]]), np.float16([[2.0**-11]]))  # two roundings: to FP16, + C
    array([[1.]], dtype=float16)
    """

    def __init__(self, model: MMAModel, schedule: Schedule, out: Any = "fp32",
                 name: str | None = None) -> None:
        if not isinstance(model, MMAModel):
            raise TypeError(f"model must be an MMAModel, got {type(model).__name__}")
        if not isinstance(schedule, Schedule):
            raise TypeError(f"schedule must be a Schedule, got {type(schedule).__name__}")
        fout = _lookup(out)
        if fout.name not in ("fp32", "fp16", "bf16"):
            raise ValueError(f"out={fout.name}; accepted: fp32, fp16, bf16")
        check_schedule(model, schedule, 0)  # a block_k or promotion the unit cannot take
        self.model, self.schedule, self.out, self.name = model, schedule, fout, name

    def __repr__(self) -> str:
        label = self.name or f"{self.model!r} -> {self.out.name}"
        return f"<LibraryGEMM {label}: {self.schedule}>"

    def __call__(self, A: Any, B: Any, C: Any = None, *, alpha: Any = 1.0, beta: Any = None,
                 scale_a: Any = None, scale_b: Any = None, fmt: Any = None,
                 workers: int | None = None, scheduler: Any = None,
                 timeout: float = 60.0) -> np.ndarray:
        if scheduler is None:
            _threads.check_workers("LibraryGEMM", workers)
        model = self.model
        fa, fb = model.input_format, model.input_b_format
        codes = codes_formats(fmt, fa, fb) is not None
        a = _operand(A, fa, "A", codes)
        b = _operand(B, fb, "B", codes)
        if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
            raise ValueError(f"A must be M×K and B K×N; got shapes {a.shape} and {b.shape}")
        m, n = a.shape[0], b.shape[1]
        _array.engine.check_size("LibraryGEMM", (m, n), 8, "the output")  # its float64 sums
        c = None if C is None else _addend(C, self.out, (m, n), codes)
        alpha, beta = epilogue_numbers(alpha, beta, C is not None)
        sa, sb = _scales(scale_a, scale_b, m, n, fa, fb)
        if sa is not None and alpha != 1:
            raise ValueError("alpha with scale_a/scale_b: how cuBLASLt combines them is not "
                             "measured; fold alpha into scale_a")
        d = run(model, self.schedule, a, b, self.out, c=c, alpha=alpha, beta=beta,
                scale_a=sa, scale_b=sb, workers=workers, scheduler=scheduler, timeout=timeout)
        dt = _array.value_dtype(self.out)
        return d if codes or dt is None else d.view(dt)


def _operand(x: Any, fmt: Format, label: str, codes: bool) -> np.ndarray:
    """Codes of ``fmt`` for an operand given as values or as codes."""
    a = _array.engine.as_array(x)
    _array.engine.check_size("LibraryGEMM", a.shape, 8, label)  # as float64, before any work
    if codes:
        if a.dtype.kind not in "iu":
            raise TypeError(f"{label}: fmt= says integer codes of {fmt.name}, got dtype {a.dtype}")
        _array.engine.check_codes(a, fmt, label)
        return a.astype(_array.code_dtype(fmt), copy=False)
    values = _values(a, fmt, label, False)  # checks the dtype (and TF32's exactness)
    if _array.value_dtype(fmt) is not None:
        return _array.engine.raw_codes(a, fmt)
    return _array.encode(values, fmt, Context())  # exact: no rounding, no flag


def _addend(C: Any, out: Format, shape: tuple[int, int], codes: bool) -> np.ndarray:
    c = _array.engine.as_array(C)
    if c.dtype.kind in "iu":
        if not codes:
            raise TypeError(f"C: integer array given without fmt=; accepted: arrays of dtype "
                            f"{_array.value_dtype(out)} (the output format {out.name})")
        _array.engine.check_codes(c, out, "C")
        c = c.astype(_array.code_dtype(out), copy=False)
    else:
        dt = _array.value_dtype(out)
        if c.dtype.newbyteorder("=") != dt:
            raise TypeError(f"C: dtype {c.dtype} is not the output format {out.name}; accepted: "
                            f"arrays of dtype {dt}")
        c = _array.engine.raw_codes(c, out)
    if c.shape != shape:
        raise ValueError(f"C must have shape {shape} (M×N); got {c.shape}")
    return c


def epilogue_numbers(alpha: Any, beta: Any, has_c: bool, owner: str = "LibraryGEMM"
                     ) -> tuple[float, float]:
    """``alpha`` and ``beta`` checked (finite real numbers, by the rule of
    every number here, ``fpsim.mma._args.number``; ``beta`` None means 1
    with C and 0 without; a nonzero ``beta`` needs C), as floats.

    >>> epilogue_numbers(2, None, True)
    (2.0, 1.0)
    """
    out = [_args.number(owner, name, x) for name, x in (
        ("alpha", alpha), ("beta", (1.0 if has_c else 0.0) if beta is None else beta))]
    if not has_c and out[1] != 0:
        raise ValueError(f"{owner}: beta={beta!r} without C; pass C (M×N) or drop beta")
    return out[0], out[1]


def _scales(scale_a: Any, scale_b: Any, m: int, n: int, fa: Format,
            fb: Format) -> tuple[np.ndarray | None, np.ndarray | None]:
    if scale_a is None and scale_b is None:
        return None, None
    if fa.width > 8 or fb.width > 8:
        raise ValueError(f"scale_a/scale_b apply to FP8 inputs (torch._scaled_mm); the inputs "
                         f"are {fa.name} and {fb.name}")
    out, kinds = [], []
    for x, label, rows in ((scale_a, "scale_a", m), (scale_b, "scale_b", n)):
        # (a string, a bool or a complex number is no scale: refused, not read as a number)
        v = np.asarray(1.0) if x is None else _args.number_array("LibraryGEMM", label, x)
        kinds.append(v.ndim == 0)
        if v.ndim and v.reshape(-1).shape != (rows,):
            want = "(M, 1) or (M,)" if label == "scale_a" else "(1, N) or (N,)"
            raise ValueError(f"{label} has shape {v.shape}; accepted: a number (per tensor) or "
                             f"shape {want}")
        if not np.isfinite(v).all() or (v.astype(np.float32).astype(np.float64) != v).any():
            raise ValueError(f"{label}: values must be finite and exact in FP32")
        out.append(v)
    sa, sb = out
    if kinds[0] != kinds[1]:
        raise ValueError("scale_a and scale_b must both be per tensor (numbers) or both per "
                         "row/column (shapes (M, 1) and (1, N)): the mixed case is not measured")
    return sa, sb
