"""Every code of the small formats decodes to the value ml_dtypes gives it,
and re-rounds to itself.

Oracles, none of them fpsim:

* ml_dtypes / numpy: an array of every code viewed as the ml_dtypes dtype and
  cast to float64 (exact: every value of these formats is a float64);
* the field decoder of tests/oracle.py, written from the format definitions
  (sign, biased exponent, fraction; IEEE / OCP "fn" / "fnuz" special-code
  rules), used to cross-check ml_dtypes itself and to derive quiet /
  signaling NaN codes;
* for TF32, the hand-derived relation "a TF32 code is the FP32 code with the
  13 low fraction bits dropped", evaluated with numpy float32.
"""

from __future__ import annotations

import math
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

import fpsim

from oracle import DTYPES, spec_of

# name -> (fpsim format, ml_dtypes dtype, the oracle's spec of the format).
# The specs are written from the format definitions (IEEE 754 binary16,
# bfloat16, OCP FP8 E4M3/E5M2, the AMD/Graphcore "fnuz" FP8 variants) in
# tests/oracle.py, not read from fpsim.
SPECS = {name: (fpsim.format(name), dtype, spec_of(name)) for name, dtype in DTYPES.items()}

E8M0 = fpsim.Format("e8m0", 8, 0, 127, specials="fn", subnormals=False, signed=False)


def all_codes_as_float64(dtype, width: int) -> np.ndarray:
    utype = np.uint8 if width == 8 else np.uint16
    with np.errstate(invalid="ignore"):  # signaling NaNs are quieted by the cast
        return np.arange(1 << width, dtype=np.uint64).astype(utype).view(dtype).astype(np.float64)


def check_code_against_reference(f: fpsim.Float, ref: float) -> None:
    """The decoded Float agrees with the float64 ``ref`` in class, sign and value."""
    if math.isnan(ref):
        assert f.is_nan, f
        assert not f.is_inf and not f.is_zero
        assert math.isnan(float(f))
        return
    assert not f.is_nan, (f, ref)
    if math.isinf(ref):
        assert f.is_inf, (f, ref)
        assert float(f) == ref
        return
    assert not f.is_inf, (f, ref)
    assert f.value == Fraction(ref), (f, ref)
    got = float(f)
    assert got == ref, (f, got, ref)
    assert math.copysign(1.0, got) == math.copysign(1.0, ref), (f, got, ref)
    assert f.is_zero == (ref == 0.0), (f, ref)


@pytest.mark.parametrize("name", list(SPECS))
def test_format_limits_match_the_definition(name):
    fmt, dtype, spec = SPECS[name]
    fi = ml_dtypes.finfo(dtype)
    assert (fmt.exponent_bits, fmt.mantissa_bits, fmt.bias) == (spec.e, spec.m, spec.bias)
    assert fmt.max == Fraction(float(fi.max))
    assert fmt.min_normal == Fraction(float(fi.smallest_normal))
    assert fmt.min_subnormal == Fraction(float(fi.smallest_subnormal))
    assert fmt.eps == Fraction(float(fi.eps))
    assert fmt.has_inf == (spec.specials == "ieee")


@pytest.mark.parametrize("name", list(SPECS))
def test_every_code_decodes_to_the_ml_dtypes_value(name):
    fmt, dtype, spec = SPECS[name]
    width = 1 + spec.e + spec.m
    assert fmt.width == width
    refs = all_codes_as_float64(dtype, width)
    for code, ref in enumerate(refs.tolist()):
        f = fmt.from_bits(code)
        assert f.bits == code and f.fmt is fmt
        check_code_against_reference(f, ref)
        # The hand-written field decoder agrees with ml_dtypes, and with the
        # classification properties.
        kind, sign, value = spec.decode(code)
        if kind == "nan":
            assert math.isnan(ref)
            continue
        if kind == "inf":
            assert ref == (-math.inf if sign else math.inf)
            continue
        assert Fraction(ref) == value
        assert math.copysign(1.0, ref) == (-1.0 if sign else 1.0)
        assert f.is_zero == (value == 0)
        ef = (code >> spec.m) & ((1 << spec.e) - 1)
        assert f.is_subnormal == (ef == 0 and value != 0)


