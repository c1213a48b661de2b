"""The pytest plugin, used from a scratch test project (pytester) that
finds it through the installed entry point, as another project would."""

from __future__ import annotations

pytest_plugins = ["pytester"]

SCRATCH = '''
import numpy as np
from fpsim.testing import compare, assert_ulp_close

GOLDEN = np.float16([1.0, 2.0, 3.0, 65504.0])

def test_kernel_report():
    out = GOLDEN.copy()
    out[2] = np.float16(3.00390625)       # 2 ULP above 3 (spacing 2**-9 in [2, 4))
    out[3] = np.inf
    assert compare(out, GOLDEN).ok

def test_kernel_assert():
    assert_ulp_close(np.float16([1.0, 2.5]), GOLDEN[:2], max_ulp=1)

def test_passes_with_a_failing_report_inside():
    assert not compare(np.float16([1.0]), np.float16([2.0])).ok

def test_fails_for_another_reason():
    compare(np.float16([1.0]), np.float16([1.0]))
    assert 1 == 2
'''


def test_failing_compare_shows_the_report_section(pytester):
    pytester.makepyfile(test_scratch=SCRATCH)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=3)
    out = result.stdout.str()
    assert "fpsim 0." in out  # the report header
    result.stdout.fnmatch_lines([
        "*test_kernel_report*",
        "*- fpsim compare reports -*",
        "fpsim compare: MISMATCH: fp16, shape (4,)*",
        "*beyond tolerance*2",
        "*inf mismatches*1",
        "*max ULP distance*2 at index (2,)*",
        "*the 2 offenders*",
        "*2*ulp*2*3.00390625*3.0*",
        "*3*inf*1*inf*65504.0*0x7c00 0 11111 0000000000*",
    ])
    # assert_ulp_close carries the table in its message already: no section
    # repeats it; the test that failed for another reason made only OK
    # reports: no section either
    result.stdout.fnmatch_lines(["*AssertionError: fpsim compare: MISMATCH*", "*ULP histogram*"])
    section_count = out.count("fpsim compare reports")
    assert section_count == 1


def test_plugin_can_be_disabled(pytester):
    pytester.makepyfile(test_scratch=SCRATCH)
    result = pytester.runpytest_subprocess("-p", "no:fpsim", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=3)
    assert "fpsim compare reports" not in result.stdout.str()


def test_max_reports_option(pytester):
    pytester.makepyfile(test_many='''
import numpy as np
from fpsim.testing import compare

def test_many():
    for k in range(5):
        compare(np.float16([k]), np.float16([k + 1]))
    assert False
''')
    result = pytester.runpytest_subprocess("--fpsim-max-reports", "2", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert out.count("fpsim compare: MISMATCH") == 2
    assert "3 more failing reports not shown" in out
