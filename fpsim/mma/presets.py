"""The GPUs, as data: one table of (architecture, input, output, k,
parameters), and which architecture each GPU name has.

The parameters are those of the published bit-accurate models (Khattak and
Mikaitis, the MATLAB-tensor-core repository: one parameter set per GPU and
format pair; MI300 FP8 after MMA-Sim, where the two differ), checked against
recorded GPU outputs in ``tests/test_mma.py``.

>>> import fpsim.mma as mma
>>> mma.preset("h100", "e4m3").params.result_bits
13
>>> ("mi300x", "e4m3fnuz", "fp32") in mma.presets()
True
>>> mma.gpus()[:4]
['v100', 't4', 'a100', 'a2']
>>> mma.preset("h100", "fp16", "fp16").params.nan, mma.preset("mi300x", "fp16").params.nan
('all_ones', 'quiet')
"""

from __future__ import annotations

import re
from typing import Any

from ..formats import FP32, refusal
from ..formats import format as _lookup
from .blockscaled import RECIPES, block_scaled
from .fmachain import FMAChainModel
from .model import MMAModel
from .params import MMAParams

__all__ = ["preset", "presets", "gpus", "ARCHITECTURES", "GPUS", "TABLE", "FMA_CHAINS", "MIXED"]

# -- the architectures' shared settings ------------------------------------------------

# The NaN every NVIDIA unit writes: PTX's canonical NaN, 0x7FFFFFFF / 0x7FFF
# (MMA-Sim's mma/wgmma/tcgen05 models; the CUDA Programming Guide: an operation
# with a NaN input gives 0x7fffffff; measured on an H100, docs/stacks.rst:
# every FP32 -> FP16/BF16 cast of a NaN and every FP16/BF16 NaN result is
# 0x7fff).  AMD's: the quiet bit alone, 0x7FC00000, not measured on an MFMA
# (LLVM's AMDGPU backend folds every NaN to it; MMA-Sim's CDNA3 model writes
# 0x7FFFFFFF through the routine it shares with NVIDIA, its CDNA1/CDNA2 models
# the host CPU's NaN): docs/mma.rst, "NaN codes".
_NVIDIA_NAN = "all_ones"
_AMD_NAN = "quiet"
# Every zero an NVIDIA unit writes is +0: MMA-Sim 2.1.1's t_fdpa
# (mmasim/arithmetic/fdpa.py) ends in `+ 0.0  # -0.0 to +0.0`; no recorded
# row has a zero output.
_NVIDIA = dict(accumulation="aligned", c_joins="first", rounding="rtz", nan=_NVIDIA_NAN,
               zero_sign="positive")
_CDNA3 = dict(accumulation="aligned", extra_bits=1, c_joins="last", late_extra_bits=7,
              align_rounding="rdn", zero_c_at_emin=True, products_limited=True, rounding="rne",
              nan=_AMD_NAN)

