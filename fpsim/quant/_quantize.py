"""Scaled quantization, step by step, each step rounded in its declared
format by the array engine.

A recipe divides the tensor into scaling groups (the whole tensor, one
index along an axis, or rectangular tiles) and, in each group, computes:

1. ``amax``: the largest magnitude of the group (exact; NaN if the group
   holds a NaN), converted to the scale format ``S``;
2. the scale, one division in ``S``: ``amax / max`` under
   ``scale_rule="amax/max"`` (``max`` is the element format's largest
   value, rounded into ``S``), or ``max / amax`` under ``"max/amax"``;
3. with ``eps`` (rounded into ``S``), the divisor of the division that can
   overflow is floored at it: the scale before its reciprocal
   (``"amax/max"``), amax before ``max / amax`` (``"max/amax"``); a NaN
   stays NaN;
4. the multiplier: ``1 / scale`` in ``S`` (``"amax/max"``), or the scale
   itself (``"max/amax"``);
5. the scaled value of each element: ``x × multiplier`` in ``S`` (``x``
   converted to ``S`` first, a rounding only where ``S`` does not hold it);
6. the element: the scaled value rounded into the element format with
   ``rounding`` (stochastic included) and ``saturate``.

A group whose amax is zero in ``S`` (all its elements zero, or too small
for ``S``) and is not floored by ``eps`` has the scale 1 and no division
is made (no flag): its elements are ``x`` converted to ``S``, zeros.  This
is Transformer Engine's rule (``compute_scale_from_amax`` returns 1 for a
zero amax); a kernel that divides anyway computes ``0 × inf`` = NaN.

Steps 1-5 run under the context's settings (its rounding mode, ftz, daz;
round-to-nearest-even by default), and every step's flags reach it.
``dequantize()`` gives each element's value times the scale (``"amax/max"``)
or divided by it (``"max/amax"``), exactly, rounded once to float64.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from .. import array
from .._errstate import quiet
from ..context import Context, check_saturate, getcontext
from ..formats import E8M0, FP32, Format
from ..modes import Saturation
from ..ops.operands import Operand, declared
from . import _checks
from ._elements import ElementFormat, IntFormat, cast, decode, element_format

__all__ = ["Recipe", "Quantized", "BlockOperand", "quantize"]

SCALE_RULES = ("amax/max", "max/amax")


@dataclass(frozen=True)
class Recipe:
    """How a tensor is quantized: the scaling groups and every declared
    format and step (see :func:`quantize`; the steps' fields:
    ``fpsim/quant/_recipes.py``).  :func:`fpsim.quant.recipe` builds one
    for a library's named recipe; ``quantize(x, recipe)`` runs it.  The
    fields after ``scale_rounding`` default to fpsim's own steps (the
    specification rows): a recipe built from :func:`quantize`'s keywords
    has them."""

    scaling: str
    scale_format: Format
    scale_rule: str = "amax/max"
    axis: int | None = None
    block: tuple[int, int] | None = None
    eps: float | None = None
    rounding: str = "rne"
    saturate: bool | Saturation = True
    block_size: int | None = None
    scale_rounding: str | None = None
    # -- the steps a library's recipe names (fpsim/quant/_recipes.py) ---------------
    library: str = "spec"
    name: str | None = None
    element: Any = None
    source: str = ""
    ratio_format: Any = None
    eps_on: str = "divisor"
    zero_scale: str = "one"
    scale_pow2: str | None = None
    apply: str | None = None
    clamp: bool = False
    dequant: str | None = None
    dequant_format: Any = None
    output: Any = None
    nan: str | None = None
    element_nan: str | None = None
    tensor_nan: Any = None
    inf_scaled: str = "saturate"
    mx_nan_scale: str = "nan"
    element_cast: str | None = None
    block_scale_zero: float | None = None
    dequant_zero: str = "signed"
    add_zero: bool = False
    block_scale_zero_at: str = "before"
    even_bits: int | None = None
    float_elements: bool = False
    inputs: tuple[str, ...] | None = None
    amax_to_one: float | None = None
    ratio_op: str = "divide"
    scale_emax: int | None = None
    scale_unit: int = 0
    scale_first: bool = False
    mx_inf: str = "max"
    mx_nan_divisor: str = "one"
    tensor_scale: str | None = "encode"
    block_scale_min: float | None = None
    multiplier: str = "quotient"
    bugs: frozenset = frozenset()

    def describe(self) -> str:
        """The recipe in words.

        >>> quantize(np.float32([1.0]), "e4m3", "channel").recipe.describe()
        'one scale per index of axis 0; scale = amax/max in fp32; elements rounded rne, saturating'
        """
        axis = 0 if self.axis is None and self.scaling == "channel" else self.axis
        if self.scaling in ("mx", "nvfp4") and axis is None:
            axis = -1
        groups = {"tensor": "one scale for the tensor",
                  "channel": f"one scale per index of axis {axis}",
                  "block": f"one scale per {self.block} tile of the last two axes",
                  "token": "one scale per token (each index of the first two axes)",
                  "mx": f"one E8M0 scale per {self.block_size} elements along axis {axis} "
                        f"(scale_rounding={self.scale_rounding!r})",
                  "nvfp4": f"one E4M3 scale per {self.block_size} elements along axis "
                           f"{axis} and an FP32 tensor scale"}[self.scaling]
        if self.dequant is None:          # fpsim's own steps (exact dequantization)
            return (f"{groups}; scale = {self.scale_rule} in {self.scale_format.name}"
                    f"{'' if self.eps is None else f', divisor floored at eps={self.eps!r}'}; "
                    f"elements rounded {self.rounding}, "
                    f"{_saturation_words(self.saturate)}")
        ratio = ""
        if self.ratio_format == "input":
            ratio = " (the ratio in the input's format)"
        elif self.ratio_format is not None:
            ratio = f" (the ratio in {self.ratio_format.name})"
        how = self.apply or ("reciprocal" if self.scale_rule == "amax/max" else "multiply")
        elements = {"reciprocal": "x × (1 / scale)", "divide": "x / scale",
                    "multiply": "x × scale"}[how] if self.scaling not in ("mx", "nvfp4") else \
            "x scaled"
        bugs = f"; bugs: {', '.join(sorted(self.bugs))}" if self.bugs else ""
        out = "the input's format" if self.output in (None, "input") else self.output
        deq = f"; dequantized: {self.dequant} in " \
              f"{getattr(self.dequant_format, 'name', out)}, to {out}" if self.dequant else ""
        sname = "the input's format" if self.scale_format == "input" else self.scale_format.name
        return (f"{self.library} {self.name}: {groups}; scale = {self.scale_rule} in "
                f"{sname}{ratio}"
                f"{'' if self.eps is None else f', amax floored at eps={self.eps!r}'}, "
                f"elements {elements}{', clamped' if self.clamp else ''}, rounded "
                f"{self.rounding}, {_saturation_words(self.saturate)}{deq}{bugs}")


class BlockOperand(NamedTuple):
    """What a block-scaled matrix instruction reads of a quantized operand
    (:meth:`Quantized.block_operand`): element ``codes`` and ``scales``
    (uint8 codes, shaped like the blocks), the ``element`` and ``scale``
    format names, the ``block`` length and the ``axis`` the blocks run
    along; NVFP4's per-tensor ``tensor_scale`` (the FP32 encode scale
    ``448 × 6 / amax``) and ``tensor_amax`` (the FP32 amax it was computed
    from), None for MX."""

    codes: np.ndarray
    scales: np.ndarray
    element: str
    scale: str
    block: int
    axis: int
    tensor_scale: np.ndarray | None
    tensor_amax: np.ndarray | None


@dataclass
class Quantized:
    """The result of :func:`quantize`.

    ``data``: the elements, as values of the element format's numpy or
    ml_dtypes dtype where one exists, int8 codes for INT8, codes otherwise;
    ``scale``: one scale per group, as values of the scale format's dtype
    (codes where it has none), shaped like the groups (``()`` for one
    tensor scale; the channel axis alone; the tile grid; the block grid);
    ``amax``: each group's amax in the format its scale is computed in
    (FP32 for NVFP4, float64 for MX, whose scale is computed exactly);
    ``saturated``: which
    elements' scaled values exceeded the element format's max in magnitude
    (and were clamped, or became infinity/NaN without ``saturate``).
    """

    data: np.ndarray
    scale: np.ndarray
    amax: np.ndarray
    element_format: ElementFormat
    scale_format: Format
    recipe: Recipe
    saturated: np.ndarray = field(repr=False)
    _groups: Any = field(repr=False)
    tensor_scale: np.ndarray | None = None
    tensor_amax: np.ndarray | None = None
    input_format: Any = None
    nan_elements: np.ndarray | None = None
    negative_zeros: np.ndarray | None = None

    def block_operand(self) -> BlockOperand:
        """The operand of a block-scaled matrix instruction
        (:mod:`fpsim.mma.blockscaled`), a :class:`~fpsim.quant.BlockOperand`: element
        codes, scale codes, element format name, scale format name, block,
        axis, and NVFP4's per-tensor FP32 encode scale and the amax it came
        from (None for MX) of MX (E8M0 scales) or NVFP4 (UE4M3 scales)
        results; a ValueError for the other scalings.

        >>> q = quantize(np.float32([[1.0] * 32]), "e4m3", "mx", axis=1)
        >>> op = q.block_operand()
        >>> int(op.codes[0, 0]), int(op.scales[0, 0]), op.element, op.scale, op.block, op.axis
        (120, 119, 'e4m3', 'e8m0', 32, 1)
        >>> q = quantize(np.float32([[3.0] * 16]), "e2m1", "nvfp4", axis=1)
        >>> op = q.block_operand()
        >>> float(op.tensor_scale), float(op.tensor_amax)         # 448 * 6 / amax
        (896.0, 3.0)
        """
        kind = self.recipe.scaling
        if kind not in ("mx", "nvfp4"):
            raise ValueError(f"a block-scaled instruction takes 'mx' or 'nvfp4' results; this "
                             f"one is {kind!r} scaling")
        elem = self.element_format
        name = getattr(elem, "name", str(elem))
        codes = _codes(self.data, elem)
        scales = np.asarray(self.scale).view(np.uint8)
        return BlockOperand(codes, scales, name, "e8m0" if kind == "mx" else "ue4m3",
                            int(self.recipe.block_size), int(self.recipe.axis),
                            self.tensor_scale, self.tensor_amax)

    @quiet
    def dequantize(self, dtype: Any = None) -> np.ndarray:
        """Each element times its group's scale (divided by it under
        ``"max/amax"``), exactly, rounded once to float64.

        A library's recipe (:func:`fpsim.quant.recipe`) dequantizes as the
        library does (its ``dequant`` steps: the product or quotient rounded
        in its format, then converted to its output format, by default the
        input's), as values of that format's dtype; ``dtype=`` names another
        output format.

        >>> q = quantize(np.float32([0.5, -3.0]), "e4m3")   # scale = 3 / 448 in FP32
        >>> q.data.astype(float).tolist(), q.dequantize().tolist()
        ([72.0, -448.0], [0.4821428619325161, -3.0000000298023224])
        """
        if self.recipe.dequant is not None:
            from ._steps import dequantize_steps

            return dequantize_steps(self, dtype)
        if dtype is not None:
            raise ValueError("dequantize(): dtype= applies to a library's recipe "
                             "(fpsim.quant.recipe); this result dequantizes exactly to float64")
        values = decode(_codes(self.data, self.element_format), self.element_format)
        scale = self._groups.expand(array.decode(_codes(self.scale, self.scale_format),
                                                 self.scale_format))
        with np.errstate(all="ignore"):  # NaN and infinite scales give NaN/inf, as they are
            if self.tensor_scale is not None:  # NVFP4: element × block scale / tensor scale
                top = float(np.asarray(self.tensor_scale).astype(np.float64))
                return (values * scale) / top  # the product exact, one rounding
            if self.recipe.scale_rule == "amax/max":
                # IEEE multiplication: the exact product rounded once (exact
                # itself unless an FP64 element or scale has too many bits)
                return values * scale
            return values / scale  # IEEE division: the exact quotient rounded once

    def group_index(self) -> np.ndarray:
        """For each element, the number of its scaling group (C order of
        the groups, as :meth:`group_labels` lists them)."""
        return self._groups.expand(np.arange(self.scale.size).reshape(self.scale.shape))

    def group_labels(self) -> list[tuple[int, ...]]:
        """Each scaling group's index into ``scale``, in order."""
        return list(np.ndindex(*self.scale.shape))


def _codes(data: np.ndarray, fmt: ElementFormat) -> np.ndarray:
    if isinstance(fmt, IntFormat) or data.dtype.kind in "iu":
        return data
    return data.view(array.code_dtype(fmt))


def _saturation_words(saturate: bool | Saturation) -> str:
    if saturate is True or saturate is False:
        return "saturating" if saturate else "not saturating"
    return f"saturation {saturate}"


@quiet
def quantize(x: Any, element_format: Any, scaling: Any = "tensor", ctx: Context | None = None,
             *, fmt: Format | str | None = None, scale_format: Format | str | None = None,
             scale_rule: str = "amax/max", eps: float | None = None, axis: int | None = None,
             block_size: int | None = None, scale_rounding: str | None = None,
             rounding: str = "rne", saturate: bool = True, rng: Any = None,
             mx_scale: str | None = None) -> Quantized:
    """Quantize ``x`` (values of a float dtype, or codes with ``fmt=``) into
    ``element_format`` with one scale per group, every step rounded in its
    declared format (see the module's docstring for the steps).

    ``scaling``: ``"tensor"`` (one scale), ``"channel"`` (one per index of
    ``axis``, default 0, the amax taken over the other axes),
    ``("block", (bh, bw))`` (one per ``bh × bw`` tile of the last two axes;
    their lengths must be multiples of the tile's: pad first), or ``"mx"``
    (OCP MX v1.0: blocks of ``block_size`` (default 32) consecutive elements along
    ``axis``, default the last, each with an E8M0 scale; ``scale_rounding``
    picks how the scale's exponent is rounded: ``"floor"`` (the spec's
    rule, the default), ``"ceil"``, ``"even"``, ``"rceil"`` (torchao's
    rules of those names) or ``"rceil_exact"``; see ``fpsim/quant/_mx.py``;
    ``mx_scale=`` is its older name, whose ``"ceil"`` is
    ``"rceil_exact"``), or ``"nvfp4"`` (E2M1 elements, blocks of
    ``block_size`` (default 16) with E4M3 scales and an FP32 tensor scale; see
    ``fpsim/quant/_nvfp4.py``).  ``scale_format`` (FP32 by default; E8M0,
    and only E8M0, for ``"mx"``) is the format of amax, the scale, its
    reciprocal and the scaled values: any signed format with a zero, up to
    FP64 (``"fp64"``: a recipe that computes its scales in double
    precision).  ``x`` may hold FP64 values (float64) under every scaling;
    the element format may be FP64 too, but not for ``"mx"``, whose scaled
    values are computed in float64 (its elements lie within float64's
    normal range).

    A real failure, reproduced: an FP16 tensor quantized to E5M2 with the
    scale computed in FP16.  amax / 57344 is a subnormal of FP16, its
    reciprocal overflows to infinity, and 0 × inf is NaN:

    >>> x = np.float16([[0, 0, 0.1, 0.1]])
    >>> quantize(x, "e5m2", scale_format="fp16").data.astype(float).tolist()
    [[nan, nan, 57344.0, 57344.0]]
    >>> quantize(x, "e5m2").data.astype(float).tolist()       # scale in FP32
    [[0.0, 0.0, 57344.0, 57344.0]]
    >>> fixed = quantize(x, "e5m2", scale_format="fp16", eps=2**-14)  # scale >= FP16's min normal
    >>> fixed.data.astype(float).tolist(), fixed.dequantize().tolist()
    ([[0.0, 0.0, 1536.0, 1536.0]], [[0.0, 0.0, 0.09375, 0.09375]])

    The same failure one level up: float64 inputs whose amax (1e-40) is a
    subnormal of FP32, where the reciprocal of the scale overflows (0 × inf
    is NaN, every other element saturates); with ``scale_format="fp64"``
    the scale is a normal number and the elements keep their ratio:

    >>> x = np.array([0.0, 1e-40, -5e-41])
    >>> quantize(x, "e4m3").data.astype(float).tolist()
    [nan, 448.0, -448.0]
    >>> q = quantize(x, "e4m3", scale_format="fp64")
    >>> q.data.astype(float).tolist(), float(q.scale) == 1e-40 / 448
    ([0.0, 448.0, -224.0], True)
    """
    op = "quantize"
    if isinstance(element_format, Recipe):
        given = {"scaling": scaling != "tensor", "scale_format": scale_format is not None,
                 "scale_rule": scale_rule != "amax/max", "eps": eps is not None,
                 "block_size": block_size is not None, "scale_rounding": scale_rounding is not None,
                 "rounding": rounding != "rne", "saturate": saturate is not True,
                 "mx_scale": mx_scale is not None}
        extra = [k for k, v in given.items() if v]
        if extra:
            raise ValueError(f"quantize(): a Recipe names every step; drop {', '.join(extra)} "
                             "(build another recipe: fpsim.quant.recipe(..., options))")
        return _run_recipe(x, element_format, ctx, fmt, axis, rng)
    elem = element("quantize()", element_format)
    source = Operand(op, x, fmt)
    # Settings the last step reads, checked before any step raises a flag.
    _checks.settings(rounding, saturate)
    _checks.rng(rng)
    if eps is not None:
        check_eps(eps)
    if ctx is None:
        ctx = getcontext()
    elif not isinstance(ctx, Context):
        raise TypeError(f"quantize(): ctx must be an fpsim.Context, got {type(ctx).__name__}")
    rule = _scale_rounding(scaling, scale_rounding, mx_scale)
    if scaling == "mx":
        from ._mx import quantize_mx

        return quantize_mx(source, elem, ctx, scale_format=scale_format, axis=axis,
                           block_size=block_size, scale_rounding=rule, rounding=rounding,
                           saturate=saturate, rng=rng, eps=eps, scale_rule=scale_rule)
    if scaling == "nvfp4":
        from ._nvfp4 import quantize_nvfp4

        return quantize_nvfp4(source, elem, ctx, scale_format=scale_format, axis=axis,
                              block_size=block_size, rounding=rounding, saturate=saturate,
                              rng=rng, eps=eps, scale_rule=scale_rule)
    sfmt = _declared_format("scale_format", FP32 if scale_format is None else scale_format)
    if elem.max > sfmt.max:
        # (FP64 elements with the default FP32 scale: the element's max, the
        # scale's divisor or dividend, is infinite in S, and so every scale)
        wide = elem.name if isinstance(elem, Format) else "fp32"
        raise ValueError(f"quantize(): element_format={elem.name}'s largest value "
                         f"{float(elem.max):.6g} is beyond scale_format={sfmt.name}'s "
                         f"({float(sfmt.max):.6g}): no scale computed in {sfmt.name} maps a "
                         f"group's amax onto {elem.name}'s range; declare a scale_format that "
                         f"holds it (scale_format={wide!r})")
    # (a block size no scaling here reads is refused, not ignored)
    if block_size is not None:
        raise ValueError(f"quantize(): block_size={block_size!r} applies with scaling='mx' or "
                         "'nvfp4' (blocks of consecutive elements along axis=); a 2-D tile is "
                         "scaling=('block', (rows, columns)); drop block_size=")
    if scale_rule not in SCALE_RULES:
        raise ValueError(f"quantize(): scale_rule={scale_rule!r}; accepted 'amax/max' (scale = "
                         "amax / element max, elements = x / scale) or 'max/amax' (scale = "
                         "element max / amax, elements = x × scale)")
    groups = _groups(scaling, source.codes.shape, 0 if axis is None else axis)
    recipe = Recipe(groups.kind, sfmt, scale_rule, groups.axis, groups.block, eps,
                    mode_name(rounding), check_saturate(saturate))
    from ._ratio import ratio_quantize

    return ratio_quantize(source, elem, recipe, groups, ctx, rng)


def _run_recipe(x: Any, recipe: Recipe, ctx: Context | None, fmt: Any, axis: Any,
                rng: Any) -> Quantized:
    """``quantize(x, recipe, axis=...)``: the recipe's steps on ``x``."""
    from ._ratio import ratio_quantize
    from ._steps import steps_context

    if recipe.element is None:
        raise ValueError("quantize(): this Recipe names no element format (build it with "
                         "fpsim.quant.recipe(library, name, ...))")
    _checks.rng(rng)
    if ctx is not None and not isinstance(ctx, Context):
        raise TypeError(f"quantize(): ctx must be an fpsim.Context, got {type(ctx).__name__}")
    ctx = steps_context(recipe, ctx if ctx is not None else getcontext())
    source = Operand("quantize", x, fmt)
    if recipe.inputs is not None and source.fmt.name not in recipe.inputs:
        raise ValueError(f"quantize(): {recipe.library}'s {recipe.name} takes "
                         f"{' or '.join(recipe.inputs)} inputs ({recipe.source.split(': ')[-1]});"
                         f" got {source.fmt.name}")
    elem = recipe.element
    if recipe.scaling == "mx" and recipe.scale_format != E8M0:
        # blocks along an axis with a scale of another format (brevitas' MX)
        axis_, size = _axis_and_block(source.codes.shape, axis, recipe.block_size, "MX", 32)
        groups = _Groups("mx", source.codes.shape, axis=axis_, size=size)
        return ratio_quantize(source, elem, dataclasses.replace(recipe, axis=axis_,
                                                                block_size=size),
                              groups, ctx, rng)
    if recipe.scaling == "mx":
        from ._mx import quantize_mx

        return quantize_mx(source, elem, ctx, scale_format=None, axis=axis,
                           block_size=recipe.block_size, scale_rounding=recipe.scale_rounding,
                           rounding=recipe.rounding, saturate=recipe.saturate, rng=rng,
                           eps=None, scale_rule="amax/max", recipe=recipe)
    if recipe.scaling == "nvfp4":
        from ._nvfp4 import quantize_nvfp4

        return quantize_nvfp4(source, elem, ctx, scale_format=None, axis=axis,
                              block_size=recipe.block_size, rounding=recipe.rounding,
                              saturate=recipe.saturate, rng=rng, eps=recipe.eps,
                              scale_rule="amax/max", recipe=recipe)
    if recipe.scaling == "token":
        groups = _token_groups(source.codes.shape, axis, "token_2d_tensor" in recipe.bugs)
    else:
        groups = _groups(recipe.scaling if recipe.block is None else ("block", recipe.block),
                         source.codes.shape, 0 if axis is None else axis)
    recipe = dataclasses.replace(recipe, axis=groups.axis)
    return ratio_quantize(source, elem, recipe, groups, ctx, rng)


def _scale_rounding(scaling: Any, scale_rounding: Any, mx_scale: Any) -> str:
    """The E8M0 rounding rule of an MX call (``mx_scale=`` is its older
    name, ``"ceil"`` there being ``"rceil_exact"``); refused elsewhere."""
    from ._mx import check_scale_rounding

    if mx_scale is not None:
        if scale_rounding is not None:
            raise ValueError("quantize(): give scale_rounding= or its older name mx_scale=, "
                             "not both")
        if mx_scale not in ("floor", "ceil"):
            raise ValueError(f"quantize(): mx_scale={mx_scale!r}; accepted 'floor' or 'ceil' "
                             "(scale_rounding= accepts more rules)")
        scale_rounding = {"floor": "floor", "ceil": "rceil_exact"}[mx_scale]
    if scale_rounding is None:
        return "floor"
    rule = check_scale_rounding(scale_rounding)
    if scaling != "mx":
        what = ("NVFP4's block scales are E4M3, rounded to nearest even"
                if scaling == "nvfp4" else "this scaling's scale is computed in scale_format")
        raise ValueError(f"quantize(): scale_rounding={rule!r} rounds E8M0 scales "
                         f"(scaling='mx'); {what}: drop it")
    return rule


def check_eps(eps: Any) -> None:
    """``eps=``: a positive number, finite as a float (it is rounded into the
    scale format from its float64 value)."""
    _checks.real("quantize()", "eps", eps)
    try:
        value = float(eps)
    except OverflowError:
        value = math.inf
    except ValueError:  # Decimal('sNaN'): a NaN, refused below as every NaN is
        value = math.nan
    if not (0 < value < math.inf):
        raise ValueError(f"quantize(): eps={eps!r}; accepted a positive number, finite and "
                         "nonzero in float64 (the floor of the scale or of amax)")


def scale_and_cast(source: Operand, elem: ElementFormat, sfmt: Format, multiplier: np.ndarray,
                   ctx: Context, rounding: Any, saturate: bool, rng: Any
                   ) -> tuple[np.ndarray, np.ndarray]:
    """The last two steps of every recipe: ``x`` converted to ``sfmt`` and
    multiplied by its multiplier (codes of ``sfmt``, broadcast to ``x``) in
    ``sfmt``; the product rounded into the element format.  Returns the
    element codes and which scaled values exceeded the element max."""
    xs = array.convert(source.codes, source.fmt, sfmt, ctx)
    scaled = array.mul(xs, multiplier, ctx, fmt=sfmt)
    return checked_cast(scaled, sfmt, array.decode(scaled, sfmt), elem, ctx, rounding, saturate,
                        rng, f"a scaled value is NaN (a NaN input, or 0 × inf from an "
                        f"infinite multiplier), which {elem.name} cannot represent; declare "
                        "eps= or a wider scale_format=")


def checked_cast(scaled: np.ndarray, src: Format, values: np.ndarray, elem: ElementFormat,
                 ctx: Context, rounding: Any, saturate: bool, rng: Any, nan_problem: str
                 ) -> tuple[np.ndarray, np.ndarray]:
    """The element cast of every recipe: the scaled values (codes of ``src``,
    and ``values``, the same as float64) rounded into ``elem``; refused with
    ``nan_problem`` where a value is NaN and ``elem`` has no NaN.  Returns
    the element codes and which scaled values exceeded the element max."""
    with np.errstate(invalid="ignore"):
        saturated = np.abs(values) > float(elem.max)
    if not (isinstance(elem, Format) and elem.has_nan) and np.isnan(values).any():
        raise ValueError(f"quantize(): {nan_problem}")
    return cast(scaled, src, elem, ctx, rounding=rounding, saturate=saturate, rng=rng), saturated


def mode_name(rounding: Any) -> str:
    """A rounding mode given as a name or a Rounding member, as its name."""
    return str(getattr(rounding, "value", rounding))


def _floored(codes: np.ndarray, floor: np.ndarray | None, fmt: Format, ctx: Context
             ) -> np.ndarray:
    """``floor`` where ``codes`` is below it (a quiet comparison: NaN stays)."""
    if floor is None:
        return codes
    small = array.lt(codes, np.broadcast_to(floor, codes.shape), ctx, fmt=fmt, signaling=False)
    return np.where(small, floor, codes).astype(codes.dtype)


def _axis(shape: tuple[int, ...], axis: Any, what: str) -> int:
    """``axis`` of an array of ``shape``, checked, as a nonnegative int."""
    if not shape:
        raise ValueError(f"quantize(): {what} needs at least one axis")
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)) or not (
            -len(shape) <= axis < len(shape)):
        raise ValueError(f"quantize(): axis={axis!r} for an array of {len(shape)} axes; "
                         f"accepted an integer in [{-len(shape)}, {len(shape) - 1}]")
    return int(axis) % len(shape)


