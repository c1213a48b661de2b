"""Library GEMMs by name: what ``torch.mm``, ``torch._scaled_mm``, a CUTLASS
kernel or a Triton ``tl.dot`` computes, as an instruction preset and a
:class:`~fpsim.mma.Schedule` read from a table.

>>> import numpy as np, fpsim.mma as mma
>>> g = mma.cublas("h100", "fp16", out="fp32", split_k=3)
>>> g
<LibraryGEMM cuBLAS h100 fp16 -> fp32: split_k=3 (grain 64, merged in compute)>
>>> mma.cublas("h100", "e4m3").schedule.promote_every       # use_fast_accum=False
128
>>> mma.cublas("h100", ("e4m3", "e5m2"), fast_accum=True).schedule.promote_every is None
True

Each row says where its rule comes from: ``"measured"`` (reproduces real
outputs bit for bit; the device and versions are in ``SOURCES``) or
``"source"`` (read from the library's published source, not run on a GPU).
"""

from __future__ import annotations

from typing import Any

from ..formats import format as _lookup
from . import _args
from .gemm import LibraryGEMM
from .presets import GPUS, _gpu_name
from .presets import preset as _preset
from .schedule import EPILOGUE_ORDERS, Schedule

__all__ = ["cublas", "cutlass", "triton", "LIBRARIES", "SOURCES"]

#: Where each library's rules come from, by (library, architecture).
SOURCES: dict[tuple[str, str], str] = {
    ("cublas", "hopper"): (
        "measured: NVIDIA H100 80GB HBM3 (driver 580.159.04), PyTorch 2.11.0+cu130 "
        "(CUDA 13.0), 2026-11-27; cuBLASLt's choices read from CUBLASLT_LOG_LEVEL=2 "
        "(tests/data/h100-cublas/README.md)"),
}

#: The libraries and the architectures whose schedules are known.
LIBRARIES: dict[str, tuple[str, ...]] = {
    "cublas": ("hopper",),
}

_SIXTEEN = ("fp16", "bf16")
_FP8 = ("e4m3", "e5m2")


def _gpu(library: str, gpu: str) -> tuple[str, str]:
    model_gpu = _gpu_name(gpu)
    arch = GPUS[model_gpu][0]
    if arch not in LIBRARIES[library]:
        known = ", ".join(g for g, (a, _) in GPUS.items() if a in LIBRARIES[library])
        raise ValueError(f"no {library} schedule is known for {model_gpu} ({arch}); known: "
                         f"{known}.  State one yourself: fpsim.mma.LibraryGEMM(fpsim.mma.preset"
                         f"({model_gpu!r}, ...), fpsim.mma.Schedule(...))")
    return model_gpu, arch


def _inputs(fmt: Any) -> tuple[str, str]:
    if isinstance(fmt, (tuple, list)):
        if len(fmt) != 2:
            raise ValueError(f"fmt names one input format or a pair (a's, b's); got {fmt!r}")
        return _lookup(fmt[0]).name, _lookup(fmt[1]).name
    name = _lookup(fmt).name
    return name, name


def _out(out: Any, allowed: tuple[str, ...], what: str) -> str:
    name = _lookup(out).name
    if name not in allowed:
        raise ValueError(f"{what}: out={name}; accepted: {', '.join(allowed)}")
    return name


def _label(library: str, gpu: str, fa: str, fb: str, out: str) -> str:
    inputs = fa if fa == fb else f"{fa} x {fb}"
    return f"{library} {gpu} {inputs} -> {out}"


