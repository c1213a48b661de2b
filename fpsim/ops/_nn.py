"""Neural-network operators with declared numerics: softmax, log_softmax,
layer_norm, rms_norm, relu, sigmoid, silu, gelu, mse_loss, cross_entropy.

Each is a fixed sequence of correctly rounded steps (see each docstring and
``spec/operators.md``): elementwise math in the ``compute`` format C
(default FP32), running sums in the ``accumulate`` format A (default FP32,
order as declared, from +0), the result converted to ``out`` O (default: the
input's format).  Where FP32 does not hold every value of the input's format
(FP64), C and A default to the input's format instead.  Constants of a
formula are the float64 literals shown, rounded to nearest even into C, as a
compiled kernel's constants are; ``eps`` is rounded into C under the call's
settings.

With FP32 compute in round-to-nearest-even (no FTZ, no DAZ), the FP32 steps
run as the machine's float32 arithmetic where that is provably the same
result, flags included (:mod:`fpsim.ops._fast32`).
"""

from __future__ import annotations

import copy
import math
import numbers
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import numpy as np

from .. import _threads, array
from .._errstate import quiet
from ..array.engine import as_array, check_flag
from ..context import Context, resolve
from ..formats import FP16, FP32, Format
from . import _fast32
from ._reduce import Steps, check_order, divide_by_count, normalized_axes, sum_last
from .operands import Distinct, Operand, constant, declared, default_format, deliver

# Elements of whole rows that a row-wise operator on the fast FP32 steps
# computes at a time (see _Call.by_rows): 1 MiB of float32 per intermediate.
ROW_BLOCK = 1 << 18

__all__ = ["softmax", "log_softmax", "layer_norm", "rms_norm", "relu", "sigmoid", "silu",
           "gelu", "mse_loss", "cross_entropy"]


