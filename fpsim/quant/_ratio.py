"""Tensor, channel, tile and (for libraries whose block scale is a float)
block scaling: the ratio path of :func:`fpsim.quant.quantize`, with the step
variants libraries' recipes name (``fpsim/quant/_recipes.py``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import array
from ..context import Context
from ..formats import E8M0, Format
from ..modes import Flag
from ..ops.operands import Operand
from ._elements import ElementFormat, IntFormat
from ._elements import decode as decode_values
from ._quantize import Quantized, Recipe, _deliver, _floored, _Groups, checked_cast

__all__ = ["ratio_quantize", "tensor_nan_amax", "clamp_codes", "power_of_two_below"]


def ratio_quantize(source: Operand, elem: ElementFormat, recipe: Recipe, groups: _Groups,
                   ctx: Context, rng: Any) -> Quantized:
    """Tensor, channel and tile scaling: the steps of the module's
    docstring, with the variants a recipe names (``fpsim/quant/_recipes.py``):
    the format the ratio is computed in, the floor on amax, the zero
    group divided anyway, a power-of-two scale, division or multiplication
    by the scale, a clamp before the cast."""
    scale_rule, eps = recipe.scale_rule, recipe.eps
    sfmt = source.fmt if recipe.scale_format == "input" else recipe.scale_format
    rf = _ratio_format(recipe, source.fmt)
    values = array.decode(source.codes, source.fmt)
    with np.errstate(invalid="ignore"):
        group_amax = groups.reduce(np.abs(values))  # exact: one of the values; NaN wins
    amax = tensor_nan_amax(recipe, groups.kind == "tensor", group_amax, source.fmt, rf, ctx)
    floor = None if eps is None else array.encode(np.array(float(eps)), rf, ctx)
    top = np.broadcast_to(array.encode(np.array(float(elem.max)), rf, ctx), amax.shape)
    one = np.broadcast_to(array.encode(np.array(1.0), rf, Context()), amax.shape)
    divide_zero = recipe.zero_scale != "one"
    stored = None
    if scale_rule == "ct_mx":
        # compressed-tensors (mxfp_utils.py 73-152, helpers.py 107-128): amax in D
        # rounded up a binade when its significand reaches 2 - 2**-(m + 1), the
        # exponent minus emax biased and clamped to [0, 255]; s = D(2**(code -
        # 127)), 0 -> 1; the stored code 127 + floor(log2 s)
        av = array.decode(amax, rf)
        m = recipe.even_bits if recipe.even_bits is not None else elem.mantissa_bits
        with np.errstate(all="ignore"):
            fr, ex = np.frexp(np.where(np.isfinite(av) & (av > 0), av, 1.0))
            e2 = ex.astype(np.int64) - 1
            up = 2.0 * fr >= 2.0 - 2.0 ** -(m + 1)
            p2 = np.ldexp(1.0, e2 + up)
            sub = av < 2.0 ** rf.emin
            p2 = np.where(sub, np.where(av >= 2.0 ** rf.emin * (1 - 2.0 ** -(m + 1)),
                                        2.0 ** rf.emin, 0.0), p2)
            p2 = np.where(np.isnan(av) | np.isinf(av) | (p2 > float(rf.max)), np.inf, p2)
            lg = np.where(p2 > 0, np.floor(np.log2(np.where(p2 > 0, p2, 1.0))), -np.inf)
            code = np.clip(127 + lg - elem.emax, 0, 255)
            sv = np.where(code == 255, np.inf, np.ldexp(1.0, code.astype(np.int64) - 127))
        scale = array.encode(sv, rf, ctx)
        dead_s = array.decode(scale, rf) == 0
        scale = np.where(dead_s, array.encode(np.array(1.0), rf, Context()), scale
                         ).astype(scale.dtype)
        # an infinite scale (code 255: a NaN or infinity in the block, or an amax
        # rounding up past D's range) is stored as 0x7F under inf_scale_stored_one
        # (the bug), as OCP's NaN scale 0xFF without it
        lost = 127 if "inf_scale_stored_one" in recipe.bugs else 255
        stored = np.where(code == 255, lost, np.where(dead_s, 127, code)).astype(np.uint8)
    elif scale_rule == "pow2":
        # 2**floor(RN(log2 amax)) / 2**emax, amax and the power floored at eps
        # (brevitas' MX scale, every step in the ratio's format)
        from ._log2 import floor_log2_rounded

        amax = _floored(amax, floor, rf, ctx)
        av = array.decode(amax, rf)
        k, special = floor_log2_rounded(av, rf if "log2_rounded" in recipe.bugs else None)
        with np.errstate(over="ignore"):
            power = np.where(special, np.where(av > 0, av, 0.0 * av),
                             np.ldexp(1.0, np.clip(k, -1100, 1100)))
        power = _floored(array.encode(power, rf, ctx), floor, rf, ctx)
        emax = elem.emax if recipe.scale_emax is None else recipe.scale_emax
        t = np.broadcast_to(array.encode(np.array(2.0 ** emax), rf, ctx), amax.shape)
        scale = array.div(power, t, ctx, fmt=rf)
        if recipe.scale_unit:
            # a scale over integer codes, in the element's units (MXINT8: × 2**6), exact
            scale = array.encode(np.ldexp(array.decode(scale, rf), recipe.scale_unit), rf,
                                 Context())
    elif scale_rule == "amax/max":
        if recipe.eps_on == "amax":
            amax = _floored(amax, floor, rf, ctx)
            floor = None
        scale = _floored(array.div(amax, top, ctx, fmt=rf), floor, rf, ctx)
        # A group of zeros (amax zero, no eps): scale 1, no division.
        dead = (array.decode(amax, rf) == 0) & (array.decode(scale, rf) == 0) & ~divide_zero
        scale = np.where(dead, one, scale).astype(scale.dtype)
    else:
        amax = _floored(amax, floor, rf, ctx)
        if recipe.amax_to_one is not None:
            # an amax at most this is taken as 1 (ModelOpt's _fp8_eager: 2**-24)
            small = array.decode(amax, rf) <= recipe.amax_to_one
            amax = np.where(small, one, amax).astype(amax.dtype)
        dead = (array.decode(amax, rf) == 0) & ~divide_zero
        divisor = np.where(dead, one, amax).astype(amax.dtype)
        if recipe.ratio_op == "reciprocal_times":
            # max / amax as torch's scalar / tensor computes it: RN(1 / amax) × max
            scale = array.mul(array.div(one, divisor, ctx, fmt=rf), top, ctx, fmt=rf)
        else:
            scale = array.div(top, divisor, ctx, fmt=rf)
        scale = np.where(dead, one, scale).astype(scale.dtype)
    if recipe.zero_scale == "eps":
        # a zero scale becomes the ratio format's machine epsilon (compressed-tensors)
        eps_r = array.encode(np.array(2.0 ** (1 - rf.precision)), rf, Context())
        zero_s = array.decode(scale, rf) == 0
        scale = np.where(zero_s, eps_r, scale).astype(scale.dtype)
    if rf != sfmt:
        scale = array.convert(scale, rf, sfmt, ctx)
        amax = array.convert(amax, rf, sfmt, ctx)
    if recipe.scale_pow2 == "floor_log2":
        scale = power_of_two_below(scale, sfmt, ctx, "log2_rounded" in recipe.bugs)
    how = recipe.apply or ("reciprocal" if scale_rule == "amax/max" else "multiply")
    xs = array.convert(source.codes, source.fmt, sfmt, ctx)
    wide = groups.expand(scale)
    if how == "reciprocal":
        one_s = np.broadcast_to(array.encode(np.array(1.0), sfmt, Context()), scale.shape)
        scaled = array.mul(xs, groups.expand(array.div(one_s, scale, ctx, fmt=sfmt)), ctx,
                           fmt=sfmt)
    elif how == "divide":
        scaled = array.div(xs, wide, ctx, fmt=sfmt)
    elif recipe.scale_first:   # where both are NaN the product carries the scale's
        scaled = array.mul(np.ascontiguousarray(wide), xs, ctx, fmt=sfmt)
    else:
        scaled = array.mul(xs, wide, ctx, fmt=sfmt)
    if recipe.add_zero:       # x / s + 0.0: a -0 quotient becomes +0 (a zero point)
        sv = array.decode(scaled, sfmt)
        pz = array.encode(np.array(0.0), sfmt, Context())
        scaled = np.where((sv == 0), pz, scaled).astype(scaled.dtype)
    if recipe.inf_scaled == "nan":
        # the library's cast reads an infinite scaled value as inf / inf: NaN
        sv = array.decode(scaled, sfmt)
        if np.isinf(sv).any():
            dn = array.encode(np.array(-np.nan), sfmt, Context())
            scaled = np.where(np.isinf(sv), dn, scaled).astype(scaled.dtype)
    if recipe.clamp:
        scaled = clamp_codes(scaled, sfmt, float(elem.max))
    sv = array.decode(scaled, sfmt)
    nan = np.isnan(sv)
    nan_elements = nan if nan.any() else None
    has_nan = isinstance(elem, Format) and elem.has_nan
    if recipe.element_cast is not None:      # a library's own cast (fpsim/quant/_steps.py)
        from ._steps import library_cast

        data = library_cast(sv, elem, recipe.element_cast)
        with np.errstate(invalid="ignore"):
            saturated = np.abs(sv) > float(elem.max)
    else:
        if recipe.element_nan is not None and not has_nan and nan_elements is not None:
            # a NaN the format cannot hold: code 0 of the NaN's sign (the libraries'
            # casts: index 0 and the sign; brevitas holds it as a float NaN)
            zero = array.encode(np.where(np.signbit(sv), -0.0, 0.0), sfmt, Context())
            scaled = np.where(nan, zero, scaled).astype(scaled.dtype)
            ctx.raise_flags(Flag.INVALID)
        data, saturated = checked_cast(scaled, sfmt, array.decode(scaled, sfmt), elem, ctx,
                                       recipe.rounding, recipe.saturate, rng,
                                       f"a scaled value is NaN (a NaN input, or 0 × inf from an "
                                       f"infinite multiplier), which {elem.name} cannot "
                                       "represent; declare eps= or a wider scale_format=")
        if recipe.element_nan == "all_ones" and has_nan and nan_elements is not None:
            from ._mx import all_ones_nan

            data = np.where(nan, all_ones_nan(np.signbit(sv), elem).astype(data.dtype), data)
    negative_zeros = None
    cannot = isinstance(elem, IntFormat) or (isinstance(elem, Format) and elem.specials == "fnuz")
    if "negative_zero_held" in recipe.bugs and cannot:
        # the library's float value is -0, which the format cannot hold: its
        # float cast keeps any -0; its integer cast adds a zero point first,
        # so only a negative value rounding to zero is -0
        with np.errstate(invalid="ignore"):
            below = (sv < 0) if isinstance(elem, IntFormat) else np.signbit(sv) & ~nan
            negative_zeros = (decode_values(data, elem) == 0) & below
    kept, kept_fmt = (stored, E8M0) if stored is not None else (scale, sfmt)
    return Quantized(_deliver(data, elem), _deliver(kept, kept_fmt), _deliver(amax, sfmt), elem,
                     kept_fmt, recipe, saturated, groups, input_format=source.fmt,
                     nan_elements=nan_elements if not has_nan else None,
                     negative_zeros=negative_zeros)


def tensor_nan_amax(recipe: Recipe, whole: bool, amax: np.ndarray, fmt: Format, to: Format,
                    ctx: Context) -> np.ndarray:
    """Codes of ``to`` of the groups' amax; where the group is the whole
    tensor and holds a NaN, the NaN the library's full reduction returns
    (``tensor_nan``: its code by input format name, e.g. torch.max's
    ``0xFFFFFFFF`` for FP32), converted to ``to`` by the context's NaN rules."""
    codes = array.encode(amax, to, ctx)
    table = recipe.tensor_nan
    if not whole or table is None or fmt.name not in table or not np.isnan(amax).any():
        return codes
    nan = np.full(amax.shape, table[fmt.name], array.code_dtype(fmt))
    return np.where(np.isnan(amax), array.convert(nan, fmt, to, ctx), codes).astype(codes.dtype)


