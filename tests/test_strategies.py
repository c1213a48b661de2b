"""fpsim.strategies: every drawn code is a code of the format and honours the
options; the notable codes are reached at once; arrays have the promised
dtypes; rounding_inputs lie on and near the rounding boundaries, checked by
an exact computation written here from the format's parameters and against
ml_dtypes' casts.  The IEEE P3109 formats of every width (K = 3 to 16,
unsigned, finite, P = 1) are checked against gfloat's decode and rounding,
ml_dtypes' float8_e3m4, float8_e4m3 and float8_e4m3b11fnuz against
ml_dtypes' own decoding, and formats() against the P3109 rule."""

import math
import re
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from gfloat import FloatClass, RoundMode, decode_float, round_float
from gfloat.formats import format_info_p3109
from gfloat.types import Domain, Signedness
from hypothesis import HealthCheck, Phase, find, given, settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample
from hypothesis.extra import numpy as hnp

import fpsim
from fpsim import strategies as fst
from fpsim.array import code_dtype, value_dtype

FORMATS = fpsim.formats()
# Formats you build yourself work as well as the built-in ones.
CUSTOM = [
    fpsim.Format("custom_e3m4", 3, 4, 3),
    fpsim.Format("custom_e5m1fn", 5, 1, 15, "fn"),
    fpsim.Format("custom_e3m3fnuz", 3, 3, 4, "fnuz"),
    fpsim.Format("custom_ue4m0", 4, 0, 7, "fn", subnormals=False, signed=False),
]
ids = lambda f: f.name
P3109_NAME = re.compile(r"binary(\d+)p(\d+)([su])([ef])$")
# The default run takes every format outside IEEE P3109's family and four of
# its eight-bit members (signed and unsigned, extended and finite, P = 1 and
# P > 1); tox -e exhaustive takes every format.
P3109_DEFAULT = {"binary8p3se", "binary8p1ue", "binary8p4sf", "binary8p5uf"}


def sampled(formats):
    """``formats`` as parameters, those of P3109's family outside the
    default sample marked exhaustive."""
    return [f if not P3109_NAME.match(f.name) or f.name in P3109_DEFAULT
            else pytest.param(f, marks=pytest.mark.exhaustive, id=f.name) for f in formats]


ALL = sampled(FORMATS + CUSTOM)
SMALL = sampled([f for f in FORMATS + CUSTOM if f.width <= 8])  # enumerable per example
# find() must succeed well within this; the first example found is all we need.
QUICK = settings(max_examples=300, database=None, phases=[Phase.generate])
FEW = settings(max_examples=30)  # per format: many formats, cheap properties


def classes(fmt, code):
    x = fmt.from_bits(code)
    return x, x.is_nan, x.is_inf, x.is_subnormal, x.is_zero


def ordered(x):
    """An order key with -0 < +0, from Python floats (exact for these formats)."""
    v = float(x)
    return (v, math.copysign(1.0, v) if v == 0 else 0.0)


def within(x, lo, hi):
    if x.is_nan:
        return False
    return (lo is None or ordered(lo) <= ordered(x)) and (hi is None or ordered(x) <= ordered(hi))


# -- codes: validity and options ----------------------------------------------


@pytest.mark.parametrize("fmt", ALL, ids=ids)
@FEW
@given(data=st.data())
def test_codes_are_codes_of_the_format(fmt, data):
    c = data.draw(fst.codes(fmt))
    assert type(c) is int and 0 <= c < (1 << fmt.width)
    x = data.draw(fst.values(fmt))
    assert isinstance(x, fpsim.Float) and x.fmt == fmt


OPTIONS = st.fixed_dictionaries({
    "allow_nan": st.booleans(), "allow_infinity": st.booleans(),
    "allow_subnormal": st.booleans(), "allow_negative": st.booleans(),
    "allow_zero": st.booleans(), "allow_signaling": st.booleans(),
})


@pytest.mark.parametrize("fmt", ALL, ids=ids)
@FEW
@given(data=st.data(), options=OPTIONS)
def test_exclusions_are_honoured(fmt, data, options):
    for c in data.draw(st.lists(fst.codes(fmt, **options), min_size=5, max_size=5)):
        x, nan, inf, sub, zero = classes(fmt, c)
        assert options["allow_nan"] or not nan
        assert options["allow_signaling"] or not x.is_signaling
        assert options["allow_infinity"] or not inf
        assert options["allow_subnormal"] or not sub
        assert options["allow_zero"] or not zero
        assert options["allow_negative"] or nan or not x.is_negative


