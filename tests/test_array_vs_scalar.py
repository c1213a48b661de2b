"""The array engine (:mod:`fpsim.array`) equals the scalar model element by
element: code for code (NaN codes included) and flag for flag.

The reference for every element is the scalar path, ``fpsim.convert`` of a
:class:`fpsim.Float` (or ``fmt.round`` of a Python number) under a
:class:`fpsim.Context` with the same settings and no flags raised before the
element (one context per setting whose flags are cleared before each element:
the same thing as a fresh context per element, at a fraction of the cost).
The array side runs under its own fresh context, whose sticky flags must be
the OR of the per-element flags.

Float inputs are compared through their bit patterns: the scalar side reads
``FP64.from_bits(code)`` / ``FP32.from_bits(code)``, so NaN payloads and
signaling NaNs reach both sides unchanged.
"""

from __future__ import annotations

import math
import zlib

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import fpsim
from fpsim import BF16, E4M3, E4M3FNUZ, E5M2, E5M2FNUZ, FP16, FP32, FP64, TF32, Flag, array

E3M2 = fpsim.Format("e3m2", 3, 2, 3, specials="none")
E8M0 = fpsim.Format("e8m0", 8, 0, 127, specials="fn", subnormals=False, signed=False)

SMALL = [FP16, BF16, E4M3, E5M2, E4M3FNUZ, E5M2FNUZ, E3M2, E8M0]  # every code enumerable
EIGHT_BIT = [f for f in SMALL if f.width <= 8]
DESTINATIONS = [*SMALL, TF32, FP32]
MODES = ["rne", "rna", "rtz", "rup", "rdn", "rto"]
POLICIES = ["ieee", "x86", "arm_default_nan", "riscv"]

UINT = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


def ids(f):
    return f.name


# -- the scalar reference and the comparison -------------------------------------------

def operands(src, codes):
    """The scalar operands: one Float per code (built once, reused per setting)."""
    make = src.from_bits
    return [make(c) for c in np.asarray(codes).tolist()]


def scalar(xs, dst, settings, random_bits=None):
    """(codes, flags) of the scalar model, per element, under ``settings``."""
    ctx = fpsim.Context(**settings)
    conv = fpsim.convert
    codes, flags = [], []
    if random_bits is None:
        for x in xs:
            ctx.clear_flags()
            codes.append(conv(x, dst, ctx).bits)
            flags.append(ctx.flags.value)
    else:
        for x, r in zip(xs, np.asarray(random_bits).tolist()):
            ctx.clear_flags()
            codes.append(conv(x, dst, ctx, random_bits=r).bits)
            flags.append(ctx.flags.value)
    return np.array(codes, dtype=array.code_dtype(dst)), np.array(flags, dtype=np.uint8)


def settings_str(settings):
    return ", ".join(f"{k}={v}" for k, v in settings.items())


def compare(inputs, codes_in, origin, dst, settings, expected, **kw):
    """Run the array engine on ``inputs`` and compare with ``expected``
    (scalar codes, flags).  ``codes_in`` are the input codes of format
    ``origin``, for the failure message; ``kw`` go to :func:`fpsim.array.encode`."""
    exp_codes, exp_flags = expected
    ctx = fpsim.Context(**settings)
    got, got_flags = array.encode(inputs, dst, ctx, return_flags=True, **kw)
    assert got.dtype == array.code_dtype(dst)
    assert got_flags.dtype == np.uint8
    assert got.shape == got_flags.shape == np.shape(inputs)
    bad = np.flatnonzero((got.reshape(-1) != exp_codes) | (got_flags.reshape(-1) != exp_flags))
    if bad.size:
        codes_in = np.asarray(codes_in).reshape(-1)
        width = (origin.width + 3) // 4
        lines = [f"{bad.size} of {exp_codes.size} elements differ, {origin.name} -> {dst.name} "
                 f"({settings_str(settings)}{', ' + settings_str(kw) if kw else ''}):"]
        for i in bad[:8]:
            c = int(codes_in[i])
            lines.append(
                f"  {origin.name} 0x{c:0{width}x} ({float(origin.from_bits(c))!r}): scalar "
                f"0x{int(exp_codes[i]):x} {Flag(int(exp_flags[i]))!r}, array "
                f"0x{int(got.reshape(-1)[i]):x} {Flag(int(got_flags.reshape(-1)[i]))!r}")
        pytest.fail("\n".join(lines))
    expected_sticky = int(np.bitwise_or.reduce(exp_flags)) if exp_flags.size else 0
    assert ctx.flags == Flag(expected_sticky), (
        f"sticky flags {ctx.flags!r} != OR of the elements' {Flag(expected_sticky)!r}")


