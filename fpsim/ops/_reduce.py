"""Reductions with declared numerics: sum, mean, dot and matmul (the
running sum and its orders are described in :mod:`fpsim.ops`)."""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import _threads, array
from .._errstate import quiet
from ..array.engine import check_size
from ..context import Context, resolve
from ..formats import FP32, Format
from ..mma import MMAModel
from ..mma.accumulation import Accumulation
from ..mma.blockscaled import BlockScaledModel
from ..mma.cputable import CPUGEMM, cpu_kernel
from ..mma.fmachain import FMAChainModel
from ..modes import STOCHASTIC
from ..rounding import INEXACT
from . import _elementary, _gemm32
from ._matrix_unit import matrix_unit_gemm, schedule_of
from .operands import Operand, declared, default_format, deliver, holds

__all__ = ["sum", "mean", "dot", "matmul"]


class Steps:
    """The array engine under one operator call's settings: every step
    rounds with the same context, overrides and random generator."""

    def __init__(self, ctx: Context | None, rng: Any, overrides: dict[str, Any]) -> None:
        self.ctx = ctx
        self.kw = dict(overrides)
        self.flagged, self.key = resolve(ctx, self.kw)
        key = self.key
        # Deterministic, no flushing of results or operands: an exact
        # intermediate then passes between two steps unchanged.
        self.plain = key[0] not in STOCHASTIC and not key[2] and not key[3]
        # Deterministic: the order in which steps of different terms run
        # (all products first, then all sums) cannot change a result.
        self.deterministic = key[0] not in STOCHASTIC
        if rng is not None:
            self.kw["rng"] = rng

    def raise_flags(self, flags: int) -> None:
        """OR ``flags`` into the call's context (a step computed here rather
        than by the array engine)."""
        self.flagged._flags[0] |= flags

    def add(self, x: np.ndarray, y: np.ndarray, fmt: Format) -> np.ndarray:
        return array.add(x, y, self.ctx, fmt=fmt, **self.kw)

    def mul(self, x: np.ndarray, y: np.ndarray, fmt: Format) -> np.ndarray:
        return array.mul(x, y, self.ctx, fmt=fmt, **self.kw)

    def div(self, x: np.ndarray, y: np.ndarray, fmt: Format) -> np.ndarray:
        return array.div(x, y, self.ctx, fmt=fmt, **self.kw)

    def fma(self, x: np.ndarray, y: np.ndarray, z: np.ndarray, fmt: Format) -> np.ndarray:
        return array.fma(x, y, z, self.ctx, fmt=fmt, **self.kw)

    def add_sequence(self, terms: np.ndarray, fmt: Format, initial: np.ndarray | None = None
                     ) -> np.ndarray:
        """``((initial + terms[0]) + terms[1]) + ...``: :func:`add` step by step."""
        return array.add_sequence(terms, self.ctx, fmt=fmt, initial=initial, **self.kw)

    def sub(self, x: np.ndarray, y: np.ndarray, fmt: Format) -> np.ndarray:
        return array.sub(x, y, self.ctx, fmt=fmt, **self.kw)

    def function(self, name: str, x: np.ndarray, fmt: Format) -> np.ndarray:
        """A correctly rounded elementary function (:mod:`fpsim.ops`)."""
        return getattr(_elementary, name)(x, self.ctx, fmt=fmt, **self.kw)

    def encode(self, value: float, fmt: Format) -> np.ndarray:
        """A Python number rounded into ``fmt`` under the call's settings
        (its flags included), as a 0-d array of codes."""
        return array.encode(np.array(value, np.float64), fmt, self.ctx, **self.kw)

    def convert(self, codes: np.ndarray, src: Format, dst: Format) -> np.ndarray:
        if src == dst:
            return codes
        return array.convert(codes, src, dst, self.ctx, **self.kw)


def check_order(op: str, order: Any) -> Any:
    if isinstance(order, str) and order in ("sequential", "pairwise"):
        return order
    if (isinstance(order, tuple) and len(order) == 2 and order[0] in ("blocked", "split")
            and isinstance(order[1], (int, np.integer)) and not isinstance(order[1], bool)
            and order[1] >= 1):
        return order
    raise ValueError(f"{op}(): unknown order={order!r}; accepted 'sequential', 'pairwise', "
                     "('blocked', n) or ('split', s) with a positive integer n or s")


def _pieces(order: tuple[str, int], k: int) -> list[range]:
    kind, n = order[0], int(order[1])
    if kind == "blocked":
        return [builtins.range(i, min(i + n, k)) for i in builtins.range(0, k, n)]
    # Pieces beyond the k-th would be empty and are skipped: s > k splits as
    # s = k does, and costs no loop over s.
    n = min(n, k)
    if not n:
        return []
    base, extra = divmod(k, n)
    out, start = [], 0
    for i in builtins.range(n):
        size = base + (1 if i < extra else 0)
        if size:
            out.append(builtins.range(start, start + size))
        start += size
    return out


