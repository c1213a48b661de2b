"""Issue 41, items 5 and 9: the pytest plugin reports as Hypothesis and
numpy.testing do (the minimal example's report, once, without fpsim's own
frames), the assertions fail with AssertionError, Floats print short in
assertion output, and mixed dtypes are met with "round the reference first".

The plugin's tests run a scratch test project (pytester) that finds the
plugin through the installed entry point, as another project would."""

from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest

import fpsim
from fpsim.formats import Format
from fpsim.testing import assert_bitwise_equal, assert_ulp_close, compare

pytest_plugins = ["pytester"]

# A decimal of 30 or more digits in a row: what an exact expansion of a tiny
# FP32 value (105 significant digits) or an FP64 one looks like.
LONG_DIGITS = re.compile(r"\d{30,}")


def run(pytester, source, *args):
    pytester.makepyfile(test_scratch=source)
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", *args)


# -- Hypothesis: the minimal example's report, once --------------------------------------------

PROPERTY = '''
import numpy as np
from hypothesis import given, settings, strategies as st
from fpsim.testing import compare

@settings(max_examples=300, database=None, derandomize=True, deadline=None)
@given(st.integers(0, 10_000))
def test_kernel_clamps_at_nine(x):
    out = np.float32([x])                    # the kernel forgets to clamp
    golden = np.float32([min(x, 9)])         # fails for every x >= 10
    assert compare(out, golden).ok

class TestInAClass:
    @settings(max_examples=300, database=None, derandomize=True, deadline=None)
    @given(st.integers(0, 10_000))
    def test_method(self, x):
        assert compare(np.float32([x]), np.float32([min(x, 9)])).ok
'''


def section(out, test):
    """The text of ``test``'s "fpsim compare reports" section."""
    start = out.index(f"_ {test} _")
    body = out[start:]
    end = re.search(r"\n_{3,} \S+ _{3,}\n|\n={3,} ", body[1:])
    body = body[:end.start() + 1] if end else body
    head = body.index("- fpsim compare reports -")
    return body[head:]


def test_hypothesis_failure_shows_only_the_minimal_examples_report(pytester):
    result = run(pytester, PROPERTY)
    result.assert_outcomes(failed=2)
    out = result.stdout.str()
    assert "more failing reports not shown" not in out
    for test in ("test_kernel_clamps_at_nine", "TestInAClass.test_method"):
        text = section(out, test)
        assert text.count("fpsim compare: MISMATCH") == 1, text
        # the shrunk example x = 10 against 9, not one of the large early ones
        rows = [line.split() for line in text.splitlines() if re.match(r" +\d+ +ulp ", line)]
        assert len(rows) == 1 and rows[0][4:6] == ["10.0", "9.0"], text
    assert out.count("fpsim compare: MISMATCH") == 2


def test_hypothesis_passing_examples_reports_are_not_shown(pytester):
    # Examples that passed (with a failing report inside, checked by the test)
    # leave nothing behind; the final failing example's report is shown.
    result = run(pytester, '''
import numpy as np
from hypothesis import given, settings, strategies as st
from fpsim.testing import compare

@settings(max_examples=100, database=None, derandomize=True, deadline=None)
@given(st.integers(0, 1000))
def test_prop(x):
    if x < 6:  # these examples pass, one comparison expected to differ
        assert not compare(np.float16([1.0]), np.float16([2.0])).ok
    assert compare(np.float16([x]), np.float16([min(x, 5)])).ok
''')
    result.assert_outcomes(failed=1)
    text = section(result.stdout.str(), "test_prop")
    assert text.count("fpsim compare: MISMATCH") == 1, text
    assert "6.0" in text and "5.0" in text and "2.0" not in text, text


# -- the assertions: the report once, no fpsim frames, AssertionError -----------------------------

ASSERTIONS = '''
import numpy as np
from fpsim.testing import assert_bitwise_equal, assert_ulp_close

def test_ulp():
    assert_ulp_close(np.float16([1.0, 2.5]), np.float16([1.0, 2.0]), max_ulp=1)

def test_bitwise():
    assert_bitwise_equal(np.float16([1.0, -0.0]), np.float16([1.0, 0.0]), err_msg="layer 3")

def test_shape():
    assert_ulp_close(np.float16([1.0, 2.0]), np.float16([1.0]))
'''


def test_a_failing_assertion_prints_its_report_once(pytester):
    result = run(pytester, ASSERTIONS, "--tb=long")
    result.assert_outcomes(failed=3)
    out = result.stdout.str()
    # "bit-exact" is a line of the table, not of the one-line summary
    for test in ("test_ulp", "test_bitwise"):
        start = out.index(f"_ {test} _")
        block = out[start:out.index("\n___", start + 1) if "\n___" in out[start + 1:] else None]
        assert block.count("bit-exact") == 1, block
    assert out.count("bit-exact") == 2
    assert "fpsim compare reports" not in out
    assert "layer 3" in out


def test_tracebacks_hide_fpsim_frames(pytester):
    result = run(pytester, ASSERTIONS, "--tb=long")
    result.assert_outcomes(failed=3)
    out = result.stdout.str()
    assert "fpsim/testing/" not in out and "_errstate.py" not in out, out
    # the test's own line is where the traceback ends
    result.stdout.fnmatch_lines([">*assert_ulp_close(np.float16(?1.0, 2.5?)*",
                                 "E*AssertionError: fpsim compare: MISMATCH*"])
    result.stdout.fnmatch_lines(["E*AssertionError: shape mismatch: actual (2,), expected (1,)"])


