"""What a quantization did to a tensor: errors, SQNR, and counts of the
values it saturated, flushed to zero, or turned into NaN or infinity."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import array
from .._errstate import quiet
from ..array.engine import check_flag
from ..ops.operands import Operand
from ._quantize import Quantized

__all__ = ["QuantReport", "error_report"]


@dataclass
class QuantReport:
    """Errors of ``dequantize()`` against the original values (float64,
    over elements where both are finite) and counts of what went wrong.

    * ``max_abs_error``, ``max_rel_error`` (relative to ``|x|``, over
      nonzero ``x``), ``sqnr_db`` = 10 log10(sum x² / sum (x - x̂)²)
      (``inf`` when every finite element is exact);
    * ``saturated``: scaled values beyond the element format's max;
    * ``flushed_to_zero``: nonzero finite inputs whose element is zero;
    * ``nan_produced`` / ``inf_produced``: NaN (infinite) results of
      non-NaN (finite) inputs;
    * ``per_block``: the same counts and errors per scaling group, when
      asked for.
    """

    total: int
    max_abs_error: float
    max_rel_error: float
    sqnr_db: float
    saturated: int
    flushed_to_zero: int
    nan_produced: int
    inf_produced: int
    per_block: list[dict[str, Any]] | None = field(default=None, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """The report as a JSON-ready dict."""
        d: dict[str, Any] = {k: getattr(self, k) for k in (
            "total", "max_abs_error", "max_rel_error", "sqnr_db", "saturated",
            "flushed_to_zero", "nan_produced", "inf_produced")}
        if self.per_block is not None:
            d["per_block"] = self.per_block
        return d

    def __str__(self) -> str:
        rows = [("elements", f"{self.total}"),
                ("max abs error", f"{self.max_abs_error:.6g}"),
                ("max rel error", f"{self.max_rel_error:.6g}"),
                ("SQNR", f"{self.sqnr_db:.2f} dB"),
                ("saturated", f"{self.saturated}"),
                ("flushed to zero", f"{self.flushed_to_zero}"),
                ("NaN produced", f"{self.nan_produced}"),
                ("inf produced", f"{self.inf_produced}")]
        width = max(len(k) for k, _ in rows)
        return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)


@quiet
def error_report(x: Any, q: Quantized, *, fmt: Any = None, per_block: bool = False
                 ) -> QuantReport:
    """Compare ``q.dequantize()`` with the tensor ``x`` it was made from
    (values of a float dtype, or codes with ``fmt=``).

    >>> import numpy as np
    >>> from fpsim.quant import quantize
    >>> x = np.float16([[0, 0, 0.1, 0.1]])
    >>> r = error_report(x, quantize(x, "e5m2", scale_format="fp16"))
    >>> r.nan_produced, r.saturated
    (2, 2)
    >>> print(error_report(x, quantize(x, "e5m2")))   # x × (1 / scale) is 57344.004
    elements         4
    max abs error    0
    max rel error    0
    SQNR             inf dB
    saturated        2
    flushed to zero  0
    NaN produced     0
    inf produced     0
    """
    if not isinstance(q, Quantized):
        raise TypeError(f"error_report(): q must be the fpsim.quant.Quantized that quantize() "
                        f"made from x, got {type(q).__name__}")
    check_flag("per_block", per_block)
    source = Operand("error_report", x, fmt)
    original = array.decode(source.codes, source.fmt)
    if original.shape != q.saturated.shape:
        raise ValueError(f"error_report(): x has shape {original.shape}, the quantized tensor "
                         f"{q.saturated.shape}")
    approx = q.dequantize()
    report = _measure(original, approx, q.saturated)
    if per_block:
        keys = q.group_index()
        report.per_block = []
        for i, label in enumerate(q.group_labels()):
            mine = keys == i
            report.per_block.append({"block": label, **_measure(
                original[mine], approx[mine], q.saturated[mine]).to_dict()})
    return report


def _measure(x: np.ndarray, y: np.ndarray, saturated: np.ndarray) -> QuantReport:
    with np.errstate(all="ignore"):
        finite = np.isfinite(x) & np.isfinite(y)
        err = np.abs(x[finite] - y[finite])
        ref = np.abs(x[finite])
        nonzero = ref > 0
        signal = float(np.sum(x[finite] ** 2))
        noise = float(np.sum(err ** 2))
    if noise == 0:
        sqnr = math.inf
    elif signal == 0:
        sqnr = -math.inf
    else:
        sqnr = 10 * math.log10(signal / noise)
    return QuantReport(
        total=int(x.size),
        max_abs_error=float(err.max()) if err.size else 0.0,
        max_rel_error=float((err[nonzero] / ref[nonzero]).max()) if nonzero.any() else 0.0,
        sqnr_db=sqnr,
        saturated=int(saturated.sum()),
        flushed_to_zero=int(np.sum(np.isfinite(x) & (x != 0) & (y == 0))),
        nan_produced=int(np.sum(~np.isnan(x) & np.isnan(y))),
        inf_produced=int(np.sum(np.isfinite(x) & np.isinf(y))))
