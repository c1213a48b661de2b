"""GEMM on a matrix unit: :func:`fpsim.ops.matmul` with ``accumulate=`` a
:class:`fpsim.mma.MMAModel`.

A library GEMM built on one matrix instruction (``d = a·b + c`` over the
instruction's k products, :mod:`fpsim.mma`) computes each output element
``D[m, n]`` as a chain of instructions along K: the first k products with
``c = +0``, the next k with the first result as ``c``, and so on, in
ascending order of k; a last, shorter block is padded with zero products.
A :class:`fpsim.mma.Schedule` (split-K, promotion, where ``C`` joins, the
epilogue) says how the chains are cut and merged; :func:`fpsim.mma.gemm.run`
runs it on tiles of output elements.  The one conversion into ``out``
follows the call's settings (the only step that may raise IEEE flags: the
unit and the schedule's own steps raise none).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..mma import MMAModel, Schedule
from ..mma.gemm import epilogue_numbers, run
from .operands import Operand, declared, deliver


def schedule_of(op: str, schedule: Any, split_k: Any, promote_every: Any,
                promote_to: Any) -> Schedule | None:
    """The schedule a matmul call declares: ``schedule=`` itself, one built
    from ``split_k=``, ``promote_every=`` and ``promote_to=``, or None (one
    chain along K)."""
    if schedule is not None:
        if not isinstance(schedule, Schedule):
            raise TypeError(f"{op}(): schedule= takes an fpsim.mma.Schedule, got "
                            f"{type(schedule).__name__}")
        for name, value in (("split_k", split_k), ("promote_every", promote_every)):
            if value is not None:
                raise ValueError(f"{op}(): schedule= declares {name} itself; drop {name}="
                                 f"{value!r} (or use schedule.replace({name}=...))")
        return schedule
    if split_k is None and promote_every is None:
        return None
    try:
        return Schedule(split_k=1 if split_k is None else split_k, promote_every=promote_every,
                        compute=declared(op, "promote_to", promote_to).name)
    except (TypeError, ValueError) as e:
        raise type(e)(f"{op}(): {str(e).removeprefix('Schedule: ')}") from None


def matrix_unit_gemm(op: str, model: MMAModel, a: Operand, b: Operand, a2: np.ndarray,
                     b2: np.ndarray, shape: tuple[int, ...], out: Any, steps: Any,
                     schedule: Schedule | None = None, c: Any = None, alpha: Any = 1.0,
                     beta: Any = None, workers: int | None = None,
                     **defaults_only: Any) -> np.ndarray:
    """The body of matmul/dot on ``model`` (see the module's docstring):
    ``a2`` M×K and ``b2`` K×N codes of the model's input formats."""
    for name, value in defaults_only.items():
        if value is not None:
            raise ValueError(f"{op}(): accumulate={model!r} declares the products, the order "
                             f"and the accumulator itself; drop {name}={value!r}")
    for operand, fmt, which in ((a, model.input_format, "x"), (b, model.input_b_format, "y")):
        if operand.fmt != fmt:
            raise TypeError(f"{op}(): {model!r} takes {which} in {fmt.name}; got "
                            f"{operand.fmt.name} (convert first, e.g. fpsim.array.round(x, "
                            f"{fmt.name!r}))")
    unit = model.output_format
    out_fmt = unit if out is None else declared(op, "out", out)
    schedule = schedule or Schedule(compute=None)
    m, n = a2.shape[0], b2.shape[1]
    c_codes = None
    if c is not None:
        cop = Operand(op, c, out_fmt if not a.typed else None, "c")
        if cop.fmt != out_fmt:
            raise TypeError(f"{op}(): c is {cop.fmt.name}; accepted: the output format "
                            f"{out_fmt.name}")
        if cop.codes.shape != (m, n):
            raise ValueError(f"{op}(): c must have shape {(m, n)} (M×N); got {cop.codes.shape}")
        c_codes = cop.codes
    alpha_v, beta_v = epilogue_numbers(alpha, beta, c is not None, f"{op}()")
    try:
        d = run(model, schedule, a2, b2, out_fmt, c=c_codes, alpha=alpha_v, beta=beta_v,
                convert=steps.convert, workers=workers)
    except ValueError as e:
        raise ValueError(f"{op}(): {e}") from None
    return deliver(d.reshape(shape), out_fmt, a.typed)
