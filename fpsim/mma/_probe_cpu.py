"""The probe at the user's size: read a black-box GEMM ``fn(A, B[, C])``
called at exactly ``(M, K, N)``, and build a callable that reproduces it
there, bit for bit (:func:`fpsim.mma.probe` with ``size=``).

Stages, each keeping its evidence:

1. **K blocks** (FPRev, Xie et al. 2024): row ``r`` of ``A`` holds ``+L``
   at product 0, ``-L`` at product ``j`` and ``s`` elsewhere, ``B`` is ones;
   the output is ``s·(K - |T(0, j)|)``, where ``T(0, j)`` is the smallest
   subtree of the summation holding both.  Where the tree is a chain of K
   blocks, ``|T(0, j)|`` of a ``j`` past the first block is the end of
   ``j``'s block: the ends read off are the blocks.  ``L`` is far above
   ``K·s`` times 2**accumulator-precision so it swallows every partial sum
   of ``s``; the read needs ``L`` in the input format and ``s·K`` exact in
   the output format, and is skipped (said so) where they are not.
2. **Candidates**: every CPU library row of :mod:`fpsim.mma.cputable` for these
   formats (at 1 and 2 threads), and a family of accumulations: one chain,
   pairs taken odd first, one chain in runs of 4, 8 or 16 whose last half
   is summed apart, 2 to 16 interleaved lanes with every tail rule
   and join (and a main loop unrolled by 8 or 16 past them), FMA or
   rounded products, FP32 or FP64 accumulators, with the K blocks read
   (and their rules), or the usual block sizes where none could be read;
   with ``C``, every place C can join.
3. **Fit**: each candidate is run on sampled output elements of two random
   input sets (wide exponent range, random signs) and kept where it gives
   the callable's bits; the few that fit run on the whole output, an
   element two of them fit is decided on more cancelling inputs, and each
   output element is given to the candidate that fits it: the regions of
   the result (a kernel's tail columns, its row residues, its tiles).
4. **Separation**: candidates that fit the same elements are run on fresh
   inputs until they disagree; the callable decides between them.  Those
   never told apart on 6 input sets are reported as equivalent at this
   size.
5. **Check**: the result runs on two fresh input sets (normal and wide);
   ``reproduces`` is whether every bit matched.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import array as _array
from ..formats import Format
from . import _chains
from ._probe_findings import Finding
from ._probe_gemm import GemmCaller, _units, random_values
from ._probe_io import to_dtype
from .accumulation import JOINS, TAILS, Accumulation
from .cputable import CPU_LIBRARIES, CPUGEMM, CPULibrary, Part
from .gemm import LibraryGEMM
from .schedule import Schedule

__all__ = ["probe_size"]

_BLOCKS = (64, 128, 192, 256, 320, 384, 448, 512, 1024, 2048)
_GPU_WORK = 1 << 22    # multiply-adds up to which GPU instructions are candidates
_SAMPLE = 384          # output elements a candidate is first tried on
_SEPARATE = 6          # fresh input sets tried to tell two candidates apart


class _Read:
    """The calls of one probing session at one size."""

    def __init__(self, caller: GemmCaller, fa: Format, fb: Format, fout: Format,
                 size: tuple[int, int, int], rng: np.random.Generator):
        self.caller, self.fa, self.fb, self.fout = caller, fa, fb, fout
        self.M, self.K, self.N = size
        self.rng = rng

    def inputs(self, spread: int, cancel: bool = False
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """Random inputs; with ``cancel``, a quarter of the products are
        made large (up to 2**60 above the rest, as far as the input format
        reaches) and cancelled exactly by another quarter, in a random
        order: the result is the sum of the small products, and every
        rounding of a partial sum that held a large one shows in it."""
        M, K, N = self.M, self.K, self.N
        A = random_values(self.rng, self.fa, (M, K), spread)
        B = random_values(self.rng, self.fb, (K, N), spread)
        if cancel and K >= 2:
            h = max(1, K // 4)
            pos = self.rng.permutation(K)
            big, twin = pos[:h], pos[h:2 * h]
            # large, but every product and partial sum stays finite in FP32
            e = min(spread, self.fa.emax // 2)
            lift = max(0, min(60, self.fa.emax - e - 1, 100 - 2 * e - math.ceil(math.log2(K))))
            A[:, big] = _array.decode(_array.encode(np.clip(A[:, big] * 2.0**lift,
                                                            -float(self.fa.max),
                                                            float(self.fa.max)), self.fa),
                                      self.fa)
            A[:, twin] = A[:, big]
            B[twin] = -B[big]
        C = random_values(self.rng, self.fout, (M, N), spread) if self.caller.with_c else None
        return A, B, C

    def call(self, A: np.ndarray, B: np.ndarray, C: np.ndarray | None, what: str
             ) -> np.ndarray:
        return self.caller(A, B, C, what)


# -- stage 1: K blocks -------------------------------------------------------------------


def _spine_values(fa: Format, fout: Format, K: int) -> tuple[float, float] | None:
    """``(L, s)`` for the FPRev rows, or None where the formats cannot hold them."""
    acc_bits = 53 if fa.precision > 24 else 24
    s_exp = 0
    big_exp = acc_bits + math.ceil(math.log2(max(K, 2))) + 3
    if big_exp > fa.emax or K >= 2 ** fout.precision:
        return None
    return 2.0 ** big_exp, 2.0 ** s_exp


def read_blocks(rd: _Read) -> tuple[list[tuple[int, int]] | None, Finding]:
    """The K blocks, as ``(start, stop)``, from ``|T(0, j)|`` (None where
    the tree is not a chain of blocks or could not be read)."""
    M, K, N = rd.M, rd.K, rd.N
    vals = _spine_values(rd.fa, rd.fout, K)
    if K < 4 or vals is None:
        why = ("K < 4" if K < 4 else f"the FPRev rows need +-2**{24 + math.ceil(math.log2(K)) + 3}"
               f" in {rd.fa.name} and {K} in {rd.fout.name}")
        return None, Finding(None, f"K blocks not read: {why}")
    big, small = vals
    cache: dict[int, int] = {}

    def sizes(js: list[int]) -> None:
        todo = [j for j in dict.fromkeys(js) if j not in cache and 0 < j < K]
        B = np.ones((K, N))
        for s in range(0, len(todo), M):
            chunk = todo[s:s + M]
            A = np.full((M, K), small)
            A[:, 0] = big
            for r, j in enumerate(chunk):
                A[r, j] = -big
            for r in range(len(chunk), M):     # spare rows repeat the first query
                A[r, chunk[0]] = -big
            C = np.zeros((M, N)) if rd.caller.with_c else None
            out = rd.call(A, B, C, "K blocks (FPRev)")
            for r, j in enumerate(chunk):
                v = out[r, 0] / small
                cache[j] = -1 if not (np.isfinite(v) and v == int(v)) else K - int(v)

    budget = 48                                  # calls for the sampled spine
    stride = max(1, -(-(K - 1) // (M * budget)))
    sizes(list(range(1, K, stride)) + [K - 1])
    ends = [K]
    cur = K
    while cur > 1:
        run = sorted(j for j, v in cache.items() if v == cur)
        if not run:
            break
        lo = run[0]
        # the block's first product: the smallest j with |T| = cur (bisect between samples)
        below = max((j for j in cache if j < lo), default=0)
        while lo - below > 1:
            mid = (lo + below) // 2
            sizes([mid])
            if cache[mid] == cur:
                lo = mid
            else:
                below = mid
        sizes(list(range(lo, min(cur, lo + 3))))
        if lo < 1 or any(cache[j] != cur for j in range(lo, min(cur, lo + 3))):
            break
        if cur - lo == 1 and len(ends) > 1:
            break               # one product: the chain inside the first block
        ends.append(lo)
        cur = lo
    if len(ends) == 2 and ends[0] - ends[1] == 1:
        ends.pop()              # only the last product alone: a chain's top
    blocks = sorted(ends)
    if len(blocks) < 2:
        return None, Finding(None, f"one block: |T(0, j)| = {K} only for j = {K - 1} ... "
                             "(no chain of K blocks)", [])
    spans = [(0, blocks[0])] + list(zip(blocks, blocks[1:]))
    return spans, Finding([b - a for a, b in spans], f"FPRev rows: |T(0, j)| is constant "
                          f"on each block past the first ({len(cache)} queries)", [])


def _rules(spans: list[tuple[int, int]], K: int) -> list[Accumulation]:
    """Block settings that give exactly ``spans``: a rule where one does,
    else none (the candidates then carry no blocks)."""
    first = spans[0][1]
    out = []
    for rule, units in (("uniform", (1,)), ("halve_up", (16, 8, 4, 2)), ("halve", (1,)),
                        ("even_halves", (1,))):
        for u in units:
            a = Accumulation(k_block=first, k_block_rule=rule, k_unroll=u)
            if a.blocks(K) == spans:
                out.append(a)
                break
    return out


# -- stage 2: candidates -----------------------------------------------------------------


def _inner(acc: str, products: str) -> list[Accumulation]:
    """The family of accumulations inside one block."""
    base = Accumulation(accumulator=acc, products=products)
    out = [base]
    if acc == "fp32":
        out.append(base.replace(pair_swap=True))
    out += [base.replace(apart=g) for g in (4, 2, 8)]   # runs of 2g, the last g apart
    for w in (4, 8, 16, 2):
        for join in (JOINS if w > 2 else JOINS[:1]):     # two lanes join one way
            for tail in TAILS:
                out.append(base.replace(lanes=w, join=join, tail=tail))
    for w in (2, 4, 8):                 # a main loop unrolled past the lanes
        for join in (JOINS if w > 2 else JOINS[:1]):
            for tail in ("lane0", "after"):
                for u in (8, 16):
                    if u > w:
                        out.append(base.replace(lanes=w, join=join, tail=tail, unroll=u))
    return out


def candidates(rd: _Read, spans: list[tuple[int, int]] | None
               ) -> list[list[tuple[str, Callable[..., np.ndarray]]]]:
    """Stages of ``(name, run)`` pairs, ``run(A, B, C, rows, cols)`` giving
    float64 output values at those output elements: the library rows first,
    then the family with FMA in the natural accumulator, then rounded
    products, then the other accumulator.  The fit stops at the first stage
    that explains every sampled element."""
    fa, fout, K = rd.fa, rd.fout, rd.K
    libs: list[tuple[str, Callable[..., np.ndarray]]] = []
    for (lib, fmt, o), row in sorted(CPU_LIBRARIES.items()):
        if fmt != fa.name or o != fout.name or row.inputs[1] != rd.fb.name:
            continue
        for threads in (1, 2):
            g = CPUGEMM(row, threads)
            if _decoded(g, rd):
                libs.append((f"{lib} {fmt} -> {o} (threads={threads})", _row_runner(g)))
    gpus: list[tuple[str, Callable[..., np.ndarray]]] = []
    if rd.M * K * rd.N <= _GPU_WORK and fout.name in ("fp32", "fp16", "bf16"):
        for names, model in _units(fa, rd.fb, fout):
            try:
                g = LibraryGEMM(model, Schedule(), out=fout.name)
            except ValueError:
                continue
            gpus.append((f"{'/'.join(names)} {fa.name} -> {model.params.output} instruction "
                         "chained along K", _gpu_runner(g, fa, rd.fb, fout)))
    wide = fa.precision > 24 or rd.fb.precision > 24
    accs = ["fp64"] if wide else ["fp32", "fp64"]
    block_opts: list[Accumulation | None] = [None]
    if spans is not None:
        block_opts += _rules(spans, K)[:1] or [Accumulation(k_block=spans[0][1])]
    else:
        block_opts += [Accumulation(k_block=q) for q in _BLOCKS if q < K]
    cjoins = ("first", "start", "last", "output") if rd.caller.with_c else ("first",)
    stages = [libs + gpus]
    seen = set()
    for acc, products in ([(accs[0], "fma"), (accs[0], "rounded")]
                          + [(a, p) for a in accs[1:] for p in ("fma", "rounded")]):
        stage = []
        for blk in block_opts:
            for a in _inner(acc, products):
                if blk is not None and a.lanes > 1 and spans is None:
                    continue                  # guessed blocks: chains only
                if blk is not None:
                    a = a.replace(k_block=blk.k_block, k_block_rule=blk.k_block_rule,
                                  k_unroll=blk.k_unroll)
                for cj in cjoins:
                    c = a.replace(c_joins=cj)
                    if c not in seen:
                        seen.add(c)
                        stage.append((str(c), _acc_runner(c, fout.name)))
        stages.append(stage)
    return stages


def _decoded(g: CPUGEMM, rd: _Read) -> bool:
    """Whether every output element at this size has a decoded accumulation."""
    return all(p.accumulation is not None for _reg, p in g.plan(rd.M, rd.K, rd.N))


def _full_runner(g: Any, full: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    """A candidate that computes the whole output (a library row, a GPU
    instruction), ``full(A, B, C)`` as float64 values: each input set's
    output is computed once and read at every set of elements asked."""
    seen: list[tuple[np.ndarray, np.ndarray, Any, np.ndarray]] = []

    def run(A: np.ndarray, B: np.ndarray, C: np.ndarray | None, rows: np.ndarray,
            cols: np.ndarray) -> np.ndarray:
        for a, b, c, out in seen:
            if a is A and b is B and c is C:
                return out[rows, cols]
        out = full(A, B, C)
        seen[:] = ([(A, B, C, out)] + seen)[:4]
        return out[rows, cols]
    run.full = True  # type: ignore[attr-defined]
    run.gemm = g  # type: ignore[attr-defined]
    return run


def _row_runner(g: CPUGEMM) -> Callable[..., np.ndarray]:
    return _full_runner(g, lambda A, B, C: g.compute(A, B, C).astype(np.float64))


def _gpu_runner(g: LibraryGEMM, fa: Format, fb: Format, fout: Format
                ) -> Callable[..., np.ndarray]:
    def full(A: np.ndarray, B: np.ndarray, C: np.ndarray | None) -> np.ndarray:
        args = [to_dtype(A, fa), to_dtype(B, fb)]
        if C is not None:
            args.append(to_dtype(C, fout))
        with np.errstate(all="ignore"):
            return np.asarray(g(*args, workers=1)).astype(np.float64)
    return _full_runner(g, full)


def _acc_runner(acc: Accumulation, out: str) -> Callable[..., np.ndarray]:
    def run(A: np.ndarray, B: np.ndarray, C: np.ndarray | None, rows: np.ndarray,
            cols: np.ndarray) -> np.ndarray:
        # the elements' rows and columns gathered in pieces of at most
        # 2**22 values each, whatever the size
        step = max(1, (1 << 22) // max(A.shape[1], 1))
        res = np.empty(rows.size)
        for lo in range(0, rows.size, step):
            r, k = rows[lo:lo + step], cols[lo:lo + step]
            c = None if C is None else C[r, k]
            with np.errstate(all="ignore"):
                res[lo:lo + step] = _chains.run(acc, A[r], B[:, k].T, c, out)
        return res
    run.accumulation = acc  # type: ignore[attr-defined]
    return run


# -- stages 3 to 5 -----------------------------------------------------------------------


def _same(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return (x == y) | (np.isnan(x) & np.isnan(y)) if x.size else np.zeros(0, bool)


def _same_bits(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return _same(x, y) & (np.signbit(x) == np.signbit(y))


def probe_size(caller: GemmCaller, fa: Format, fb: Format, fout: Format,
               size: tuple[int, int, int], seed: int) -> dict[str, Any]:
    """Run the stages; returns a dict: ``findings``, ``gemm`` (a
    :class:`~fpsim.mma.cputable.CPUGEMM` or None), ``matches`` (library rows
    that reproduce), ``reproduces``, ``mismatches``, ``equivalent``."""
    rng = np.random.default_rng(seed)
    rd = _Read(caller, fa, fb, fout, size, rng)
    M, K, N = size
    f: dict[str, Finding] = {}
    spans, f["k_blocks"] = read_blocks(rd)
    stages = candidates(rd, spans)
    cands = [c for st in stages for c in st]
    trials = []
    for spread, cancel in ((20, False), (20, True)):
        A, B, C = rd.inputs(spread, cancel)
        trials.append((A, B, C, rd.call(A, B, C, "random inputs")))
    # stage 3a: sampled elements, stage by stage
    # random elements, and every element of the first 24 rows' first 24 and
    # last 17 columns and of the last 4 rows' last 17 (a kernel's tiles and
    # tails, which a random sample can miss)
    idx = rng.permutation(M * N)[:_SAMPLE]
    cols_seen = sorted(set(range(min(N, 24))) | set(range(max(0, N - 17), N)))
    edge = ([r * N + c for r in range(min(M, 24)) for c in cols_seen]
            + [r * N + c for r in range(max(0, M - 4), M) for c in range(max(0, N - 17), N)])
    idx = np.unique(np.concatenate([idx, np.array(edge, dtype=np.int64)]))
    rows, cols = idx // N, idx % N
    fits: list[tuple[str, Callable[..., np.ndarray], np.ndarray]] = []
    covered = np.zeros(idx.size, bool)
    tried = 0
    # the trials side by side (an accumulation's elements are independent):
    # one run of a candidate reads both
    Acat = np.vstack([t[0] for t in trials])
    Bcat = np.hstack([t[1] for t in trials])
    Ccat = None if trials[0][2] is None else np.block([[trials[0][2], np.zeros((M, N))],
                                                       [np.zeros((M, N)), trials[1][2]]])
    rcat = np.concatenate([rows, rows + M])
    ccat = np.concatenate([cols, cols + N])
    want = np.concatenate([t[3][rows, cols] for t in trials])
    for stage in stages:
        for name, run in stage:
            tried += 1
            if hasattr(run, "accumulation"):
                got = _same_bits(run(Acat, Bcat, Ccat, rcat, ccat), want)
                ok = got[:idx.size] & got[idx.size:]
            else:
                ok = np.ones(idx.size, bool)
                for A, B, C, D in trials:
                    ok &= _same_bits(run(A, B, C, rows, cols), D[rows, cols])
            if ok.any():
                fits.append((name, run, ok))
                covered |= ok
        if covered.all():
            break
    # stage 3b: one candidate that fits every sampled element (a library row
    # first); else a cover of the sample by accumulations (each a region of
    # the result), the widest-fitting first; then whole outputs
    fits.sort(key=lambda t: -int(t[2].sum()))
    whole = [(name, run) for name, run, ok in fits if ok.all()]
    chosen: list[tuple[str, Callable[..., np.ndarray]]] = whole[:1]
    left = np.zeros(idx.size, bool) if whole else np.ones(idx.size, bool)
    for name, run, ok in fits:
        if not left.any():
            break
        if hasattr(run, "accumulation") and (ok & left).any():
            chosen.append((name, run))
            left &= ~ok
    allr, allc = np.divmod(np.arange(M * N), N)
    good = np.ones((len(chosen), M * N), bool)
    for i, (_name, run) in enumerate(chosen):
        for A, B, C, D in trials:
            good[i] &= _same_bits(run(A, B, C, allr, allc), D.ravel())
    # elements two regions' candidates both fit: more cancelling inputs decide
    for _ in range(_SEPARATE if len(chosen) > 1 else 0):
        both = good.sum(axis=0) > 1
        if not both.any():
            break
        A, B, C = rd.inputs(20, True)
        D = rd.call(A, B, C, "separating regions").ravel()
        for i, (_name, run) in enumerate(chosen):
            sel = both & good[i]
            good[i, sel] = _same_bits(run(A, B, C, allr[sel], allc[sel]), D[sel])
    owner = (np.where(good.any(axis=0), good.argmax(axis=0), -1) if chosen
             else np.full(M * N, -1))
    # stage 4: separate each chosen candidate from those that fit the same
    # sampled elements, on fresh inputs where the two disagree
    equivalent: list[list[str]] = []
    for i, (name, run) in enumerate(chosen):
        mine = owner == i
        pick = idx[mine[idx]]
        if not pick.size:
            continue
        pr, pc = allr[pick], allc[pick]
        group = [(name, run)]
        for n, r, ok in fits:
            if n == name or not ok[mine[idx]].all():
                continue
            for _ in range(_SEPARATE):
                A, B, C = rd.inputs(int(rng.integers(2, 40)), bool(rng.integers(2)))
                x, y = group[0][1](A, B, C, pr, pc), r(A, B, C, pr, pc)
                if not _same_bits(x, y).all():
                    D = rd.call(A, B, C, "separating candidates")[pr, pc]
                    if _same_bits(y, D).all():       # the rival wins: it leads the group
                        group = [(n, r)]
                    elif not _same_bits(x, D).all():
                        owner[mine] = -1
                    f["separation"] = Finding(group[0][0], "candidates that fit the same "
                                              "elements were run where they disagree")
                    break
            else:
                group.append((n, r))
        chosen[i] = group[0]
        if len(group) > 1:
            equivalent.append([g[0] for g in group])
    # two regions whose candidates became the same one are one region
    first = {}
    for i, (name, _run) in enumerate(chosen):
        j = first.setdefault(name, i)
        if j != i:
            owner[owner == i] = j
    gemm = _result_gemm(chosen, owner.reshape(M, N), fa, fb, fout, size)
    # stage 5: check on fresh inputs
    mismatches = int((owner < 0).sum())
    if gemm is not None and mismatches == 0:
        for spread, cancel in ((0, False), (3, True), (40, True)):
            A, B, C = rd.inputs(spread, cancel)
            D = rd.call(A, B, C, "the check")
            got = _values_of(gemm, A, B, C, fa, fb, fout)
            mismatches += int((~_same_bits(got, D)).sum())
    elif gemm is None and mismatches == 0:
        mismatches = -1                     # regions of several library calls: no one callable
    names = [n for i, (n, _) in enumerate(chosen) if (owner == i).any()]
    lib = [n for n, r in cands if getattr(r, "full", False)
           and all(_same_bits(r(A, B, C, allr, allc), D.ravel()).all() for A, B, C, D in trials)]
    regions = (gemm.describe(M, K, N) if isinstance(gemm, CPUGEMM) else
               repr(gemm) if gemm is not None else "-")
    f["accumulation"] = Finding(names[0] if len(names) == 1 else (names or None),
                                f"{tried} candidates tried; regions: {regions}")
    return dict(findings=f, gemm=gemm, matches=lib, reproduces=gemm is not None and mismatches == 0,
                mismatches=mismatches, equivalent=equivalent, candidates=tried)


def _result_gemm(chosen: list[tuple[str, Callable[..., np.ndarray]]], owner: np.ndarray,
                 fa: Format, fb: Format, fout: Format, size: tuple[int, int, int]
                 ) -> Any:
    """A :class:`CPUGEMM` whose parts are the chosen accumulations on their
    regions (rectangles of equal owner), valid at this size only."""
    M, K, N = size
    when = f"M == {M} and K == {K} and N == {N}"
    parts = [Part(None, when="1 == 1", source=f"the probe read only M={M}, K={K}, N={N}")]
    rects: list[tuple[int, int, int, int, int]] = []
    for r in range(M):
        c = 0
        while c < N:
            e = c
            while e < N and owner[r, e] == owner[r, c]:
                e += 1
            rects.append((r, r + 1, c, e, int(owner[r, c])))
            c = e
    merged: list[list[int]] = []
    for r0, r1, c0, c1, o in rects:
        for m in merged:
            if m[1] == r0 and m[2] == c0 and m[3] == c1 and m[4] == o:
                m[1] = r1
                break
        else:
            merged.append([r0, r1, c0, c1, o])
    for r0, r1, c0, c1, o in merged:
        if o < 0:
            acc = None
        else:
            run = chosen[o][1]
            acc = getattr(run, "accumulation", None)
            if acc is None:                    # a library row: its own plan
                return _row_result(chosen, owner, fa, fb, fout, size)
        parts.append(Part(acc, when=when, rows=f"{r0}:{r1}", cols=f"{c0}:{c1}",
                          source="fpsim.mma.probe at this size"))
    row = CPULibrary("probed", (fa.name, fb.name), fout.name,
                     f"the probed callable at M={M}, K={K}, N={N}", "fpsim.mma.probe",
                     tuple(parts))
    return CPUGEMM(row)


def _row_result(chosen: list[tuple[str, Callable[..., np.ndarray]]], owner: np.ndarray,
                fa: Format, fb: Format, fout: Format, size: tuple[int, int, int]) -> Any:
    """Where a library row or a GPU instruction was chosen, the result is its
    own callable, when it gives every element (None where it shares the
    output with others: no one callable is built then)."""
    if (owner == 0).all():
        return getattr(chosen[0][1], "gemm", None)
    return None


def _values_of(gemm: Any, A: np.ndarray, B: np.ndarray, C: np.ndarray | None,
               fa: Format, fb: Format, fout: Format) -> np.ndarray:
    """The float64 values ``gemm`` gives on values ``A``, ``B``, ``C``."""
    if isinstance(gemm, CPUGEMM):
        return gemm.compute(A, B, C).astype(np.float64)
    args = [to_dtype(A, fa), to_dtype(B, fb)] + ([] if C is None else [to_dtype(C, fout)])
    with np.errstate(all="ignore"):
        return np.asarray(gemm(*args)).astype(np.float64)
