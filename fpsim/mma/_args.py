"""One rule for the arguments of the matrix-unit models, the schedules and
the library GEMMs (:mod:`fpsim.mma.schedule`, :mod:`fpsim.mma.library`,
:mod:`fpsim.mma.gemm`, :mod:`fpsim.mma.blockscaled`): types are checked,
never coerced.

* a count (``split_k``, ``split_grain``, ``block``, ...) is an int or a
  numpy integer: a bool is no count, nor is a float (``32.0``), a string or
  a complex number;
* a choice (``epilogue_order``, ``split_reduction``, ...) is one of the
  strings listed: the empty string is none of them;
* a yes-or-no (``fast_accum``, ``merge_from_zero``) is True or False;
* a number (``alpha``, ``beta``, a scale) is a finite int or float (numpy's
  too): not a bool, a string (``"2"``) or a complex number (``2+0j``), and
  an array of numbers has an integer or float dtype.

A wrong type is a :class:`TypeError`, a value out of range a
:class:`ValueError`; each names the owner, the argument, what was given and
what is accepted, on one line.  Nothing falls back to a default: an
argument is None (the default) or is checked.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable
from typing import Any

import numpy as np

from ..array.engine import as_array, check_flag, format_of_dtype

__all__ = ["count", "choice", "flag", "number", "number_array"]

#: A bound on counts of products: far above any GEMM fpsim can run.
MAX_COUNT = 1 << 24


def _short(value: Any) -> str:
    """``repr(value)``, its middle left out where it is long (a huge int)."""
    text = repr(value)
    return text if len(text) <= 80 else text[:60] + "..." + text[-10:]


def _given(value: Any) -> str:
    return f"{type(value).__name__} {_short(value)}"


def count(owner: str, name: str, value: Any, *, low: int = 1, high: int | None = MAX_COUNT,
          optional: bool = False) -> int | None:
    """``value`` as an int in ``[low, high]`` (None passes where
    ``optional``).

    >>> count("Schedule", "split_k", 3)
    3
    >>> count("cutlass()", "split_grain", 0)
    Traceback (most recent call last):
      ...
    ValueError: cutlass(): split_grain must be a positive int (at most 2**24), got 0
    >>> count("block_scaled()", "block", 32.0)
    Traceback (most recent call last):
      ...
    TypeError: block_scaled(): block must be a positive int (at most 2**24), got float 32.0
    """
    if optional and value is None:
        return None
    if low == 1:
        accepted = "a positive int"
    elif low == 0:
        accepted = "a non-negative int"
    else:
        accepted = f"an int >= {low}"
    if high == MAX_COUNT:
        accepted += " (at most 2**24)"
    elif high is not None:
        accepted += f" (at most {high})"
    if optional:
        accepted += " or None"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{owner}: {name} must be {accepted}, got {_given(value)}")
    if value < low or (high is not None and value > high):
        raise ValueError(f"{owner}: {name} must be {accepted}, got {_short(value)}")
    return int(value)


def choice(owner: str, name: str, value: Any, accepted: Iterable[str], *,
           optional: bool = False) -> str | None:
    """``value`` if it is one of the strings ``accepted`` (None passes
    where ``optional``).

    >>> choice("cutlass()", "epilogue_order", "", ("beta_c_first", "alpha_acc_first"))
    Traceback (most recent call last):
      ...
    ValueError: cutlass(): epilogue_order must be one of beta_c_first, alpha_acc_first, got ''
    """
    if optional and value is None:
        return None
    accepted = tuple(accepted)
    listed = "one of " + ", ".join(accepted) + (" or None" if optional else "")
    if not isinstance(value, str):
        raise TypeError(f"{owner}: {name} must be {listed}, got {_given(value)}")
    if value not in accepted:
        raise ValueError(f"{owner}: {name} must be {listed}, got {_short(value)}")
    return value


def flag(owner: str, name: str, value: Any) -> bool:
    """``value`` as a bool if it is True or False (numpy's too): the array
    engine's rule (:func:`fpsim.array.engine.check_flag`), named by its owner."""
    return check_flag(f"{owner}: {name}", value)


def _real(value: Any) -> bool:
    return (isinstance(value, (numbers.Integral, float, np.floating))
            and not isinstance(value, (bool, np.bool_)))


def number(owner: str, name: str, value: Any) -> float:
    """``value`` as a float if it is a finite real number: an int or a
    float (numpy's too, or a 0-d array of one) whose value float64 holds
    exactly (an int beyond 2**53 that float64 would round, a np.longdouble
    with more bits, is refused rather than rounded).

    >>> number("LibraryGEMM", "alpha", 2)
    2.0
    >>> number("LibraryGEMM", "alpha", "2")
    Traceback (most recent call last):
      ...
    TypeError: LibraryGEMM: alpha must be a finite real number (int or float), got str '2'
    """
    accepted = "a finite real number (int or float)"
    if isinstance(value, np.ndarray) and value.shape == () and value.dtype.kind in "iuf":
        value = value[()]
    if not _real(value):
        raise TypeError(f"{owner}: {name} must be {accepted}, got {_given(value)}")
    try:
        x = float(value)
    except OverflowError:  # an int beyond float64
        x = float("inf")
    if not np.isfinite(x):
        raise ValueError(f"{owner}: {name} must be {accepted}, got {_short(value)}")
    if x != value:  # (compared exactly: an int, or a np.longdouble, that float64 rounds)
        raise ValueError(f"{owner}: {name}={_short(value)} is not exact in float64; accepted: "
                         f"{accepted} that float64 holds")
    return x


def number_array(owner: str, name: str, value: Any) -> np.ndarray:
    """``value`` (a number, or an array of an integer or float dtype:
    numpy's, ml_dtypes', a framework's) as a float64 array, each element
    finite.  A bool, a string, a complex number, or an array of them, of
    objects, is a TypeError: nothing is converted to a number."""
    accepted = ("a finite real number (int or float) or an array of them (an integer or "
                "float dtype)")
    if isinstance(value, (bool, np.bool_, str, bytes, complex, np.complexfloating)) or (
            isinstance(value, numbers.Number) and not _real(value)):
        raise TypeError(f"{owner}: {name} must be {accepted}, got {_given(value)}")
    if _real(value):
        a = np.asarray(number(owner, name, value))
    else:
        a = as_array(value)
        kind = a.dtype.kind
        if not (kind in "iuf" or format_of_dtype(a.dtype) is not None) or kind == "b":
            raise TypeError(f"{owner}: {name} must be {accepted}, got an array of dtype "
                            f"{a.dtype}")
        with np.errstate(invalid="ignore", over="ignore"):
            wide = a
            a = a.astype(np.float64)
            if a.dtype != wide.dtype and kind in "iuf" and np.isfinite(a).all() and (
                    a.astype(wide.dtype) != wide).any():
                raise ValueError(f"{owner}: {name} holds values float64 cannot hold exactly "
                                 f"(dtype {wide.dtype}); accepted: {accepted} that float64 "
                                 "holds")
    if not np.isfinite(a).all():
        raise ValueError(f"{owner}: {name} must be {accepted}; it holds a NaN or an infinity")
    return a