#: Settings every preset of an architecture shares.
ARCHITECTURES: dict[str, dict[str, Any]] = {
    "volta": {**_NVIDIA, "extra_bits": 0},
    # Turing's mma.m16n8k8 (T4): MMA-Sim 2.1.1's Turing settings, F = 24 and
    # 8 products per step (mmasim/nv_ptx/sim.py, _mma_F_bits, _mma_L_max_bytes),
    # Ampere's; its zero term at 2**-132 (_mma_e_zero_for_fp32).  Volta's
    # m8n8k4, which Turing also runs, MMA-Sim computes with Volta's settings
    # ("fallback to Volta settings"): the v100 rows.  No T4 row is recorded.
    "turing": {**_NVIDIA, "extra_bits": 1, "min_align_exponent": -132},
    # Ampere and Ada: a zero term (c = 0, a zero product) is aligned at 2**-132,
    # MMA-Sim 2.1.1's e_zero for FP32 output (mmasim/nv_ptx/sim.py,
    # _mma_e_zero_for_fp32, used by MMA.__init__; mmasim/arithmetic/fdpa.py,
    # t_fdpa); a nonzero c has exponent -126 or more, so this is a floor.  It
    # shows only with BF16 and TF32 inputs and c = 0.  The recorded A100 rows
    # (tests/data/tensorcore) pass with it and without it (none reaches it); no
    # Ada rows are recorded.
    "ampere": {**_NVIDIA, "extra_bits": 1, "min_align_exponent": -132},
    "ada": {**_NVIDIA, "extra_bits": 1, "min_align_exponent": -132},
    "hopper": {**_NVIDIA, "extra_bits": 2, "min_align_exponent": -133},
    "blackwell": {**_NVIDIA, "extra_bits": 2, "min_align_exponent": -133},
    "blackwell-rn": {**_NVIDIA, "extra_bits": 2, "min_align_exponent": -133,
                     "rounding": "rne"},
    # Fitted here (not published): B200 FP8 -> FP32 outputs (tests/data/tensorcore/open)
    # are reproduced by round to nearest with 8 extra bits; see docs/mma.rst.
    "blackwell-fit": {**_NVIDIA, "extra_bits": 8, "min_align_exponent": -133, "rounding": "rne"},
    "cdna1": dict(accumulation="exact", extra_bits=None, rounding="rne", nan=_AMD_NAN),
    "cdna2": dict(accumulation="pairwise", extra_bits=None, c_joins="last", rounding="rne",
                  input_subnormals=False, output_subnormals=False, products_limited=True,
                  nan=_AMD_NAN),
    "cdna3": _CDNA3,
    # MI300X FP8 as the MATLAB-tensor-core model computes it; its FP16, BF16 and
    # TF32 rows are cdna3's.  docs/mma.rst, "MI300X FP8: two models".
    "cdna3-matlab": _CDNA3,
}

_FP8_13_BITS = {"extra_bits": -10, "result_bits": 13}  # Ada and Hopper FP8: 13-bit results
# Ada's FP8 mma.m16n8k32 is issued with K = 32: two blocks of 16 chained in the unit.
_ADA_FP8 = {**_FP8_13_BITS, "issue_k": 32}
_RNE = {"rounding": "rne"}
# FP8 inputs with FP16 output (mma.sync .f16.e4m3.e4m3.f16 on Ada and RTX
# Blackwell, wgmma .f16.e4m3 on Hopper, tcgen05 kind::f8f6f4 .f16 on
# Blackwell), as MMA-Sim 2.1.1 computes them (mmasim/nv_ptx/sim.py,
# mmasim/arithmetic/fdpa.py, t_fdpa): the FP8->FP32 instruction's alignment
# (F = 13 on Ada and Hopper, 25 on Blackwell), FP16 c joining first as one more
# term, no E8M13 step, the sum rounded once to FP16, nearest even; a zero term
# aligned at 2**-20 (Ada) or 2**-21 (MMA-Sim's e_zero for FP16 output).  The
# recorded H100 and B200 rows (tests/data/tensorcore/open) are reproduced only
# in part: tests/test_mma_fp8_fp16.py gives the rates.
_FP8_FP16 = {"rounding": "rne", "min_align_exponent": -21}
_ADA_FP8_FP16 = {"extra_bits": -10, "issue_k": 32, "rounding": "rne", "min_align_exponent": -20}
_HOPPER_FP8_FP16 = {"extra_bits": -10, **_FP8_FP16}
# CDNA3 FP8 (v_mfma_f32_*_fp8_fp8, ..._bf8_bf8): even and odd positions each a
# truncated fused sum, the two joined rounding down; c joins last, and a c more
# than 25 binades below the products' sum adds nothing.  Both published models
# agree on that much (a hardware summation tree in MMA-Sim's history shows the
# dropped c).  They differ where c is the larger and the sum leaves c's binade:
# MMA-Sim 2.1.1 (mmasim/arithmetic/fdpa.py, gtr_fdpa: F2 = 31) aligns the
# products' sum 32 bits below c and cuts the normalized sum to 31 bits, toward
# -inf, before rounding; the MATLAB-tensor-core model aligns it 31 bits below c
# and rounds the exact sum (models/tools/Generic_BFMA_TC.m).  Default: MMA-Sim's,
# the later of the two, by the authors whose MI300 runs are on record (no recorded
# row decides it); docs/mma.rst, "MI300X FP8: two models", weighs the evidence.
_CDNA3_FP8 = {"accumulation": "odd_even", "c_dropped_below": 25, "late_extra_bits": 8,
              "normalized_bits": 31}
