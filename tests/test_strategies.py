"""fpsim.strategies: every drawn code is a code of the format and honours the
options; the notable codes are reached at once; arrays have the promised
dtypes; rounding_inputs lie on and near the rounding boundaries, checked by
an exact computation written here from the format's parameters and against
ml_dtypes' casts."""

import math
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
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
ALL = FORMATS + CUSTOM
SMALL = [f for f in ALL if f.width <= 8]  # small enough to enumerate per example
ids = lambda f: f.name
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
    [(f, name, code) for f in ALL for name, code in notable_targets(f).items()],
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


TARGETS = [f for f in ALL if f is not fpsim.FP64]


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
    (lambda: fst.codes("fp17"), ValueError, "unknown format 'fp17'; accepted: fp64"),
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


def test_import_fpsim_does_not_import_hypothesis():
    code = "import sys, fpsim, fpsim.array; sys.exit('hypothesis' in sys.modules)"
    root = Path(__file__).resolve().parent.parent
    assert subprocess.run([sys.executable, "-c", code], cwd=root).returncode == 0
