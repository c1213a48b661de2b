"""The interface of the array engine (:mod:`fpsim.array`): result dtypes,
accepted inputs, shapes, and the errors for bad arguments."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import fpsim
from fpsim import (
    BF16,
    E4M3,
    E4M3FNUZ,
    E5M2,
    E5M2FNUZ,
    FP16,
    FP32,
    FP64,
    TF32,
    Flag,
    array,
)

# Formats with no numpy or ml_dtypes type: TF32 and unregistered ones.
E4M4 = fpsim.Format("e4m4", 4, 4, 7)
E3M2 = fpsim.E3M2
E3M2_BIAS4 = fpsim.Format("e3m2_bias4", 3, 2, 4, specials="none")

VALUE_DTYPES = {
    FP32: np.dtype(np.float32),
    FP16: np.dtype(np.float16),
    BF16: np.dtype(ml_dtypes.bfloat16),
    E4M3: np.dtype(ml_dtypes.float8_e4m3fn),
    E5M2: np.dtype(ml_dtypes.float8_e5m2),
    E4M3FNUZ: np.dtype(ml_dtypes.float8_e4m3fnuz),
    E5M2FNUZ: np.dtype(ml_dtypes.float8_e5m2fnuz),
    fpsim.E3M2: np.dtype(ml_dtypes.float6_e3m2fn),
    fpsim.E2M3: np.dtype(ml_dtypes.float6_e2m3fn),
    fpsim.E2M1: np.dtype(ml_dtypes.float4_e2m1fn),
    fpsim.E8M0: np.dtype(ml_dtypes.float8_e8m0fnu),
}
CODE_ONLY = {TF32: np.dtype(np.uint32), E4M4: np.dtype(np.uint16),
             E3M2_BIAS4: np.dtype(np.uint8)}

SAMPLE = np.array([0.0, -0.0, 1.0, -2.5, 1e-3, 3.0e4, 1e-7, 448.0, -57344.0, np.inf])


def ids(f):
    return f.name


def scalar_codes(values, fmt, **settings):
    ctx = fpsim.Context(**settings)
    return [fmt.round(float(v), ctx).bits for v in np.asarray(values).reshape(-1)]


# -- result dtypes ----------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", list(VALUE_DTYPES), ids=ids)
def test_round_returns_the_formats_value_dtype(fmt):
    sample = SAMPLE[SAMPLE >= 0] if not fmt.signed else SAMPLE
    got = array.round(sample, fmt)
    assert got.dtype == VALUE_DTYPES[fmt] == array.value_dtype(fmt)
    assert got.view(array.code_dtype(fmt)).tolist() == scalar_codes(sample, fmt)
    # and the values are the rounded values
    assert np.array_equal(got.astype(np.float64),
                          array.decode(array.encode(sample, fmt), fmt), equal_nan=True)
    values, flags = array.round(sample, fmt, return_flags=True)
    assert values.dtype == VALUE_DTYPES[fmt] and flags.dtype == np.uint8
    np.testing.assert_array_equal(values.view(array.code_dtype(fmt)),
                                  got.view(array.code_dtype(fmt)))


@pytest.mark.parametrize("fmt", list(CODE_ONLY), ids=ids)
def test_round_returns_codes_where_no_dtype_exists(fmt):
    sample = SAMPLE[SAMPLE >= 0] if not fmt.signed else SAMPLE
    got = array.round(sample, fmt)
    assert array.value_dtype(fmt) is None
    assert got.dtype == CODE_ONLY[fmt] == array.code_dtype(fmt)
    assert got.tolist() == scalar_codes(sample, fmt)
    codes, flags = array.round(sample, fmt, return_flags=True)
    assert codes.dtype == CODE_ONLY[fmt] and flags.dtype == np.uint8


def test_round_tf32_codes():
    got = array.round(np.array([1.0, 1 + 2.0**-11, -3.0]), TF32)
    assert got.dtype == np.uint32
    assert got.tolist() == [0x1FC00, 0x1FC00, (1 << 18) | (128 << 10) | 0x200]  # -3 = -1.1b * 2**1


def test_encode_returns_code_dtypes():
    for fmt, dt in [(FP32, np.uint32), (TF32, np.uint32), (FP16, np.uint16), (BF16, np.uint16),
                    (E4M3, np.uint8), (E5M2FNUZ, np.uint8), (E3M2, np.uint8)]:
        assert array.encode(np.array([1.0]), fmt).dtype == dt
        assert array.code_dtype(fmt) == dt


def test_code_dtype_of_fp64_and_value_dtype_of_an_unregistered_lookalike():
    assert array.code_dtype(FP64) == np.uint64
    lookalike = fpsim.Format("fp16", 5, 10, 14)  # FP16's name, another bias
    assert array.value_dtype(lookalike) is None
    assert array.value_dtype(FP64) == np.float64


# -- inputs ----------------------------------------------------------------------------------

ML_SOURCES = [(BF16, ml_dtypes.bfloat16), (E4M3, ml_dtypes.float8_e4m3fn),
              (E5M2, ml_dtypes.float8_e5m2), (E4M3FNUZ, ml_dtypes.float8_e4m3fnuz),
              (E5M2FNUZ, ml_dtypes.float8_e5m2fnuz), (FP16, np.float16)]


@pytest.mark.parametrize("src,dt", ML_SOURCES, ids=lambda x: getattr(x, "name", ""))
def test_value_arrays_are_read_through_their_bits(src, dt):
    """Every code of the source as an array of its dtype converts as the
    integer codes with src= do (NaN payloads and signaling NaNs included)."""
    codes = np.arange(1 << src.width, dtype=array.code_dtype(src))
    values = codes.view(dt)
    for dst in (FP32, FP16, E4M3, BF16):
        for settings in ({}, {"rounding": "rtz", "daz": True, "nan": "x86"}):
            a, fa = array.encode(values, dst, fpsim.Context(**settings), return_flags=True)
            b, fb = array.convert(codes, src, dst, fpsim.Context(**settings),
                                  return_flags=True)
            np.testing.assert_array_equal(a, b)
            np.testing.assert_array_equal(fa, fb)
    # spot-check against the scalar model fed the numpy / ml_dtypes scalar itself
    for i in range(0, codes.size, max(1, codes.size // 64)):
        ctx = fpsim.Context(daz=True)
        want = FP32.round(values[i], ctx)
        got = array.encode(values[i:i + 1], FP32, fpsim.Context(daz=True))
        assert int(got[0]) == want.bits


def test_lists_and_python_floats_are_float64():
    assert array.encode([1.0, 2.0**-30], FP16).tolist() == scalar_codes([1.0, 2.0**-30], FP16)
    x = array.encode(1e-8, FP16)
    assert x.shape == () and int(x) == FP16.round(1e-8).bits
    with pytest.raises(TypeError, match="src="):  # Python ints are integer codes
        array.encode(3, FP16)
    assert array.encode(3, E4M3, src=E4M3).tolist() == 3


def test_integer_codes_need_src():
    codes = np.array([0x3C00, 0x7E00], np.uint16)
    with pytest.raises(TypeError, match="src="):
        array.encode(codes, E4M3)
    with pytest.raises(TypeError):
        array.encode(np.array([1, 2], np.int64), FP16)
    assert array.encode(codes, E4M3, src=FP16).tolist() == [0x38, 0x7F]
    assert array.encode(codes, E4M3, src="float16").tolist() == [0x38, 0x7F]


@pytest.mark.parametrize("dt", [np.int8, np.int16, np.int32, np.int64, np.uint16, np.uint32,
                                np.uint64])
def test_integer_codes_of_any_integer_dtype(dt):
    codes = np.arange(256).astype(dt)
    want = array.convert(np.arange(256, dtype=np.uint8), E4M3, FP16)
    if np.iinfo(dt).max < 255:
        codes = codes[:128]
        want = want[:128]
    np.testing.assert_array_equal(array.convert(codes, E4M3, FP16), want)


def test_codes_out_of_range_raise_value_error():
    with pytest.raises(ValueError, match="out of range"):
        array.convert(np.array([0x100], np.uint16), E4M3, FP16)
    with pytest.raises(ValueError, match="out of range"):
        array.convert(np.array([-1], np.int16), FP16, E4M3)
    with pytest.raises(ValueError, match="out of range"):
        array.convert(np.array([1 << 19], np.uint32), TF32, FP16)
    with pytest.raises(ValueError, match="out of range"):
        array.decode(np.array([64], np.uint8), E3M2)
    with pytest.raises(ValueError, match="out of range"):
        array.decode(np.array([-1]), FP16)


def test_unsupported_dtypes_raise_type_error():
    for bad in (np.array([True]), np.array([1 + 2j]), np.array(["1.0"]),
                np.array([1.0], object)):
        with pytest.raises(TypeError):
            array.encode(bad, FP16)
    with pytest.raises(TypeError, match="integer codes"):
        array.decode(np.array([1.0]), FP16)


def test_non_contiguous_and_fortran_order_inputs():
    a = np.arange(24, dtype=np.float64).reshape(4, 6) / 7
    for view in (a.T, a[:, ::2], a[::-1], np.asfortranarray(a)):
        got = array.encode(view, BF16)
        assert got.shape == view.shape
        np.testing.assert_array_equal(got, array.encode(np.ascontiguousarray(view), BF16))


def test_non_native_byte_order_floats_are_read_by_value():
    """A big-endian float array holds the same values as its native copy; the
    scalar model reads its elements as those values.  (Reported: the array
    engine views the raw bytes as native integer codes, e.g. '>f4' [1.0, 2.0]
    into fp16 gives [0, 0] instead of [0x3c00, 0x4000].)"""
    for dt in (">f8", ">f4", ">f2"):
        values = np.array([1.0, 2.0, -0.5, 1e-5], dtype=dt)
        want = [FP16.round(v).bits for v in values]  # numpy scalars: native values
        assert array.encode(values.astype(values.dtype.newbyteorder("=")), FP16).tolist() == want
        assert array.encode(values, FP16).tolist() == want, dt


def test_big_endian_integer_codes():
    codes = np.array([0x3C00, 0xC000], dtype=">u2")
    assert array.decode(codes, FP16).tolist() == [1.0, -2.0]
    assert array.convert(codes, FP16, E4M3).tolist() == [0x38, 0xC0]


def test_float_array_with_a_different_src_is_rejected():
    """``src=`` names the format of integer codes.  A float array whose dtype
    is another format must not be silently reinterpreted as codes of ``src``
    (reported: float32 [1.0] with src=fp16 gives 0, reading 0x3f800000 as an
    fp16 code)."""
    with pytest.raises((TypeError, ValueError)):
        array.encode(np.array([1.0], np.float32), FP16, src=FP16)
    # the dtype's own format is fine
    assert array.encode(np.array([1.0], np.float32), FP16, src=FP32).tolist() == [0x3C00]


# -- shapes ----------------------------------------------------------------------------------

def test_shapes_are_preserved():
    a = np.linspace(-3, 3, 12).reshape(3, 4)
    for fn in (lambda x: array.encode(x, E4M3), lambda x: array.round(x, E4M3),
               lambda x: array.round(x, TF32)):
        assert fn(a).shape == (3, 4)
        assert fn(a.reshape(2, 3, 2)).shape == (2, 3, 2)
        assert fn(np.asarray(1.5)).shape == ()
    codes, flags = array.encode(a, FP16, return_flags=True)
    assert codes.shape == flags.shape == (3, 4)
    zero_d, f = array.encode(np.float64(1e-9), FP16, return_flags=True)
    assert zero_d.shape == f.shape == () and Flag(int(f)) == Flag.UNDERFLOW | Flag.INEXACT
    assert array.decode(np.array(0x3C00, np.uint16), FP16).shape == ()
    assert array.convert(np.array(0x3C00, np.uint16), FP16, E5M2).shape == ()
    assert array.decode(codes, FP16).shape == (3, 4)
    big = np.arange(1 << 16, dtype=np.uint16).reshape(16, 64, 64)  # the lookup-table path
    assert array.convert(big, FP16, E4M3).shape == (16, 64, 64)


@pytest.mark.parametrize("shape", [(0,), (0, 3), (2, 0, 1)])
def test_empty_arrays(shape):
    ctx = fpsim.Context()
    for kw in ({}, {"rounding": "sr", "rng": 1}, {"rounding": "sr", "random_bits": 0}):
        codes, flags = array.encode(np.zeros(shape), E4M3, ctx, return_flags=True, **kw)
        assert codes.shape == flags.shape == shape
        assert codes.dtype == np.uint8 and flags.dtype == np.uint8
    assert array.round(np.zeros(shape, np.float32), BF16).dtype == ml_dtypes.bfloat16
    assert array.convert(np.zeros(shape, np.uint16), FP16, E5M2).shape == shape
    assert array.decode(np.zeros(shape, np.uint8), E4M3).shape == shape
    assert ctx.flags == Flag(0)


# -- bad arguments -----------------------------------------------------------------------------

@pytest.mark.parametrize("chunk_size", [0, -1, 1.5, "7", True, None])
def test_invalid_chunk_size(chunk_size):
    with pytest.raises(ValueError, match="chunk_size"):
        array.encode(np.array([1.0]), FP16, chunk_size=chunk_size)


def test_random_bits_or_rng_with_a_non_sr_mode():
    for mode in ("rne", "rna", "rtz", "rup", "rdn", "rto"):
        with pytest.raises(ValueError, match="stochastic"):
            array.encode(np.array([1.0]), FP16, rounding=mode, random_bits=np.array([0]))
        with pytest.raises(ValueError, match="stochastic"):
            array.encode(np.array([1.0]), FP16, rounding=mode, rng=1)
    with pytest.raises(ValueError):  # the context's mode counts too
        array.encode(np.array([1.0]), FP16, fpsim.Context(), random_bits=0)


@pytest.mark.parametrize("sr_bits", [1, 5, 32])
def test_random_bits_out_of_range(sr_bits):
    x = np.array([1.0, 2.0])
    ok = np.array([0, (1 << sr_bits) - 1], dtype=np.uint64)
    array.encode(x, FP16, rounding="sr", sr_bits=sr_bits, random_bits=ok)
    for bad in (np.array([0, 1 << sr_bits], dtype=np.uint64), np.array([-1, 0])):
        with pytest.raises(ValueError, match="random_bits"):
            array.encode(x, FP16, rounding="sr", sr_bits=sr_bits, random_bits=bad)


def test_random_bits_bad_type_and_shape():
    x = np.array([1.0, 2.0, 3.0])
    with pytest.raises(TypeError):
        array.encode(x, FP16, rounding="sr", random_bits=np.array([0.5, 0.5, 0.5]))
    with pytest.raises(ValueError):  # not broadcastable to the input's shape
        array.encode(x, FP16, rounding="sr", random_bits=np.array([1, 2]))
    with pytest.raises(ValueError, match="not both"):
        array.encode(x, FP16, rounding="sr", random_bits=np.array([1, 2, 3]), rng=1)
    with pytest.raises(TypeError, match="rng"):
        array.encode(x, FP16, rounding="sr", rng="seed")
    # the full 64-bit range for sr_bits=64
    top = np.array([0, 2**64 - 1, 2**63], dtype=np.uint64)
    array.encode(x, FP16, rounding="sr", sr_bits=64, random_bits=top)


def test_targets_wider_than_fp64_name_the_limit():
    wide = fpsim.Format("e11m60", 11, 60, 1023)     # precision 61
    with pytest.raises(ValueError, match="up to 64 bits of precision up to 53"):
        array.encode(np.array([1.0]), wide)
    with pytest.raises(ValueError, match="up to 64 bits of precision up to 53"):
        array.round(np.array([1.0]), wide)
    with pytest.raises(ValueError, match="up to 64 bits of precision up to 53"):
        array.convert(np.array([0x3C00], np.uint16), FP16, wide)
    # FP64 itself is a target like the others (tests/test_array_fp64.py)
    assert array.convert(np.array([0x3C00], np.uint16), FP16, FP64).tolist() == [
        0x3FF0000000000000]


def test_nan_into_a_format_without_nan():
    with pytest.raises(ValueError, match="NaN"):
        array.encode(np.array([1.0, np.nan]), E3M2)
    with pytest.raises(ValueError, match="NaN"):
        array.round(np.array([np.nan], np.float32), E3M2)
    with pytest.raises(ValueError, match="NaN"):  # 16-bit codes: the lookup-table path
        array.convert(np.arange(1 << 16, dtype=np.uint16), FP16, E3M2)
    with pytest.raises(ValueError):
        E3M2.round(float("nan"))  # as the scalar model
    # infinities have no NaN to go to either: ±max, INVALID (as the scalar model)
    codes, flags = array.encode(np.array([np.inf, -np.inf]), E3M2, return_flags=True)
    assert codes.tolist() == [E3M2.max_code, E3M2.sign_bit | E3M2.max_code]
    assert [Flag(int(f)) for f in flags] == [Flag.INVALID, Flag.INVALID]
    # without NaN inputs the conversion of the rest of the codes works
    codes = np.array([c for c in range(1 << 16) if not FP16.is_nan_code(c)], np.uint16)
    assert array.convert(codes, FP16, E3M2).size == codes.size


def test_unknown_override_and_bad_settings():
    with pytest.raises(TypeError, match="unexpected keyword"):
        array.encode(np.array([1.0]), FP16, rounding_mode="rne")
    with pytest.raises(TypeError):
        array.round(np.array([1.0]), FP16, flags=0)
    with pytest.raises(TypeError):
        array.convert(np.array([1], np.uint8), E4M3, FP16, nonsense=True)
    with pytest.raises(ValueError, match="rounding"):
        array.encode(np.array([1.0]), FP16, rounding="nearest_odd")
    with pytest.raises(ValueError):
        array.encode(np.array([1.0]), FP16, sr_bits=65)
    with pytest.raises(TypeError):
        array.encode(np.array([1.0]), FP16, saturate=1)
    with pytest.raises(TypeError, match="ctx"):
        array.encode(np.array([1.0]), FP16, "rne")
    with pytest.raises(ValueError, match="unknown format"):
        array.encode(np.array([1.0]), "fp17")
