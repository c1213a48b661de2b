"""The probe of a library GEMM's schedule: ``fn(A, B)`` or ``fn(A, B, C)``
called on whole matrices, as ``torch.mm`` or ``torch._scaled_mm`` is.

Four stages, each building on the last:

1. **Convention.**  Whether ``fn`` takes ``C`` (its signature binds three
   arguments), and the smallest multiple of M, N and K it accepts (1, 8, 16,
   32 or 64, tried in that order; ``torch._scaled_mm`` needs 16): every
   later call pads ``A``, ``B`` (and ``C``) with zeros to it, which adds
   zero products and changes no result.
2. **Separations** at two widths.  Row ``j`` holds one large product at
   position ``j - g`` and ``g`` small ones at ``j .. j+g-1``: in one chain
   the small products fall below the large one's alignment grid and are
   lost; where an accumulation restarts between them (a split-K slice or a
   promotion group begins) they are summed on their own and survive the
   FP32 addition.  The rows whose small products survive are the
   positions where accumulations start.
3. **Schedules** that start accumulations exactly there, at both widths:
   slices of ``split_k`` and ``split_grain``, groups of ``promote_every``.
4. **Candidates**: every instruction preset of the input formats × those
   schedules × where ``C`` joins × the epilogue's format × the output
   rounding, each run by :class:`~fpsim.mma.LibraryGEMM` on random matrices
   (exponents spread over several binades, as real captures) at both widths,
   and on rows that tell ``C``'s join and the output rounding apart; the
   candidates that give every output bit for bit are the answer.

Contract (used by :mod:`fpsim.mma.probe` only): :func:`probe_library`
returns the findings, the schedule (a dict) and the matching candidates.
"""

from __future__ import annotations

import inspect
import itertools
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import array as _array
from ..context import Context
from ..formats import Format
from ._probe_findings import Finding
from ._probe_io import ProbeError, as_array, call_user, show, to_dtype
from .gemm import LibraryGEMM
from .model import MMAModel
from .presets import preset as _preset
from .presets import presets as _presets
from .schedule import Schedule

__all__ = ["probe_library", "GemmCaller", "WIDTHS"]

_PADS = (1, 8, 16, 32, 64)
_WINDOW = 16  # small products per separation row, and the grid the separations are read on
WIDTHS = (1024, 1552)  # two widths whose slices differ for every grain of 16 .. 256
_GRAINS = (8, 16, 32, 64, 128, 256)
_PROMOTIONS = (None, 16, 32, 64, 128, 256, 512)
_MAX_SPLIT = 32

# The separation rows' products, by input format: (large, small) as A's
# values with B = 1; the small one is below the alignment grid of every
# instruction that cuts (16-bit: 1.5 * 2**-26 of the large one, under 25
# bits; FP8: 2**-14, under Hopper's and Ada's 13), and 4 of them (a group
# promoted every 4 products) are visible in an FP32 result: 1.5 * 2**-24 of
# the large one rounds up to its last bit.
_SEPARATION = {"fp16": (2.0**10, 1.5 * 2.0**-16), "bf16": (2.0**10, 1.5 * 2.0**-16),
               "tf32": (2.0**10, 1.5 * 2.0**-16), "e4m3": (2.0**8, 2.0**-6),
               "e5m2": (2.0**8, 2.0**-6)}


def takes_c(fn: Callable[..., Any]) -> bool:
    """Whether ``fn``'s signature binds ``(A, B, C)`` (True where it cannot
    be read)."""
    try:
        sig = inspect.signature(fn)
    except KeyboardInterrupt:
        raise
    except BaseException:  # TypeError, ValueError, or a __signature__ of its own that raises
        return True
    try:
        sig.bind(None, None, None)
    except TypeError:
        return False
    return True