def brute_force(fmt, lo, hi, options):
    """Every code the options allow, by enumeration."""
    out = set()
    for c in fmt.codes():
        x, nan, inf, sub, zero = classes(fmt, c)
        if nan:
            ok = options.get("allow_nan") and (options.get("allow_signaling", True)
                                              or not x.is_signaling)
        else:
            ok = (within(x, lo, hi)
                  and (options.get("allow_infinity", True) or not inf)
                  and (options.get("allow_subnormal", True) or not sub)
                  and (options.get("allow_zero", True) or not zero)
                  and (options.get("allow_negative", True) or not x.is_negative))
        if ok:
            out.add(c)
    return out


BOUND = st.one_of(st.none(), st.floats(allow_nan=False, width=32),
                  st.sampled_from([0.0, -0.0, 1.0, -1.0, 448.0, 1e-3]))


@pytest.mark.parametrize("fmt", SMALL, ids=ids)
@settings(max_examples=40)
@given(data=st.data(), lo=BOUND, hi=BOUND,
       subnormal=st.booleans(), negative=st.booleans(), zero=st.booleans())
def test_bounds_on_small_formats_against_enumeration(fmt, data, lo, hi, subnormal, negative,
                                                     zero):
    if lo is not None and hi is not None and ordered(lo) > ordered(hi):
        lo, hi = hi, lo
    options = dict(allow_subnormal=subnormal, allow_negative=negative, allow_zero=zero)
    expected = brute_force(fmt, lo, hi, dict(options, allow_nan=lo is None and hi is None))
    if not expected:
        with pytest.raises(ValueError, match="no code of"):
            fst.codes(fmt, min_value=lo, max_value=hi, **options)
        return
    strategy = fst.codes(fmt, min_value=lo, max_value=hi, **options)
    drawn = data.draw(st.lists(strategy, min_size=10, max_size=10))
    assert set(drawn) <= expected


@pytest.mark.parametrize("fmt, lo, hi", [
    (fpsim.E4M3, 0.3, 100.0), (fpsim.E5M2FNUZ, -1e-5, 3.0), (fpsim.E2M1, -5.0, -0.0),
    (fpsim.E8M0, 1e-3, 1e6), (CUSTOM[0], -0.1, 2.1), (fpsim.FP16, 0.1, 0.2),
], ids=str)
def test_codes_at_the_bounds_are_found_at_once(fmt, lo, hi):
    strategy = fst.codes(fmt, min_value=lo, max_value=hi)
    key = lambda c: ordered(fmt.from_bits(c))
    if fmt.width <= 8:
        numbers = brute_force(fmt, lo, hi, {})
    else:  # fp16: the codes from 0.1 up to 0.2
        numbers = [c for c in range(0x2E00, 0x3300) if lo <= float(fmt.from_bits(c)) <= hi]
    for end in (min(numbers, key=key), max(numbers, key=key)):
        assert find(strategy, lambda c, end=end: c == end, settings=QUICK) == end


@pytest.mark.parametrize("fmt", ALL, ids=ids)
@FEW
@given(data=st.data())
def test_bounds_that_are_values_of_the_format(fmt, data):
    finite = fst.values(fmt, allow_nan=False, allow_infinity=False)
    a, b = data.draw(finite), data.draw(finite)
    lo, hi = (a, b) if ordered(a) <= ordered(b) else (b, a)
    for x in data.draw(st.lists(fst.values(fmt, min_value=lo, max_value=hi), min_size=3,
                                max_size=3)):
        assert within(x, lo, hi), (x, lo, hi)
    # Bounds need not be values of the format; exact rationals work too.
    q = Fraction(1, 3)
    for x in data.draw(st.lists(fst.values(fmt, min_value=-q, max_value=q), min_size=3,
                                max_size=3)):
        assert -q <= x.value <= q


