"""Elementwise IEEE arithmetic and comparisons on arrays: :mod:`fpsim.arith`
applied to every element, for every format up to FP64.

Each operation runs in chunks along one of three paths, all proven equal
to the scalar model code for code and flag for flag:

* the integer path (:mod:`fpsim.array._chunks`): the operands' codes
  decoded, every element's exact result computed as
  ``(negative, sig, exp, sticky)`` (see :mod:`fpsim.array._kernel`) with
  uint64/int64 integer arithmetic (FP64's products in two words,
  :mod:`fpsim.array._int128`), and rounded all at once through the
  vectorized kernel;
* the floating-point paths (:mod:`fpsim.array._floatpaths`): a table of
  every operand pair for formats of at most 8 bits; float32/float64
  results with their exact errors for FP16, BF16 and FP32; FP64's own
  float64 arithmetic with TwoSum, Dekker's product and exact remainders
  (:mod:`fpsim.array._fp64`); each gives the lanes it cannot prove to the
  integer path;
* the scalar model, element by element, for settings the integers cannot
  hold.

The integers must hold the bits the rounding reads.  Products are exact (a
format of precision ``p <= 31`` has products below 2**62; FP64's are held
in 128 bits).  Sums, quotients and roots keep ``p + 1`` bits or more and a
sticky bit, and stochastic rounding also needs the ``sr_bits`` bits below
the last place: sums, quotients and fma need ``p + sr_bits <= 60``, square
roots (whose radicand holds twice the root's bits) ``p + sr_bits <= 30``,
FP64's square roots a deterministic mode.  A setting outside these bounds
(e.g. FP32 with ``sr_bits > 36``, FP64 under stochastic rounding with more
than 6 random bits, or ``sqrt`` under stochastic rounding with the default
32 random bits) is computed by the scalar model, element by element: the
same results, at scalar speed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .. import _machine, _threads
from .._errstate import quiet
from ..context import Context, resolve
from ..formats import FP16, FP32, FP64, Format
from ..formats import format as _lookup
from ..modes import STOCHASTIC, Rounding
from ..rounding import INEXACT, INVALID
from . import _native as native
from ._chunks import _CHUNK_OPS, _scalar_chunk, _wide
from ._floatpaths import _float_op, _table_op
from ._kernel import I64, U8, U64, fields
from .engine import (
    DEFAULT_CHUNK,
    VALUE_DTYPE_NAMES,
    as_array,
    check_codes,
    check_flag,
    check_size,
    code_dtype,
    codes_of,
    raw_codes,
    run_chunks,
    stochastic_bits,
    value_dtype,
)

__all__ = ["add", "add_sequence", "sub", "mul", "div", "fma", "sqrt",
           "eq", "ne", "lt", "le", "gt", "ge", "unordered"]

# The width of the aligned significands of a sum: the larger operand is
# placed at bits 61..(62 - its length), so a sum of two fits an int64.
# -- operands ---------------------------------------------------------------------------------

class _Operands:
    """The operands of one call: their format, the result's shape, flat
    views (or broadcast copies) of each, and what the result is made of."""

    def __init__(self, op: str, xs: tuple[Any, ...], fmt: Format | str | None) -> None:
        arrays = [as_array(x) for x in xs]
        typed = [a for a in arrays if a.dtype.kind not in "iu"]
        if typed and len(typed) < len(arrays):
            raise TypeError(f"{op}() operands mix values ({typed[0].dtype}) and integer codes; "
                            "pass all as values of one dtype or all as codes with fmt=")
        given = None if fmt is None else _lookup(fmt)
        if typed:
            own = [_dtype_format(op, a.dtype) for a in typed]
            if any(f != own[0] for f in own[1:]):
                names = " and ".join(sorted({f.name for f in own}))
                raise TypeError(f"{op}() operands are in different formats ({names}); convert "
                                f"first, e.g. fpsim.array.round(x, {own[0].name!r})")
            if given is not None and given != own[0]:
                raise TypeError(f"fmt={given.name} disagrees with the operands' dtype "
                                f"{typed[0].dtype} ({own[0].name}); drop fmt= or pass codes")
            given = own[0]
        elif given is None:
            raise TypeError(f"{op}() on integer codes needs fmt= naming their format "
                            "(or pass values of a float dtype)")
        if given.width > 64 or given.precision > 53:
            raise ValueError(f"array arithmetic supports formats up to 64 bits of precision "
                             f"up to 53 (FP64); {given.name} is {given.width} bits (use the "
                             "scalar model, fpsim.arith)")
        try:
            shape = np.broadcast_shapes(*(a.shape for a in arrays))
        except ValueError:
            shapes = ", ".join(str(a.shape) for a in arrays)
            raise ValueError(f"{op}() operands could not be broadcast together: shapes "
                             f"{shapes}") from None
        # refused from the shape, before any work (a broadcast view costs nothing)
        check_size(op, shape, code_dtype(given).itemsize, "the operands, broadcast,")
        self.fmt: Format = given
        self.shape: tuple[int, ...] = shape
        self.size = int(np.prod(shape, dtype=np.int64))
        self.result_dtype = value_dtype(given) if typed else code_dtype(given)
        self.flats = [_flat(a, shape, given) for a in arrays]

    def chunk(self, start: int, stop: int) -> list[np.ndarray]:
        """The operands of elements ``start:stop`` (values or codes, as given)."""
        out = []
        for a in self.flats:
            if a.size == 1:
                out.append(np.broadcast_to(a, (stop - start,)))
            else:
                out.append(a[start:stop])
        return out


def _dtype_format(op: str, dtype: np.dtype) -> Format:
    if dtype.name not in VALUE_DTYPE_NAMES:
        raise TypeError(f"{op}() cannot compute on dtype {dtype}: accepted "
                        f"{', '.join(n for n in VALUE_DTYPE_NAMES if n != 'float64')}, "
                        "or integer codes with fmt=")
    return _lookup(dtype.name)


def _flat(a: np.ndarray, shape: tuple[int, ...], fmt: Format) -> np.ndarray:
    """All the codes of one operand as uint64, flat: one element where it
    broadcasts from a single value, else the broadcast array (copied only
    where broadcasting needs it)."""
    if a.size == 1:
        return codes_of(a.reshape(1), fmt)
    if a.shape != shape:
        a = np.broadcast_to(a, shape)
    flat = a.reshape(-1)
    if flat.dtype.kind in "iu":
        check_codes(flat, fmt)  # before any work, so that no flag is raised
    return flat


# -- the driver -------------------------------------------------------------------------------

def _run(op: str, xs: tuple[Any, ...], ctx: Context | None, fmt: Format | str | None,
         random_bits: Any, rng: Any, return_flags: bool, chunk_size: int,
         overrides: dict[str, Any], workers: int | None = None) -> Any:
    """Apply ``_CHUNK_OPS[op]`` chunk by chunk (on up to ``workers``
    threads, except under stochastic rounding, whose random numbers are
    drawn in element order), OR the flags into the context."""
    _threads.check_workers(op, workers)
    operands = _Operands(op, xs, fmt)
    fmt = operands.fmt
    ctx, key = resolve(ctx, overrides)
    bits = stochastic_bits(key, random_bits, rng, ctx, operands.shape)
    if _fits(op, fmt, key):
        compute = None
        if bits is None:
            compute = (_table_op(op, fmt, key)
                       or _float_op(op, fmt, key, operands.size, return_flags))
        if compute is None:
            chunk_op = _CHUNK_OPS[op]
            compute = lambda cs, rand: chunk_op(fmt, _wide(cs), key, rand)  # noqa: E731
    else:
        compute = lambda cs, rand: _scalar_chunk(op, fmt, cs, key, rand)  # noqa: E731

    def chunk(start: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
        rand = bits(start, stop) if bits is not None else None
        return compute([raw_codes(c, fmt, check=False) for c in operands.chunk(start, stop)],
                       rand)

    result = run_chunks(operands.size, operands.shape, code_dtype(fmt), chunk_size, chunk, ctx,
                        return_flags, workers if bits is None else 1)
    if return_flags:
        return result[0].view(operands.result_dtype), result[1]
    return result.view(operands.result_dtype)


def _fits(op: str, fmt: Format, key: tuple[Any, ...]) -> bool:
    """Whether the vectorized integers hold every bit the rounding reads
    (see the module's docstring); otherwise the scalar model computes."""
    p = fmt.precision
    extra = key[5] + 1 if key[0] in STOCHASTIC else 0
    if p > 31:
        # FP64: products in two words (fpsim.array._int128); the root from
        # float64's own, exact with its remainder, in deterministic modes.
        if op == "sqrt":
            return extra == 0 and p <= 53 and _machine.float64_ops_are_ieee()
        return p <= 53 and p + extra <= 60
    if op == "sqrt":
        return p + extra <= 30
    if op == "fma":
        return 2 * p <= 60 and p + extra <= 60
    if op == "mul":
        return True
    return p + extra <= 60


# -- the public operations ---------------------------------------------------------------------

_SETTINGS_DOC = """
    Operands are arrays of one format: values of its numpy/ml_dtypes dtype
    (float16, float32, bfloat16, float8_*), giving a result of that dtype, or
    integer codes with ``fmt=``, giving codes.  Shapes broadcast as in numpy.
    Settings as in the scalar model (``ctx=`` and keyword overrides
    ``rounding=``, ``saturate=``, ``ftz=``, ``daz=``, ``tininess=``,
    ``sr_bits=``, ``nan=``); stochastic rounding takes ``random_bits=`` or
    ``rng=`` as :func:`fpsim.array.encode` does, one number per result
    element in C order.  Flags are ORed into the context;
    ``return_flags=True`` also returns per-element flags (uint8).
"""


@quiet
def add(x: Any, y: Any, ctx: Context | None = None, *, fmt: Format | str | None = None,
        random_bits: Any = None, rng: Any = None, return_flags: bool = False,
        chunk_size: int = DEFAULT_CHUNK, workers: int | None = None,
        **overrides: Any) -> Any:
    """``x + y`` elementwise, each rounded once (:func:`fpsim.arith.add`).

    >>> import numpy as np
    >>> add(np.array([1.0, 65504.0], np.float16), np.float16(2.0**-11)).tolist()  # ties to even
    [1.0, 65504.0]
    >>> codes, flags = add(np.array([0x7e], np.uint8), np.array([0x08], np.uint8),
    ...                    fmt="e4m3", return_flags=True)   # 448 + 2**-6: inexact
    >>> hex(codes[0]), fpsim.Flag(int(flags[0])).names()
    ('0x7e', ['inexact'])
    """
    return _run("add", (x, y), ctx, fmt, random_bits, rng, return_flags, chunk_size,
                overrides, workers)


@quiet
def add_sequence(terms: Any, ctx: Context | None = None, *, fmt: Format | str | None = None,
                 initial: Any = None, rng: Any = None, **overrides: Any) -> Any:
    """The sum of ``terms`` along their first axis, one term at a time in
    order, each sum rounded: ``((initial + terms[0]) + terms[1]) + ...``
    (``initial`` of the same format, broadcasting to one term; +0 by
    default); the same codes and flags as the loop
    ``acc = add(acc, terms[i])`` from ``acc = initial``, which is how it is
    computed, except that in round-to-nearest-even (no ftz, no daz) FP32
    and FP64 sums use the machine's float32 or float64 addition where it is
    IEEE's, with TwoSum
    deciding INEXACT, and FP16 sums the exact float64 sum rounded by numpy's
    float16 cast where that is IEEE's (both checked on each call; results
    that are not finite are redone step by step).

    >>> import numpy as np
    >>> t = np.float32([[1.0, 2.0**24], [2.0**-24, 1.0], [2.0**-24, 1.0]])
    >>> add_sequence(t).tolist()       # 1 + 2**-24 ties to even, twice; 2**24 + 1 too
    [1.0, 16777216.0]
    >>> add_sequence(np.float16([[-0.0]])).tolist()   # +0 + -0 is +0
    [0.0]
    """
    ops = _Operands("add_sequence", (terms,), fmt)
    if len(ops.shape) == 0:
        raise ValueError("add_sequence() needs terms with at least one axis (the axis summed)")
    fmt = ops.fmt
    ctx, key = resolve(ctx, overrides)
    stochastic_bits(key, None, rng, ctx, ops.shape)  # rng= outside SR is an error, as in add()
    codes = raw_codes(ops.flats[0], fmt, check=False).reshape(ops.shape)
    acc = np.zeros(ops.shape[1:], code_dtype(fmt))
    if initial is not None:
        start = _Operands("add_sequence", (initial,), fmt)
        if start.result_dtype != ops.result_dtype:  # one typed, the other codes
            raise TypeError("add_sequence(): give terms and initial both as values of one "
                            "dtype or both as codes")
        try:
            acc[...] = raw_codes(start.flats[0], fmt, check=False).reshape(start.shape)
        except ValueError:
            raise ValueError(f"add_sequence(): initial of shape {start.shape} does not "
                             f"broadcast to a term's shape {ops.shape[1:]}") from None
    done = None
    if key[0] is Rounding.RNE and not key[2] and not key[3]:
        if fmt == FP32 and native.float32_adds_are_ieee():
            done = native.running_sum(codes.view(np.float32), acc.view(np.float32))
        elif fmt == FP64 and _machine.float64_ops_are_ieee():
            done = native.running_sum(codes.view(np.float64), acc.view(np.float64))
        elif fmt == FP16 and native.float16_casts_are_ieee():
            done = native.running_sum_fp16(codes.view(np.float16), acc.view(np.float16))
        if done is not None:
            total, inexact = done
            if inexact:
                ctx._flags[0] |= INEXACT
            return total.view(code_dtype(fmt)).view(ops.result_dtype)
    for term in codes:
        acc = add(acc, term, ctx, fmt=fmt, rng=rng, **overrides)
    return acc.view(ops.result_dtype)


@quiet
def sub(x: Any, y: Any, ctx: Context | None = None, *, fmt: Format | str | None = None,
        random_bits: Any = None, rng: Any = None, return_flags: bool = False,
        chunk_size: int = DEFAULT_CHUNK, workers: int | None = None,
        **overrides: Any) -> Any:
    """``x - y`` elementwise (:func:`fpsim.arith.sub`).

    >>> import numpy as np
    >>> sub(np.float16([1.0]), np.float16([1.0]), rounding="rdn").tolist()  # toward -inf: -0
    [-0.0]
    """
    return _run("sub", (x, y), ctx, fmt, random_bits, rng, return_flags, chunk_size,
                overrides, workers)


@quiet
def mul(x: Any, y: Any, ctx: Context | None = None, *, fmt: Format | str | None = None,
        random_bits: Any = None, rng: Any = None, return_flags: bool = False,
        chunk_size: int = DEFAULT_CHUNK, workers: int | None = None,
        **overrides: Any) -> Any:
    """``x × y`` elementwise (:func:`fpsim.arith.mul`).

    >>> import ml_dtypes, numpy as np                # 16 × 30 = 480: no inf in E4M3
    >>> x = np.array([16, 16], ml_dtypes.float8_e4m3fn)
    >>> mul(x, np.array([30, 28], ml_dtypes.float8_e4m3fn)).astype(float).tolist()
    [nan, 448.0]
    """
    return _run("mul", (x, y), ctx, fmt, random_bits, rng, return_flags, chunk_size,
                overrides, workers)


@quiet
def div(x: Any, y: Any, ctx: Context | None = None, *, fmt: Format | str | None = None,
        random_bits: Any = None, rng: Any = None, return_flags: bool = False,
        chunk_size: int = DEFAULT_CHUNK, workers: int | None = None,
        **overrides: Any) -> Any:
    """``x / y`` elementwise (:func:`fpsim.arith.div`).

    >>> import numpy as np
    >>> div(np.float16([1.0, 1.0, 0.0]), np.float16([3.0, 0.0, 0.0])).tolist()
    [0.333251953125, inf, nan]
    """
    return _run("div", (x, y), ctx, fmt, random_bits, rng, return_flags, chunk_size,
                overrides, workers)


@quiet
def fma(x: Any, y: Any, z: Any, ctx: Context | None = None, *,
        fmt: Format | str | None = None, random_bits: Any = None, rng: Any = None,
        return_flags: bool = False, chunk_size: int = DEFAULT_CHUNK, workers: int | None = None,
        **overrides: Any) -> Any:
    """``x × y + z`` elementwise with one rounding (:func:`fpsim.arith.fma`).

    >>> import numpy as np
    >>> x = np.float16([1 + 2**-10]); y = np.float16([1 - 2**-11])
    >>> fma(x, y, np.float16([-1.0])).tolist()     # exact 2**-11 - 2**-21, one rounding
    [0.0004878044128417969]
    """
    return _run("fma", (x, y, z), ctx, fmt, random_bits, rng, return_flags, chunk_size,
                overrides, workers)


@quiet
def sqrt(x: Any, ctx: Context | None = None, *, fmt: Format | str | None = None,
         random_bits: Any = None, rng: Any = None, return_flags: bool = False,
         chunk_size: int = DEFAULT_CHUNK, workers: int | None = None,
         **overrides: Any) -> Any:
    """Square root elementwise (:func:`fpsim.arith.sqrt`).

    >>> import numpy as np
    >>> sqrt(np.float16([2.0, -0.0, -1.0])).tolist()
    [1.4140625, -0.0, nan]
    """
    return _run("sqrt", (x,), ctx, fmt, random_bits, rng, return_flags, chunk_size,
                overrides, workers)


# The shared paragraph on operands and settings goes before each example.
# (Under ``python -OO`` there are no docstrings to edit.)
for _f in (add, sub, mul, div, fma, sqrt):
    if _f.__doc__ is not None:
        _f.__doc__ = _f.__doc__.replace("\n\n    >>>", "\n" + _SETTINGS_DOC + "\n    >>>", 1)


# -- comparisons -----------------------------------------------------------------------------

def _compare(op: str, x: Any, y: Any, ctx: Context | None, fmt: Format | str | None,
             signaling: bool, return_flags: bool, chunk_size: int,
             accept: tuple[int, ...]) -> Any:
    """The comparison ``op`` elementwise: true where the order (-1, 0, 1, or
    2 for unordered) is in ``accept``; INVALID as :func:`fpsim.arith._compare`."""
    signaling = check_flag("signaling", signaling)
    operands = _Operands(op, (x, y), fmt)
    fmt = operands.fmt
    if ctx is None:
        from ..context import getcontext

        ctx = getcontext()
    elif not isinstance(ctx, Context):
        raise TypeError(f"ctx must be an fpsim.Context, got {type(ctx).__name__}")

    daz = ctx.daz

    def chunk(start: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
        a, b = (codes_of(c, fmt, check=False) for c in operands.chunk(start, stop))
        order, flags = _order(fmt, a, b, signaling, daz)
        return np.isin(order, accept), flags

    return run_chunks(operands.size, operands.shape, bool, chunk_size, chunk, ctx, return_flags)


def _order(fmt: Format, a: np.ndarray, b: np.ndarray, signaling: bool, daz: bool = False
           ) -> tuple[np.ndarray, np.ndarray]:
    """-1, 0, 1 by value (2 where unordered) and the INVALID flags; with
    ``daz`` subnormal operands order as zeros."""
    nan_a = fields(fmt, a)[0]
    nan_b = fields(fmt, b)[0]
    unordered = nan_a | nan_b
    if signaling:
        invalid = unordered
    else:
        from ._kernel import is_signaling

        invalid = is_signaling(fmt, a, nan_a) | is_signaling(fmt, b, nan_b)
    # Sign and magnitude order the codes of every format (±0 are equal).
    mask, sign = U64(fmt.magnitude_mask), U64(fmt.sign_bit)
    va = (a & mask).astype(I64)
    vb = (b & mask).astype(I64)
    if daz and fmt.subnormals:
        # (codes below the smallest normal are the zeros and subnormals)
        smallest = 1 << fmt.mantissa_bits
        va = np.where(va < smallest, 0, va)
        vb = np.where(vb < smallest, 0, vb)
    va = np.where((a & sign) != 0, -va, va)
    vb = np.where((b & sign) != 0, -vb, vb)
    # (compared, not subtracted: FP64's magnitudes fill 63 bits)
    order = (va > vb).astype(I64) - (va < vb).astype(I64)
    return np.where(unordered, 2, order), np.where(invalid, INVALID, 0).astype(U8)


def _comparison(name: str, accept: tuple[int, ...], signaling_default: bool, what: str,
                example: list[bool]) -> Callable[..., Any]:
    def compare(x: Any, y: Any, ctx: Context | None = None, *,
                fmt: Format | str | None = None, signaling: bool = signaling_default,
                return_flags: bool = False, chunk_size: int = DEFAULT_CHUNK) -> Any:
        return _compare(name, x, y, ctx, fmt, signaling, return_flags, chunk_size, accept)

    compare.__name__ = compare.__qualname__ = name
    compare.__doc__ = (
        f"{what} elementwise, as :func:`fpsim.arith.{name}`: a bool array "
        f"(``signaling={signaling_default}`` by default).  Operands as for :func:`add`.\n\n"
        f"    >>> import numpy as np\n"
        f"    >>> {name}(np.float16([1.0, 2.0, np.nan]), np.float16(2.0)).tolist()\n"
        f"    {example}\n")
    return quiet(compare)


eq = _comparison("eq", (0,), False, "compareQuietEqual", [False, True, False])
ne = _comparison("ne", (-1, 1, 2), False, "compareQuietNotEqual (true when unordered)",
                 [True, False, True])
lt = _comparison("lt", (-1,), True, "compareSignalingLess", [True, False, False])
le = _comparison("le", (-1, 0), True, "compareSignalingLessEqual", [True, True, False])
gt = _comparison("gt", (1,), True, "compareSignalingGreater", [False, False, False])
ge = _comparison("ge", (0, 1), True, "compareSignalingGreaterEqual", [False, True, False])
unordered = _comparison("unordered", (2,), False,
                        "compareQuietUnordered (true where either is NaN)", [False, False, True])


import fpsim  # noqa: E402,F401  (doctests)
