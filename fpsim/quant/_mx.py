"""OCP Microscaling (MX) v1.0 block quantization: blocks of 32 consecutive
elements along one axis share a power-of-two scale stored as E8M0.

For a block with largest magnitude ``amax`` and an element format whose
largest binade has exponent ``emax_elem`` (E4M3 8, E5M2 15, E3M2 4, E2M3 2,
E2M1 2, INT8 0):

* the shared exponent is ``floor(log2(amax)) - emax_elem`` (the spec's rule,
  ``mx_scale="floor"``), or the smallest ``k`` with ``amax / 2**k`` at most
  the element format's max (``mx_scale="ceil"``, the round-up variant some
  hardware uses, which never saturates), clamped to E8M0's range
  [-127, 127]; an all-zero block takes -127 (as gfloat does); a block
  holding a NaN has the NaN scale (E8M0 0xFF);
* each element is ``V / 2**k`` (exact: a power of two) rounded into the
  element format with ``rounding`` and ``saturate`` (on by default: with
  the floor rule a block's largest elements can exceed the element max,
  e.g. 1.9 × 2**8 > 448 for E4M3, and are clamped to it).

There is no rounding in the scale computation: it is exact, whatever the
input format.  An infinite element gives the largest exponent (127) and
saturates to the element max, as gfloat does; NaN elements give NaN codes
where the element format has them, and an error otherwise.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import array
from ..context import Context
from ..formats import E8M0, FP64
from ..formats import format as _lookup
from ..ops.operands import Operand
from ._elements import ElementFormat
from ._quantize import (
    Quantized,
    Recipe,
    _axis_and_block,
    _deliver,
    _Groups,
    checked_cast,
    mode_name,
)

MX_SCALES = ("floor", "ceil")


def quantize_mx(source: Operand, elem: ElementFormat, ctx: Context, *, scale_format: Any,
                axis: Any, block_size: Any, mx_scale: str, rounding: Any, saturate: bool,
                rng: Any, eps: Any, scale_rule: str) -> Quantized:
    if scale_format is not None and _lookup(scale_format) != E8M0:
        raise ValueError(f"quantize(): MX scales are E8M0; scale_format={scale_format!r} "
                         "(drop it, or use another scaling)")
    if eps is not None or scale_rule != "amax/max":
        raise ValueError("quantize(): eps= and scale_rule= do not apply to MX scaling (its "
                         "power-of-two scale is computed exactly)")
    if mx_scale not in MX_SCALES:
        raise ValueError(f"quantize(): mx_scale={mx_scale!r}; accepted 'floor' (OCP MX: "
                         "floor(log2(amax)) - emax) or 'ceil' (the smallest power of two that "
                         "brings amax within the element max)")
    shape = source.codes.shape
    axis, block_size = _axis_and_block(shape, axis, block_size, "MX", 32)
    groups = _Groups("mx", shape, axis=axis, size=block_size)
    recipe = Recipe("mx", E8M0, axis=axis, rounding=mode_name(rounding),
                    saturate=bool(saturate), block_size=block_size, mx_scale=mx_scale)

    values = array.decode(source.codes, source.fmt)
    with np.errstate(invalid="ignore"):
        amax = groups.reduce(np.abs(values))
    k = _shared_exponent(amax, elem, mx_scale)
    nan = np.isnan(amax)
    scale_codes = np.where(nan, 0xFF, np.clip(k, -127, 127) + 127).astype(np.uint8)
    exponent = groups.expand(np.where(nan, 0, np.clip(k, -127, 127)))
    scaled = np.ldexp(values, -exponent)  # exact: a power of two, within float64's range
    data, saturated = checked_cast(scaled.view(np.uint64), FP64, scaled, elem, ctx, rounding,
                                   saturate, rng, f"a block holds a NaN, which {elem.name} "
                                   "elements cannot represent (its E8M0 scale would be NaN)")
    return Quantized(_deliver(data, elem), _deliver(scale_codes, E8M0), amax, elem, E8M0,
                     recipe, saturated, groups)


def _shared_exponent(amax: np.ndarray, elem: ElementFormat, rule: str) -> np.ndarray:
    """The block exponents k (int64) of the rule, before E8M0's clamp; an
    all-zero block gets -127, a NaN block 0 (its scale is NaN anyway)."""
    a = np.where(np.isnan(amax), 1.0, amax)
    zero = a == 0
    inf = np.isinf(a)
    a = np.where(zero | inf, 1.0, a)
    k = np.frexp(a)[1].astype(np.int64) - 1 - elem.emax  # exact floor(log2(a))
    if rule == "ceil":
        # amax / 2**k lies in [2**emax, 2**(emax + 1)), as does the max: one
        # more power of two where it exceeds the max (the comparison is exact)
        k = k + (np.ldexp(a, -k) > float(elem.max))
    k = np.where(zero, -127, k)
    return np.where(inf, 127, k)
