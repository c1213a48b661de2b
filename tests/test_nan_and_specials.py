"""NaN, infinity, overflow and signed-zero results of conversions, each
derived by hand from IEEE 754-2019 (§6.2.3 NaN payloads, §7.4 overflow) and
the OCP FP8 spec (E4M3: S.1111.111 is the only NaN; E5M2: IEEE-like)."""

from __future__ import annotations

import pytest

import fpsim
from fpsim import BF16, E4M3, E4M3FNUZ, E5M2, E5M2FNUZ, FP16, FP32, Flag

INEXACT, UNDERFLOW, OVERFLOW, INVALID = Flag.INEXACT, Flag.UNDERFLOW, Flag.OVERFLOW, Flag.INVALID
NONE = Flag(0)
E3M2 = fpsim.Format("e3m2", 3, 2, 3, specials="none")


def cv(src, bits, dst, **kw):
    """Convert the code ``bits`` of ``src`` to ``dst``: (code, flags)."""
    ctx = fpsim.Context()
    y = fpsim.convert(src.from_bits(bits), dst, ctx=ctx, **kw)
    assert y.fmt is dst
    return y.bits, ctx.flags


def rd(fmt, x, **kw):
    ctx = fpsim.Context()
    return fmt.round(x, ctx=ctx, **kw).bits, ctx.flags


# -- NaN payloads ---------------------------------------------------------------
#
# The payload is the fraction below the quiet bit: FP32 22 bits, FP16 9 bits,
# BF16 6 bits.  It is kept left-aligned: narrowing drops low bits, widening
# appends zeros.  The result is quiet; a signaling source raises INVALID.

@pytest.mark.parametrize("src,bits,dst,expected,flags", [
    # FP32 -> FP16: payload >> 13
    (FP32, 0x7FC00001, FP16, 0x7E00, NONE),    # 1 >> 13 = 0: dropped
    (FP32, 0x7FC02000, FP16, 0x7E01, NONE),    # 0x2000 >> 13 = 1
    (FP32, 0x7FFFFFFF, FP16, 0x7FFF, NONE),    # 0x3FFFFF >> 13 = 0x1FF
    (FP32, 0xFFC02000, FP16, 0xFE01, NONE),    # sign kept
    (FP32, 0x7F800001, FP16, 0x7E00, INVALID),  # sNaN: quieted, INVALID
    (FP32, 0x7FA00000, FP16, 0x7F00, INVALID),  # sNaN payload 0x200000 >> 13 = 0x100
    # FP32 -> BF16: payload >> 16
    (FP32, 0x7FC10000, BF16, 0x7FC1, NONE),
    (FP32, 0x7FC0FFFF, BF16, 0x7FC0, NONE),
    (FP32, 0xFF800001, BF16, 0xFFC0, INVALID),
    (FP32, 0x7FA00000, BF16, 0x7FE0, INVALID),  # 0x200000 >> 16 = 0x20
    # FP16 -> FP32: payload << 13
    (FP16, 0x7E01, FP32, 0x7FC02000, NONE),
    (FP16, 0x7C01, FP32, 0x7FC02000, INVALID),
    (FP16, 0xFDFF, FP32, 0xFFC00000 | (0x1FF << 13), INVALID),
    (FP16, 0xFE00, FP32, 0xFFC00000, NONE),
    # BF16 -> FP16: 6 payload bits -> 9: << 3
    (BF16, 0x7FC1, FP16, 0x7E08, NONE),
    # FP16 -> FP16 (same format): a quiet NaN is unchanged, a signaling one quieted
    (FP16, 0x7E05, FP16, 0x7E05, NONE),
    (FP16, 0x7C05, FP16, 0x7E05, INVALID),
    # E5M2 has one payload bit below the quiet bit: 0x7D is signaling, payload 1
    (E5M2, 0x7D, FP16, 0x7F00, INVALID),
    (FP16, 0x7F00, E5M2, 0x7F, NONE),   # 0x100 >> 8 = 1
    (FP16, 0x7E80, E5M2, 0x7E, NONE),   # 0x080 >> 8 = 0
])
def test_nan_payload_conversion(src, bits, dst, expected, flags):
    assert cv(src, bits, dst) == (expected, flags)
    got = dst.from_bits(expected)
    assert got.is_nan and not got.is_signaling