def check_codes(src, codes, dst, settings, xs=None):
    codes = np.asarray(codes, dtype=array.code_dtype(src))
    if xs is None:
        xs = operands(src, codes)
    compare(codes, codes, src, dst, settings, scalar(xs, dst, settings), src=src)


def check_floats(values, dst, settings, xs=None):
    src = FP64 if values.dtype == np.float64 else FP32
    bits = values.view(UINT[src.width])
    if xs is None:
        xs = operands(src, bits)
    compare(values, bits, src, dst, settings, scalar(xs, dst, settings))


def nan_free(src, codes, dst):
    """Drop the NaN codes of ``src`` when ``dst`` has no NaN (they raise)."""
    if dst.has_nan:
        return codes
    return np.array([c for c in codes if not src.is_nan_code(int(c))],
                    dtype=array.code_dtype(src))


def every_code(fmt, step=1):
    return np.arange(0, 1 << fmt.width, step, dtype=array.code_dtype(fmt))


# -- 1. decode, and encode of the decoded values -----------------------------------------

@pytest.mark.parametrize("fmt", SMALL, ids=ids)
def test_decode_every_code_equals_float_of_Float(fmt):
    codes = every_code(fmt)
    got = array.decode(codes, fmt)
    assert got.dtype == np.float64 and got.shape == codes.shape
    want = np.array([float(fmt.from_bits(c)) for c in codes.tolist()])
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan)
    np.testing.assert_array_equal(got[~nan], want[~nan])
    # signed zeros, and the sign of NaN (an FNUZ NaN is the "-0" code: negative)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


@pytest.mark.parametrize("fmt", SMALL, ids=ids)
def test_encode_of_decoded_reencodes_every_non_nan_code(fmt):
    codes = every_code(fmt)
    values = array.decode(codes, fmt)
    keep = ~np.isnan(values)
    ctx = fpsim.Context()
    got, flags = array.encode(values[keep], fmt, ctx, return_flags=True)
    np.testing.assert_array_equal(got, codes[keep])
    assert not flags.any() and ctx.flags == Flag(0)
    if fmt.has_nan:  # NaN codes: whatever the scalar model makes of the float64 NaN
        nans = values[~keep]
        check_floats(nans, fmt, {})


@pytest.mark.parametrize("fmt", SMALL, ids=ids)
def test_decode_accepts_any_integer_dtype(fmt):
    codes = every_code(fmt, 3)
    want = array.decode(codes, fmt)
    for dt in (np.int32, np.int64, np.uint32, np.uint64):
        np.testing.assert_array_equal(array.decode(codes.astype(dt), fmt), want)


# -- 2. conversions between the small formats, from every code --------------------------

# The acceptance criterion: every FP16 and BF16 code to E4M3 and E5M2, every
# mode, with and without saturation.
ACCEPTANCE = [(s, d) for s in (FP16, BF16) for d in (E4M3, E5M2)]


@pytest.mark.parametrize("src,dst", ACCEPTANCE, ids=lambda f: f.name)
def test_fp16_bf16_to_fp8_sampled_every_mode(src, dst):
    """Every 17th code (the chunk path: too few codes for the lookup table)."""
    codes = every_code(src, 17)
    xs = operands(src, codes)
    for mode in MODES:
        for saturate in (False, True):
            check_codes(src, codes, dst, {"rounding": mode, "saturate": saturate}, xs)


@pytest.mark.parametrize("src,dst", ACCEPTANCE, ids=lambda f: f.name)
def test_fp16_bf16_to_fp8_every_code_rne(src, dst):
    """Every code in one array (the lookup-table path), default settings."""
    check_codes(src, every_code(src), dst, {})