def _axis_and_block(shape: tuple[int, ...], axis: Any, block_size: Any, name: str,
                    default: int) -> tuple[int, int]:
    """The axis (default the last) and block length of a recipe with blocks
    of consecutive elements (MX, NVFP4), checked; ``block_size`` is the
    recipe's default where None."""
    axis = _axis(shape, -1 if axis is None else axis, f"{name} scaling")
    if block_size is None:
        block_size = default
    if (isinstance(block_size, bool) or not isinstance(block_size, (int, np.integer))
            or block_size < 1):
        raise ValueError(f"quantize(): block_size={block_size!r}; accepted a positive integer")
    if shape[axis] % block_size:
        raise ValueError(f"quantize(): axis {axis} has length {shape[axis]}, not a multiple of "
                         f"the {name} block size {block_size}; pad the tensor first (fpsim does "
                         "not pad: a padding value would change the last block's amax)")
    return axis, int(block_size)


def element(op: str, fmt: Any) -> ElementFormat:
    """The element format named by ``op``'s argument, checked."""
    try:
        elem = element_format(fmt)
    except (KeyError, ValueError, TypeError) as e:
        raise ValueError(f"{op}: element_format={fmt!r} is not a format: {e}") from None
    if isinstance(elem, Format):
        _check_usable("element_format", elem)
    elif elem.max <= 0:
        raise ValueError(f"{op}: element_format={elem.name} holds -1 and 0 alone: its largest "
                         "value is 0, so no scale maps a group's amax onto it; accepted a "
                         "floating-point format, int8, int4, int2 (and their _sym variants) "
                         "or mxint8")
    return elem


