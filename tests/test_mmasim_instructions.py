"""Every matrix instruction that fpsim and MMA-Sim both model, cross-checked
bit for bit (``tox -e mmasim``; issue 44, item 4).

MMA-Sim (``mmasim`` 2.1.1, Microsoft, arXiv 2511.10909) models ``mma.sync``
on Volta to RTX Blackwell, Hopper's ``wgmma``, Blackwell's ``tcgen05.mma``
and CDNA1-3's ``v_mfma``, each validated by its authors against the GPUs.
Its instruction lists (``mmasim.nv_ptx.isa_*``, ``mmasim.amd.isa_mfma``) are
read here, not copied: every instruction is either cross-checked against
the fpsim preset of the same GPU, input and output formats, or
:func:`why_fpsim_lacks` names the reason fpsim has none, and a new MMA-Sim
instruction fails ``test_every_mmasim_instruction_is_cross_checked_or_named``
until it is one or the other (:data:`FPSIM_ONLY`: the other way round).
Instructions that differ only in ``m`` and ``n`` run the same arithmetic in
MMA-Sim (checked here), so one of them stands for all.

Each instruction is run on rows ``d = a·b + c`` of its own ``K`` (MMA-Sim's
``dpa``, the per-output call its tile call is built on; fpsim's preset,
``chain=True`` where ``K`` spans several of its blocks):

* ``random``: uniform finite codes, and values of a few binades;
* ``adversarial``: cancellation (products cancelling in pairs, ``c`` the
  negated sum), alignment truncation (one large product, the others 5 to
  40 binades below it, of either sign), subnormal inputs and products near
  the output's smallest normal, the largest exponents (products and ``c``
  overflowing the output), every term below the output's normal range
  (``c`` zero or subnormal), and exponents drawn from the extremes of the
  codes;
* ``special``: NaNs of every code the format has (in ``a``, ``b`` or ``c``),
  ±Inf products and ``c``, Inf − Inf, 0 × Inf;
* ``tile``: the instruction's own call on an ``m × n × k`` tile.

Every bit of every output is compared, NaN codes included: MMA-Sim writes
PTX's canonical NaN (``0x7FFFFFFF`` / ``0x7FFF``) for every NVIDIA
instruction, as fpsim's NVIDIA presets do.  On AMD the codes differ on
purpose (:data:`NAN_NOT_MMASIMS`): MMA-Sim's CDNA3 writes the same
``0x7FFFFFFF`` through the routine its NVIDIA models share, and its CDNA1
and CDNA2 models compute in torch's float arithmetic, so that their NaNs are
the host CPU's (x86's ``0xFFC00000``, input payloads passed on); there a NaN
must be a NaN and its code fpsim's documented AMD NaN, ``0x7FC00000``.

Where fpsim differs from MMA-Sim on purpose, a test names the preset and
the evidence: ``b200-fit`` (recorded B200 rows), the AMD NaN code.  Rows on
which the two may differ are classed, row by row, in
:data:`NAMED_DIFFERENCES`: each a predicate on a row's inputs and both
outputs, with its evidence, the instructions it applies to, and a bound on
the rows it may cover; ``test_named_differences_cover_few_rows`` (last)
prints how many rows each covered (``pytest -s``).  A failure counts the
rows no named difference covers by kind (finite values, NaN codes, other: a
NaN against a number, or an infinity) and shows the first of each.
"""

from __future__ import annotations

import collections
import functools
import math
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import ml_dtypes
import numpy as np
import pytest

torch = pytest.importorskip("torch")
nv = pytest.importorskip("mmasim.nv_ptx")
amd = pytest.importorskip("mmasim.amd")

from mmasim.amd import isa_mfma  # noqa: E402
from mmasim.nv_ptx import isa_mma, isa_tcgen05mma, isa_wgmma  # noqa: E402

from fpsim import mma  # noqa: E402

ROWS = {"random": 4096, "adversarial": 4096, "special": 2048}

# -- the formats, described here (independently of fpsim.formats) -------------------