@pytest.mark.parametrize("name", list(SPECS))
def test_every_non_nan_code_rerounds_to_itself_without_flags(name):
    fmt, dtype, spec = SPECS[name]
    width = 1 + spec.e + spec.m
    refs = all_codes_as_float64(dtype, width)
    ctx = fpsim.Context()
    for code, ref in enumerate(refs.tolist()):
        if math.isnan(ref):
            continue
        f = fmt.from_bits(code)
        r = fmt.round(f, ctx)
        assert r.bits == code, (hex(code), hex(r.bits))
        r = fmt.round(ref, ctx)
        assert r.bits == code, (hex(code), ref, hex(r.bits))
        r = fmt.round(float(f), ctx)
        assert r.bits == code, (hex(code), hex(r.bits))
        assert ctx.flags == fpsim.Flag(0), (hex(code), ctx.flags)


@pytest.mark.parametrize("name", list(SPECS))
def test_quiet_nans_reround_to_themselves_and_signaling_nans_are_quieted(name):
    fmt, dtype, spec = SPECS[name]
    e, m, specials = spec.e, spec.m, spec.specials
    width = 1 + e + m
    n_quiet = n_signaling = 0
    for code in range(1 << width):
        kind, sign, _ = spec.decode(code)
        if kind != "nan":
            continue
        f = fmt.from_bits(code)
        assert f.is_nan
        ctx = fpsim.Context()
        r = fmt.round(f, ctx)
        assert r.is_nan
        # IEEE-style formats: the fraction's top bit is the quiet bit.  The
        # single NaNs of fn / fnuz formats are quiet.
        quiet_bit = 1 << (m - 1)
        signaling = specials == "ieee" and not code & quiet_bit
        assert f.is_signaling == signaling, hex(code)
        if signaling:
            n_signaling += 1
            assert r.bits == code | quiet_bit, (hex(code), hex(r.bits))
            assert ctx.flags == fpsim.Flag.INVALID
        else:
            n_quiet += 1
            assert r.bits == code, (hex(code), hex(r.bits))
            assert ctx.flags == fpsim.Flag(0)
    # Count check, from the definitions.
    if specials == "ieee":
        assert n_quiet == 2 * (1 << (m - 1))
        assert n_signaling == 2 * ((1 << (m - 1)) - 1)
    elif specials == "fn":
        assert (n_quiet, n_signaling) == (2, 0)
    else:
        assert (n_quiet, n_signaling) == (1, 0)


def test_e8m0_every_code_decodes_like_ml_dtypes_float8_e8m0fnu():
    refs = all_codes_as_float64(ml_dtypes.float8_e8m0fnu, 8)
    ctx = fpsim.Context()
    assert E8M0.width == 8
    for code, ref in enumerate(refs.tolist()):
        f = E8M0.from_bits(code)
        check_code_against_reference(f, ref)
        kind, _, mag = spec_of("e8m0").decode(code)  # unsigned: the magnitude
        if code == 0xFF:
            assert kind == "nan" and math.isnan(ref)
            continue
        assert mag == Fraction(2) ** (code - 127) == Fraction(ref)
        assert not f.is_zero and not f.is_subnormal
        assert E8M0.round(f, ctx).bits == code
        assert E8M0.round(ref, ctx).bits == code
        assert ctx.flags == fpsim.Flag(0)


def _check_tf32_codes(codes: np.ndarray) -> None:
    codes = codes.astype(np.uint32)
    with np.errstate(invalid="ignore"):
        refs = (codes << np.uint32(13)).view(np.float32).astype(np.float64)
    for code, ref in zip(codes.tolist(), refs.tolist()):
        f = fpsim.TF32.from_bits(code)
        check_code_against_reference(f, ref)


def test_tf32_codes_are_fp32_codes_with_13_low_bits_dropped_sampled():
    # Every exponent field and sign with all-zero, all-one and 16 random
    # fractions, plus every fraction of the subnormal, 1.0 and top binades.
    rng = np.random.default_rng(20240611)
    heads = np.arange(1 << 9, dtype=np.uint32) << np.uint32(10)
    fracs = np.concatenate([[0, 1, 0x200, 0x3FF], rng.integers(0, 1 << 10, 16)]).astype(np.uint32)
    sampled = (heads[:, None] | fracs[None, :]).ravel()
    full = np.concatenate([
        (h << np.uint32(10)) | np.arange(1 << 10, dtype=np.uint32)
        for h in (0x000, 0x100, 0x07F, 0x0FE, 0x0FF, 0x17F, 0x1FF)
    ])
    _check_tf32_codes(np.concatenate([sampled, full]))
    assert fpsim.TF32.width == 19 and fpsim.TF32.max_code == (0xFF << 10) - 1


@pytest.mark.exhaustive
def test_tf32_every_code_is_the_fp32_code_with_13_low_bits_dropped():
    _check_tf32_codes(np.arange(1 << 19, dtype=np.uint32))