def _declared_format(name: str, fmt: Any) -> Format:
    f = declared("quantize", name, fmt)
    _check_usable(name, f)
    return f


def _check_usable(name: str, fmt: Format) -> None:
    """Elements and scales need a sign and a zero (E8M0 has neither: it is
    MX's scale, used by scaling='mx' alone) and the array engine's formats
    (up to 64 bits of precision up to 53: FP64 and every narrower one)."""
    if not (fmt.signed and fmt.has_zero):
        raise ValueError(f"quantize(): {name}={fmt.name} has no sign or no zero, so it cannot "
                         "hold every element or scale (E8M0 is the MX scale: use "
                         "scaling='mx'); accepted a signed format with a zero, or an integer "
                         "element: int8, int4, int2, mxint8 (and their _sym variants)")
    if fmt.width > 64 or fmt.precision > 53:
        raise ValueError(f"quantize(): {name}={fmt.name} is {fmt.width} bits of precision "
                         f"{fmt.precision}; the array engine computes in formats of at most 64 "
                         "bits and precision 53 (FP64)")


def _deliver(codes: np.ndarray, fmt: ElementFormat) -> np.ndarray:
    if isinstance(fmt, IntFormat):
        return codes
    dt = array.value_dtype(fmt)
    return codes.view(dt) if dt is not None else codes