class Fmt(NamedTuple):
    """A binary format's fields: ``kind`` is ``ieee`` (the all-ones exponent
    is Inf/NaN), ``fn`` (E4M3: no Inf, S.1111.111 NaN) or ``fnuz`` (no Inf,
    no -0, 0x80 the only NaN).  ``shift``: the code's place in its storage
    word (TF32 in the top 19 bits of an FP32 word)."""
    name: str
    ebits: int
    mbits: int
    kind: str
    np_dtype: object
    torch_dtype: object
    store: object            # numpy unsigned dtype of the storage word
    shift: int = 0

    @property
    def width(self) -> int:
        return 1 + self.ebits + self.mbits

    @property
    def bias(self) -> int:
        return (1 << (self.ebits - 1)) - (0 if self.kind == "fnuz" else 1)

    @property
    def emin(self) -> int:        # exponent of the smallest normal
        return 1 - self.bias

    @property
    def emax(self) -> int:        # exponent of the largest finite value
        top = (1 << self.ebits) - (2 if self.kind == "ieee" else 1)
        return top - self.bias

    @property
    def has_inf(self) -> bool:
        return self.kind == "ieee"

    @property
    def magnitude(self) -> int:
        return (1 << (self.ebits + self.mbits)) - 1

    @property
    def sign(self) -> int:
        return 1 << (self.ebits + self.mbits)

    @property
    def max_finite(self) -> int:
        if self.kind == "ieee":
            return self.magnitude - (1 << self.mbits)
        return self.magnitude - (1 if self.kind == "fn" else 0)

    @property
    def largest(self) -> float:
        """The largest finite value."""
        top = self.max_finite >> self.mbits
        frac = self.max_finite & ((1 << self.mbits) - 1)
        return float(np.ldexp(1 + frac / (1 << self.mbits), top - self.bias))

    @property
    def inf(self) -> int:
        return self.magnitude - ((1 << self.mbits) - 1)

    def nans(self) -> list[int]:
        """The NaN codes worth trying: both signs, quiet and signalling,
        the smallest and largest payloads."""
        if self.kind == "fnuz":
            return [self.sign]
        if self.kind == "fn":
            return [self.magnitude, self.sign | self.magnitude]
        m = self.mbits
        pays = sorted({1, 1 << (m - 1), (1 << (m - 1)) | 1, (1 << m) - 1, 1 << max(m - 2, 0)})
        return [s | self.inf | p for s in (0, self.sign) for p in pays]

    def special(self, codes: np.ndarray) -> np.ndarray:
        codes = codes.astype(np.int64)
        if self.kind == "fnuz":
            return codes == self.sign
        if self.kind == "fn":
            return (codes & self.magnitude) == self.magnitude
        return (codes & self.inf) == self.inf

    def words(self, codes: np.ndarray) -> np.ndarray:
        return (codes.astype(np.uint64) << np.uint64(self.shift)).astype(self.store)

    def numpy(self, codes: np.ndarray) -> np.ndarray:
        return self.words(codes).view(self.np_dtype)

    def torch(self, codes: np.ndarray):
        signed = {np.uint8: np.int8, np.uint16: np.int16, np.uint32: np.int32}[self.store]
        return torch.from_numpy(self.words(codes).view(signed).copy()).view(self.torch_dtype)

    def codes_of(self, x: np.ndarray) -> np.ndarray:
        """Codes of float64 values ``x`` (finite), rounded to nearest
        (TF32: toward zero), clipped to the largest finite value."""
        x = np.clip(np.nan_to_num(x), -self.largest, self.largest)
        if self.name == "tf32":
            return (x.astype(np.float32).view(np.uint32) >> 13).astype(np.int64)
        v = x.astype(np.float32).astype(self.np_dtype) if self.width == 8 else \
            x.astype(self.np_dtype)
        return v.view(self.store).astype(np.int64) >> self.shift


FORMATS = {f.name: f for f in (
    Fmt("fp16", 5, 10, "ieee", np.float16, torch.float16, np.uint16),
    Fmt("bf16", 8, 7, "ieee", ml_dtypes.bfloat16, torch.bfloat16, np.uint16),
    Fmt("tf32", 8, 10, "ieee", np.float32, torch.float32, np.uint32, 13),
    Fmt("fp32", 8, 23, "ieee", np.float32, torch.float32, np.uint32),
    Fmt("e4m3", 4, 3, "fn", ml_dtypes.float8_e4m3fn, torch.float8_e4m3fn, np.uint8),
    Fmt("e5m2", 5, 2, "ieee", ml_dtypes.float8_e5m2, torch.float8_e5m2, np.uint8),
    Fmt("e4m3fnuz", 4, 3, "fnuz", ml_dtypes.float8_e4m3fnuz, torch.float8_e4m3fnuz, np.uint8),
    Fmt("e5m2fnuz", 5, 2, "fnuz", ml_dtypes.float8_e5m2fnuz, torch.float8_e5m2fnuz, np.uint8),
)}

# -- MMA-Sim's instructions, and the fpsim presets that model them --------------------

#: MMA-Sim architecture -> the fpsim GPU of that architecture (``None``: none).
GPU = {"Volta": "v100", "Turing": "t4", "Ampere": "a100", "Ada Lovelace": "ada",
       "Hopper": "h100", "Blackwell": "b200", "RTX Blackwell": "rtx-pro-6000",
       "CDNA1": "mi100", "CDNA2": "mi210", "CDNA3": "mi300x"}

#: fpsim GPUs whose instructions are those of another GPU's architecture row
#: (``fpsim.mma.presets.GPUS``): the cross-check of the second covers them.
SAME_ROW = {"a2": "a100", "a30": "a100", "l40s": "ada", "h200": "h100", "mi250": "mi210",
            "mi300a": "mi300x"}

_TORCH_NAME = {torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "fp32",
               torch.float64: "fp64", torch.float8_e4m3fn: "e4m3", torch.float8_e5m2: "e5m2",
               torch.float8_e4m3fnuz: "e4m3fnuz", torch.float8_e5m2fnuz: "e5m2fnuz"}


class Instruction(NamedTuple):
    family: str     # mma, wgmma, tcgen05.mma, v_mfma
    arch: str       # MMA-Sim's architecture name
    name: str       # MMA-Sim's shape_and_type (NVIDIA) or suffix (AMD)
    a: str          # fpsim format names of a, b, c, d
    b: str
    c: str
    d: str
    k: int

    @property
    def id(self) -> str:
        return f"{self.family}-{self.arch.replace(' ', '')}-{self.name}"

    def op(self):
        make = {"mma": nv.MMA, "wgmma": nv.WGMMA, "tcgen05.mma": nv.TCGen05MMA,
                "v_mfma": amd.MFMA}[self.family]
        return make(self.arch, self.name)


def _describe(family: str, arch: str, name: str) -> Instruction:
    op = Instruction(family, arch, name, "", "", "", "", 0).op()
    fa, fb = _TORCH_NAME.get(op.a_type), _TORCH_NAME.get(op.b_type)
    if family == "v_mfma":
        if name.endswith("xf32"):
            fa = fb = "tf32"
    else:
        fa = "tf32" if op.a_type_ptx == "tf32" else fa
        fb = "tf32" if op.b_type_ptx == "tf32" else fb
        fa = op.a_type_ptx if op.a_type_ptx in ("e3m2", "e2m3", "e2m1") else fa
        fb = op.b_type_ptx if op.b_type_ptx in ("e3m2", "e2m3", "e2m1") else fb
    return Instruction(family, arch, name, fa, fb, _TORCH_NAME[op.c_type],
                       _TORCH_NAME[op.d_type], op.k)


