"""Delayed scaling: the scale of each iteration comes from the amax of
earlier iterations, as NVIDIA Transformer Engine's ``DelayedScaling``
recipe describes it, simulated step by step.

Each :meth:`DelayedScaling.step` with a tensor ``x``:

1. quantizes ``x`` with the *current* scale ``s`` (scale rule
   ``"max/amax"``: elements ``E(x × s)``, the product in the scale format,
   FP32 by default);
2. puts ``amax(x)`` (exact, converted to the scale format) at the front of
   the amax history, dropping the oldest entry (``history_len`` entries,
   zeros at first);
3. counts the step; every ``interval`` steps it updates the scale from the
   history: ``a`` is the history's max (``amax_compute="max"``) or its
   front entry (``"most_recent"``), and where ``a`` is positive and finite
   ``s = (max / a) / 2**margin`` (``max`` the element format's largest
   value; two roundings in the scale format, the second exact unless the
   result is subnormal), replaced by the scale format's largest finite
   value where it overflows to infinity (a tiny ``a``), as Transformer
   Engine's ``_default_sf_compute`` does; else (``a`` zero, infinite or
   NaN) ``s`` stays.

The scale starts at 1.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import array
from .._errstate import quiet
from ..context import Context, check_saturate, getcontext
from ..formats import E4M3, FP32, Format
from ..formats import format as _lookup
from ..ops.operands import Operand
from . import _checks
from ._elements import ElementFormat
from ._quantize import Quantized, Recipe, _deliver, _Groups, element, mode_name, scale_and_cast

__all__ = ["DelayedScaling"]


MAX_HISTORY = 1 << 20
"""The longest amax history :class:`DelayedScaling` holds."""


class DelayedScaling:
    """A stateful delayed-scaling recipe (see the module's docstring).

    >>> import numpy as np
    >>> ds = DelayedScaling(history_len=2)
    >>> for a in (1.0, 4.0, 2.0):
    ...     q = ds.step(np.float32([a, -a / 2]))
    ...     print(float(q.scale), ds.history.tolist(), float(ds.scale))
    1.0 [1.0, 0.0] 448.0
    448.0 [4.0, 1.0] 112.0
    112.0 [2.0, 4.0] 112.0
    """

    @quiet
    def __init__(self, element_format: Any = E4M3, *, history_len: int = 16,
                 amax_compute: str = "max", margin: int = 0, interval: int = 1,
                 scale_format: Format | str = FP32, rounding: str = "rne",
                 saturate: bool = True, ctx: Context | None = None) -> None:
        self.element_format: ElementFormat = element("DelayedScaling", element_format)
        self.scale_format = _lookup(scale_format)
        history_len, interval, margin = (
            _checks.positive_int("DelayedScaling", name, value, low)
            for name, value, low in (("history_len", history_len, 1),
                                     ("interval", interval, 1), ("margin", margin, 0)))
        if history_len > MAX_HISTORY:
            # The history is held in full, so its length is memory: a number
            # in a config must not ask for gigabytes.
            raise ValueError(f"DelayedScaling: history_len={history_len:,}; accepted 1 to "
                             f"{MAX_HISTORY:,} (Transformer Engine's default is 1024)")
        if amax_compute not in ("max", "most_recent"):
            raise ValueError(f"DelayedScaling: amax_compute={amax_compute!r}; accepted 'max' "
                             "or 'most_recent'")
        _checks.settings(rounding, saturate)
        if ctx is not None and not isinstance(ctx, Context):
            raise TypeError(f"DelayedScaling: ctx must be an fpsim.Context or None, got "
                            f"{type(ctx).__name__}")
        self.history_len, self.interval, self.margin = history_len, interval, margin
        self.amax_compute = amax_compute
        self.rounding, self.saturate = rounding, saturate
        self.ctx = ctx
        code_dt = array.code_dtype(self.scale_format)
        self._history = np.zeros(history_len, code_dt)
        self._scale = array.encode(np.array(1.0), self.scale_format, Context())
        self.steps = 0

    @property
    def scale(self) -> Any:
        """The scale the next step uses (a value of the scale format's dtype)."""
        return _deliver(np.asarray(self._scale), self.scale_format)

    @property
    def history(self) -> np.ndarray:
        """The amax history as float64, most recent first."""
        return array.decode(self._history, self.scale_format)

    @quiet
    def step(self, x: Any, *, fmt: Format | str | None = None, rng: Any = None) -> Quantized:
        """Quantize ``x`` with the current scale, then record its amax and
        update the scale when the interval is reached."""
        ctx = self.ctx if self.ctx is not None else getcontext()
        source = Operand("DelayedScaling.step", x, fmt)
        _checks.rng(rng)  # (before any step raises a flag)
        sfmt, elem = self.scale_format, self.element_format
        groups = _Groups("tensor", source.codes.shape)
        scale = np.asarray(self._scale)
        data, saturated = scale_and_cast(source, elem, sfmt, groups.expand(scale), ctx,
                                         self.rounding, self.saturate, rng)
        values = array.decode(source.codes, source.fmt)
        with np.errstate(invalid="ignore"):
            amax = array.encode(np.array(np.abs(values).max() if values.size else 0.0), sfmt,
                                ctx)
        self._history = np.roll(self._history, 1)
        self._history[0] = amax
        self.steps += 1
        if self.steps % self.interval == 0:
            self._update(ctx)
        recipe = Recipe("tensor", sfmt, "max/amax", rounding=mode_name(self.rounding),
                        saturate=check_saturate(self.saturate))
        return Quantized(_deliver(data, elem), _deliver(scale, sfmt), _deliver(amax, sfmt),
                         elem, sfmt, recipe, saturated, groups)

    def _update(self, ctx: Context) -> None:
        sfmt = self.scale_format
        history = array.decode(self._history, sfmt)
        # "max": the largest entry, NaN entries skipped (a NaN amax never
        # becomes the scale's divisor).
        i = int(np.argmax(np.where(np.isnan(history), -np.inf, history))) \
            if self.amax_compute == "max" else 0
        if not (history[i] > 0 and np.isfinite(history[i])):
            return  # the scale stays
        top = array.encode(np.array(float(self.element_format.max)), sfmt, ctx)
        s = array.div(top, self._history[i:i + 1].reshape(()), ctx, fmt=sfmt)
        if self.margin:
            s = array.div(s, _power_of_two(self.margin, sfmt, ctx), ctx, fmt=sfmt)
        if np.isinf(array.decode(s, sfmt)):
            # an amax too small for max / amax to be finite: the largest scale
            s = np.asarray(sfmt.max_code, array.code_dtype(sfmt))
        self._scale = s


def _power_of_two(n: int, fmt: Format, ctx: Context) -> np.ndarray:
    """2**n rounded once into ``fmt`` under ``ctx``, as a 0-d array of codes."""
    if n <= 1023:  # exact in float64
        return array.encode(np.array(2.0 ** n), fmt, ctx)
    # Beyond float64 (and so beyond every format of the array engine): read
    # exactly from its hex form, which costs nothing for any n.
    code = fmt.round(f"0x1p{n}", ctx).bits
    return np.array(code, array.code_dtype(fmt))

