"""Peer adapter: compressed-tensors 0.20.1 (CPU, eager torch paths) as an oracle for fpsim.

    peer(recipe, x, dtype, axis=-1, **options) -> dict

Everything that compressed-tensors (CT) computes is computed by CT's own functions:

* scales: ``calculate_qparams`` (and ``generate_gparam`` for NVFP4's global scale),
  ``compressed_tensors/quantization/utils/helpers.py``; with ``dynamic=True`` the
  scale comes from CT's own ``compute_dynamic_scales_and_zp`` (min/max included).
  For static (weight) quantization the min/max reduction is llmcompressor's
  memoryless min-max observer (``llmcompressor/observers/{helpers,min_max,base}.py``),
  which is *not* part of CT; it is reproduced here line for line (``_flatten_weight``
  + ``torch.amin/amax(dim=(0, -1))`` in the tensor's dtype; the global amax as
  ``Observer.get_global_scale``).
* the scale parameter is stored in a tensor of the observed dtype
  (``lifecycle/initialize.py`` 259-267) with ``copy_`` (``offload/__init__.py`` 152).
* elements, packed codes and stored scales: the CT compressor's ``compress``
  (``NaiveQuantizationCompressor`` for FP8, ``NVFP4PackedCompressor``,
  ``MXFP4PackedCompressor``, ``MXFP8QuantizationCompressor``, ``MXFP6PackedCompressor``);
  for ``dynamic=True`` (activations, which are never compressed) CT's ``quantize``.
* dequant: ``dequant="decompress"`` (default; the compressor's ``decompress``, what
  loading a compressed checkpoint through CT gives), ``"fake_quantize"`` (CT's
  ``fake_quantize``, the QDQ that llmcompressor's calibration forward runs) or
  ``"dequantize"`` (CT's ``dequantize`` on the codes and the stored scale, output in the
  input dtype).

recipes: "fp8" (scaling "tensor" | "channel" | "group" | "block" | "token"),
"nvfp4", "mxfp8", "mxfp4", "mxfp6" (E2M3; exists in 0.20.1 as well).
"""

from __future__ import annotations

import numpy as np
import torch

from compressed_tensors.compressors.mxfp4.base import MXFP4PackedCompressor
from compressed_tensors.compressors.mxfp6.base import MXFP6PackedCompressor
from compressed_tensors.compressors.mxfp6.helpers import pack_fp6_to_uint8
from compressed_tensors.compressors.mxfp8.base import MXFP8QuantizationCompressor
from compressed_tensors.compressors.mx_utils import compress_mx_scale
from compressed_tensors.compressors.naive_quantized.base import NaiveQuantizationCompressor
from compressed_tensors.compressors.nvfp4.base import NVFP4PackedCompressor
from compressed_tensors.compressors.nvfp4.helpers import pack_fp4_to_uint8
from compressed_tensors.quantization import QuantizationArgs, QuantizationScheme
from compressed_tensors.quantization.lifecycle.forward import (
    dequantize,
    fake_quantize,
    quantize,
)
from compressed_tensors.quantization.quant_scheme import preset_name_to_scheme
from compressed_tensors.quantization.utils import (
    calculate_qparams,
    compute_dynamic_scales_and_zp,
    generate_gparam,
    maybe_pad_tensor_for_block_quant,
)

__all__ = ["peer", "RECIPES"]

RECIPES = ("fp8", "nvfp4", "mxfp8", "mxfp4", "mxfp6")

_TORCH = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
_NAME = {v: k for k, v in _TORCH.items()}
_UINT = {torch.float32: (torch.int32, np.uint32), torch.bfloat16: (torch.int16, np.uint16),
         torch.float16: (torch.int16, np.uint16)}
_ELEMENT = {"fp8": "e4m3", "mxfp8": "e4m3", "nvfp4": "e2m1", "mxfp4": "e2m1", "mxfp6": "e2m3"}


def _bits(t: torch.Tensor) -> np.ndarray:
    """Unsigned-integer bit patterns of a float tensor (fp32 -> uint32, bf16/fp16 -> uint16,
    fp8 -> uint8)."""
    t = t.detach().contiguous()
    if t.dtype in (torch.float8_e4m3fn, torch.uint8):
        return t.view(torch.uint8).numpy().copy()
    it, nt = _UINT[t.dtype]
    return t.view(it).numpy().view(nt).copy()


