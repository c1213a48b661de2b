"""fpsim: a bit-exact simulator of the floating-point formats ML hardware
computes in, and a reference specification of their behaviour.

>>> import fpsim
>>> fpsim.FP16.round(1e-5)
Float(fp16, 0x00a8, 1.0013580322265625e-05)
>>> fpsim.E4M3.max, fpsim.E5M2.max
(Fraction(448, 1), Fraction(57344, 1))
"""

from . import arith, nans
from .context import Context, getcontext, localcontext, setcontext
from .formats import (
    BF16,
    E2M1,
    E2M3,
    E3M2,
    E4M3,
    E4M3FNUZ,
    E5M2,
    E5M2FNUZ,
    E8M0,
    FP16,
    FP32,
    FP64,
    TF32,
    Format,
    Specials,
    format,
    formats,
    p3109,
    register,
)
from .modes import Flag, Rounding, Saturation, Tininess
from .value import Float, FloatClass, convert

__version__ = "0.1.0"

__all__ = [
    "arith", "nans",
    "BF16", "E4M3", "E4M3FNUZ", "E5M2", "E5M2FNUZ", "FP16", "FP32", "FP64", "TF32",
    "E3M2", "E2M3", "E2M1", "E8M0",
    "Context", "Flag", "Float", "FloatClass", "Format", "Rounding", "Saturation", "Specials",
    "Tininess",
    "convert", "format", "formats", "getcontext", "localcontext", "p3109", "register",
    "setcontext",
]