_CDNA3_FP8_MATLAB = {"accumulation": "odd_even", "c_dropped_below": 25}
# CDNA3 FP16, BF16 and TF32 (v_mfma_f32_*_f16, _bf16, _xf32): MMA-Sim 2.1.1
# joins c as for FP8 (mmasim/arithmetic/fdpa.py, tr_fdpa: F2 = 31): the
# products' sum aligned 32 bits below c, the normalized sum cut to 31 bits
# toward -inf before the rounding; the MATLAB-tensor-core model keeps 7
# bits below c and rounds the exact sum (the cdna3-matlab rows).  Rows
# where they differ: c = 8192 - 2**-11 with products 2**-10 and 2**-19
# (MMA-Sim 8192, MATLAB 8192.0009765625); tests/test_mmasim_instructions.py.
_CDNA3_LATE = {"late_extra_bits": 8, "normalized_bits": 31}

#: (architecture, input, output, k, parameters beyond the architecture's).
TABLE: tuple[tuple[str, str, str, int, dict[str, Any]], ...] = (
    ("volta", "fp16", "fp32", 4, {}),
    ("volta", "fp16", "fp16", 4, _RNE),
    ("turing", "fp16", "fp32", 8, {}),
    ("turing", "fp16", "fp16", 8, _RNE),
    ("ampere", "fp16", "fp32", 8, {}),
    ("ampere", "fp16", "fp16", 8, _RNE),
    ("ampere", "bf16", "fp32", 8, {}),
    ("ampere", "tf32", "fp32", 4, {}),
    ("ada", "fp16", "fp32", 8, {}),
    ("ada", "fp16", "fp16", 8, _RNE),
    ("ada", "bf16", "fp32", 8, {}),
    ("ada", "tf32", "fp32", 4, {}),
    ("ada", "e4m3", "fp32", 16, _ADA_FP8),
    ("ada", "e5m2", "fp32", 16, _ADA_FP8),
    ("ada", "e4m3", "fp16", 16, _ADA_FP8_FP16),
    ("ada", "e5m2", "fp16", 16, _ADA_FP8_FP16),
    ("hopper", "fp16", "fp32", 16, {}),
    ("hopper", "fp16", "fp16", 16, _RNE),
    ("hopper", "bf16", "fp32", 16, {}),
    ("hopper", "tf32", "fp32", 8, {}),
    ("hopper", "e4m3", "fp32", 32, _FP8_13_BITS),
    ("hopper", "e5m2", "fp32", 32, _FP8_13_BITS),
    ("hopper", "e4m3", "fp16", 32, _HOPPER_FP8_FP16),
    ("hopper", "e5m2", "fp16", 32, _HOPPER_FP8_FP16),
    ("blackwell", "fp16", "fp32", 16, {}),
    ("blackwell", "fp16", "fp16", 16, {"rounding": "rne", "min_align_exponent": -15}),
    ("blackwell", "bf16", "fp32", 16, {}),
    ("blackwell", "tf32", "fp32", 8, {}),
    ("blackwell", "e4m3", "fp32", 32, {}),
    ("blackwell", "e5m2", "fp32", 32, {}),
    ("blackwell", "e4m3", "fp16", 32, _FP8_FP16),
    ("blackwell", "e5m2", "fp16", 32, _FP8_FP16),
    ("blackwell-rn", "fp16", "fp32", 16, {}),
    ("blackwell-rn", "fp16", "fp16", 16, {"min_align_exponent": -15}),
    ("blackwell-rn", "bf16", "fp32", 16, {}),
    ("blackwell-rn", "tf32", "fp32", 8, {}),
    ("blackwell-rn", "e4m3", "fp32", 32, {}),
    ("blackwell-rn", "e5m2", "fp32", 32, {}),
    ("blackwell-fit", "e4m3", "fp32", 32, {}),
    ("cdna1", "fp16", "fp32", 4, {}),
    ("cdna1", "bf16", "fp32", 2, {}),
    ("cdna2", "fp16", "fp32", 4, {}),
    ("cdna2", "bf16", "fp32", 4, {}),
    ("cdna3", "fp16", "fp32", 8, _CDNA3_LATE),
    ("cdna3", "bf16", "fp32", 8, _CDNA3_LATE),
    ("cdna3", "tf32", "fp32", 4, _CDNA3_LATE),
    ("cdna3", "e4m3fnuz", "fp32", 16, _CDNA3_FP8),
    ("cdna3", "e5m2fnuz", "fp32", 16, _CDNA3_FP8),
    ("cdna3-matlab", "fp16", "fp32", 8, {}),
    ("cdna3-matlab", "bf16", "fp32", 8, {}),
    ("cdna3-matlab", "tf32", "fp32", 4, {}),
    ("cdna3-matlab", "e4m3fnuz", "fp32", 16, _CDNA3_FP8_MATLAB),
    ("cdna3-matlab", "e5m2fnuz", "fp32", 16, _CDNA3_FP8_MATLAB),
)