class GemmCaller:
    """``fn`` called with whole matrices, padded to ``pad``, with or without
    ``C``; results as float64 values of shape (M, N)."""

    def __init__(self, fn: Callable[..., Any], fa: Format, fb: Format, fout: Format,
                 with_c: bool, timeout: float | None = None) -> None:
        self.fn, self.fa, self.fb, self.fout, self.with_c = fn, fa, fb, fout, with_c
        self.timeout = timeout  # seconds one call may take (None: no limit)
        self.pad = 1
        self.calls = 0
        self.rows = 0
        self.name = getattr(fn, "__qualname__", None) or type(fn).__name__

    def __call__(self, A: np.ndarray, B: np.ndarray, C: np.ndarray | None, what: str
                 ) -> np.ndarray:
        m, k = A.shape
        n = B.shape[1]
        up = lambda x: -(-max(x, 1) // self.pad) * self.pad  # noqa: E731
        M, K, N = up(m), up(k), up(n)
        Ap = np.zeros((M, K))
        Ap[:m, :k] = A
        Bp = np.zeros((K, N))
        Bp[:k, :n] = B
        args = [to_dtype(Ap, self.fa), to_dtype(Bp, self.fb)]
        if self.with_c:
            Cp = np.zeros((M, N))
            if C is not None:
                Cp[:m, :n] = C
            args.append(to_dtype(Cp, self.fout))
        self.calls += 1
        self.rows += m * n
        out = call_user(self.fn, tuple(args), self.name, what, self.timeout,
                        lambda: f"A {args[0].shape} {args[0].dtype}, B {args[1].shape} "
                                f"{args[1].dtype}"
                                + (f", C {args[2].shape} {args[2].dtype}" if self.with_c else ""))
        arr = as_array(out, self.name, what, "D = A @ B (+ C)")
        dt = to_dtype(np.zeros(1), self.fout).dtype
        if arr.shape != (M, N) or arr.dtype != dt:
            raise ValueError(f"the callable {self.name!r} returned {arr.dtype} of shape "
                             f"{arr.shape} on the {what} probe; accepted: D of shape {(M, N)}, "
                             f"dtype {dt}")
        with np.errstate(all="ignore"):
            return arr[:m, :n].astype(np.float64)


def find_pad(caller: GemmCaller) -> Finding:
    """Stage 1: the smallest multiple of M, N and K the callable accepts."""
    refused = []
    last: BaseException | None = None
    for q in _PADS:
        caller.pad = q
        m = -(-16 // q) * q
        K = WIDTHS[0] + 3 * q  # a multiple of q, of no larger pad, wide enough for a split
        try:
            caller(np.ones((m, K)), np.ones((K, m)), None, "shape")
        except (ProbeError, ValueError, TypeError) as exc:
            cause = exc.__cause__ or exc
            refused.append(f"multiples of {q}: {type(cause).__name__}")
            last = exc
            continue
        how = ("accepts any M, N, K" if q == 1 else
               f"M, N and K padded with zeros to multiples of {q} ({'; '.join(refused)})")
        return Finding(q, how)
    raise ProbeError(f"the callable {caller.name!r} raised at every shape tried ("
                     + "; ".join(refused) + ")") from last


def _units(fa: Format, fb: Format, fout: Format) -> list[tuple[list[str], MMAModel]]:
    """The instruction presets that take these inputs, with FP32 output (a
    library accumulates in FP32) and, for a 16-bit output, that output
    too; presets with the same parameters are one candidate, named by all
    their GPUs."""
    found: dict[Any, tuple[list[str], MMAModel]] = {}
    for gpu, i, o in _presets():
        if i != fa.name or o not in ("fp32", fout.name):
            continue
        try:
            model = _preset(gpu, (fa.name, fb.name), o)
        except ValueError:  # no mixed instruction of these formats on this GPU
            continue
        if not isinstance(model, MMAModel):   # an FMA chain: fpsim.mma.fmachain
            continue
        if model.params in found:
            found[model.params][0].append(gpu)
        else:
            found[model.params] = ([gpu], model)
    return list(found.values())


def _starts(schedule: Schedule, K: int) -> tuple[set[int], set[int]] | None:
    """The separation rows that must show a start of an accumulation, and
    those that may or may not (their window holds the start: how many small
    products come after it decides), for a schedule at width K; None where
    the schedule does not apply at K."""
    try:
        slices = schedule.slices(K)
    except ValueError:
        return None
    sure, unsure = set(), set()
    for lo, hi in slices:
        for t, _ in schedule.groups(lo, hi):
            if t:
                sure.add(-(-t // _WINDOW) * _WINDOW)
                if t % _WINDOW:
                    unsure.add(t // _WINDOW * _WINDOW)
    last = K - 2 * _WINDOW
    return {j for j in sure if j <= last}, {j for j in unsure if 0 < j <= last}


def _explains(schedule: Schedule, seen: dict[int, set[int]]) -> bool:
    for K, got in seen.items():
        starts = _starts(schedule, K)
        if starts is None:
            return False
        sure, unsure = starts
        if got - unsure != sure - unsure:
            return False
    return True


def _separation_rows(fa: Format, K: int) -> tuple[np.ndarray, np.ndarray, list[int]] | None:
    big, small = _SEPARATION.get(fa.name, (None, None))
    if big is None:
        return None
    js = list(range(_WINDOW, K - 2 * _WINDOW + 1, _WINDOW))
    A = np.zeros((len(js) + 1, K))
    A[:, K - 1] = -big  # the large product cancelled at the end: what is left is small
    for r, j in enumerate(js):
        A[r, j - _WINDOW] = big
        A[r, j:j + _WINDOW] = small
    A[-1, 0] = big  # the control row: nothing to separate
    return A, np.ones((K, 1)), js


def random_values(rng: np.random.Generator, fmt: Format, shape: tuple[int, int],
                  spread: int) -> np.ndarray:
    """Values exact in ``fmt`` (its full significand), signs random,
    exponents over ``±min(spread, emax // 2)`` binades, clipped to its
    range."""
    e = min(spread, fmt.emax // 2)
    x = rng.uniform(1, 2, shape) * np.exp2(rng.integers(-e, e + 1, shape))
    x *= rng.choice((-1.0, 1.0), shape)
    codes = _array.encode(np.clip(x, -float(fmt.max), float(fmt.max)), fmt, Context())
    return _array.decode(codes, fmt)


def _random_matrices(rng: np.random.Generator, fa: Format, fb: Format, m: int, k: int,
                     n: int, spread: int = 6) -> tuple[np.ndarray, np.ndarray]:
    """Values exact in the formats, signs random, exponents spread over
    several binades (sums cancel and products differ widely)."""
    return random_values(rng, fa, (m, k), spread), random_values(rng, fb, (k, n), spread)


def _grid_rows(fa: Format) -> tuple[np.ndarray, np.ndarray]:
    """Rows ``L, L·2**-d, -L`` (as A's values, B = 1) in every order at
    every three of the first 8 positions, for each ``d`` the format reaches
    up to 30: which small products survive tells the alignment grid's width
    and where blocks and groups are cut."""
    big = 2.0 ** min(fa.emax - 1, 10)
    lo = fa.emin - fa.mantissa_bits
    ds = [d for d in range(8, 31) if np.log2(big) - d >= lo]
    rows = []
    for d in ds:
        for p in itertools.permutations(range(8), 3):
            row = np.zeros(16)
            row[list(p)] = (big, big * 2.0**-d, -big)
            rows.append(row)
    return np.array(rows), np.ones((16, 1))


def probe_library(fn: Callable[..., Any], fa: Format, fb: Format, fout: Format,
                  seed: int, timeout: float | None = None) -> dict[str, Any]:
    """The library stage: findings, ``schedule`` (a dict, or None),
    ``matches`` (GPU names), ``params`` of the matched instruction, and the
    caller (its ``pad``, ``with_c``, counts); each call of ``fn`` may take
    ``timeout`` seconds (None: no limit)."""
    with_c = takes_c(fn)
    caller = GemmCaller(fn, fa, fb, fout, with_c, timeout)
    f: dict[str, Finding] = {}
    f["convention"] = Finding("fn(A, B, C)" if with_c else "fn(A, B)",
                              "its signature binds three arguments" if with_c else
                              "its signature takes A and B only: C is never passed")
    f["shape"] = find_pad(caller)
    rng = np.random.default_rng(seed)

    # -- stage 2: separations ------------------------------------------------------------
    seen: dict[int, set[int]] = {}
    rows_kept = []
    for K in WIDTHS:
        built = _separation_rows(fa, K)
        if built is None:
            break
        A, B, js = built
        D = caller(A, B, None, f"separation K={K}")[:, 0]
        base, D = D[-1], D[:-1]
        seen[K] = {j for j, d in zip(js, D) if d != base}
        rows_kept.append((K, js, D, base))
    if seen and all(len(s) == len(rows[1]) for s, rows in zip(seen.values(), rows_kept)):
        seen = {}  # every window survives: the unit keeps every bit (nothing to read)
        why = "every window survives: the unit keeps the small products' bits"
    else:
        why = f"no separation rows for {fa.name}"
    if seen:
        desc = "; ".join(f"K={K}: " + (", ".join(map(str, sorted(s))) if s else "none")
                         for K, s in seen.items())
        f["separations"] = Finding(
            {K: sorted(s) for K, s in seen.items()},
            f"a large product, then {_WINDOW} products under its alignment grid, the large "
            f"one cancelled at the end: they survive where an accumulation starts between "
            f"them ({desc})",
            [{"input": f"K={K}: p{j - _WINDOW}={show(_SEPARATION[fa.name][0])}, "
                       f"p{j}..p{j + _WINDOW - 1}={show(_SEPARATION[fa.name][1])}, "
                       f"p{K - 1}={show(-_SEPARATION[fa.name][0])}",
              "output": show(float(d))} for K, js, D, base in rows_kept
             for j, d in list(zip(js, D))[:2]])
    else:
        f["separations"] = Finding(None, f"not observable: {why}; the schedule is read from the "
                                         "candidates alone")

    # -- stage 3: schedules that start accumulations there --------------------------------
    schedules: list[Schedule] = []
    for S in range(1, _MAX_SPLIT + 1):
        for grain in (_GRAINS if S > 1 else (64,)):
            for P in _PROMOTIONS:
                s = Schedule(split_k=S, split_grain=grain, promote_every=P)
                if seen and not _explains(s, seen):
                    continue
                if not seen and (S > 1 or P is not None):
                    continue
                schedules.append(s)
    # grains that cut the same slices at both widths are one candidate: keep the largest
    distinct: dict[Any, Schedule] = {}
    for s in schedules:
        key = (s.split_k, s.promote_every, tuple(tuple(s.slices(K)) for K in WIDTHS)
               if s.split_k > 1 else None)
        if key not in distinct or s.split_grain > distinct[key].split_grain:
            distinct[key] = s
    schedules = list(distinct.values())

    # -- stage 4: candidates ----------------------------------------------------------
    units = _units(fa, fb, fout)
    variants: list[dict[str, Any]] = []
    for unit_names, model in units:
        k = model.k
        # Promotion inside the separation grid (every 4 or 8 products, TF32 in cuBLAS) looks
        # like promotion every 16 there; blocks issued at half the unit's k go with it.
        small = [(None, None)] + [(bk, P) for bk in sorted({k, k // 2} - {0})
                                  for P in (bk, 2 * bk) if P < _WINDOW and _WINDOW % P == 0]
        for s in schedules:
            for bk, P in small:
                fits = s.promote_every == _WINDOW or (not seen and s.promote_every is None)
                if P is not None and not fits:
                    continue
                narrow = fout.name != "fp32"  # only a narrower output tells these apart
                for joins, epi, rnd, merge in itertools.product(
                        ("epilogue", "accumulator") if with_c else ("epilogue",),
                        ("compute", "output") if narrow else ("compute",),
                        ("rne", "rtz") if narrow else ("rne",),
                        ("compute", "output", "inplace") if narrow and s.split_k > 1
                        else ("compute",)):
                    variants.append(dict(names=unit_names, model=model, schedule=s.replace(
                        block_k=bk if bk != k else None,
                        promote_every=P if P is not None else s.promote_every,
                        c_joins=joins, epilogue=epi, output_rounding=rnd, split_merge=merge)))
    tests = []
    # The shapes of the separation calls (a library may choose its kernel by shape), a
    # short one first: most candidates fail there at little cost.
    for K in (32,) + (WIDTHS if seen else (64, 96)):
        m = max(1, K // _WINDOW - 1)
        A, B = _random_matrices(rng, fa, fb, m, K, 1)
        C = None
        if with_c:
            C = _array.decode(_array.encode(rng.standard_normal((m, 1)) * 4, fout, Context()),
                              fout)
        try:
            tests.append((A, B, C, caller(A, B, C, f"candidates K={K}")))
        except ProbeError:
            if K != 32:
                raise  # a short K may be refused (a split of more slices than it has grains)
    # Full significands within a few binades, and rows of powers of two far apart in
    # every order: the alignment's last bits and the cuts of blocks and groups decide.
    Ar, Br = _random_matrices(rng, fa, fb, 256, 64, 1, spread=2)
    for Ai, Bi, what in ((Ar, Br, "alignment bits"), (*_grid_rows(fa), "alignment grid")):
        try:
            tests.insert(1, (Ai, Bi, None, caller(Ai, Bi, None, f"candidates, {what}")))
        except ProbeError:
            pass  # refused at a short K (a split of more slices than K has grains)
    if with_c:
        # C far larger than the products: aligned with them (accumulator) their low bits go
        K = WIDTHS[0]  # zero products after the first 16: as wide as the other calls
        A = np.zeros((4, K))
        A[:, :_WINDOW] = _SEPARATION.get(fa.name, (1.0, 2.0**-6))[1]
        Cv = np.full((4, 1), _SEPARATION.get(fa.name, (2.0**8, 0))[0])
        tests.append((A, np.ones((K, 1)), Cv, caller(A, np.ones((K, 1)), Cv, "where C joins")))
    matched = []
    for v in variants:
        g = LibraryGEMM(v["model"], v["schedule"], fout)
        ok = True
        for A, B, C, D in tests:
            try:
                got = _run(g, A, B, C, fa, fb, fout)
            except ValueError:
                ok = False
                break
            if not _equal(got, D):
                ok = False
                break
        if ok:
            matched.append(v)
    out: dict[str, Any] = {"findings": f, "caller": caller, "candidates": len(variants),
                           "matched": matched}
    return out


def _run(g: LibraryGEMM, A: np.ndarray, B: np.ndarray, C: np.ndarray | None, fa: Format,
         fb: Format, fout: Format) -> np.ndarray:
    a, b = to_dtype(A, fa), to_dtype(B, fb)
    c = None if C is None else to_dtype(np.broadcast_to(C, (A.shape[0], B.shape[1])), fout)
    with np.errstate(all="ignore"):
        return np.asarray(g(a, b, c)).astype(np.float64)


def _equal(x: np.ndarray, y: np.ndarray) -> bool:
    same = (x == y) & (np.signbit(x) == np.signbit(y))
    return bool((same | (np.isnan(x) & np.isnan(y))).all())