def _ratio_format(recipe: Recipe, input_format: Format) -> Format:
    """The format the scale's ratio is computed in: the recipe's
    ``ratio_format`` (``"input"``: the input's format), or the scale format."""
    rf = recipe.ratio_format
    if rf is None:
        rf = recipe.scale_format
    if rf == "input":
        return input_format
    return rf


def clamp_codes(codes: np.ndarray, fmt: Format, top: float) -> np.ndarray:
    """Codes of ``fmt`` clamped to ``[-top, top]`` (``top`` a value of
    ``fmt``), as ``torch.clamp`` does: a NaN stays itself, an infinity
    becomes ``±top``."""
    v = array.decode(codes, fmt)
    with np.errstate(invalid="ignore"):
        over = np.abs(v) > top
    if not over.any():
        return codes
    edge = array.encode(np.where(v > 0, top, -top), fmt, Context())
    return np.where(over, edge, codes).astype(codes.dtype)


def power_of_two_below(codes: np.ndarray, fmt: Format, ctx: Context, rounded: bool
                       ) -> np.ndarray:
    """``2**floor(RN_fmt(log2(s)))`` of each scale (torchao's
    ``_round_scale_down_to_power_of_2``): with ``rounded`` (the
    ``log2_rounded`` bug) log2 is rounded to ``fmt`` first, so a scale just
    below a power of two can become that power (fpsim.ops.log2's correct
    rounding); else the exact ``floor(log2(s))``.  NaN, zero and infinity
    as torch.exp2 of their log2."""
    from ._log2 import floor_log2_rounded

    v = array.decode(codes, fmt)
    k, special = floor_log2_rounded(v, fmt if rounded else None)
    with np.errstate(over="ignore", invalid="ignore"):
        p = np.where(special, v, np.ldexp(1.0, np.clip(k, -2000, 2000)))
    return array.encode(p, fmt, ctx)