# NaN codes of the FMA-chain units (fpsim.mma.fmachain: not measured).  NVIDIA
# FP64: CUDA's math_constants.h CUDART_NAN (its float CUDART_NAN_F is the
# 0x7FFFFFFF measured on an H100); AMD: the quiet bit alone, as _AMD_NAN.
_NVIDIA_NAN64 = 0xFFF8000000000000
_AMD_NAN_CODES = {"fp32": 0x7FC00000, "fp64": 0x7FF8000000000000}

#: (architecture, format, k, NaN code): the matrix instructions that are
#: chains of IEEE fused multiply-adds in one format, inputs to output
#: (fpsim.mma.fmachain; MMA-Sim 2.1.1's MMA_FMA).  NVIDIA FP64:
#: mma.sync.m8n8k4.f64 (sm_80 on), Hopper's m16n8k{4,8,16}.f64 (the row
#: takes up to 16); AMD: v_mfma_f32_*_f32 (CDNA1 to CDNA3; k up to 4) and
#: v_mfma_f64_*_f64 (CDNA2, CDNA3).
FMA_CHAINS: tuple[tuple[str, str, int, int], ...] = (
    ("ampere", "fp64", 4, _NVIDIA_NAN64),
    ("ada", "fp64", 4, _NVIDIA_NAN64),
    ("hopper", "fp64", 16, _NVIDIA_NAN64),
    ("blackwell", "fp64", 4, _NVIDIA_NAN64),
    ("cdna1", "fp32", 4, _AMD_NAN_CODES["fp32"]),
    ("cdna2", "fp32", 4, _AMD_NAN_CODES["fp32"]),
    ("cdna2", "fp64", 4, _AMD_NAN_CODES["fp64"]),
    ("cdna3", "fp32", 4, _AMD_NAN_CODES["fp32"]),
    ("cdna3", "fp64", 4, _AMD_NAN_CODES["fp64"]),
)

#: Architecture -> the pairs of different input formats ``(a's, b's)`` its
#: instructions take (PTX ``mma``/``wgmma`` ``.e4m3.e5m2`` and ``.e5m2.e4m3``
#: on Ada, Hopper and Blackwell; ``v_mfma_*_fp8_bf8`` and ``bf8_fp8`` on
#: CDNA3).  A mixed instruction is the row of ``a``'s format with ``b`` of
#: the other: every parameter but the formats is the same in both rows.
MIXED: dict[str, frozenset[tuple[str, str]]] = {
    **{arch: frozenset({("e4m3", "e5m2"), ("e5m2", "e4m3")})
       for arch in ("ada", "hopper", "blackwell", "blackwell-rn")},
    "cdna3": frozenset({("e4m3fnuz", "e5m2fnuz"), ("e5m2fnuz", "e4m3fnuz")}),
    "cdna3-matlab": frozenset({("e4m3fnuz", "e5m2fnuz"), ("e5m2fnuz", "e4m3fnuz")}),
}

