"""fpsim: a bit-exact simulator of the floating-point formats ML hardware
computes in, and a reference specification of their behaviour.

>>> import fpsim
>>> fpsim.FP16.round(1e-5)
Float(fp16, 0x00a8, 1.0013580322265625e-05)
>>> fpsim.E4M3.max, fpsim.E5M2.max
(Fraction(448, 1), Fraction(57344, 1))

The subpackages load when first named, so ``import fpsim`` is enough to
reach each of them (``fpsim.mma.cublas``, ``fpsim.array.add``, ...):

>>> fpsim.mma.cublas("h100", "fp16", out="fp16").out.name
'fp16'
"""

import importlib
from typing import Any

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

# Loaded on first use (PEP 562), so that `import fpsim` stays light and
# `fpsim.mma.cublas(...)` works after it alone.
_SUBMODULES = frozenset({
    "array", "explain", "mma", "ops", "parse", "quant", "rounding", "strategies", "sweep",
    "testfloat", "testing",
})


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | _SUBMODULES)