class _Call:
    """One operator call: its input moved so that the reduced axis is last,
    its declared formats, and the steps under its settings."""

    def __init__(self, op: str, x: Any, fmt: Any, ctx: Context | None, compute: Any,
                 accumulate: Any, out: Any, order: Any, rng: Any, overrides: dict[str, Any],
                 axis: int | None = -1, convert: bool = True, workers: Any = None) -> None:
        self.op = op
        self.operand = Operand(op, x, fmt)
        _threads.check_workers(op, workers)
        self.workers = workers
        self.rng, self.overrides = rng, overrides
        self.steps = Steps(ctx, rng, overrides)
        self.constants: dict[tuple[float, Any], tuple[np.ndarray, int]] = {}  # see encode()
        self.c = default_format(op, "compute", compute, self.operand.fmt)
        self.a = default_format(op, "accumulate", accumulate, self.operand.fmt)
        self.o = self.operand.fmt if out is None else declared(op, "out", out)
        self.order = check_order(op, order)
        # FP32 steps by the machine's float32 arithmetic where provably equal
        flag_ctx, key = resolve(ctx, overrides)
        self.fast = (_fast32.Fast32(self.steps, flag_ctx)
                     if self.c == FP32 and _fast32.usable(key, rng) else None)
        codes = self.operand.codes
        if axis is not None:
            if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
                raise TypeError(f"{op}(): axis={axis!r}; accepted one integer in "
                                f"[{-codes.ndim}, {codes.ndim})")
            (self.axis,) = normalized_axes(op, codes.ndim, axis)
            codes = np.moveaxis(codes, self.axis, -1)
        codes = np.ascontiguousarray(codes)
        # An elementwise operator on many codes of a narrow format computes
        # each distinct code once (see Distinct).
        self.distinct = None if axis is not None else Distinct.of(codes, self.operand.fmt, key)
        if self.distinct is not None:
            codes = self.distinct.codes
        self.codes = codes
        # Every element in C, converted at once, in C order of the input
        # (convert=False: by :meth:`by_rows`, a block of rows at a time).
        self.x = self.convert_in(codes, self.operand.fmt) if convert else None

    def convert_in(self, codes: np.ndarray, fmt: Any) -> np.ndarray:
        wide = self.fast.widen(codes, fmt) if self.fast is not None else None
        return self.steps.convert(codes, fmt, self.c) if wide is None else wide

    def other(self, name: str, y: Any, shape: tuple[int, ...] | None = None) -> np.ndarray:
        """A second input in C: values of any float dtype, or codes of x's
        format."""
        codes = as_array(y).dtype.kind in "iu"
        operand = Operand(self.op, y, self.operand.fmt if codes else None, name)
        if shape is not None and operand.codes.shape != shape:
            raise ValueError(f"{self.op}(): {name} has shape {operand.codes.shape}; accepted "
                             f"{shape}")
        return self.convert_in(operand.codes, operand.fmt)

    # one rounding each, in C
    def add(self, x: np.ndarray, y: Any) -> np.ndarray:
        return self.fast.add(x, y) if self.fast is not None else self.steps.add(x, y, self.c)

    def sub(self, x: np.ndarray, y: Any) -> np.ndarray:
        return self.fast.sub(x, y) if self.fast is not None else self.steps.sub(x, y, self.c)

    def mul(self, x: np.ndarray, y: Any) -> np.ndarray:
        return self.fast.mul(x, y) if self.fast is not None else self.steps.mul(x, y, self.c)

    def div(self, x: np.ndarray, y: Any) -> np.ndarray:
        return self.fast.div(x, y) if self.fast is not None else self.steps.div(x, y, self.c)

    def encode(self, value: float, fmt: Format) -> np.ndarray:
        """``value`` rounded into ``fmt`` under the call's settings.  With
        the fast steps (round to nearest, no random bits) it is rounded once
        per call and its flags raised in each block that uses it: the
        general path's fixed cost per call is more than a block's work."""
        if self.fast is None:
            return self.steps.encode(value, fmt)
        hit = self.constants.get((value, fmt))
        if hit is None:
            ctx = self.steps.flagged.copy()
            ctx.clear_flags()
            code = Steps(ctx, self.rng, self.overrides).encode(value, fmt)
            hit = self.constants[(value, fmt)] = (code, ctx._flags[0])
        self.steps.flagged._flags[0] |= hit[1]
        return hit[0]

    def fn(self, name: str, x: np.ndarray) -> np.ndarray:
        return self.steps.function(name, x, self.c)

    def constant(self, value: float) -> np.ndarray:
        """A formula's constant in C (see :func:`constant`)."""
        return constant(value, self.c)

    def sum_last(self, v: np.ndarray) -> np.ndarray:
        """The running sum in A of ``v`` (codes of C) along the last axis."""
        if self.fast is not None and self.a == FP32 and self.order == "sequential":
            total = self.fast.row_sum(v)
            if total is not None:
                return total
        return sum_last(self.steps, v, self.c, self.a, self.order)

    def mean_last(self, v: np.ndarray) -> np.ndarray:
        """sum_A(v along the last axis) / N in A, converted to C."""
        total = self.sum_last(v)
        if self.fast is not None and self.a == FP32 == self.c:
            # the count in FP32 (one rounding, flags and all), then the fast
            # division: the general path's fixed cost per call is more than
            # a block of rows' division
            count = self.encode(float(v.shape[-1]), FP32)
            return self.fast.div(total, count)
        return self.steps.convert(divide_by_count(self.steps, total, v.shape[-1], self.a),
                                  self.a, self.c)

    def finish(self) -> None:
        """Raise the flags the fast steps left to decide (once all have run)."""
        if self.fast is not None:
            self.fast.finish()

    def by_rows(self, body: Callable[[_Call], np.ndarray]) -> np.ndarray:
        """The result of an operator on each row (the reduced axis last)
        alone, delivered: ``body(call)`` gives the codes in C of the rows
        whose codes in C are ``call.x``.

        With the fast FP32 steps, a large input runs :data:`ROW_BLOCK`
        elements of whole rows at a time, on ``workers`` threads if given
        (:mod:`fpsim._threads`): every intermediate then stays in the cache
        and in memory the process already holds, where arrays as large as the
        input would be fresh pages on every call (page faults cost more here
        than the arithmetic).  Rows are independent and each block gathers
        its flags apart, ORed into the context once every block has
        succeeded, so the bits and flags are those of one pass; the general
        path (which may draw random numbers in element order) runs at once."""
        codes = self.codes
        n = codes.shape[-1] if codes.ndim else 1
        if self.fast is None or codes.ndim < 2 or codes.size <= ROW_BLOCK or n == 0:
            self.x = self.convert_in(codes, self.operand.fmt)
            return self.done(body(self))
        rows = codes.reshape(-1, n)
        step = max(1, ROW_BLOCK // n)
        starts = range(0, rows.shape[0], step)
        out = np.empty(rows.shape, array.code_dtype(self.o))

        # The flags raised so far: a block starts with them set, so that its
        # fast steps skip the checks of flags already known to be raised
        # (flags are an OR; a stale read between threads only costs a check).
        known = [self.steps.flagged._flags[0]]

        def block(start: int) -> int:
            part = self._block(known[0])
            part.x = part.convert_in(rows[start:start + step], self.operand.fmt)
            out[start:start + step] = part.to_out(body(part))
            known[0] |= part.steps.flagged._flags[0]
            return part.steps.flagged._flags[0]

        # workers=None runs one thread here: a block is many short numpy
        # calls, and two threads measured no faster (docs/array.rst)
        threads = _threads.thread_count(self.workers or 1, codes.size, len(starts))
        raised = 0
        for flags in _threads.run_pieces(block, starts, threads):
            raised |= flags
        self.steps.flagged._flags[0] |= raised
        return self.deliver(out.reshape(codes.shape))

    def _block(self, known: int = 0) -> _Call:
        """This call for one block of rows: its own steps and fast steps,
        whose flags go to a context of its own (blocks may run at once),
        starting with the flags ``known`` to be raised already."""
        part = copy.copy(self)
        own = self.steps.flagged.copy()
        own.flags = known
        part.steps = Steps(own, self.rng, self.overrides)
        part.fast = _fast32.Fast32(part.steps, own)
        return part

    def to_out(self, y: np.ndarray) -> np.ndarray:
        """Codes of C converted to O, and the flags of the fast steps raised."""
        if self.fast is not None and self.o == FP16:
            result = self.fast.to_fp16(y)
        else:
            result = self.steps.convert(y, self.c, self.o)
        self.finish()
        return result

    def done(self, y: np.ndarray, moved: bool = True) -> np.ndarray:
        """Convert to O, put the axis back, deliver values or codes."""
        return self.deliver(self.to_out(y), moved)

    def deliver(self, result: np.ndarray, moved: bool = True) -> np.ndarray:
        """Results in O: every element its code's, the axis back, values or codes."""
        if self.distinct is not None:  # each element's result is its code's
            result = self.distinct.spread(result)
        if moved and result.ndim:
            result = np.moveaxis(result, -1, self.axis)
        return deliver(np.asarray(result, order="C"), self.o, self.operand.typed)


def _max_last(c: _Call, x: np.ndarray) -> np.ndarray:
    """The largest element along the last axis (a NaN if there is one: the
    first NaN), as codes of C with the axis kept."""
    if x.shape[-1] == 0:
        raise ValueError(f"{c.op}(): the softmax axis is empty")
    # (FP32 codes viewed as float32 order as their exact values do)
    values = x.view(np.float32) if c.c == FP32 else array.decode(x, c.c)
    index = np.argmax(values, axis=-1)[..., None]  # the first maximum, or the first NaN
    return np.take_along_axis(x, index, -1)


def _shifted(c: _Call, stable: bool) -> np.ndarray:
    return c.sub(c.x, _max_last(c, c.x)) if stable else c.x


_NUMERICS = """
    ``compute`` (C) and ``accumulate`` (A), default FP32 (FP64 for FP64
    input), ``out`` (O, default: the input's format), ``order`` of the
    running sums (see :mod:`fpsim.ops`), and the settings of
    :mod:`fpsim.array` (``ctx=``, ``rounding=``, ``ftz=``, ``daz=``,
    ``saturate=``, ``rng=``...).  Input:
    values of a float dtype or codes with ``fmt=``.  ``workers=``: the
    threads a large call may run its blocks of rows on (None or 1: this
    thread alone, as measured fastest on two cores); the bits and flags
    never depend on it."""


@quiet
def softmax(x: Any, axis: int = -1, ctx: Context | None = None, *, fmt: Any = None,
            stable: bool = True, compute: Any = None, accumulate: Any = None, out: Any = None,
            order: Any = "sequential", rng: Any = None, workers: int | None = None,
            **overrides: Any) -> np.ndarray:
    """Softmax along ``axis``, as these roundings:

    1. ``xc`` = x converted to C; with ``stable=True``, ``d = xc - max(xc)``
       in C (the max is exact: one of the elements), else ``d = xc``;
    2. ``e = exp(d)``, correctly rounded in C;
    3. ``s`` = the running sum of ``e`` in A;
    4. ``y = e / s`` in C (``s`` converted to C), converted to O.

    >>> import numpy as np
    >>> softmax(np.array([0.0, 1.0, 2.0])).tolist()        # FP64: C and A are FP64
    [0.09003057317038046, 0.24472847105479764, 0.6652409557748218]
    """
    check_flag("stable", stable)
    c = _Call("softmax", x, fmt, ctx, compute, accumulate, out, order, rng, overrides,
              _one_axis("softmax", axis), convert=False, workers=workers)
    return c.by_rows(lambda c: _softmax_steps(c, stable))


def _one_axis(op: str, axis: Any) -> Any:
    """The axis a row-wise operator reduces: one integer (None is no axis)."""
    if axis is None:
        raise TypeError(f"{op}(): axis=None; accepted one integer (the axis the rows run along)")
    return axis


def _check_eps(op: str, eps: Any) -> None:
    """``eps=``: a real number >= 0, finite in float64 (it is rounded into C
    from its float64 value)."""
    if isinstance(eps, np.ndarray) and eps.shape == () and eps.dtype.kind in "iuf":
        eps = eps[()]
    if isinstance(eps, (bool, np.bool_)) or not isinstance(eps, (numbers.Real, Decimal)):
        raise TypeError(f"{op}(): eps must be a real number, got {type(eps).__name__} {eps!r}")
    try:
        value = float(eps)
    except OverflowError:
        value = math.inf
    except ValueError:  # Decimal('sNaN'): a NaN, refused below as every NaN is
        value = math.nan
    if not 0 <= value < math.inf:
        raise ValueError(f"{op}(): eps={eps!r}; accepted a number >= 0, finite in float64")


def _softmax_steps(c: _Call, stable: bool) -> np.ndarray:
    e = c.fn("exp", _shifted(c, stable))
    s = c.steps.convert(c.sum_last(e), c.a, c.c)
    return c.div(e, s[..., None])


@quiet
def log_softmax(x: Any, axis: int = -1, ctx: Context | None = None, *, fmt: Any = None,
                stable: bool = True, compute: Any = None, accumulate: Any = None,
                out: Any = None, order: Any = "sequential", rng: Any = None,
                workers: int | None = None,
                **overrides: Any) -> np.ndarray:
    """Log-softmax along ``axis``: ``d`` and ``e`` as in :func:`softmax`,
    ``s`` their running sum in A, ``l = log(s)`` correctly rounded in C,
    ``y = d - l`` in C, converted to O."""
    check_flag("stable", stable)
    c = _Call("log_softmax", x, fmt, ctx, compute, accumulate, out, order, rng, overrides,
              _one_axis("log_softmax", axis), convert=False, workers=workers)
    return c.by_rows(lambda c: _log_softmax_steps(c, stable))


def _log_softmax_steps(c: _Call, stable: bool) -> np.ndarray:
    d = _shifted(c, stable)
    s = c.steps.convert(c.sum_last(c.fn("exp", d)), c.a, c.c)
    return c.sub(d, c.fn("log", s)[..., None])


_VARIANCES = ("two_pass", "one_pass")


@quiet
def layer_norm(x: Any, weight: Any = None, bias: Any = None, ctx: Context | None = None, *,
               fmt: Any = None, eps: float = 1e-5, variance: str = "two_pass",
               compute: Any = None, accumulate: Any = None, out: Any = None,
               order: Any = "sequential", rng: Any = None, workers: int | None = None,
               **overrides: Any) -> np.ndarray:
    """Layer normalization over the last axis (N elements), as these
    roundings (each in C unless said):

    1. ``xc`` = x converted to C; ``mu`` = (running sum of xc in A) / N in
       A, converted to C; ``d = xc - mu``;
    2. ``variance="two_pass"``: ``var`` = (running sum of ``d*d`` in A) / N
       in A, converted to C; ``"one_pass"``: ``q`` = (running sum of
       ``xc*xc`` in A) / N in A, converted to C, ``var = q - mu*mu``;
    3. ``v = var + eps`` (eps rounded into C under the call's settings);
       ``r = rsqrt(v)`` correctly rounded; ``y = d * r``;
    4. ``y = y * weight`` and ``y = y + bias`` where given (any float dtype,
       or codes of x's format; converted to C), then converted to O.

    A constant row has ``var = 0``, so ``v`` is eps itself: in FP16, eps=1e-5
    is the subnormal 0x00A8, and a unit that flushes subnormals (``ftz`` or
    ``daz``) makes it 0, ``rsqrt(0) = inf`` and ``0 * inf = NaN``:

    >>> import numpy as np
    >>> row = np.full((1, 8), 3.0, np.float16)
    >>> layer_norm(row, compute="fp16", accumulate="fp16")[0, :2].tolist()
    [0.0, 0.0]
    >>> layer_norm(row, compute="fp16", accumulate="fp16", daz=True)[0, :2].tolist()
    [nan, nan]
    """
    if not isinstance(variance, str) or variance not in _VARIANCES:
        raise ValueError(f"layer_norm(): unknown variance={variance!r}; accepted "
                         f"{', '.join(repr(v) for v in _VARIANCES)}")
    _check_eps("layer_norm", eps)
    c = _Call("layer_norm", x, fmt, ctx, compute, accumulate, out, order, rng, overrides, -1,
              convert=False, workers=workers)
    return c.by_rows(lambda c: _layer_norm_steps(c, weight, bias, eps, variance))


def _layer_norm_steps(c: _Call, weight: Any, bias: Any, eps: float, variance: str
                      ) -> np.ndarray:
    mu = c.mean_last(c.x)[..., None]
    d = c.sub(c.x, mu)
    if variance == "two_pass":
        var = c.mean_last(c.mul(d, d))
    else:
        var = c.sub(c.mean_last(c.mul(c.x, c.x)), c.mul(mu[..., 0], mu[..., 0]))
    r = c.fn("rsqrt", c.add(var, c.encode(eps, c.c)))
    y = c.mul(d, r[..., None])
    return _affine(c, y, weight, bias)


def _affine(c: _Call, y: np.ndarray, weight: Any, bias: Any) -> np.ndarray:
    n = y.shape[-1:]
    if weight is not None:
        y = c.mul(y, c.other("weight", weight, n))
    if bias is not None:
        y = c.add(y, c.other("bias", bias, n))
    return y


@quiet
def rms_norm(x: Any, weight: Any = None, ctx: Context | None = None, *, fmt: Any = None,
             eps: float = 1e-6, compute: Any = None, accumulate: Any = None, out: Any = None,
             order: Any = "sequential", rng: Any = None, workers: int | None = None,
             **overrides: Any) -> np.ndarray:
    """RMS normalization over the last axis: ``ms`` = (running sum of
    ``xc*xc`` in A) / N in A, converted to C; ``r = rsqrt(ms + eps)``
    (correctly rounded, in C); ``y = xc * r``; ``y = y * weight`` where
    given; converted to O."""
    _check_eps("rms_norm", eps)
    c = _Call("rms_norm", x, fmt, ctx, compute, accumulate, out, order, rng, overrides, -1,
              convert=False, workers=workers)

    def steps(c: _Call) -> np.ndarray:
        r = c.fn("rsqrt", c.add(c.mean_last(c.mul(c.x, c.x)), c.encode(eps, c.c)))
        return _affine(c, c.mul(c.x, r[..., None]), weight, None)

    return c.by_rows(steps)


@quiet
def relu(x: Any, ctx: Context | None = None, *, fmt: Any = None, out: Any = None,
         **overrides: Any) -> np.ndarray:
    """``x`` where ``x > 0``, else +0 (a NaN stays itself), converted to O
    (default: the input's format; the only rounding).

    >>> import numpy as np
    >>> relu(np.array([-2.0, -0.0, 3.5, np.nan], np.float16)).tolist()
    [0.0, 0.0, 3.5, nan]
    """
    operand = Operand("relu", x, fmt)
    values = array.decode(operand.codes, operand.fmt)
    codes = np.where((values > 0) | np.isnan(values), operand.codes,
                     np.zeros((), operand.codes.dtype))
    o = operand.fmt if out is None else declared("relu", "out", out)
    result = Steps(ctx, None, overrides).convert(codes, operand.fmt, o)
    return deliver(result, o, operand.typed)


def _sigmoid_steps(c: _Call) -> np.ndarray:
    one = c.constant(1.0)
    return c.div(one, c.add(one, c.fn("exp", c.mul(c.x, c.constant(-1.0)))))


@quiet
def sigmoid(x: Any, ctx: Context | None = None, *, fmt: Any = None, compute: Any = None,
            out: Any = None, rng: Any = None, **overrides: Any) -> np.ndarray:
    """``1 / (1 + exp(-x))`` as roundings in C: ``e = exp(-xc)`` (correctly
    rounded), ``t = 1 + e``, ``y = 1 / t``, converted to O."""
    c = _Call("sigmoid", x, fmt, ctx, compute, FP32, out, "sequential", rng, overrides, None)
    return c.done(_sigmoid_steps(c), moved=False)


@quiet
def silu(x: Any, ctx: Context | None = None, *, fmt: Any = None, compute: Any = None,
         out: Any = None, rng: Any = None, **overrides: Any) -> np.ndarray:
    """``x * sigmoid(x)``: the steps of :func:`sigmoid`, then ``y = xc * s``
    in C, converted to O."""
    c = _Call("silu", x, fmt, ctx, compute, FP32, out, "sequential", rng, overrides, None)
    return c.done(c.mul(c.x, _sigmoid_steps(c)), moved=False)


_APPROXIMATIONS = ("none", "tanh")


@quiet
def gelu(x: Any, ctx: Context | None = None, *, fmt: Any = None, approximate: str = "none",
         compute: Any = None, out: Any = None, rng: Any = None, **overrides: Any) -> np.ndarray:
    """GELU, as roundings in C (constants: the float64 literals, rounded to
    nearest even into C):

    * ``approximate="none"``: ``t = xc * 0.7071067811865476``;
      ``u = erf(t)`` (correctly rounded); ``y = (xc * 0.5) * (1 + u)``;
    * ``approximate="tanh"``: ``x3 = (xc * xc) * xc``;
      ``inner = xc + 0.044715 * x3``;
      ``u = tanh(0.7978845608028654 * inner)`` (correctly rounded);
      ``y = (xc * 0.5) * (1 + u)``;

    then converted to O.

    >>> import numpy as np
    >>> gelu(np.array([-1.0, 0.0, 1.0], np.float16)).tolist()
    [-0.15869140625, 0.0, 0.84130859375]
    """
    if approximate not in _APPROXIMATIONS:
        raise ValueError(f"gelu(): unknown approximate={approximate!r}; accepted "
                         f"{', '.join(repr(a) for a in _APPROXIMATIONS)}")
    c = _Call("gelu", x, fmt, ctx, compute, FP32, out, "sequential", rng, overrides, None)
    if approximate == "none":
        u = c.fn("erf", c.mul(c.x, c.constant(0.7071067811865476)))
    else:
        x3 = c.mul(c.mul(c.x, c.x), c.x)
        inner = c.add(c.x, c.mul(c.constant(0.044715), x3))
        u = c.fn("tanh", c.mul(c.constant(0.7978845608028654), inner))
    half = c.mul(c.x, c.constant(0.5))
    return c.done(c.mul(half, c.add(c.constant(1.0), u)), moved=False)


_REDUCTIONS = ("mean", "sum", "none")


def _reduce(c: _Call, v: np.ndarray, reduction: str, negate: bool) -> np.ndarray:
    """``reduction`` of ``v`` (codes of C) over all its elements, in A;
    negated (times -1, exact) when asked; delivered in O."""
    if reduction == "none":
        result = c.mul(v, c.constant(-1.0)) if negate else v
        return c.done(result, moved=False)
    flat = v.reshape(-1)
    total = c.sum_last(flat)
    if reduction == "mean":
        total = divide_by_count(c.steps, total, flat.size, c.a)
    if negate:
        total = c.steps.mul(total, constant(-1.0, c.a), c.a)
    result = c.steps.convert(total, c.a, c.o)
    c.finish()
    return deliver(np.asarray(result, order="C"), c.o, c.operand.typed)


def _check_reduction(op: str, reduction: str) -> None:
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{op}(): unknown reduction={reduction!r}; accepted "
                         f"{', '.join(repr(r) for r in _REDUCTIONS)}")


