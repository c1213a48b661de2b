"""NaN rules for conversions between formats, as data about the formats.

Converting a NaN from one format to another (IEEE 754-2019 §6.2.3, and what
x86, ARM and SoftFloat do):

* the result is quiet; a signaling input raises INVALID;
* the sign is kept where the destination's NaNs carry a sign;
* the payload (the fraction bits below the quiet bit) is kept left-aligned:
  widening appends zero bits, narrowing drops the low-order bits;
* a destination with a single NaN (E4M3's S.1111.111, FNUZ's 0x80) gives
  that NaN; a destination with no NaN at all raises :class:`ValueError`.

>>> from fpsim.formats import FP32, FP16, BF16, E4M3
>>> hex(convert_nan(FP32, 0x7FC00001, FP16)[0])   # low payload bits dropped
'0x7e00'
>>> hex(convert_nan(FP16, 0x7E01, FP32)[0])       # payload kept, left-aligned
'0x7fc02000'
>>> [hex(c) for c in convert_nan(FP32, 0xFF800001, BF16)]  # signaling: quieted, INVALID
['0xffc0', '0x1']
>>> hex(convert_nan(FP16, 0xFE00, E4M3)[0])
'0xff'
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .formats import Specials
from .rounding import INVALID, nan_code

if TYPE_CHECKING:  # pragma: no cover
    from .formats import Format

__all__ = ["convert_nan", "payload"]


def payload(fmt: Format, code: int) -> tuple[int, int]:
    """``(payload, payload_bits)`` of a NaN code: the fraction bits below the
    quiet bit for IEEE-style formats, nothing for single-NaN formats."""
    if fmt.specials is Specials.IEEE:
        bits = fmt.mantissa_bits - 1
        return code & ((1 << bits) - 1), bits
    return 0, 0


def convert_nan(src: Format, code: int, dst: Format) -> tuple[int, int]:
    """The NaN of ``dst`` that the NaN ``code`` of ``src`` converts to, with
    the flags raised (an int of :class:`fpsim.Flag` bits)."""
    flags = INVALID if src.is_signaling_code(code) else 0
    negative = bool(code & src.sign_bit)
    if dst.specials is not Specials.IEEE:
        return nan_code(dst, negative), flags
    value, bits = payload(src, code)
    dst_bits = dst.mantissa_bits - 1
    value = value << (dst_bits - bits) if dst_bits >= bits else value >> (bits - dst_bits)
    return nan_code(dst, negative) | value, flags
