"""GEMM on a matrix unit: :func:`fpsim.ops.matmul` with ``accumulate=`` a
:class:`fpsim.mma.MMAModel`.

A library GEMM built on one matrix instruction (``d = a·b + c`` over the
instruction's k products, :mod:`fpsim.mma`) computes each output element
``D[m, n]`` as a chain of instructions along K: the first k products with
``c = +0``, the next k with the first result as ``c``, and so on, in
ascending order of k; a last, shorter block is padded with zero products.
That is :class:`~fpsim.mma.MMAModel`'s ``chain=True`` on the row ``A[m, :]``
and the column ``B[:, n]``, which this module runs on tiles of output
elements (so that a tile's operands, not the whole M×N×K, are in memory at a
time).  The chained result, in the unit's output format, is then converted
to ``out`` under the call's settings (the only step that may raise IEEE
flags: the unit itself raises none).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import array
from ..formats import Format
from ..mma import MMAModel
from .operands import Operand, declared, deliver

# Operand codes of one tile: M×N pairs times K elements for each of a and b.
_TILE_ELEMENTS = 1 << 22


def matrix_unit_gemm(op: str, model: MMAModel, a: Operand, b: Operand, a2: np.ndarray,
                     b2: np.ndarray, shape: tuple[int, ...], out: Any, steps: Any,
                     **defaults_only: Any) -> np.ndarray:
    """The body of matmul/dot on ``model`` (see the module's docstring):
    ``a2`` M×K and ``b2`` K×N codes of the model's input format."""
    for name, value in defaults_only.items():
        if value is not None:
            raise ValueError(f"{op}(): accumulate={model!r} declares the products, the order "
                             f"and the accumulator itself; drop {name}={value!r}")
    fmt = model.input_format
    for operand in (a, b):
        if operand.fmt != fmt:
            raise TypeError(f"{op}(): {model!r} takes {fmt.name} inputs; got "
                            f"{operand.fmt.name} (convert first, e.g. fpsim.array.round(x, "
                            f"{fmt.name!r}))")
    unit: Format = model.output_format
    out_fmt = unit if out is None else declared(op, "out", out)
    m, k = a2.shape
    n = b2.shape[1]
    result = np.zeros(m * n, array.code_dtype(unit))
    if m * n and k:
        rows = np.arange(m * n)
        tile = max(1, _TILE_ELEMENTS // k)
        bt = np.ascontiguousarray(b2.T)  # (N, K): column n of b as a row
        for start in range(0, m * n, tile):
            pairs = rows[start:start + tile]
            d = model(a2[pairs // n], bt[pairs % n], None, fmt=fmt, chain=True)
            result[start:start + tile] = d.view(result.dtype)
    total = result.reshape(shape)
    return deliver(steps.convert(total, unit, out_fmt), out_fmt, a.typed)
