"""The scale-computation conformance table: what fpsim returns as the
scale of one block for edge-case amaxes (zero, subnormal, at and just
above a power of two, the largest finite values, NaN and infinity inside
the block), amax given in FP32, FP16 and BF16, for each MX element format
and E8M0 rounding rule, and for NVFP4.  docs/quant.rst prints it (a
doctest: the table in the docs is what this code computes)."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

from .._errstate import quiet
from ..formats import E8M0
from ._elements import MXINT8, element_format
from ._mx import check_scale_rounding

__all__ = ["scale_table", "CASES", "MX_COLUMNS"]

MX_COLUMNS = ("e4m3", "e5m2", "e3m2", "e2m3", "e2m1", "int8")
_DTYPES = {"fp32": np.float32, "fp16": np.float16, "bf16": ml_dtypes.bfloat16}

#: (label, dtype, amax): the block holds amax, -amax / 2 and zeros; "max"
#: is the column's element max; "nan" and "inf" join a block whose amax
#: is otherwise 1.
CASES: tuple[tuple[str, str, Any], ...] = (
    ("zero block", "fp32", 0.0),
    ("2**-149 (FP32 min subnormal)", "fp32", 2.0 ** -149),
    ("2**-133 (BF16 min subnormal)", "bf16", 2.0 ** -133),
    ("2**-127 (E8M0 min)", "fp32", 2.0 ** -127),
    ("2**-24 (FP16 min subnormal)", "fp16", 2.0 ** -24),
    ("1 (a power of two)", "fp32", 1.0),
    ("1 + 2**-23 (FP32)", "fp32", 1.0 + 2.0 ** -23),
    ("1 + 2**-10 (FP16)", "fp16", 1.0 + 2.0 ** -10),
    ("1 + 2**-7 (BF16)", "bf16", 1.0 + 2.0 ** -7),
    ("1.75", "fp32", 1.75),
    ("2 - 2**-10 (FP16)", "fp16", 2.0 - 2.0 ** -10),
    ("the element max", "fp32", "max"),
    ("next FP32 above the element max", "fp32", "max+"),
    ("65504 (FP16 max)", "fp16", 65504.0),
    ("FP32 max", "fp32", float(np.finfo(np.float32).max)),
    ("NaN in the block", "fp32", "nan"),
    ("inf in the block", "fp32", "inf"),
)


def _block(dtype: str, amax: Any, size: int, elem_max: float) -> np.ndarray:
    b = np.zeros(size)
    if amax == "nan":
        b[:2] = (1.0, np.nan)
    elif amax == "inf":
        b[:2] = (1.0, np.inf)
    else:
        a = (elem_max if amax == "max" else
             float(np.nextafter(np.float32(elem_max), np.float32(np.inf))) if amax == "max+"
             else float(amax))
        b[:2] = (a, -a / 2)
    return b.astype(_DTYPES[dtype])


@quiet
def scale_table(scaling: str = "mx", scale_rounding: str = "floor") -> str:
    """The table for ``scaling="mx"`` under one ``scale_rounding`` (each
    cell the block's scale exponent ``k`` of ``X = 2**k``; ``NaN`` for the
    NaN scale 0xFF), or for ``scaling="nvfp4"`` (the block's E4M3 scale and
    the FP32 tensor scale, the block being the whole tensor; ``refused``
    where quantize() raises: a NaN, which no NVFP4 step carries).

    >>> print(scale_table("mx", "rceil").splitlines()[14])
    next FP32 above the element max       1     1     1     1     1     0
    """
    from ._quantize import quantize

    if scaling == "nvfp4":
        return _nvfp4_table(quantize)
    if scaling != "mx":
        raise ValueError(f"scale_table(): scaling={scaling!r}; accepted 'mx' or 'nvfp4'")
    # (checked here: quantize() refusing it would read as every cell refused)
    check_scale_rounding(scale_rounding)
    names = ("E4M3", "E5M2", "E3M2", "E2M3", "E2M1", "INT8")
    width = max(len(c[0]) for c in CASES) + 2
    lines = [f"{'amax':<{width}}" + "".join(f"{n:>6}" for n in names),
             "-" * (width + 6 * len(names))]
    for label, dtype, amax in CASES:
        cells = []
        for col in MX_COLUMNS:
            elem = MXINT8 if col == "int8" else element_format(col)
            block = _block(dtype, amax, 32, float(elem.max))
            try:
                q = quantize(block, col, "mx", scale_rounding=scale_rounding)
            except ValueError:
                cells.append("refused")
                continue
            code = int(np.asarray(q.scale).view(np.uint8).reshape(-1)[0])
            cells.append("NaN" if code == E8M0.max_code + 1 else str(code - 127))
        lines.append(f"{label:<{width}}" + "".join(f"{c:>6}" if len(c) < 6 else f" {c}"
                                                       for c in cells))
    return "\n".join(line.rstrip() for line in lines)


def _nvfp4_table(quantize: Any) -> str:
    width = max(len(c[0]) for c in CASES) + 2
    lines = [f"{'amax':<{width}}{'block scale (E4M3)':>20}{'s_enc (FP32)':>16}",
             "-" * (width + 36)]
    for label, dtype, amax in CASES:
        block = _block(dtype, amax, 16, 6.0)
        try:
            q = quantize(block, "e2m1", "nvfp4")
        except ValueError:
            lines.append(f"{label:<{width}}{'refused':>20}{'':>16}")
            continue
        s = float(np.asarray(q.scale).astype(np.float64).reshape(-1)[0])
        t = float(np.asarray(q.tensor_scale).astype(np.float64))
        lines.append(f"{label:<{width}}{s:>20.6g}{t:>16.6g}")
    return "\n".join(line.rstrip() for line in lines)