def test_lookup_table_path_follows_every_setting():
    """Whole-format arrays of a 16-bit source go through a lookup table built
    per setting: one after the other, each setting must give its own result
    (fp16 -> e5m2 at default settings was tabulated by the test above)."""
    codes = every_code(FP16)
    xs = operands(FP16, codes)
    for settings in ({}, {"daz": True}, {"ftz": True}, {"ftz": True, "tininess": "before"},
                     {"nan": "x86"}, {"rounding": "rup", "saturate": True}, {}):
        check_codes(FP16, codes, E5M2, settings, xs)


@pytest.mark.exhaustive
@pytest.mark.parametrize("src,dst", ACCEPTANCE, ids=lambda f: f.name)
def test_fp16_bf16_to_fp8_every_code_every_mode(src, dst):
    codes = every_code(src)
    xs = operands(src, codes)
    for mode in MODES:
        for saturate in (False, True):
            check_codes(src, codes, dst, {"rounding": mode, "saturate": saturate}, xs)


FULL_VARIANTS = [{}, {"ftz": True}, {"daz": True}, {"tininess": "before"}, {"saturate": True},
                 {"ftz": True, "daz": True, "tininess": "before", "saturate": True}]
SHORT_VARIANTS = [{}, {"ftz": True}, {"daz": True, "tininess": "before", "saturate": True}]


def setting_grid(modes=MODES, variants=FULL_VARIANTS):
    """Every mode, with each of ftz, daz, tininess='before', saturate alone and
    all four together (or the short list: none, ftz, the other three)."""
    return [{"rounding": m, **v} for m in modes for v in variants]


@pytest.mark.parametrize("src", EIGHT_BIT, ids=ids)
def test_every_8_bit_code_to_every_format_every_setting(src):
    codes = every_code(src)
    for dst in DESTINATIONS:
        ok = nan_free(src, codes, dst)
        xs = operands(src, ok)
        for settings in setting_grid():
            check_codes(src, ok, dst, settings, xs)


@pytest.mark.parametrize("src", [FP16, BF16], ids=ids)
def test_16_bit_codes_to_every_format_sampled(src):
    codes = every_code(src, 31)
    for dst in DESTINATIONS:
        ok = nan_free(src, codes, dst)
        xs = operands(src, ok)
        for settings in setting_grid(["rne", "rup", "rto"]):
            check_codes(src, ok, dst, settings, xs)


@pytest.mark.exhaustive
@pytest.mark.parametrize("dst", DESTINATIONS, ids=ids)
@pytest.mark.parametrize("src", [FP16, BF16], ids=ids)
def test_every_16_bit_code_to_every_format_every_setting(src, dst):
    codes = nan_free(src, every_code(src), dst)
    xs = operands(src, codes)
    for settings in setting_grid(variants=SHORT_VARIANTS):
        check_codes(src, codes, dst, settings, xs)


@pytest.mark.parametrize("src", [FP32, TF32], ids=ids)
def test_random_32_bit_codes_to_every_format(src):
    """Random codes of the wide formats (every exponent, NaN payloads) and
    the codes next to the small formats' limits."""
    rng = np.random.default_rng(src.width)
    codes = rng.integers(0, 1 << src.width, 400, dtype=np.uint64)
    special = [0, 1, 2, src.sign_bit | 1, src.max_code, src.inf_code, src.inf_code + 1,
               src.default_nan_code, src.default_nan_code | src.sign_bit]
    codes = np.concatenate([codes, special]).astype(np.uint32)
    for dst in DESTINATIONS:
        ok = nan_free(src, codes, dst)
        xs = operands(src, ok)
        for settings in setting_grid(["rne", "rdn", "rto"], SHORT_VARIANTS):
            check_codes(src, ok, dst, settings, xs)


