"""Element formats of a quantization: the floating-point formats of
:mod:`fpsim.formats`, and two's complement integers (:class:`IntFormat`),
which no sign-magnitude :class:`Format` describes: the plain integers
:data:`INT8`, :data:`INT4`, :data:`INT2` and :data:`INT1`, and OCP MX's
:data:`MXINT8` (an 8-bit integer with an implicit scale of 2**-6).

Rounding into an integer element is saturating (integers have no infinity
and no NaN) with the call's rounding mode.  The golden path is
:meth:`IntFormat.round` (one exact value, through the rounding kernel's
:func:`fpsim.rounding.quantize`); :meth:`IntFormat.round_array` rounds an
array through the array engine and gives the same codes (tests prove it
over every FP16 code, random FP32 codes and every mode, stochastic rounding
included with the same random numbers)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy as np

from .. import array
from .. import parse as _parse
from .._errstate import quiet
from ..context import Context, getcontext
from ..formats import FP64, Format, Specials
from ..formats import format as _lookup
from ..modes import Rounding
from ..rounding import check_random_bits
from ..rounding import quantize as _quantize_to_multiple
from ..value import Float


@dataclass(frozen=True)
class IntFormat:
    """A two's complement integer element with an implicit power-of-two
    scale: code ``k`` (an int8 for up to 8 bits) has the value
    ``k × 2**-frac_bits``.  The codes run from ``-2**(bits-1)`` to
    ``2**(bits-1) - 1`` (full range), or from ``-(2**(bits-1) - 1)`` with
    ``symmetric=True`` (the most negative code left unused, as OCP MX v1.0
    §5.3.4 allows for INT8 and Microsoft's MX emulation library does).

    >>> [(int(f.min), int(f.max)) for f in (INT8, INT4, INT2, INT1, INT8_SYM)]
    [(-128, 127), (-8, 7), (-2, 1), (-1, 0), (-127, 127)]
    >>> MXINT8.min, MXINT8.max, MXINT8.emax
    (Fraction(-2, 1), Fraction(127, 64), 0)
    >>> INT8.round(-127.5), INT8.round(-127.5, "rtz"), INT8.round(300), INT8_SYM.round(-300)
    (-128, -127, 127, -127)
    """

    name: str
    bits: int
    frac_bits: int = 0
    symmetric: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.name, str):
            raise TypeError(f"IntFormat: name must be a str, got {type(self.name).__name__}")
        if not isinstance(self.symmetric, (bool, np.bool_)):
            raise TypeError(f"IntFormat: symmetric must be True or False, got "
                            f"{self.symmetric!r}")
        if isinstance(self.bits, bool) or not isinstance(self.bits, int) or not 1 <= self.bits <= 8:
            raise ValueError(f"IntFormat: bits={self.bits!r}; accepted an integer from 1 to 8")
        if isinstance(self.frac_bits, bool) or not isinstance(self.frac_bits, int) or not (
                0 <= self.frac_bits <= 64):
            raise ValueError(f"IntFormat: frac_bits={self.frac_bits!r}; accepted an integer from "
                             "0 to 64")
        if self.symmetric and self.bits < 2:
            raise ValueError("IntFormat: a symmetric 1-bit integer would hold 0 alone; accepted "
                             "symmetric=True for bits >= 2")

    @property
    def max_code(self) -> int:
        return (1 << (self.bits - 1)) - 1

    @property
    def min_code(self) -> int:
        return -(1 << (self.bits - 1)) + (1 if self.symmetric else 0)

    @property
    def max(self) -> Fraction:
        return Fraction(self.max_code, 1 << self.frac_bits)

    @property
    def min(self) -> Fraction:
        return Fraction(self.min_code, 1 << self.frac_bits)

    @property
    def emax(self) -> int:
        """floor(log2(max)): the exponent of the largest binade (OCP MX).
        A ValueError for INT1, whose largest value is 0."""
        if self.max_code <= 0:
            raise ValueError(f"{self.name}: its largest value is 0, so it has no largest binade")
        return (self.max_code.bit_length() - 1) - self.frac_bits

    @property
    def mantissa_bits(self) -> int:
        """The fraction bits of the largest binade (``bits - 2``: its values
        are ``2**emax × (1 + j × 2**-(bits-2))``), as a float format's
        trailing significand bits; what the ``"even"`` MX scale rule rounds
        amax to."""
        return max(self.bits - 2, 0)

    @property
    def grid(self) -> Format:
        """A sign-magnitude format whose values are every multiple of a
        quantum ``Q = 2**(2 - bits)`` up to ``(2**bits - 1) × Q`` in
        magnitude: a single binade of subnormals and one of normals with
        the same quantum (one exponent bit, ``bits - 1`` fraction bits, bias
        0), no specials.  A value times ``2**grid_shift`` rounded into it is
        the value rounded to a multiple of ``2**-frac_bits``."""
        return _grid(self.bits - 1)

    @property
    def grid_shift(self) -> int:
        """The power of two that maps ``2**-frac_bits`` onto the grid's quantum."""
        return self.frac_bits + 2 - self.bits

    def value(self, code: int) -> Fraction:
        """The exact value of a code (an integer in ``[min_code, max_code]``)."""
        if isinstance(code, (bool, np.bool_)) or not isinstance(code, (int, np.integer)):
            raise TypeError(f"{self.name}.value(): code must be an integer in "
                            f"[{self.min_code}, {self.max_code}], got {type(code).__name__} "
                            f"{code!r}")
        k = int(code)
        if not self.min_code <= k <= self.max_code:
            raise ValueError(f"{self.name}: code {code!r} is outside "
                             f"[{self.min_code}, {self.max_code}]")
        return Fraction(k, 1 << self.frac_bits)

    def round(self, x: Any, rounding: Rounding | str = "rne", *, rand: int = 0,
              sr_bits: int = 32) -> int:
        """The code of ``x`` (a real number: int, float, Fraction, Decimal,
        :class:`fpsim.Float`) rounded exactly to a multiple of
        ``2**-frac_bits`` by ``rounding`` (``rne``, ``rna``, ``rtz``, ``rup``,
        ``rdn``, ``rto``, or ``sr`` with the random integer ``rand`` in
        ``[0, 2**sr_bits)``), then saturated to ``[min_code, max_code]``
        (infinities too).  NaN is a ValueError: no integer holds it.

        >>> INT4.round(2.5), INT4.round(2.5, "rna"), INT4.round(-2.5, "rdn"), INT4.round(-9.7)
        (2, 3, -3, -8)
        >>> MXINT8.round(0.1), float(MXINT8.value(MXINT8.round(0.1)))   # 6.4 / 64
        (6, 0.09375)
        """
        mode = Context(rounding=rounding, sr_bits=sr_bits).rounding
        rand = check_random_bits(rand, sr_bits, "rand")
        v = _exact(x)
        if v is None:
            raise ValueError(f"{self.name}.round(): {x!r} is NaN, which no integer holds")
        if isinstance(v, float):  # an infinity
            return self.max_code if v > 0 else self.min_code
        negative = v < 0
        a = -v if negative else v
        k, _ = _quantize_to_multiple(a.numerator, a.denominator, 0, -self.frac_bits, negative,
                                     mode, rand, sr_bits)
        k = -k if negative else k
        return min(max(k, self.min_code), self.max_code)

    @quiet
    def round_array(self, x: Any, rounding: Rounding | str = "rne", *,
                    fmt: Format | str | None = None, ctx: Context | None = None,
                    rng: Any = None, random_bits: Any = None) -> np.ndarray:
        """:meth:`round` on every element of an array (values of a float
        dtype, or codes of ``fmt=``), through the array engine: int8 codes.
        Stochastic rounding takes ``random_bits=`` (one per element) or
        draws from ``rng=``; the flags of rounding to the integer grid
        (INEXACT, and OVERFLOW beyond ``(2**bits - 1) × 2**-frac_bits``) go
        to ``ctx``.  NaN elements are a ValueError.

        >>> INT4.round_array(np.float32([2.5, -2.5, 9.0, -100.0]), "rna").tolist()
        [3, -3, 7, -8]
        """
        from ..ops.operands import Operand

        source = Operand(f"{self.name}.round_array", x, fmt)
        if ctx is None:
            ctx = getcontext()
        settings: dict[str, Any] = {"rounding": rounding}
        if rng is not None:
            settings["rng"] = rng
        if random_bits is not None:
            settings["random_bits"] = random_bits
        if np.isnan(array.decode(source.codes, source.fmt)).any():
            raise ValueError(f"{self.name}.round_array(): a NaN element, which no integer holds")
        return cast(source.codes, source.fmt, self, ctx, **settings)


def _exact(x: Any) -> Fraction | float | None:
    """``x`` as an exact Fraction; ±inf as a float; None for NaN."""
    if isinstance(x, Float):
        if x.is_nan:
            return None
        if x.is_inf:
            return -math.inf if x.is_negative else math.inf
        return x.value
    if isinstance(x, np.floating) and x.dtype.itemsize > 8:
        # np.longdouble, wider than a float (.item() keeps it): its exact ratio
        if np.isnan(x):
            return None
        if np.isinf(x):
            return -math.inf if x < 0 else math.inf
        return Fraction(*x.as_integer_ratio())
    if isinstance(x, (np.floating, np.integer)):
        x = x.item()
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, float, Fraction, Decimal)):
        raise TypeError(f"IntFormat.round(): x must be a real number, got {type(x).__name__}")
    if isinstance(x, float):
        if x != x:
            return None
        if x in (math.inf, -math.inf):
            return x
    if isinstance(x, Decimal):
        # Asked, not compared: a signaling NaN's comparison raises decimal's
        # InvalidOperation.  sNaN and NaN alike are NaN, as a float NaN is.
        if x.is_nan():
            return None
        if x.is_infinite():
            return -math.inf if x.is_signed() else math.inf
        # its exponent may be huge (1e999999999): read as fpsim.parse reads it,
        # at a cost bounded whatever the magnitude
        return _parse.fraction(_parse.exact(x))
    return Fraction(x)


