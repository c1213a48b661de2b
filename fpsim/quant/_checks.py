"""Checks of the quantization recipes' parameters, made where they enter
(the constructor or the call), before any step runs: a bad argument raises
a TypeError (wrong type) or ValueError (wrong value) that names it and says
what is accepted, and raises no flag into the context."""

from __future__ import annotations

import numbers
from decimal import Decimal
from typing import Any

import numpy as np

from ..array.engine import VALUE_DTYPE_NAMES, as_array, check_rng, check_size
from ..context import Context
from ..formats import FP32
from ..value import Float

__all__ = ["real", "fp32_value", "positive_int", "settings", "rng", "float_values", "real_array"]


def real(op: str, name: str, value: Any) -> Any:
    """``value`` if it is a real number (int, float, Fraction, Decimal, numpy
    number or 0-d array; not a bool or a string), else TypeError."""
    if isinstance(value, np.ndarray) and value.shape == () and value.dtype.kind in "iuf":
        value = value[()]
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Real, Decimal)):
        raise TypeError(f"{op}: {name} must be a real number, got {type(value).__name__} "
                        f"{value!r}")
    return value


def fp32_value(op: str, name: str, value: Any, accepted: str,
               test: Any = lambda v: v > 0) -> Float:
    """``value`` rounded once into FP32 (to nearest even), as GradScaler
    holds its scale and factors; ValueError unless that FP32 value is finite
    and passes ``test`` (default: positive), with ``accepted`` saying what is."""
    x = FP32.round(real(op, name, value), Context())
    if not x.is_finite or not test(x):
        raise ValueError(f"{op}: {name}={value!r} (FP32 value {x}); accepted {accepted}")
    return x


def positive_int(op: str, name: str, value: Any, low: int = 1) -> int:
    """``value`` as an int if it is an integer (numpy's too) of at least ``low``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{op}: {name} must be an integer, got {type(value).__name__} "
                        f"{value!r}")
    if value < low:
        raise ValueError(f"{op}: {name}={value!r}; accepted an integer >= {low}")
    return int(value)


def settings(rounding: Any, saturate: Any) -> None:
    """The element cast's ``rounding`` and ``saturate``, checked as a
    :class:`~fpsim.Context` checks them (the messages name the setting and
    list what is accepted)."""
    Context(rounding=rounding, saturate=saturate)


def rng(value: Any) -> None:
    """An ``rng=`` for stochastic rounding: None, an int seed >= 0, or a
    numpy Generator."""
    if value is not None:
        check_rng(value)


def float_values(op: str, name: str, x: Any) -> np.ndarray:
    """``x`` as a float64 array: values of an integer, bool or float dtype
    (numpy's and ml_dtypes'), or Python numbers; not strings, complex
    numbers or masked arrays, which float64 would read loosely, lossily or
    without their mask.  (Values float64 cannot hold, np.longdouble's and
    Python numbers beyond its range or precision, are rounded into it:
    :func:`real_array` gives them as they are.)"""
    return real_array(op, name, x).astype(np.float64)


def real_array(op: str, name: str, x: Any) -> np.ndarray:
    """``x`` as a numpy array of real numbers, checked as
    :func:`float_values` checks it, not converted: an integer, bool or
    float dtype (np.longdouble too), or an object array of Python numbers.  Refused
    from its shape, before any work, where its float64 values would not fit this
    machine's memory (a broadcast view costs nothing to pass)."""
    a = as_array(x)
    check_size(op.removesuffix("()"), a.shape, 8, name)
    kind = a.dtype.kind
    if kind == "O":
        loose = [v for v in a.flat if isinstance(v, (str, bytes)) or not isinstance(
            v, (numbers.Real, Decimal))]
        if not loose:
            return a
    elif kind in "biuf" or a.dtype.newbyteorder("=").name in VALUE_DTYPE_NAMES:
        return a
    raise TypeError(f"{op}: {name} has dtype {a.dtype}; accepted real numbers (a float, "
                    "integer or bool array, or a sequence of Python numbers)")
