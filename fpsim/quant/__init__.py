"""Quantization: scaling recipes simulated step by step, each step rounded
in its declared format (:func:`quantize`), and the element formats they use
(the floating-point formats of :mod:`fpsim.formats`, and OCP MX's
:data:`INT8`).

>>> import numpy as np
>>> from fpsim import quant
>>> q = quant.quantize(np.float32([[1.0, -2.0], [0.25, 8.0]]), "e4m3", "channel")
>>> q.scale.tolist(), q.data.astype(float).tolist()
([0.004464285913854837, 0.01785714365541935], [[224.0, -448.0], [14.0, 448.0]])
"""

from ._delayed import DelayedScaling
from ._elements import INT8, IntFormat
from ._loss_scaling import LossScaler, ScaleSweep, StepRecord, scale_sweep
from ._quantize import Quantized, Recipe, quantize
from ._report import QuantReport, error_report

__all__ = ["quantize", "Quantized", "Recipe", "error_report", "QuantReport", "DelayedScaling",
           "LossScaler", "StepRecord", "scale_sweep", "ScaleSweep", "INT8", "IntFormat"]