@pytest.mark.parametrize("src,bits,dst,expected,flags", [
    # into OCP E4M3 the only NaN is S.1111.111: 0x7F, or 0xFF with the sign
    (FP16, 0x7E00, E4M3, 0x7F, NONE),
    (FP16, 0xFE00, E4M3, 0xFF, NONE),
    (FP32, 0x7FC12345, E4M3, 0x7F, NONE),
    (FP16, 0x7C01, E4M3, 0x7F, INVALID),
    (FP32, 0xFF800001, E4M3, 0xFF, INVALID),
    # into FNUZ the only NaN is 0x80, whatever the sign
    (FP16, 0x7E00, E4M3FNUZ, 0x80, NONE),
    (FP16, 0xFE00, E4M3FNUZ, 0x80, NONE),
    (FP16, 0x7C01, E5M2FNUZ, 0x80, INVALID),
    (E4M3, 0x7F, E5M2FNUZ, 0x80, NONE),
    # out of single-NaN formats: the default quiet NaN (sign bit kept)
    (E4M3, 0x7F, FP16, 0x7E00, NONE),
    (E4M3, 0xFF, FP32, 0xFFC00000, NONE),
    (E4M3, 0x7F, E5M2, 0x7E, NONE),
])
def test_nan_into_and_out_of_single_nan_formats(src, bits, dst, expected, flags):
    assert cv(src, bits, dst) == (expected, flags)


@pytest.mark.parametrize("policy,bits,dst,expected,flags", [
    # RISC-V F extension: every NaN result is the canonical NaN 0x7FC00000
    ("riscv", 0x7E01, FP32, 0x7FC00000, NONE),
    ("riscv", 0xFE01, FP32, 0x7FC00000, NONE),
    ("riscv", 0x7C01, FP32, 0x7FC00000, INVALID),
    # Arm FPCR.DN = 1: the default NaN, positive, no payload
    ("arm_default_nan", 0xFDFF, FP32, 0x7FC00000, INVALID),
    ("arm_default_nan", 0xFE01, BF16, 0x7FC0, NONE),
    # x86 propagates the operand's sign and payload (as IEEE does)
    ("x86", 0xFE01, FP32, 0xFFC02000, NONE),
    ("ieee", 0xFE01, FP32, 0xFFC02000, NONE),
    # single-NaN destinations have nothing to choose
    ("riscv", 0xFE00, E4M3, 0x7F, NONE),
    ("x86", 0xFE00, E4M3, 0xFF, NONE),
])
def test_nan_conversion_under_nan_policies(policy, bits, dst, expected, flags):
    assert cv(FP16, bits, dst, nan=policy) == (expected, flags)


def test_python_nan_converts_to_the_default_nan():
    assert rd(FP16, float("nan")) == (0x7E00, NONE)
    assert rd(FP16, -float("nan")) == (0xFE00, NONE)
    assert rd(E4M3, float("nan")) == (0x7F, NONE)
    assert rd(E5M2FNUZ, -float("nan")) == (0x80, NONE)


def test_nan_stays_nan_under_saturate_and_every_mode():
    for mode in ("rne", "rna", "rtz", "rup", "rdn", "rto", "sr"):
        assert cv(FP16, 0x7E00, E4M3, rounding=mode, saturate=True) == (0x7F, NONE)
        assert cv(FP32, 0x7FC02000, FP16, rounding=mode, saturate=True) == (0x7E01, NONE)


def test_nan_into_a_format_without_nan_is_an_error():
    with pytest.raises(ValueError, match="no NaN"):
        E3M2.round(float("nan"))
    with pytest.raises(ValueError, match="no NaN"):
        fpsim.convert(FP16.from_bits(0x7E00), E3M2)
    with pytest.raises(ValueError, match="no NaN"):
        E3M2.round("nan")