def test_shape_mismatch_is_an_assertion_failure():
    with pytest.raises(AssertionError, match=r"shape mismatch: actual \(2,\), expected \(1,\)"):
        assert_ulp_close(np.float16([1.0, 2.0]), np.float16([1.0]))
    with pytest.raises(AssertionError, match=r"(?s)shape mismatch: .*\nlayer 3$"):
        assert_bitwise_equal(np.float16([[1.0]]), np.float16([1.0]), err_msg="layer 3")
    # compare() itself reports on inputs it can compare: their shapes must agree
    with pytest.raises(ValueError, match="shape mismatch"):
        compare(np.float16([1.0, 2.0]), np.float16([1.0]))


def test_bad_arguments_to_the_assertions_stay_errors():
    with pytest.raises(ValueError, match="fp17"):
        assert_ulp_close(np.float16([1.0]), np.float16([1.0]), fmt="fp17")
    with pytest.raises(TypeError, match="cannot tell the format"):
        assert_bitwise_equal(np.uint16([1]), np.uint16([1]))
    with pytest.raises(TypeError, match="err_msg"):
        assert_bitwise_equal(np.float16([1]), np.float16([1]), err_msg=3)


# -- Floats print short in assertion output ---------------------------------------------------

def test_float_comparison_shows_short_decimals(pytester):
    result = run(pytester, '''
import fpsim
from fpsim.formats import Format

def test_tiny():
    assert fpsim.FP32.from_bits(1) == fpsim.FP32.from_bits(2)

def test_fp64():
    x = fpsim.FP64.round(0.1)
    assert x == fpsim.FP64.round(0.2)

def test_beyond_float64():
    wide = Format("e15m48", 15, 48, 16383)
    assert wide.from_bits(1) != wide.from_bits(1)

def test_against_a_number():
    assert fpsim.FP32.from_bits(3) > 1
''', "-vv")
    result.assert_outcomes(failed=4)
    out = result.stdout.str()
    assert not LONG_DIGITS.search(out), LONG_DIGITS.search(out).group()
    result.stdout.fnmatch_lines([
        "E*Float(fp32, 0x00000001, 1.401298464324817e-45) == "
        "Float(fp32, 0x00000002, 2.802596928649634e-45)"])
    result.stdout.fnmatch_lines(["E*Float(fp64, 0x3fb999999999999a, 0.1) == "
                                 "Float(fp64, 0x3fc999999999999a, 0.2)"])
    # a value no float64 holds: 17 digits, marked as an approximation
    result.stdout.fnmatch_lines(["E*Float(e15m48, 0x0000000000000001, ~*e-*) != "
                                 "Float(e15m48, 0x0000000000000001, ~*e-*)"])
    result.stdout.fnmatch_lines(["E*Float(fp32, 0x00000003, 4.203895392974451e-45) > 1"])


def test_report_of_a_wide_format_without_a_dtype_prints_short_values():
    wide = Format("e15m48", 15, 48, 16383)
    one = 16383 << 48
    r = compare(np.uint64([1, one]), np.uint64([2, one + 1]), wide)
    str(r)  # (the exact values of the first pair have 4946 digits and more)
    assert all(len(v) < 30 for o in r.offenders for v in (o.actual_value, o.expected_value))
    assert r.offenders[1].actual_value == "1.0"
    assert r.offenders[1].expected_value == "1.0000000000000036"  # 1 + 2**-48, a float64
    assert r.offenders[0].actual_value.startswith("~")             # 2**-16429: below float64


# -- item 9: mixed dtypes, "round the reference first" ----------------------------------------

BF16 = ml_dtypes.bfloat16


def test_bf16_output_against_fp32_reference_says_round_the_reference():
    out = np.array([1.0, 1.0078125], BF16)
    ref = np.float32([1.0, 1.0078])
    with pytest.raises(TypeError, match=re.escape('fpsim.array.round(expected, "bf16")')):
        compare(out, ref)
    with pytest.raises(ValueError, match=re.escape('fpsim.array.round(expected, "bf16")')) \
            as caught:
        compare(out, ref, fmt="bf16")
    assert "naming the format" not in str(caught.value)
    # the advice works as written
    assert compare(out, fpsim.array.round(ref, "bf16")).ok
    # the assertions say the same
    with pytest.raises(TypeError, match=re.escape('fpsim.array.round(expected, "bf16")')):
        assert_ulp_close(out, ref)


def test_an_output_outside_the_format_is_still_named_as_such():
    # the output, not the reference, holds values outside BF16: name the format
    with pytest.raises(ValueError, match="actual .* not bf16 values.*pass fmt= naming") as caught:
        compare(np.float32([1.0001]), np.array([1.0], BF16), "bf16")
    assert "round" not in str(caught.value)


def test_hypothesis_falsifying_example_shows_short_decimals(pytester):
    # Hypothesis prints a failing example's arguments with its pretty-printer,
    # which asks Float for _repr_pretty_: the short form, not 105 digits
    result = run(pytester, '''
import fpsim
from hypothesis import given, strategies as st

@given(st.integers(1, 5).map(fpsim.FP32.from_bits))
def test_tiny(x):
    assert x.is_zero
''')
    result.assert_outcomes(failed=1)
    example = result.stdout.str().partition("Failing test case")[2]
    assert example and not LONG_DIGITS.search(example), example
    result.stdout.fnmatch_lines(["*x=Float(fp32, 0x00000001, 1.401298464324817e-45)*"])
