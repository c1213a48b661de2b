"""``ops.matmul`` on block-scaled operands: the results of
:func:`fpsim.quant.quantize` with MX or NVFP4 scaling, multiplied by a
block-scaled instruction (:mod:`fpsim.mma.blockscaled`) chained along K.

The operands are read through their ``block_operand()`` (so this layer
does not import the quantization layer): element codes, scale codes, the
formats, the block, the axis the blocks run along, and NVFP4's per-tensor
scale.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import array
from ..context import Context
from ..formats import FP32
from ..formats import format as _lookup
from ..mma.blockscaled import BlockScaledModel
from .operands import deliver


def block_scaled_matmul(x: Any, y: Any, unit: BlockScaledModel, out: Any,
                        ctx: Context) -> np.ndarray:
    """``x @ y`` as a kernel on ``unit`` computes it (see ``ops.matmul``)."""
    p = unit.params
    parts = []
    for v, name, axis, fmt in ((x, "x", 1, p.a), (y, "y", 0, p.b)):
        get = getattr(v, "block_operand", None)
        if get is None:
            raise TypeError(f"matmul(): accumulate={unit!r} takes fpsim.quant.quantize "
                            f"results with 'mx' or 'nvfp4' scaling; {name} is "
                            f"{type(v).__name__}")
        codes, scales, elem, scale, block, along, tensor_scale = get()
        if codes.ndim != 2 or along != axis:
            raise ValueError(f"matmul(): {name} must be 2-D and quantized along K (axis "
                             f"{axis} of {name}); it has shape {codes.shape}, blocks along "
                             f"axis {along}")
        if (elem, scale, block) != (fmt, p.scale, p.block):
            raise ValueError(f"matmul(): {name} holds {elem} elements with {scale} scales per "
                             f"{block}; the instruction takes {fmt} with {p.scale} per "
                             f"{p.block}")
        if tensor_scale is not None:
            raise ValueError("matmul(): NVFP4 operands carry a per-tensor FP32 scale, and "
                             "where a library applies it is not modelled yet; multiply the "
                             "block-scaled product (unit.gemm of block_operand()'s codes and "
                             "scales) by your library's alpha")
        parts.append((codes, scales))
    (ca, sa), (cb, sb) = parts
    if ca.shape[1] != cb.shape[0]:
        raise ValueError(f"matmul(): x is {ca.shape} and y is {cb.shape}; K must agree")
    d = unit.gemm(ca, cb, sa, sb)
    if out is None or _lookup(out) == FP32:
        return d
    dst = _lookup(out)
    return deliver(array.convert(d.view(np.uint32), FP32, dst, ctx), dst, True)