# -- infinities -------------------------------------------------------------------

@pytest.mark.parametrize("dst,saturate,pos,neg,flags", [
    # E4M3 has no infinity: inf converts to NaN (OCP), INVALID
    (E4M3, False, 0x7F, 0xFF, INVALID),
    # saturate: +-448 (0x7E / 0xFE); fpsim raises INVALID, as clamping inf is no rounding
    (E4M3, True, 0x7E, 0xFE, INVALID),
    # E5M2 has infinities: exact, no flags
    (E5M2, False, 0x7C, 0xFC, NONE),
    # ... saturated to +-57344 (0x7B / 0xFB), again INVALID
    (E5M2, True, 0x7B, 0xFB, INVALID),
    (FP16, False, 0x7C00, 0xFC00, NONE),
    (FP16, True, 0x7BFF, 0xFBFF, INVALID),
    # FNUZ: inf -> the single NaN 0x80; saturated -> +-240 (0x7F / 0xFF)
    (E4M3FNUZ, False, 0x80, 0x80, INVALID),
    (E4M3FNUZ, True, 0x7F, 0xFF, INVALID),
    # no NaN either: +-max (28 = 0x1F, sign bit 0x20)
    (E3M2, False, 0x1F, 0x3F, INVALID),
])
def test_infinity_conversion(dst, saturate, pos, neg, flags):
    for mode in ("rne", "rtz", "rup", "rdn"):
        assert cv(FP32, 0x7F800000, dst, saturate=saturate, rounding=mode) == (pos, flags)
        assert cv(FP32, 0xFF800000, dst, saturate=saturate, rounding=mode) == (neg, flags)
        assert rd(dst, float("inf"), saturate=saturate, rounding=mode) == (pos, flags)
        assert rd(dst, "-inf", saturate=saturate, rounding=mode) == (neg, flags)


# -- finite overflow --------------------------------------------------------------
#
# E4M3 top binade [256, 512): quantum 2**(8 - 3) = 32.  448 = 1.110b * 2**8 (even
# fraction), 480 = 1.111b * 2**8 would be S.1111.111, the NaN: beyond max.  The
# rounded result (unbounded exponent range) > 448 is an overflow.
#
# FP16 top binade [32768, 65536): quantum 32; 65504 has fraction 0x3FF (odd),
# so the midpoint 65520 ties to 65536 (even) and overflows.