def _accumulate(steps: Steps, fmt: Format, shape: tuple[int, ...], k: int, order: Any,
                sequence: Callable[[range], np.ndarray],
                term: Callable[[int], np.ndarray],
                terms: Callable[[range], np.ndarray] | None = None) -> np.ndarray:
    """The sum of terms ``0..k-1`` in ``fmt`` in the declared order (see the
    module's docstring): ``sequence(piece)`` is the running sum of the terms
    of ``piece`` from +0, ``term(i)`` is term ``i`` alone and ``terms(piece)``
    the terms of ``piece`` stacked on a first axis (for the pairwise tree)."""
    zero = np.zeros(shape, array.code_dtype(fmt))
    if not zero.size:
        # No output element: no step has anything to round, raise or draw,
        # so none runs (k may be far larger than the data, as in a (0, K)
        # operand, which holds no element whatever K is).
        return zero
    if order == "pairwise":
        # A binary counter: two partial sums of the same size merge at once,
        # which builds the level-by-level tree of adjacent pairs, keeping
        # only O(log k) partial sums alive.
        #
        # Where ``i`` is a multiple of a power of two w, the counter's next w
        # terms build a complete tree of adjacent pairs before meeting any
        # partial sum (all of size w or more): that tree is computed level by
        # level, one call per level on all its pairs (left operands the
        # earlier terms, as in the counter), in runs of at most
        # _TREE_ELEMENTS codes.  Stochastic rounding draws its numbers in the
        # counter's order, one term at a time.
        outputs = max(1, int(np.prod(shape, dtype=np.int64)))
        widest = 1
        if terms is not None and steps.deterministic:
            while widest * 2 <= k and widest * 2 * outputs <= _TREE_ELEMENTS:
                widest *= 2
        stack: list[tuple[int, np.ndarray]] = []
        i = 0
        while i < k:
            size = widest
            while size > 1 and (i % size or i + size > k):
                size //= 2
            if size == 1:
                t = term(i)
            else:
                level = terms(builtins.range(i, i + size))
                while level.shape[0] > 1:
                    level = steps.add(level[0::2], level[1::2], fmt)
                t = level[0]
            i += size
            while stack and stack[-1][0] == size:
                t = steps.add(stack.pop()[1], t, fmt)
                size *= 2
            stack.append((size, t))
        if not stack:
            return zero
        t = stack.pop()[1]
        while stack:
            t = steps.add(stack.pop()[1], t, fmt)
        return t
    pieces = [builtins.range(k)] if order == "sequential" else _pieces(order, k)
    outer = None
    for piece in pieces:
        acc = sequence(piece)
        outer = acc if order == "sequential" else steps.add(zero if outer is None else outer,
                                                             acc, fmt)
    return zero if outer is None else outer


def normalized_axes(op: str, ndim: int, axis: Any) -> list[int]:
    """``axis`` (an integer or a tuple of them) as non-negative axes of an
    array of ``ndim`` dimensions, checked."""
    if isinstance(axis, (int, np.integer)):
        axes: tuple[Any, ...] = (axis,)
    elif isinstance(axis, (tuple, list)):
        axes = tuple(axis)
    else:
        raise TypeError(f"{op}(): axis={axis!r}; accepted None, an integer in [{-ndim}, "
                        f"{ndim}) or a tuple of them")
    if len(axes) > ndim:  # (checked before any entry: a long tuple costs nothing)
        raise ValueError(f"{op}(): {len(axes)} axes given for an array of {ndim} "
                         "dimension(s); each axis may appear once")
    norm = []
    for ax in axes:
        if isinstance(ax, (bool, np.bool_)) or not isinstance(ax, (int, np.integer)):
            raise TypeError(f"{op}(): axis {ax!r} is not an integer; accepted None, an integer "
                            f"in [{-ndim}, {ndim}) or a tuple of them")
        if not -ndim <= ax < ndim:
            raise ValueError(f"{op}(): axis {ax!r} is out of range for an array of {ndim} "
                             f"dimension(s); accepted None, an integer in [{-ndim}, {ndim}) "
                             "or a tuple of them")
        norm.append(int(ax) % ndim)
    if len(set(norm)) != len(norm):
        raise ValueError(f"{op}(): repeated axis in {axis!r}")
    return norm


def _reduced_last(op: str, codes: np.ndarray, axis: Any) -> np.ndarray:
    """``codes`` with the reduced axes moved last and merged into one."""
    if axis is None:
        return codes.reshape(-1)
    nd = codes.ndim
    norm = normalized_axes(op, nd, axis)
    moved = np.moveaxis(codes, norm, builtins.range(nd - len(norm), nd))
    kept = moved.shape[:nd - len(norm)]
    size = int(np.prod(moved.shape[nd - len(norm):], dtype=np.int64))
    return moved.reshape(*kept, size)


