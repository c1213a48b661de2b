"""Bad input to the arithmetic raises the right exception, with a message
that names the problem and says what to do."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import fpsim
from fpsim import BF16, E4M3, FP16, FP32, arith

X = FP16.round(1.5)
Y = BF16.round(1.5)
NAN_POLICIES = ("ieee", "x86", "arm_default_nan", "riscv")

BINARY = {
    "add": arith.add, "sub": arith.sub, "mul": arith.mul, "div": arith.div,
    "remainder": arith.remainder, "minimum": arith.minimum, "maximum": arith.maximum,
    "minimum_number": arith.minimum_number, "maximum_number": arith.maximum_number,
}
UNARY = {
    "sqrt": arith.sqrt, "round_to_integral": arith.round_to_integral, "logb": arith.logb,
    "next_up": arith.next_up, "next_down": arith.next_down,
}
# (name, call taking the operands, the operand list of the right formats)
WITH_SETTINGS = (
    [(name, f, (X, X)) for name, f in BINARY.items()]
    + [(name, f, (X,)) for name, f in UNARY.items()]
    + [("fma", arith.fma, (X, X, X)), ("scaleb", lambda a, **kw: arith.scaleb(a, 2, **kw), (X,))]
)
COMPARISONS = {"eq": arith.eq, "ne": arith.ne, "lt": arith.lt, "le": arith.le, "gt": arith.gt,
               "ge": arith.ge, "unordered": arith.unordered}


# -- mixed formats ------------------------------------------------------------------------

@pytest.mark.parametrize("name", [*BINARY, "copysign"])
def test_mixed_formats_name_both_and_say_convert(name):
    func = BINARY.get(name, arith.copysign)
    for a, b in ((X, Y), (Y, X), (X, FP32.round(1)), (E4M3.round(1), X)):
        with pytest.raises(TypeError) as info:
            func(a, b)
        msg = str(info.value)
        assert a.fmt.name in msg and b.fmt.name in msg, msg
        assert "convert" in msg, msg


@pytest.mark.parametrize("position", [0, 1, 2])
def test_fma_mixed_formats(position):
    args = [X, X, X]
    args[position] = Y
    with pytest.raises(TypeError, match=r"fp16.*bf16.*convert|bf16.*fp16.*convert"):
        arith.fma(*args)


@pytest.mark.parametrize("op", ["+", "-", "*", "/"])
def test_mixed_formats_through_operators(op):
    with pytest.raises(TypeError) as info:
        eval(f"X {op} Y")
    msg = str(info.value)
    assert "fp16" in msg and "bf16" in msg and "convert" in msg, msg


def test_comparisons_may_mix_formats():
    assert arith.eq(X, Y) and arith.le(X, FP32.round(1.5)) and not arith.lt(X, Y)


# -- operands that are not Floats ------------------------------------------------------------

NOT_FLOATS = [1, 1.5, Fraction(3, 2), "1.5", None, np.float16(1.5), np.float32(1.5)]


@pytest.mark.parametrize("bad", NOT_FLOATS, ids=lambda v: type(v).__name__)
def test_non_float_operands(bad):
    tname = type(bad).__name__
    for name, func in BINARY.items():
        for args in ((X, bad), (bad, X)):
            with pytest.raises(TypeError) as info:
                func(*args)
            msg = str(info.value)
            assert f"{name}() takes fpsim.Float operands" in msg and tname in msg, msg
    for name, func in UNARY.items():
        with pytest.raises(TypeError, match=f"{name}\\(\\) takes fpsim.Float operands, got "
                                            f"{tname}"):
            func(bad)
    for args in ((bad, X, X), (X, bad, X), (X, X, bad)):
        with pytest.raises(TypeError, match="fma\\(\\) takes fpsim.Float operands"):
            arith.fma(*args)
    for func in (arith.neg, arith.abs, lambda v: arith.scaleb(v, 1)):
        with pytest.raises(TypeError, match="takes fpsim.Float operands"):
            func(bad)
    for args in ((X, bad), (bad, X)):
        with pytest.raises(TypeError, match="copysign\\(\\) takes fpsim.Float operands"):
            arith.copysign(*args)
    for name, func in COMPARISONS.items():
        with pytest.raises(TypeError, match=f"{name}\\(\\) takes fpsim.Float operands"):
            func(X, bad)


@pytest.mark.parametrize("op", ["+", "-", "*", "/"])
@pytest.mark.parametrize("bad", [1, 2.5, Fraction(1, 3), np.float16(1)],
                         ids=lambda v: type(v).__name__)
def test_float_with_a_number_through_operators(op, bad):
    with pytest.raises(TypeError) as info:
        eval(f"X {op} bad")
    msg = str(info.value)
    assert type(bad).__name__ in msg and "fp16" in msg, msg
    assert "round" in msg, msg  # says how to make a Float of the format
    with pytest.raises(TypeError):  # and the reflected form is refused too
        eval(f"bad {op} X")


def test_comparison_operators_with_unrelated_types():
    assert (X == "1.5") is False and (X != None) is True  # noqa: E711
    with pytest.raises(TypeError):
        X < "1.5"  # noqa: B015
    with pytest.raises(TypeError):
        X >= None  # noqa: B015


# -- scaleb's exponent ---------------------------------------------------------------------------

@pytest.mark.parametrize("n", [1.0, 2.5, "3", None, Fraction(2), True, np.float64(2)],
                         ids=lambda v: f"{type(v).__name__}({v!r})")
def test_scaleb_exponent_must_be_an_int(n):
    with pytest.raises(TypeError, match=f"scaleb\\(\\) exponent must be an int, got "
                                        f"{type(n).__name__}"):
        arith.scaleb(X, n)


def test_scaleb_accepts_integer_like_exponents():
    assert arith.scaleb(X, np.int64(2)).value == 6
    assert arith.scaleb(X, -1).value == Fraction(3, 4)


# -- settings ------------------------------------------------------------------------------------

@pytest.mark.parametrize("name,func,args", WITH_SETTINGS, ids=[w[0] for w in WITH_SETTINGS])
def test_unknown_override_keyword(name, func, args):
    for kw in ({"roundin": "rne"}, {"mode": "rtz"}, {"flags": 0}, {"tininess_before": True}):
        with pytest.raises(TypeError) as info:
            func(*args, **kw)
        msg = str(info.value)
        key = next(iter(kw))
        assert "unexpected keyword argument" in msg and key in msg, msg
        assert "rounding" in msg and "saturate" in msg, msg  # says what is accepted


@pytest.mark.parametrize("name,func,args", WITH_SETTINGS, ids=[w[0] for w in WITH_SETTINGS])
def test_unknown_nan_policy(name, func, args):
    for bad in ("arm", "IEEE754", "", "default"):
        with pytest.raises(ValueError) as info:
            func(*args, nan=bad)
        msg = str(info.value)
        assert "unknown NaN policy" in msg and repr(bad) in msg, msg
        for accepted in NAN_POLICIES:
            assert accepted in msg, msg
    with pytest.raises(ValueError, match="unknown NaN policy"):
        fpsim.Context(nan="sse")
    for good in (*NAN_POLICIES, "X86", " riscv "):  # names are case- and space-insensitive
        func(*args, nan=good)


@pytest.mark.parametrize("name,func,args", WITH_SETTINGS, ids=[w[0] for w in WITH_SETTINGS])
def test_bad_setting_values(name, func, args):
    with pytest.raises(ValueError, match="unknown rounding mode 'nearest-odd'; accepted: rne"):
        func(*args, rounding="nearest-odd")
    with pytest.raises(TypeError, match="saturate must be True or False"):
        func(*args, saturate=1)
    with pytest.raises(ValueError, match="unknown saturation mode 'yes'; accepted: False, True"):
        func(*args, saturate="yes")
    with pytest.raises(TypeError, match="ftz must be True or False"):
        func(*args, ftz=1)
    with pytest.raises(ValueError, match="unknown tininess"):
        func(*args, tininess="during")
    with pytest.raises(ValueError, match="random_bits= is only used by stochastic rounding"):
        func(*args, random_bits=5)


@pytest.mark.parametrize("name,func,args", WITH_SETTINGS, ids=[w[0] for w in WITH_SETTINGS])
def test_ctx_of_the_wrong_type(name, func, args):
    for bad in ("rne", 1, {}, fpsim.Context, fpsim.Rounding.RNE):
        with pytest.raises(TypeError, match="ctx must be an fpsim.Context, got"):
            func(*args, ctx=bad)
        with pytest.raises(TypeError, match="ctx must be an fpsim.Context, got"):
            func(*args, ctx=bad, rounding="rtz")


@pytest.mark.parametrize("name", list(COMPARISONS))
def test_comparison_ctx_of_the_wrong_type(name):
    """A comparison's ctx receives the INVALID flag; the wrong type is
    refused like everywhere else, whether or not a NaN is involved."""
    func = COMPARISONS[name]
    qnan = FP16.round("nan")
    for a, b in ((X, X), (X, qnan)):
        with pytest.raises(TypeError, match="ctx must be an fpsim.Context"):
            func(a, b, ctx="rne", signaling=True)


def test_flags_are_not_lost_when_a_call_is_refused():
    ctx = fpsim.Context()
    arith.div(X, FP16.round(0), ctx)
    with pytest.raises(TypeError):
        arith.add(X, Y, ctx)
    with pytest.raises(TypeError):
        arith.add(X, X, ctx, bogus=1)
    assert ctx.flags == fpsim.Flag.DIVIDE_BY_ZERO
