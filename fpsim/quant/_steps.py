"""Steps of libraries' recipes that fpsim's own (the specification rows)
do not take, each chosen by a field of :class:`~fpsim.quant.Recipe`
(``fpsim/quant/_recipes.py`` lists the fields and the rows that set them):
the dequantization as a library computes it, and the element code a
library's bit-level cast gives a NaN in a format without NaN."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import array
from ..context import Context
from ..formats import E8M0, FP32, Format
from ..formats import format as _lookup
from ._elements import IntFormat, decode

__all__ = ["dequantize_steps", "steps_context", "nan_bits_codes", "output_format",
           "library_cast", "CASTS"]


def steps_context(recipe: Any, ctx: Context | None = None) -> Context:
    """The context a library's steps run under: ``ctx`` (default: round to
    nearest even, no flush), with the recipe's NaN rules (``nan``: the CPU's,
    e.g. ``"x86"``, whose invalid operations give the negative default
    NaN) where it names them."""
    base = ctx if ctx is not None else Context()
    if getattr(recipe, "nan", None) is None:
        return base
    return base.copy(nan=recipe.nan)


def output_format(q: Any, dtype: Any) -> Format:
    """The format ``dequantize()`` writes: ``dtype`` when given, else the
    recipe's ``output`` (``"input"``: the quantized tensor's format)."""
    if dtype is not None:
        return _lookup(dtype)
    out = q.recipe.output
    if out is None or out == "input":
        return q.input_format if q.input_format is not None else FP32
    return _lookup(out)


def dequantize_steps(q: Any, dtype: Any) -> np.ndarray:
    """``q.dequantize(dtype)`` of a library's recipe: each element times
    (``dequant="multiply"``) or divided by (``"divide"``) its scale, the
    result rounded to ``dequant_format`` (default: the output format), then
    converted to the output format; NVFP4 with a tensor scale multiplies by
    the block scale times the tensor scale, that product rounded in FP32
    first.  Values of the output format's dtype."""
    r = q.recipe
    out = output_format(q, dtype)
    work = out if r.dequant_format is None else _lookup(r.dequant_format)
    ctx = steps_context(r)
    elem = q.element_format
    codes = np.asarray(q.data)
    if not isinstance(elem, IntFormat) and codes.dtype.kind not in "iu":
        codes = codes.view(array.code_dtype(elem))
    values = decode(codes, elem)
    if q.negative_zeros is not None:       # -0 held as a float value (negative_zero_held)
        values = np.where(q.negative_zeros, -0.0, values)
    if r.dequant_zero == "positive":     # the library's value table holds +0 for -0
        values = np.where(values == 0, 0.0, values)
    scale_codes = np.asarray(q.scale)
    if q.scale_format == E8M0:
        k = scale_codes.view(np.uint8).astype(np.int64)
        scale = np.where(k == 255, np.nan, np.ldexp(1.0, k - 127))
    else:
        scale = array.decode(scale_codes.view(array.code_dtype(q.scale_format)), q.scale_format)
    if q.tensor_scale is not None and r.tensor_scale in ("decode", "reciprocal_encode"):
        t = array.encode(np.asarray(q.tensor_scale, np.float64), FP32, ctx)
        s32 = array.encode(scale, FP32, ctx)
        t = np.broadcast_to(t, s32.shape)
        # decode: S_b × t; compressed-tensors' encode scale gs: S_b / gs, in FP32
        both = array.mul(t, s32, ctx, fmt=FP32) if r.tensor_scale == "decode" else \
            array.div(s32, t, ctx, fmt=FP32)
        scale = array.decode(both, FP32)
    wide = q._groups.expand(scale)
    ev = array.encode(values, work, ctx)
    sv = array.encode(np.ascontiguousarray(wide), work, ctx)
    if r.dequant == "divide":
        res = array.div(ev, sv, ctx, fmt=work)
    elif r.dequant == "multiply_reciprocal":     # q × RN(1 / scale) (ModelOpt's fake path)
        one = array.encode(np.ones(sv.shape), work, ctx)
        res = array.mul(ev, array.div(one, sv, ctx, fmt=work), ctx, fmt=work)
    else:
        res = array.mul(ev, sv, ctx, fmt=work)
    if work != out:
        res = array.convert(res, work, out, ctx)
    if r.float_elements and q.nan_elements is not None and q.nan_elements.any():
        # the library holds its quantized values as floats: a NaN stays NaN
        res = np.where(q.nan_elements, array.encode(np.array(np.nan), out, ctx), res).astype(
            res.dtype)
    dt = array.value_dtype(out)
    return res.view(dt) if dt is not None else res


