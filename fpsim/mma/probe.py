"""Probes: read a black-box dot product or GEMM's arithmetic from its outputs
on constructed inputs, and name the GPU model it follows.

:func:`probe` calls ``fn`` on small fixed sets of constructed rows, in the
manner of Fasi, Higham, Mikaitis and Pranesh ("Numerical behavior of NVIDIA
tensor cores", PeerJ CS 2021) and of Khattak and Mikaitis, and recovers the
summation order of the products in the manner of FPRev (Xie et al. 2024).
Each finding keeps the rows that decided it and the outputs they gave.  The
NaN the callable writes for ``inf × 0`` is one (``nan``: the rule of
``MMAParams.nan`` that gives its bits, ``None`` where neither does).

The calling convention is that of an :class:`~fpsim.mma.MMAModel`, so a
preset is itself a valid ``fn``:

* ``shape="rows"`` (default): ``fn(a, b, c) -> d`` with ``a``, ``b`` of
  shape ``(rows, K)`` in the input format's numpy/ml_dtypes dtype (float32
  arrays of exact values for TF32), ``c`` of shape ``(rows,)`` in the
  output format's dtype, and ``d = a·b + c`` along the last axis, shape
  ``(rows,)``, in the output format's dtype.
* ``shape="gemm"``: ``fn(A, B) -> D`` or ``fn(A, B, C) -> D`` with ``A
  (M, K)``, ``B (K, N)``, ``C`` and ``D (M, N)``: ``D = A @ B (+ C)`` (a
  ``torch.mm``-style library call, wrapped to turn tensors into numpy
  arrays).  Shapes are padded with zeros to the smallest multiple the
  callable accepts (found first).  The library stage
  (:mod:`fpsim.mma._probe_gemm`) finds the schedule (split-K slices and
  grain, promotion interval, where ``C`` joins, the output rounding) and
  the instruction presets that, run with it, give every output; with
  ``C``, the instruction's own probes also run, on rows passed as blocks
  whose diagonal holds them.  ``inputs`` may be a pair of FP8 formats
  (``("e4m3", "e5m2")``).

The probe calls ``fn`` with the widest ``K`` it accepts, up to ``max_k``
(or exactly ``k`` when given): a preset refuses a ``K`` beyond its
instruction's ``k``, so its width is its ``k``.

>>> import fpsim.mma as mma
>>> r = mma.probe(mma.preset("a100", "fp16"), "fp16")
>>> r.params.k, r.params.extra_bits, r.params.rounding, r.params.nan
(8, 1, 'rtz', 'all_ones')
>>> "a100" in r.matches
True
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._schedulers import check_seconds
from ..formats import Format
from ..formats import format as _lookup
from ._probe_bits import AlignmentAndRounding, result_bits_of, snap
from ._probe_findings import Finding
from ._probe_gemm import WIDTHS, probe_library
from ._probe_io import SHAPES, Caller, ProbeError, ProbeTimeout, Row, codes_equal, show
from ._probe_join import WhereCJoins
from ._probe_observe import observable
from ._probe_order import WidthAndOrder
from .gemm import LibraryGEMM
from .model import MMAModel
from .params import MMAParams
from .presets import preset as _preset
from .presets import presets as _presets

__all__ = ["probe", "ProbeResult", "Finding", "ProbeError", "ProbeTimeout", "observable"]



@dataclass
class ProbeResult:
    """What :func:`probe` found.

    ``params``: an :class:`MMAParams` reproducing the callable (None when it
    is not a block FMA the parameters describe); ``chained``: the callable
    accepts more than one block of ``params.k`` products and chains them
    (call the model with ``chain=True``); ``order``: the summation tree of
    the products ``p0..`` and ``c`` (see ``fpsim.mma._order`` for the
    notation); ``findings``: every property with its evidence;
    ``reproduces``: whether ``MMAModel(params)`` gives every output the
    callable gave (all probe rows and a seeded random batch); ``matches``:
    the GPUs whose preset for these formats has the same observable
    parameters (:func:`fpsim.mma.probe.observable`).

    With ``shape="gemm"``: ``schedule``: the library schedule found (a dict
    with ``split_k``, ``split_grain``, ``promote_every``, ``block_k``,
    ``split_merge``, ``c_joins``, ``epilogue`` and ``output_rounding``; None
    when no candidate gave every output), and ``matches``: the GPUs whose
    instruction preset, run with that schedule, gives every output;
    ``params`` is that preset's where the instruction's own probes found
    none; ``reproduces``: some candidate gave every output.

    With ``size=(M, K, N)`` (``fpsim/mma/_probe_cpu.py``): ``size``;
    ``gemm``: a callable ``g(A, B)`` (``g(A, B, C)``) that gave every bit
    of the callable at that size on fresh inputs, or None; ``reproduces``:
    whether it did; ``mismatches``: the outputs it missed (-1 where no
    callable was built); ``matches``: the CPU library rows and GPU
    instructions that give every output; ``equivalent``: groups of
    candidates no input tried told apart; ``findings``: ``k_blocks``,
    ``accumulation`` (with the regions) and ``separation``.
    """

    input: str
    output: str
    width: int
    params: MMAParams | None
    chained: bool
    order: str | None
    findings: dict[str, Finding]
    reproduces: bool | None
    mismatches: int
    matches: list[str]
    unobservable: list[str]
    calls: int
    rows: int
    seconds: float
    schedule: dict[str, Any] | None = None
    gemm: Any = None
    equivalent: list[list[str]] | None = None
    size: tuple[int, int, int] | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "input": self.input, "output": self.output, "width": self.width,
            "params": self.params.as_dict() if self.params is not None else None,
            "chained": self.chained, "order": self.order,
            "findings": {k: f.to_dict() for k, f in self.findings.items()},
            "reproduces": self.reproduces, "mismatches": self.mismatches,
            "matches": self.matches, "unobservable": self.unobservable,
            "calls": self.calls, "rows": self.rows, "seconds": round(self.seconds, 3),
            "schedule": self.schedule, "equivalent": self.equivalent,
            "size": list(self.size) if self.size is not None else None,
        }

    def __str__(self) -> str:
        lines = [f"fpsim probe: {self.input} -> {self.output}, called with K = {self.width} "
                 f"({self.calls} calls, {self.rows} rows, {self.seconds:.2f} s)"]
        width = max(len(k) for k in self.findings) if self.findings else 10
        for name, f in self.findings.items():
            value = "-" if f.value is None else str(f.value)
            lines.append(f"  {name.ljust(width)}  {value.ljust(10)}  {f.how}")
        if self.unobservable:
            lines.append(f"  not observable with these formats: {', '.join(self.unobservable)}")
        if self.size is not None:                  # probe(..., size=)
            verdict = ("reproduces every output" if self.reproduces else
                       f"differs from the callable on {self.mismatches} outputs" if
                       self.mismatches >= 0 else "no candidate reproduces the callable")
            lines.append(f"gemm: {verdict}")
            for group in self.equivalent or []:
                lines.append(f"  equivalent at this size: {' | '.join(group[:4])}"
                             + (f" (+{len(group) - 4})" if len(group) > 4 else ""))
            lines.append("matches: " + (", ".join(self.matches) if self.matches else
                                        "no CPU library row"))
            return "\n".join(lines)
        if self.params is None:
            lines.append("model: no block-FMA parameters describe this callable")
        else:
            verdict = ("reproduces every output" if self.reproduces else
                       f"differs from the callable on {self.mismatches} rows")
            chained = (f" (chained: blocks of {self.params.k} of the K = {self.width}, "
                       "call the model with chain=True)" if self.chained else "")
            lines.append(f"model: {_params_text(self.params)}{chained}: {verdict}")
        if self.schedule is not None:
            lines.append("schedule: " + ", ".join(f"{k}={v}" for k, v in self.schedule.items()))
        if self.matches:
            lines.append(f"matches: {', '.join(self.matches)}")
        else:
            lines.append(f"matches: none of the {self.input} -> {self.output} presets")
        return "\n".join(lines)


def _params_text(p: MMAParams) -> str:
    """The parameters that differ from the defaults of a unit with the same
    input, output, k, accumulation and extra bits (where those defaults are
    not a valid unit, e.g. a pairwise tree, which adds c last, the fields
    the accumulation requires are taken from ``p``)."""
    base = dict(k=p.k, accumulation=p.accumulation, extra_bits=p.extra_bits)
    try:
        default = MMAParams(p.input, p.output, **base)
    except ValueError:
        default = MMAParams(p.input, p.output, **base, c_joins=p.c_joins)
    parts = [f"k={p.k}", p.accumulation]
    if p.extra_bits is not None:
        parts.append(f"extra_bits={p.extra_bits}")
    for name, value in p.as_dict().items():
        if name in ("input", "output", "k", "accumulation", "extra_bits"):
            continue
        if value != getattr(default, name):
            parts.append(f"{name}={value}")
    parts.append(f"rounding={p.rounding}")
    return " ".join(dict.fromkeys(parts))


# -- the probe -------------------------------------------------------------------------


def probe(fn: Callable[..., Any], inputs: Any = "fp16", out: Any = "fp32", *,
          shape: str = "rows", k: int | None = None, max_k: int = 64,
          seed: int = 0, timeout: float | None = None,
          size: tuple[int, int, int] | None = None) -> ProbeResult:
    """Probe the dot-product or GEMM callable ``fn`` with inputs in format
    ``inputs`` and output ``out``; returns a :class:`ProbeResult`.

    ``shape``: ``"rows"`` (``fn(a, b, c) -> d``, the convention of
    :class:`~fpsim.mma.MMAModel`) or ``"gemm"`` (``fn(A, B, C) -> D``);
    see the module's docstring.  ``k``: the ``K`` to call ``fn`` with (by
    default the widest it accepts, up to ``max_k``).  ``seed``: of the
    random verification rows.  ``timeout``: seconds one call of ``fn`` may
    take (a positive finite number; default None, no limit); with it, each
    call runs in a daemon thread, and one that does not return in time is
    left running there (a Python thread cannot be stopped) and ends the
    probe with :class:`ProbeTimeout`.

    Errors: an unknown format or ``shape`` (``ValueError`` naming the
    nearest names or what is accepted); ``fn`` raising on a probe's input (:class:`ProbeError`, a
    ``RuntimeError`` naming the probe and its first row, chained from what
    ``fn`` raised: anything but KeyboardInterrupt, ``SystemExit`` and
    ``GeneratorExit`` included); ``fn`` running past ``timeout``
    (:class:`ProbeTimeout`, a ``RuntimeError`` naming the probe); ``fn``
    returning the wrong shape (``ValueError``) or dtype (``TypeError``).

    >>> import math, numpy as np, fpsim.mma as mma
    >>> def dot(a, b, c):      # exact products, exact sum, one rounding to FP32
    ...     A, B = a.astype(float), b.astype(float)
    ...     return np.float32([math.fsum([*A[i] * B[i], c[i]]) for i in range(len(c))])
    >>> r = mma.probe(dot, "fp16", max_k=16)
    >>> r.params.accumulation, r.params.rounding, r.matches
    ('exact', 'rne', [])
    >>> def loop(a, b, c):     # one FP32 addition per product, in order
    ...     acc = c.copy()
    ...     for k in range(a.shape[1]):
    ...         acc = acc + a[:, k].astype(np.float32) * b[:, k].astype(np.float32)
    ...     return acc
    >>> r = mma.probe(loop, "fp16", max_k=4)
    >>> r.order, r.params.k, r.chained, r.params.rounding
    ('((((p0 + c) + p1) + p2) + p3)', 1, True, 'rne')
    """
    if shape not in SHAPES:
        raise ValueError(f"shape={shape!r}; accepted: {', '.join(map(repr, SHAPES))}")
    if size is not None:
        return _probe_at_size(fn, inputs, out, shape, size, seed, timeout)
    fin, fin_b, fout = _formats(fn, inputs, out, shape)
    if fin.width > 32 or fin.precision > 24:
        raise ValueError(f"inputs={fin.name}: the probes take inputs of at most 24 bits of "
                         "precision (fp16, bf16, tf32, e4m3, e5m2, e4m3fnuz, e5m2fnuz, ...)")
    if fout.name not in ("fp32", "fp16", "bf16"):
        raise ValueError(f"out={fout.name}; accepted: fp32, fp16, bf16")
    if k is not None and (not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= 256):
        raise ValueError(f"k must be an int in [1, 256] or None, got {k!r}")
    if not isinstance(max_k, int) or not 1 <= max_k <= 256:
        raise ValueError(f"max_k must be an int in [1, 256], got {max_k!r}")
    if fin_b.width > 32 or fin_b.precision > 24:
        raise ValueError(f"inputs={fin_b.name}: the probes take inputs of at most 24 bits of "
                         "precision")
    timeout = _seconds(timeout)
    start = time.perf_counter()
    run = _Probe(fn, fin, fout, shape, seed, timeout)
    if shape == "gemm":
        run.library(fin_b)
    if shape == "rows":
        run.run(k, max_k)
    elif run.lib["caller"].with_c and fin == fin_b:
        try:
            run.run(k, max_k)
        except ProbeError as exc:  # e.g. a split that refuses short K: the library stage stands
            run.params = None
            run.f["instruction"] = Finding(None, f"its own probes could not run: {exc}")
    return run.result(time.perf_counter() - start)


def _probe_at_size(fn: Callable[..., Any], inputs: Any, out: Any, shape: str, size: Any,
                   seed: int, timeout: float | None) -> ProbeResult:
    """``probe(..., size=(M, K, N))``: :mod:`fpsim.mma._probe_cpu`."""
    from ._probe_cpu import probe_size
    from ._probe_gemm import GemmCaller, takes_c

    if shape != "gemm":
        raise ValueError("size= reads a GEMM at the size given: it needs shape='gemm'")
    if (not isinstance(size, (tuple, list)) or len(size) != 3
            or any(not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 1
                   for v in size)):
        raise ValueError(f"size must be (M, K, N), three positive ints, got {size!r}")
    M, K, N = (int(v) for v in size)
    if M * K * N > 1 << 28:
        raise ValueError(f"size={size!r}: M·K·N = {M * K * N} is above the 2**28 the probe "
                         "simulates (each candidate runs the whole product)")
    fa, fb, fout = _formats(fn, inputs, out, shape)
    for fmt in (fa, fb):
        if fmt.width > 64 or fmt.precision > 53:
            raise ValueError(f"inputs={fmt.name}: formats up to FP64 (53 bits) are accepted")
    if fout.name not in ("fp64", "fp32", "fp16", "bf16"):
        raise ValueError(f"out={fout.name}; accepted with size=: fp64, fp32, fp16, bf16")
    timeout = _seconds(timeout)
    start = time.perf_counter()
    caller = GemmCaller(fn, fa, fb, fout, takes_c(fn), timeout)
    r = probe_size(caller, fa, fb, fout, (M, K, N), seed)
    f = r["findings"]
    return ProbeResult(
        input=fa.name if fa == fb else f"{fa.name} x {fb.name}", output=fout.name, width=K,
        params=None, chained=False, order=None, findings=f, reproduces=r["reproduces"],
        mismatches=r["mismatches"], matches=r["matches"], unobservable=[],
        calls=caller.calls, rows=caller.rows, seconds=time.perf_counter() - start,
        gemm=r["gemm"], equivalent=r["equivalent"], size=(M, K, N))


def _formats(fn: Any, inputs: Any, out: Any, shape: str) -> tuple[Format, Format, Format]:
    """``inputs`` (one format, or a pair (a's, b's) with ``shape="gemm"``)
    and ``out`` as formats, and ``fn`` checked callable."""
    if isinstance(inputs, (tuple, list)):
        if shape != "gemm" or len(inputs) != 2:
            raise ValueError(f"inputs={inputs!r}: a pair (a's, b's) is accepted with "
                             "shape='gemm' only")
        fa, fb = _format(inputs[0], "inputs"), _format(inputs[1], "inputs")
    else:
        fa = fb = _format(inputs, "inputs")
    fout = _format(out, "out")
    if not callable(fn):
        call = "fn(a, b, c) -> d" if shape == "rows" else "fn(A, B, C) -> D"
        raise TypeError(f"fn must be a callable ({call}), got {type(fn).__name__}")
    return fa, fb, fout


def _seconds(timeout: Any) -> float | None:
    """``timeout=``, checked: None or a positive finite number of seconds."""
    if timeout is None:
        return None
    check_seconds(timeout, "timeout", " (or None: no limit)")
    return float(timeout)


def _format(name: Any, what: str) -> Format:
    try:
        return _lookup(name)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{what}: {exc}") from None


class _Probe(WidthAndOrder, AlignmentAndRounding, WhereCJoins):
    """One probing session: the stages in order, each building on the last
    (the stages themselves live in the mixins, by what they find)."""

    def __init__(self, fn: Callable[..., Any], fin: Format, fout: Format, shape: str,
                 seed: int, timeout: float | None = None) -> None:
        self.fin, self.fout = fin, fout
        self.timeout = timeout
        self.caller = Caller(fn, fin, fout, shape, input_subnormals=False, timeout=timeout)
        self.rng = np.random.default_rng(seed)
        self.seed = seed
        self.fin_b = fin
        self.lib: dict[str, Any] | None = None
        self.f: dict[str, Finding] = {}
        self.seen: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        self.width = 0
        self.params: MMAParams | None = None
        self.chained = False
        self.width_limited = False  # the callable refused some K (its width is its own)
        self.order: str | None = None
        # the summation-order (FPRev) call's (a, b, c, d), where it read a tree
        self.order_seen: tuple[np.ndarray, ...] | None = None
        self.reproduces: bool | None = None
        self.mismatches = 0

    # -- calling ------------------------------------------------------------------

    def call(self, rows: Sequence[Row], what: str, keep: bool = True) -> tuple[list[Row],
                                                                              np.ndarray]:
        """Build what can be built of ``rows``, call the callable, remember."""
        built, a, b, c = self.caller.build(rows, self.width, skip=True)
        if not built:
            return [], np.zeros(0)
        d = self.caller.call_arrays(a, b, c, what, built)
        if keep:
            self.seen.append((a, b, c, d))
        return built, d

    def evidence(self, rows: Sequence[Row], d: np.ndarray, pick: Sequence[int] | None = None,
                 limit: int = 4) -> list[dict[str, str]]:
        idx = list(pick) if pick is not None else list(range(len(rows)))
        return [{"input": rows[i].describe() + (f"  ({rows[i].note})" if rows[i].note else ""),
                 "output": show(float(d[i]))} for i in idx[:limit]]

    # -- the stages ---------------------------------------------------------------

    def library(self, fin_b: Format) -> None:
        """The library stage (:mod:`fpsim.mma._probe_gemm`), first: it finds
        the padding every later call uses."""
        self.lib = probe_library(self.caller.fn, self.fin, fin_b, self.fout, self.seed,
                                 self.timeout)
        self.caller.pad = self.lib["caller"].pad
        self.fin_b = fin_b

    def run(self, k: int | None, max_k: int) -> None:
        self.find_width(k, max_k)
        self.sanity()
        self.subnormals()
        self.nan_probe()
        self.zero_sign_probe()
        structure = self.order_probe()
        kind = structure["kind"]
        block = structure["k"]
        if kind == "other" or block is None:
            self.rounding_probe(None)
            return
        self.chained = block < self.width
        if kind == "pairwise":
            rounding = self.rounding_probe(None)
            if rounding is None:
                return
            self.params = MMAParams(self.fin.name, self.fout.name, k=block,
                                    accumulation="pairwise", extra_bits=None, c_joins="last",
                                    rounding=rounding, **self.subnormal_flags())
        elif kind == "exact" or block < 3:
            r_bits = self.result_bits_probe(None, block)
            rounding = self.rounding_probe(r_bits)
            if rounding is None:
                return
            base = MMAParams(self.fin.name, self.fout.name, k=block, accumulation="exact",
                             extra_bits=None, rounding=rounding,
                             result_bits=result_bits_of(r_bits, self.fout),
                             **self.subnormal_flags())
            self.params = self.limited_probe(base)
        else:
            self.aligned_family(block, structure)
        if (self.params is not None and self.chained and self.width_limited
                and self.width % self.params.k == 0 and self.width <= 256):
            # The callable refuses more than `width` products, which hold whole blocks:
            # one instruction issued with K = width, chaining its blocks inside.
            self.params = self.params.replace(issue_k=self.width)
            self.chained = False
        if self.params is not None:
            self.params = self.params.replace(**self.nan_rule())
            self.verify()

    def random_rows(self, n: int, positions: int, full_mantissas: bool, eb: int) -> list[Row]:
        """Seeded random rows near exponent ``eb``: a few nonzero products of
        random significands, random signs, ``c`` random or zero."""
        fin, fout = self.fin, self.fout
        rng = self.rng
        sub = self.caller.subnormals
        lo_e = fin.emin - (fin.mantissa_bits if sub else 0)
        out = []
        for _ in range(n):
            prods: dict[int, Any] = {}
            count = int(rng.integers(1, min(positions, 6) + 1))
            for p in rng.choice(positions, size=count, replace=False):
                ea = int(np.clip(eb // 2 + rng.integers(-8, 9), lo_e, fin.emax - 1))
                eb2 = int(np.clip(eb - ea + rng.integers(-14, 4), lo_e,
                                  min(fin.emax - 1, fout.emax - 12 - ea)))
                ma = 1 + int(rng.integers(0, 1 << fin.mantissa_bits)) / (1 << fin.mantissa_bits)
                mb = 1 + int(rng.integers(0, 1 << fin.mantissa_bits)) / (1 << fin.mantissa_bits)
                a = snap(math.ldexp(ma, ea), fin)
                b = snap(math.ldexp(mb if full_mantissas else 1.0, eb2), fin)
                if rng.random() < 0.5:
                    a = -a
                prods[int(p)] = (a, b)
            c = 0.0
            if rng.random() < 0.7:
                ec = int(np.clip(eb + rng.integers(-30, 6), fout.emin - fout.mantissa_bits,
                                 fout.emax - 4))
                mc = 1 + int(rng.integers(0, 1 << fout.mantissa_bits)) / (1 << fout.mantissa_bits)
                c = snap(math.ldexp(mc, ec), fout) * (1 if rng.random() < 0.5 else -1)
            out.append(Row.of(prods, c, "random"))
        return out

    def verify(self) -> None:
        """The inferred model against every output seen, and a seeded random
        batch across the whole width."""
        assert self.params is not None
        eb = self._scale() - 8
        self.call(self.random_rows(200, positions=self.width, full_mantissas=True, eb=eb),
                  "verification")
        model = MMAModel(self.params)
        bad = 0
        for a, b, c, d in self.seen:
            got = model(self._as_in(a), self._as_in(b), self._as_out(c), chain=self.chained)
            bad += int((~codes_equal(got.astype(np.float64), d)).sum())
        self.reproduces = bad == 0
        self.mismatches = bad

    def _gives_the_order_rows(self, v: dict[str, Any]) -> bool:
        """Whether the library candidate ``v`` (instruction and schedule)
        also gives the outputs the summation-order (FPRev) rows got from the
        callable: a candidate is named only if its own summation tree is the
        one read (a CPU library's chains are not a GPU's tree, though both
        may give the library stage's rows).  True where no tree was read or
        the callable takes no C (the rows pass one)."""
        if self.order_seen is None or self.lib is None or not self.lib["caller"].with_c \
                or self.fin_b != self.fin:
            return True
        a, b, c, d = self.order_seen
        g = LibraryGEMM(v["model"], v["schedule"], self.fout)
        caller = Caller(lambda A, B, C: g(A, B, C), self.fin, self.fout, "gemm")
        caller.pad = self.caller.pad
        try:
            with np.errstate(all="ignore"):
                got = caller.call_arrays(a, b, c, "a candidate on the summation-order rows")
        except (ProbeError, ValueError):
            return False
        return bool(codes_equal(got, d).all())

    def result(self, seconds: float) -> ProbeResult:
        matches: list[str] = []
        unobservable: list[str] = []
        if self.params is not None:
            mine = observable(self.params)
            unobservable = [n for n in self.params.as_dict() if n not in mine]
            if self.reproduces:
                for gpu, i, o in _presets():
                    if (i, o) == (self.fin.name, self.fout.name):
                        unit = _preset(gpu, i, o)
                        # (an FMA-chain unit has no aligned-sum parameters to compare)
                        if isinstance(unit, MMAModel) and observable(unit.params) == mine:
                            matches.append(gpu)
        calls, rows = self.caller.calls, self.caller.rows
        findings, schedule, reproduces, width = self.f, None, self.reproduces, self.width
        params = self.params
        if self.lib is not None:
            lib = self.lib
            calls, rows = calls + lib["caller"].calls, rows + lib["caller"].rows
            findings = {**lib["findings"], **self.f}
            matched = [v for v in lib["matched"] if self._gives_the_order_rows(v)]
            dropped = len(lib["matched"]) - len(matched)
            reproduces = bool(matched)
            if matched:
                first = matched[0]
                schedule = _schedule_dict(first["schedule"], lib["caller"].with_c, self.fout)
                matches = list(dict.fromkeys(g for v in matched
                                             if v["schedule"] == first["schedule"]
                                             for g in v["names"]))
                others = {v["schedule"] for v in matched} - {first["schedule"]}
                params = params if self.reproduces else first["model"].params
                findings["schedule"] = Finding(
                    str(first["schedule"]),
                    f"{len(matched)} of {lib['candidates']} candidates (instruction preset × "
                    "schedule × where C joins × epilogue × output rounding) give every output"
                    + (f"; {len(others)} other schedule(s) also do: "
                       + "; ".join(sorted(map(str, others))) if others else ""))
            else:
                findings["schedule"] = Finding(
                    None, f"none of {lib['candidates']} candidates gives every output: not a "
                          "chained instruction preset with a schedule fpsim describes" + (
                              f" ({dropped} gave the library calls' outputs but not the "
                              "summation-order rows', whose tree they do not have)"
                              if dropped else ""))
            if not width:  # the instruction's probes did not run: the widest call
                width = max(WIDTHS)
        mixed = self.lib is not None and self.fin_b != self.fin
        label = f"{self.fin.name} x {self.fin_b.name}" if mixed else self.fin.name
        return ProbeResult(label, self.fout.name, width, params, self.chained,
                           self.order, findings, reproduces, self.mismatches, matches,
                           unobservable, calls, rows, seconds, schedule)


def _schedule_dict(s: Any, with_c: bool, fout: Format) -> dict[str, Any]:
    """The schedule's fields a probe reports."""
    return {"split_k": s.split_k, "split_grain": s.split_grain if s.split_k > 1 else None,
            "promote_every": s.promote_every, "block_k": s.block_k,
            "split_merge": s.split_merge if s.split_k > 1 else None,
            "c_joins": s.c_joins if with_c else "none (fn takes no C)",
            "epilogue": s.epilogue, "output_rounding": s.output_rounding}
