"""Adapter: run torchao 0.18.0 (torch 2.13.0, CPU, eager) quantization recipes
and return raw bit codes, for comparison with a bit-exact simulator.

    peer(recipe, x, dtype, axis=-1, **options) -> dict

recipe : "mxfp8" | "mxfp6" | "mxfp4" | "nvfp4" | "fp8"
x      : float32 numpy array whose values are exactly representable in `dtype`
dtype  : "fp32" | "bf16" | "fp16"  (dtype of the tensor handed to torchao)
axis   : axis along which blocks (MX: 32, NVFP4: 16) / rows (fp8 row) run
options:
  element        : mxfp8 "e4m3"(default)|"e5m2"; mxfp6 "e2m3"(default)|"e3m2";
                   mxfp4/nvfp4 "e2m1"; fp8 "e4m3"(default)|"e5m2"
  scale_rounding : MX only: "floor"(default, torchao default)|"ceil"|"even"|"rceil"
  block_size     : MX only, default 32 (NVFP4 is fixed at 16 by torchao)
  per_tensor_scale : NVFP4 only, default False.  True -> per_tensor_scale =
                   per_tensor_amax_to_scale(max|x|) as in nvfp4_linear's
                   use_dynamic_per_tensor_scale path.  A float may also be
                   given: it is used (as an fp32 0-d tensor) as the scale itself.
  scaling        : fp8 only, "tensor"(default)|"row"
  impl           : fp8 only, "inference"(default: torchao.quantization
                   Float8Tensor.from_hp, KernelPreference.TORCH - what
                   quantize_(.., Float8DynamicActivationFloat8WeightConfig())
                   runs when MSLK is not used) | "training" (torchao.float8
                   hp_tensor_to_float8_dynamic)
  round_scales_to_power_of_2 : fp8 impl="training" only, default False

Returns dict(data, scale, tensor_scale, dequant, dequant_dtype, scale_kind)
  data   : uint8 element codes, unpacked, shaped like x (fp8: the byte;
           fp6: 6-bit code s|e|m in bits 5..0; fp4: 4-bit code in bits 3..0)
  scale  : MX -> uint8 E8M0 codes; NVFP4 -> uint8 E4M3 codes; fp8 -> uint32
           fp32 bits.  Shape = x.shape with the `axis` dim replaced by the
           number of blocks (fp8 row: 1; fp8 tensor: all dims 1).
  tensor_scale : uint32 fp32 bits of NVFP4 per_tensor_scale (0-d), else None
  dequant : uint16/uint32 bits of the peer's dequantized tensor (default
           output dtype = what torchao returns without output_dtype argument)
  dequant_dtype : "fp32" | "bf16" | "fp16"
  scale_kind : "e8m0" | "e4m3" | "fp32_multiplier" (x ~= q*scale, inference)
               | "fp32_reciprocal" (x ~= q/scale, training)
Raises NotImplementedError where torchao itself rejects the input (e.g. fp16
for MX and NVFP4: torchao asserts bf16/fp32).
"""
import os
import numpy as np
import torch

torch.set_num_threads(1)

from torchao.prototype.mx_formats.config import ScaleCalculationMode  # noqa: E402
from torchao.prototype.mx_formats.mx_tensor import MXTensor  # noqa: E402
from torchao.prototype.mx_formats.constants import (  # noqa: E402
    DTYPE_FP6_E2M3,
    DTYPE_FP6_E3M2,
)
from torchao.prototype.mx_formats.kernels import unpack_uint4  # noqa: E402
from torchao.prototype.mx_formats.nvfp4_tensor import (  # noqa: E402
    NVFP4Tensor,
    per_tensor_amax_to_scale,
)

_TDT = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
_TNAME = {v: k for k, v in _TDT.items()}
_UINT = {torch.float32: (torch.int32, np.uint32),
         torch.bfloat16: (torch.int16, np.uint16),
         torch.float16: (torch.int16, np.uint16)}
_MODES = {"floor": ScaleCalculationMode.FLOOR, "ceil": ScaleCalculationMode.CEIL,
          "even": ScaleCalculationMode.EVEN, "rceil": ScaleCalculationMode.RCEIL}


def _bits(t):
    idt, ndt = _UINT[t.dtype]
    return t.contiguous().view(idt).numpy().view(ndt).copy()


def _to_torch(x, dtype):
    """Build the input tensor from the exact bits of x: bf16 = top 16 bits of
    the fp32 pattern (so NaN sign/payload are kept: torch's own fp32->bf16
    cast turns every NaN into 0xFFFF), fp16 via numpy's IEEE conversion."""
    x = np.ascontiguousarray(np.asarray(x, dtype=np.float32))
    b = x.view(np.uint32)
    if dtype == "fp32":
        return torch.from_numpy(x.copy())
    if dtype == "bf16":
        if np.any((b & 0xFFFF) != 0):
            raise ValueError("x is not exactly representable in bf16")
        h = (b >> 16).astype(np.uint16)
        return torch.from_numpy(h.view(np.int16).copy()).view(torch.bfloat16)
    if dtype == "fp16":
        h = x.astype(np.float16)
        if not np.array_equal(h.astype(np.float32).view(np.uint32)[~np.isnan(x)], b[~np.isnan(x)]):
            raise ValueError("x is not exactly representable in fp16")
        return torch.from_numpy(h.copy())
    raise ValueError(dtype)


def _u8(t):
    return t.contiguous().view(torch.uint8).numpy().copy()


