"""Peer adapter: brevitas 0.13.4 float (FP8 OCP / FNUZ) and OCP-MX quantizers.

    peer(recipe, x, dtype, axis=-1, **options) -> dict

recipe   "fp8" | "mxfp8" | "mxfp6" | "mxfp4" | "mxint8"
x        float32 numpy array whose values are exact in `dtype`
dtype    "fp32" | "bf16" | "fp16": the torch dtype the tensor (and the quantizer's
         parameters/buffers, hence every intermediate) lives in
axis     fp8 + scaling="channel": one scale per index of `axis`
         MX  (scaling="block")  : blocks of 32 consecutive elements along `axis`
         fp8 + scaling="tensor" : ignored
options  element   fp8  : "e4m3" (default), "e5m2", "e4m3fnuz", "e5m2fnuz"
                   mxfp8: "e4m3" (default; the only predefined MX float quantizer),
                          "e5m2" (MXFloat8e4m3Weight.let(exponent_bit_width=5, mantissa_bit_width=2))
                   mxfp6: "e2m3" (default), "e3m2"   (MXFloat8e4m3Weight.let(bit_width=6, ...))
                   mxfp4: "e2m1"                     (MXFloat8e4m3Weight.let(bit_width=4, ...))
                   mxint8: -
         scaling   fp8: "tensor" (default) | "channel";  MX: "block" (default, only)
         role      "weight" (default: *Weight* quantizer on a QuantLinear weight) |
                   "act" (MX*Act on QuantIdentity; fp8: Fp8*ActPerTensorFloat in training
                   mode, first forward, = dynamic per-tensor absmax; tensor scaling only)
         block_size  MX group size (default 32, brevitas' group_size)

Returns
  data          uint8 array shaped like x: the element code in the element format's bit
                layout (fp8 1 byte, fp6 low 6 bits, fp4 low 4 bits, mxint8 int8 two's
                complement), encoded from the library's quantized value y = (x/scale)
                rounded and clamped, captured at the output of FloatClamp / the integer
                clamp (not recomputed from the dequantized tensor).
  scale         fp8: uint32 FP32 bits of brevitas' scale (computed in `dtype`, widened
                exactly); shape () for tensor, (C,) for channel.
                MX : uint8 E8M0 code = log2(scale) + 127 (mxint8: log2(scale)+6+127, i.e.
                the OCP MXINT8 convention with the implicit 2**-6 element scale); shape of
                x with `axis` replaced by ceil(n/32).  0xFF for a NaN or infinite scale,
                0x00 for a zero scale (fp16 underflow).  When
                brevitas' scale is not a power of two (tiny / all-zero blocks, see
                scale_not_e8m0) the code is that of the scale's binade (floor of log2).
  tensor_scale  None
  dequant       brevitas' dequantized tensor (y * scale, in `dtype`) as uint32 (fp32) or
                uint16 (bf16/fp16) bits
  dequant_dtype dtype
  extra keys    scale_fp32 (uint32 bits of brevitas' scale, every recipe),
                scale_not_e8m0 (bool mask, MX only), nan_mask (bool, y is NaN),
                y (float64 quantized values, x/scale rounded, pre-dequant), quantizer
                (class name / let() arguments used), brevitas_version.
"""
from __future__ import annotations

import os
import warnings

os.environ.setdefault("BREVITAS_JIT", "0")
warnings.filterwarnings("ignore")

import ml_dtypes  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

import brevitas  # noqa: E402
from brevitas.nn import QuantIdentity, QuantLinear  # noqa: E402
from brevitas.quant import float_quant_fnuz as _fnuz  # noqa: E402
from brevitas.quant import float_quant_ocp as _ocp  # noqa: E402
from brevitas.quant import mx_quant_ocp as _mx  # noqa: E402

_TORCH_DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}

