"""Every kind of bad input raises the right exception type, with a message
that names the problem and says what is accepted."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import fpsim
from fpsim import E4M3, FP16, Context, Format

ACCEPTED_INPUTS = "accepted: int, float"
MODES = "accepted: rne, rna, rtz, rup, rdn, raz, rto, sr, sr_b, sr_c"


# -- format names -----------------------------------------------------------------

@pytest.mark.parametrize("name, near", [("fp17", "fp16"), ("", None),
                                        ("e4m3fnuzz", "e4m3fnuz"), ("bfloat", "bfloat16")])
def test_unknown_format_name(name, near):
    # the nearest names and where every name is listed, not all of them
    with pytest.raises(ValueError) as info:
        fpsim.format(name)
    msg = str(info.value)
    assert f"unknown format {name!r}" in msg and "'python -m fpsim formats'" in msg
    assert near is None and "did you mean" not in msg or f"did you mean {near}" in msg
    with pytest.raises(ValueError, match="unknown format"):
        fpsim.convert(1, name)


def test_an_ambiguous_format_name_names_the_candidates():
    with pytest.raises(ValueError, match="format 'float8' is ambiguous: FP8 is e4m3 or e5m2"):
        fpsim.format("float8")
    with pytest.raises(ValueError, match="ambiguous"):
        fpsim.convert(1, "float8")


@pytest.mark.parametrize("name", [16, None, 1.5, b"fp16", ["fp16"]])
def test_format_name_must_be_a_str(name):
    with pytest.raises(TypeError, match=f"format name must be a str, got {type(name).__name__}"):
        fpsim.format(name)


# -- from_bits --------------------------------------------------------------------

@pytest.mark.parametrize("fmt,bits,accepted", [
    (FP16, 0x10000, "accepted 0x0..0xffff (16 bits)"),
    (FP16, -1, "accepted 0x0..0xffff (16 bits)"),
    (E4M3, 256, "accepted 0x0..0xff (8 bits)"),
    (fpsim.TF32, 1 << 19, "accepted 0x0..0x7ffff (19 bits)"),
])
def test_from_bits_out_of_range(fmt, bits, accepted):
    with pytest.raises(ValueError) as info:
        fmt.from_bits(bits)
    assert f"out of range for {fmt.name}" in str(info.value)
    assert accepted in str(info.value)


@pytest.mark.parametrize("bits", [1.0, "0x3c00", None, True, Fraction(1)])
def test_from_bits_needs_an_int(bits):
    with pytest.raises(TypeError, match=f"bits for fp16 must be an int, got {type(bits).__name__}"):
        FP16.from_bits(bits)


def test_from_bits_accepts_int_like_values():
    assert FP16.from_bits(np.uint16(0x3C00)).bits == 0x3C00


def test_float_constructor_needs_a_format():
    with pytest.raises(TypeError, match="Float\\(\\) needs a Format, got str"):
        fpsim.Float("fp16", 0x3C00)
    with pytest.raises(ValueError, match="out of range"):
        fpsim.Float(FP16, 1 << 16)


# -- round() inputs ---------------------------------------------------------------

@pytest.mark.parametrize("text", ["abc", "1e5e5", "1e", "0x1p", "nan(123)", "sNaN123", "1.2.3",
                                  "--1", "1 2", "inf inf", "0x1.8q3"])
def test_unparsable_string(text):
    with pytest.raises(ValueError) as info:
        FP16.round(text)
    msg = str(info.value)
    assert repr(text) in msg
    assert "accepted" in msg and "hex float" in msg


@pytest.mark.parametrize("text,fragment", [
    ("", "empty string is not a number"),
    ("   ", "empty string is not a number"),
    ("0x", "a hex float needs digits"),
    ("0x.p1", "a hex float needs digits"),
    ("1/0", "as a rational p/q"),
    ("1/-3", "as a rational p/q"),
    ("a/b", "as a rational p/q"),
])
def test_malformed_strings_name_the_problem(text, fragment):
    with pytest.raises(ValueError, match=fragment):
        FP16.round(text)


@pytest.mark.parametrize("x", [[1], None, 1j, {"x": 1}, (1, 2), b"1", object(),
                               np.array([1.0, 2.0]), np.complex64(1), np.datetime64("2020-01-01")],
                         ids=lambda x: type(x).__name__)
def test_unsupported_input_type(x):
    with pytest.raises(TypeError) as info:
        FP16.round(x)
    msg = str(info.value)
    assert "cannot read" in msg
    assert ACCEPTED_INPUTS in msg and "Decimal" in msg and "numpy" in msg


# -- settings ---------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["bogus", "nearest_odd", "", 3, None, "rnd"])
def test_unknown_rounding_mode(mode):
    for call in (lambda: Context(rounding=mode),
                 lambda: FP16.round(1, rounding=mode),
                 lambda: setattr(Context(), "rounding", mode),
                 lambda: Context().copy(rounding=mode)):
        with pytest.raises(ValueError) as info:
            call()
        assert f"unknown rounding mode {mode!r}" in str(info.value)
        assert MODES in str(info.value)


@pytest.mark.parametrize("name", ["saturate", "ftz", "daz"])
@pytest.mark.parametrize("value", [1, 0, "yes", None, np.bool_(True)], ids=repr)
def test_boolean_settings_must_be_bool(name, value):
    if name == "saturate" and value == "yes":
        return  # a string names a saturation mode: test_unknown_saturation_mode
    for call in (lambda: Context(**{name: value}),
                 lambda: FP16.round(1, **{name: value}),
                 lambda: setattr(Context(), name, value)):
        with pytest.raises(TypeError) as info:
            call()
        assert f"{name} must be True or False" in str(info.value)
        assert f"got {value!r}" in str(info.value)


@pytest.mark.parametrize("value", ["yes", "", "sat_finite_please", "OvfNaN"])
def test_unknown_saturation_mode(value):
    for call in (lambda: Context(saturate=value), lambda: FP16.round(1, saturate=value)):
        with pytest.raises(ValueError) as info:
            call()
        assert f"unknown saturation mode {value!r}" in str(info.value)
        assert "'satpropagate', 'satnone' (or 'ovfinf')" in str(info.value)


@pytest.mark.parametrize("value", ["during", "", None, 1, "afterwards"])
def test_bad_tininess(value):
    for call in (lambda: Context(tininess=value), lambda: FP16.round(1, tininess=value)):
        with pytest.raises(ValueError) as info:
            call()
        assert f"unknown tininess {value!r}" in str(info.value)
        assert "accepted: after, before" in str(info.value)


@pytest.mark.parametrize("value", [0, 65, -1, 1000])
def test_sr_bits_out_of_range(value):
    for call in (lambda: Context(sr_bits=value),
                 lambda: FP16.round(1, rounding="sr", sr_bits=value)):
        with pytest.raises(ValueError, match=f"sr_bits must be between 1 and 64, got {value}"):
            call()


@pytest.mark.parametrize("value", [4.0, "8", True, None])
def test_sr_bits_must_be_an_int(value):
    with pytest.raises(TypeError, match="sr_bits must be an int"):
        Context(sr_bits=value)


def test_bad_nan_policy():
    with pytest.raises(ValueError) as info:
        Context(nan="intel")
    assert "unknown NaN policy 'intel'" in str(info.value)
    assert "ieee, x86, arm_default_nan, riscv" in str(info.value)


@pytest.mark.parametrize("rng", ["seed", 1.5, True, [1, 2]], ids=repr)
def test_bad_rng(rng):
    with pytest.raises(TypeError) as info:
        Context(rng=rng)
    assert "rng must be an int seed, a random.Random or a numpy.random.Generator" in \
        str(info.value)


@pytest.mark.parametrize("flags", ["INEXACT", 1.0, True, None])
def test_bad_flags(flags):
    with pytest.raises(TypeError, match="flags must be an fpsim.Flag"):
        Context(flags=flags)


def test_unknown_keyword_override():
    for call in (lambda: FP16.round(1, rnd="rne"),
                 lambda: FP16.round(1, ctx=Context(), rounding_mode="rtz"),
                 lambda: fpsim.convert(1, "fp16", flush=True)):
        with pytest.raises(TypeError) as info:
            call()
        msg = str(info.value)
        assert "unexpected keyword argument" in msg
        assert "accepted: ctx, random_bits, rounding, saturate, ftz, daz, tininess, sr_bits" in msg


def test_unknown_keyword_to_context_and_localcontext():
    with pytest.raises(TypeError, match="unexpected keyword argument 'rnd'"):
        Context(rnd="rne")
    # as decimal.localcontext does: an unknown keyword is a TypeError
    with pytest.raises(TypeError, match="rnd"):
        with fpsim.localcontext(rnd="rne"):
            pass
    with pytest.raises(TypeError, match="rnd"):
        Context().copy(rnd="rne")


@pytest.mark.parametrize("ctx", ["rne", 1, {"rounding": "rne"}, fpsim.Rounding.RNE],
                         ids=repr)
def test_ctx_of_the_wrong_type(ctx):
    with pytest.raises(TypeError, match=f"ctx must be an fpsim.Context, got {type(ctx).__name__}"):
        FP16.round(1, ctx=ctx)
    with pytest.raises(TypeError, match="ctx must be an fpsim.Context"):
        fpsim.convert(1, "fp16", ctx=ctx)


def test_setcontext_needs_a_context():
    with pytest.raises(TypeError, match="setcontext\\(\\) takes a Context, got str"):
        fpsim.setcontext("rne")


def test_setting_an_unknown_context_attribute():
    ctx = Context()
    for name in ("foo", "rounding_mode", "_flags", "flag"):
        with pytest.raises(AttributeError) as info:
            setattr(ctx, name, 1)
        msg = str(info.value)
        assert f"Context has no setting {name!r}" in msg
        assert "rounding, saturate, ftz, daz, tininess, sr_bits" in msg


# -- random_bits --------------------------------------------------------------------

def test_random_bits_errors():
    with pytest.raises(ValueError,
                       match="out of range: accepted 0 <= random_bits < 2\\*\\*sr_bits"):
        FP16.round(Fraction(1, 3), rounding="sr", random_bits=2**32)
    with pytest.raises(ValueError, match="only used by stochastic rounding"):
        FP16.round(Fraction(1, 3), random_bits=1)
    with pytest.raises(TypeError, match="random_bits must be an int, got float"):
        FP16.round(Fraction(1, 3), rounding="sr", random_bits=0.5)


# -- custom formats -----------------------------------------------------------------

@pytest.mark.parametrize("kwargs,fragment", [
    (dict(exponent_bits=0, mantissa_bits=3, bias=7), "exponent_bits must be .*got 0"),
    (dict(exponent_bits=-4, mantissa_bits=3, bias=7), "exponent_bits must be .*got -4"),
    (dict(exponent_bits=4, mantissa_bits=-1, bias=7), "mantissa_bits must be .*got -1"),
    (dict(exponent_bits=4, mantissa_bits=3, bias=7, specials="weird"),
     "specials must be one of ieee, fn, fnuz, none; got 'weird'"),
    (dict(exponent_bits=4, mantissa_bits=0, bias=7), "needs mantissa_bits >= 1 to encode NaN"),
    (dict(exponent_bits=1, mantissa_bits=3, bias=0), "needs exponent_bits >= 2"),
    (dict(exponent_bits=4, mantissa_bits=3, bias=8, specials="fnuz", signed=False),
     "an FNUZ format needs a sign bit"),
    (dict(exponent_bits=8, mantissa_bits=0, bias=127, specials="fn", subnormals=False),
     "supported for unsigned formats"),
])
def test_invalid_custom_format_values(kwargs, fragment):
    with pytest.raises(ValueError, match=fragment):
        Format("custom", **kwargs)


@pytest.mark.parametrize("kwargs,fragment", [
    (dict(exponent_bits=4.0, mantissa_bits=3, bias=7), "exponent_bits must be an int, got float"),
    (dict(exponent_bits=4, mantissa_bits="3", bias=7), "mantissa_bits must be an int, got str"),
    (dict(exponent_bits=4, mantissa_bits=3, bias=True), "bias must be an int, got bool"),
])
def test_invalid_custom_format_types(kwargs, fragment):
    with pytest.raises(TypeError, match=fragment):
        Format("custom", **kwargs)


def test_custom_format_name_must_be_a_string():
    with pytest.raises(TypeError, match="Format name must be a"):
        Format(3, 4, 3, 7)


def test_empty_custom_format_name_is_a_value_error():
    # the right type with a bad value: ValueError, as everywhere else in fpsim
    with pytest.raises(ValueError, match="name must be a non-empty string"):
        Format("", 4, 3, 7)


@pytest.mark.parametrize("name", ["signed", "subnormals"])
@pytest.mark.parametrize("value", ["no", 1, None], ids=repr)
def test_custom_format_flags_must_be_bool(name, value):
    kwargs = {"specials": "none", name: value}
    with pytest.raises(TypeError, match=f"{name} must be"):
        Format("custom", 4, 3, 7, **kwargs)


def test_register_errors():
    with pytest.raises(TypeError, match="register\\(\\) takes a Format, got str"):
        fpsim.register("fp16")
    with pytest.raises(ValueError, match="format name 'fp16' is already used by fp16"):
        fpsim.register(Format("fp16", 5, 10, 14))
    with pytest.raises(ValueError, match="'half' is already used by fp16"):
        fpsim.register(Format("myhalf", 5, 10, 14, aliases=("half",)))
    assert fpsim.format("fp16") is FP16 and fpsim.format("half") is FP16


# -- values ---------------------------------------------------------------------------

@pytest.mark.parametrize("bits,kind", [(0x7C00, "inf"), (0xFC00, "inf"), (0x7E00, "nan"),
                                       (0x7C01, "nan")])
def test_value_of_inf_or_nan(bits, kind):
    x = FP16.from_bits(bits)
    with pytest.raises(ValueError, match=f"{kind} has no exact rational value"):
        x.value
    with pytest.raises(ValueError, match=f"ulp is not defined for {kind}"):
        x.ulp()


def test_values_a_format_cannot_hold():
    e3m2 = Format("e3m2", 3, 2, 3, specials="none")
    with pytest.raises(ValueError, match="NaN is not representable in e3m2, which has no NaN"):
        e3m2.round("nan")
    with pytest.raises(ValueError, match="format e4m3 has no signaling NaN"):
        E4M3.round("snan")