def peer(recipe: str, x: np.ndarray, dtype: str, axis: int = -1, **options) -> dict:
    x = np.asarray(x, dtype=np.float32)
    nd = x.ndim
    ax = axis % nd
    xm = np.moveaxis(x, ax, -1)              # blocks along the last dim
    t = _to_torch(xm, dtype)

    def back(a):                              # move the last dim back to `axis`
        return np.ascontiguousarray(np.moveaxis(a, -1, ax))

    out = dict(tensor_scale=None)
    if recipe in ("mxfp8", "mxfp6", "mxfp4"):
        el = options.get("element", {"mxfp8": "e4m3", "mxfp6": "e2m3", "mxfp4": "e2m1"}[recipe])
        edt = {("mxfp8", "e4m3"): torch.float8_e4m3fn, ("mxfp8", "e5m2"): torch.float8_e5m2,
               ("mxfp6", "e2m3"): DTYPE_FP6_E2M3, ("mxfp6", "e3m2"): DTYPE_FP6_E3M2,
               ("mxfp4", "e2m1"): torch.float4_e2m1fn_x2}[(recipe, el)]
        mode = _MODES[options.get("scale_rounding", "floor")]
        bs = int(options.get("block_size", 32))
        if t.dtype not in (torch.float32, torch.bfloat16):
            raise NotImplementedError("torchao to_mx asserts data_hp.dtype in (bf16, fp32)")
        mx = MXTensor.to_mx(t, edt, block_size=bs, scaling_mode=mode)
        q = mx.qdata
        if edt == torch.float4_e2m1fn_x2:
            codes = unpack_uint4(q.view(torch.uint8)).numpy().copy()
        else:
            codes = _u8(q)
        codes = codes.reshape(xm.shape)
        sc = _u8(mx.scale).reshape(*xm.shape[:-1], xm.shape[-1] // bs)
        dq = mx.dequantize()
        out.update(data=back(codes), scale=back(sc), dequant=back(_bits(dq).reshape(xm.shape)),
                   dequant_dtype=_TNAME[dq.dtype], scale_kind="e8m0")
        return out

    if recipe == "nvfp4":
        if t.dtype not in (torch.float32, torch.bfloat16):
            raise NotImplementedError("torchao nvfp4_quantize asserts data_hp.dtype in (bf16, fp32)")
        pts_opt = options.get("per_tensor_scale", False)
        t2 = t.reshape(-1, t.shape[-1]).contiguous()
        if pts_opt is True:
            # nvfp4_tensor.py nvfp4_linear (dynamic act path): torch.max(torch.abs(x))
            pts = per_tensor_amax_to_scale(torch.max(torch.abs(t2)))
        elif pts_opt is False or pts_opt is None:
            pts = None
        else:
            pts = torch.tensor(float(pts_opt), dtype=torch.float32)
        nv = NVFP4Tensor.to_nvfp4(t2, block_size=16, per_tensor_scale=pts)
        codes = unpack_uint4(nv.qdata.view(torch.uint8)).numpy().reshape(xm.shape)
        sc = _u8(nv.scale).reshape(*xm.shape[:-1], xm.shape[-1] // 16)
        dq = nv.dequantize()
        out.update(data=back(codes), scale=back(sc), dequant=back(_bits(dq).reshape(xm.shape)),
                   dequant_dtype=_TNAME[dq.dtype], scale_kind="e4m3",
                   tensor_scale=None if pts is None else _bits(pts.reshape(())).reshape(()))
        return out

    if recipe == "fp8":
        el = options.get("element", "e4m3")
        fdt = {"e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}[el]
        scaling = options.get("scaling", "tensor")
        impl = options.get("impl", "inference")
        if impl == "inference":
            from torchao.quantization.quantize_.workflows.float8.float8_tensor import Float8Tensor
            from torchao.quantization.granularity import PerRow, PerTensor
            from torchao.quantization.quantize_.common.kernel_preference import KernelPreference
            gran = PerTensor() if scaling == "tensor" else PerRow()
            f8 = Float8Tensor.from_hp(t, float8_dtype=fdt, granularity=gran,
                                      kernel_preference=KernelPreference.TORCH)
            q, s = f8.qdata, f8.scale
            dq = f8.dequantize()
            kind = "fp32_multiplier"
        elif impl == "training":
            from torchao.float8.float8_scaling_utils import hp_tensor_to_float8_dynamic
            from torchao.float8.float8_training_tensor import LinearMMConfig
            from torchao.float8.config import ScalingGranularity
            g = ScalingGranularity.TENSORWISE if scaling == "tensor" else ScalingGranularity.AXISWISE
            f8 = hp_tensor_to_float8_dynamic(
                t, fdt, LinearMMConfig(), scaling_granularity=g,
                axiswise_dim=(-1 if scaling == "row" else None),
                round_scales_to_power_of_2=bool(options.get("round_scales_to_power_of_2", False)))
            q, s = f8._data, f8._scale
            dq = f8.to_original_precision()
            kind = "fp32_reciprocal"
        else:
            raise ValueError(impl)
        assert s.dtype == torch.float32
        sshape = (1,) * nd if scaling == "tensor" else (*xm.shape[:-1], 1)
        sb = _bits(s).reshape(sshape)
        out.update(data=back(_u8(q).reshape(xm.shape)), scale=back(sb),
                   dequant=back(_bits(dq).reshape(xm.shape)),
                   dequant_dtype=_TNAME[dq.dtype], scale_kind=kind)
        return out
    raise ValueError(recipe)
