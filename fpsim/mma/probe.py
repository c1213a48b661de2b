"""Probes: read a black-box dot product or GEMM's arithmetic from its outputs
on constructed inputs, and name the GPU model it follows.

:func:`probe` calls ``fn`` on small fixed sets of constructed rows, in the
manner of Fasi, Higham, Mikaitis and Pranesh ("Numerical behavior of NVIDIA
tensor cores", PeerJ CS 2021) and of Khattak and Mikaitis, and recovers the
summation order of the products in the manner of FPRev (Xie et al. 2024).
Each finding keeps the rows that decided it and the outputs they gave.

The calling convention is that of an :class:`~fpsim.mma.MMAModel`, so a
preset is itself a valid ``fn``:

* ``shape="rows"`` (default): ``fn(a, b, c) -> d`` with ``a``, ``b`` of
  shape ``(rows, K)`` in the input format's numpy/ml_dtypes dtype (float32
  arrays of exact values for TF32), ``c`` of shape ``(rows,)`` in the
  output format's dtype, and ``d = a·b + c`` along the last axis, shape
  ``(rows,)``, in the output format's dtype.
* ``shape="gemm"``: ``fn(A, B, C) -> D`` with ``A (M, K)``, ``B (K, N)``,
  ``C`` and ``D (M, N)``: ``D = A @ B + C`` (a ``torch.matmul``-style
  kernel, wrapped to turn tensors into numpy arrays).  The probe passes its
  rows as 16×16 blocks and reads the diagonal.

The probe calls ``fn`` with the widest ``K`` it accepts, up to ``max_k``
(or exactly ``k`` when given): a preset refuses a ``K`` beyond its
instruction's ``k``, so its width is its ``k``.

>>> import fpsim.mma as mma
>>> r = mma.probe(mma.preset("a100", "fp16"), "fp16")
>>> r.params.k, r.params.extra_bits, r.params.rounding
(8, 1, 'rtz')
>>> "a100" in r.matches
True
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..formats import Format
from ..formats import format as _lookup
from . import _order
from ._probe_io import SHAPES, Caller, ProbeError, Row, codes_equal, show, to_dtype
from .model import MMAModel
from .params import ALIGN_FRACTION_BITS, MMAParams
from .presets import preset as _preset
from .presets import presets as _presets

__all__ = ["probe", "ProbeResult", "Finding", "ProbeError", "observable"]

_ROUNDINGS = ("rtz", "rne", "rup", "rdn")
_MAX_TERM_DEPTH = 40  # deepest alignment bit the extra-bits probe looks for


@dataclass
class Finding:
    """One inferred property: its ``value``, ``how`` it was decided (in
    words), and ``evidence``: constructed rows (``input``) with the
    callable's ``output``, a few of those that decided it."""

    value: Any
    how: str
    evidence: list[dict[str, str]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        value = self.value
        if isinstance(value, tuple):
            value = list(value)
        return {"value": value, "how": self.how, "evidence": self.evidence}


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
        if self.params is None:
            lines.append("model: no block-FMA parameters describe this callable")
        else:
            verdict = ("reproduces every output" if self.reproduces else
                       f"differs from the callable on {self.mismatches} rows")
            chained = (f" (chained: blocks of {self.params.k} of the K = {self.width}, "
                       "call the model with chain=True)" if self.chained else "")
            lines.append(f"model: {_params_text(self.params)}{chained}: {verdict}")
        if self.matches:
            lines.append(f"matches: {', '.join(self.matches)}")
        else:
            lines.append(f"matches: none of the {self.input} -> {self.output} presets")
        return "\n".join(lines)


def _params_text(p: MMAParams) -> str:
    default = MMAParams(p.input, p.output, k=p.k, accumulation=p.accumulation,
                        extra_bits=p.extra_bits)
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


# -- observability ---------------------------------------------------------------------


def _c_min_exponent(fout: Format) -> int:
    """Exponent of the smallest nonzero ``c`` as the unit reads it (FP32's
    floor of -126 applies)."""
    return max(fout.emin - fout.mantissa_bits, -126)


def _align_floor(p: MMAParams) -> int:
    """The largest ``min_align_exponent`` that no input can tell from None:
    a bound has an effect only on a row whose terms are all below it and
    one of which has a bit below the grid it sets (products: exponents from
    twice the input's ``emin``, bits from twice its smallest subnormal's;
    ``c``: exponent from -126, or FP16's smallest subnormal, bits from the
    output's smallest subnormal), and only where the result's bits reach the
    output (its smallest subnormal, or smallest normal without subnormals)."""
    fin, fout = p.input_format, p.output_format
    F = p.fraction_bits
    products = max(2 * fin.emin, 2 * (fin.emin - fin.mantissa_bits) + F)
    c = max(_c_min_exponent(fout), fout.emin - fout.mantissa_bits + F)
    vis = fout.emin - fout.mantissa_bits + 1 if p.output_subnormals else fout.emin
    return max(vis, min(products, c))


def observable(params: MMAParams) -> dict[str, Any]:
    """The parameters that some input can tell apart, in canonical form.

    Two parameter sets with equal ``observable`` dicts give the same output
    on every input the formats can express (as far as the probes know).
    Left out, and why:

    * ``extra_bits``, ``sticky_bit``, ``normalize_products``,
      ``min_align_exponent``: only for ``aligned`` and ``odd_even``.
    * ``c_joins``: not for ``exact`` (the sum is exact either way); fixed for
      ``odd_even`` and ``pairwise``.
    * ``late_extra_bits``, ``align_rounding``: only when ``c`` joins late
      (``c_joins="last"`` with ``aligned``, or ``odd_even``).
    * ``min_align_exponent``: ``None`` when no row can have all its terms
      below it with a visible effect: all terms below it, one with a bit
      below the grid it sets, and bits that reach the output (the rule is
      ``_align_floor``).  FP16 and FP8 inputs with FP32 output never see
      Hopper's -133; BF16 and TF32 inputs do, and so do FP16 inputs with
      FP16 output Blackwell's -15.
    * ``zero_c_at_emin``: only with a late join and inputs whose products
      can be below ``2**-126`` (BF16, TF32).
    * ``products_limited``: only when a product can reach
      ``2**(emax + 1)`` of the output, and not for ``pairwise`` (whose
      products are rounded to the output first, which overflows the same
      way).
    * ``result_bits``: ``None`` when it is the output's own width.

    >>> import fpsim.mma as mma
    >>> o = observable(mma.preset("h100", "fp16").params)
    >>> o["min_align_exponent"], o["extra_bits"]
    (None, 2)
    >>> observable(mma.preset("h100", "bf16").params)["min_align_exponent"]
    -133
    """
    p = params
    fin, fout = p.input_format, p.output_format
    out: dict[str, Any] = {
        "input": p.input, "input_b": p.input_b, "output": p.output, "k": p.k,
        "issue_k": p.issue_k, "accumulation": p.accumulation,
        "rounding": p.rounding, "input_subnormals": p.input_subnormals,
        "output_subnormals": p.output_subnormals,
    }
    aligns = p.accumulation in ("aligned", "odd_even")
    late = (p.accumulation == "aligned" and p.c_joins == "last") or p.accumulation == "odd_even"
    if aligns:
        out["extra_bits"] = p.extra_bits
        out["sticky_bit"] = p.sticky_bit
        out["normalize_products"] = p.normalize_products
        m = p.min_align_exponent
        out["min_align_exponent"] = m if m is not None and m > _align_floor(p) else None
    if p.accumulation == "aligned":
        out["c_joins"] = p.c_joins
    if late:
        out["late_extra_bits"] = p.late_extra_bits
        out["align_rounding"] = p.align_rounding
        if 2 * fin.emin < -126:
            out["zero_c_at_emin"] = p.zero_c_at_emin
    if p.accumulation != "pairwise" and 2 * fin.emax + 2 > fout.emax + 1:
        out["products_limited"] = p.products_limited
    if p.accumulation != "pairwise":
        r = p.result_bits
        out["result_bits"] = None if r is None or r >= fout.mantissa_bits else r
    return out


# -- the probe -------------------------------------------------------------------------


def probe(fn: Callable[..., Any], inputs: Any = "fp16", out: Any = "fp32", *,
          shape: str = "rows", k: int | None = None, max_k: int = 64,
          seed: int = 0) -> ProbeResult:
    """Probe the dot-product or GEMM callable ``fn`` with inputs in format
    ``inputs`` and output ``out``; returns a :class:`ProbeResult`.

    ``shape``: ``"rows"`` (``fn(a, b, c) -> d``, the convention of
    :class:`~fpsim.mma.MMAModel`) or ``"gemm"`` (``fn(A, B, C) -> D``);
    see the module's docstring.  ``k``: the ``K`` to call ``fn`` with (by
    default the widest it accepts, up to ``max_k``).  ``seed``: of the
    random verification rows.

    Errors: an unknown format or ``shape`` (``ValueError`` listing what is
    accepted); ``fn`` raising on a probe's input (:class:`ProbeError`, a
    ``RuntimeError`` naming the probe and its first row); ``fn`` returning
    the wrong shape (``ValueError``) or dtype (``TypeError``).

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
    fin = _format(inputs, "inputs")
    fout = _format(out, "out")
    if shape not in SHAPES:
        raise ValueError(f"shape={shape!r}; accepted: {', '.join(map(repr, SHAPES))}")
    if not callable(fn):
        raise TypeError(f"fn must be a callable (fn(a, b, c) -> d), got {type(fn).__name__}")
    if fin.width > 32 or fin.precision > 24:
        raise ValueError(f"inputs={fin.name}: the probes take inputs of at most 24 bits of "
                         "precision (fp16, bf16, tf32, e4m3, e5m2, e4m3fnuz, e5m2fnuz, ...)")
    if fout.name not in ("fp32", "fp16", "bf16"):
        raise ValueError(f"out={fout.name}; accepted: fp32, fp16, bf16")
    if k is not None and (not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= 256):
        raise ValueError(f"k must be an int in [1, 256] or None, got {k!r}")
    if not isinstance(max_k, int) or not 1 <= max_k <= 256:
        raise ValueError(f"max_k must be an int in [1, 256], got {max_k!r}")
    start = time.perf_counter()
    run = _Probe(fn, fin, fout, shape, seed)
    run.run(k, max_k)
    return run.result(time.perf_counter() - start)


def _format(name: Any, what: str) -> Format:
    try:
        return _lookup(name)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{what}: {exc}") from None


class _Probe:
    """One probing session: the stages in order, each building on the last."""

    def __init__(self, fn: Callable[..., Any], fin: Format, fout: Format, shape: str,
                 seed: int) -> None:
        self.fin, self.fout = fin, fout
        self.caller = Caller(fn, fin, fout, shape, input_subnormals=False)
        self.rng = np.random.default_rng(seed)
        self.f: dict[str, Finding] = {}
        self.seen: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        self.width = 0
        self.params: MMAParams | None = None
        self.chained = False
        self.width_limited = False  # the callable refused some K (its width is its own)
        self.order: str | None = None
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

    def run(self, k: int | None, max_k: int) -> None:
        self.find_width(k, max_k)
        self.sanity()
        self.subnormals()
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
                             result_bits=_result_bits(r_bits, self.fout),
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
            self.verify()

    def find_width(self, k: int | None, max_k: int) -> None:
        row = [Row.of({0: 1.0}, 0.0)]

        def accepts(K: int) -> str | None:
            self.width = K
            try:
                self.call(row, "call width", keep=False)
            except ProbeError as exc:
                cause = exc.__cause__ or exc
                return f"{type(cause).__name__}: {cause}"
            return None

        if k is not None:
            err = accepts(k)
            if err is not None:
                raise ProbeError(f"the callable {self.caller.name!r} raised at K={k}: {err}")
            self.f["width"] = Finding(k, f"K = {k} as given")
            return
        err = accepts(max_k)
        if err is None:
            self.f["width"] = Finding(max_k, f"accepts K = {max_k} (the largest tried)")
            return
        refused, why = max_k, err
        self.width_limited = True
        first = accepts(1)
        if first is not None:
            raise ProbeError(f"the callable {self.caller.name!r} raised at every K tried "
                             f"(K=1: {first})")
        good = 1
        while good * 2 < refused:
            e = accepts(good * 2)
            if e is None:
                good *= 2
            else:
                refused, why = good * 2, e
                break
        while refused - good > 1:
            mid = (good + refused) // 2
            e = accepts(mid)
            if e is None:
                good = mid
            else:
                refused, why = mid, e
        self.width = good
        self.f["width"] = Finding(good, f"accepts K = {good}; K = {refused} raised: "
                                  f"{why.splitlines()[0][:160]}")

    def sanity(self) -> None:
        W = self.width
        rows = [Row.of({0: 2.0}, 0.0), Row.of({0: (2.0, 3.0)}, 1.0), Row.of({}, 1.0),
                Row.of({W - 1: 1.0}, 0.0), Row.of({i: 1.0 for i in range(W)}, 0.0)]
        want = [2.0, 7.0, 1.0, 1.0, float(W)]
        rows, d = self.call(rows, "sanity")
        for r, got, w in zip(rows, d, want):
            if got != w:
                raise ProbeError(f"the callable {self.caller.name!r} does not compute a·b + c "
                                 f"along the last axis: the row {r.describe()} gave "
                                 f"{show(float(got))}, not {show(w)}; the probe needs "
                                 f"fn(a, b, c) = sum_k a[:, k]*b[:, k] + c")

    def subnormals(self) -> None:
        fin, fout = self.fin, self.fout
        tiny = math.ldexp(1.0, fin.emin - fin.mantissa_bits)
        big = math.ldexp(1.0, fin.emax - 1)
        rows = [Row.of({0: (tiny, big)}, 0.0, "a subnormal"),
                Row.of({0: (big, tiny)}, 0.0, "b subnormal")]
        self.caller.subnormals = True
        rows, d = self.call(rows, "subnormal inputs")
        want = tiny * big
        if all(x == want for x in d):
            value, how = True, "a subnormal a or b times a power of two gives the exact product"
        elif all(x == 0 for x in d):
            value, how = False, "a subnormal a or b gives 0: subnormal inputs read as zero"
        else:
            value, how = None, "inconsistent: subnormal a and b treated differently"
        self.f["input_subnormals"] = Finding(value, how, self.evidence(rows, d))
        self.caller.subnormals = bool(value)
        c = 3 * math.ldexp(1.0, fout.emin - 2)
        rows, d = self.call([Row.of({}, c, "c subnormal, no products")], "subnormal outputs")
        if d[0] == c:
            value, how = True, "a subnormal c with zero products comes back unchanged"
        elif d[0] == 0:
            value, how = False, "a subnormal c with zero products gives 0 (flushed)"
        else:
            value, how = None, "a subnormal c with zero products gave another value"
        self.f["output_subnormals"] = Finding(value, how, self.evidence(rows, d))

    def subnormal_flags(self) -> dict[str, bool]:
        return {"input_subnormals": self.f["input_subnormals"].value is not False,
                "output_subnormals": self.f["output_subnormals"].value is not False}

    # -- product range helpers ----------------------------------------------------

    def prod_lo(self) -> int:
        """Exponent of the smallest power-of-two product."""
        fin = self.fin
        return 2 * (fin.emin - (fin.mantissa_bits if self.caller.subnormals else 0))

    def prod_hi(self) -> int:
        return 2 * self.fin.emax

    def order_probe(self) -> dict[str, Any]:
        W, fout = self.width, self.fout
        eM = min(self.prod_hi(), fout.emax - 2)
        eu = max(self.prod_lo(), fout.emin)
        M, u = math.ldexp(1.0, eM), math.ldexp(1.0, eu)
        L = W + 1
        pairs = [(i, j) for i in range(L) for j in range(i + 1, L)]
        rows = []
        for i, j in pairs:
            prods = {p: u for p in range(W)}
            c = u
            for leaf, v in ((i, M), (j, -M)):
                if leaf == W:
                    c = v
                else:
                    prods[leaf] = v
            rows.append(Row.of(prods, c, f"+M at {_leaf(i, W)}, -M at {_leaf(j, W)}"))
        rows, d = self.call(rows, "summation order")
        size: dict[tuple[int, int], int] = {}
        bad = None
        # A unit with a sticky bit leaves, for each absorbed unit, one unit of
        # its grid far above u: the count is what lies below 2**7 u.
        residue = math.ldexp(1.0, eu + 7)
        for (i, j), x in zip(pairs, d):
            n = x / u
            if math.isfinite(n) and n > L - 2:
                n = math.fmod(x, residue) / u
            if not (math.isfinite(n) and n == int(n) and 0 <= n <= L - 2):
                bad = (i, j, x)
                break
            size[i, j] = L - int(n)
        how = (f"FPRev: for each pair of leaves, +M = {show(M)} and -M there and u = {show(u)} "
               "elsewhere; the u that survive count the leaves outside the pair's lowest "
               "common ancestor")
        tree = None if bad is not None else _order.build(size, L)
        if tree is None:
            why = ("a result that is not a count of surviving units"
                   if bad is not None else "no tree has these subtree sizes")
            self.f["order"] = Finding(None, f"{how}; not a summation tree: {why}",
                                      self.evidence(rows, d, limit=3))
            return {"kind": "other", "k": None}
        self.order = _order.render(tree, W)
        structure = _classify(tree, W)
        self.f["order"] = Finding(self.order, how, self.evidence(rows, d, limit=2))
        self.f["structure"] = Finding(structure["kind"], structure["how"])
        if structure["k"] is not None:
            self.f["k"] = Finding(structure["k"], structure["k_how"])
        return structure

    def rounding_probe(self, r_bits: int | None) -> str | None:
        """Ties at the result's last bit, both signs, even and odd: the
        four rounding modes send them four different ways."""
        fout = self.fout
        r = fout.mantissa_bits if r_bits is None else r_bits
        U = math.ldexp(1.0, 1 - r)  # ulp of the sum 2 + ...
        rows = []
        for sign in (1.0, -1.0):
            for odd in (0, 1):
                c = sign * (1 + odd * U + U / 2)
                rows.append(Row.of({0: sign * 1.0}, c, f"{'odd' if odd else 'even'} tie"))
        rows, d = self.call(rows, "rounding")
        dirs = []
        for r_, x in zip(rows, d):
            exact = r_.products[0][1] + r_.c
            lo = math.copysign(abs(exact) - U / 2, exact)
            hi = math.copysign(abs(exact) + U / 2, exact)
            dirs.append("down" if x == lo else "up" if x == hi else "?")
        table = {"rtz": ["down"] * 4, "rne": ["down", "up", "down", "up"],
                 "rup": ["up", "up", "down", "down"], "rdn": ["down", "down", "up", "up"]}
        mode = next((m for m, pat in table.items() if pat == dirs), None)
        how = ("ties 2 + ulp/2 (even), 2 + 3ulp/2 (odd) and their negatives went "
               f"{'/'.join(dirs)} in magnitude")
        if mode is None and dirs == ["up"] * 4:
            how += ": ties away from zero, not one of rtz, rne, rup, rdn"
        self.f["rounding"] = Finding(mode, how, self.evidence(rows, d))
        return mode

    def result_bits_probe(self, F: int | None, block: int) -> int | None:
        """Sums exact in the alignment: ``n = 2**j`` copies of ``2**e`` and
        one ``2**(e-t)``: the output keeps the bit ``j + t`` below its
        leading one iff the result has that many fraction bits."""
        fout = self.fout
        e = min(self.prod_hi(), fout.emax - 8) - 6
        depth = fout.mantissa_bits + 1
        jmax = max(0, int(math.log2(max(block - 1, 1))))
        rows = []
        for j in range(jmax + 1):
            for t in range(1, (F if F is not None else depth) + 1):
                if j + t > depth:
                    break
                prods = {p: math.ldexp(1.0, e) for p in range(2 ** j)}
                prods[2 ** j] = math.ldexp(1.0, e - t)
                rows.append(Row.of(prods, 0.0, f"bit {j + t}"))
        rows, d = self.call(rows, "result bits")
        exact_bits, lost_bits = set(), set()
        for r, x in zip(rows, d):
            bit = int(r.note.split()[1])
            want = sum(v for _, v in r.products)
            (exact_bits if x == want else lost_bits).add(bit)
        if not rows:
            return None
        kept = max((b for b in exact_bits if all(c in exact_bits for c in range(1, b + 1))),
                   default=0)
        if lost_bits and min(lost_bits) <= kept:
            how = "irregular: some bits kept below a lost one"
        elif not lost_bits:
            kept_text = "the output's own" if kept >= fout.mantissa_bits else f"at least {kept}"
            how = f"every bit up to {kept} below the leading one kept: {kept_text}"
        else:
            how = f"bits 1..{kept} below the leading one kept, bit {kept + 1} lost"
        value = kept if lost_bits else (kept if kept < fout.mantissa_bits else None)
        pick = [i for i, r in enumerate(rows) if int(r.note.split()[1]) in (kept, kept + 1)]
        self.f["result_bits"] = Finding(_result_bits(value, fout), how,
                                        self.evidence(rows, d, pick))
        return value

    def extra_bits_probe(self) -> tuple[int | None, bool]:
        """``+2**e``, ``-2**e`` and ``2**(e-t)`` for t = 1, 2, ...: the small
        term survives the alignment to ``2**e`` iff ``t <= 23 + extra_bits``
        (with a sticky bit, one step more, and beyond it the sticky unit)."""
        fout = self.fout
        e = min(self.prod_hi(), fout.emax - 4)
        floor = fout.emin if not self.f["output_subnormals"].value else (
            fout.emin - fout.mantissa_bits)
        lowest = max(self.prod_lo(), floor)
        ts = [t for t in range(1, _MAX_TERM_DEPTH + 1) if e - t >= lowest]
        rows = [Row.of({0: math.ldexp(1.0, e), 1: -math.ldexp(1.0, e),
                        2: math.ldexp(1.0, e - t)}, 0.0, f"t={t}") for t in ts]
        rows, d = self.call(rows, "extra alignment bits")
        kept = [x == math.ldexp(1.0, e - t) for t, x in zip(ts, d)]
        T = 0
        while T < len(kept) and kept[T]:
            T += 1
        if T == len(kept):
            self.f["extra_bits"] = Finding(None, f"every term down to 2^-{ts[-1] if ts else 0} "
                                           "relative survives: beyond the probe's range",
                                           self.evidence(rows, d, [len(rows) - 1]))
            return None, False
        rest = d[T:]
        last = ts[T - 1] if T else 0
        if all(x == 0 for x in rest):
            F, sticky = last, False
            how = (f"+2^e, -2^e, 2^(e-t): the small term survives for t <= {F}, gives 0 beyond: "
                   f"{F} bits below the largest exponent")
        elif T and all(x == math.ldexp(1.0, e - last) for x in rest):
            F, sticky = last - 1, True
            how = (f"+2^e, -2^e, 2^(e-t): exact for t <= {last}, then always 2^(e-{last}): "
                   f"{F} bits and a sticky bit")
        else:
            self.f["extra_bits"] = Finding(None, "irregular survival of small terms",
                                           self.evidence(rows, d, list(range(T, T + 3))))
            return None, False
        pick = [max(T - 1, 0), T]
        self.f["extra_bits"] = Finding(F - ALIGN_FRACTION_BITS, how, self.evidence(rows, d, pick))
        self.f["sticky_bit"] = Finding(sticky, "from the same rows: " + (
            "a cut term leaves one unit below the grid" if sticky else "a cut term leaves nothing"))
        return F, sticky

    # -- model-based refinement -----------------------------------------------------

    def eliminate(self, base: MMAParams, candidates: list[dict[str, Any]],
                  rows: Sequence[Row], what: str) -> tuple[list[dict[str, Any]], list[Row],
                                                           np.ndarray]:
        """The candidates (changes to ``base``) whose model gives every
        output the callable gave on ``rows``."""
        rows, d = self.call(rows, what)
        if not rows:
            return candidates, rows, d
        a, b, c, _ = self.seen[-1]
        keep = []
        for cand in candidates:
            try:
                params = base.replace(**cand)
            except ValueError:
                continue
            got = MMAModel(params)(self._as_in(a), self._as_in(b), self._as_out(c),
                                   chain=self.chained)
            if codes_equal(got.astype(np.float64), d).all():
                keep.append(cand)
        return keep, rows, d

    def _as_in(self, x: np.ndarray) -> np.ndarray:
        return to_dtype(x, self.fin)

    def _as_out(self, x: np.ndarray) -> np.ndarray:
        return to_dtype(x, self.fout)

    def aligned_family(self, block: int, structure: dict[str, Any]) -> None:
        F, sticky = self.extra_bits_probe()
        if F is None:
            self.rounding_probe(None)
            return
        extra = F - ALIGN_FRACTION_BITS
        if not -ALIGN_FRACTION_BITS < extra <= 8:
            self.f["extra_bits"].how += " (outside the model's range -22..8)"
            self.rounding_probe(None)
            return
        r_bits = self.result_bits_probe(F, block)
        rounding = self.rounding_probe(r_bits)
        if rounding is None:
            return
        base = MMAParams(self.fin.name, self.fout.name, k=block, extra_bits=extra,
                         sticky_bit=sticky, rounding=rounding,
                         result_bits=_result_bits(r_bits, self.fout), **self.subnormal_flags())
        base = self.join_probe(base, F, r_bits)
        if base is None:
            return
        base = self.normalize_probe(base, F)
        base = self.tiny_probe(base, F, r_bits)
        self.params = self.limited_probe(base)

    def _scale(self) -> int:
        """Exponent around which the join and grouping rows are built."""
        return min(self.prod_hi() - 2, self.fout.emax - 12)

    def join_probe(self, base: MMAParams, F: int, r_bits: int | None) -> MMAParams | None:
        """Where c joins, how late alignment rounds, and odd/even groups:
        rows where ``c`` is larger than the products' sum, and smaller, with
        bits at every depth below the alignment grid, and rows with small
        terms at odd positions beside a large one at position 0; every
        candidate architecture is run on them and those that give every
        output are kept."""
        fout = self.fout
        r = fout.mantissa_bits if r_bits is None else r_bits
        eb = self._scale()
        s = math.ldexp(1.0, eb)
        U = math.ldexp(1.0, -r)
        rows: list[Row] = []
        k = base.k
        for delta in range(0, 11):
            tiny = math.ldexp(1.0, -F - delta)
            for sc in (1, -1):
                for odd in (0, 1):
                    for tie in (0, 1):
                        for st in (1, -1):
                            prods = {0: sc * tie * U / 2 * s, 1: st * tiny * s}
                            if tie == 0:
                                prods[2] = st * tiny * s
                            rows.append(Row.of({p: v for p, v in prods.items() if v},
                                               sc * (1 + odd * U) * s, "c larger"))
        for delta in range(0, 7):
            for odd in (0, 1):
                for sc in (1, -1):
                    for m in (1, 3):
                        rows.append(Row.of({0: s, 1: odd * U * s, 2: U / 2 * s},
                                           sc * m * math.ldexp(1.0, -F - delta) * s,
                                           "products larger"))
        odds = [p for p in range(1, k, 2)]
        evens = [p for p in range(2, k, 2)]
        for delta in range(-1, 4):
            small = math.ldexp(1.0, -F - delta) * s
            for group in (odds, evens):
                for tie in (0, 1):
                    prods = {0: s}
                    prods.update({p: small for p in group})
                    if tie and 2 not in group:
                        prods[2] = U / 2 * s
                    rows.append(Row.of(prods, 0.0, "small terms in one parity"))
        rows += self.random_rows(120, positions=k, full_mantissas=False, eb=eb)
        cands: list[dict[str, Any]] = [{"accumulation": "aligned", "c_joins": "first"}]
        for acc in ("aligned", "odd_even"):
            for late in range(0, 9):
                for ar in _ROUNDINGS:
                    cands.append({"accumulation": acc, "c_joins": "last",
                                  "late_extra_bits": late, "align_rounding": ar})
        keep, rows, d = self.eliminate(base, cands, rows, "where c joins")
        how = ("rows with c larger and smaller than the products' sum, bits below the grid "
               "and ties; small terms at odd or even positions beside a large one; "
               f"{len(cands)} candidate architectures run on them")
        if not keep:
            self.f["c_joins"] = Finding(None, how + ": none reproduces the outputs",
                                        self.evidence(rows, d, limit=3))
            return None
        best = keep[0]
        note = "" if len(keep) == 1 else (f"; {len(keep)} candidates agree on every row, "
                                          "the first kept: " + ", ".join(
                                              _cand_text(c) for c in keep[:4]))
        self.f["accumulation"] = Finding(best["accumulation"], how + note)
        self.f["c_joins"] = Finding(best["c_joins"], "from the same rows")
        if best["c_joins"] == "last" or best["accumulation"] == "odd_even":
            self.f["late_extra_bits"] = Finding(best["late_extra_bits"], "from the same rows")
            self.f["align_rounding"] = Finding(best["align_rounding"], "from the same rows")
        return base.replace(**best)

    def normalize_probe(self, base: MMAParams, F: int) -> MMAParams:
        """``1.5*1.5 = 2.25`` and its negative, beside small terms at the
        bottom of the grid: a unit that renormalizes products of 2 or more
        aligns to one exponent higher and loses them."""
        eb = self._scale() - 2
        s = math.ldexp(1.0, eb)
        half = eb // 2
        big = (1.5 * math.ldexp(1.0, half), 1.5 * math.ldexp(1.0, eb - half))
        nbig = (-big[0], big[1])
        rows = []
        for delta in (-2, -1, 0, 1, 2):
            for m in (1, 1.5):
                rows.append(Row.of({0: big, 1: nbig, 2: m * math.ldexp(1.0, -F + delta) * s},
                                   0.0, "2.25 cancelled"))
        rows += self.random_rows(60, positions=base.k, full_mantissas=True, eb=eb)
        keep, rows, d = self.eliminate(base, [{"normalize_products": False},
                                              {"normalize_products": True}], rows,
                                       "product normalization")
        value = keep[0]["normalize_products"] if len(keep) == 1 else (
            False if keep else None)
        how = ("products 1.5 × 1.5 = 2.25 cancelled beside small terms at the bottom of the "
               "grid: " + ("kept, so a product of 2 or more keeps the operands' exponent"
                           if value is False else "lost, so such products are renormalized"
                           if value else "not decided"))
        self.f["normalize_products"] = Finding(value, how, self.evidence(rows, d, limit=2))
        return base.replace(normalize_products=bool(value))

    def tiny_probe(self, base: MMAParams, F: int, r_bits: int | None) -> MMAParams:
        """Terms whose largest exponent ``E`` is tiny: a unit with a lower
        bound on the alignment exponent cuts a term ``2**(E - F)`` there that
        it keeps higher up (seen through the output's rounding), and a late
        join of a zero ``c`` at 2**-126 shifts tiny sums."""
        fin, fout = self.fin, self.fout
        late = base.c_joins == "last" or base.accumulation == "odd_even"
        vis = fout.emin - fout.mantissa_bits + 1 if self.f["output_subnormals"].value else \
            fout.emin
        lo = max(vis, self.prod_lo() + F, 2 * fin.emin)
        hi = min(0, fout.emax - 4)
        zero_c_matters = late and 2 * fin.emin < -126
        if lo > hi and not zero_c_matters:
            self.f["min_align_exponent"] = Finding(None, "not observable with these formats "
                                                   "(no row has all its terms low enough)")
            return base.replace(min_align_exponent=None, zero_c_at_emin=False)
        r = fout.mantissa_bits if r_bits is None else r_bits
        rows = []
        for E in range(lo, hi + 1):
            big = math.ldexp(1.0, E)
            tiny = math.ldexp(1.0, E - F)
            ulp = math.ldexp(1.0, max(E, fout.emin) - r)
            rows.append(Row.of({0: big, 1: -tiny}, 0.0, f"E={E}"))
            rows.append(Row.of({0: big, 1: tiny}, 0.0, f"E={E}"))
            rows.append(Row.of({0: big, 1: ulp / 2, 2: tiny}, 0.0, f"E={E}"))
        lsb = fout.emin - fout.mantissa_bits
        for odd in (0, 1):
            for sign in (1, -1):
                for st in (1, -1):
                    for delta in range(1, 13):
                        prods = {0: sign * math.ldexp(1.0, lsb + 9),
                                 1: sign * math.ldexp(1.0, lsb - 1),
                                 2: st * math.ldexp(1.0, lsb - 1 - delta)}
                        if odd:
                            prods[3 % base.k if base.k > 3 else 2] = sign * math.ldexp(1.0, lsb)
                        rows.append(Row.of(prods, 0.0, "tie at the output's last bit"))
        rows += self.random_rows(60, positions=base.k, full_mantissas=False,
                                 eb=max(lo, self.prod_lo() + 8))
        rows_b, d = self.call(rows, "tiny sums")
        if not rows_b:
            return base
        a, b, c, _ = self.seen[-1]

        def agrees(params: MMAParams) -> np.ndarray:
            got = MMAModel(params)(self._as_in(a), self._as_in(b), self._as_out(c),
                                   chain=self.chained)
            return codes_equal(got.astype(np.float64), d)

        cands: list[dict[str, Any]] = []
        for zc in ((False, True) if zero_c_matters else (False,)):
            cands.append({"min_align_exponent": None, "zero_c_at_emin": zc})
            ok = agrees(base.replace(min_align_exponent=None, zero_c_at_emin=zc))
            # the lowest E from which every survival row agrees with no bound
            E_rows = [(int(rw.note[2:]), bool(x)) for rw, x in zip(rows_b, ok)
                      if rw.note.startswith("E=")]
            bad = [E for E, x in E_rows if not x]
            if bad:
                m = max(bad) + 1
                cands += [{"min_align_exponent": m + j, "zero_c_at_emin": zc}
                          for j in (-1, 0, 1)]
        keep = []
        for cand in cands:
            try:
                params = base.replace(**cand)
            except ValueError:
                continue
            if agrees(params).all():
                keep.append(cand)
        how = ("a term at the bottom of the grid beside 2^E for each E down to the output's "
               "smallest, seen through the rounding; ties at the output's last bit with tiny "
               "terms")
        if not keep:
            self.f["min_align_exponent"] = Finding(None, how + ": no candidate reproduces them",
                                                   self.evidence(rows_b, d, limit=3))
            return base
        best = keep[0]
        self.f["min_align_exponent"] = Finding(best["min_align_exponent"], how + (
            "" if len(keep) == 1 else f" ({len(keep)} candidates agree)"))
        if zero_c_matters:
            self.f["zero_c_at_emin"] = Finding(best["zero_c_at_emin"], "from the same rows")
        return base.replace(**best)

    def limited_probe(self, base: MMAParams) -> MMAParams:
        """Products at or beyond the output's overflow threshold, cancelling:
        a limited unit gives NaN or inf, an exact one the difference."""
        fout = self.fout
        e = fout.emax + 1
        if self.prod_hi() < e:
            return base
        big = math.ldexp(1.0, e)
        rows = [Row.of({0: big, 1: -big}, 0.0, "huge products cancelling"),
                Row.of({0: big, 1: -big / 2}, 0.0, "huge products, finite sum")]
        keep, rows, d = self.eliminate(base, [{"products_limited": False},
                                              {"products_limited": True}], rows,
                                       "product overflow")
        value = keep[0]["products_limited"] if len(keep) == 1 else None
        how = ("2^(emax+1) - 2^(emax+1) and 2^(emax+1) - 2^emax: " + (
            "special results, so huge products overflow before the sum" if value else
            "the exact sums, so products are not limited" if value is False else
            "not decided"))
        self.f["products_limited"] = Finding(value, how, self.evidence(rows, d))
        return base.replace(products_limited=bool(value))

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
                a = _snap(math.ldexp(ma, ea), fin)
                b = _snap(math.ldexp(mb if full_mantissas else 1.0, eb2), fin)
                if rng.random() < 0.5:
                    a = -a
                prods[int(p)] = (a, b)
            c = 0.0
            if rng.random() < 0.7:
                ec = int(np.clip(eb + rng.integers(-30, 6), fout.emin - fout.mantissa_bits,
                                 fout.emax - 4))
                mc = 1 + int(rng.integers(0, 1 << fout.mantissa_bits)) / (1 << fout.mantissa_bits)
                c = _snap(math.ldexp(mc, ec), fout) * (1 if rng.random() < 0.5 else -1)
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

    def result(self, seconds: float) -> ProbeResult:
        matches: list[str] = []
        unobservable: list[str] = []
        if self.params is not None:
            mine = observable(self.params)
            unobservable = [n for n in self.params.as_dict() if n not in mine]
            if self.reproduces:
                for gpu, i, o in _presets():
                    if (i, o) == (self.fin.name, self.fout.name):
                        theirs = observable(_preset(gpu, i, o).params)
                        if theirs == mine:
                            matches.append(gpu)
        return ProbeResult(self.fin.name, self.fout.name, self.width, self.params, self.chained,
                           self.order, self.f, self.reproduces, self.mismatches, matches,
                           unobservable, self.caller.calls, self.caller.rows, seconds)


def _snap(x: float, fmt: Format) -> float:
    """``x`` cut to ``fmt``'s precision (toward zero) and range."""
    if x == 0:
        return 0.0
    e = max(math.frexp(abs(x))[1] - 1, fmt.emin)
    q = math.ldexp(1.0, e - fmt.mantissa_bits)
    v = math.copysign(math.floor(abs(x) / q) * q, x)
    return math.copysign(min(abs(v), float(fmt.max)), v)


def _result_bits(r: int | None, fout: Format) -> int | None:
    return None if r is None or r >= fout.mantissa_bits else r


def _cand_text(c: dict[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in c.items())


def _leaf(i: int, W: int) -> str:
    return "c" if i == W else f"p{i}"


def _classify(tree: _order.Node, W: int) -> dict[str, Any]:
    """The shape of the recovered tree: one block (c with the products, or
    after them), a pairwise tree, an exact sum, a chain of blocks, or other."""
    c = W
    prods = frozenset(range(W))

    def flat(node: Any) -> bool:
        return isinstance(node, _order.Node) and all(not isinstance(ch, _order.Node)
                                                     for ch in node.children)

    out: dict[str, Any] = {"kind": "other", "k": None, "how": "the tree is none of the known "
                           "shapes (one block, pairwise, exact, a chain of blocks)",
                           "k_how": ""}
    if tree.exact and tree.leaves() == prods | {c}:
        return {"kind": "exact", "k": W, "how": "no unit is ever lost: the products and c are "
                "added exactly", "k_how": f"all {W} products in one exact sum"}
    if flat(tree) and len(tree.children) == W + 1:
        return {"kind": "block", "k": W, "how": "one multi-term node: all products and c "
                "aligned and added together", "k_how": f"all {W} products in one block"}
    if len(tree.children) == 2 and c in tree.children:
        x = next(ch for ch in tree.children if ch != c)
        if isinstance(x, _order.Node) and x.leaves() == prods:
            if flat(x) and not x.exact:
                return {"kind": "block", "k": W, "how": "one multi-term node of the products; "
                        "c added to their sum", "k_how": f"all {W} products in one block"}
            if x.exact:
                return {"kind": "exact", "k": W, "how": "the products are added exactly, c "
                        "after", "k_how": f"all {W} products in one exact sum"}
            if _is_pairwise(x, list(range(W))):
                return {"kind": "pairwise", "k": W, "how": "a balanced binary tree of the "
                        "products, (p0 + p1) + (p2 + p3), ..., then c", "k_how":
                        f"all {W} products in one tree"}
    if len(tree.children) == 2 and c in tree.children:
        x = next(ch for ch in tree.children if ch != c)
        if _left_deep(x):
            out["how"] = ("products added one at a time in order, (p0 + p1) + p2 ..., c added "
                          "to their sum last: no block FMA (whose c enters the first block)")
    blocks = _chain_blocks(tree, c)
    if blocks:
        k = len(blocks[0])
        if all(b == list(range(i * k, min((i + 1) * k, W))) for i, b in enumerate(blocks)) \
                and sum(len(b) for b in blocks) == W:
            return {"kind": "chain", "k": k, "how": f"{len(blocks)} blocks of {k} products added "
                    "in order, each block's sum passed on to the next",
                    "k_how": f"the first block holds {k} products"}
    return out


def _left_deep(node: Any) -> bool:
    """``((p0 + p1) + p2) + ...``: a sequential sum in position order."""
    want = None
    while isinstance(node, _order.Node):
        if len(node.children) != 2 or node.exact or isinstance(node.children[1], _order.Node):
            return False
        if want is not None and node.children[1] != want:
            return False
        want = node.children[1] - 1
        node = node.children[0]
    return node == 0 and want == 0


def _is_pairwise(node: Any, leaves: list[int]) -> bool:
    if len(leaves) == 1:
        return node == leaves[0]
    if not isinstance(node, _order.Node) or len(node.children) != 2 or node.exact:
        return False
    half = len(leaves) // 2
    return _is_pairwise(node.children[0], leaves[:half]) and _is_pairwise(node.children[1],
                                                                        leaves[half:])


def _chain_blocks(tree: _order.Node, c: int) -> list[list[int]] | None:
    """Blocks of products, innermost first, when the tree is a chain: each
    node adds to the previous block's sum a run of products (as leaves, or
    as one flat node of them)."""
    path = []
    node: Any = tree
    while isinstance(node, _order.Node):
        path.append(node)
        inner = [ch for ch in node.children if isinstance(ch, _order.Node) and
                 (0 in ch.leaves())]
        node = inner[0] if inner else None
    blocks: list[list[int]] = []
    prev: frozenset[int] = frozenset()
    for n in reversed(path):
        new = sorted(n.leaves() - prev - {c})
        for ch in n.children:
            if isinstance(ch, _order.Node) and 0 not in ch.leaves():
                if any(isinstance(g, _order.Node) for g in ch.children):
                    return None
        if new:
            blocks.append(new)
        prev = n.leaves()
    return blocks or None