# element name -> (exponent bits, mantissa bits, bit width, ml_dtypes type, fnuz)
_ELEMENTS = {
    "e4m3": (4, 3, 8, ml_dtypes.float8_e4m3fn, False),
    "e5m2": (5, 2, 8, ml_dtypes.float8_e5m2, False),
    "e4m3fnuz": (4, 3, 8, ml_dtypes.float8_e4m3fnuz, True),
    "e5m2fnuz": (5, 2, 8, ml_dtypes.float8_e5m2fnuz, True),
    "e2m3": (2, 3, 6, ml_dtypes.float6_e2m3fn, False),
    "e3m2": (3, 2, 6, ml_dtypes.float6_e3m2fn, False),
    "e2m1": (2, 1, 4, ml_dtypes.float4_e2m1fn, False),
}

_FP8_WEIGHT = {
    ("e4m3", "tensor"): _ocp.Fp8e4m3OCPWeightPerTensorFloat,
    ("e4m3", "channel"): _ocp.Fp8e4m3OCPWeightPerChannelFloat,
    ("e5m2", "tensor"): _ocp.Fp8e5m2OCPWeightPerTensorFloat,
    ("e5m2", "channel"): _ocp.Fp8e5m2OCPWeightPerChannelFloat,
    ("e4m3fnuz", "tensor"): _fnuz.Fp8e4m3FNUZWeightPerTensorFloat,
    ("e4m3fnuz", "channel"): _fnuz.Fp8e4m3FNUZWeightPerChannelFloat,
    ("e5m2fnuz", "tensor"): _fnuz.Fp8e5m2FNUZWeightPerTensorFloat,
    ("e5m2fnuz", "channel"): _fnuz.Fp8e5m2FNUZWeightPerChannelFloat,
}
_FP8_ACT = {
    "e4m3": _ocp.Fp8e4m3OCPActPerTensorFloat,
    "e5m2": _ocp.Fp8e5m2OCPActPerTensorFloat,
    "e4m3fnuz": _fnuz.Fp8e4m3FNUZActPerTensorFloat,
    "e5m2fnuz": _fnuz.Fp8e5m2FNUZActPerTensorFloat,
}
_MX_DEFAULT = {"mxfp8": "e4m3", "mxfp6": "e2m3", "mxfp4": "e2m1"}
_MX_ALLOWED = {"mxfp8": ("e4m3", "e5m2"), "mxfp6": ("e2m3", "e3m2"), "mxfp4": ("e2m1",)}


def _bits(t: torch.Tensor) -> np.ndarray:
    """Raw bits of a float32/bf16/fp16 tensor as uint32/uint16."""
    t = t.detach().contiguous()
    if t.dtype == torch.float32:
        return t.view(torch.int32).numpy().view(np.uint32).copy()
    return t.view(torch.int16).numpy().view(np.uint16).copy()


def _encode_float(y: np.ndarray, element: str) -> np.ndarray:
    """Code of each exactly-representable value y (float64) in the element format."""
    ebits, mbits, width, mdt, fnuz = _ELEMENTS[element]
    nan = np.isnan(y)
    y0 = np.where(nan, 0.0, y)
    enc = y0.astype(np.float32).astype(mdt)
    back = enc.astype(np.float64)
    if not np.array_equal(back, y0):  # brevitas' y is on the element grid: must round-trip
        bad = np.flatnonzero(back != y0)[:5]
        raise AssertionError(f"value not exact in {element}: {y0.flat[bad]}")
    codes = enc.view(np.uint8).astype(np.uint8)
    if fnuz:
        codes = np.where(codes == 0x80, 0x00, codes)  # FNUZ has no -0: -0.0 -> 0x00
        nan_code = np.full(y.shape, 0x80, np.uint8)
    elif width == 8:
        sign = np.signbit(y).astype(np.uint8) << 7
        nan_code = (np.uint8(0x7F) | sign).astype(np.uint8)  # S.1111.111 / S.11111.11
    else:
        nan_code = np.zeros(y.shape, np.uint8)  # FP6/FP4 have no NaN: code 0, see nan_mask
    return np.where(nan, nan_code, codes).astype(np.uint8)


