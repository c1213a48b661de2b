"""Peer adapter: NVIDIA ModelOpt (nvidia-modelopt 0.47.0) quantization on CPU, via the library's own
pure-PyTorch QTensor code paths (no CUDA/Triton extensions).

    peer(recipe, x, dtype, axis=-1, **options) -> dict

recipe : "fp8" | "nvfp4" | "mxfp4" | "mxfp8"
x      : float32 numpy array whose values are exactly representable in `dtype`
dtype  : "fp32" | "bf16" | "fp16"  -- the torch dtype of the tensor handed to ModelOpt
axis   : the axis that blocks / per-channel amax reductions run along.  ModelOpt only blocks along
         the last dim, so the adapter moves `axis` to the last position (a pure permutation, done
         before the library call) and moves the results back.

Returned dict (all numpy):
  data          element codes, one per element, shaped like x, unpacked:
                  fp8/mxfp8 -> uint8 E4M3FN bit pattern;  nvfp4/mxfp4 -> uint8 nibble (S E E M) 0..15
  scale         stored scale codes:
                  nvfp4       -> uint8 E4M3FN codes, one per 16-block (shape x.shape[:-1]+(nblk,), axis moved back)
                  mxfp4/mxfp8 -> uint8 E8M0 biased exponents (same shape convention)
                  fp8         -> raw bits of the scale tensor ModelOpt returns (amax/448) IN THE INPUT DTYPE:
                                 uint16 for bf16/fp16, uint32 for fp32 (see 'scale_dtype'); per-tensor: shape ()
  scale_dtype   string naming the dtype of `scale` ("e4m3fn", "e8m0", "fp32", "bf16", "fp16")
  tensor_scale  nvfp4: uint32 FP32 bits of weights_scaling_factor_2 (= amax/2688), shape (); else None
  dequant       dequantized tensor as unsigned-integer bits of dequant_dtype (uint16 / uint32)
  dequant_dtype "fp32" | "bf16" | "fp16"

options:
  fp8   : granularity="tensor" (default) | "channel" (one scale per slice, amax reduced along `axis`)
          | "block" (needs block_size, 1-D blocks along `axis`);
          path="qtensor" (default: FP8QTensor.quantize/dequantize) | "fake" (tensor_quant.scaled_e4m3 ->
          _fp8_eager, the CPU fake-quant; returns only dequant; data/scale None);
          amax=<float>  (optional, fp32 per-tensor amax override, like a calibrated quantizer)
  nvfp4 : block_size=16 (default); global_amax=<float> (optional: wsf2 = global_amax.float()/2688, the
          quantizer path get_weights_scaling_factor_2_from_quantizer; default: computed from x)
  mxfp4 : block_size=32 (default)
  mxfp8 : (block size fixed to 32 by the library)
  all   : out_dtype="fp32"|"bf16"|"fp16" for the dequantize call (default: the input dtype, as ModelOpt does)
"""

from __future__ import annotations

import numpy as np
import torch

from modelopt.torch.quantization.qtensor.fp8_tensor import FP8QTensor
from modelopt.torch.quantization.qtensor.mxfp4_tensor import MXFP4QTensor
from modelopt.torch.quantization.qtensor.mxfp8_tensor import MXFP8QTensor
from modelopt.torch.quantization.qtensor.nvfp4_tensor import NVFP4QTensor
from modelopt.torch.quantization.tensor_quant import scaled_e4m3