def _to_torch(x: np.ndarray, dtype: str) -> torch.Tensor:
    x = np.asarray(x, dtype=np.float32)
    t = torch.from_numpy(x.copy()).to(_TORCH[dtype])
    if not np.array_equal(t.float().numpy(), x, equal_nan=True):
        raise ValueError(f"x holds values that are not exact in {dtype}")
    return t


# --- llmcompressor's memoryless min-max observer, reproduced (not part of CT) ----------------

def _flatten_weight(value: torch.Tensor, args: QuantizationArgs) -> torch.Tensor:
    """llmcompressor/observers/helpers.py::_flatten_weight (2-D weight)."""
    s = args.strategy
    if s == "tensor":
        return value.reshape((1, 1, -1))
    if s == "channel":
        return value.unsqueeze(-2).unsqueeze(0)
    if s in ("group", "tensor_group"):
        return value.unflatten(-1, (-1, args.group_size)).unsqueeze(0)
    if s == "block":
        bh, bw = args.block_structure
        value = maybe_pad_tensor_for_block_quant(value, args.block_structure)
        rows, cols = value.shape
        return (value.reshape(rows // bh, bh, cols // bw, bw).transpose(1, 2)
                .flatten(-2, -1).unsqueeze(0))
    raise ValueError(f"no static observer for strategy {s}")


def _observer_qparams(w: torch.Tensor, args: QuantizationArgs):
    """MemorylessMinMaxObserver + Observer.get_qparams (llmcompressor/observers/)."""
    obs = _flatten_weight(w, args)
    min_vals = torch.amin(obs, dim=(0, -1))          # min_max.py::_get_min_max
    max_vals = torch.amax(obs, dim=(0, -1))
    global_scale = None
    if args.strategy == "tensor_group":               # base.py::get_global_scale
        absmax = max_vals.max()
        absmax = torch.max(absmax, -min_vals.min())
        absmax = torch.max(absmax, max_vals.max())
        global_scale = generate_gparam(-absmax.reshape(1), absmax.reshape(1))
    scale, zp = calculate_qparams(min_vals, max_vals, args, global_scale=global_scale)
    return scale, zp, global_scale


def _stored_param(value: torch.Tensor, observed_dtype: torch.dtype) -> torch.Tensor:
    """initialize.py 259-267: the scale Parameter has the observed dtype (fp16 if that is not
    a float dtype); update_offload_parameter copy_()s the observer's result into it."""
    dt = observed_dtype if observed_dtype in (torch.float16, torch.bfloat16, torch.float32,
                                              torch.float64) else torch.float16
    p = torch.empty(value.shape, dtype=dt)
    p.copy_(value)
    return p


# --- layout -------------------------------------------------------------------------------

def _to_2d(t: torch.Tensor, axis: int, scaling: str):
    """Move the axis the groups run along to the last place and flatten the rest into rows.
    For "channel", `axis` is the channel axis (one scale per index of it, as fpsim's
    quantize(..., "channel", axis=)) and goes first; the rest is flattened into columns."""
    nd = t.ndim
    if nd == 0:
        raise ValueError("x must have at least one dimension")
    ax = axis % nd
    if scaling == "channel":
        moved = torch.movedim(t, ax, 0)
        return moved.reshape(moved.shape[0], -1), moved.shape, ax
    if scaling == "block":
        if nd != 2:
            raise ValueError("block scaling needs a 2-D x (tiles of the last two axes)")
        return t, t.shape, None
    moved = torch.movedim(t, ax, -1)
    return moved.reshape(-1, moved.shape[-1]), moved.shape, ax


def _from_2d(t: torch.Tensor, moved_shape, ax, scaling: str) -> torch.Tensor:
    if scaling == "block" or ax is None:
        return t.reshape(moved_shape)
    t = t.reshape(moved_shape)
    return torch.movedim(t, 0 if scaling == "channel" else -1, ax)


def _scale_layout(s: torch.Tensor, x_shape, moved_shape, ax, scaling: str) -> torch.Tensor:
    """Scale tensor reshaped to broadcast against x (group/mx/nvfp4: x.shape with the axis
    dimension replaced by the number of groups; channel: the channel axis kept, others 1;
    token: the axis dimension 1; tensor: (1,); block: the (row-tile, column-tile) grid)."""
    if scaling in ("tensor", "block") or ax is None:
        return s
    nd = len(x_shape)
    if scaling == "channel":
        shape = [1] * nd
        shape[ax] = x_shape[ax]
        return s.reshape(shape)
    lead = list(moved_shape[:-1])
    t = s.reshape(lead + [s.shape[-1]])
    return torch.movedim(t, -1, ax)


# --- codes --------------------------------------------------------------------------------

def _fp4_codes(packed: torch.Tensor) -> torch.Tensor:
    """nvfp4 helpers: low nibble = even column, high nibble = odd column."""
    p = packed.to(torch.int32)
    return torch.stack((p & 0xF, (p >> 4) & 0xF), dim=-1).flatten(-2).to(torch.uint8)


def _fp6_codes(packed: torch.Tensor) -> torch.Tensor:
    m, n3 = packed.shape
    b = packed.reshape(m, n3 // 3, 3).to(torch.int32)
    word = b[..., 0] | b[..., 1] << 8 | b[..., 2] << 16
    return torch.stack([word >> s & 0x3F for s in (0, 6, 12, 18)], dim=-1).reshape(m, -1).to(
        torch.uint8)


# --- the recipes --------------------------------------------------------------------------

def _args_for(recipe: str, scaling: str, group_size, block, dynamic) -> tuple:
    """(QuantizationArgs, QuantizationScheme, compressor) exactly as the CT presets build them."""
    if recipe == "fp8":
        kw = dict(num_bits=8, type="float", symmetric=True)
        if scaling == "tensor":
            kw.update(strategy="tensor")
        elif scaling == "channel":
            kw.update(strategy="channel")
        elif scaling == "group":
            kw.update(strategy="group", group_size=group_size or 128)
        elif scaling == "block":
            kw.update(strategy="block", block_structure=list(block or (128, 128)))
        elif scaling == "token":
            kw.update(strategy="token")
            dynamic = True
        else:
            raise ValueError(f"fp8 scaling {scaling!r}")
        args = QuantizationArgs(dynamic=bool(dynamic), **kw)
        scheme = QuantizationScheme(targets=["Linear"], weights=args)
        return args, scheme, NaiveQuantizationCompressor
    preset = {"nvfp4": "NVFP4A16", "mxfp4": "MXFP4A16", "mxfp8": "MXFP8A16",
              "mxfp6": "MXFP6A16"}[recipe]
    scheme = preset_name_to_scheme(preset, ["Linear"])
    args = scheme.weights
    if group_size is not None and group_size != args.group_size:
        args = args.model_copy(update={"group_size": group_size})
        scheme = scheme.model_copy(update={"weights": args})
    if dynamic:
        dyn = "local" if recipe == "nvfp4" else True
        args = args.model_copy(update={"dynamic": dyn})
    comp = {"nvfp4": NVFP4PackedCompressor, "mxfp4": MXFP4PackedCompressor,
            "mxfp8": MXFP8QuantizationCompressor, "mxfp6": MXFP6PackedCompressor}[recipe]
    return args, scheme, comp


def peer(recipe: str, x: np.ndarray, dtype: str, axis: int = -1, **options) -> dict:
    """Quantize ``x`` (float32 array, values exact in ``dtype``) as compressed-tensors 0.20.1
    does on CPU.

    options:
      scaling   fp8 only: "tensor" (default), "channel" (one scale per index of `axis`),
                "group" (group_size, default 128, along `axis`), "block" (2-D x; block=(bh, bw),
                default (128, 128)), "token" (dynamic; one scale per index of every axis but
                `axis`).  nvfp4/mx*: groups along `axis` (fixed by the recipe).
      group_size  fp8 group (default 128); nvfp4 (default 16); mx* must be 32 (with any
                other size CT would round amax/max to an integer uint8 scale; refused).
      block     (bh, bw) for fp8 block scaling.
      element   only the element CT uses: "e4m3" (fp8, mxfp8), "e2m1" (nvfp4, mxfp4),
                "e2m3" (mxfp6).
      dynamic   False (default; weight path: observer + calculate_qparams + compressor) or
                True (activation path: compute_dynamic_scales_and_zp + quantize; nvfp4 uses
                dynamic="local": the global scale still from the tensor's absmax).
      zero_point  True (default): pass the all-zero zero point that llmcompressor's flow
                carries for symmetric schemes (forced weight_zero_point parameter; dynamic
                zp from compute_dynamic_scales_and_zp) to quantize/fake_quantize/compress,
                as CT does: x/s + 0 turns -0.0 into +0.0 (FP8/MXFP8 code 0x00, not 0x80).
                NVFP4/MXFP4/MXFP6 compress ignore it for symmetric schemes.  False: none.
      dequant   "decompress" (default for the static path), "fake_quantize" (default for
                dynamic) or "dequantize".
      token_rank  "token" only: 3 (default; x's rows are tokens of a (1, tokens, hidden)
                activation: one scale per row) or 2 (x given to CT as the 2-D tensor it is:
                TOKEN keeps axes 0 and 1, reduces nothing, and takes one scale).

    returns dict: data (uint8 element codes shaped like x: E4M3 bits, E2M1 nibble 0-15 with
    the sign in bit 3, E2M3 6-bit code with the sign in bit 5), scale (stored scale: fp8
    recipes -> bits of the scale in x's dtype, uint16 for bf16/fp16, uint32 for fp32; nvfp4
    -> uint8 E4M3; mx* -> uint8 E8M0), scale_format, tensor_scale (nvfp4: uint32 FP32 bits
    of the global scale, shape (1,); else None), dequant (bits of dequant_dtype),
    dequant_dtype ("bf16"/"fp16"/"fp32"), plus diagnostics: scale_value (float64 view of the
    scale CT divides by before the global scale), element_value (float64 element values).
    """
    recipe = recipe.lower()
    if recipe not in RECIPES:
        raise ValueError(f"recipe must be one of {RECIPES}")
    if dtype not in _TORCH:
        raise ValueError("dtype must be fp32, bf16 or fp16")
    element = options.pop("element", _ELEMENT[recipe])
    if element != _ELEMENT[recipe]:
        raise ValueError(f"compressed-tensors {recipe} only has element {_ELEMENT[recipe]}")
    scaling = options.pop("scaling", "tensor" if recipe == "fp8" else "group")
    if recipe != "fp8" and scaling not in ("group", "mx", "nvfp4"):
        raise ValueError(f"{recipe}: scaling is fixed (groups along axis)")
    if recipe != "fp8":
        scaling = "group"
    group_size = options.pop("group_size", None)
    if recipe.startswith("mx") and group_size not in (None, 32):
        raise ValueError("CT's MX scale rule only applies with group_size 32 (mxfp_utils.py "
                         "should_generate_mx_scales); with another size calculate_qparams rounds "
                         "amax/max to an *integer* uint8 scale (round(clamp(s, 0, 255)))")
    block = options.pop("block", None)
    dynamic = bool(options.pop("dynamic", False))
    with_zp = bool(options.pop("zero_point", True))
    dq_mode = options.pop("dequant", None)
    token_rank = options.pop("token_rank", 3)
    if token_rank not in (2, 3):
        raise ValueError("token_rank must be 2 or 3")
    if options:
        raise TypeError(f"unknown options {sorted(options)}")

    xt = _to_torch(x, dtype)
    tdt = xt.dtype
    w, moved_shape, ax = _to_2d(xt, axis, scaling)
    args, scheme, comp = _args_for(recipe, scaling, group_size, block, dynamic)
    if scaling == "token":
        dynamic = True
    if dq_mode is None:
        dq_mode = "fake_quantize" if dynamic else "decompress"

    # 1. quantization parameters ---------------------------------------------------------
    gscale = None
    if dynamic:
        # TOKEN reduces dims >= 2 only: (1, rows, columns) gives one scale per row
        v = w.unsqueeze(0) if scaling == "token" and token_rank == 3 else w
        if recipe == "nvfp4":
            absmax = torch.max(torch.amax(w), -torch.amin(w))      # static_minmax observer
            gscale = generate_gparam(-absmax.reshape(1), absmax.reshape(1))
        scale, zp = compute_dynamic_scales_and_zp(value=v, args=args, module=None,
                                                  global_scale=gscale)
        if scaling == "token" and token_rank == 3:
            scale = scale.reshape(w.shape[0], 1)
        param = scale                                    # dynamic: used as computed
    else:
        scale, zp, gscale = _observer_qparams(w, args)
        param = _stored_param(scale, tdt)
        # initialize.py 276-283: weight_zero_point (zeros, args.zp_dtype) exists whenever
        # force_zero_point (apply.py 126: status < COMPRESSED, i.e. during llmcompressor
        # calibration and at compression time), and calculate_qparams writes zeros into it.
        zp = zp.reshape(param.shape).to(args.zp_dtype)
    if not with_zp:
        zp = None
    elif zp is not None:
        zp = zp.reshape(param.shape)
    # 2. quantize / compress -------------------------------------------------------------
    if dynamic:
        if recipe in ("fp8", "mxfp8"):
            q = quantize(w, param, zp, args, dtype=torch.float8_e4m3fn, global_scale=gscale)
            codes = q.view(torch.uint8)
            stored = param
        else:
            q = quantize(w, param, zp, args, global_scale=gscale)
            codes = (_fp4_codes(pack_fp4_to_uint8(q)) if recipe in ("nvfp4", "mxfp4")
                     else _fp6_codes(pack_fp6_to_uint8(q)))
            stored = param
        if recipe == "nvfp4":
            stored = param.to(torch.float8_e4m3fn)
        elif recipe.startswith("mx"):
            stored = compress_mx_scale(param, torch.uint8)
        comp_sd = None
    else:
        sd = {"weight": w.clone(), "weight_scale": param.clone()}
        if gscale is not None:
            sd["weight_global_scale"] = gscale.clone()
        if zp is not None:       # get_direct_state_dict(module) carries it to compress()
            sd["weight_zero_point"] = zp.clone()
        comp_sd = comp.compress(sd, scheme)
        if recipe in ("fp8", "mxfp8"):
            codes = comp_sd["weight"].view(torch.uint8)
        elif recipe == "mxfp6":
            codes = _fp6_codes(comp_sd["weight_packed"])
        else:
            codes = _fp4_codes(comp_sd["weight_packed"])
        stored = comp_sd["weight_scale"]
    # 3. dequantize ------------------------------------------------------------------------
    if dq_mode == "decompress":
        if comp_sd is None:
            raise ValueError("dequant='decompress' needs the static (weight) path")
        sd2 = {k: v.clone() for k, v in comp_sd.items()}
        out = comp.decompress(sd2, scheme)["weight"]
    elif dq_mode == "fake_quantize":
        out = fake_quantize(w, param, zp, args, global_scale=gscale)
    elif dq_mode == "dequantize":
        if recipe in ("fp8", "mxfp8"):
            xq = codes.view(torch.float8_e4m3fn)
        else:
            xq = _decode_small(codes, recipe).to(tdt)
        out = dequantize(xq, param, None, args, dtype=tdt, global_scale=gscale)
    else:
        raise ValueError(f"dequant {dq_mode!r}")
    if out.shape != w.shape:     # block padding is truncated by CT; defensive
        out = out[: w.shape[0], : w.shape[1]]

    data = _from_2d(codes.reshape(w.shape), moved_shape, ax, scaling)
    deq = _from_2d(out.reshape(w.shape), moved_shape, ax, scaling)
    layout = "tensor" if scaling == "token" and token_rank == 2 else scaling   # one scale
    sc = _scale_layout(stored, xt.shape, moved_shape, ax, layout)
    sv = _scale_layout(param.double() if param.dtype != torch.uint8 else param.double(),
                       xt.shape, moved_shape, ax, layout)
    return {
        "data": data.numpy().astype(np.uint8),
        "scale": _bits(sc),
        "scale_format": {torch.float8_e4m3fn: "e4m3", torch.uint8: "e8m0"}.get(
            stored.dtype, _NAME.get(stored.dtype)),
        "tensor_scale": None if gscale is None else _bits(gscale.to(torch.float32)),
        "dequant": _bits(deq),
        "dequant_dtype": _NAME[deq.dtype],
        "scale_value": sv.numpy(),
        "element_value": _decode_small(data, recipe).double().numpy()
        if recipe not in ("fp8", "mxfp8") else data.view(torch.float8_e4m3fn).double().numpy(),
    }


_E2M1 = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0], dtype=torch.float64)
_E2M3 = torch.tensor([m / 8 for m in range(8)] + [(1 + m / 8) * 2 ** e for e in range(3)
                                                   for m in range(8)], dtype=torch.float64)


def _decode_small(codes: torch.Tensor, recipe: str) -> torch.Tensor:
    c = codes.to(torch.int64)
    if recipe in ("nvfp4", "mxfp4"):
        v = _E2M1[c & 7]
        return torch.where((c & 8) != 0, -v, v)
    v = _E2M3[c & 31]
    return torch.where((c & 32) != 0, -v, v)