@quiet
def mse_loss(pred: Any, target: Any, ctx: Context | None = None, *, fmt: Any = None,
             reduction: str = "mean", compute: Any = None, accumulate: Any = None,
             out: Any = None, order: Any = "sequential", rng: Any = None,
             **overrides: Any) -> np.ndarray:
    """Mean squared error: ``d = pred - target`` and ``q = d * d`` in C
    (``target`` may be of another float dtype: it is converted to C);
    ``reduction="none"``: q, converted to O; ``"sum"``: the running sum of q
    (all elements, C order) in A; ``"mean"``: that sum / N in A; either
    converted from A to O."""
    _check_reduction("mse_loss", reduction)
    c = _Call("mse_loss", pred, fmt, ctx, compute, accumulate, out, order, rng, overrides,
              None)
    t = c.other("target", target, c.operand.codes.shape)
    d = c.sub(c.x, t)
    return _reduce(c, c.mul(d, d), reduction, False)


@quiet
def cross_entropy(logits: Any, target: Any, ctx: Context | None = None, *, fmt: Any = None,
                  reduction: str = "mean", compute: Any = None, accumulate: Any = None,
                  out: Any = None, order: Any = "sequential", rng: Any = None,
                  **overrides: Any) -> np.ndarray:
    """Cross-entropy of ``logits`` (N×K) against class indices ``target``
    (N integers in [0, K)): ``ls`` = the steps of :func:`log_softmax` (stable)
    along the last axis, in C; ``p = ls[i, target[i]]``; ``reduction="none"``:
    ``-p`` (times -1 in C), converted to O; ``"sum"``: ``-(running sum of p
    in A)``; ``"mean"``: ``-(that sum / N in A)``; negated in A and converted
    from A to O.

    >>> import numpy as np
    >>> logits = np.array([[2.0, 0.5, -1.0]], np.float16)
    >>> float(cross_entropy(logits, np.array([0]), out="fp32"))
    0.24131132662296295
    """
    _check_reduction("cross_entropy", reduction)
    c = _Call("cross_entropy", logits, fmt, ctx, compute, accumulate, out, order, rng,
              overrides, -1)
    t = as_array(target)  # (a masked target is refused, as every operand is)
    if c.x.ndim != 2 or t.shape != c.x.shape[:1] or t.dtype.kind not in "iu":
        raise ValueError(f"cross_entropy(): needs logits of shape (N, K) and integer target "
                         f"of shape (N,); got {c.operand.codes.shape} and {t.shape} "
                         f"({t.dtype})")
    if t.size and (t.min() < 0 or t.max() >= c.x.shape[1]):
        raise ValueError(f"cross_entropy(): target classes must be in [0, {c.x.shape[1]})")
    ls = _log_softmax_steps(c, True)
    picked = np.take_along_axis(ls, t.astype(np.intp)[:, None], 1)[:, 0]
    return _reduce(c, picked, reduction, True)



for _op in (softmax, log_softmax, layer_norm, rms_norm):
    if _op.__doc__ is not None:  # (none under python -OO)
        _op.__doc__ = _op.__doc__.rstrip() + "\n" + _NUMERICS