_TDT = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
_NAME = {torch.float32: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16"}


def _bits(t: torch.Tensor) -> np.ndarray:
    t = t.detach().contiguous()
    if t.dtype == torch.float32:
        return t.view(torch.int32).numpy().view(np.uint32).copy()
    if t.dtype in (torch.bfloat16, torch.float16):
        return t.view(torch.int16).numpy().view(np.uint16).copy()
    if t.dtype in (torch.float8_e4m3fn, torch.uint8):
        return t.view(torch.uint8).numpy().copy()
    raise TypeError(t.dtype)


def _unpack_nibbles(packed: torch.Tensor) -> torch.Tensor:
    # ModelOpt packing (nvfp4_tensor.py:338, mxfp4_tensor.py:55-62): even index -> low nibble,
    # odd index -> high nibble.
    lo = packed & 0x0F
    hi = (packed >> 4) & 0x0F
    out = torch.stack([lo, hi], dim=-1)
    return out.reshape(*packed.shape[:-1], packed.shape[-1] * 2)


def peer(recipe: str, x: np.ndarray, dtype: str, axis: int = -1, **options) -> dict:
    x = np.asarray(x, dtype=np.float32)
    tdt = _TDT[dtype]
    out_dt = _TDT[options.pop("out_dtype", dtype)]
    t32 = torch.from_numpy(x.copy())
    t = t32.to(tdt)
    ok = (t.to(torch.float32) == t32) | (torch.isnan(t32) & torch.isnan(t.to(torch.float32)))
    if not bool(ok.all()):
        raise ValueError(f"x is not exactly representable in {dtype}")
    nd = x.ndim
    if nd == 0:
        raise ValueError("x must have at least one dimension")
    ax = axis % nd
    t = torch.movedim(t, ax, -1).contiguous()

    def back(a: torch.Tensor) -> torch.Tensor:
        return torch.movedim(a, -1, ax).contiguous() if a.ndim == nd else a

    res = {"data": None, "scale": None, "scale_dtype": None, "tensor_scale": None,
           "dequant": None, "dequant_dtype": _NAME[out_dt]}

    if recipe == "fp8":
        gran = options.pop("granularity", "tensor")
        path = options.pop("path", "qtensor")
        amax_opt = options.pop("amax", None)
        block_size = options.pop("block_size", None)
        if options:
            raise TypeError(f"unknown options {options}")
        if path == "fake":
            if gran != "tensor":
                raise NotImplementedError("adapter's fake path is per-tensor only")
            amax = (torch.tensor(float(amax_opt), dtype=torch.float32) if amax_opt is not None
                    else t.float().abs().amax())  # TensorQuantizer max calibrator: fp32 amax
            y = scaled_e4m3(t, amax, None, 4, 3)  # -> tensor_quant._fp8_eager on CPU
            res["dequant"] = _bits(back(y.to(out_dt)))
            res["dequant_dtype"] = _NAME[out_dt]
            res["amax"] = _bits(amax.float())
            return res
        kw = {}
        if gran == "tensor":
            kw["axis"] = None
        elif gran == "channel":
            kw["axis"] = tuple(range(nd - 1))  # kept (quantization) axes; amax reduced over the last
        elif gran == "block":
            if not block_size:
                raise ValueError("granularity='block' needs block_size")
            kw["block_sizes"] = {-1: int(block_size)}
        else:
            raise ValueError(gran)
        if amax_opt is not None:
            # what TensorQuantizer._real_quantize does with a calibrated amax (tensor_quantizer.py:829-834)
            kw["scales"] = torch.tensor(float(amax_opt), dtype=torch.float32) / 448.0
        q, scales = FP8QTensor.quantize(t, **kw)
        dq = q.dequantize(dtype=out_dt, scale=scales, block_sizes=kw.get("block_sizes"))
        res["data"] = _bits(back(q._quantized_data))
        res["scale"] = _bits(back(scales) if scales.ndim == nd else scales)
        res["scale_dtype"] = _NAME[scales.dtype]
        res["dequant"] = _bits(back(dq))
        return res

    if recipe == "nvfp4":
        bs = int(options.pop("block_size", 16))
        gamax = options.pop("global_amax", None)
        if options:
            raise TypeError(f"unknown options {options}")
        if t.shape[-1] % bs:
            raise ValueError("last (blocked) dim must be a multiple of block_size (dequantize cannot crop)")
        wsf2 = None
        if gamax is not None:
            wsf2 = torch.tensor(float(gamax), dtype=torch.float32) / (6.0 * 448.0)
        q, sf, sf2 = NVFP4QTensor.quantize(t, bs, weights_scaling_factor_2=wsf2)
        dq = q.dequantize(dtype=out_dt, scale=sf, double_scale=sf2, block_sizes={-1: bs})
        res["data"] = _bits(back(_unpack_nibbles(q._quantized_data)))
        res["scale"] = _bits(back(sf))
        res["scale_dtype"] = "e4m3fn"
        res["tensor_scale"] = _bits(sf2.float().reshape(()))
        res["dequant"] = _bits(back(dq))
        return res

    if recipe == "mxfp4":
        bs = int(options.pop("block_size", 32))
        if options:
            raise TypeError(f"unknown options {options}")
        if t.shape[-1] % bs:
            raise ValueError("last (blocked) dim must be a multiple of block_size "
                             "(MXFP4QTensor blocks the flattened tensor: view(-1, block_size))")
        q, e8 = MXFP4QTensor.quantize(t, bs)
        dq = q.dequantize(dtype=out_dt, scale=e8, block_sizes={-1: bs})
        res["data"] = _bits(back(_unpack_nibbles(q._quantized_data)))
        res["scale"] = _bits(back(e8.reshape(*t.shape[:-1], t.shape[-1] // bs)))
        res["scale_dtype"] = "e8m0"
        res["dequant"] = _bits(back(dq))
        return res

    if recipe == "mxfp8":
        if options:
            raise TypeError(f"unknown options {options}")
        q, e8 = MXFP8QTensor.quantize(t)
        dq = q.dequantize(dtype=out_dt, scale=e8)
        res["data"] = _bits(back(q._quantized_data))
        res["scale"] = _bits(back(e8))
        res["scale_dtype"] = "e8m0"
        res["dequant"] = _bits(back(dq))
        return res

    raise ValueError(f"unknown recipe {recipe!r}")
