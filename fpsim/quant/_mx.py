"""OCP Microscaling (MX) v1.0 block quantization: blocks of 32 consecutive
elements along one axis share a power-of-two scale ``X = 2**k`` stored as
E8M0 (code ``k + 127``; 0xFF is NaN).

For a block with largest magnitude ``amax`` (exact) and an element format
whose largest binade has exponent ``emax`` (E4M3 8, E5M2 15, E3M2 4, E2M3 2,
E2M1 2, MXINT8 0) and whose largest value is ``max``, ``scale_rounding=``
picks ``k`` (``e = floor(log2(amax))``):

* ``"floor"`` (the default; OCP MX v1.0 §6.3, torchao FLOOR, gfloat's
  ``compute_scale_amax``): ``k = e - emax``.  The block's largest elements
  can exceed ``max`` (by up to a factor 2 - 2**-m) and saturate.
* ``"ceil"`` (torchao CEIL): ``k = ceil(log2(amax)) - emax``.
* ``"even"`` (torchao EVEN): ``k = floor(log2(RNA_m(amax))) - emax``, where
  ``RNA_m`` rounds to the element's ``m`` fraction bits (E4M3 3, E5M2 2,
  E3M2 2, E2M3 3, E2M1 1, MXINT8 6), ties away from zero: ``e + 1`` when
  ``amax / 2**e >= 2 - 2**-(m + 1)``, else ``e``.
* ``"rceil"`` (torchao RCEIL; NVIDIA's ``cvt.rp.ue8m0x2.f32``, cuDNN's
  ``quantize_round_up(amax / max)``): in FP32, round to nearest even,
  ``d = fp32(amax) × fp32(1 / max)``; ``k = ceil(log2(d))`` (E8M0 rounding
  up: ``d <= 2**-127`` gives -127, an infinite or NaN ``d`` the NaN scale).
* ``"rceil_exact"``: ``k = ceil(log2(amax / max))`` exactly, the smallest
  power of two that brings amax within ``max`` (never saturates; what
  ``mx_scale="ceil"`` computed before ``scale_rounding=`` existed).

Then, every rule: ``k`` is clamped to E8M0's range [-127, 127]; an all-zero
block takes -127 (as gfloat and torchao do); a block holding a NaN has the
NaN scale 0xFF, whatever its element format (OCP MX v1.0: when ``X`` is NaN
every value of the block is NaN, whatever its elements hold); a block
holding an infinity takes 127 (``"floor"``, ``"ceil"``, ``"even"``,
``"rceil_exact"``, as gfloat does) or the NaN scale (``"rceil"``, whose FP32
``d`` is infinite).  Each element is ``V / 2**k`` (exact: a power of two;
``k = 0`` under the NaN scale) rounded into the element format with
``rounding`` and ``saturate`` (on by default).  A NaN element becomes a NaN
code where the element format has one (E4M3, E5M2); where it has none
(E3M2, E2M3, E2M1, MXINT8) it becomes code 0 and raises INVALID (the
block's NaN is carried by its scale alone, as the element cannot hold it).

Integer elements: MXINT8 (``"int8"`` or ``"mxint8"`` here) is OCP MX's
INT8, 8-bit two's complement with an implicit scale of 2**-6 (values -2 to
1 63/64); ``"mxint8_sym"`` leaves -2 unused, as the spec allows (§5.3.4).
The spec defines no other integer MX element.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from .. import array
from ..context import Context, check_saturate
from ..formats import E8M0, FP32, FP64, Format
from ..formats import format as _lookup
from ..modes import Flag
from ..ops.operands import Operand
from ._elements import MXINT8, MXINT8_SYM, ElementFormat, IntFormat
from ._quantize import (
    Quantized,
    Recipe,
    _axis_and_block,
    _deliver,
    _Groups,
    checked_cast,
    mode_name,
)

SCALE_ROUNDINGS = ("floor", "ceil", "even", "rceil", "rceil_exact")
#: Rules of libraries' recipes (fpsim.quant.recipe), beyond SCALE_ROUNDINGS:
#: "rceil_log2" is torchao's RCEIL on the CPU, ``ceil(RN32(log2(RN32(amax /
#: max))))`` (mx_tensor.py 165-183).
RECIPE_SCALE_ROUNDINGS = SCALE_ROUNDINGS + ("rceil_log2",)
_MX_ELEMENTS = ("e4m3, e5m2 (MXFP8), e3m2, e2m3 (MXFP6), e2m1 (MXFP4), int8 or mxint8 (MXINT8, "
                "mxint8_sym without -2), or another floating-point format")


def check_scale_rounding(rule: Any) -> str:
    """``scale_rounding=``, checked: one of :data:`SCALE_ROUNDINGS`."""
    if not isinstance(rule, str) or rule not in SCALE_ROUNDINGS:
        raise ValueError(
            f"quantize(): scale_rounding={rule!r}; accepted 'floor' (OCP MX v1.0 and torchao "
            "FLOOR: 2**(floor(log2(amax)) - emax), the default), 'ceil' (torchao CEIL: "
            "2**(ceil(log2(amax)) - emax)), 'even' (torchao EVEN: amax rounded to the "
            "element's precision, ties away, then floor), 'rceil' (torchao RCEIL, NVIDIA "
            "cvt.rp.ue8m0: amax × (1 / max) in FP32, rounded up to a power of two) or "
            "'rceil_exact' (the exact amax / max rounded up to a power of two)")
    return rule


def mx_element(elem: ElementFormat) -> ElementFormat:
    """The element of an MX block: 8-bit integers are OCP MX's INT8
    (implicit scale 2**-6, symmetric or not as given); other integer widths
    are refused."""
    if isinstance(elem, IntFormat):
        if elem.bits == 8:
            return MXINT8_SYM if elem.symmetric else MXINT8
        raise ValueError(f"quantize(): {elem.name} is not an OCP MX element (the spec defines "
                         f"INT8 alone among integers); accepted {_MX_ELEMENTS}")
    return elem


def quantize_mx(source: Operand, elem: ElementFormat, ctx: Context, *, scale_format: Any,
                axis: Any, block_size: Any, scale_rounding: str, rounding: Any, saturate: bool,
                rng: Any, eps: Any, scale_rule: str, recipe: Recipe | None = None) -> Quantized:
    if scale_format is not None and _lookup(scale_format) != E8M0:
        raise ValueError(f"quantize(): MX scales are E8M0; scale_format={scale_format!r} "
                         "(drop it, or use another scaling)")
    if eps is not None or scale_rule != "amax/max":
        raise ValueError("quantize(): eps= and scale_rule= do not apply to MX scaling (its "
                         "power-of-two scale is computed exactly)")
    if recipe is None:
        check_scale_rounding(scale_rounding)
    elem = mx_element(elem)
    if isinstance(elem, Format) and elem.emin - elem.mantissa_bits < -1021:
        raise ValueError(f"quantize(): element_format={elem.name} cannot be an MX element: MX "
                         "computes its scaled values in float64, exact for elements whose "
                         f"smallest subnormal is 2**-1021 or more ({elem.name}'s is 2**"
                         f"{elem.emin - elem.mantissa_bits}); accepted {_MX_ELEMENTS} of that "
                         "range (every registered format but FP64); FP64 elements are accepted "
                         "with scaling='tensor', 'channel' or ('block', ...)")
    shape = source.codes.shape
    axis, block_size = _axis_and_block(shape, axis, block_size, "MX", 32)
    groups = _Groups("mx", shape, axis=axis, size=block_size)
    if recipe is None:
        recipe = Recipe("mx", E8M0, axis=axis, rounding=mode_name(rounding),
                        saturate=check_saturate(saturate), block_size=block_size,
                        scale_rounding=scale_rounding)
    else:
        recipe = dataclasses.replace(recipe, axis=axis, block_size=block_size)
        rounding, saturate = recipe.rounding, recipe.saturate

    values = array.decode(source.codes, source.fmt)
    with np.errstate(invalid="ignore"):
        amax = groups.reduce(np.abs(values))
    return _blocks(source, values, amax, elem, recipe, groups, ctx, rng)


def shared_exponent(amax: np.ndarray, elem: ElementFormat, rule: str, ctx: Context
                    ) -> tuple[np.ndarray, np.ndarray]:
    """The block exponents ``k`` (int64, before E8M0's clamp) of the rule
    for each block's exact amax (float64), and which blocks have the NaN
    scale.  An all-zero block gets -127; a NaN block 0 (its scale is NaN)."""
    nan = np.isnan(amax)
    a = np.where(nan, 1.0, amax)
    zero = a == 0
    inf = np.isinf(a)
    a = np.where(zero | inf, 1.0, a)
    mant, e = np.frexp(a)
    e = e.astype(np.int64) - 1               # floor(log2(a)), exactly
    mant = mant * 2.0                        # a / 2**e, in [1, 2), exactly
    if rule == "floor":
        k = e - elem.emax
    elif rule == "ceil":
        k = e + (mant > 1.0) - elem.emax
    elif rule == "even":
        # a rounded to m fraction bits, ties away, reaches 2**(e + 1) iff its
        # significand is at least 2 - 2**-(m + 1) (exact in float64)
        k = e + (mant >= 2.0 - 2.0 ** -(elem.mantissa_bits + 1)) - elem.emax
    elif rule == "rceil_exact":
        # a / 2**k lies in [2**emax, 2**(emax + 1)), as does the max: one
        # more power of two where it exceeds the max (the comparison is exact)
        k = e - elem.emax
        k = k + (np.ldexp(a, -k) > float(elem.max))
    else:
        return _rceil(amax, elem, ctx)
    k = np.where(zero, -127, k)
    return np.where(inf, 127, k), nan


def _rceil(amax: np.ndarray, elem: ElementFormat, ctx: Context
           ) -> tuple[np.ndarray, np.ndarray]:
    """torchao RCEIL / NVIDIA: ``d = fp32(amax) × fp32(1 / max)``, each step
    rounded to nearest even in FP32 (no ftz, whatever the context; flags to
    it), then E8M0 rounding up; ``d = 0`` gives -127, a NaN or infinite
    ``d`` (and one above 2**127) the NaN scale."""
    rne = {"rounding": "rne", "ftz": False, "daz": False, "saturate": False}
    amax32 = array.encode(amax, FP32, ctx, **rne)
    one = array.encode(np.ones(amax.shape), FP32, ctx, **rne)
    top = array.encode(np.full(amax.shape, float(elem.max)), FP32, ctx, **rne)
    d = array.mul(amax32, array.div(one, top, ctx, fmt=FP32, **rne), ctx, fmt=FP32, **rne)
    zero = array.decode(d, FP32) == 0
    d = np.where(zero, np.uint32(0x3F800000), d).astype(np.uint32)   # 1.0: no flags
    codes = array.convert(d, FP32, E8M0, ctx, **{**rne, "rounding": "rup"}).astype(np.int64)
    k = np.where(zero, -127, codes - 127)
    return k, codes == 0xFF


def _blocks(source: Operand, values: np.ndarray, amax: np.ndarray, elem: ElementFormat,
            recipe: Recipe, groups: _Groups, ctx: Context, rng: Any) -> Quantized:
    """MX blocks by the recipe's steps (OCP MX with the default fields; a
    library's with the fields its row sets, fpsim/quant/_recipes.py): the E8M0 exponent rule
    (``scale_rounding``, ``rceil_log2`` among them), an infinite block's code
    (``mx_inf``: ``"max"``, 127; ``"exponent"``, the infinity's exponent
    field read as 2**128, ``128 - emax``), a NaN block's divisor
    (``mx_nan_divisor``), the elements scaled by division by ``2**k`` or, under
    ``rceil_log2``, by multiplication by the reciprocal the library forms,
    clamped to the element's range (``clamp``), and the bugs the row names:
    ``divisor_floor`` (the FP32 divisor floored at 2**-126 while 2**-127 is
    stored), ``rceil_code0_unscaled`` (a code-0 block multiplied by 1),
    ``nan_element_bits`` (a NaN element of a format without NaN given the
    code of its bits).  Values are float64 throughout: every scaled value is
    an exact product or quotient by a power of two, rounded once by the
    element cast."""
    rule = recipe.scale_rounding or "floor"
    nan = np.isnan(amax)
    inf = np.isinf(amax)
    if rule == "rceil_log2":
        k, nan, inf = _rceil_log2(amax, elem, ctx, "log2_rounded" in recipe.bugs)
    else:
        k, nan = shared_exponent(amax, elem, rule, ctx)
        if recipe.mx_inf == "exponent":
            k = np.where(inf, 128 - elem.emax, k)
    k = np.where(nan, 0, np.clip(k, -127, 127 if recipe.mx_inf == "max" else 128))
    codes = np.where(nan, 255, k + 127)
    zeroed = np.zeros(amax.shape, bool)
    if recipe.mx_nan_scale == "zero":
        # ModelOpt MXFP8 (mxfp8_tensor.py 42-66): NaN > 0 is false, so a NaN
        # block takes -127, code 0, and its elements are multiplied by 2**127
        codes = np.where(nan, 0, codes)
        k = np.where(nan, -127, k)
        nan = np.zeros_like(nan)
    elif recipe.mx_nan_scale == "block_zeroed":
        # ModelOpt MXFP4 (mxfp4_tensor.py 74-80): a NaN or infinite exponent
        # is cast to uint8 as code 0, and x / 2**e is NaN or 0 in the whole
        # block, whose elements its cast writes as -0 (code 0x8)
        zeroed = nan | inf
        codes = np.where(zeroed, 0, codes)
        nan = np.zeros_like(nan)
    scale_codes = codes.astype(np.uint8)
    if rule == "rceil_log2":
        # the reciprocal torchao forms (mx_tensor.py 186-203): 2**(127 - code),
        # 2**-127 for code 254, 1 for code 0 (rceil_code0_unscaled)
        e = -k
        if "rceil_code0_unscaled" in recipe.bugs:
            e = np.where(codes == 0, 0, e)
        e = np.where(codes == 254, -127, e)
        with np.errstate(invalid="ignore"):
            scaled = np.ldexp(values, groups.expand(np.where(nan, 0, e)))
            scaled = np.where(groups.expand(nan), np.nan, scaled)
    else:
        divisor = k
        if "divisor_floor" in recipe.bugs:
            divisor = np.maximum(divisor, -126)
        with np.errstate(invalid="ignore"):
            scaled = np.ldexp(values, -groups.expand(np.where(nan, 0, divisor)))
            # x / 2**k: exact for every input but FP64 values below 2**(k - 1022),
            # whose quotient falls below float64's normal range.  Such a quotient
            # is far below half the element's smallest subnormal (elements lie
            # within float64's normal range, checked above), so float64's rounding
            # of it changes nothing the element's rounding sees, in every mode,
            # flags included, but to zero: a quotient lost to zero is put back as
            # float64's smallest subnormal of its sign (as the integer cast does).
            scaled = np.where((scaled == 0) & (values != 0), np.copysign(5e-324, values),
                              scaled)
            if recipe.mx_nan_divisor == "inf":
                # x / +inf: finite elements of a NaN block are +-0, NaNs stay,
                # an infinity is inf / inf: the default NaN (negative on x86)
                in_nan = groups.expand(nan)
                scaled = np.where(in_nan & np.isfinite(values), np.copysign(0.0, values),
                                  scaled)
                scaled = np.where(in_nan & np.isinf(values), -np.nan, scaled)
    if recipe.clamp:
        top = float(elem.max)
        with np.errstate(invalid="ignore"):
            scaled = np.where(np.abs(scaled) > top, np.copysign(top, scaled), scaled)
    if recipe.element_cast is not None:
        from ._steps import library_cast

        scaled = np.where(groups.expand(zeroed), np.nan, scaled)
        data = library_cast(scaled, elem, recipe.element_cast)
        with np.errstate(invalid="ignore"):
            saturated = np.abs(scaled) > float(elem.max)
        return Quantized(_deliver(data, elem), _deliver(scale_codes, E8M0), amax, elem, E8M0,
                         recipe, saturated, groups, input_format=source.fmt)
    has_nan = isinstance(elem, Format) and elem.has_nan
    bad = np.isnan(scaled)
    cast_in = np.where(bad, 0.0, scaled) if not has_nan else scaled
    data, saturated = checked_cast(cast_in.view(np.uint64), FP64, cast_in, elem, ctx,
                                   recipe.rounding, recipe.saturate, rng,
                                   f"a NaN reached the cast into {elem.name}")
    if bad.any() and not has_nan:
        if "nan_element_bits" in recipe.bugs and isinstance(elem, Format):
            from ._steps import nan_bits_codes

            default = np.where(np.signbit(scaled), np.uint32(0xFFC00000), np.uint32(0x7FC00000))
            bits = np.where(np.isnan(values), _quiet32(source, values), default)
            data = np.where(bad, nan_bits_codes(bits, elem).astype(data.dtype), data)
        ctx.raise_flags(Flag.INVALID)
    elif bad.any() and recipe.element_nan == "all_ones" and isinstance(elem, Format):
        data = np.where(bad, all_ones_nan(np.signbit(scaled), elem).astype(data.dtype), data)
    q = Quantized(_deliver(data, elem), _deliver(scale_codes, E8M0), amax, elem, E8M0,
                  recipe, saturated, groups, input_format=source.fmt)
    return q


def all_ones_nan(negative: np.ndarray, elem: Format) -> np.ndarray:
    """The NaN code of a cast that writes every NaN as its sign and an
    all-ones magnitude (torch's float -> float8 conversion: E5M2 0x7F, not
    the quiet-bit 0x7E; E4M3 0x7F); a FNUZ format's one NaN, 0x80."""
    if elem.specials == "fnuz":
        return np.full(np.shape(negative), elem.sign_bit, np.uint64)
    return np.where(negative, elem.sign_bit | elem.magnitude_mask,
                    elem.magnitude_mask).astype(np.uint64)


def _quiet32(source: Operand, values: np.ndarray) -> np.ndarray:
    """The FP32 bits of each input NaN, quieted (a NaN operand of an x86
    division or multiplication comes out with its payload, quiet bit set);
    an input of a narrower binary format widens by appending zero bits."""
    fmt = source.fmt
    codes = np.asarray(source.codes).astype(np.uint64)
    shift = 23 - fmt.mantissa_bits
    if fmt.exponent_bits == 8 and shift >= 0:
        bits = (codes << np.uint64(32 - fmt.width)).astype(np.uint64)
    else:   # another format: its NaN read as the canonical NaN of its sign
        neg = np.signbit(values)
        bits = np.where(neg, np.uint64(0xFFC00000), np.uint64(0x7FC00000))
    return (bits | np.uint64(0x00400000)).astype(np.uint32)


def _rceil_log2(amax: np.ndarray, elem: ElementFormat, ctx: Context, rounded: bool
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """torchao's RCEIL on the CPU (mx_tensor.py 133, 165-183): ``d =
    RN32(amax / max)`` (a division), ``k = ceil(RN32(log2(d)))`` (``rounded``:
    the ``log2_rounded`` bug; else the exact ``ceil(log2(d))``); ``d = 0``
    gives -127, a NaN ``d`` the NaN scale, an infinite one code 254.
    Returns ``k`` and which blocks are NaN and infinite."""
    from ._log2 import ceil_log2_rounded

    rne = {"rounding": "rne", "ftz": False, "daz": False, "saturate": False}
    amax32 = array.encode(amax, FP32, ctx, **rne)
    top = array.encode(np.full(amax.shape, float(elem.max)), FP32, ctx, **rne)
    d = array.decode(array.div(amax32, top, ctx, fmt=FP32, **rne), FP32)
    k, _ = ceil_log2_rounded(d, FP32 if rounded else None)
    nan, inf = np.isnan(d), np.isinf(d)
    k = np.where(d == 0, -127, k)
    return np.where(inf, 127, k), nan, inf
