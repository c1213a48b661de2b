"""Reading a call's operands: checking dtypes and shapes, and turning every
element into its exact value as float64 (exact for every input and output
format of a matrix unit: at most 24 significand bits, exponents far inside
float64's range)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import array as _array
from ..formats import Format
from ..formats import format as _lookup

__all__ = ["read_inputs", "read_addend", "codes_formats"]


def _accepted(fmt: Format) -> str:
    dt = _array.value_dtype(fmt)
    if dt is not None:
        return f"arrays of dtype {dt.name}, or unsigned integer codes with fmt={fmt.name!r}"
    return (f"float32 arrays whose values are exact in {fmt.name}, or unsigned integer codes "
            f"with fmt={fmt.name!r}")


def _values(x: Any, fmt: Format, label: str, codes: bool) -> np.ndarray:
    """The exact float64 values of operand ``x`` of format ``fmt``."""
    a = _array.engine.as_array(x)
    _array.engine.check_size("mma", a.shape, 8, label)  # as float64, before any work
    if codes:
        if a.dtype.kind not in "iu":
            raise TypeError(f"{label}: fmt= says integer codes of {fmt.name}, got dtype {a.dtype}")
        return _array.decode(a, fmt)
    if a.dtype.kind in "iu":
        raise TypeError(f"{label}: integer array given without fmt=; accepted: {_accepted(fmt)}")
    dt = _array.value_dtype(fmt)
    if dt is not None:
        if a.dtype.newbyteorder("=") != dt:
            raise TypeError(f"{label}: dtype {a.dtype} is not {fmt.name}; accepted: "
                            f"{_accepted(fmt)}")
        with np.errstate(invalid="ignore"):
            return a.astype(np.float64)
    # A format without a numpy dtype (TF32): float32 values that it holds exactly.
    if a.dtype != np.float32:
        raise TypeError(f"{label}: dtype {a.dtype} cannot hold {fmt.name}; accepted: "
                        f"{_accepted(fmt)}")
    drop = 23 - fmt.mantissa_bits
    bits = a.view(np.uint32)
    finite = np.isfinite(a)
    if np.any(finite & ((bits & np.uint32((1 << drop) - 1)) != 0)):
        raise ValueError(f"{label}: float32 values that are not exact in {fmt.name} (the low "
                         f"{drop} fraction bits must be zero)")
    with np.errstate(invalid="ignore"):  # (a signaling NaN widens quietly, as above)
        return a.astype(np.float64)


def codes_formats(codes_fmt: Any, fa: Format, fb: Format) -> tuple[Format, Format] | None:
    """The formats ``fmt=`` names for the codes of ``a`` and ``b`` (one name
    for both, or a pair ``(a's, b's)``), checked against the model's; None
    when ``fmt`` is None (the operands are values)."""
    if codes_fmt is None:
        return None
    pair = tuple(codes_fmt) if isinstance(codes_fmt, (tuple, list)) else (codes_fmt, codes_fmt)
    if len(pair) != 2:
        raise ValueError(f"fmt= names one format or a pair (a's, b's); got {codes_fmt!r}")
    got = (_lookup(pair[0]), _lookup(pair[1]))
    if got != (fa, fb):
        said = got[0].name if got[0] == got[1] else f"({got[0].name!r}, {got[1].name!r})"
        want = repr(fa.name) if fa == fb else f"({fa.name!r}, {fb.name!r})"
        raise ValueError(f"fmt={said} does not match the model's input formats: fmt={want}")
    return got


def read_inputs(a: Any, b: Any, fmt: Format, codes_fmt: Any,
                fmt_b: Format | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``a`` (of ``fmt``) and ``b`` (of ``fmt_b``, default ``fmt``) as
    float64 arrays of the same shape ``(..., K)``."""
    fb = fmt if fmt_b is None else fmt_b
    codes = codes_formats(codes_fmt, fmt, fb) is not None
    av = _values(a, fmt, "a", codes)
    bv = _values(b, fb, "b", codes)
    if av.ndim == 0 or av.shape != bv.shape:
        raise ValueError(f"a and b must have the same shape (..., K); got {av.shape} and "
                         f"{bv.shape}")
    return av, bv


def read_addend(c: Any, out: Format, rows: tuple[int, ...]) -> np.ndarray:
    """``c`` as float64 of shape ``rows`` (a scalar or None broadcast; None
    is +0).  Integer arrays are read as codes of the output format."""
    if c is None:
        return np.zeros(rows)
    cv = _array.engine.as_array(c)
    if cv.dtype.kind in "iu":
        values = _array.decode(cv, out)
    elif type(c) in (float, int):  # a Python number: any value exact in the output format
        try:
            values = np.asarray(float(c))
        except OverflowError:  # an int beyond float64: beyond every output format
            raise ValueError(f"c={c!r} is not exact in {out.name}") from None
        with np.errstate(over="ignore"):
            held = np.asarray(float(c), _array.value_dtype(out)).astype(np.float64)
        if not (held == values or np.isnan(values)):
            raise ValueError(f"c={c!r} is not exact in {out.name}")
    else:
        dt = _array.value_dtype(out)
        if dt is not None and cv.dtype.newbyteorder("=") != dt:
            # (integers are codes here, without fmt=)
            raise TypeError(f"c: dtype {cv.dtype} is not {out.name}; accepted: arrays of dtype "
                            f"{dt.name}, unsigned integer codes of {out.name}, or a Python "
                            f"number exact in {out.name}")
        values = _values(cv, out, "c", False)
    if values.shape != rows:
        try:
            values = np.broadcast_to(values, rows)
        except ValueError:
            raise ValueError(f"c must have the outputs' shape {rows} (or one that broadcasts "
                             f"to it); got {values.shape}") from None
    return values