def _build(recipe, element, scaling, role, tdt, block_size, k_in, n_out):
    """Return (module, proxy, tensor_quant, description)."""
    if recipe == "fp8":
        if role == "act":
            if scaling != "tensor":
                raise ValueError("role='act' supports scaling='tensor' only")
            q = _FP8_ACT[element]
            m = QuantIdentity(act_quant=q, return_quant_tensor=True).to(tdt)
            m.train()  # first training-mode forward uses this batch's absmax
            return m, m.act_quant, m.act_quant.fused_activation_quant_proxy.tensor_quant, q.__name__
        q = _FP8_WEIGHT[(element, scaling)]
        desc = q.__name__
    else:
        if scaling != "block":
            raise ValueError(f"{recipe}: scaling must be 'block'")
        if recipe == "mxint8":
            q = _mx.MXInt8Act if role == "act" else _mx.MXInt8Weight
            lets = {}
        else:
            eb, mb, width, _, _ = _ELEMENTS[element]
            q = _mx.MXFloat8e4m3Act if role == "act" else _mx.MXFloat8e4m3Weight
            lets = {} if element == "e4m3" else dict(
                bit_width=width, exponent_bit_width=eb, mantissa_bit_width=mb)
        if block_size != 32:
            lets["group_size"] = block_size
        if role == "act":
            lets["group_dim"] = -1
        desc = q.__name__ + (f".let({lets})" if lets else "")
        if lets:
            q = q.let(**lets)
        if role == "act":
            m = QuantIdentity(act_quant=q, return_quant_tensor=True).to(tdt)
            m.eval()
            return m, m.act_quant, m.act_quant.fused_activation_quant_proxy.tensor_quant, desc
    m = QuantLinear(k_in, n_out, bias=False, weight_quant=q, dtype=tdt)
    m.eval()
    return m, m.weight_quant, m.weight_quant.tensor_quant, desc