@pytest.mark.parametrize("fmt,x,mode,saturate,bits,flags", [
    # rne: 464 is the midpoint 448 | 480: ties to even, 448
    (E4M3, 464, "rne", False, 0x7E, INEXACT),
    (E4M3, -464, "rne", False, 0xFE, INEXACT),
    (E4M3, 465, "rne", False, 0x7F, OVERFLOW | INEXACT),
    (E4M3, -465, "rne", False, 0xFF, OVERFLOW | INEXACT),
    (E4M3, 465, "rne", True, 0x7E, OVERFLOW | INEXACT),
    (E4M3, -1e6, "rne", True, 0xFE, OVERFLOW | INEXACT),
    # rna: the tie goes away from zero, to 480: overflow
    (E4M3, 464, "rna", False, 0x7F, OVERFLOW | INEXACT),
    # rup: 449 -> 480 overflows (toward +inf: NaN); rdn: 449 -> 448, no overflow
    (E4M3, 449, "rup", False, 0x7F, OVERFLOW | INEXACT),
    (E4M3, 449, "rdn", False, 0x7E, INEXACT),
    (E4M3, -449, "rdn", False, 0xFF, OVERFLOW | INEXACT),
    (E4M3, -449, "rup", False, 0xFE, INEXACT),
    (E4M3, 1e6, "rdn", False, 0x7E, OVERFLOW | INEXACT),
    (E4M3, -1e6, "rup", False, 0xFE, OVERFLOW | INEXACT),
    # rtz / rto never go to infinity: max, with OVERFLOW when the rounded value
    # exceeds max.  rto: 449 truncates to 448 (fraction 110b), inexact, so the
    # last bit is set: 480 > max -> overflow -> 448
    (E4M3, 1000, "rtz", False, 0x7E, OVERFLOW | INEXACT),
    (E4M3, 479, "rtz", False, 0x7E, INEXACT),
    (E4M3, 480, "rtz", False, 0x7E, OVERFLOW | INEXACT),
    (E4M3, 449, "rto", False, 0x7E, OVERFLOW | INEXACT),
    (E4M3, -1000, "rto", False, 0xFE, OVERFLOW | INEXACT),
    # FP16
    (FP16, 65520, "rne", False, 0x7C00, OVERFLOW | INEXACT),
    (FP16, 65519.99, "rne", False, 0x7BFF, INEXACT),
    (FP16, -65520, "rne", False, 0xFC00, OVERFLOW | INEXACT),
    (FP16, 65520, "rne", True, 0x7BFF, OVERFLOW | INEXACT),
    (FP16, 65520, "rna", False, 0x7C00, OVERFLOW | INEXACT),
    (FP16, 65520, "rtz", False, 0x7BFF, INEXACT),
    (FP16, 1e6, "rtz", False, 0x7BFF, OVERFLOW | INEXACT),
    (FP16, 65504.5, "rup", False, 0x7C00, OVERFLOW | INEXACT),
    (FP16, 65504.5, "rdn", False, 0x7BFF, INEXACT),
    (FP16, -65504.5, "rdn", False, 0xFC00, OVERFLOW | INEXACT),
    (FP16, -65504.5, "rup", False, 0xFBFF, INEXACT),
    (FP16, -1e6, "rup", False, 0xFBFF, OVERFLOW | INEXACT),
    (FP16, 1e6, "rdn", False, 0x7BFF, OVERFLOW | INEXACT),
    (FP16, 1e6, "rto", False, 0x7BFF, OVERFLOW | INEXACT),
    # rto 65505: truncates to 65504 (odd fraction 0x3FF already): 65504, no overflow
    (FP16, 65505, "rto", False, 0x7BFF, INEXACT),
    # E5M2: max 57344 = 1.11b * 2**15 (odd), quantum 8192; midpoint 61440 -> 65536
    (E5M2, 61440, "rne", False, 0x7C, OVERFLOW | INEXACT),
    (E5M2, 61439, "rne", False, 0x7B, INEXACT),
    (E5M2, 1e6, "rne", True, 0x7B, OVERFLOW | INEXACT),
    (E5M2, -1e6, "rtz", False, 0xFB, OVERFLOW | INEXACT),
    # E4M3FNUZ: max 240 = 1.111b * 2**7 (odd), quantum 16; midpoint 248 -> 256
    (E4M3FNUZ, 248, "rne", False, 0x80, OVERFLOW | INEXACT),
    (E4M3FNUZ, -248, "rne", False, 0x80, OVERFLOW | INEXACT),
    (E4M3FNUZ, 247, "rne", False, 0x7F, INEXACT),
    (E4M3FNUZ, -1000, "rne", True, 0xFF, OVERFLOW | INEXACT),
    # E5M2FNUZ: same top binade as E5M2, but 0x7F is finite (57344, odd): 61440 -> 65536
    (E5M2FNUZ, 61440, "rne", False, 0x80, OVERFLOW | INEXACT),
    # no infinity, no NaN: max (28 = 0x1F; quantum 8 at [16, 32): 30 ties to 32)
    (E3M2, 30, "rne", False, 0x1F, OVERFLOW | INEXACT),
    (E3M2, 29, "rne", False, 0x1F, INEXACT),
    (E3M2, -1000, "rup", False, 0x3F, OVERFLOW | INEXACT),
])
def test_finite_overflow(fmt, x, mode, saturate, bits, flags):
    assert rd(fmt, x, rounding=mode, saturate=saturate) == (bits, flags)


