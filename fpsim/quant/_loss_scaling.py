"""Loss scaling: PyTorch ``GradScaler``'s rules, with the gradients of each
step rounded into FP16, BF16 or FP8 by fpsim, and a table of what each
candidate scale does to a gradient tensor.

:class:`LossScaler` keeps the scale in FP32, as GradScaler does, and
applies its documented update (``torch.amp.GradScaler``,
``_amp_update_scale_``): after a step whose scaled gradients hold an
infinity or NaN, the step is skipped, the scale is multiplied by
``backoff_factor`` and the count of clean steps restarts; after
``growth_interval`` consecutive clean steps the scale is multiplied by
``growth_factor`` (if the product is finite) and the count restarts.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import array
from .._errstate import quiet
from ..context import Context
from ..formats import FP32, Format
from ..formats import format as _lookup
from . import _checks

__all__ = ["LossScaler", "StepRecord", "ScaleSweep", "scale_sweep"]


@dataclass(frozen=True)
class StepRecord:
    """One step of :meth:`LossScaler.step`: the scale it used, whether it
    was skipped, and the fractions of the nonzero gradient elements that
    became zero (underflow) or infinite/NaN (overflow) once scaled and
    rounded into the gradient format."""

    scale: float
    skipped: bool
    underflow_fraction: float
    overflow_fraction: float


class LossScaler:
    """GradScaler's dynamic loss scale (parameter names and defaults as
    PyTorch's).

    >>> s = LossScaler(init_scale=2.0**16, growth_interval=2)
    >>> for found_inf in (False, False, True, False):
    ...     s.update(found_inf)
    ...     print(s.scale)
    65536.0
    131072.0
    65536.0
    65536.0
    """

    @quiet
    def __init__(self, init_scale: float = 2.0**16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000) -> None:
        op = "LossScaler"
        # Each is held in FP32, as GradScaler holds them: checked as FP32 values.
        scale = _checks.fp32_value(op, "init_scale", init_scale, _POSITIVE_FP32)
        growth = _checks.fp32_value(op, "growth_factor", growth_factor,
                                    "a finite number > 1 (as an FP32 value)", lambda v: v > 1)
        backoff = _checks.fp32_value(op, "backoff_factor", backoff_factor,
                                     "a number in (0, 1) (as an FP32 value)",
                                     lambda v: 0 < v < 1)
        self.growth_interval = _checks.positive_int(op, "growth_interval", growth_interval)
        self._ctx = Context()
        self._scale, self._growth, self._backoff = (
            np.array(x.bits, np.uint32) for x in (scale, growth, backoff))
        self.growth_tracker = 0
        self.records: list[StepRecord] = []

    @property
    def scale(self) -> float:
        """The current scale (an FP32 value)."""
        return float(array.decode(self._scale, FP32))

    @quiet
    def update(self, found_inf: bool) -> None:
        """GradScaler's update after a step (see the module's docstring).
        ``found_inf``: True or False (numpy's too), or 1.0 / 0.0 as
        PyTorch's ``found_inf`` tensors hold it."""
        if _found_inf(found_inf):
            self._scale = array.mul(self._scale, self._backoff, self._ctx, fmt=FP32)
            self.growth_tracker = 0
            return
        successful = self.growth_tracker + 1
        if successful == self.growth_interval:
            grown = array.mul(self._scale, self._growth, self._ctx, fmt=FP32)
            if np.isfinite(array.decode(grown, FP32)):
                self._scale = grown
            self.growth_tracker = 0
        else:
            self.growth_tracker = successful

    @quiet
    def step(self, gradients: Any, fmt: Format | str = "fp16") -> StepRecord:
        """One training step's gradients: ``gradients`` (FP32 values, as an
        FP32 reference computed them; float64 input is rounded into FP32
        first) times the current scale, rounded once into ``fmt`` (as a
        backward pass in that format would deliver them), then
        :meth:`update`."""
        scale = self.scale
        under, over, found_inf = _scaled_fractions(_fp32_values(gradients), scale, _lookup(fmt))
        record = StepRecord(scale, found_inf, under, over)
        self.records.append(record)
        self.update(found_inf)
        return record


_POSITIVE_FP32 = ("a positive number whose FP32 value is finite and nonzero (about 1.4e-45 to "
                  "3.4e+38)")


def _found_inf(value: Any) -> bool:
    if isinstance(value, (bool, np.bool_)) or (
            isinstance(value, np.ndarray) and value.shape == () and value.dtype == np.bool_):
        return bool(value)
    if isinstance(value, (int, float, np.integer, np.floating)):
        if value in (0, 1):
            return bool(value)
        raise ValueError(f"LossScaler.update(): found_inf={value!r}; accepted True or False "
                         "(or 1.0 / 0.0)")
    raise TypeError(f"LossScaler.update(): found_inf={value!r}; accepted True or False "
                    "(or 1.0 / 0.0)")


def _fp32_values(gradients: Any, op: str = "LossScaler.step()") -> np.ndarray:
    """Gradients as the float64 values of FP32 numbers (rounded into FP32
    first where they are not)."""
    a = _checks.real_array(op, "gradients", gradients)
    if a.dtype.kind == "O" or a.dtype.itemsize > 8:
        # Python numbers (ints and Fractions beyond float64, Decimals) and
        # np.longdouble: each read exactly and rounded once by the scalar
        # model, never through float64 (a second rounding, or an OverflowError)
        ctx = Context()
        values = [float(FP32.round(v, ctx)) for v in a.reshape(-1)]
        return np.array(values, np.float64).reshape(a.shape)
    return array.decode(array.encode(a.astype(np.float64), FP32, Context()), FP32)


def _scaled_fractions(g: np.ndarray, scale: float, fmt: Format) -> tuple[float, float, bool]:
    """Fractions of nonzero finite ``g`` (FP32 values, :func:`_fp32_values`)
    that underflow to zero and that overflow, once ``g × scale`` (``scale``
    an FP32 value: the product has at most 48 significant bits, exact in
    float64) is rounded once into ``fmt``, saturating off, and whether any
    scaled value is not finite."""
    with np.errstate(all="ignore"):
        scaled = array.decode(array.encode(g * scale, fmt, Context(saturate=False)), fmt)
    nonzero = np.isfinite(g) & (g != 0)
    n = int(nonzero.sum())
    under = int(np.sum(nonzero & (scaled == 0)))
    over = int(np.sum(nonzero & ~np.isfinite(scaled)))
    found_inf = bool((~np.isfinite(scaled)).any())
    return (under / n if n else 0.0), (over / n if n else 0.0), found_inf


@dataclass
class ScaleSweep:
    """For each candidate scale and format, the fractions of the nonzero
    gradient elements that underflow to zero and that overflow."""

    rows: list[dict[str, Any]]

    def __str__(self) -> str:
        formats = list(dict.fromkeys(r["format"] for r in self.rows))
        scales = list(dict.fromkeys(r["scale"] for r in self.rows))
        cell = {(r["scale"], r["format"]): r for r in self.rows}
        head = f"{'scale':>10}" + "".join(f"  {f + ' under':>12} {f + ' over':>11}"
                                          for f in formats)
        lines = [head]
        for s in scales:
            line = f"{'2**' + str(int(np.log2(s))) if s > 0 and np.log2(s).is_integer() else s:>10}"
            for f in formats:
                r = cell[(s, f)]
                line += f"  {r['underflow']:>12.2%} {r['overflow']:>11.2%}"
            lines.append(line)
        return "\n".join(lines)


@quiet
def scale_sweep(gradients: Any, scales: Any = None,
                formats: tuple[str, ...] = ("fp16", "bf16", "e5m2")) -> ScaleSweep:
    """What each candidate loss scale does to an FP32 gradient tensor in
    each format: the fraction of nonzero elements that underflow to zero
    and that overflow once scaled and rounded (default scales: 2**0 to
    2**24; a scale is rounded into FP32 first, as GradScaler holds it).

    >>> g = np.float32([1e-8, 3e-6, 1e-3, 2.0])
    >>> t = scale_sweep(g, scales=[1.0, 2.0**16])
    >>> [(r["scale"], r["format"], r["underflow"]) for r in t.rows if r["format"] != "e5m2"]
    [(1.0, 'fp16', 0.25), (1.0, 'bf16', 0.0), (65536.0, 'fp16', 0.0), (65536.0, 'bf16', 0.0)]
    """
    op = "scale_sweep()"
    g = _fp32_values(gradients, op)
    if scales is None:
        scales = [2.0**k for k in range(25)]
    elif isinstance(scales, (str, bytes)) or not isinstance(scales, Iterable):
        raise TypeError(f"{op}: scales must be a sequence of numbers, got "
                        f"{type(scales).__name__}")
    if isinstance(formats, (str, Format)) or not isinstance(formats, Iterable):
        raise TypeError(f"{op}: formats must be a sequence of format names such as "
                        f"('fp16', 'bf16'), got {type(formats).__name__} {formats!r}")
    # All checked before the first row is computed.  A loss scale is an FP32
    # value, as GradScaler's: each is rounded into FP32 once, exactly.
    fp32_scales = [(s, float(_checks.fp32_value(op, f"scales[{i}]", s, _POSITIVE_FP32)))
                   for i, s in enumerate(scales)]
    fmts = [(name, _lookup(name)) for name in formats]
    rows = []
    for s, scale in fp32_scales:
        for name, fmt in fmts:
            under, over, _ = _scaled_fractions(g, scale, fmt)
            rows.append({"scale": float(s), "format": name, "underflow": under,
                         "overflow": over})
    return ScaleSweep(rows)