@pytest.mark.parametrize("fmt", [fpsim.FP16, fpsim.BF16, fpsim.E4M3, fpsim.FP64], ids=ids)
def test_one_sided_bounds_follow_hypothesis_floats(fmt):
    # min_value alone: +inf allowed by default, NaN not, -0 excluded by +0.0.
    s = fst.values(fmt, min_value=0.0)
    if fmt.has_inf:
        assert find(s, lambda x: x.is_inf, settings=QUICK).bits == fmt.inf_code
    assert find(s, lambda x: x == 0, settings=QUICK).bits == 0
    with pytest.raises(NoSuchExample):
        find(s, lambda x: x.is_nan or x.is_negative, settings=settings(QUICK, max_examples=100))
    # max_value=-0.0 includes -0 but not +0.
    s = fst.values(fmt, max_value=-0.0)
    assert find(s, lambda x: x == 0, settings=QUICK).bits == fmt.sign_bit


# -- codes: the notable codes are reached at once ---------------------------------


def notable_targets(fmt):
    m = fmt.mantissa_bits
    out = {"max finite": fmt.max_code, "below max": fmt.max_code - 1,
           "one": fmt.round(1).bits}
    if fmt.signed:
        out["-max finite"] = fmt.max_code | fmt.sign_bit
    if fmt.subnormals:
        out["+0"] = 0
        out["min subnormal"] = 1
        out["max subnormal"] = (1 << m) - 1
        out["min normal"] = 1 << m
    else:
        out["min value"] = 0
    if fmt.has_negative_zero:
        out["-0"] = fmt.sign_bit
    if fmt.has_inf:
        out["+inf"] = fmt.inf_code
        out["-inf"] = fmt.inf_code | fmt.sign_bit
    if fmt.has_nan:
        out["default nan"] = fmt.default_nan_code
    if fmt.specials == "ieee" and m > 1:
        out["signaling nan"] = fmt.inf_code + 1
        out["-quiet nan"] = fmt.default_nan_code | fmt.sign_bit
    return out


@pytest.mark.parametrize(
    "fmt, name, code",
    [(f, name, code) if not P3109_NAME.match(f.name) or f.name in P3109_DEFAULT
     else pytest.param(f, name, code, marks=pytest.mark.exhaustive)
     for f in FORMATS + CUSTOM for name, code in notable_targets(f).items()],
    ids=lambda v: v.name if isinstance(v, fpsim.Format) else str(v),
)
def test_notable_code_is_found_at_once(fmt, name, code):
    assert find(fst.codes(fmt), lambda c: c == code, settings=QUICK) == code


@pytest.mark.parametrize("fmt", [fpsim.FP64, fpsim.FP32, fpsim.FP16, fpsim.E5M2], ids=ids)
def test_nan_with_payload_is_found(fmt):
    quiet = 1 << (fmt.mantissa_bits - 1)
    payload = lambda c: fmt.is_nan_code(c) and (c & (quiet - 1)) != 0
    assert payload(find(fst.codes(fmt), payload, settings=QUICK))


def test_uniform_part_reaches_ordinary_codes():
    # Not only notable codes: an ordinary FP32 normal in a narrow band.
    x = find(fst.values("fp32", allow_nan=False),
             lambda x: x.is_normal and 1e3 < abs(float(x)) < 1e6, settings=QUICK)
    assert 1e3 < abs(float(x)) < 1e6


def test_fp64_codes_are_64_bit():
    c = find(fst.codes("fp64"), lambda c: c >= 1 << 63 and not fpsim.FP64.is_nan_code(c),
             settings=QUICK)
    assert c < 1 << 64