def cublas(gpu: str, fmt: Any, out: Any = "fp32", *, split_k: int = 1,
           fast_accum: bool = False, promote_every: int | None = None,
           block_k: int | None = None) -> LibraryGEMM:
    """What cuBLAS (cuBLASLt, through PyTorch) computes on ``gpu``.

    * ``fmt="fp16"`` or ``"bf16"``: ``torch.mm(a, b, out_dtype=torch.float32)``
      with ``out="fp32"``, ``torch.mm(a, b)`` with ``out=fmt``; called with
      ``C``, ``torch.addmm(C, a, b)`` (``C`` of the output format).  The
      instruction chained along K; with ``split_k=S`` (cuBLASLt's
      ``numSplitsK``, read from ``CUBLASLT_LOG_LEVEL=2``) K is cut into S
      slices of whole 64-product grains whose FP32 results are added in
      order.  An FP32 output adds ``C`` in FP32 (one rounding); a 16-bit
      output rounds the FP32 result to the output format first, then adds
      ``C`` there (two roundings).
    * ``fmt="e4m3"``, ``"e5m2"`` or a pair ``("e4m3", "e5m2")``:
      ``torch._scaled_mm(a, b, scale_a, scale_b, out_dtype=...,
      use_fast_accum=fast_accum)``; ``out`` ``"fp32"``, ``"bf16"`` or
      ``"fp16"``.  Without fast accumulation the instruction's chain restarts
      every 128 products and each group is added into an FP32 accumulator;
      with it, one chain along K.  Scales as ``g(A, B, scale_a=...,
      scale_b=...)``.
    * ``fmt="tf32"`` (``allow_tf32``): the instruction from +0 over each K
      tile of the kernel (``promote_every``: cuBLAS chooses it by shape; 4,
      32 and 64 were measured on H100), each tile's result added into FP32;
      ``block_k=4`` where the kernel issues the ``k = 4`` form.

    ``split_k="auto"`` is not offered: cuBLAS's heuristic is private.

    >>> import fpsim.mma as mma
    >>> mma.cublas("h100", "bf16", out="bf16").schedule.epilogue
    'output'
    >>> mma.cublas("a100", "fp16")
    Traceback (most recent call last):
      ...
    ValueError: no cublas schedule is known for a100 (ampere); known: h100, h200.  State ...
    """
    name, _arch = _gpu("cublas", gpu)
    if isinstance(split_k, str):
        raise ValueError(f"split_k={split_k!r}: cuBLAS's choice is private, so fpsim takes the "
                         "number: read numSplitsK= from CUBLASLT_LOG_LEVEL=2, or find it with "
                         "fpsim.mma.probe(..., shape='gemm')")
    # every argument checked by one rule, never coerced (fpsim/mma/_args.py)
    split_k = _args.count("cublas()", "split_k", split_k)
    fast_accum = _args.flag("cublas()", "fast_accum", fast_accum)
    promote_every = _args.count("cublas()", "promote_every", promote_every, optional=True)
    block_k = _args.count("cublas()", "block_k", block_k, optional=True)
    fa, fb = _inputs(fmt)
    kind = _kind(fa, fb, "cuBLAS")
    fout = _out(out, _outs(kind, fa), f"cuBLAS {fa}")
    if kind == "16bit":
        _refuse(fa, fast_accum=fast_accum, promote_every=promote_every, block_k=block_k)
        schedule = Schedule(split_k=split_k, split_grain=64,
                            epilogue="compute" if fout == "fp32" else "output")
    elif kind == "fp8":
        _refuse(fa, promote_every=promote_every, block_k=block_k)
        schedule = Schedule(split_k=split_k, split_grain=128,
                            promote_every=None if fast_accum else 128)
    else:
        _refuse(fa, fast_accum=fast_accum)
        if promote_every is None:
            raise ValueError("cuBLAS TF32 adds each K tile's chain into FP32, and chooses the tile "
                             "by shape: pass promote_every= (4, 32 and 64 measured on H100; read "
                             "the tile from CUBLASLT_LOG_LEVEL=2 or find it with fpsim.mma.probe)")
        schedule = Schedule(split_k=split_k, split_grain=64, promote_every=promote_every,
                            block_k=block_k)
    model = _preset(name, (fa, fb), "fp32")
    return LibraryGEMM(model, schedule, fout, name=_label("cuBLAS", name, fa, fb, fout))


def _refuse(fmt: str, **given: Any) -> None:
    """One-line errors for options that do not apply to ``fmt`` (given as
    anything but None or False: a 0 is given too)."""
    for key, value in given.items():
        if value is not None and value is not False:
            raise ValueError(f"{key}={value!r} does not apply to {fmt} GEMMs in this library")


def _kind(fa: str, fb: str, library: str) -> str:
    """``"16bit"``, ``"fp8"`` or ``"tf32"``; mixed pairs only within FP8."""
    if fa in _FP8 and fb in _FP8:
        return "fp8"
    if fa != fb:
        raise ValueError(f"{library} takes mixed inputs only as FP8 pairs (e4m3, e5m2); got "
                         f"{fa} x {fb}")
    if fa in _SIXTEEN:
        return "16bit"
    if fa == "tf32":
        return "tf32"
    raise ValueError(f"{library}: inputs {fa}; accepted: fp16, bf16, tf32, e4m3, e5m2, "
                     "(e4m3, e5m2), (e5m2, e4m3)")


def _outs(kind: str, fa: str) -> tuple[str, ...]:
    return {"16bit": ("fp32", fa), "fp8": ("fp32", "bf16", "fp16"), "tf32": ("fp32",)}[kind]


# -- CUTLASS ---------------------------------------------------------------------------

