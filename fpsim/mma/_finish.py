"""The last step of a block FMA: the exact, normalized result rounded once to
the output format, through fpsim's rounding kernel (:func:`fpsim.array.encode`,
the vectorized kernel proven equal to :func:`fpsim.rounding.round_exact`).

What the unit adds to the kernel's IEEE rules, and why it is done here:

* overflow gives an infinity in every rounding mode (IEEE gives the largest
  finite value under ``rtz``; the published models, and the GPUs they were
  fitted to, give infinity): codes the kernel flags OVERFLOW become ±inf;
* a result may keep fewer fraction bits than the output format
  (``result_bits``): it is rounded into a narrower format with the output's
  exponent range first, which is then exact in the output format;
* with ``output_subnormals=False`` a rounded result below the smallest
  normal becomes +0 (the published models' flush, after rounding);
* an exact zero is +0.
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np

from .. import array as _array
from ..array import _native
from ..context import Context
from ..formats import FP32, Format
from ..rounding import OVERFLOW, nan_code

__all__ = ["round_to_output", "narrow_format"]


@functools.cache
def narrow_format(out: Format, result_bits: int | None) -> Format:
    """``out`` itself, or a format with ``out``'s exponent range and
    ``result_bits`` fraction bits (unregistered: an internal step)."""
    if result_bits is None or result_bits == out.mantissa_bits:
        return out
    return dataclasses.replace(out, name=f"{out.name}_m{result_bits}",
                               mantissa_bits=result_bits, aliases=())


def round_to_output(value: np.ndarray, out: Format, mode: str, result_bits: int | None,
                    output_subnormals: bool) -> np.ndarray:
    """Round float64 ``value`` (each exactly the unit's unrounded result) to
    codes of ``out``.

    Round toward zero into FP32 (NVIDIA's FP32 output, Hopper's 13-bit FP8
    results included) takes the kernel's machine fast path for the values
    in FP32's normal range (:func:`fpsim.array._native.truncate_fp32`,
    which ``tests/test_mma_tile.py`` proves equal to the kernel's general
    path), whatever the call's size: the block of a chain is small, and the
    general entry's per-call setup would cost more than the rounding."""
    if mode == "rtz" and out == FP32 and value.ndim == 1 and value.size:
        codes32, done = _native.truncate_fp32(value, result_bits or FP32.mantissa_bits)
        codes = codes32.astype(np.uint64)
        if not done.all():
            rest = ~done
            codes[rest] = _round_kernel(value[rest], out, mode, result_bits, output_subnormals)
        return codes
    return _round_kernel(value, out, mode, result_bits, output_subnormals)


def _round_kernel(value: np.ndarray, out: Format, mode: str, result_bits: int | None,
                  output_subnormals: bool) -> np.ndarray:
    ctx = Context(rounding=mode)  # a private context: no flags leak to the caller's
    narrow = narrow_format(out, result_bits)
    with np.errstate(over="ignore", invalid="ignore"):
        codes, flags = _array.encode(value, narrow, ctx, return_flags=True)
    if narrow is not out:
        codes = _array.convert(codes, narrow, out, Context())
    codes = codes.astype(np.uint64)
    over = (flags & OVERFLOW) != 0
    if over.any():
        negative = value < 0
        inf = np.where(negative, out.sign_bit | out.inf_code, out.inf_code)
        codes = np.where(over, inf.astype(np.uint64), codes)
    if not output_subnormals:
        tiny = ((codes & np.uint64(out.magnitude_mask)) >> np.uint64(out.mantissa_bits)) == 0
        codes = np.where(tiny, np.uint64(0), codes)
    codes = np.where(value == 0, np.uint64(0), codes)
    return codes


def special_codes(out: Format, nan: np.ndarray, negative: np.ndarray) -> np.ndarray:
    """Codes of ``out`` for special results: its default NaN where ``nan``,
    else the infinity of the sign."""
    inf = np.where(negative, out.sign_bit | out.inf_code, out.inf_code).astype(np.uint64)
    return np.where(nan, np.uint64(nan_code(out, False)), inf)
