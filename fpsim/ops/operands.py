"""What every reference operator shares: reading its operands (typed arrays
or codes), its declared formats, and delivering its result.

Internal contract (for :mod:`fpsim.ops` and :mod:`fpsim.quant`, whose
recipes take operands as the operators do): ``Operand(op, x, fmt, name)``
reads an input into ``codes``, ``fmt`` and ``typed``; ``declared`` resolves
a declared format and ``default_format`` a ``compute=`` or ``accumulate=``
that may be left to its default; ``deliver`` returns a result as the inputs
came (values of the format's dtype, or codes); ``constant``, ``holds`` and
``Distinct`` (an elementwise computation on each distinct code once) as
documented below.  Anything else here is private."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import array
from ..array.engine import VALUE_DTYPE_NAMES, as_array, check_size, raw_codes
from ..context import Context
from ..formats import FP32, Format
from ..formats import format as _lookup
from ..modes import STOCHASTIC


class Operand:
    """An operator's input: its codes (an unsigned integer array), its
    format, and whether it came as values of a float dtype (then so does the
    result, where the result's format has a dtype)."""

    __slots__ = ("codes", "fmt", "typed")

    def __init__(self, op: str, x: Any, fmt: Format | str | None, name: str = "x") -> None:
        a = as_array(x)
        # Every operator reads (or writes) as many codes as its operand
        # holds: refused from the shape, before any work (a broadcast view
        # of 2**40 elements costs nothing to pass).
        check_size(op, a.shape, a.dtype.itemsize, name)
        given = None if fmt is None else _lookup(fmt)
        if a.dtype.kind in "iu":
            if given is None:
                raise TypeError(f"{op}(): {name} holds integer codes; name their format with "
                                "fmt= (or pass values of a float dtype)")
            self.codes = raw_codes(a, given)  # checked against the format's width
            self.fmt, self.typed = given, False
            return
        if a.dtype.name not in VALUE_DTYPE_NAMES:
            raise TypeError(f"{op}(): {name} has dtype {a.dtype}; accepted float16, float32, "
                            "float64, bfloat16, float8_*, float6_*, float4_e2m1fn (ml_dtypes), "
                            "or integer codes with fmt=")
        own = _lookup(a.dtype.name)
        if given is not None and given != own:
            raise TypeError(f"{op}(): fmt={given.name} disagrees with {name}'s dtype {a.dtype} "
                            f"({own.name}); drop fmt= or pass codes")
        self.codes = raw_codes(a, own)
        self.fmt, self.typed = own, True


def declared(op: str, name: str, fmt: Format | str) -> Format:
    """A format named by one of an operator's keywords."""
    try:
        return _lookup(fmt)
    except (KeyError, ValueError, TypeError) as e:
        raise ValueError(f"{op}(): {name}={fmt!r} is not a format: {e}") from None


def holds(wide: Format, narrow: Format) -> bool:
    """Whether every finite value of ``narrow`` is a value of ``wide``: no
    more precision, no larger maximum, and a smallest quantum that is a
    multiple of ``wide``'s at that magnitude.

    >>> import fpsim
    >>> holds(fpsim.FP32, fpsim.BF16), holds(fpsim.FP32, fpsim.FP16), holds(fpsim.BF16, fpsim.FP16)
    (True, True, False)
    """
    if narrow.signed and not wide.signed:
        return False
    if narrow.precision > wide.precision or narrow.max > wide.max:
        return False
    if narrow.has_zero and not wide.has_zero:
        return False
    # (a format without subnormals has min_subnormal == min_normal)
    return narrow.min_subnormal >= wide.min_subnormal


def default_format(op: str, name: str, given: Format | str | None, fmt: Format) -> Format:
    """The format an operator's ``compute=`` or ``accumulate=`` names, or
    where it is None (the default), FP32, or the input format ``fmt`` itself
    where FP32 does not hold every value of it (FP64): the narrowest default
    that keeps every input value exact.

    >>> import fpsim
    >>> default_format("sum", "accumulate", None, fpsim.FP16).name
    'fp32'
    >>> default_format("sum", "accumulate", None, fpsim.FP64).name
    'fp64'
    >>> default_format("sum", "accumulate", "bf16", fpsim.FP64).name
    'bf16'
    """
    if given is not None:
        return declared(op, name, given)
    return FP32 if holds(FP32, fmt) else fmt


def constant(value: float, fmt: Format) -> np.ndarray:
    """A formula's constant rounded to nearest even into ``fmt``, as a 0-d
    array of codes (no flags: a compiled kernel rounds it once, before it
    runs)."""
    return array.encode(np.array(value, np.float64), fmt, Context(rounding="rne"))


def deliver(codes: np.ndarray, fmt: Format, typed: bool) -> np.ndarray:
    """Codes of ``fmt`` as values of its dtype when the inputs were values
    and the dtype exists, else as codes."""
    dt = array.value_dtype(fmt) if typed else None
    return codes.view(dt) if dt is not None else codes


class Distinct:
    """An elementwise computation on many codes of a narrow format, done on
    each distinct code once: ``Distinct.of(codes, fmt, key)`` is None where
    that does not pay (or is not the same computation), else an object whose
    ``codes`` are the distinct codes present (ascending) and whose
    ``spread(results)`` gives every element the result of its code.

    The bits are those of computing every element (an element's result
    depends on its code alone), and so are the call's flags: an element's
    flags are its code's, and the OR over the distinct codes is the OR over
    the elements.  Not under stochastic rounding, where every element draws
    its own random numbers.  It pays from :data:`RATIO` elements per
    possible code (the work then runs on at most ``2**width`` elements and
    one lookup spreads it).

    >>> import numpy as np, fpsim
    >>> x = np.array([3, 1, 3, 3, 1, 1, 1, 3] * 128, np.uint8)
    >>> d = Distinct.of(x, fpsim.E4M3, fpsim.Context()._key)
    >>> d.codes.tolist(), d.spread(d.codes * 2)[:4].tolist()
    ([1, 3], [6, 2, 6, 6])
    """

    RATIO = 4

    def __init__(self, codes: np.ndarray, width: int) -> None:
        present = np.zeros(1 << width, bool)
        present[codes.reshape(-1)] = True
        self.width = width
        self.all = codes
        self.codes = np.flatnonzero(present).astype(codes.dtype)

    @classmethod
    def of(cls, codes: np.ndarray, fmt: Format, key: tuple[Any, ...]) -> Distinct | None:
        if fmt.width > 16 or codes.size < cls.RATIO << fmt.width or key[0] in STOCHASTIC:
            return None
        return cls(codes, fmt.width)

    def spread(self, results: np.ndarray) -> np.ndarray:
        """``results`` (one per distinct code) given to every element."""
        table = np.zeros(1 << self.width, results.dtype)
        table[self.codes] = results
        return table[self.all]