def nan_bits_codes(nan32: np.ndarray, elem: Format) -> np.ndarray:
    """The code a bit-level FP32 -> FP6/FP4 cast (torchao's
    ``_f32_to_floatx_unpacked``, ``prototype/custom_fp_utils.py`` 27-142)
    gives a NaN: neither its saturation nor its subnormal branch takes a
    NaN, so its normal branch reads the NaN's bits as a number: ``(|bits| +
    ((bias - 127) << 23) + 2**(22 - m) - 1 + odd) >> (23 - m)``, kept to 8
    bits, the sign ORed in (``0x7FC00000`` gives E2M1 ``0x3``, 1.5).
    ``nan32``: the FP32 bit patterns (uint32) of the NaNs."""
    b = np.asarray(nan32, np.uint32).astype(np.int64)
    sign = (b >> 31) & 1
    mag = b & 0x7FFFFFFF
    m = elem.mantissa_bits
    bias = elem.bias
    odd = (mag >> (23 - m)) & 1
    x = (mag + ((bias - 127) << 23) + ((1 << (22 - m)) - 1) + odd) >> (23 - m)
    x = x & 0xFF
    return (x | (sign << (elem.exponent_bits + m))).astype(np.uint64)


_E2M1_BOUNDS = np.array([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0])

#: Element casts of libraries that are not IEEE rounding into the format
#: (``Recipe.element_cast``), E2M1 only, each by its source:
CASTS = {
    "modelopt_nvfp4": "ModelOpt 0.47.0 qtensor/nvfp4_tensor.py _cast_fp4 (230-251): "
                      "round to nearest even at every midpoint, saturating; a NaN is code 7 "
                      "(6.0); an exact -0 is +0 (its sign is read as x < 0)",
    "ct_fp4": "compressed-tensors 0.20.1 quantization/utils/fp4_utils.py cast_to_fp4 (77-97) "
              "and compressors/nvfp4/helpers.py pack_fp4_to_uint8 (367-415): round to nearest "
              "even, saturating; an exact -0 is +0 (|x| × sign(x)); a NaN is index 0 with "
              "its sign",
    "modelopt_mxfp4": "ModelOpt 0.47.0 qtensor/mxfp4_tensor.py cast_fp4 (46-53): every "
                      "midpoint rounds toward zero (the count of bounds strictly below |x|); "
                      "an exact zero of either sign and a NaN are code 0x8 (-0: torch.sign "
                      "gives 0, read as negative)",
}


def library_cast(values: np.ndarray, elem: Format, kind: str) -> np.ndarray:
    """E2M1 codes (uint8) of float64 ``values`` by the library cast
    ``kind`` (:data:`CASTS`)."""
    if elem.name != "e2m1" or kind not in CASTS:
        raise ValueError(f"element_cast={kind!r} is an E2M1 cast of {sorted(CASTS)}; the "
                         f"element is {elem.name}")
    v = np.asarray(values, np.float64)
    a = np.abs(v)
    nan = np.isnan(v)
    a_ = np.where(nan, 0.0, a)
    if kind == "ct_fp4":
        ordinal = np.searchsorted(_E2M1_BOUNDS, a_, side="left")
        ordinal = ordinal + np.isin(a_, (0.75, 1.75, 3.5))
        ordinal = np.where(nan, 0, ordinal)
        sign = (v < 0) | (nan & np.signbit(v))
        # a value that rounds to zero keeps its sign (0 × -1 = -0); an exact -0 does not
        sign = sign & ~((v == 0) & ~nan)
    elif kind == "modelopt_nvfp4":
        ordinal = np.searchsorted(_E2M1_BOUNDS, a_, side="left")       # first bound >= |x|
        ordinal = ordinal + np.isin(a_, (0.75, 1.75, 3.5))
        ordinal = np.where(nan, 7, ordinal)
        sign = (v < 0) & ~nan
    else:
        ordinal = (a_[..., None] > _E2M1_BOUNDS).sum(axis=-1)
        sign = ~(v > 0)                                               # 0, -0 and NaN: 0x8
    return ((sign.astype(np.uint8) << 3) | ordinal.astype(np.uint8)).astype(np.uint8)