class _Groups:
    """The scaling groups of a shape: ``reduce`` takes each group's max,
    ``expand`` broadcasts one code per group back to the elements."""

    def __init__(self, kind: str, shape: tuple[int, ...], axis: int | None = None,
                 block: tuple[int, int] | None = None, size: int | None = None) -> None:
        self.kind, self.shape, self.axis, self.block, self.size = kind, shape, axis, block, size

    def reduce(self, values: np.ndarray) -> np.ndarray:
        if self.kind == "tensor":
            return np.array(values.max() if values.size else 0.0)
        if self.kind == "channel":
            assert self.axis is not None
            others = tuple(i for i in range(values.ndim) if i != self.axis)
            return values.max(axis=others) if others else values.copy()
        if self.kind == "mx":
            assert self.axis is not None
            return np.moveaxis(self._runs(values).max(axis=-1), -1, self.axis)
        if self.kind == "token":
            return values.max(axis=tuple(range(2, values.ndim)))
        return self._tiles(values).max(axis=(-3, -1))

    def _runs(self, a: np.ndarray) -> np.ndarray:
        """The blocks of ``size`` consecutive elements along the axis, the
        axis moved last: (..., blocks, size)."""
        assert self.axis is not None and self.size is not None
        moved = np.moveaxis(a, self.axis, -1)
        return moved.reshape(*moved.shape[:-1], moved.shape[-1] // self.size, self.size)

    def _tiles(self, a: np.ndarray) -> np.ndarray:
        assert self.block is not None
        bh, bw = self.block
        *lead, h, w = a.shape
        return a.reshape(*lead, h // bh, bh, w // bw, bw)

    def expand(self, per_group: np.ndarray) -> np.ndarray:
        """One value per group, broadcast to every element (a view where
        numpy can, else a copy)."""
        if self.kind == "tensor":
            return np.broadcast_to(per_group, self.shape)
        if self.kind == "channel":
            assert self.axis is not None
            shape = [1] * len(self.shape)
            shape[self.axis] = self.shape[self.axis]
            return np.broadcast_to(per_group.reshape(shape), self.shape)
        if self.kind == "mx":
            assert self.axis is not None and self.size is not None
            runs = np.repeat(np.moveaxis(per_group, self.axis, -1), self.size, axis=-1)
            return np.moveaxis(runs, -1, self.axis)
        if self.kind == "token":
            lead = per_group.reshape(self.shape[:2] + (1,) * (len(self.shape) - 2))
            return np.broadcast_to(lead, self.shape)
        assert self.block is not None
        bh, bw = self.block
        tiled = np.repeat(np.repeat(per_group, bh, axis=-2), bw, axis=-1)
        return tiled.reshape(self.shape)


def _token_groups(shape: tuple[int, ...], axis: Any, two_d_tensor: bool) -> _Groups:
    """compressed-tensors' TOKEN groups (helpers.py 161-192,
    compute_dynamic_scales_and_zp): one scale per index of the first two
    axes, every later axis reduced; a 1-D tensor has one scale, and so has
    a 2-D one under the ``token_2d_tensor`` bug (else one per row)."""
    if axis is not None:
        raise ValueError("quantize(): token scaling takes no axis= (one scale per index of "
                         "the first two axes, every later axis reduced)")
    if len(shape) >= 3:
        return _Groups("token", shape)
    if len(shape) == 2 and not two_d_tensor:
        return _Groups("channel", shape, axis=0)
    return _Groups("tensor", shape)


def _groups(scaling: Any, shape: tuple[int, ...], axis: Any) -> _Groups:
    if scaling == "tensor":
        return _Groups("tensor", shape)
    if scaling == "channel":
        return _Groups("channel", shape, axis=_axis(shape, axis, "scaling='channel'"))
    if (isinstance(scaling, tuple) and len(scaling) == 2 and scaling[0] == "block"
            and isinstance(scaling[1], tuple) and len(scaling[1]) == 2
            and all(isinstance(n, (int, np.integer)) and not isinstance(n, bool) and n >= 1
                    for n in scaling[1])):
        bh, bw = (int(n) for n in scaling[1])
        if len(shape) < 2:
            raise ValueError(f"quantize(): block scaling tiles the last two axes; x has shape "
                             f"{shape} (reshape to 2-D first)")
        h, w = shape[-2:]
        if h % bh or w % bw:
            raise ValueError(f"quantize(): the last two axes {(h, w)} are not multiples of the "
                             f"tile {(bh, bw)}; pad the tensor first (fpsim does not pad: a "
                             "padding value would change the amax of the last tiles)")
        return _Groups("block", shape, block=(bh, bw))
    raise ValueError(f"quantize(): unknown scaling={scaling!r}; accepted 'tensor', 'channel' "
                     "(with axis=), ('block', (rows, columns)), 'mx' or 'nvfp4'")