# -- arrays ------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ALL, ids=ids)
@settings(max_examples=20, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_arrays_dtype_shape_and_elements(fmt, data):
    vdt = value_dtype(fmt)
    a = data.draw(fst.arrays(fmt, (2, 3), allow_nan=False))
    assert a.shape == (2, 3)
    assert a.dtype == (vdt if vdt is not None else code_dtype(fmt))
    for c in a.view(code_dtype(fmt)).ravel().tolist():
        assert not fmt.is_nan_code(c)
    b = data.draw(fst.arrays(fmt, hnp.array_shapes(max_dims=2, max_side=3), as_codes=True,
                             allow_negative=False))
    assert b.dtype == code_dtype(fmt) and b.ndim <= 2
    for c in b.ravel().tolist():
        x = fmt.from_bits(c)
        assert x.is_nan or not x.is_negative
    if vdt is not None:
        v = data.draw(fst.arrays(fmt, 4, as_codes=False, allow_nan=False, allow_infinity=False))
        assert v.dtype == vdt and v.shape == (4,)
        assert np.isfinite(v.astype(np.float64)).all()


def test_arrays_unique_and_values_match_codes():
    a = find(fst.arrays("fp16", 5, unique=True), lambda a: True, settings=QUICK)
    assert len(set(a.view(np.uint16).tolist())) == 5
    a = find(fst.arrays("e4m3", 3), lambda a: np.isnan(a.astype(np.float32)).any(),
             settings=QUICK)
    assert a.dtype.name == "float8_e4m3fn"


# -- rounding_inputs: an exact oracle from the format's parameters -----------------


def floor_log2(v):
    e = v.numerator.bit_length() - v.denominator.bit_length()
    return e if Fraction(2) ** e <= v else e - 1


def spacing(fmt, v):
    """Distance from the value v >= 0 of fmt to the next value up."""
    e = max(floor_log2(v), fmt.emin) if v else fmt.emin
    return Fraction(2) ** (e - fmt.mantissa_bits)


def is_value(fmt, v):
    if v == 0:
        return fmt.has_zero
    if v < 0 or v > fmt.max or (not fmt.subnormals and v < fmt.min_normal):
        return False
    return (v / spacing(fmt, v)).denominator == 1


def boundaries_near(fmt, v):
    """The rounding boundaries of fmt near the magnitude v: midpoints of
    adjacent values (the one above max is the overflow threshold), the min
    normal, and half the min value of a format without zero."""
    out = {fmt.min_normal}
    if not fmt.has_zero:
        out.add(fmt.min_normal / 2)
    e = floor_log2(v) if v else fmt.emin
    for ee in (e - 1, e, e + 1):
        q = Fraction(2) ** (max(ee, fmt.emin) - fmt.mantissa_bits)
        n = math.floor(v / q)
        for j in (n - 2, n - 1, n, n + 1):
            low = j * q
            if is_value(fmt, low):
                out.add(low + spacing(fmt, low) / 2)
    return out


def src_ulp(src, v):
    e = max(floor_log2(v), src.emin) if v else src.emin
    return Fraction(2) ** (e - src.mantissa_bits)


TARGETS = sampled([f for f in FORMATS + CUSTOM if f is not fpsim.FP64])


@pytest.mark.parametrize("fmt", TARGETS, ids=ids)
@FEW
@given(data=st.data(), ulps=st.integers(0, 3))
def test_rounding_inputs_lie_near_a_boundary(fmt, data, ulps):
    x = data.draw(fst.rounding_inputs(fmt, max_ulps=ulps))
    src = x.fmt
    assert src is (fpsim.FP64 if fmt is fpsim.FP32 else fpsim.FP32)
    v = abs(x.value)
    distance = min(abs(v - t) for t in boundaries_near(fmt, v))
    t = min(boundaries_near(fmt, v), key=lambda t: abs(v - t))
    assert distance <= ulps * src_ulp(src, max(v, t)), (x, t)
    if ulps == 0:
        assert distance == 0


@pytest.mark.parametrize("fmt", TARGETS, ids=ids)
@FEW
@given(data=st.data())
def test_exact_rounding_inputs_are_midpoints(fmt, data):
    x = data.draw(fst.rounding_inputs(fmt, max_ulps=0, allow_negative=False))
    v = x.value
    if v in (fmt.min_normal, fmt.min_normal / 2 if not fmt.has_zero else None):
        return
    # A midpoint lies in the binade of the value below it, so the spacing
    # there is v's: v is halfway from that value to the next one up.
    q = spacing(fmt, v)
    low = math.floor(v / q) * q
    assert is_value(fmt, low), (x, low)
    assert v - low == q / 2 and not is_value(fmt, v), (x, low)


ML_FORMATS = [f for f in FORMATS if value_dtype(f) is not None and f.width <= 16]


@pytest.mark.parametrize("fmt", ML_FORMATS, ids=ids)
@FEW
@given(data=st.data())
def test_exact_ties_are_where_ml_dtypes_changes_its_mind(fmt, data):
    """Just below a tie and just above it, ml_dtypes' cast gives different
    results.  Not at the other boundaries: both sides of min_normal round to
    it, both sides of half E8M0's smallest value round to that (it has no
    zero), both sides of the overflow threshold of a format without inf and
    NaN round to its max."""
    x = data.draw(fst.rounding_inputs(fmt, max_ulps=0))
    assert x.fmt is fpsim.FP32
    v = abs(x.value)
    if fmt is fpsim.E8M0 and v < fpsim.FP32.min_normal:
        return  # ml_dtypes 0.6 rounds FP32 subnormals just above 2**-127 up to E8M0 0x01
    around = np.array([x.bits - 1, x.bits + 1], np.uint32).view(np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        below, above = around.astype(value_dtype(fmt)).view(code_dtype(fmt)).tolist()
    if (v == fmt.min_normal or (not fmt.has_zero and v == fmt.min_normal / 2)
            or (not fmt.has_nan and v > fmt.max)):
        assert below == above
    else:
        assert below != above


@pytest.mark.parametrize("fmt", [fpsim.FP16, fpsim.BF16, fpsim.E4M3, fpsim.E2M1, fpsim.E8M0,
                                 fpsim.FP32], ids=ids)
def test_rounding_inputs_reach_overflow_and_underflow_boundaries(fmt):
    s = fst.rounding_inputs(fmt, max_ulps=0)
    top = fmt.max + fmt.from_bits(fmt.max_code).ulp() / 2
    assert find(s, lambda x: x.value == top, settings=QUICK).value == top
    bottom = fmt.min_subnormal / 2
    assert find(s, lambda x: x.value == bottom, settings=QUICK).value == bottom
    near = fst.rounding_inputs(fmt, max_ulps=1)
    assert find(near, lambda x: x.value > top, settings=QUICK).value > top


def test_rounding_inputs_codes_and_explicit_source():
    c = find(fst.rounding_inputs("bf16", "fp64", as_codes=True), lambda c: True,
             settings=QUICK)
    assert type(c) is int and 0 <= c < 1 << 64
    x = find(fst.rounding_inputs("e5m2", fpsim.FP16, allow_negative=True),
             lambda x: x < 0, settings=QUICK)
    assert x.fmt is fpsim.FP16


# -- bad arguments and the optional import -------------------------------------------


@pytest.mark.parametrize("call, error, match", [
    (lambda: fst.codes("fp17"), ValueError, r"unknown format 'fp17'; did you mean fp16\?"),
    (lambda: fst.codes(16), TypeError, "fmt must be a fpsim.Format or a format name"),
    (lambda: fst.values("fp16", min_value=2, max_value=1), ValueError, "greater than"),
    (lambda: fst.codes("fp16", min_value=0, allow_nan=True), ValueError, "allow_nan=True"),
    (lambda: fst.codes("fp16", min_value=0, max_value=1, allow_infinity=True), ValueError,
     "allow_infinity=True"),
    (lambda: fst.codes("e4m3", min_value=1000), ValueError, "no code of e4m3"),
    (lambda: fst.codes("e2m1", min_value=0.1, max_value=0.2), ValueError, "no code of e2m1"),
    (lambda: fst.codes("fp16", allow_nan="no"), TypeError, "allow_nan must be True, False"),
    (lambda: fst.codes("fp16", allow_zero=None), TypeError, "allow_zero must be True or"),
    (lambda: fst.codes("fp16", min_value="1"), TypeError, "min_value must be a number"),
    (lambda: fst.codes("fp16", max_value=math.nan), ValueError, "max_value must not be NaN"),
    (lambda: fst.arrays("tf32", 3, as_codes=False), ValueError, "tf32 has no numpy"),
    (lambda: fst.rounding_inputs("fp16", "bf16"), ValueError, "source bf16 is not wider"),
    (lambda: fst.rounding_inputs("fp32", "fp32"), ValueError, "not wider than fp32"),
    (lambda: fst.rounding_inputs("fp64"), ValueError, "no built-in format is wider"),
    (lambda: fst.rounding_inputs("fp16", max_ulps=-1), ValueError, "max_ulps must be >= 0"),
    (lambda: fst.rounding_inputs("fp16", max_ulps=1.5), TypeError, "max_ulps must be an int"),
    (lambda: fst.rounding_inputs("fp16", source=32), TypeError, "source must be a fpsim"),
])
def test_bad_arguments_name_the_problem(call, error, match):
    with pytest.raises(error, match=match):
        call()


# -- the formats added later, against gfloat and ml_dtypes ------------------



def gfloat_info(fmt):
    k, p, sign, domain = P3109_NAME.match(fmt.name).groups()
    return format_info_p3109(int(k), int(p),
                             Signedness.Signed if sign == "s" else Signedness.Unsigned,
                             Domain.Extended if domain == "e" else Domain.Finite)


# P3109 formats of every width whose values fit a float64 (gfloat's decode):
# every P and kind of K = 3 and 5, P = 1 of K = 9, the eight-bit ones, and
# a few wide ones.
P3109_SAMPLE = ([f for f in fst._p3109_family() if f.width in (3, 5)]
                + [f for f in FORMATS if P3109_NAME.match(f.name)]
                + [fpsim.format(n) for n in ("binary9p1se", "binary9p1ue", "binary10p2uf",
                                             "binary12p5uf", "binary13p4se", "binary16p8se",
                                             "binary16p11uf", "binary16p16ue")])
OPTION_NAMES = ("allow_nan", "allow_infinity", "allow_subnormal", "allow_negative",
                "allow_zero")


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_drawn_codes_of_any_p3109_format_honour_the_options_by_gfloat(data):
    """Whatever the options, a drawn code is one that gfloat's decode puts in
    an allowed class, and fpsim.strategies.values gives gfloat's value."""
    fmt = data.draw(st.sampled_from(P3109_SAMPLE), label="fmt")
    options = data.draw(st.fixed_dictionaries({n: st.booleans() for n in OPTION_NAMES}))
    fi = gfloat_info(fmt)
    try:
        strategy = fst.codes(fmt, **options)
    except ValueError:   # nothing left: gfloat agrees there is nothing
        return
    code = data.draw(strategy, label="code")
    d = decode_float(fi, code)
    assert 0 <= code < 2 ** fi.k
    assert d.fclass is not FloatClass.NAN or options["allow_nan"]
    assert d.fclass is not FloatClass.INFINITE or options["allow_infinity"]
    assert d.fclass is not FloatClass.SUBNORMAL or options["allow_subnormal"]
    assert d.fclass is not FloatClass.ZERO or options["allow_zero"]
    assert not d.signbit or options["allow_negative"] or d.fclass is FloatClass.NAN
    x = fmt.from_bits(code)
    assert (math.isnan(d.fval) and x.is_nan) or float(x) == d.fval


@pytest.mark.parametrize("fmt", [
    f if f.width != 8 and f.width != 5 or f.name in P3109_DEFAULT
    else pytest.param(f, marks=pytest.mark.exhaustive, id=f.name) for f in P3109_SAMPLE], ids=ids)
def test_every_class_gfloat_knows_is_reached(fmt):
    """The NaN, ±inf, the smallest subnormal, ±max and zero, where gfloat
    says the format has them, each found at once."""
    fi = gfloat_info(fmt)
    targets = {"max": lambda d: d.fval == fi.max, "zero": lambda d: d.fval == 0}
    if fi.num_nans:
        targets["nan"] = lambda d: d.fclass is FloatClass.NAN
    if fi.domain is Domain.Extended:
        targets["inf"] = lambda d: d.fval == math.inf
    if fi.has_subnormals and fi.precision > 1:
        targets["min subnormal"] = lambda d: d.fval == fi.smallest_subnormal
    if fi.is_signed:
        targets["-max"] = lambda d: d.fval == -fi.max
        if fi.domain is Domain.Extended:
            targets["-inf"] = lambda d: d.fval == -math.inf
    for name, pred in targets.items():
        find(fst.codes(fmt), lambda c, pred=pred: pred(decode_float(fi, c)), settings=QUICK)


@pytest.mark.parametrize("fmt", [f for f in P3109_SAMPLE if f.width <= 10 and f.emax <= 100],
                         ids=ids)
@FEW
@given(data=st.data())
def test_rounding_inputs_of_p3109_formats_are_gfloat_ties(fmt, data):
    """An exact rounding input lies halfway between gfloat's two directed
    roundings of it (or is the smallest normal value)."""
    fi = gfloat_info(fmt)
    v = float(data.draw(fst.rounding_inputs(fmt, max_ulps=0, allow_negative=False)))
    if v == fmt.min_normal:
        return
    low = round_float(fi, v, RoundMode.TowardZero)
    high = round_float(fi, v, RoundMode.TowardPositive)
    if v > fi.max:   # the overflow threshold: max + ulp(max)/2
        ulp = math.ldexp(1, math.frexp(fi.max)[1] - fi.precision)   # in max's binade
        assert v == fi.max + ulp / 2, v
        return
    assert low < v < high and v - low == high - v, (v, low, high)


@pytest.mark.parametrize("name, dtype", [("e3m4", "float8_e3m4"), ("e4m3ieee", "float8_e4m3"),
                                         ("e4m3b11fnuz", "float8_e4m3b11fnuz")])
def test_ml_dtypes_fp8_types_draw_their_values_and_reach_their_classes(name, dtype):
    """Every drawn code decodes as ml_dtypes decodes it; the strategies reach
    ml_dtypes' max, smallest subnormal, inf and NaN where the type has them."""
    import ml_dtypes
    dt = getattr(ml_dtypes, dtype)
    table = np.arange(256, dtype=np.uint8).view(dt).astype(np.float64)
    fmt = fpsim.format(name)
    info = ml_dtypes.finfo(dt)

    @FEW
    @given(fst.values(fmt))
    def drawn(x):
        v = table[x.bits]
        assert (np.isnan(v) and x.is_nan) or float(x) == v

    drawn()
    wanted = [float(info.max), -float(info.max), float(info.smallest_subnormal)]
    wanted += [v for v in (math.inf, -math.inf) if np.isinf(table).any() and v in table]
    for w in wanted:
        find(fst.codes(fmt), lambda c, w=w: table[c] == w, settings=QUICK)
    find(fst.codes(fmt), lambda c: np.isnan(table[c]), settings=QUICK)
    a = find(fst.arrays(fmt, 3, as_codes=False), lambda a: True, settings=QUICK)
    assert a.dtype == dt


def test_formats_draws_the_registered_formats_and_opt_in_every_p3109_one():
    """formats(): exactly fpsim.formats(); with p3109=True the P3109 family
    as its rule lists it (K = 3..16; P = 1..K-1 signed, 1..K unsigned; e
    and f), 504 formats more than the 30 registered."""
    drawn = lambda **kw: {f.name for f in fst.formats(**kw).elements}
    registered = {f.name for f in fpsim.formats()}
    assert drawn() == registered
    rule = {f"binary{k}p{p}{s}{d}" for k in range(3, 17) for s in "su"
            for p in range(1, k + (s == "u")) for d in "ef"}
    assert len(rule) == 504
    assert drawn(p3109=True) == registered | rule
    assert all(fpsim.format(n).width <= 6 for n in drawn(p3109=True, max_width=6))
    assert "binary6p6ue" in drawn(p3109=True, max_width=6)
    with pytest.raises(ValueError, match="max_width=2"):
        fst.formats(max_width=2)
    with pytest.raises(TypeError, match="p3109"):
        fst.formats(p3109="yes")


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_every_strategy_takes_any_drawn_format(data):
    """codes, values, arrays and rounding_inputs on formats drawn by
    formats(p3109=True): valid codes, and rounding inputs where a built-in
    source is wide enough (a ValueError naming it otherwise)."""
    fmt = data.draw(fst.formats(p3109=True), label="fmt")
    code = data.draw(fst.codes(fmt, allow_nan=False))
    assert 0 <= code < 2 ** fmt.width and not fmt.from_bits(code).is_nan
    assert data.draw(fst.values(fmt, min_value=0, max_value=1)).value <= 1
    a = data.draw(fst.arrays(fmt, 2, as_codes=True))
    assert a.shape == (2,) and a.dtype == code_dtype(fmt)
    try:
        x = data.draw(fst.rounding_inputs(fmt, max_ulps=1))
    except ValueError as e:
        assert "wider" in str(e) and fmt.emax > 1023 or fmt.mantissa_bits >= 52, (fmt, e)
    else:
        assert x.fmt.name in ("fp32", "fp64")


def test_import_fpsim_does_not_import_hypothesis():
    code = "import sys, fpsim, fpsim.array; sys.exit('hypothesis' in sys.modules)"
    root = Path(__file__).resolve().parent.parent
    assert subprocess.run([sys.executable, "-c", code], cwd=root).returncode == 0