_GRIDS: dict[int, Format] = {}


def _grid(m: int) -> Format:
    grid = _GRIDS.get(m)
    if grid is None:  # (setdefault: one grid per m, whichever thread made it first)
        grid = _GRIDS.setdefault(m, Format(f"int{m + 1}_grid", 1, m, 0, Specials.NONE))
    return grid


# Plain two's complement integers, full range (codes -2**(n-1) .. 2**(n-1) - 1).
INT8 = IntFormat("int8", 8)
INT4 = IntFormat("int4", 4)
INT2 = IntFormat("int2", 2)
#: {-1, 0}: its largest value is 0, so no scale maps a nonzero amax onto it;
#: a cast target, not an element of scaled quantization.
INT1 = IntFormat("int1", 1)
# OCP MX v1.0 §5.3.4: INT8 elements, two's complement, implicit scale 2**-6:
# values -2 .. 1 63/64 (the spec allows leaving -2 unused: MXINT8_SYM).
MXINT8 = IntFormat("mxint8", 8, 6)
INT8_SYM = IntFormat("int8_sym", 8, symmetric=True)
INT4_SYM = IntFormat("int4_sym", 4, symmetric=True)
INT2_SYM = IntFormat("int2_sym", 2, symmetric=True)
MXINT8_SYM = IntFormat("mxint8_sym", 8, 6, symmetric=True)

