"""The matrix instructions that are chains of IEEE fused multiply-adds
(FP64 ``mma.sync``/``v_mfma_f64``, CDNA's FP32 ``v_mfma_f32_*_f32``)
against MMA-Sim 2.1.1 itself (``tox -e mmasim``; issue 44, item 4).

MMA-Sim models each as ``MMA_FMA`` (``mmasim/arithmetic/fma.py``): ``c``
then one fused multiply-add per product, in order, through the host CPU's
``fma`` (a small C++ extension it builds).  fpsim's rows
(``fpsim.mma.presets.FMA_CHAINS``, :class:`fpsim.mma.FMAChainModel`) run
the CPU engine's chains (``fpsim.mma._chains``).  Every MMA-Sim instruction
of this kind (:func:`test_mmasim_instructions.fma_chain`) is run on rows of
its own ``K`` and on its own tile call:

* ``random``: uniform finite codes, and values of a few binades;
* ``adversarial``: products cancelling in pairs with ``c`` the negated sum
  (each a few ulps off in half the rows), FP ties (``c`` of an odd or even
  last bit, products of half its ulp, a few ulps off the tie), one large
  product and the others 20 to 80 binades below, subnormal inputs and
  products and sums near the smallest normal, products and ``c`` near the
  largest finite value (overflow), signed zeros everywhere;
* ``special``: NaNs (quiet, signalling, both signs, payloads) in ``a``,
  ``b`` or ``c``, infinite products, ``0 × Inf``, ``Inf − Inf``, an
  infinite ``c`` of either sign.

Every bit of every finite and infinite output is compared, signed zeros
included.  A NaN must be a NaN in both, and fpsim's is the unit's
documented code (``FMAChainModel.nan``): MMA-Sim's NaNs are the host CPU's
(x86: the default NaN ``0xFFF8…``/``0xFFC0…`` for an invalid operation,
an input NaN's payload passed on), no model of the GPU.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("mmasim.nv_ptx")

from test_mmasim_instructions import (  # noqa: E402
    GPU,
    _mmasim_instructions,
    _preset,
    fma_chain,
    why_fpsim_lacks,
)

from fpsim import mma  # noqa: E402

ROWS = 3000
DT = {"fp64": (np.float64, np.uint64, torch.float64, torch.int64, 52, 11),
      "fp32": (np.float32, np.uint32, torch.float32, torch.int32, 23, 8)}


def _chains() -> list:
    return [pytest.param(i, id=i.id) for i in _mmasim_instructions()[0]
            if fma_chain(i) and why_fpsim_lacks(i) is None]


def _fmt(name: str):
    dt, ut, _, _, m, e = DT[name]
    return dt, ut, m, e


def _cast(x: np.ndarray, name: str) -> np.ndarray:
    with np.errstate(over="ignore"):
        return np.asarray(x, np.float64).astype(DT[name][0])


def _finite_codes(rng, name: str, shape) -> np.ndarray:
    dt, ut, m, e = _fmt(name)
    bits = 8 * np.dtype(ut).itemsize
    c = rng.integers(0, 1 << bits, shape, dtype=np.uint64).astype(ut)
    top = ut((1 << e) - 1) << ut(m)
    bad = (c & top) == top
    c[bad] ^= ut(1) << ut(m + e - 1)        # exponent field all ones: clear its top bit
    return c.view(dt)


def _binades(rng, name: str, lo: int, hi: int, shape, sign=True) -> np.ndarray:
    x = np.ldexp(1 + rng.random(shape), rng.integers(lo, hi, shape))
    if sign:
        x = np.where(rng.random(shape) < 0.5, -x, x)
    return _cast(x, name)


def _random(rng, name, n, K):
    h = n // 2
    a, b, c = (_finite_codes(rng, name, s) for s in ((n, K), (n, K), n))
    a[h:] = _binades(rng, name, -3, 4, (n - h, K))
    b[h:] = _binades(rng, name, -3, 4, (n - h, K))
    c[h:] = _binades(rng, name, -2, 6, n - h)
    c[h:][rng.random(n - h) < 0.2] = 0
    return a, b, c


def _adversarial(rng, name, n, K):
    dt, ut, m, e = _fmt(name)
    emax, emin = (1 << (e - 1)) - 1, 2 - (1 << (e - 1))
    ulp = 2.0 ** -m
    a = _binades(rng, name, -2, 3, (n, K))
    b = _binades(rng, name, -2, 3, (n, K))
    c = _binades(rng, name, -2, 3, n)
    kinds = np.arange(n) % 6
    for kind in range(6):
        r = np.flatnonzero(kinds == kind)
        s = r.size
        if kind == 0 and K >= 2:            # cancelling pairs, c the negated sum
            half = K // 2
            a[np.ix_(r, range(half, 2 * half))] = a[np.ix_(r, range(half))]
            off = 1 + rng.integers(-3, 4, (s, half)) * ulp * (rng.random((s, half)) < 0.5)
            b[np.ix_(r, range(half, 2 * half))] = _cast(-b[np.ix_(r, range(half))] * off, name)
            p = a[r].astype(np.float64) * b[r].astype(np.float64)
            c[r] = _cast(-p.sum(axis=1) * np.where(rng.random(s) < 0.5, 1, 1 + ulp), name)
        elif kind == 1:                     # ties: c of either last bit, products ulp/2
            c[r] = _cast((1 + rng.integers(0, 4, s) * ulp) * rng.choice([-1, 1], s), name)
            a[r] = _cast(2.0 ** -(m // 2 + 1) * (1 + rng.integers(-2, 3, (s, K)) * ulp), name)
            b[r] = _cast(2.0 ** -(m - m // 2) * (1 + rng.integers(-2, 3, (s, K)) * ulp)
                         * rng.choice([-1, 1], (s, K)), name)
        elif kind == 2:                     # one large product, the rest far below
            big = rng.integers(0, K, s)
            scale = np.exp2(-rng.integers(20, 81, (s, K)).astype(float))
            scale[np.arange(s), big] = 1
            a[r] = _cast(a[r] * scale, name)
        elif kind == 3:                     # subnormal inputs, products and sums
            a[r] = _binades(rng, name, emin - m, emin + 2, (s, K))
            b[r] = _binades(rng, name, -2, 3, (s, K))
            b[r][rng.random((s, K)) < 0.3] = _cast(2.0 ** -m, name)
            c[r] = _binades(rng, name, emin - m, emin + 1, s)
        elif kind == 4:                     # near the largest finite value
            a[r] = _binades(rng, name, emax - 2, emax + 1, (s, K))
            b[r] = _binades(rng, name, -1, 2, (s, K), sign=False)
            c[r] = _binades(rng, name, emax - 1, emax + 1, s)
        else:                               # signed zeros anywhere
            for arr in (a, b):
                z = rng.random((s, K)) < 0.4
                sub = arr[r]
                sub[z] = np.where(rng.random(int(z.sum())) < 0.5, -0.0, 0.0)
                arr[r] = sub
            c[r] = np.where(rng.random(s) < 0.5, -0.0, 0.0)
    return a, b, c


def _special(rng, name, n, K):
    dt, ut, m, e = _fmt(name)
    a, b, c = _random(rng, name, 2 * n, K)
    a, b, c = a[n:], b[n:], c[n:]
    top = ((1 << e) - 1) << m
    pays = [1, 1 << (m - 1), (1 << (m - 1)) | 1, (1 << m) - 1]
    nans = np.array([s | top | p for s in (0, 1 << (m + e)) for p in pays], np.uint64)
    nans = nans.astype(ut).view(dt)
    inf = dt(np.inf)
    r = np.arange(n)
    j = rng.integers(0, K, n)
    j2 = (j + 1) % K
    for s in range(9):
        rows = r[r % 9 == s]
        q = rows.size
        jj, jj2 = j[rows], j2[rows]
        if s == 0:
            a[rows, jj] = rng.choice(nans, q)
        elif s == 1:
            b[rows, jj] = rng.choice(nans, q)
        elif s == 2:
            c[rows] = rng.choice(nans, q)
        elif s == 3:                        # an infinite product
            a[rows, jj] = inf * rng.choice([-1, 1], q)
        elif s == 4:                        # 0 x Inf
            a[rows, jj] = inf
            b[rows, jj] = rng.choice([-0.0, 0.0], q)
        elif s == 5 and K >= 2:             # Inf - Inf among the products
            a[rows, jj] = inf
            a[rows, jj2] = -inf
            b[rows, jj] = b[rows, jj2] = 1
        elif s == 6:                        # an infinite product and c Inf of either sign
            a[rows, jj] = inf
            b[rows, jj] = 1
            c[rows] = inf * rng.choice([-1, 1], q)
        elif s == 7:                        # c Inf alone
            c[rows] = inf * rng.choice([-1, 1], q)
        else:                               # NaN and Inf in b, NaN in c
            b[rows, jj] = rng.choice(nans, q)
            b[rows, jj2] = inf
            c[rows] = rng.choice(nans, q)
    return a, b, c


MAKERS = {"random": _random, "adversarial": _adversarial, "special": _special}


def _mmasim_rows(i, a, b, c) -> np.ndarray:
    _, ut, tdt, tint, _, _ = DT[i.d]
    out = i.op().dpa(torch.from_numpy(a), torch.from_numpy(b), torch.from_numpy(c))
    return out.contiguous().view(tint).numpy().view(ut)


def _compare(i, unit, got: np.ndarray, want: np.ndarray, where: str) -> None:
    dt, ut = DT[i.d][0], DT[i.d][1]
    g, w = got.view(dt), want.view(dt)
    gn, wn = np.isnan(g), np.isnan(w)
    assert np.array_equal(gn, wn), f"{i.id} {where}: NaN in one only, rows " \
        f"{np.flatnonzero(gn != wn)[:5]}"
    assert (got[gn] == ut(unit.nan)).all(), f"{i.id} {where}: a NaN is not the unit's code"
    bad = np.flatnonzero((got != want) & ~gn)
    assert not bad.size, (f"{i.id} {where}: {bad.size} of {got.size} differ; first row "
                          f"{bad[0]}: fpsim {g.ravel()[bad[0]]!r}, MMA-Sim {w.ravel()[bad[0]]!r}")


@pytest.mark.parametrize("rows", list(MAKERS))
@pytest.mark.parametrize("i", _chains())
def test_fma_chain_instruction_equals_mmasim(i, rows):
    assert i.a == i.b == i.c == i.d
    rng = np.random.default_rng(sum(map(ord, i.id + rows)) * 7919)
    a, b, c = MAKERS[rows](rng, i.a, ROWS, i.k)
    unit = _preset(i)
    assert isinstance(unit, mma.FMAChainModel) and i.k <= unit.k
    got = unit(a, b, c).view(DT[i.d][1])
    _compare(i, unit, got, _mmasim_rows(i, a, b, c), rows)


@pytest.mark.parametrize("i", _chains())
def test_fma_chain_tile_equals_mmasim(i):
    """MMA-Sim's own call on an ``m × n × k`` tile (one element in fifty a
    special); fpsim on the same rows and on ``ops.matmul``."""
    from fpsim import ops

    rng = np.random.default_rng(sum(map(ord, i.id)) * 31)
    op = i.op()
    M, N, K = op.m, op.n, i.k
    A = _binades(rng, i.a, -3, 4, (M, K))
    B = _binades(rng, i.b, -3, 4, (K, N))
    C = _binades(rng, i.c, -2, 6, (M, N))
    for arr in (A, B, C):
        hit = rng.random(arr.shape) < 0.02
        arr[hit] = rng.choice(np.array([np.nan, np.inf, -np.inf, 0.0, -0.0], arr.dtype),
                              int(hit.sum()))
    _, ut, _, tint, _, _ = DT[i.d]
    want = op(torch.from_numpy(A), torch.from_numpy(B), torch.from_numpy(C))
    want = want.contiguous().view(tint).numpy().view(ut)
    unit = _preset(i)
    a3 = np.broadcast_to(A[:, None, :], (M, N, K))
    b3 = np.broadcast_to(B.T[None, :, :], (M, N, K))
    _compare(i, unit, unit(a3, b3, C).view(ut), want, "tile")
    _compare(i, unit, ops.matmul(A, B, accumulate=unit, c=C).view(ut), want, "ops.matmul")


def test_every_fma_chain_row_is_an_mmasim_instruction():
    """Each row of fpsim.mma.presets.FMA_CHAINS is cross-checked above
    through one of its GPUs (and MMA-Sim has no such instruction fpsim lacks)."""
    from fpsim.mma.presets import FMA_CHAINS, GPUS

    checked = {(GPU[i.arch], i.a) for i in (p.values[0] for p in _chains())}
    for arch, fmt, _k, _nan in FMA_CHAINS:
        gpus = [g for g, (a, _l) in GPUS.items() if a == arch]
        assert any((g, fmt) in checked for g in gpus), (arch, fmt)
    assert all(why_fpsim_lacks(i) is None or GPU[i.arch] is None
               for i in _mmasim_instructions()[0] if fma_chain(i))