def test_overflow_from_a_wider_float_operand():
    # FP32 70000 = 0x4788B800 -> FP16 inf; -> E4M3 NaN; saturate -> max
    assert cv(FP32, 0x4788B800, FP16) == (0x7C00, OVERFLOW | INEXACT)
    assert cv(FP32, 0x4788B800, E4M3) == (0x7F, OVERFLOW | INEXACT)
    assert cv(FP32, 0x4788B800, E4M3, saturate=True) == (0x7E, OVERFLOW | INEXACT)
    # FP16 max 65504 is far beyond E4M3's range; BF16 holds it inexactly:
    # 65504 = 1.1111111111b * 2**15 -> 8 bits: 1.1111111|111 rounds up to 2**16
    assert cv(FP16, 0x7BFF, BF16) == (0x4780, INEXACT)


# -- signed zero results ------------------------------------------------------------

@pytest.mark.parametrize("fmt,x,mode,bits,flags", [
    (FP16, -1e-30, "rne", 0x8000, UNDERFLOW | INEXACT),
    (FP16, 1e-30, "rne", 0x0000, UNDERFLOW | INEXACT),
    (FP16, -1e-30, "rtz", 0x8000, UNDERFLOW | INEXACT),
    (FP16, -1e-30, "rup", 0x8000, UNDERFLOW | INEXACT),
    (FP16, -1e-30, "rdn", 0x8001, UNDERFLOW | INEXACT),   # away from zero: -min_sub
    (FP16, 1e-30, "rup", 0x0001, UNDERFLOW | INEXACT),
    (FP16, 1e-30, "rdn", 0x0000, UNDERFLOW | INEXACT),
    (FP16, -1e-30, "rto", 0x8001, UNDERFLOW | INEXACT),   # odd: never zero
    (E4M3, -1e-30, "rne", 0x80, UNDERFLOW | INEXACT),
    (E5M2, -1e-30, "rne", 0x80, UNDERFLOW | INEXACT),
    # FNUZ has no -0: +0
    (E4M3FNUZ, -1e-30, "rne", 0x00, UNDERFLOW | INEXACT),
    (E5M2FNUZ, -1e-30, "rtz", 0x00, UNDERFLOW | INEXACT),
    (E4M3FNUZ, -1e-30, "rdn", 0x81, UNDERFLOW | INEXACT),
    # exact zeros keep their sign where it exists, without flags
    (FP16, -0.0, "rne", 0x8000, NONE),
    (FP16, -0.0, "rup", 0x8000, NONE),
    (FP16, 0.0, "rdn", 0x0000, NONE),
    (E4M3FNUZ, -0.0, "rne", 0x00, NONE),
])
def test_signed_zero_results(fmt, x, mode, bits, flags):
    assert rd(fmt, x, rounding=mode) == (bits, flags)


def test_signed_zero_results_with_ftz():
    # FP16 min_subnormal 2**-24 is tiny: flushed to a zero of its sign
    assert rd(FP16, -(2.0**-24), ftz=True) == (0x8000, UNDERFLOW | INEXACT)
    assert rd(FP16, 2.0**-24, ftz=True, rounding="rup") == (0x0000, UNDERFLOW | INEXACT)
    assert rd(E4M3FNUZ, -(2.0**-10), ftz=True) == (0x00, UNDERFLOW | INEXACT)


def test_zero_conversions_between_formats():
    assert cv(FP16, 0x8000, FP32) == (0x80000000, NONE)
    assert cv(FP32, 0x80000000, E4M3) == (0x80, NONE)
    assert cv(FP16, 0x8000, E4M3FNUZ) == (0x00, NONE)
    assert cv(E4M3FNUZ, 0x00, FP16) == (0x0000, NONE)
    # FP32 -2**-126 (min_normal) is far below FP16's range: -0
    assert cv(FP32, 0x80800000, FP16) == (0x8000, UNDERFLOW | INEXACT)