def sum_last(steps: Steps, codes: np.ndarray, src: Format, acc_fmt: Format, order: Any
             ) -> np.ndarray:
    """The running sum in ``acc_fmt`` of ``codes`` (of ``src``) along their
    last axis, converted to ``acc_fmt`` first (all at once, in C order)."""
    terms = steps.convert(codes, src, acc_fmt)
    # The axis first, in one copy: each term is then one contiguous block.
    columns = np.ascontiguousarray(np.moveaxis(terms, -1, 0)) if terms.ndim > 1 else terms
    return _accumulate(steps, acc_fmt, terms.shape[:-1], terms.shape[-1], order,
                       lambda piece: steps.add_sequence(columns[piece.start:piece.stop],
                                                        acc_fmt),
                       lambda i: columns[i], lambda piece: columns[piece.start:piece.stop])


def divide_by_count(steps: Steps, total: np.ndarray, k: int, acc_fmt: Format) -> np.ndarray:
    """``total / k`` rounded once in ``acc_fmt``, k converted to it first."""
    count = steps.encode(float(k), acc_fmt)
    return steps.div(total, count, acc_fmt)


def _sum_in(op: str, x: Any, axis: Any, fmt: Any, accumulate: Any, order: Any, steps: Steps
            ) -> tuple[Operand, Format, np.ndarray, int]:
    """The body of sum and mean: the sum in the accumulate format and the
    number of terms."""
    order = check_order(op, order)
    operand = Operand(op, x, fmt)
    acc_fmt = default_format(op, "accumulate", accumulate, operand.fmt)
    # (converted in C order of x, before the axes move)
    converted = steps.convert(operand.codes, operand.fmt, acc_fmt)
    terms = _reduced_last(op, converted, axis)
    return operand, acc_fmt, sum_last(steps, terms, acc_fmt, acc_fmt, order), terms.shape[-1]


@quiet
def sum(x: Any, axis: Any = None, ctx: Context | None = None, *,  # noqa: A001
        fmt: Format | str | None = None, accumulate: Format | str | None = None,
        out: Format | str | None = None, order: Any = "sequential", rng: Any = None,
        **overrides: Any) -> np.ndarray:
    """The sum of ``x`` over ``axis`` (all elements by default, or an
    integer, or a tuple of them), with declared numerics:

    1. every element is converted to ``accumulate`` (default FP32, or the
       input's format where FP32 does not hold its values: FP64; exact when
       that format holds the input's values), all at once, in C order;
    2. the elements along the axis are added in ``order`` (``"sequential"``
       by default; see :mod:`fpsim.ops`), each addition rounded once in
       ``accumulate``, the accumulator starting at +0;
    3. the sum is converted to ``out`` (default: the input's format).

    ``x``: values of a float dtype (float16, float32, float64, bfloat16,
    float8_*), or integer codes with ``fmt=``; the result is values of
    ``out``'s dtype
    when the input was values and the dtype exists, else codes.  Settings
    as in :mod:`fpsim.array` (``ctx=``, ``rounding=``, ``ftz=``, ``daz=``,
    ``saturate=``, ...; ``rng=`` for stochastic rounding, one draw per
    element of each step's result, steps in the order above); flags of every
    step are ORed into the context.

    >>> import numpy as np
    >>> x = np.full(4096, 0.1, np.float16)
    >>> float(sum(x)), float(sum(x, accumulate="fp16"))   # FP16 running sum stalls at 256
    (409.5, 256.0)
    >>> float(sum(x, accumulate="fp16", order="pairwise"))
    409.5

    FP64 inputs accumulate in FP64 by default, each addition rounded once:

    >>> float(sum(np.array([1e16, 1.0, 1.0]))), float(sum(np.array([1.0, 1.0, 1e16])))
    (1e+16, 1.0000000000000002e+16)
    """
    steps = Steps(ctx, rng, overrides)
    operand, acc_fmt, total, _ = _sum_in("sum", x, axis, fmt, accumulate, order, steps)
    out_fmt = operand.fmt if out is None else declared("sum", "out", out)
    return deliver(steps.convert(total, acc_fmt, out_fmt), out_fmt, operand.typed)


