"""Which elements of a tensor a library's recipe quantizes differently from
the specification, and why: each of the row's bugs alone, all of them, and
its conventions (:func:`recipe_report`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import array
from .._errstate import quiet
from ._quantize import Quantized, Recipe, quantize

__all__ = ["RecipeReport", "recipe_report"]


@dataclass
class RecipeReport:
    """What a library's recipe did to a tensor, against the specification.

    Each mask is shaped like the tensor and marks the elements whose
    dequantized value (in the library's output format; NaN equal to NaN)
    changes:

    * ``by_bug[name]``: when that bug alone is removed from the row;
    * ``bugs``: when all the row's bugs are removed (``recipe(...,
      bugs=False)``);
    * ``convention``: between the bug-free row and the specification's row of
      the same name and element format (``recipe("spec", ...)``: OCP MX's
      floor rule, Transformer Engine's NVFP4, fpsim's FP8 scaling), its
      dequantized values rounded once to the library's output format: what
      the library's conventions change.
    """

    library: str
    name: str
    by_bug: dict[str, np.ndarray] = field(repr=False)
    bugs: np.ndarray = field(repr=False)
    convention: np.ndarray = field(repr=False)

    def __str__(self) -> str:
        n = self.bugs.size
        rows = [(f"{self.library} {self.name}", f"{n} elements")]
        rows += [(f"bug {b}", f"{int(m.sum())} changed") for b, m in sorted(self.by_bug.items())]
        rows += [("all its bugs", f"{int(self.bugs.sum())} changed"),
                 ("its conventions", f"{int(self.convention.sum())} differ from the spec")]
        width = max(len(k) for k, _ in rows)
        return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)


def _values(q: Quantized, dtype: Any = None) -> np.ndarray:
    return np.asarray(q.dequantize(dtype) if dtype is not None else q.dequantize(),
                      np.float64)


def _differ(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    same = (a == b) & (np.signbit(a) == np.signbit(b))
    return ~(same | (np.isnan(a) & np.isnan(b)))


def _spec_row(recipe: Recipe) -> Recipe:
    from ._recipes import recipe as build

    elem = recipe.element.name
    if recipe.name == "fp8":
        scaling = "tensor" if recipe.scaling == "tensor" else "channel"
        return build("spec", "fp8", element=elem if elem in ("e4m3", "e5m2") else "e4m3",
                     scaling=scaling)
    if recipe.name == "nvfp4":
        return build("spec", "nvfp4")
    return build("spec", recipe.name, element=elem)


@quiet
def recipe_report(x: Any, recipe: Recipe, *, axis: Any = None) -> RecipeReport:
    """Quantize ``x`` by a library's ``recipe`` (:func:`fpsim.quant.recipe`)
    with and without each of its bugs, and by the specification's row of the
    same name: a :class:`RecipeReport` of the elements each changes.

    >>> import numpy as np
    >>> from fpsim import quant
    >>> x = np.zeros((2, 32), np.float32)
    >>> x[0, :2] = [2.0**-126, -2.0**-127]     # a k = -127 block: torchao halves it
    >>> x[1, :2] = [1.75, 0.75]
    >>> print(quant.recipe_report(x, quant.recipe("torchao", "mxfp4")))
    torchao mxfp4         64 elements
    bug divisor_floor     2 changed
    bug nan_element_bits  0 changed
    all its bugs          2 changed
    its conventions       0 differ from the spec
    """
    if not isinstance(recipe, Recipe) or recipe.element is None:
        raise TypeError("recipe_report(): recipe must be a Recipe of fpsim.quant.recipe(...)")
    q = quantize(x, recipe, axis=axis)
    out = q.input_format if recipe.output in (None, "input") else None
    mine = _values(q)
    dtype = None if recipe.dequant is None else (recipe.output if recipe.output not in (
        None, "input") else (out.name if out is not None else None))
    from ._recipes import keep_bugs

    by_bug = {bug: _differ(mine, _values(quantize(x, keep_bugs(recipe, recipe.bugs - {bug}),
                                                  axis=axis), dtype))
              for bug in sorted(recipe.bugs)}
    clean_values = _values(quantize(x, keep_bugs(recipe, frozenset()), axis=axis), dtype)
    spec = _values(quantize(x, _spec_row(recipe), axis=axis))
    if dtype is not None:       # the spec's exact values rounded once to the output format
        fmt = array.value_dtype(dtype)
        with np.errstate(over="ignore", invalid="ignore"):
            spec = spec.astype(fmt).astype(np.float64)
    return RecipeReport(recipe.library, recipe.name or "", by_bug,
                        _differ(mine, clean_values), _differ(clean_values, spec))
