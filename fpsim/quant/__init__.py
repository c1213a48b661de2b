"""Quantization: scaling recipes simulated step by step, each step rounded
in its declared format (:func:`quantize`), and the element formats they use
(the floating-point formats of :mod:`fpsim.formats`, the two's complement
integers ``INT8``, ``INT4``, ``INT2``, ``INT1``, and OCP
MX's ``MXINT8``).

>>> import numpy as np
>>> from fpsim import quant
>>> q = quant.quantize(np.float32([[1.0, -2.0], [0.25, 8.0]]), "e4m3", "channel")
>>> q.scale.tolist(), q.data.astype(float).tolist()
([0.004464285913854837, 0.01785714365541935], [[224.0, -448.0], [14.0, 448.0]])
"""

from ._blame import RecipeReport, recipe_report
from ._delayed import DelayedScaling
from ._elements import (
    INT1,
    INT2,
    INT2_SYM,
    INT4,
    INT4_SYM,
    INT8,
    INT8_SYM,
    INT_FORMATS,
    MXINT8,
    MXINT8_SYM,
    IntFormat,
)
from ._loss_scaling import LossScaler, ScaleSweep, StepRecord, scale_sweep
from ._mx import SCALE_ROUNDINGS
from ._quantize import BlockOperand, Quantized, Recipe, quantize
from ._recipes import BUGS, LIBRARIES, recipe
from ._report import QuantReport, error_report
from ._table import scale_table

__all__ = ["quantize", "recipe", "recipe_report", "RecipeReport", "LIBRARIES", "BUGS",
           "Quantized", "BlockOperand", "Recipe",
           "error_report", "QuantReport",
           "DelayedScaling", "LossScaler", "StepRecord", "scale_sweep", "ScaleSweep", "IntFormat",
           "INT8", "INT4", "INT2", "INT1", "MXINT8", "INT8_SYM", "INT4_SYM", "INT2_SYM",
           "MXINT8_SYM", "INT_FORMATS", "SCALE_ROUNDINGS", "scale_table"]
