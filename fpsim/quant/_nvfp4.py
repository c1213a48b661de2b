"""NVFP4: E2M1 elements in blocks of 16 consecutive elements along one
axis, each block with an E4M3 scale, and one FP32 scale for the tensor
(two-level scaling, as NVIDIA describes its Blackwell FP4 format).

The steps, every one in FP32 unless named (round to nearest even under the
context's settings, flags to the context):

1. ``amax_t``: the tensor's largest magnitude (exact), converted to FP32,
   floored at ``eps`` when given;
2. ``s_enc = (448 × 6) / amax_t``: the tensor's encode scale, which maps the
   tensor's amax to the largest value of an E4M3 scale times the largest
   E2M1 element (``tensor_scale`` of the result); as Transformer Engine's
   ``compute_global_encode_scaling_factor_FP4``, an ``s_enc`` that
   overflows to infinity (a tiny amax) is FP32's largest finite value, and
   ``s_enc`` is 1 where ``amax_t`` is zero (no division: an all-zero
   tensor) or infinite (``s_enc`` would be 0);
3. per block: ``amax_b`` (exact, in FP32), ``d = amax_b / 6``, then the
   block scale ``S_b = E4M3(d × s_enc)`` (rounded to nearest even,
   saturating: ``scale`` of the result);
4. the block's multiplier ``s_enc / S_b``, FP32's largest finite value
   where it overflows (as Transformer Engine clamps it); where ``S_b`` is
   zero (a zero block, or one too small for E4M3 beside the tensor's amax)
   the multiplier is zero, without a division (no flag): those elements
   become zeros;
5. each element: ``E2M1(x × multiplier)`` with ``rounding`` (stochastic
   included) and ``saturate``.

``dequantize()`` gives ``element × S_b / s_enc``, exactly, rounded once to
float64.  ``tensor_amax`` of the result is ``amax_t`` (FP32, after the
floor), from which a GEMM's per-tensor factor is computed
(:func:`fpsim.ops.matmul` with a block-scaled unit).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from .. import array
from ..context import Context, check_saturate
from ..formats import E2M1, E4M3, FP32
from ..formats import format as _lookup
from ..ops.operands import Operand
from ._elements import ElementFormat
from ._quantize import (
    Quantized,
    Recipe,
    _axis_and_block,
    _deliver,
    _floored,
    _Groups,
    checked_cast,
    mode_name,
    scale_and_cast,
)
from ._ratio import clamp_codes, tensor_nan_amax

E4M3_TIMES_E2M1_MAX = float(E4M3.max * E2M1.max)  # 2688


def quantize_nvfp4(source: Operand, elem: ElementFormat, ctx: Context, *, scale_format: Any,
                   axis: Any, block_size: Any, rounding: Any, saturate: bool, rng: Any,
                   eps: Any, scale_rule: str, recipe: Recipe | None = None) -> Quantized:
    if elem != E2M1:
        raise ValueError(f"quantize(): NVFP4 elements are E2M1; element_format={elem.name} "
                         "(use 'mx' or another scaling for other formats)")
    if scale_format is not None and _lookup(scale_format) != FP32:
        raise ValueError(f"quantize(): NVFP4's scale arithmetic is FP32 (block scales E4M3); "
                         f"scale_format={scale_format!r}")
    if scale_rule != "amax/max":
        raise ValueError("quantize(): scale_rule= does not apply to NVFP4 (its steps are fixed)")
    axis, block_size = _axis_and_block(source.codes.shape, axis, block_size, "NVFP4", 16)
    groups = _Groups("mx", source.codes.shape, axis=axis, size=block_size)
    if recipe is not None and recipe.tensor_scale != "encode":
        # a library's form of the tensor scale (Transformer Engine's encode
        # scale is the path below)
        return _library_nvfp4(source, dataclasses.replace(recipe, axis=axis,
                                                          block_size=block_size),
                              groups, ctx, rng)
    recipe = Recipe("nvfp4", FP32, axis=axis, eps=eps, rounding=mode_name(rounding),
                    saturate=check_saturate(saturate), block_size=block_size)

    values = array.decode(source.codes, source.fmt)
    with np.errstate(invalid="ignore"):
        amax_b = groups.reduce(np.abs(values))
        amax_t = np.array(amax_b.max() if amax_b.size else 0.0)  # NaN wins, as in a block
    floor = None if eps is None else array.encode(np.array(float(eps)), FP32, ctx)
    amax_t32 = _floored(array.encode(amax_t, FP32, ctx), floor, FP32, ctx)
    s_enc = _encode_scale(amax_t32, ctx)
    six = np.broadcast_to(array.encode(np.array(6.0), FP32, ctx), amax_b.shape)
    amax_b32 = array.encode(amax_b, FP32, ctx)
    d = array.div(amax_b32, six, ctx, fmt=FP32)
    block_scale = array.convert(array.mul(d, np.broadcast_to(s_enc, d.shape), ctx, fmt=FP32),
                                FP32, E4M3, ctx, rounding="rne", saturate=True)
    s_b = array.convert(block_scale, E4M3, FP32, ctx)
    zero = array.decode(s_b, FP32) == 0
    divisor = np.where(zero, _FP32_ONE, s_b).astype(np.uint32)  # no division by a zero S_b
    multiplier = _finite(array.div(np.broadcast_to(s_enc, s_b.shape), divisor, ctx, fmt=FP32))
    multiplier = np.where(zero, np.uint32(0), multiplier).astype(np.uint32)
    data, saturated = scale_and_cast(source, E2M1, FP32, groups.expand(multiplier), ctx,
                                     rounding, saturate, rng)
    return Quantized(_deliver(data, E2M1), _deliver(block_scale, E4M3),
                     _deliver(amax_b32, FP32), E2M1, E4M3, recipe,
                     saturated, groups, tensor_scale=_deliver(s_enc, FP32),
                     tensor_amax=_deliver(amax_t32, FP32))


_FP32_MAX = np.uint32(0x7F7FFFFF)
_FP32_ONE = np.uint32(0x3F800000)


def _finite(codes: np.ndarray) -> np.ndarray:
    """FP32 codes with +infinity replaced by FP32's largest finite value
    (the multipliers and ``s_enc`` are positive or NaN)."""
    return np.where(codes == np.uint32(0x7F800000), _FP32_MAX, codes).astype(np.uint32)


def _encode_scale(amax_t32: np.ndarray, ctx: Context) -> np.ndarray:
    """``s_enc = 2688 / amax_t`` in FP32 (0-d codes), Transformer Engine's
    way: FP32's max where the quotient overflows, 1 where amax_t is zero
    (the division is not made, so no flag) or infinite."""
    amax = float(array.decode(amax_t32, FP32))
    if amax == 0 or amax == np.inf:
        return np.asarray(_FP32_ONE)
    top = array.encode(np.array(E4M3_TIMES_E2M1_MAX), FP32, ctx)
    return np.asarray(_finite(array.div(top, amax_t32, ctx, fmt=FP32)))


def _library_nvfp4(source: Operand, recipe: Recipe, groups: _Groups, ctx: Context,
                   rng: Any) -> Quantized:
    """NVFP4 by a library's steps (fpsim/quant/_recipes.py), every one in FP32
    round to nearest even: the block scale ``d = amax_b / 6``, divided by the
    tensor's decode scale ``t = amax_t / 2688`` (``tensor_scale="decode"``)
    or not (``None``: one level), clamped to ``[block_scale_min, 448]``
    (a NaN stays) and cast to E4M3; the elements multiplied by the
    reciprocal the library forms (``multiplier="reciprocal"``: ``1 / S_b``,
    or ``(1 / t) / S_b``), clamped to [-6, 6] (``clamp``) and cast to E2M1.
    ``nan_element_bits`` (a bug flag): a NaN element gets the code of its
    FP32 bits (fpsim/quant/_steps.py), the NaN the x86 rules carry (a NaN
    block's reciprocal: the E4M3 NaN widened to FP32, ``0x7FF00000``; ``-0
    × inf``: the default NaN ``0xFFC00000``)."""
    if recipe.multiplier not in ("reciprocal", "divide_product", "divide_quotient") or \
            recipe.tensor_scale not in (None, "decode", "reciprocal_encode"):
        raise ValueError(f"NVFP4 recipe {recipe.library}/{recipe.name}: multiplier="
                         f"{recipe.multiplier!r}, tensor_scale={recipe.tensor_scale!r} is not a "
                         "combination fpsim computes")
    values = array.decode(source.codes, source.fmt)
    with np.errstate(invalid="ignore"):
        amax_b = groups.reduce(np.abs(values))
        amax_t = np.array(np.abs(values).max() if values.size else 0.0)
    f32 = {"fmt": FP32}
    amax_b32 = array.encode(amax_b, FP32, ctx)
    six = np.broadcast_to(array.encode(np.array(6.0), FP32, ctx), amax_b.shape)
    d = array.div(amax_b32, six, ctx, **f32)
    one = array.encode(np.array(1.0), FP32, ctx)
    t = None
    if recipe.tensor_scale == "reciprocal_encode":
        # compressed-tensors (generate_gparam, helpers.py 324-353), in the
        # input's format D: gs = D(D(1 / max(T, tiny_D)) × 2688), NaN or
        # infinite -> 1, then FP32; block scales E4M3(fp32(gs × D(amax_b / 6)))
        D = source.fmt
        tiny = array.encode(np.array(float(2.0 ** D.emin)), D, Context())
        T = array.encode(amax_t, D, ctx)
        T = _floored(T, tiny, D, ctx)
        one_d = array.encode(np.array(1.0), D, Context())
        r = array.div(one_d, T, ctx, fmt=D)
        gs = array.mul(r, array.encode(np.array(E4M3_TIMES_E2M1_MAX), D, Context()), ctx, fmt=D)
        gv = array.decode(gs, D)
        gs32 = array.encode(np.where(np.isfinite(gv), gv, 1.0), FP32, ctx)
        t = np.asarray(gs32)
        six_d = np.broadcast_to(array.encode(np.array(6.0), D, Context()), amax_b.shape)
        l_d = array.div(array.encode(amax_b, D, ctx), six_d, ctx, fmt=D)
        d = array.mul(np.broadcast_to(gs32, amax_b.shape), array.convert(l_d, D, FP32, ctx), ctx,
                      **f32)
    elif recipe.tensor_scale == "decode":
        top = array.encode(np.array(E4M3_TIMES_E2M1_MAX), FP32, ctx)
        t = array.div(tensor_nan_amax(recipe, True, amax_t, source.fmt, FP32, ctx), top, ctx,
                      **f32)
        if recipe.multiplier == "divide_product":
            # ModelOpt (nvfp4_tensor.py 195-197): amax_b / RN32(6 t)
            six_t = array.mul(np.broadcast_to(array.encode(np.array(6.0), FP32, ctx), t.shape),
                              t, ctx, **f32)
            d = array.div(amax_b32, np.broadcast_to(six_t, d.shape), ctx, **f32)
        else:
            d = array.div(d, np.broadcast_to(t, d.shape), ctx, **f32)
    if recipe.block_scale_zero is not None and recipe.block_scale_zero_at == "before":
        # a zero block scale becomes a value before its cast (ModelOpt)
        d = np.where(array.decode(d, FP32) == 0,
                     array.encode(np.array(recipe.block_scale_zero), FP32, ctx), d
                     ).astype(np.uint32)
    lo = recipe.block_scale_min
    dv = array.decode(d, FP32)
    with np.errstate(invalid="ignore"):
        clamped = np.where(dv > 448.0, 448.0, dv)
        if lo is not None:
            clamped = np.where(clamped < lo, lo, clamped)
    block_scale = array.convert(array.encode(clamped, FP32, ctx), FP32, E4M3, ctx,
                                rounding="rne", saturate=True)
    if recipe.block_scale_zero is not None and recipe.block_scale_zero_at == "after":
        # a zero E4M3 block scale becomes a value (compressed-tensors: 0.125)
        zc = array.encode(np.array(recipe.block_scale_zero), E4M3, Context())
        block_scale = np.where((block_scale & np.uint8(0x7F)) == 0, zc, block_scale
                               ).astype(block_scale.dtype)
    s_b = array.convert(block_scale, E4M3, FP32, ctx)
    if recipe.element_nan == "all_ones":
        # torch widens an E4M3 NaN bit by bit: sign | 0x7FF00000
        nan_b = (block_scale & np.uint8(0x7F)) == np.uint8(0x7F)
        s_b = np.where(nan_b, np.where(block_scale >= 0x80, np.uint32(0xFFF00000),
                                       np.uint32(0x7FF00000)), s_b).astype(np.uint32)
    xs = array.convert(source.codes, source.fmt, FP32, ctx)
    if recipe.multiplier == "divide_quotient":
        # x / RN32(S_b / gs) (compressed-tensors, forward.py _quantize 533-536)
        quo = array.div(s_b, np.broadcast_to(t, s_b.shape), ctx, **f32)
        scaled = array.div(xs, np.ascontiguousarray(groups.expand(quo)), ctx, **f32)
        return _nvfp4_result(source, recipe, groups, scaled, block_scale, amax_b32, amax_t, t,
                             ctx, rng)
    if recipe.multiplier == "divide_product":
        # x / RN32(S_b · t) (ModelOpt, nvfp4_tensor.py 326-328)
        prod = s_b if t is None else array.mul(s_b, np.broadcast_to(t, s_b.shape), ctx, **f32)
        scaled = array.div(xs, np.ascontiguousarray(groups.expand(prod)), ctx, **f32)
        return _nvfp4_result(source, recipe, groups, scaled, block_scale, amax_b32, amax_t, t,
                             ctx, rng)
    first = one if t is None else array.div(one, t, ctx, **f32)
    rcp = array.div(np.broadcast_to(first, s_b.shape), s_b, ctx, **f32)
    # scale_first: where both are NaN, the product carries the reciprocal's
    # NaN (torch's CPU kernel), as the x86 rule does for its first operand
    wide = np.ascontiguousarray(groups.expand(rcp))
    scaled = array.mul(wide, xs, ctx, **f32) if recipe.scale_first else \
        array.mul(xs, wide, ctx, **f32)
    return _nvfp4_result(source, recipe, groups, scaled, block_scale, amax_b32, amax_t, t, ctx,
                         rng)


def _nvfp4_result(source: Operand, recipe: Recipe, groups: _Groups, scaled: np.ndarray,
                  block_scale: np.ndarray, amax_b32: np.ndarray, amax_t: np.ndarray,
                  t: np.ndarray | None, ctx: Context, rng: Any) -> Quantized:
    """The E2M1 cast of a library's scaled values (FP32 codes) and the result."""
    if recipe.clamp:
        scaled = clamp_codes(scaled, FP32, 6.0)
    sv = array.decode(scaled, FP32)
    if recipe.element_cast is not None:
        from ._steps import library_cast

        data = library_cast(sv, E2M1, recipe.element_cast)
        with np.errstate(invalid="ignore"):
            saturated = np.abs(sv) > 6.0
        q = _nvfp4_quantized(source, recipe, groups, data, saturated, block_scale, amax_b32,
                             amax_t, t, ctx)
        if np.isnan(sv).any():          # the NaNs the cast wrote as codes
            q.nan_elements = np.isnan(sv)
        return q
    bad = np.isnan(sv)
    cast_in = np.where(bad, np.uint32(0), scaled).astype(np.uint32)
    data, saturated = checked_cast(cast_in, FP32, np.where(bad, 0.0, sv), E2M1, ctx,
                                   recipe.rounding, recipe.saturate, rng,
                                   "a NaN reached the cast into e2m1")
    if bad.any():
        if "nan_element_bits" in recipe.bugs:
            from ._steps import nan_bits_codes

            data = np.where(bad, nan_bits_codes(scaled, E2M1).astype(data.dtype), data)
    return _nvfp4_quantized(source, recipe, groups, data, saturated, block_scale, amax_b32,
                            amax_t, t, ctx)


def _nvfp4_quantized(source: Operand, recipe: Recipe, groups: _Groups, data: np.ndarray,
                     saturated: np.ndarray, block_scale: np.ndarray, amax_b32: np.ndarray,
                     amax_t: np.ndarray, t: np.ndarray | None, ctx: Context) -> Quantized:
    return Quantized(_deliver(data, E2M1), _deliver(block_scale, E4M3),
                     _deliver(amax_b32, FP32), E2M1, E4M3, recipe, saturated, groups,
                     tensor_scale=None if t is None else _deliver(t, FP32),
                     tensor_amax=None if t is None else _deliver(array.encode(amax_t, FP32, ctx),
                                                                 FP32),
                     input_format=source.fmt)