#: CUTLASS, by architecture: the epilogue's order (the 3.x collective epilogue
#: on Hopper and Blackwell, 2.x ``LinearCombination`` before them) and
#: whether FP8 promotes (the Hopper ``MainloopSm90TmaGmmaWarpSpecializedFP8``).
CUTLASS: dict[str, dict[str, Any]] = {
    "volta": {"epilogue_order": "beta_c_first", "fp8": None},
    "ampere": {"epilogue_order": "beta_c_first", "fp8": None},
    "ada": {"epilogue_order": "beta_c_first", "fp8": None},
    "hopper": {"epilogue_order": "alpha_acc_first", "fp8": "promote"},
    "blackwell": {"epilogue_order": "alpha_acc_first", "fp8": "flat"},
    "blackwell-rn": {"epilogue_order": "alpha_acc_first", "fp8": "flat"},
}
SOURCES.update({("cutlass", arch): (
    "read from source: NVIDIA/cutlass 7107b05 (gemm/collective/fp8_accumulation.hpp, "
    "sm90_mma_tma_gmma_ss_warpspecialized_fp8.hpp, epilogue/thread/linear_combination.h, "
    "epilogue/fusion/sm90_callbacks_tma_warpspecialized.hpp, reduction/kernel/"
    "reduce_split_k.h, gemm/kernel/params_universal_base.h); not run on a GPU")
    for arch in CUTLASS})
LIBRARIES["cutlass"] = tuple(CUTLASS)


def cutlass(gpu: str, fmt: Any, out: Any = "fp32", *, fast_accum: bool = False,
            promotion_interval: int = 4, split_k: int = 1, split_reduction: str = "parallel",
            split_grain: int | None = None, epilogue_order: str | None = None) -> LibraryGEMM:
    """What a CUTLASS GEMM computes on ``gpu`` (read from CUTLASS's source,
    not measured).

    * Every MMA accumulates into the FP32 accumulator: the instruction
      chained along K from +0.
    * Hopper FP8 (``KernelTmaWarpSpecialized*`` schedules, the default with
      FP8 inputs): every ``promotion_interval`` WGMMAs (default 4, of 32
      products: 128) the chain's result is added into the FP32 accumulator
      and the chain restarts from 0 (``GmmaFP8Accumulation``); the
      ``*FP8FastAccum`` schedules (``fast_accum=True``) keep one chain.
      Blackwell FP8 keeps one chain.
    * Split-K (``split_k=S``): slices of ``round_up(ceil(K / S), kAlignK)``
      products (``split_grain``, default 128 bits of the input: 8 for 16-bit
      inputs, 16 for FP8); ``split_reduction="parallel"``
      (``GemmSplitKParallel``: the FP32 partials summed from +0) or
      ``"serial"`` (``GemmSplitKSerial``: each slice adds the previous
      slice's output, rounded to the output format, as its source).
    * Epilogue ``D = alpha·acc + beta·C`` in FP32, then converted to ``out``
      (nearest even): ``epilogue_order`` ``"alpha_acc_first"`` on Hopper and
      Blackwell (the 3.x collective epilogue), ``"beta_c_first"`` before
      (2.x ``LinearCombination``).

    >>> import fpsim.mma as mma
    >>> mma.cutlass("h100", "e4m3").schedule.promote_every
    128
    >>> mma.cutlass("h100", "e4m3", promotion_interval=2).schedule.promote_every
    64
    >>> mma.cutlass("a100", "fp16", split_k=2, split_reduction="serial").schedule.split_merge
    'inplace'
    """
    name, arch = _gpu("cutlass", gpu)
    rules = CUTLASS[arch]
    # every argument checked by one rule, never coerced (fpsim/mma/_args.py): a split_grain
    # of 0 or False, or an epilogue_order of '', is refused, not taken for the default
    fast_accum = _args.flag("cutlass()", "fast_accum", fast_accum)
    promotion_interval = _args.count("cutlass()", "promotion_interval", promotion_interval)
    split_k = _args.count("cutlass()", "split_k", split_k)
    split_reduction = _args.choice("cutlass()", "split_reduction", split_reduction,
                                   ("parallel", "serial"))
    split_grain = _args.count("cutlass()", "split_grain", split_grain, optional=True)
    epilogue_order = _args.choice("cutlass()", "epilogue_order", epilogue_order,
                                  EPILOGUE_ORDERS, optional=True)
    fa, fb = _inputs(fmt)
    kind = _kind(fa, fb, "CUTLASS")
    fout = _out(out, _outs(kind, fa), f"CUTLASS {fa}")
    model = _preset(name, (fa, fb), "fp32")
    promote = None
    if kind == "fp8":
        if rules["fp8"] is None:
            raise ValueError(f"no CUTLASS FP8 schedule is known for {name} ({arch}); known: "
                             "Hopper (promotion) and Blackwell")
        if rules["fp8"] == "promote" and not fast_accum:
            promote = promotion_interval * model.k
    elif fast_accum or promotion_interval != 4:
        _refuse(fa, fast_accum=fast_accum, promotion_interval=promotion_interval)
    width = max(model.input_format.width, model.input_b_format.width)
    schedule = Schedule(
        split_k=split_k, split_grain=128 // width if split_grain is None else split_grain,
        split_merge="compute" if split_reduction == "parallel" else "inplace",
        merge_from_zero=split_reduction == "parallel", promote_every=promote,
        epilogue_order=rules["epilogue_order"] if epilogue_order is None else epilogue_order)
    return LibraryGEMM(model, schedule, fout, name=_label("CUTLASS", name, fa, fb, fout))