def peer(recipe: str, x: np.ndarray, dtype: str, axis: int = -1, **options) -> dict:
    recipe = recipe.lower()
    if recipe not in ("fp8", "mxfp8", "mxfp6", "mxfp4", "mxint8"):
        raise ValueError(f"unknown recipe {recipe!r}")
    if dtype not in _TORCH_DTYPES:
        raise ValueError(f"dtype must be one of {list(_TORCH_DTYPES)}")
    tdt = _TORCH_DTYPES[dtype]
    role = options.get("role", "weight")
    block_size = int(options.get("block_size", 32))
    if recipe == "fp8":
        element = options.get("element", "e4m3")
        scaling = options.get("scaling", "tensor")
        if element not in ("e4m3", "e5m2", "e4m3fnuz", "e5m2fnuz"):
            raise ValueError(f"fp8 element {element!r} not supported")
        if scaling not in ("tensor", "channel"):
            raise ValueError("fp8 scaling must be 'tensor' or 'channel'")
    elif recipe == "mxint8":
        element, scaling = "int8", options.get("scaling", "block")
    else:
        element = options.get("element", _MX_DEFAULT[recipe])
        scaling = options.get("scaling", "block")
        if element not in _MX_ALLOWED[recipe]:
            raise ValueError(f"{recipe} element must be one of {_MX_ALLOWED[recipe]}")

    x = np.asarray(x, dtype=np.float32)
    shape = x.shape
    xt = torch.from_numpy(x.copy()).to(tdt)
    if not torch.equal(xt.float(), torch.from_numpy(x)) and not np.isnan(x).any():
        raise ValueError(f"x is not exact in {dtype}")
    nd = max(x.ndim, 1)
    ax = axis % nd if x.ndim else 0
    xt1 = xt.reshape(shape if x.ndim else (1,))
    # Lay x out as the 2-D weight [rows, K] of a QuantLinear:
    #   block  : blocks run along K (brevitas' weight group_dim = 1 = in_features)
    #   channel: one scale per row (output channel, dim 0)
    if recipe == "fp8" and scaling == "channel":
        moved = torch.movedim(xt1, ax, 0)
        w2 = moved.reshape(moved.shape[0], -1)
    else:
        moved = torch.movedim(xt1, ax, -1)
        w2 = moved.reshape(-1, moved.shape[-1])
    rows, k = w2.shape
    m, proxy, tq, desc = _build(recipe, element, scaling, role, tdt, block_size, k, rows)

    cap = {}
    if recipe == "mxint8":
        hook = tq.int_quant.tensor_clamp_impl.register_forward_hook(
            lambda mod, i, o: cap.__setitem__("y", o.detach().clone()))
    else:
        hook = tq.float_clamp_impl.register_forward_hook(
            lambda mod, i, o: cap.__setitem__("y", o[0].detach().clone()))
    try:
        with torch.no_grad():
            if role == "act":
                qt = m(w2.clone())
            else:
                m.weight.copy_(w2)
                qt = proxy(m.weight)
    finally:
        hook.remove()

    is_mx = recipe != "fp8"
    deq = qt.value.detach()  # dequantized, shape [rows, k] (groupwise: expanded, padding cut)
    y = cap["y"]
    if is_mx:
        scale_t = qt.scale_.detach()  # [rows, nblocks, 1]  (weight) / [rows, nblocks, 1] (act)
        nb = scale_t.shape[-2]
        scale_t = scale_t.reshape(rows, nb)
        y = y.reshape(rows, -1)[:, :k]  # drop zero padding of the last block
    else:
        scale_t = qt.scale.detach()
        nb = None
        y = y.reshape(rows, k)

    def unlay(a, last_len):
        """Inverse of the 2-D layout, for arrays [rows, last_len]."""
        if recipe == "fp8" and scaling == "channel":
            mshape = (moved.shape[0],) + tuple(moved.shape[1:])
            return np.moveaxis(a.reshape(mshape), 0, ax).reshape(shape)
        mshape = tuple(moved.shape[:-1]) + (last_len,)
        out = np.moveaxis(a.reshape(mshape), -1, ax)
        return out if x.ndim else out.reshape(())

    y64 = y.double().numpy()
    nan_mask = np.isnan(y64)
    if recipe == "mxint8":
        yi = np.where(nan_mask, 0, y64).astype(np.int64)
        assert np.array_equal(yi, np.where(nan_mask, 0, y64)), "mxint8 code not integral"
        data = (yi & 0xFF).astype(np.uint8)
    else:
        data = _encode_float(y64, element)
    data = unlay(data, k)
    y_out = unlay(y64, k)
    deq_bits = unlay(_bits(deq.reshape(rows, k)), k)
    nan_out = unlay(nan_mask, k)

    sc32 = scale_t.float()
    if is_mx:
        sbits = _bits(sc32.reshape(rows, nb))
        sv = sc32.reshape(rows, nb).double().numpy()
        with np.errstate(divide="ignore", invalid="ignore"):
            mant, ex = np.frexp(sv)  # sv = mant * 2**ex, mant in [0.5, 1)
        pow2 = (mant == 0.5)
        e = ex - 1
        if recipe == "mxint8":
            e = e + 6  # OCP MXINT8: element value = code * 2**-6
        code = np.clip(e + 127, 0, 254)
        code = np.where(np.isnan(sv) | np.isinf(sv), 0xFF, code)  # E8M0 has no inf: NaN code
        code = np.where(sv == 0, 0, code)
        not_e8m0 = (~pow2 & ~np.isnan(sv)) | np.isinf(sv)
        scale_out = unlay(code.astype(np.uint8), nb)
        scale_fp32 = unlay(sbits, nb)
        not_e8m0 = unlay(not_e8m0, nb)
    else:
        if scaling == "channel":
            scale_out = _bits(sc32.reshape(-1))
        else:
            scale_out = _bits(sc32.reshape(())).reshape(())
        scale_fp32 = scale_out.copy()
        not_e8m0 = None

    res = {
        "data": data,
        "scale": scale_out,
        "tensor_scale": None,
        "dequant": deq_bits,
        "dequant_dtype": dtype,
        "scale_fp32": scale_fp32,
        "nan_mask": nan_out,
        "y": y_out,
        "quantizer": desc,
        "brevitas_version": brevitas.__version__,
    }
    if is_mx:
        res["scale_not_e8m0"] = not_e8m0
    return res


if __name__ == "__main__":
    rng = np.random.default_rng(0)
    xx = rng.standard_normal((2, 64)).astype(np.float32)
    for r in ("fp8", "mxfp8", "mxfp6", "mxfp4", "mxint8"):
        out = peer(r, xx, "fp32")
        print(r, out["quantizer"], out["data"][0, :6], out["scale"].ravel()[:4])