@pytest.mark.parametrize("fmt", [FP32, TF32], ids=ids)
def test_decode_random_32_bit_codes(fmt):
    rng = np.random.default_rng(fmt.width + 1)
    codes = np.concatenate([rng.integers(0, 1 << fmt.width, 20000, dtype=np.uint64),
                            np.arange(64), fmt.sign_bit + np.arange(64),
                            fmt.inf_code + np.arange(-32, 32),
                            fmt.sign_bit + fmt.inf_code + np.arange(-32, 32)]).astype(np.uint32)
    got = array.decode(codes, fmt)
    want = np.array([float(fmt.from_bits(c)) for c in codes.tolist()])
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    ok = ~np.isnan(want)
    np.testing.assert_array_equal(got[ok], want[ok])
    # and back: every non-NaN code re-encodes to itself
    np.testing.assert_array_equal(array.encode(got[ok], fmt), codes[ok])


@pytest.mark.parametrize("dst", [d for d in SMALL if not d.has_nan], ids=ids)
@pytest.mark.parametrize("src", [FP16, E4M3, E4M3FNUZ], ids=ids)
def test_nan_code_into_a_format_without_nan_raises_like_the_scalar_model(src, dst):
    nan = src.default_nan_code
    with pytest.raises(ValueError):
        fpsim.convert(src.from_bits(nan), dst, fpsim.Context())
    for size in (3, 1 << src.width):  # the chunk path and the lookup-table path
        codes = every_code(src)[:size].copy()
        codes[-1] = nan
        with pytest.raises(ValueError, match="NaN"):
            array.convert(codes, src, dst)


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("src", [FP16, BF16, E5M2, E4M3, E4M3FNUZ, E8M0], ids=ids)
def test_nan_codes_under_every_policy(src, policy):
    nans = np.array([c for c in range(1 << src.width) if src.is_nan_code(c)],
                    dtype=array.code_dtype(src))
    xs = operands(src, nans)
    for dst in DESTINATIONS:
        if dst.has_nan:
            check_codes(src, nans, dst, {"nan": policy}, xs)
            check_codes(src, nans, dst, {"nan": policy, "saturate": True, "rounding": "rtz"},
                        xs)


# -- 3. encode from float32 and float64 arrays ---------------------------------------------

FLOAT_DESTINATIONS = [FP16, BF16, E4M3, E5M2, TF32, FP32, E4M3FNUZ]


def _dst_values(dst, codes):
    return np.array([float(dst.from_bits(int(c))) for c in codes])


def interesting(dst, dtype, n, seed):
    """Inputs for rounding into ``dst``: random bit patterns (every exponent,
    subnormals of the source, NaN payloads), values spread over ``dst``'s
    range and beyond, exact ties between neighbouring codes of ``dst`` and
    their neighbours in the source, the overflow threshold, the subnormal /
    normal boundary, ±0, ±inf and NaNs."""
    with np.errstate(over="ignore", invalid="ignore"):
        return _interesting(dst, dtype, n, seed)