# -- Triton ----------------------------------------------------------------------------

#: Triton, by architecture: the default ``max_num_imprecise_acc`` of an FP8
#: dot (2**30 on Hopper: never promoted; Blackwell has no partial accumulator).
TRITON: dict[str, dict[str, Any]] = {
    "ampere": {"fp8": False},
    "ada": {"fp8": False},
    "hopper": {"fp8": True},
    "blackwell": {"fp8": False},
    "blackwell-rn": {"fp8": False},
}
SOURCES.update({("triton", arch): (
    "read from source: triton (facebookexperimental/triton db4666f, the same python/ and "
    "lib/ as upstream): language/semantic.py (max_num_imprecise_acc), "
    "third_party/nvidia/backend/compiler.py (its default 2**30 on sm_90), "
    "TritonNVIDIAGPUToLLVM/DotOpToLLVM/WGMMA.cpp (the partial accumulator); not run on a GPU")
    for arch in TRITON})
LIBRARIES["triton"] = tuple(TRITON)


def triton(gpu: str, fmt: Any, out: Any = "fp32", *, max_num_imprecise_acc: int | None = None,
           block_k: int | None = None, input_precision: str = "tf32") -> LibraryGEMM:
    """What a Triton matmul (``acc = tl.dot(a, b, acc)`` over tiles of K,
    ``acc`` FP32 from ``tl.zeros``, then ``acc.to(out)``) computes on ``gpu``
    (read from Triton's source, not measured).

    * Each ``tl.dot`` issues the instruction with the running accumulator as
      its ``c``: one chain along K from +0.
    * FP8 on Hopper: ``max_num_imprecise_acc=None`` is 2**30, so one chain
      (as ``use_fast_accum=True``).  Given ``N`` no larger than the dot's
      ``BLOCK_K`` (``block_k=``, required then), a partial accumulator
      takes the WGMMAs until ``N`` products (rounded up to whole
      instructions of 32) or the end of the ``tl.dot``, and is added into
      ``acc`` in FP32: promotion every ``ceil(N / 32) · 32`` products, which
      must divide ``BLOCK_K``.
    * FP32 inputs: ``input_precision="tf32"`` (inputs must be exact in TF32:
      how Triton's hardware path cuts other FP32 values is not measured);
      ``"tf32x3"`` and ``"ieee"`` are not modelled.

    >>> import fpsim.mma as mma
    >>> mma.triton("h100", "e4m3").schedule.promote_every is None
    True
    >>> mma.triton("h100", "e4m3", max_num_imprecise_acc=64, block_k=128).schedule.promote_every
    64
    """
    name, arch = _gpu("triton", gpu)
    # every argument checked by one rule, never coerced (fpsim/mma/_args.py)
    N = _args.count("triton()", "max_num_imprecise_acc", max_num_imprecise_acc, low=0,
                    high=None, optional=True)
    block_k = _args.count("triton()", "block_k", block_k, optional=True)
    input_precision = _args.choice("triton()", "input_precision", input_precision,
                                   ("tf32", "tf32x3", "ieee"))
    fa, fb = _inputs(fmt)
    kind = _kind(fa, fb, "Triton")
    fout = _out(out, _outs(kind, fa) + (("fp16", "bf16") if kind == "tf32" else ()),
                f"Triton {fa}")
    if kind == "tf32" and input_precision != "tf32":
        raise ValueError(f"input_precision={input_precision!r} is not modelled; accepted: "
                         "'tf32'")
    model = _preset(name, (fa, fb), "fp32")
    promote = None
    if N is not None:
        if kind != "fp8" or not TRITON[arch]["fp8"]:
            raise ValueError("max_num_imprecise_acc applies to FP8 dots on Hopper (sm_90) only")
        if block_k is None or block_k % model.k:
            raise ValueError(f"max_num_imprecise_acc needs block_k= (the dot's BLOCK_K, a "
                             f"multiple of {model.k}); got {block_k!r}")
        if N <= block_k:
            promote = max(1, -(-N // model.k)) * model.k
            if block_k % promote:
                raise ValueError(f"max_num_imprecise_acc={N} flushes every {promote} products, "
                                 f"which does not divide BLOCK_K={block_k}: not modelled")
    elif block_k is not None:
        _refuse(fa, block_k=block_k)
    schedule = Schedule(promote_every=promote)
    return LibraryGEMM(model, schedule, fout, name=_label("Triton", name, fa, fb, fout))