@quiet
def mean(x: Any, axis: Any = None, ctx: Context | None = None, *,
         fmt: Format | str | None = None, accumulate: Format | str | None = None,
         out: Format | str | None = None, order: Any = "sequential", rng: Any = None,
         **overrides: Any) -> np.ndarray:
    """The mean of ``x`` over ``axis``: the sum of :func:`sum` (steps 1-2) in
    ``accumulate``, divided by the number of terms N (N converted to
    ``accumulate``, a rounding only where that format cannot hold N), the
    quotient rounded once in ``accumulate``, then converted to ``out``
    (default: the input's format).  An empty reduction is 0/0: NaN, with
    the invalid flag.

    >>> import numpy as np
    >>> float(mean(np.array([1.0, 2.0, 4.0], np.float16)))
    2.333984375
    """
    steps = Steps(ctx, rng, overrides)
    operand, acc_fmt, total, k = _sum_in("mean", x, axis, fmt, accumulate, order, steps)
    quotient = divide_by_count(steps, total, k, acc_fmt)
    out_fmt = operand.fmt if out is None else declared("mean", "out", out)
    return deliver(steps.convert(quotient, acc_fmt, out_fmt), out_fmt, operand.typed)


# The codes of one pairwise run of terms (_accumulate).
_TREE_ELEMENTS = 1 << 16
# Elements of the products computed in one call by matmul's blocked path.
_BLOCK_ELEMENTS = 1 << 20


def _products_exact(wide: Format, narrow: Format) -> bool:
    """Whether every product of two finite values of ``narrow`` is a value
    of ``wide``: at most 2p bits, at most ``wide``'s max, and a multiple of
    ``narrow``'s smallest subnormal squared, itself a multiple of ``wide``'s."""
    return (2 * narrow.precision <= wide.precision and narrow.max ** 2 <= wide.max
            and wide.subnormals and narrow.min_subnormal ** 2 >= wide.min_subnormal)