#: GPU name -> (architecture, (input, output) pairs of the architecture it
#: lacks).
GPUS: dict[str, tuple[str, frozenset[tuple[str, str]]]] = {
    "v100": ("volta", frozenset()),
    "t4": ("turing", frozenset()),
    "a100": ("ampere", frozenset()),
    "a2": ("ampere", frozenset()),
    "a30": ("ampere", frozenset()),
    "ada": ("ada", frozenset()),
    "l40s": ("ada", frozenset()),
    "h100": ("hopper", frozenset()),
    "h200": ("hopper", frozenset()),
    "b200": ("blackwell", frozenset()),
    "b200-rn": ("blackwell-rn", frozenset()),
    "rtx-pro-6000": ("blackwell", frozenset()),
    "b200-fit": ("blackwell-fit", frozenset()),
    "mi100": ("cdna1", frozenset()),
    "mi210": ("cdna2", frozenset()),
    "mi250": ("cdna2", frozenset()),
    "mi300a": ("cdna3", frozenset()),
    "mi300x": ("cdna3", frozenset()),
    "mi300x-matlab": ("cdna3-matlab", frozenset()),
}


def gpus() -> list[str]:
    """The GPU names :func:`preset` accepts, in table order."""
    return list(GPUS)


def presets(gpu: str | None = None) -> list[tuple[str, str, str]]:
    """Every ``(gpu, input, output)`` that :func:`preset` builds (of one GPU
    when ``gpu`` is given).

    >>> import fpsim.mma as mma
    >>> mma.presets("v100")
    [('v100', 'fp16', 'fp32'), ('v100', 'fp16', 'fp16')]
    """
    names = [_gpu_name(gpu)] if gpu is not None else list(GPUS)
    found = []
    for name in names:
        arch, lacks = GPUS[name]
        found += [(name, i, o) for a, i, o, _k, _p in TABLE if a == arch and (i, o) not in lacks]
        found += [(name, f, f) for a, f, _k, _n in FMA_CHAINS if a == arch and (f, f) not in lacks]
    return found


