"""Named reference operators for ``python -m fpsim ref``: the golden output
of an operator on input dumps, without writing Python.

Each entry says how many inputs the operator takes and which declared
numerics it accepts; the computation is the array engine's
(:mod:`fpsim.array`) or the reference operators' (:mod:`fpsim.ops`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import array as _array
from .. import ops as _ops
from ..formats import Format

# Context settings every operator takes.
SETTINGS = ("rounding", "saturate", "ftz", "daz")


def _broadcast(shapes: list[tuple[int, ...]]) -> tuple[int, ...] | None:
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        return None


def _reduced(shapes: list[tuple[int, ...]]) -> tuple[int, ...] | None:
    return shapes[0][:-1] if shapes[0] else None


def _matmul_shape(shapes: list[tuple[int, ...]]) -> tuple[int, ...] | None:
    x, y = shapes
    if len(x) != 2:
        return None
    if len(y) == 1:  # a raw dump, read as K×N (see _matmul)
        return (x[0], y[0] // x[1]) if x[1] and not y[0] % x[1] else None
    return (x[0], y[1]) if len(y) == 2 else None


@dataclass(frozen=True)
class Reference:
    name: str
    inputs: int
    run: Callable[..., np.ndarray]
    options: tuple[str, ...]   # declared numerics beyond the context settings
    summary: str
    # The output's shape from the inputs' shapes, known before any work (None
    # where the inputs do not fit the operator: running it says why).
    shape: Callable[[list[tuple[int, ...]]], tuple[int, ...] | None] = _broadcast


def _elementwise(fn: Callable[..., Any]) -> Callable[..., np.ndarray]:
    def run(operands: list[np.ndarray], fmt: Format, **kw: Any) -> np.ndarray:
        return fn(*operands, fmt=fmt, **kw)
    return run


def _cast(operands: list[np.ndarray], fmt: Format, *, out: Format, **kw: Any) -> np.ndarray:
    return _array.convert(operands[0], fmt, out, **kw)


def _last_axis(fn: Callable[..., Any]) -> Callable[..., np.ndarray]:
    def run(operands: list[np.ndarray], fmt: Format, **kw: Any) -> np.ndarray:
        return fn(operands[0], axis=-1, fmt=fmt, **kw)
    return run


def _matmul(operands: list[np.ndarray], fmt: Format, **kw: Any) -> np.ndarray:
    x, y = operands
    if x.ndim != 2:
        raise ValueError(f"matmul's first input must be M×K: give --shape MxK (it is {x.shape})")
    if y.ndim == 1:  # a raw dump: K×N with K from the first input
        k = x.shape[1]
        if k == 0 or y.size % k:
            raise ValueError(f"matmul's second input has {y.size} elements, not a multiple of "
                             f"K = {k}; give --shape for both inputs")
        y = y.reshape(k, y.size // k)
    return _ops.matmul(x, y, fmt=fmt, **kw)


_DECLARED = ("compute", "accumulate", "out", "order")

REFERENCES = {r.name: r for r in [
    Reference("add", 2, _elementwise(_array.add), (), "x + y elementwise"),
    Reference("sub", 2, _elementwise(_array.sub), (), "x - y elementwise"),
    Reference("mul", 2, _elementwise(_array.mul), (), "x × y elementwise"),
    Reference("div", 2, _elementwise(_array.div), (), "x / y elementwise"),
    Reference("fma", 3, _elementwise(_array.fma), (), "x × y + z, one rounding"),
    Reference("sqrt", 1, _elementwise(_array.sqrt), (), "square root"),
    Reference("cast", 1, _cast, ("out",), "convert to --out-fmt"),
    *(Reference(n, 1, _elementwise(getattr(_ops, n)), (), f"{n}, correctly rounded")
      for n in ("exp", "log", "tanh", "erf", "rsqrt", "reciprocal")),
    Reference("relu", 1, _elementwise(_ops.relu), ("out",), "max(x, 0)"),
    *(Reference(n, 1, _elementwise(getattr(_ops, n)), ("compute", "out"), f"{n} (fpsim.ops)")
      for n in ("sigmoid", "silu", "gelu")),
    Reference("sum", 1, _last_axis(_ops.sum), ("accumulate", "out", "order"),
              "sum over the last axis", _reduced),
    Reference("mean", 1, _last_axis(_ops.mean), ("accumulate", "out", "order"),
              "mean over the last axis", _reduced),
    *(Reference(n, 1, _last_axis(getattr(_ops, n)), _DECLARED, f"{n} over the last axis")
      for n in ("softmax", "log_softmax")),
    *(Reference(n, 1, lambda ops, fmt, _n=n, **kw: getattr(_ops, _n)(ops[0], fmt=fmt, **kw),
                _DECLARED, f"{n} over the last axis (no weight or bias)")
      for n in ("layer_norm", "rms_norm")),
    Reference("matmul", 2, _matmul, _DECLARED, "M×K times K×N", _matmul_shape),
]}


def parse_order(text: str) -> Any:
    """``sequential``, ``pairwise``, ``blocked:N`` or ``split:S``."""
    if ":" in text:
        kind, _, n = text.partition(":")
        try:
            return (kind, int(n))
        except ValueError:
            raise ValueError(f"order {text!r}: accepted: sequential, pairwise, blocked:N, "
                             "split:S") from None
    return text


def reference(name: str) -> Reference:
    try:
        return REFERENCES[name]
    except KeyError:
        raise ValueError(f"unknown operator {name!r}; accepted: "
                         f"{', '.join(sorted(REFERENCES))}") from None