def _contract(op: str, a: Operand, b: Operand, a2: np.ndarray, b2: np.ndarray,
              shape: tuple[int, ...], compute: Any, accumulate: Any, out: Any, order: Any,
              promote_every: Any, promote_to: Any, workers: Any, steps: Steps,
              **unit: Any) -> np.ndarray:
    """The body of dot and matmul: the M×N matrix product of ``a2`` (M×K
    codes of ``a``) and ``b2`` (K×N codes of ``b``), reshaped to ``shape``.
    ``unit``: matmul's matrix-unit keywords (``split_k``, ``schedule``,
    ``c``, ``alpha``, ``beta``)."""
    if isinstance(accumulate, MMAModel):
        _threads.check_workers(op, workers)
        schedule = schedule_of(op, unit.pop("schedule", None), unit.pop("split_k", None),
                               promote_every, promote_to)
        return matrix_unit_gemm(op, accumulate, a, b, a2, b2, shape, out, steps,
                                schedule=schedule, workers=workers, **unit, compute=compute,
                                order=None if order == "sequential" else order)
    for name, value in unit.items():
        if value is not None and not (name == "alpha" and value == 1
                                      and not isinstance(value, (bool, np.bool_))):
            shown = repr(value) if np.ndim(value) == 0 else f"<{type(value).__name__}>"
            raise ValueError(f"{op}(): {name}= applies with accumulate= a matrix-unit model "
                             f"(fpsim.mma.preset(...)); drop {name}={shown}")
    order = check_order(op, order)
    _threads.check_workers(op, workers)
    k = a2.shape[1]
    a_terms = lambda c, i: c[:, i:i + 1]  # noqa: E731  (factors of term i)
    b_terms = lambda c, i: c[i:i + 1, :]  # noqa: E731
    total_fmt = None  # the format partial sums are promoted into, if any
    promote_fmt = declared(op, "promote_to", promote_to)  # (checked even where unused)
    if promote_every is not None:
        # Checked before any step runs: a bad argument raises no flag.
        if (not isinstance(promote_every, (int, np.integer)) or isinstance(promote_every, bool)
                or promote_every < 1):
            raise ValueError(f"{op}(): promote_every={promote_every!r}; accepted a positive "
                             "integer (products per partial sum)")
        if order != "sequential":
            raise ValueError(f"{op}(): promote_every= declares the order itself (sequential "
                             f"partial sums of {promote_every} products); drop order={order!r}")
        total_fmt = promote_fmt
    if a.fmt != b.fmt:
        raise TypeError(f"{op}(): operands are in different formats ({a.fmt.name} and "
                        f"{b.fmt.name}); convert first, e.g. fpsim.array.round(x, "
                        f"{a.fmt.name!r})")
    acc_fmt = default_format(op, "accumulate", accumulate, a.fmt)
    out_fmt = a.fmt if out is None else declared(op, "out", out)
    if compute is None:
        if not holds(acc_fmt, a.fmt):
            raise ValueError(f"{op}(): exact products need accumulate= to hold every "
                             f"{a.fmt.name} value, and {acc_fmt.name} does not; declare "
                             "compute= (the format products are rounded to) or a wider "
                             "accumulate=")
        work = acc_fmt
    else:
        work = declared(op, "compute", compute)
    ca = steps.convert(a2, a.fmt, work)
    cb = steps.convert(b2, b.fmt, work)
    square = (a2.shape[0], b2.shape[1])
    if compute is None and acc_fmt == FP32 and (total_fmt is None or total_fmt == FP32):
        done = _fast_fp32(ca, cb, a.fmt, order, promote_every, workers, steps)
        if done is not None:
            total = done.reshape(shape)
            return deliver(steps.convert(total, FP32, out_fmt), out_fmt, a.typed)
    def term(i: int) -> np.ndarray:
        """Product i rounded in the working format, converted to A."""
        product = steps.mul(np.broadcast_to(a_terms(ca, i), square), b_terms(cb, i), work)
        return steps.convert(product, work, acc_fmt)

    def terms(piece: range) -> np.ndarray:
        """Products ``piece`` rounded in the working format, converted to A,
        stacked."""
        left = np.stack([np.broadcast_to(a_terms(ca, i), square) for i in piece])
        right = np.stack([np.broadcast_to(b_terms(cb, i), square) for i in piece])
        return steps.convert(steps.mul(left, right, work), work, acc_fmt)

    # Without compute=, where every product is exact in A and no step
    # flushes or draws random numbers, the product rounded on its own is
    # itself (no flag) and adding it rounds once what the fma would (finite
    # operands: no NaN to choose): the same bits in two faster steps.
    fused = compute is None and not (
        steps.plain and _products_exact(acc_fmt, a.fmt)
        and np.isfinite(array.decode(ca, work)).all() and np.isfinite(array.decode(cb, work)).all())
    zero = np.zeros(square, array.code_dtype(acc_fmt))
    if fused or not steps.deterministic:
        # One term at a time: each exact product rounded once with its
        # addition (fma), or each product rounded, then added (under
        # stochastic rounding the random draws follow this step order).
        def sequence(piece: range) -> np.ndarray:
            acc = zero
            for i in piece:
                if fused:
                    acc = steps.fma(a_terms(ca, i), b_terms(cb, i), acc, acc_fmt)
                else:
                    acc = steps.add(acc, term(i), acc_fmt)
            return acc
    else:
        # The products of a block of terms in one call, then their running
        # sum: the same steps, fewer and larger calls.
        block = max(1, _BLOCK_ELEMENTS // max(int(np.prod(square, dtype=np.int64)), 1))

        def sequence(piece: range) -> np.ndarray:
            acc = zero
            for start in builtins.range(piece.start, piece.stop, block):
                idx = builtins.range(start, min(start + block, piece.stop))
                acc = steps.add_sequence(terms(idx), acc_fmt, acc)
            return acc

    if promote_every is None:
        total = _accumulate(steps, acc_fmt, square, k, order, sequence, term, terms)
        total_fmt = acc_fmt
    else:
        assert total_fmt is not None
        total = np.zeros(square, array.code_dtype(total_fmt))
        # (an empty output has no partial sum to promote, whatever k is)
        for piece in _pieces(("blocked", int(promote_every)), k if total.size else 0):
            acc = sequence(piece)
            total = steps.add(total, steps.convert(acc, acc_fmt, total_fmt), total_fmt)
    return deliver(steps.convert(total.reshape(shape), total_fmt, out_fmt), out_fmt, a.typed)


def _fast_fp32(ca: np.ndarray, cb: np.ndarray, fmt: Format, order: Any, promote_every: Any,
               workers: Any, steps: Steps) -> np.ndarray | None:
    """The FP32 accumulation of exact products by the machine's float32
    arithmetic (:mod:`fpsim.ops._gemm32`) as FP32 codes, INEXACT ORed into
    the context; None where its conditions do not hold (the settings, the
    unit, a non-finite operand, a product that is not an FP32 value, or a
    result that is not finite), and the caller computes step by step."""
    if not _gemm32.usable(steps.key) or not ca.size or not cb.size:
        return None
    a32, b32 = ca.view(np.float32), cb.view(np.float32)
    if not (np.isfinite(a32).all() and np.isfinite(b32).all()
            and _gemm32.products_fit(a32, b32, fmt)):
        return None
    k = a32.shape[1]
    if promote_every is not None:
        kind, pieces = "pieces", _pieces(("blocked", int(promote_every)), k)
    elif isinstance(order, tuple):
        kind, pieces = "pieces", _pieces(order, k)
    else:
        kind, pieces = order, None
    done = _gemm32.accumulate(a32, b32, kind, pieces, workers)
    if done is None:
        return None
    result, inexact = done
    if inexact:
        steps.raise_flags(INEXACT)
    return result.view(array.code_dtype(FP32))


@quiet
def dot(x: Any, y: Any, ctx: Context | None = None, *, fmt: Format | str | None = None,
        compute: Format | str | None = None, accumulate: Format | str | None = None,
        out: Format | str | None = None, order: Any = "sequential", rng: Any = None,
        workers: int | None = None, **overrides: Any) -> np.ndarray:
    """The dot product of two vectors of one format, with declared numerics:

    * ``compute=None`` (default): the inputs are converted to ``accumulate``
      (default FP32, or the input's format where FP32 does not hold its
      values: FP64; it must hold every input value exactly) and each
      product is exact and rounded once together with its addition:
      ``acc = fma(x[i], y[i], acc)`` in ``accumulate``; in the
      ``"pairwise"`` order, where a product is a leaf of the tree, it is
      rounded once into ``accumulate`` on its own;
    * ``compute=F``: the inputs are converted to F, each product is rounded
      in F, converted to ``accumulate``, then added (``acc = acc + p``);

    in ``order`` (see :mod:`fpsim.ops`), from +0; the sum is converted to
    ``out`` (default: the input format).  Operands and settings as in
    :func:`sum`; ``workers=`` as in :func:`matmul`.

    >>> import numpy as np
    >>> x = np.array([2.0**-14, 2.0**-14], np.float16)
    >>> float(dot(x, x)), float(dot(x, x, out="fp32"))  # 2**-27 underflows FP16 to 0
    (0.0, 7.450580596923828e-09)
    >>> float(dot(x, x, compute="fp16", out="fp32"))     # products rounded in FP16 first
    0.0

    FP64 vectors accumulate in FP64 (each exact product rounded once with its
    addition: the first fma keeps 1 + 2**-29 of 1 + 2**-29 + 2**-60):

    >>> v = np.array([1.0 + 2.0**-30, -1.0]); w = np.array([1.0 + 2.0**-30, 1.0])
    >>> float(dot(v, w)) == 2.0**-29
    True
    """
    steps = Steps(ctx, rng, overrides)
    a, b = Operand("dot", x, fmt), Operand("dot", y, fmt, "y")
    if a.codes.ndim != 1 or a.codes.shape != b.codes.shape:
        raise ValueError(f"dot() needs two vectors of one length; got shapes "
                         f"{a.codes.shape} and {b.codes.shape}")
    k = a.codes.shape[0]
    return _contract("dot", a, b, a.codes.reshape(1, k), b.codes.reshape(k, 1), (), compute,
                     accumulate, out, order, None, FP32, workers, steps)


@quiet
def matmul(x: Any, y: Any, ctx: Context | None = None, *, fmt: Format | str | None = None,
           compute: Format | str | None = None, accumulate: Format | str | None = None,
           out: Format | str | None = None, order: Any = "sequential",
           promote_every: int | None = None, promote_to: Format | str = FP32,
           rng: Any = None, workers: int | None = None, split_k: int | None = None,
           schedule: Any = None, c: Any = None, alpha: Any = 1.0, beta: Any = None,
           **overrides: Any) -> np.ndarray:
    """The matrix product of ``x`` (M×K) and ``y`` (K×N): every output
    element is the :func:`dot` of a row and a column, with the same declared
    numerics (``compute``, ``accumulate``, ``order``, ``out``).

    ``promote_every=N`` models an accumulator of limited precision that is
    promoted into a wider one every N products, as FP8 tensor-core GEMMs are
    described as doing: the products are summed sequentially in
    ``accumulate`` from +0 in groups of N consecutive k; each group's sum is
    converted to ``promote_to`` (default FP32) and added to a ``promote_to``
    accumulator that starts at +0; that total is converted to ``out``.

    Speed: where every product is an FP32 value and the sums are FP32
    additions rounded to nearest even (the default numerics on FP16, BF16
    and FP8 inputs of ordinary range, without ``ftz``/``daz``), the machine's
    float32 arithmetic computes them, in tiles of the output that stay in
    cache, with TwoSum deciding INEXACT (``fpsim.ops._gemm32``); anything
    else goes step by step through :mod:`fpsim.array`.  ``workers=`` is the
    number of threads the tiles run on: None (default) uses every CPU for
    products of at least 2**20 multiply-adds, 1 the calling thread.  The
    bits and flags never depend on it.

    ``accumulate=`` a matrix-unit model (:func:`fpsim.mma.preset`): the GEMM
    a library builds on that instruction.  K is split into blocks of the
    instruction's k in ascending order (the last one padded with zero
    products); each output element is the chain of instructions along its
    row and column, starting from ``c = +0``, each block's result the next
    block's ``c``; the result, in the unit's output format, is converted to
    ``out`` (default: the unit's output format).  ``compute`` and ``order``
    are the unit's own and may not be given.  A library's schedule
    (:class:`fpsim.mma.Schedule`) composes with it: ``split_k=S`` (slices
    of whole 64-product grains, their results added in FP32 in order),
    ``promote_every=N`` (the chain restarts from +0 every N products, a
    multiple of the instruction's k, and each group is added into a
    ``promote_to`` accumulator), or ``schedule=`` any schedule; ``c=`` (M×N,
    of the output format), ``alpha=`` and ``beta=`` give ``D = alpha·(A @
    B) + beta·C`` by the schedule's epilogue (by default in FP32, one
    fused multiply-add); ``x`` and ``y`` may be of the two FP8 formats of a
    mixed instruction (``fpsim.mma.preset(gpu, ("e4m3", "e5m2"))``; codes
    with ``fmt=("e4m3", "e5m2")``).  Each is refused with a one-line
    ``ValueError`` where it cannot apply; with any other ``accumulate`` they
    are refused.

    ``accumulate=`` a block-scaled instruction
    (``fpsim.mma.preset("b200", "mxfp8")``, :mod:`fpsim.mma.blockscaled`):
    ``x`` and ``y`` are :func:`fpsim.quant.quantize` results with ``"mx"``
    or ``"nvfp4"`` scaling, ``x`` quantized along K (axis 1), ``y`` along K
    (axis 0), of the instruction's element formats and block; their element
    and scale codes go to the instruction, chained along K from +0
    (:meth:`fpsim.mma.blockscaled.BlockScaledModel.gemm`).  NVFP4's per-tensor scales
    are then applied as Transformer Engine applies them, as cuBLASLt's
    ``alpha`` (``1 × amax_x × amax_y / (6·6·448·448)`` in FP32, then
    ``alpha × acc`` rounded to FP32: ``fpsim/ops/_blockgemm.py``).  The
    FP32 result is converted to ``out``.

    ``accumulate=`` a CPU kernel's accumulation (:class:`fpsim.mma.Accumulation`:
    FMA chains, K blocks, interleaved lanes, ...) or a CPU library's row
    (:func:`fpsim.mma.cputable.cpu`, e.g. ``fpsim.mma.cpu("torch", "bf16")``): every
    output element is that order of IEEE operations (``docs/cpu_gemms.rst``),
    rounded once to ``out`` (default: the accumulator's format, or the row's
    output), with ``c=`` where the accumulation says C joins; the result is
    values of the output's dtype.  ``compute``, ``order``, ``split_k``,
    ``promote_every``, ``schedule``, ``alpha`` and ``beta`` are refused.
    The same for an instruction that is a chain of fused multiply-adds
    (:class:`fpsim.mma.FMAChainModel`: FP64 ``mma``/``mfma``, AMD's FP32
    ``mfma``): a GEMM built on it is one chain from ``c`` over all of K.

    >>> import fpsim.mma
    >>> x = np.float16([[1.0, 2.0**-24, 2.0**-24, 2.0**-24, 2.0**-24]])
    >>> y = np.ones((5, 1), np.float16)
    >>> four_lanes = fpsim.mma.Accumulation(lanes=4, join="pairs")
    >>> float(matmul(x, y, accumulate=four_lanes, out="fp32")[0, 0])   # small ones meet first
    1.0000001192092896
    >>> float(matmul(x, y, accumulate=fpsim.mma.Accumulation(), out="fp32")[0, 0])
    1.0

    >>> h100 = fpsim.mma.preset("h100", "e4m3")       # k = 32
    >>> x = np.full((1, 64), 2.0**-7, "float8_e4m3fn"); x[0, 0] = x[0, 32] = 1.0
    >>> float(matmul(x, x.T, accumulate=h100)[0, 0])   # each 2**-14 below 13 bits of 1
    2.0
    >>> float(matmul(x, x.T, out="fp32")[0, 0])         # FP32 accumulation of exact products
    2.0037841796875
    >>> y = x.T.astype("float8_e5m2")                  # E4M3 x E5M2: the mixed instruction
    >>> float(matmul(x, y, accumulate=fpsim.mma.preset("h100", ("e4m3", "e5m2")))[0, 0])
    2.0

    >>> import numpy as np
    >>> x = np.full((1, 4096), 1.0, np.float16); y = np.full((4096, 1), 1.0, np.float16)
    >>> float(matmul(x, y, out="fp32")[0, 0])                       # FP32 accumulation
    4096.0
    >>> float(matmul(x, y, accumulate="fp16", out="fp32")[0, 0])    # 2048 + 1 == 2048 in FP16
    2048.0
    >>> float(matmul(x, y, accumulate="fp16", promote_every=128, out="fp32")[0, 0])
    4096.0
    """
    if isinstance(accumulate, (Accumulation, CPUGEMM, FMAChainModel)):
        _refuse("a CPU accumulation or an FMA-chain instruction",
                " (its order and roundings are the accumulation's)",
                order, alpha, sorted(overrides), compute=compute, split_k=split_k,
                promote_every=promote_every, schedule=schedule, beta=beta, rng=rng)
        return _cpu_matmul(x, y, accumulate, fmt, out, c)
    if isinstance(accumulate, BlockScaledModel):
        from ._blockgemm import block_scaled_matmul

        _refuse("a block-scaled instruction", "", order, alpha, [], fmt=fmt, compute=compute,
                split_k=split_k, promote_every=promote_every, schedule=schedule, c=c, beta=beta)
        ctx, _ = resolve(ctx, overrides)
        return block_scaled_matmul(x, y, accumulate, out, ctx)
    steps = Steps(ctx, rng, overrides)
    a, b = _matrices(x, y, fmt)
    shape = (a.codes.shape[0], b.codes.shape[1])
    check_size("matmul", shape, 8, "the output")  # its float64 sums, before any work
    return _contract("matmul", a, b, a.codes, b.codes, shape, compute, accumulate, out, order,
                     promote_every, promote_to, workers, steps, split_k=split_k,
                     schedule=schedule, c=c, alpha=alpha, beta=beta)


def _refuse(what: str, why: str, order: Any, alpha: Any, settings: list[str],
            **given: Any) -> None:
    """``ValueError`` naming the arguments ``matmul(accumulate=...)`` of
    ``what`` does not take, where any is given (not None; ``order`` other
    than sequential; ``alpha`` other than the number 1: a bool is no
    number, whatever it equals; any context ``settings``)."""
    names = [k for k, v in given.items() if v is not None]
    names += ["order"] * (order != "sequential")
    names += ["alpha"] * (not (type(alpha) in (int, float) and alpha == 1.0))
    names += settings
    if names:
        raise ValueError(f"matmul(): accumulate= {what} takes none of {', '.join(names)}{why}")


def _matrices(x: Any, y: Any, fmt: Any) -> tuple[Operand, Operand]:
    """``matmul``'s operands, an M×K and a K×N matrix (``fmt``: one
    format or a pair)."""
    fx, fy = tuple(fmt) if isinstance(fmt, (tuple, list)) and len(fmt) == 2 else (fmt, fmt)
    a, b = Operand("matmul", x, fx), Operand("matmul", y, fy, "y")
    if a.codes.ndim != 2 or b.codes.ndim != 2 or a.codes.shape[1] != b.codes.shape[0]:
        raise ValueError(f"matmul() needs an M×K and a K×N matrix; got shapes "
                         f"{a.codes.shape} and {b.codes.shape}")
    return a, b


def _cpu_matmul(x: Any, y: Any, acc: Any, fmt: Any, out: Any, c: Any) -> np.ndarray:
    """``matmul(..., accumulate=)`` a CPU kernel's accumulation
    (:class:`fpsim.mma.Accumulation`) or a CPU library's row
    (:func:`fpsim.mma.cpu`): the result of that order of IEEE operations,
    rounded once to the output format, as values of its dtype."""
    a, b = _matrices(x, y, fmt)
    if isinstance(acc, FMAChainModel):
        # a GEMM on the instruction: its blocks along K are one chain from C (+0 without)
        f = acc.output_format.name
        inputs, out_name, unit = (f, f), f, acc

        def compute(av: np.ndarray, bv: np.ndarray, cv: Any) -> np.ndarray:
            c0 = np.zeros((av.shape[0], bv.shape[1])) if cv is None else cv
            return acc.to_dtype(acc.values(av[:, None, :], bv.T[None, :, :], c0))
    else:
        g = acc if isinstance(acc, CPUGEMM) else cpu_kernel(
            acc, (a.fmt.name, b.fmt.name),
            acc.accumulator if out is None else declared("matmul", "out", out).name)
        inputs, out_name, unit, compute = g.row.inputs, g.row.out, g, g.compute
    have = ((a.fmt.name, b.fmt.name), out_name if out is None else declared(
        "matmul", "out", out).name)
    if have != (tuple(inputs), out_name):
        raise ValueError(f"matmul(): {unit!r} takes {inputs[0]} x {inputs[1]} -> {out_name}; "
                         f"got {have[0][0]} x {have[0][1]} -> {have[1]}")
    av = array.decode(a.codes, a.fmt)
    bv = array.decode(b.codes, b.fmt)
    cv = None
    if c is not None:
        co = Operand("matmul", c, out_name, "c")
        if co.codes.shape != (av.shape[0], bv.shape[1]):
            raise ValueError(f"matmul(): c must be {(av.shape[0], bv.shape[1])}, got "
                             f"{co.codes.shape}")
        cv = array.decode(co.codes, co.fmt)
    return compute(av, bv, cv)