def _arithmetic(op) -> tuple:
    """What MMA-Sim computes for ``op``: its arithmetic class and settings."""
    ar = op.arithmetic_op
    return (type(ar).__name__, tuple(sorted((k, v) for k, v in vars(ar).items())))


@functools.cache
def _mmasim_instructions() -> tuple[tuple[Instruction, ...], dict[str, list[str]]]:
    """One instruction per (family, architecture, formats, K), with the
    names of the other ``m``/``n`` shapes it stands for."""
    lists = [("mma", isa_mma.mma_shape_and_type), ("wgmma", isa_wgmma.wgmma_shape_and_type),
             ("tcgen05.mma", isa_tcgen05mma.tcgen05mma_shape_and_type),
             ("v_mfma", isa_mfma.arch_mfma_suffix)]
    groups: dict[tuple, list[Instruction]] = collections.defaultdict(list)
    for family, table in lists:
        for arch, names in table.items():
            for name in names:
                i = _describe(family, arch, name)
                # (CDNA2's BF16 with and without _1k: two instructions of one K)
                groups[(family, arch, i.a, i.b, i.c, i.d, i.k, name.endswith("_1k"))].append(i)
    reps = tuple(g[0] for g in groups.values())
    others = {g[0].id: [i.name for i in g[1:]] for g in groups.values()}
    return reps, others


def why_fpsim_lacks(i: Instruction) -> str | None:
    """The reason fpsim has no preset for ``i``, or None when it has one."""
    if GPU[i.arch] is None:
        return f"{i.arch} (fpsim has no {i.arch} GPU)"
    if i.c != i.d:
        return f"C in {i.c} with D in {i.d}"
    if {i.a, i.b} & {"e3m2", "e2m3", "e2m1"}:
        return "FP6/FP4 inputs without block scales (kind::f8f6f4)"
    if i.arch == "CDNA2" and i.a == "bf16" and not i.name.endswith("_1k"):
        return "CDNA2's BF16 without _1k (pairs of products: MMA-Sim's MMA_FTZ_MUL_ADD(P=2))"
    return None


def fma_chain(i: Instruction) -> bool:
    """Whether ``i`` is a chain of IEEE fmas (MMA-Sim's ``MMA_FMA``: FP64
    ``mma``/``mfma``, FP32 ``mfma``): cross-checked in
    ``tests/test_mmasim_fma_chains.py`` on FP64/FP32 rows of its own."""
    return i.a in ("fp64", "fp32")


def _cross() -> list:
    return [pytest.param(i, id=i.id) for i in _mmasim_instructions()[0]
            if why_fpsim_lacks(i) is None and not fma_chain(i)]


#: fpsim's NaN on AMD (every FP32 output of mi100 to mi300x): the quiet bit
#: alone, LLVM AMDGPU's NaN, not measured on an MFMA (docs/mma.rst, "NaN codes").
AMD_NAN = 0x7FC00000

#: Architectures whose NaN codes differ from MMA-Sim's on purpose, and why:
#: there a NaN must be a NaN, and its code fpsim's documented :data:`AMD_NAN`.
NAN_NOT_MMASIMS = {
    "CDNA1": "MMA-Sim's CDNA1 model adds in torch's float arithmetic: its NaN is the host "
             "CPU's (0xFFC00000 for inf - inf on x86, input payloads passed on), no model of "
             "the GPU",
    "CDNA2": "MMA-Sim's CDNA2 model adds in torch's float arithmetic: its NaN is the host "
             "CPU's, no model of the GPU",
    "CDNA3": "MMA-Sim's CDNA3 models write 0x7FFFFFFF through the routine they share with its "
             "NVIDIA models (fdpa.ldexp_and_normalize), no evidence about the MI300; fpsim "
             "writes 0x7FC00000 (docs/mma.rst, 'NaN codes')",
}


#: MMA-Sim instructions that a preset of another GPU models: Turing runs
#: Volta's m8n8k4 with Volta's arithmetic (mmasim/nv_ptx/sim.py, MMA.__init__:
#: "fallback to Volta settings"), fpsim's v100 rows; its t4 rows are m16n8k8.
BORROWED = {("Turing", name): "v100" for name in isa_mma.volta_mma_shape_and_type}


def _gpu(i: Instruction) -> str | None:
    """The fpsim GPU whose preset models ``i``."""
    return BORROWED.get((i.arch, i.name), GPU[i.arch])


def _preset(i: Instruction):
    fmt = i.a if i.a == i.b else (i.a, i.b)
    return mma.preset(_gpu(i), fmt, out=i.d)


# -- the rows --------------------------------------------------------------------------


def _finite_codes(rng, f: Fmt, shape) -> np.ndarray:
    c = rng.integers(0, 1 << f.width, shape)
    while True:
        bad = f.special(c)
        if not bad.any():
            return c
        c[bad] = rng.integers(0, 1 << f.width, int(bad.sum()))


def _values(rng, f: Fmt, exps, signs=None) -> np.ndarray:
    """Codes of ``±2**exps × [1, 2)`` (random significands) in ``f``."""
    x = np.ldexp(1 + rng.random(np.shape(exps)), np.asarray(exps, np.int64))
    if signs is None:
        signs = rng.integers(0, 2, np.shape(exps))
    return f.codes_of(np.where(signs == 1, -x, x))


