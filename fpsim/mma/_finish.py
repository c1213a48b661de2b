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

And the unit's NaN (:attr:`fpsim.mma.MMAParams.nan`, one code per format):
:func:`special_codes` writes it for the rows decided by specials, and
:func:`unit_nans` gives it to every NaN of an array of codes.
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np

from .. import array as _array
from ..array import _native
from ..context import Context
from ..formats import BF16, FP16, FP32, Format
from ..modes import Rounding
from ..rounding import OVERFLOW

__all__ = ["round_to_output", "narrow_format", "special_codes", "unit_nans", "unit_zeros"]


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
    codes of ``out`` (of its code dtype, :func:`fpsim.array.code_dtype`).

    The lanes in the output's normal range take the kernel's machine fast
    paths, whatever the call's size (the block of a chain is small, and the
    general entry's per-call setup would cost more than the rounding):
    toward zero into FP32 to any ``result_bits`` (NVIDIA's FP32 output,
    Hopper's 13-bit FP8 results included) by
    :func:`fpsim.array._native.truncate_fp32`; the other modes into FP32
    (AMD's nearest even) by :func:`fpsim.array._native.round_fp32`; nearest
    even into FP16 by numpy's float16 conversion
    (:func:`fpsim.array._native.nearest_even_fp16`) and into BF16 by
    :func:`fpsim.array._native.nearest_even_bits`.
    Each is proven equal to the kernel's general path by
    ``tests/test_mma_tile.py``; the other lanes take that path."""
    whole = result_bits in (None, out.mantissa_bits)
    dt = _array.code_dtype(out)
    if value.ndim != 1 or not value.size:
        return _round_kernel(value, out, mode, result_bits, output_subnormals).astype(dt)
    if out == FP32 and mode == "rtz":
        codes, done = _native.truncate_fp32(value, result_bits or FP32.mantissa_bits)
    elif out == FP32 and whole and _native.usable((Rounding(mode),)):
        codes, _, done = _native.round_fp32(value, None, Rounding(mode), flags=False)
    elif mode == "rne" and whole and out == FP16 and _native.float16_casts_are_ieee():
        codes, done = _native.nearest_even_fp16(value, output_subnormals)
    elif mode == "rne" and whole and out == BF16:
        codes, done = _native.nearest_even_bits(value, out)
        codes = codes.astype(dt)
    else:
        return _round_kernel(value, out, mode, result_bits, output_subnormals).astype(dt)
    if not done.all():
        zero = value == 0  # (+0, the rule above: no call of the kernel for them)
        codes[zero] = 0
        rest = ~(done | zero)
        if rest.any():
            codes[rest] = _round_kernel(value[rest], out, mode, result_bits, output_subnormals)
    return codes


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


def special_codes(out: Format, nan: np.ndarray, negative: np.ndarray,
                  nan_code: int) -> np.ndarray:
    """Codes of ``out`` for special results: the unit's NaN ``nan_code``
    where ``nan``, else the infinity of the sign."""
    inf = np.where(negative, out.sign_bit | out.inf_code, out.inf_code).astype(np.uint64)
    return np.where(nan, np.uint64(nan_code), inf)


def unit_nans(codes: np.ndarray, fmt: Format, nan_code: int) -> np.ndarray:
    """``codes`` of ``fmt`` with every NaN made ``nan_code`` (the unit's
    NaN in ``fmt``): the array itself where it holds no NaN, else a copy of
    its dtype.

    >>> import numpy as np
    >>> from fpsim.formats import FP16
    >>> unit_nans(np.uint16([0x7E00, 0xFE01, 0x7C00, 0x3C00]), FP16, 0x7FFF).tolist()
    [32767, 32767, 31744, 15360]
    """
    codes = np.asarray(codes)
    if fmt.specials == "ieee":
        dt = codes.dtype.type
        nan = (codes & dt(fmt.magnitude_mask)) > dt(fmt.inf_code)
    else:
        nan = np.isnan(_array.decode(codes, fmt))
    if not nan.any():
        return codes
    return np.where(nan, codes.dtype.type(nan_code), codes)


def unit_zeros(codes: np.ndarray, fmt: Format, zero_sign: str) -> np.ndarray:
    """``codes`` with every zero +0 where the unit's ``zero_sign`` is
    ``"positive"`` (``MMAParams.zero_sign``); as they are under ``"ieee"``.

    >>> from fpsim.formats import FP32
    >>> unit_zeros(np.uint32([0x80000000, 0x80000001, 0]), FP32, "positive").tolist()
    [0, 2147483649, 0]
    """
    if zero_sign != "positive":
        return codes
    return np.where((codes & ~np.array(fmt.sign_bit, codes.dtype)) == 0,
                    np.zeros((), codes.dtype), codes)