INT_FORMATS = {f.name: f for f in (INT8, INT4, INT2, INT1, MXINT8, INT8_SYM, INT4_SYM, INT2_SYM,
                                   MXINT8_SYM)}

ElementFormat = Format | IntFormat


def element_format(fmt: Any) -> ElementFormat:
    """A format by name or object: the names of :data:`INT_FORMATS`
    (``"int8"``, ``"int4"``, ``"int2"``, ``"int1"``, ``"mxint8"`` and the
    ``_sym`` variants), or a floating-point format's name."""
    if isinstance(fmt, IntFormat):
        return fmt
    if isinstance(fmt, str) and fmt.strip().lower() in INT_FORMATS:
        return INT_FORMATS[fmt.strip().lower()]
    return _lookup(fmt)


def cast(codes: np.ndarray, src: Format, dst: ElementFormat, ctx: Context,
         **settings: Any) -> np.ndarray:
    """Codes of ``src`` rounded into ``dst`` under ``ctx`` and ``settings``
    (rounding, saturate, rng, random_bits, ...): codes of ``dst`` (int8 for
    an :class:`IntFormat`)."""
    if isinstance(dst, Format):
        return array.convert(codes, src, dst, ctx, **settings)
    grid, shift = dst.grid, dst.grid_shift
    if shift:
        # v × 2**shift, exactly, as FP64 codes: exact but for FP64 values
        # below 2**-1016, which are far below half a quantum: any nonzero
        # value there rounds alike in every mode, so one that underflowed
        # to zero is replaced by the smallest subnormal of its sign.
        v = array.decode(codes, src)
        scaled = np.ldexp(v, shift)
        scaled = np.where((scaled == 0) & (v != 0), np.copysign(5e-324, v), scaled)
        codes, src = np.ascontiguousarray(scaled, np.float64).view(np.uint64), FP64
    # The grid's range (|k| <= 2**bits - 1 quanta) covers the integer range;
    # a value beyond it saturates to the grid's max, then to the integer's.
    settings = {**settings, "saturate": True}
    on_grid = array.decode(array.convert(codes, src, grid, ctx, **settings), grid)
    k = np.rint(np.ldexp(on_grid, dst.bits - 2))  # exact: integers below 2**8
    return np.clip(k, dst.min_code, dst.max_code).astype(np.int8)


def decode(data: np.ndarray, fmt: ElementFormat) -> np.ndarray:
    """The float64 values of element codes (exact)."""
    if isinstance(fmt, Format):
        return array.decode(data, fmt)
    return np.ldexp(data.astype(np.float64), -fmt.frac_bits)
