"""``ops.matmul`` on block-scaled operands: the results of
:func:`fpsim.quant.quantize` with MX or NVFP4 scaling, multiplied by a
block-scaled instruction (:mod:`fpsim.mma.blockscaled`) chained along K.

The operands are read through their ``block_operand()`` (so this layer
does not import the quantization layer): element codes, scale codes, the
formats, the block, the axis the blocks run along, and NVFP4's per-tensor
encode scale and amax.

NVFP4's per-tensor scales are applied where Transformer Engine (whose
recipe :func:`fpsim.quant.quantize` follows) applies them: outside the
tensor core, in cuBLASLt's epilogue, as ``alpha``.  Transformer Engine
computes ``alpha = alpha_in × amax_A × amax_B × factor_inv`` in FP32, left
to right, ``alpha_in = 1`` and ``factor_inv`` the float nearest the double
nearest ``1 / (6·6·448·448)`` (``compute_nvfp4_per_tensor_scale_kernel``,
transformer_engine/common/recipe/nvfp4.cu, commit 0191035), and cuBLASLt
computes ``D = alpha · acc`` in FP32 (round to nearest even), then
converts ``D`` to the output type.  No GPU output of this step is
recorded: the placement is read from the library's source, the FP32
arithmetic of the epilogue is cuBLASLt's documented ``D = alpha·(A·B)``
with an FP32 compute type.  (torchao's ``NVFP4Tensor`` differs: it
multiplies the GEMM's result, already in the output dtype, by its scales in
that dtype; its quantization differs too.)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import array
from ..context import Context
from ..formats import FP32, FP64
from ..formats import format as _lookup
from ..mma.blockscaled import BlockScaledModel
from ..modes import Rounding
from ..rounding import round_exact
from .operands import deliver

#: Transformer Engine's ``factor``: the largest E2M1 element times the
#: largest E4M3 scale, squared (one for each operand).
TENSOR_SCALE_FACTOR = 6 * 6 * 448 * 448


def block_scaled_matmul(x: Any, y: Any, unit: BlockScaledModel, out: Any,
                        ctx: Context) -> np.ndarray:
    """``x @ y`` as a kernel on ``unit`` computes it (see ``ops.matmul``);
    NVFP4 operands with their per-tensor scales applied as the module's
    note says."""
    p = unit.params
    parts = []
    for v, name, axis, fmt in ((x, "x", 1, p.a), (y, "y", 0, p.b)):
        get = getattr(v, "block_operand", None)
        if get is None:
            raise TypeError(f"matmul(): accumulate={unit!r} takes fpsim.quant.quantize "
                            f"results with 'mx' or 'nvfp4' scaling; {name} is "
                            f"{type(v).__name__}")
        op = get()
        codes, elem, scale, block, along = op.codes, op.element, op.scale, op.block, op.axis
        if codes.ndim != 2 or along != axis:
            raise ValueError(f"matmul(): {name} must be 2-D and quantized along K (axis "
                             f"{axis} of {name}); it has shape {codes.shape}, blocks along "
                             f"axis {along}")
        if (elem, scale, block) != (fmt, p.scale, p.block):
            raise ValueError(f"matmul(): {name} holds {elem} elements with {scale} scales per "
                             f"{block}; the instruction takes {fmt} with {p.scale} per "
                             f"{p.block}")
        parts.append(op)
    oa, ob = parts
    if oa.codes.shape[1] != ob.codes.shape[0]:
        raise ValueError(f"matmul(): x is {oa.codes.shape} and y is {ob.codes.shape}; K must "
                         f"agree")
    if (oa.tensor_amax is None) != (ob.tensor_amax is None):
        raise ValueError("matmul(): one operand carries an NVFP4 per-tensor scale and the "
                         "other does not; quantize both with 'nvfp4' scaling")
    d = unit.gemm(oa.codes, ob.codes, oa.scales, ob.scales).view(np.uint32)
    if oa.tensor_amax is not None:
        d = _tensor_scaled(d, oa.tensor_amax, ob.tensor_amax)
    dst = FP32 if out is None else _lookup(out)
    if dst == FP32:
        return d.view(np.float32)
    return deliver(array.convert(d, FP32, dst, ctx), dst, True)


def _tensor_scaled(d: np.ndarray, amax_a: Any, amax_b: Any) -> np.ndarray:
    """FP32 codes of ``alpha × d``, alpha as Transformer Engine computes
    it (the module's note), every step rounded to nearest even."""
    rne = Context()  # the library's own FP32 arithmetic (no flags to the caller's)
    # factor_inv: a C++ constant, 1.0 / factor in double, then float
    code64, _ = round_exact(FP64, False, 1, TENSOR_SCALE_FACTOR, 0, Rounding.RNE)
    inv = array.convert(np.uint64(code64), FP64, FP32, rne)
    alpha = array.encode(np.float64(1.0), FP32, rne)  # alpha_in
    for factor in (array.encode(np.asarray(amax_a, np.float64), FP32, rne),
                   array.encode(np.asarray(amax_b, np.float64), FP32, rne), inv):
        alpha = array.mul(alpha, factor, rne, fmt=FP32)
    return array.mul(d, np.broadcast_to(alpha, d.shape), rne, fmt=FP32).astype(np.uint32)
