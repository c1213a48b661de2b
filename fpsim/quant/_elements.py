"""Element formats of a quantization: the floating-point formats of
:mod:`fpsim.formats`, and OCP MX's INT8 (8-bit two's complement integers
with an implicit scale of 2**-6), which no sign-magnitude :class:`Format`
describes.  One cast serves both: values of the scale format rounded into
the element format, saturating or not, through the array engine."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from .. import array
from ..context import Context
from ..formats import Format, Specials
from ..formats import format as _lookup


@dataclass(frozen=True)
class IntFormat:
    """A two's complement integer element with an implicit power-of-two
    scale: code ``k`` (an int8 for 8 bits) has the value ``k × 2**-frac_bits``.

    >>> INT8.max, INT8.min, INT8.emax
    (Fraction(127, 64), Fraction(-2, 1), 0)
    """

    name: str
    bits: int
    frac_bits: int

    @property
    def max(self) -> Fraction:
        return Fraction((1 << (self.bits - 1)) - 1, 1 << self.frac_bits)

    @property
    def min(self) -> Fraction:
        return Fraction(-(1 << (self.bits - 1)), 1 << self.frac_bits)

    @property
    def emax(self) -> int:
        """floor(log2(max)): the exponent of the largest binade (OCP MX)."""
        return (self.max.numerator.bit_length() - 1) - (self.max.denominator.bit_length() - 1)

    @property
    def grid(self) -> Format:
        """A sign-magnitude format whose values are every multiple of
        ``2**-frac_bits`` up to ``(2**bits - 1) × 2**-frac_bits`` in magnitude: a
        single binade of subnormals and one of normals with the same
        quantum, no specials.  Rounding into it rounds to the integer grid."""
        # One exponent bit, m = bits - 1 fraction bits: the quantum is
        # 2**(1 - bias - m), which is 2**-frac_bits for bias = 1 - m + frac_bits.
        m = self.bits - 1
        return _grid(self.name, m, 1 - m + self.frac_bits)


_GRIDS: dict[tuple[str, int, int], Format] = {}


def _grid(name: str, m: int, bias: int) -> Format:
    key = (name, m, bias)
    if key not in _GRIDS:
        _GRIDS[key] = Format(f"{name}_grid", 1, m, bias, Specials.NONE)
    return _GRIDS[key]


# OCP MX v1.0 §5.3.3: INT8 elements, two's complement, implicit scale 2**-6:
# values -2 .. 1 63/64.
INT8 = IntFormat("int8", 8, 6)

ElementFormat = Format | IntFormat


def element_format(fmt: Any) -> ElementFormat:
    """A format by name or object; ``"int8"`` is :data:`INT8`."""
    if isinstance(fmt, IntFormat):
        return fmt
    if isinstance(fmt, str) and fmt.strip().lower() in ("int8", "mxint8"):
        return INT8
    return _lookup(fmt)


def cast(codes: np.ndarray, src: Format, dst: ElementFormat, ctx: Context,
         **settings: Any) -> np.ndarray:
    """Codes of ``src`` rounded into ``dst`` under ``ctx`` and ``settings``
    (rounding, saturate, rng, ...): codes of ``dst`` (int8 for INT8)."""
    if isinstance(dst, Format):
        return array.convert(codes, src, dst, ctx, **settings)
    grid = dst.grid
    # The grid's range (|k| <= 2**bits - 1 quanta) covers the integer range;
    # a value beyond it saturates to the grid's max, then to the integer's.
    settings = {**settings, "saturate": True}
    on_grid = array.decode(array.convert(codes, src, grid, ctx, **settings), grid)
    k = np.rint(on_grid * float(1 << dst.frac_bits))  # exact: integers below 2**9
    lo, hi = -(1 << (dst.bits - 1)), (1 << (dst.bits - 1)) - 1
    return np.clip(k, lo, hi).astype(np.int8 if dst.bits == 8 else np.int64)


def decode(data: np.ndarray, fmt: ElementFormat) -> np.ndarray:
    """The float64 values of element codes (exact)."""
    if isinstance(fmt, Format):
        return array.decode(data, fmt)
    return data.astype(np.float64) / float(1 << fmt.frac_bits)