def _decode(f: Fmt, codes: np.ndarray) -> np.ndarray:
    return f.numpy(codes).astype(np.float64)


def _random(rng, fa, fb, fo, n, K):
    """Half uniform finite codes; half values of a few binades."""
    h = n // 2
    a = _finite_codes(rng, fa, (n, K))
    b = _finite_codes(rng, fb, (n, K))
    c = _finite_codes(rng, fo, n)
    a[h:] = _values(rng, fa, rng.integers(-3, 4, (n - h, K)))
    b[h:] = _values(rng, fb, rng.integers(-3, 4, (n - h, K)))
    c[h:] = _values(rng, fo, rng.integers(-2, 6, n - h))
    c[h:][rng.random(n - h) < 0.2] = 0
    return a, b, c


def _split(t: np.ndarray, fa: Fmt, fb: Fmt) -> tuple[np.ndarray, np.ndarray]:
    """Exponents of a and b whose sum is about ``t``, each in its format's
    range (subnormals included)."""
    lo_a, lo_b = fa.emin - fa.mbits, fb.emin - fb.mbits
    ea = np.clip(t // 2, lo_a, fa.emax)
    eb = np.clip(t - ea, lo_b, fb.emax)
    ea = np.clip(t - eb, lo_a, fa.emax)
    return ea, eb


def _adversarial(rng, fa, fb, fo, n, K):
    a = np.zeros((n, K), np.int64)
    b = np.zeros((n, K), np.int64)
    c = np.zeros(n, np.int64)
    kinds = np.arange(n) % 6
    for kind in range(6):
        rows = np.flatnonzero(kinds == kind)
        m = rows.size
        if kind == 0:    # cancellation: products in cancelling pairs, c the negated sum
            x = _values(rng, fa, rng.integers(-2, 3, (m, K)))
            y = _values(rng, fb, rng.integers(-2, 3, (m, K)))
            half = K // 2
            if half:
                x[:, half:2 * half] = x[:, :half]
                y[:, half:2 * half] = y[:, :half] ^ fb.sign
                if fb.kind == "fnuz":   # no -0: the negated zero is a NaN code there
                    y[:, half:2 * half][y[:, :half] == 0] = 0
                nudge = rng.random(m) < 0.5       # one code further on in half the rows
                j = rng.integers(0, K, m)
                bump = x[np.arange(m), j] + 1
                ok = nudge & ~fa.special(bump) & (bump & fa.magnitude != 0)
                x[np.arange(m)[ok], j[ok]] = bump[ok]
            p = _decode(fa, x) * _decode(fb, y)
            s = np.array([math.fsum(r) for r in p])
            c_val = -s * np.where(rng.random(m) < 0.7, 1.0, 1 + rng.standard_normal(m) * 2**-8)
            cc = fo.codes_of(c_val)
        elif kind == 1:  # alignment truncation: one large product, the rest far below it
            top = rng.integers(-2, 3, m)
            t = top[:, None] - rng.integers(5, 41, (m, K))
            j = rng.integers(0, K, m)
            t[np.arange(m), j] = top
            ea, eb = _split(t, fa, fb)
            x, y = _values(rng, fa, ea), _values(rng, fb, eb)
            pick = rng.integers(0, 4, m)
            ec = np.select([pick == 1, pick == 2], [top, top - rng.integers(5, 41, m)], top + 3)
            cc = np.where(pick == 0, 0, _values(rng, fo, ec))
        elif kind == 2:  # subnormal inputs, and products near the output's smallest normal
            sub = rng.random((m, K)) < 0.5
            ea = np.where(sub, rng.integers(fa.emin - fa.mbits, fa.emin + 1, (m, K)), 0)
            eb = np.where(sub, rng.integers(fb.emin - fb.mbits, fb.emin + 2, (m, K)), 0)
            t = rng.integers(fo.emin - fo.mbits - 3, fo.emin + 4, (m, K))
            ta, tb = _split(t, fa, fb)
            ea, eb = np.where(sub, ea, ta), np.where(sub, eb, tb)
            x, y = _values(rng, fa, ea), _values(rng, fb, eb)
            ec = rng.integers(fo.emin - fo.mbits - 1, fo.emin + 2, m)
            cc = np.where(rng.random(m) < 0.25, 0, _values(rng, fo, ec))
        elif kind == 3:  # the largest exponents: products and c overflowing the output
            x = _values(rng, fa, rng.integers(fa.emax - 3, fa.emax + 1, (m, K)))
            y = _values(rng, fb, rng.integers(fb.emax - 3, fb.emax + 1, (m, K)))
            same = rng.random(m) < 0.5            # all products positive in half the rows
            x[same] &= fa.magnitude
            y[same] &= fb.magnitude
            top = rng.random((m, K)) < 0.25
            x[top] = fa.max_finite | (x[top] & fa.sign)
            cc = _values(rng, fo, rng.integers(fo.emax - 3, fo.emax + 1, m))
            cc[same] &= fo.magnitude
            cc[rng.random(m) < 0.25] = 0
            cc[rng.random(m) < 0.25] = fo.max_finite
        elif kind == 4:  # every term below the output's normal range, c zero in half the rows
            t = rng.integers(fo.emin - fo.mbits - 10, fo.emin - 4, (m, K))
            ea, eb = _split(t, fa, fb)
            x, y = _values(rng, fa, ea), _values(rng, fb, eb)
            cc = _values(rng, fo, rng.integers(fo.emin - fo.mbits, fo.emin, m))
            cc[rng.random(m) < 0.5] = 0
        else:            # exponent fields from the extremes of the codes
            x = _extreme_codes(rng, fa, (m, K))
            y = _extreme_codes(rng, fb, (m, K))
            cc = _extreme_codes(rng, fo, m)
        a[rows], b[rows], c[rows] = x, y, cc
    return a, b, c


def _extreme_codes(rng, f: Fmt, shape) -> np.ndarray:
    top = (1 << f.ebits) - (2 if f.kind == "ieee" else 1)
    fields = np.array(sorted({0, 1, 2, f.bias - 1, f.bias, f.bias + 1, top - 1, top}))
    e = rng.choice(fields, shape)
    codes = (rng.integers(0, 2, shape) * f.sign) | (e << f.mbits) | \
        rng.integers(0, 1 << f.mbits, shape)
    bad = f.special(codes)
    codes[bad] = f.max_finite
    return codes


def _special(rng, fa, fb, fo, n, K):
    """Rows of values of a few binades, each with specials put in."""
    a, b, c = _random(rng, fa, fb, fo, 2 * n, K)
    a, b, c = a[n:], b[n:], c[n:]                   # the half of values
    r = np.arange(n)
    j = rng.integers(0, K, n)
    j2 = (j + 1 + rng.integers(0, max(K - 1, 1), n)) % K
    scen = r % 12

    def nan(f, m):
        return rng.choice(f.nans(), m)

    def inf(f, m, negative=None):   # an Inf where the format has one, else its largest value
        big = f.inf if f.has_inf else f.max_finite
        neg = rng.integers(0, 2, m) if negative is None else negative
        return big | (neg * f.sign)

    def put(arr, rows, cols, vals):
        arr[rows, cols] = vals

    for s in range(12):
        rows = r[scen == s]
        m = rows.size
        jj, jj2 = j[rows], j2[rows]
        if s == 0:        # NaN in a
            put(a, rows, jj, nan(fa, m))
        elif s == 1:      # NaN in b
            put(b, rows, jj, nan(fb, m))
        elif s == 2:      # NaN in c
            c[rows] = nan(fo, m)
        elif s == 3:      # an infinite product
            put(a, rows, jj, inf(fa, m))
            b[rows, jj] = np.where(b[rows, jj] & fb.magnitude == 0, fb.codes_of(np.ones(m)),
                                   b[rows, jj])
        elif s == 4:      # 0 x Inf
            put(a, rows, jj, inf(fa, m))
            put(b, rows, jj, 0 | (rng.integers(0, 2, m) * fb.sign * (fb.kind != "fnuz")))
        elif s == 5:      # Inf - Inf among the products
            neg = rng.integers(0, 2, m)
            put(a, rows, jj, inf(fa, m, neg))
            put(a, rows, jj2, inf(fa, m, 1 - neg))
            put(b, rows, jj, fb.codes_of(np.ones(m)))
            put(b, rows, jj2, fb.codes_of(np.ones(m)))
        elif s in (6, 7):  # an infinite product and c Inf of the other / the same sign
            neg = rng.integers(0, 2, m)
            put(a, rows, jj, inf(fa, m, neg))
            put(b, rows, jj, fb.codes_of(np.ones(m)))
            c[rows] = inf(fo, m, 1 - neg if s == 6 else neg)
        elif s == 8:      # c Inf alone
            c[rows] = inf(fo, m)
        elif s == 9:      # an infinite product and a NaN c
            put(a, rows, jj, inf(fa, m))
            c[rows] = nan(fo, m)
        elif s == 10:     # NaN and Inf in b
            put(b, rows, jj, nan(fb, m))
            put(b, rows, jj2, inf(fb, m))
        else:             # a few specials and zeros anywhere
            pool_a = np.array(fa.nans()[:2] + [inf(fa, 1)[0], 0, fa.max_finite])
            pool_b = np.array(fb.nans()[:2] + [inf(fb, 1)[0], 0, fb.max_finite])
            hit = rng.random((m, K)) < 0.15
            a[rows] = np.where(hit, rng.choice(pool_a, (m, K)), a[rows])
            hit = rng.random((m, K)) < 0.15
            b[rows] = np.where(hit, rng.choice(pool_b, (m, K)), b[rows])
    return a, b, c


MAKERS = {"random": _random, "adversarial": _adversarial, "special": _special}


# -- the two simulators on the same rows -----------------------------------------------


def run_fpsim(i: Instruction, a, b, c) -> np.ndarray:
    fa, fb, fo = FORMATS[i.a], FORMATS[i.b], FORMATS[i.d]
    unit = _preset(i)
    got = unit(fa.numpy(a), fb.numpy(b), fo.numpy(c), chain=a.shape[-1] > unit.issue_k)
    return got.view(fo.store)


def run_mmasim(i: Instruction, a, b, c, op=None) -> np.ndarray:
    fa, fb, fo = FORMATS[i.a], FORMATS[i.b], FORMATS[i.d]
    op = op or i.op()
    out = op.dpa(fa.torch(a), fb.torch(b), fo.torch(c))
    signed = {np.uint16: torch.int16, np.uint32: torch.int32}[fo.store]
    return out.contiguous().view(signed).numpy().view(fo.store)


def differences(i: Instruction, got: np.ndarray, want: np.ndarray) -> dict[str, np.ndarray]:
    """The rows where fpsim's bits differ from MMA-Sim's, by kind."""
    fo = FORMATS[i.d]
    g = fo.numpy(got.astype(np.int64)).astype(np.float64)
    w = fo.numpy(want.astype(np.int64)).astype(np.float64)
    gn, wn = np.isnan(g), np.isnan(w)
    differ = got != want
    if i.arch in NAN_NOT_MMASIMS:
        differ = np.where(gn & wn, got != AMD_NAN, differ)
    finite = np.isfinite(g) & np.isfinite(w)
    return {"finite values": np.flatnonzero(differ & finite),
            "NaN codes": np.flatnonzero(differ & gn & wn),
            "other": np.flatnonzero(differ & ~finite & ~(gn & wn))}


def _report(i: Instruction, rows: str, a, b, c, got, want, diff) -> str:
    fo = FORMATS[i.d]
    hx = (fo.width + 3) // 4
    lines = [f"{i.id} ({_gpu(i)} preset), {rows} rows: "
             + ", ".join(f"{len(v)} {k}" for k, v in diff.items()) + f" of {len(got)} differ"]
    for kind, idx in diff.items():
        if len(idx):
            r = idx[0]
            g, w = _decode(fo, got[r:r + 1])[0], _decode(fo, want[r:r + 1])[0]
            lines.append(f"  first {kind}: row {r}: a={[hex(int(x)) for x in a[r]]} "
                         f"b={[hex(int(x)) for x in b[r]]} c={int(c[r]):#0{hx + 2}x}: "
                         f"fpsim {int(got[r]):#0{hx + 2}x} ({g!r}), "
                         f"MMA-Sim {int(want[r]):#0{hx + 2}x} ({w!r})")
    return "\n".join(lines)


def _seed(i: Instruction, rows: str) -> int:
    return sum(map(ord, i.id + rows)) * 7919


# -- named differences: the rows where fpsim and MMA-Sim may differ, and why -------------

NVIDIA = ("mma", "wgmma", "tcgen05.mma")


class NamedDifference(NamedTuple):
    """A class of rows on which fpsim's and MMA-Sim's bits may differ.

    ``covers(i, a, b, c, got, want)`` takes the differing rows (codes of the
    inputs, fpsim's and MMA-Sim's outputs) and returns which of them belong
    to the class, decided from the inputs and both outputs, never a
    catch-all.  ``side``: whose output the evidence holds to be wrong, or
    ``open``.  ``fpsim_fix``: an fpsim change is under way that makes these
    rows agree (the class then covers no rows and can be deleted).
    ``bound``: the largest fraction of one run's rows the class may cover,
    so that a regression cannot hide in it."""
    name: str
    side: str
    evidence: str
    applies: Callable[[Instruction], bool]
    covers: Callable[..., np.ndarray]
    fpsim_fix: bool = False
    bound: float = 0.05


def _mmasim_exponent(f: Fmt, x: np.ndarray) -> np.ndarray:
    """MMA-Sim's exponent of each value (``frexp_and_normalize``):
    ``floor(log2|x|)``, the format's smallest normal exponent for a
    subnormal."""
    with np.errstate(invalid="ignore"):
        e = np.frexp(np.nan_to_num(x, nan=1.0, posinf=1.0, neginf=1.0))[1] - 1
    return np.maximum(e, f.emin)


def _gtr_drops_c(i, a, b, c, got, want) -> np.ndarray:
    """fpsim NaN/inf, MMA-Sim finite, where a block's ``c`` (the row's, or
    the NaN an earlier block wrote) is NaN or Inf and the block's largest
    product exponent is above ``F``: MMA-Sim's ``gtr_fdpa`` drops it."""
    fa, fb, fo = FORMATS[i.a], FORMATS[i.b], FORMATS[i.d]
    out = ~np.isfinite(_decode(fo, got)) & np.isfinite(_decode(fo, want))
    F, block = i.op().arithmetic_op.F, _preset(i).k
    x, y, z = _decode(fa, a), _decode(fb, b), _decode(fo, c)
    nan = np.isnan(x) | np.isnan(y)
    e = np.where(nan | (x * y == 0), -999, _mmasim_exponent(fa, x) + _mmasim_exponent(fb, y))
    for r in np.flatnonzero(out):
        special, dropped = not np.isfinite(z[r]), False
        for j in range(0, x.shape[1], block):
            has_nan = bool(nan[r, j:j + block].any())
            if special and not has_nan and e[r, j:j + block].max() > F:
                dropped = True
                break
            special = special or has_nan
        out[r] = dropped
    return out


NAMED_DIFFERENCES = (
    NamedDifference(
        "gtr_fdpa-drops-nan-c", "MMA-Sim",
        "MMA-Sim's gtr_fdpa (fdpa.py, CDNA3 FP8) takes a NaN/Inf c's exponent from torch.frexp "
        "(0, so -1 after frexp_and_normalize) and drops c (`s_c[e_c < e_max - F - 1] = 0`) when "
        "the products' exponent is above F = 24: a NaN or Inf c vanishes; fpsim keeps it "
        "(spec/mma.md, 'Specials'): a bug in MMA-Sim",
        lambda i: i.arch == "CDNA3" and i.a.endswith("fnuz"), _gtr_drops_c),
)

#: Rows each named difference covered in this session, by instruction, and
#: the rows each instruction ran (:func:`check_rows`; summed up by
#: ``test_named_differences_cover_few_rows``).
COVERED: dict[str, collections.Counter] = {d.name: collections.Counter()
                                            for d in NAMED_DIFFERENCES}
RAN: collections.Counter = collections.Counter()


def classify(i: Instruction, a, b, c, got, want) -> tuple[dict[str, int], dict[str, np.ndarray]]:
    """The differing rows each named difference covers (counts), and the
    rows none covers, by kind (:func:`differences`)."""
    diff = differences(i, got, want)
    rows = np.unique(np.concatenate(list(diff.values())))
    left = np.ones(rows.size, bool)
    covered = {}
    for d in NAMED_DIFFERENCES:
        if d.applies(i) and left.any():
            at = np.flatnonzero(left)
            r = rows[at]
            hit = np.asarray(d.covers(i, a[r], b[r], c[r], got[r], want[r]), bool)
            left[at[hit]] = False
            covered[d.name] = int(hit.sum())
    rest = rows[left]
    return covered, {k: np.intersect1d(v, rest) for k, v in diff.items()}


def check_rows(i: Instruction, kind: str, a, b, c, got, want, record_property=None) -> None:
    """Every differing row in a named difference that applies to ``i``, and
    no named difference covering more than its bound of the rows."""
    covered, rest = classify(i, a, b, c, got, want)
    RAN[i.id] += len(got)
    for name, n in covered.items():
        COVERED[name][i.id] += n
    if record_property is not None:
        record_property("named_differences", {k: v for k, v in covered.items() if v})
    named = ", ".join(f"{v} {k}" for k, v in covered.items() if v) or "none"
    assert not any(len(v) for v in rest.values()), \
        _report(i, kind, a, b, c, got, want, rest) + f"\n  named differences: {named}"
    bounds = {d.name: d.bound for d in NAMED_DIFFERENCES}
    over = {k: v for k, v in covered.items() if v > bounds[k] * len(got)}
    assert not over, f"{i.id}, {kind} rows: named differences over their bound " \
        f"({len(got)} rows): {over}"



# -- the tests ---------------------------------------------------------------------------


def test_every_mmasim_instruction_is_cross_checked_or_named():
    """Each MMA-Sim instruction: fpsim has its preset (cross-checked below)
    or the reason it has none is named; where fpsim's preset call can name
    the instruction (FP6/FP4 inputs), it is refused, so
    that a preset added later is moved into the cross-check."""
    reps, _ = _mmasim_instructions()
    for i in reps:
        why = why_fpsim_lacks(i)
        if why is None:
            _preset(i)      # raises if fpsim has no such preset
        elif why.startswith("FP6/FP4"):
            with pytest.raises(ValueError):
                _preset(i)


def test_shapes_that_differ_in_m_and_n_run_the_same_arithmetic_in_mmasim():
    reps, others = _mmasim_instructions()
    for i in reps:
        want = _arithmetic(i.op())
        for name in others[i.id]:
            assert _arithmetic(i._replace(name=name).op()) == want, (i.id, name)


@pytest.mark.parametrize("i", [p.values[0] for p in _cross()], ids=lambda i: i.id)
def test_fpsim_blocks_are_mmasims(i):
    """fpsim's block (the products one step of the unit adds) is MMA-Sim's
    (``L_max``, or CDNA2's ``P``)."""
    ar = i.op().arithmetic_op
    block = getattr(ar, "L_max", None) or getattr(ar, "P")
    assert _preset(i).k == block


#: fpsim presets that model no MMA-Sim instruction, and why.
FPSIM_ONLY = {
    "b200-rn": "the published round-to-nearest variant of the B200 model (MMA-Sim's Blackwell "
               "rounds toward zero)",
    "b200-fit": "fitted to recorded B200 E4M3 -> FP32 rows "
                "(test_b200_fit_differs_from_mmasim_where_mmasim_misses_the_b200)",
    "mi300x-matlab": "MI300X FP8 as the MATLAB tensor-core model computes it (MMA-Sim models "
                     "the instructions with gtr_fdpa)",
}


def test_every_fpsim_preset_is_cross_checked_or_named():
    checked = {(_gpu(i), i.a, i.d) for i in (p.values[0] for p in _cross()) if i.a == i.b}
    checked |= {(GPU[i.arch], i.a, i.d) for i in _mmasim_instructions()[0]
                if fma_chain(i) and why_fpsim_lacks(i) is None}
    for gpu, fin, fout in mma.presets():
        if gpu not in FPSIM_ONLY:
            assert (SAME_ROW.get(gpu, gpu), fin, fout) in checked, (gpu, fin, fout)


def test_gpus_of_one_architecture_row_share_the_presets():
    def unit(gpu, fin, fout):
        m = mma.preset(gpu, fin, fout)
        return m.params if isinstance(m, mma.MMAModel) else (m.k, m.nan, m.accumulation)

    for gpu, same in SAME_ROW.items():
        for (_, fin, fout) in mma.presets(gpu):
            assert unit(gpu, fin, fout) == unit(same, fin, fout)


@pytest.mark.parametrize("rows", list(ROWS))
@pytest.mark.parametrize("i", _cross())
def test_instruction_equals_mmasim(i, rows, record_property):
    rng = np.random.default_rng(_seed(i, rows))
    fa, fb, fo = FORMATS[i.a], FORMATS[i.b], FORMATS[i.d]
    a, b, c = MAKERS[rows](rng, fa, fb, fo, ROWS[rows], i.k)
    check_rows(i, rows, a, b, c, run_fpsim(i, a, b, c), run_mmasim(i, a, b, c),
               record_property)


def tile_case(i: Instruction):
    """MMA-Sim's own call on an ``m × 8 × k`` tile of values of a few
    binades, one element in fifty a special, and fpsim on its rows:
    ``(a, b, c, fpsim's, MMA-Sim's)``, one row per output."""
    rng = np.random.default_rng(_seed(i, "tile"))
    fa, fb, fo = FORMATS[i.a], FORMATS[i.b], FORMATS[i.d]
    op = i.op()
    M, N, K = op.m, 8, i.k
    A = _values(rng, fa, rng.integers(-3, 4, (M, K)))
    B = _values(rng, fb, rng.integers(-3, 4, (K, N)))
    C = _values(rng, fo, rng.integers(-2, 6, (M, N)))
    for arr, f in ((A, fa), (B, fb), (C, fo)):
        hit = rng.random(arr.shape) < 0.02
        pool = f.nans() + ([f.inf, f.inf | f.sign] if f.has_inf else []) + [0]
        arr[hit] = rng.choice(pool, int(hit.sum()))
    want = op(fa.torch(A), fb.torch(B), fo.torch(C))
    signed = {np.uint16: torch.int16, np.uint32: torch.int32}[fo.store]
    want = want.contiguous().view(signed).numpy().view(fo.store).reshape(-1)
    a = np.broadcast_to(A[:, None, :], (M, N, K)).reshape(-1, K)
    b = np.broadcast_to(B.T[None, :, :], (M, N, K)).reshape(-1, K)
    c = C.reshape(-1)
    return a, b, c, run_fpsim(i, a, b, c), want


@pytest.mark.parametrize("i", _cross())
def test_instruction_tile_equals_mmasim(i, record_property):
    check_rows(i, "tile", *tile_case(i), record_property)


# -- where fpsim differs on purpose ------------------------------------------------------

OPEN = Path(__file__).parent / "data" / "tensorcore" / "open"


def test_b200_fit_differs_from_mmasim_where_mmasim_misses_the_b200():
    """``b200-fit`` (E4M3 -> FP32, 8 extra bits, round to nearest) is fitted
    to recorded B200 outputs (tests/data/tensorcore/open/B200_E4M3_fp32.npz,
    5,000 rows of ``tcgen05.mma`` kind::f8f6f4; spec/mma.md, "The open
    sets"), which MMA-Sim's Blackwell model (F = 25, toward zero, the
    published b200 parameters) does not reproduce: b200-fit gives every
    recorded row, MMA-Sim 3,207 of them, as the b200 preset does."""
    z = np.load(OPEN / "B200_E4M3_fp32.npz")
    f = FORMATS["e4m3"]
    a = f.codes_of(z["a"].view(np.float32).astype(np.float64))
    b = f.codes_of(z["b"].view(np.float32).astype(np.float64))
    c = z["c"].astype(np.int64)
    d = z["d"]
    i = _describe("tcgen05.mma", "Blackwell", "m64n8k32.kind::f8f6f4.f32.e4m3.e4m3")
    theirs = run_mmasim(i, a, b, c)
    fit = mma.preset("b200-fit", "e4m3")(f.numpy(a), f.numpy(b), z["c"].view(np.float32))
    assert np.array_equal(fit.view(np.uint32), d)
    assert int((theirs == d).sum()) == 3207
    assert np.array_equal(theirs, run_fpsim(i, a, b, c))     # MMA-Sim is the b200 preset


@pytest.mark.parametrize("family, arch, name", [("v_mfma", "CDNA1", "f32_32x32x8f16"),
                                                ("v_mfma", "CDNA2", "f32_32x32x8bf16_1k"),
                                                ("v_mfma", "CDNA3", "f32_32x32x8_f16")])
def test_amd_nan_code_is_fpsims_documented_one_not_mmasims(family, arch, name):
    """inf × 0: fpsim's mi100, mi210 and mi300x write 0x7FC00000 (docs/mma.rst,
    "NaN codes": LLVM AMDGPU's NaN, not measured on an MFMA); MMA-Sim writes
    the host CPU's NaN on CDNA1 and CDNA2 (0xFFC00000 on x86) and, on CDNA3,
    PTX's 0x7FFFFFFF through the routine its NVIDIA models share."""
    i = _describe(family, arch, name)
    f, fo = FORMATS[i.a], FORMATS[i.d]
    a = np.zeros((2, i.k), np.int64)
    b = np.zeros((2, i.k), np.int64)
    a[:, 0] = f.inf
    b[1, 1] = f.codes_of(np.ones(1))[0]            # row 1: inf × 0 beside 0 × 1
    c = np.zeros(2, np.int64)
    theirs = run_mmasim(i, a, b, c)
    assert np.isnan(_decode(fo, theirs)).all()
    if arch == "CDNA3":
        assert (theirs == 0x7FFFFFFF).all()
    assert (run_fpsim(i, a, b, c) == AMD_NAN).all(), NAN_NOT_MMASIMS[arch]


# -- what the named differences covered ---------------------------------------------------


def named_difference_table() -> str:
    """The rows each named difference covered in this session, by
    instruction family and architecture (``pytest -s`` prints it)."""
    lines = []
    for d in NAMED_DIFFERENCES:
        per = collections.Counter()
        for iid, n in COVERED[d.name].items():
            per[iid.rsplit("-", 1)[0]] += n
        total = sum(per.values())
        note = " (fpsim fix under way)" if d.fpsim_fix else ""
        lines.append(f"{d.name}{note}, {d.side}: {total} rows"
                     + (": delete this class" if d.fpsim_fix and not total else ""))
        lines += [f"    {k}: {n}" for k, n in sorted(per.items()) if n]
    return "\n".join(lines)


def test_named_differences_cover_few_rows(record_property):
    """Runs after the cross-checks (last in this file): each named
    difference within its bound of each instruction's rows, all row sets
    together, and the table of what each covered printed and recorded."""
    if not RAN:
        pytest.skip("no cross-check ran in this process (xdist, or -k)")
    assert set(COVERED) == {d.name for d in NAMED_DIFFERENCES}
    for d in NAMED_DIFFERENCES:
        for iid, n in COVERED[d.name].items():
            assert d.applies(next(i for i in _mmasim_instructions()[0] if i.id == iid))
            assert n <= d.bound * RAN[iid], (d.name, iid, n, RAN[iid])
    table = named_difference_table()
    record_property("named_difference_table", table)
    print("\nnamed differences (rows covered):\n" + table)