def _interesting(dst, dtype, n, seed):
    rng = np.random.default_rng(seed)
    src = FP64 if dtype == np.float64 else FP32
    u = UINT[src.width]
    parts = []
    # random bit patterns
    parts.append(rng.integers(0, 1 << src.width, n, dtype=np.uint64).astype(u).view(dtype))
    # source subnormals (DAZ) and tiny values
    parts.append(rng.integers(1, 1 << src.mantissa_bits, n // 4, dtype=np.uint64)
                 .astype(u).view(dtype))
    # spread over dst's range, from below half its smallest subnormal to past max
    lo = dst.emin - dst.mantissa_bits - 3
    hi = dst.emax + 3
    e = rng.integers(lo, hi, n)
    frac = rng.random(n) + 1.0
    parts.append(np.ldexp(frac, e).astype(dtype))
    # exact ties between neighbouring dst codes (random ones, and at the low end
    # and the subnormal / normal boundary), and the source values next to them
    m = dst.mantissa_bits
    low = [0, 1, 2, 3, (1 << m) - 2, (1 << m) - 1, 1 << m, (1 << m) + 1]
    top = dst.max_code - 1
    codes = np.concatenate([np.array(low, dtype=np.int64),
                            rng.integers(0, top, n // 2),
                            [top - 1, top - 2]])
    codes = codes[(codes >= 0) & (codes < top)]
    a, b = _dst_values(dst, codes), _dst_values(dst, codes + 1)
    ties = ((a + b) / 2).astype(dtype)
    parts += [ties, np.nextafter(ties, dtype(0)), np.nextafter(ties, dtype(np.inf))]
    # around max and the overflow threshold max + ulp(max)/2
    mx = float(dst.max)
    ulp = math.ldexp(1.0, dst.emax - m)
    near = np.array([mx, mx + ulp / 2, mx + ulp, mx + ulp / 4, mx + 3 * ulp / 4, 2 * mx,
                     mx - ulp / 2, mx * 1e10])
    near = near.astype(dtype)
    parts += [near, np.nextafter(near, dtype(0)), np.nextafter(near, dtype(np.inf))]
    # just below the smallest normal (tininess after rounding) and half the
    # smallest subnormal
    mn = float(dst.min_normal)
    edge = np.array([mn * (1 - math.ldexp(1.0, -k)) for k in range(m, m + 4)]
                    + [float(dst.min_subnormal) / 2, float(dst.min_subnormal) * 0.75])
    edge = edge.astype(dtype)
    parts += [edge, np.nextafter(edge, dtype(0)), np.nextafter(edge, dtype(1))]
    # specials: zeros, infinities, NaNs (quiet, signaling, payloads)
    q = 1 << (src.mantissa_bits - 1)
    inf = ((1 << src.exponent_bits) - 1) << src.mantissa_bits
    nan_bits = [inf | q, inf | q | 1, inf | 1, inf | (q - 1), inf | q | 0x5A5, inf | 0x1234]
    parts.append(np.array([0.0, np.inf], dtype=dtype))
    parts.append(np.array(nan_bits, dtype=u).view(dtype))
    out = np.concatenate(parts).astype(dtype)
    # both signs of everything (through the sign bit: NaN payloads stay as they are)
    bits = out.view(u)
    flip = np.where(rng.random(out.size) < 0.5, u(src.sign_bit), u(0))
    return np.concatenate([bits, bits ^ u(src.sign_bit), bits ^ flip]).view(dtype)


SOURCE_DTYPES = [np.float64, np.float32]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dst", FLOAT_DESTINATIONS, ids=ids)
@pytest.mark.parametrize("dtype", SOURCE_DTYPES, ids=lambda d: np.dtype(d).name)
def test_encode_floats_every_setting(dtype, dst, mode):
    values = interesting(dst, dtype, 120, seed=zlib.crc32(f"{dst.name}/{mode}".encode()))
    src = FP64 if dtype == np.float64 else FP32
    xs = operands(src, values.view(UINT[src.width]))
    for ftz in (False, True):
        for daz in (False, True):
            for tininess in ("after", "before"):
                for saturate in (False, True):
                    settings = {"rounding": mode, "ftz": ftz, "daz": daz,
                                "tininess": tininess, "saturate": saturate}
                    check_floats(values, dst, settings, xs)


@pytest.mark.parametrize("dst", [E8M0, E3M2, E5M2FNUZ], ids=ids)
@pytest.mark.parametrize("dtype", SOURCE_DTYPES, ids=lambda d: np.dtype(d).name)
def test_encode_floats_into_formats_without_inf_or_zero_or_nan(dtype, dst):
    """E8M0 (no zero, no sign: zeros and negatives give NaN and INVALID), E3M2
    (no NaN: infinities give ±max and INVALID) and E5M2FNUZ (no -0, one NaN)."""
    values = interesting(dst, dtype, 50, seed=zlib.crc32(dst.name.encode()))
    if not dst.has_nan:
        values = values[~np.isnan(values)]
    src = FP64 if dtype == np.float64 else FP32
    xs = operands(src, values.view(UINT[src.width]))
    for settings in setting_grid(variants=SHORT_VARIANTS):
        check_floats(values, dst, settings, xs)


@pytest.mark.exhaustive
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dst", FLOAT_DESTINATIONS, ids=ids)
@pytest.mark.parametrize("dtype", SOURCE_DTYPES, ids=lambda d: np.dtype(d).name)
def test_encode_floats_every_setting_many(dtype, dst, mode):
    values = interesting(dst, dtype, 1000, seed=1 + zlib.crc32(f"{dst.name}/{mode}".encode()))
    src = FP64 if dtype == np.float64 else FP32
    xs = operands(src, values.view(UINT[src.width]))
    for ftz in (False, True):
        for daz in (False, True):
            for tininess in ("after", "before"):
                for saturate in (False, True):
                    settings = {"rounding": mode, "ftz": ftz, "daz": daz,
                                "tininess": tininess, "saturate": saturate}
                    check_floats(values, dst, settings, xs)


def nan_inputs(dtype, n, seed):
    """NaNs of both signs: quiet and signaling, random payloads."""
    rng = np.random.default_rng(seed)
    src = FP64 if dtype == np.float64 else FP32
    m = src.mantissa_bits
    inf = ((1 << src.exponent_bits) - 1) << m
    payload = rng.integers(1, 1 << m, n, dtype=np.uint64)
    fixed = np.array([1, 1 << (m - 1), (1 << (m - 1)) | 1, (1 << m) - 1,
                      (1 << (m - 1)) - 1, 1 << (m - 2)], dtype=np.uint64)
    bits = np.concatenate([fixed, payload]) | np.uint64(inf)
    bits = np.concatenate([bits, bits | np.uint64(src.sign_bit)])
    return bits.astype(UINT[src.width]).view(dtype)


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("dtype", SOURCE_DTYPES, ids=lambda d: np.dtype(d).name)
def test_encode_nans_every_policy(dtype, policy):
    values = nan_inputs(dtype, 60, seed=len(policy))
    mixed = np.concatenate([values, np.array([1.0, -0.0, np.inf], dtype=dtype)])
    src = FP64 if dtype == np.float64 else FP32
    xs = operands(src, mixed.view(UINT[src.width]))
    for dst in [*FLOAT_DESTINATIONS, E5M2FNUZ, E8M0]:
        for settings in ({"nan": policy},
                         {"nan": policy, "rounding": "rtz", "saturate": True, "daz": True}):
            check_floats(mixed, dst, settings, xs)


def test_encode_python_floats_equal_fmt_round():
    """A Python list of floats (read as float64) against ``fmt.round(float)``,
    the scalar model's float hot path."""
    rng = np.random.default_rng(7)
    values = np.concatenate([interesting(FP16, np.float64, 60, 3),
                             interesting(E4M3, np.float64, 60, 4)])
    values = values[~np.isnan(values)].tolist()
    for dst in (FP16, E4M3, BF16, E5M2):
        for mode in MODES:
            ctx = fpsim.Context(rounding=mode, daz=bool(rng.integers(2)))
            want_codes, want_flags = [], []
            for v in values:
                ctx.clear_flags()
                want_codes.append(dst.round(v, ctx).bits)
                want_flags.append(ctx.flags.value)
            got, flags = array.encode(values, dst, ctx.copy(flags=0), return_flags=True)
            np.testing.assert_array_equal(got, np.array(want_codes))
            np.testing.assert_array_equal(flags, np.array(want_flags))


# -- 4. flags: sticky aggregates and per-element ----------------------------------------------

def test_sticky_flags_are_ored_into_the_context_and_keep_earlier_ones():
    values = np.array([1.0, 1e-6, 1e6, np.inf, -0.0])
    per = []
    for v in values:
        ctx = fpsim.Context(rounding="rtz")
        E4M3.round(float(v), ctx)
        per.append(ctx.flags)
    ctx = fpsim.Context(rounding="rtz", flags=Flag.DIVIDE_BY_ZERO)
    codes, flags = array.encode(values, E4M3, ctx, return_flags=True)
    assert [Flag(int(f)) for f in flags] == per
    union = Flag(0)
    for f in per:
        union |= f
    assert ctx.flags == union | Flag.DIVIDE_BY_ZERO
    assert union == Flag.INVALID | Flag.OVERFLOW | Flag.UNDERFLOW | Flag.INEXACT


def test_flags_of_each_element_alone_equal_the_per_element_flags():
    values = interesting(FP16, np.float64, 40, seed=11)
    ctx = fpsim.Context(ftz=True)
    _, flags = array.encode(values, FP16, ctx, return_flags=True)
    for v, f in zip(values[:: 7], flags[:: 7]):
        one = fpsim.Context(ftz=True)
        array.encode(np.array([v]), FP16, one)
        assert one.flags == Flag(int(f))


def test_flags_go_to_the_current_context_without_ctx():
    with fpsim.localcontext(rounding="rup") as ctx:
        ctx.clear_flags()
        got = array.encode(np.array([1e-30, 1.0]), FP16)
        assert ctx.flags == Flag.UNDERFLOW | Flag.INEXACT
    assert got.tolist() == [1, 0x3C00]  # rounded up: the current context's mode


def test_overrides_apply_to_one_call_and_flags_still_go_to_ctx():
    ctx = fpsim.Context()
    got = array.encode(np.array([1000.0, -1000.0]), E4M3, ctx, saturate=True, rounding="rtz")
    assert got.tolist() == [0x7E, 0xFE]
    assert ctx.flags == Flag.OVERFLOW | Flag.INEXACT
    assert ctx.saturate is False and ctx.rounding is fpsim.Rounding.RNE
    values = interesting(E5M2, np.float64, 50, seed=5)
    xs = operands(FP64, values.view(np.uint64))
    settings = {"rounding": "rdn", "ftz": True, "tininess": "before", "daz": True}
    expected = scalar(xs, E5M2, settings)
    compare(values, values.view(np.uint64), FP64, E5M2, {}, expected, **settings)


def test_return_flags_false_gives_the_same_codes_and_sticky_flags():
    values = interesting(BF16, np.float32, 50, seed=9)
    a, b = fpsim.Context(rounding="rna"), fpsim.Context(rounding="rna")
    codes, _ = array.encode(values, BF16, a, return_flags=True)
    np.testing.assert_array_equal(array.encode(values, BF16, b), codes)
    assert a.flags == b.flags


# -- 5. Hypothesis ---------------------------------------------------------------------------

HYPO_DESTINATIONS = [FP16, BF16, E4M3, E5M2]
shapes = hnp.array_shapes(min_dims=0, max_dims=2, min_side=0, max_side=12)


def _check_any(values, dst, mode, ftz, daz, saturate=False):
    settings = {"rounding": mode, "ftz": ftz, "daz": daz, "saturate": saturate}
    src = FP64 if values.dtype == np.float64 else FP32
    bits = values.view(UINT[src.width])
    flat = bits.reshape(-1)
    xs = operands(src, flat)
    compare(values, flat, src, dst, settings, scalar(xs, dst, settings))


@given(values=hnp.arrays(np.float64, shapes),
       dst=st.sampled_from(HYPO_DESTINATIONS), mode=st.sampled_from(MODES),
       ftz=st.booleans(), daz=st.booleans(), saturate=st.booleans())
def test_hypothesis_float64(values, dst, mode, ftz, daz, saturate):
    _check_any(values, dst, mode, ftz, daz, saturate)


@given(values=hnp.arrays(np.float32, shapes),
       dst=st.sampled_from(HYPO_DESTINATIONS), mode=st.sampled_from(MODES),
       ftz=st.booleans(), daz=st.booleans(), saturate=st.booleans())
def test_hypothesis_float32(values, dst, mode, ftz, daz, saturate):
    _check_any(values, dst, mode, ftz, daz, saturate)


@given(bits=hnp.arrays(np.uint64, hnp.array_shapes(max_dims=1, max_side=20)),
       dst=st.sampled_from(HYPO_DESTINATIONS), mode=st.sampled_from(MODES),
       ftz=st.booleans(), daz=st.booleans())
def test_hypothesis_float64_bit_patterns(bits, dst, mode, ftz, daz):
    _check_any(bits.view(np.float64), dst, mode, ftz, daz)


@given(values=hnp.arrays(np.float64, hnp.array_shapes(max_dims=1, max_side=20),
                         elements=st.floats(min_value=-1e5, max_value=1e5, width=64)),
       dst=st.sampled_from(HYPO_DESTINATIONS), mode=st.sampled_from(MODES),
       ftz=st.booleans(), daz=st.booleans())
def test_hypothesis_float64_in_range(values, dst, mode, ftz, daz):
    _check_any(values, dst, mode, ftz, daz)