def preset(gpu: str, fmt: Any, out: Any = "fp32") -> MMAModel | FMAChainModel:
    """The model of ``gpu``'s matrix instruction with inputs ``fmt`` and
    output ``out`` (``"fp32"`` or ``"fp16"``).

    ``gpu``: one of :func:`gpus` (case, spaces, ``-`` and ``_`` do not
    matter).  ``fmt`` and ``out``: format names (or :class:`~fpsim.Format`);
    AMD MI300 FP8 is the FNUZ variant, ``"e4m3fnuz"`` / ``"e5m2fnuz"``.
    ``fmt`` may be a pair ``(a's, b's)`` of different FP8 formats where the
    GPU has that mixed instruction (``fpsim.mma.presets.MIXED``).
    ``b200-rn`` is the published round-to-nearest variant of the B200 model:
    every parameter as ``b200`` but the final rounding, nearest even.
    ``fmt`` may also name a block-scaled recipe of B200 or RTX PRO 6000,
    ``"mxfp8"``, ``"mxfp6"``, ``"mxfp4"`` or ``"nvfp4"``: the
    :class:`~fpsim.mma.blockscaled.BlockScaledModel` of its instruction
    (:func:`~fpsim.mma.blockscaled.block_scaled` mixes element formats).
    ``b200-fit`` is fpsim's own fit to recorded B200 E4M3 -> FP32 outputs,
    which the published model does not reproduce (3,207 of 5,000 rows): 8
    extra bits and round to nearest give all 5,000 (fitted on half the rows,
    validated on the other half).  MI300A and MI300X FP8 follow MMA-Sim
    2.1.1's model (``gtr_fdpa``); ``mi300x-matlab`` is the MATLAB-tensor-core
    model of the same instructions, which rounds differently where ``c`` is
    the larger and the sum leaves ``c``'s binade (docs/mma.rst, "MI300X FP8:
    two models").  FP64 instructions (NVIDIA ``mma .f64`` from the A100 on,
    AMD ``v_mfma_f64`` from the MI210 on) and AMD's FP32 ``v_mfma_f32_*_f32``
    are chains of fused multiply-adds: an
    :class:`~fpsim.mma.fmachain.FMAChainModel` (``out`` the input's format).

    >>> import fpsim.mma as mma
    >>> m = mma.preset("a100", "bf16")
    >>> m.k, m.params.extra_bits, m.params.rounding
    (8, 1, 'rtz')
    >>> mma.preset("h100", ("e4m3", "e5m2"))
    <MMAModel h100 e4m3xe5m2->fp32 k=32 aligned>
    >>> mma.preset("l40s", "e4m3").issue_k     # mma.m16n8k32: two blocks of 16
    32
    """
    if isinstance(fmt, str) and fmt.lower() in RECIPES:
        # Block-scaled instructions (fpsim.mma.blockscaled): FP32 output only.
        if _lookup(out) != FP32:
            raise ValueError(f"block-scaled {fmt} instructions write FP32; got out={out!r}")
        return block_scaled(gpu, fmt.lower())  # type: ignore[return-value]
    name = _gpu_name(gpu)
    arch, lacks = GPUS[name]
    have = [(i, o) for a, i, o, _k, _p in TABLE if a == arch and (i, o) not in lacks]
    chains = {f: (k, nan) for a, f, k, nan in FMA_CHAINS if a == arch and (f, f) not in lacks}
    have += [(f, f) for f in chains]
    fin_b = None
    if isinstance(fmt, (tuple, list)):
        if len(fmt) != 2:
            raise ValueError(f"fmt= names one input format or a pair (a's, b's); got {fmt!r}")
        fin, fin_b = _fmt_name(fmt[0], name, have), _fmt_name(fmt[1], name, have)
        if fin_b == fin:
            fin_b = None
        elif (fin, fin_b) not in MIXED.get(arch, frozenset()):
            pairs = ", ".join(f"({x}, {y})" for x, y in sorted(MIXED.get(arch, ()))) or "none"
            raise ValueError(f"{name} has no mixed {fin} x {fin_b} instruction; its mixed pairs: "
                             f"{pairs}")
    else:
        fin = _fmt_name(fmt, name, have)
    fout = _fmt_name(out, name, have)
    if fin_b is not None and (fin_b, fout) not in have:
        raise ValueError(f"{name} has no {fin_b}->{fout} instruction; it has: "
                         + ", ".join(f"{i}->{o}" for i, o in have))
    if fin_b is None and fin == fout and fin in chains:
        return FMAChainModel(fin, chains[fin][0], chains[fin][1], name=name)
    for a, i, o, k, extra in TABLE:
        if a == arch and (i, o) == (fin, fout) and (i, o) not in lacks:
            params = MMAParams(i, o, k=k, input_b=fin_b, **{**ARCHITECTURES[arch], **extra})
            return MMAModel(params, name=name)
    listing = ", ".join(f"{i}->{o}" for i, o in have)
    raise ValueError(f"{name} has no {fin}->{fout} instruction; it has: {listing}")


def _key(name: str) -> str:
    return re.sub(r"[^0-9a-z]", "", name.lower())


_BY_KEY = {_key(n): n for n in GPUS}


def _gpu_name(gpu: Any) -> str:
    if not isinstance(gpu, str):
        raise TypeError(f"gpu must be a str, got {type(gpu).__name__}")
    name = _BY_KEY.get(_key(gpu))
    if name is None:
        raise ValueError(f"unknown GPU {gpu!r}; accepted: {', '.join(GPUS)}")
    return name


def _fmt_name(fmt: Any, gpu: str, have: list[tuple[str, str]]) -> str:
    try:
        return _lookup(fmt).name
    except (ValueError, TypeError) as exc:
        listing = f"{gpu} has: " + ", ".join(f"{i}->{o}" for i, o in have)
        if isinstance(exc, ValueError) and isinstance(fmt, str):
            # the nearest of this GPU's formats, or why the name is refused
            raise ValueError(refusal(fmt, [f for pair in have for f in pair], listing)) from None
        raise ValueError(f"unknown format {fmt!r}; {listing}") from None
