"""IEEE P3109's accuracy measure κ in the differential testing harness.

κ of a result ``a`` against the defined result ``e`` (P3109 draft D1, §4.4):
NaN where exactly one is a NaN, ∞ where they do not match on infinities,
else the number of the format's finite values (as a set of reals: one zero)
in ``(e, a]`` or ``[a, e)``.

The oracle here counts decoded values: every code of a format is decoded by
ml_dtypes or by gfloat (P3109 formats), never by fpsim; the distinct finite
values are sorted, and κ of a pair is a count of that sorted list by
:func:`numpy.searchsorted`.  Every pair of codes of the 8-bit formats (and of
the 4- and 6-bit ones) is checked, and a sample of FP16 pairs.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest
from gfloat import decode_float
from gfloat.formats import format_info_p3109
from gfloat.types import Domain, Signedness

import fpsim
from fpsim.cli import main
from fpsim.testing import _compare, compare, kappa, ulp_distance
from fpsim.testing.tally import Partial, Tolerance

pytest_plugins = ["pytester"]


# -- the oracle -----------------------------------------------------------------------------------

def ml_dtypes_values(dtype, width: int) -> np.ndarray:
    """Every code's value, decoded by ml_dtypes (codes are the low bits of a byte)."""
    return np.arange(1 << width, dtype=np.uint8).view(dtype).astype(np.float64)


def gfloat_values(k: int, p: int, signed: bool, extended: bool) -> np.ndarray:
    fi = format_info_p3109(k, p, Signedness.Signed if signed else Signedness.Unsigned,
                           Domain.Extended if extended else Domain.Finite)
    return np.array([decode_float(fi, c).fval for c in range(1 << k)], np.float64)


def oracle(actual: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """κ of each pair of decoded values, by counting the sorted finite values."""
    finite = np.concatenate([actual[np.isfinite(actual)], expected[np.isfinite(expected)]])
    # V: the format's finite values, one zero (np.unique makes -0.0 and 0.0 one)
    return _count(actual, expected, np.unique(finite))


def _count(actual: np.ndarray, expected: np.ndarray, values: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        up = actual > expected    # values in (e, a]
        down = actual < expected  # values in [a, e)
    count = np.zeros(actual.shape, np.float64)
    count[up] = (np.searchsorted(values, actual[up], "right")
                 - np.searchsorted(values, expected[up], "right"))
    count[down] = (np.searchsorted(values, expected[down], "left")
                   - np.searchsorted(values, actual[down], "left"))
    nan_a, nan_e = np.isnan(actual), np.isnan(expected)
    inf_a, inf_e = np.isinf(actual), np.isinf(expected)
    same_inf = inf_a & inf_e & (np.sign(actual) == np.sign(expected))
    count[(inf_a | inf_e) & ~same_inf & ~nan_a & ~nan_e] = np.inf
    count[nan_a & nan_e] = 0
    count[nan_a != nan_e] = np.nan
    return count


def all_values(name: str) -> np.ndarray:
    ml = {"e4m3": (ml_dtypes.float8_e4m3fn, 8), "e5m2": (ml_dtypes.float8_e5m2, 8),
          "e4m3fnuz": (ml_dtypes.float8_e4m3fnuz, 8), "e5m2fnuz": (ml_dtypes.float8_e5m2fnuz, 8),
          "e8m0": (ml_dtypes.float8_e8m0fnu, 8), "e3m4": (ml_dtypes.float8_e3m4, 8),
          "e2m1": (ml_dtypes.float4_e2m1fn, 4), "e3m2": (ml_dtypes.float6_e3m2fn, 6),
          "e2m3": (ml_dtypes.float6_e2m3fn, 6)}
    if name in ml:
        return ml_dtypes_values(*ml[name])
    k, p, s, d = re.fullmatch(r"binary(\d+)p(\d+)([su])([ef])", name).groups()
    return gfloat_values(int(k), int(p), s == "s", d == "e")


FORMATS_8 = ["e4m3", "e5m2", "e4m3fnuz", "e5m2fnuz", "e8m0", "e3m4", "e2m1", "e3m2", "e2m3",
             "binary8p3se", "binary8p4se", "binary8p1se", "binary8p3ue", "binary8p4sf",
             "binary8p8uf"]


# -- κ per element, against the oracle ------------------------------------------------------------

@pytest.mark.parametrize("name", FORMATS_8)
def test_kappa_counts_the_values_between_for_every_pair_of_codes(name):
    fmt = fpsim.format(name)
    values = all_values(name)
    n = values.size
    assert n == 1 << fmt.width
    a_codes = np.repeat(np.arange(n, dtype=np.uint8), n)
    e_codes = np.tile(np.arange(n, dtype=np.uint8), n)
    expected = oracle(values[a_codes], values[e_codes])
    got = kappa(a_codes, e_codes, fmt)
    assert got.dtype == np.float64 and got.shape == (n * n,)
    np.testing.assert_array_equal(got, expected)  # NaN where NaN, inf where inf


def test_kappa_of_sampled_fp16_pairs_counts_the_values_between():
    every = np.arange(1 << 16, dtype=np.uint16).view(np.float16).astype(np.float64)
    rng = np.random.default_rng(20)
    a = rng.integers(0, 1 << 16, 200_000, dtype=np.uint16)
    # half the pairs near each other (a few codes apart, across zero too)
    e = np.where(rng.random(a.size) < 0.5, a + rng.integers(-6, 7, a.size).astype(np.uint16),
                 rng.integers(0, 1 << 16, a.size, dtype=np.uint16))
    values = np.unique(every[np.isfinite(every)])
    expected = _count(every[a], every[e], values)
    np.testing.assert_array_equal(kappa(a.view(np.float16), e.view(np.float16)), expected)


def test_kappa_differs_from_the_ulp_distance_only_on_nonfinite_pairs():
    """Equal on finite pairs (±0 one value, across zero, E8M0 without a zero);
    ∞ where the ULP distance is finite (overflow, opposite infinities); NaN or
    0 where it is undefined."""
    cases = [  # (format, actual code, expected code, ULP distance, κ)
        ("fp16", 0x3C01, 0x3C00, 1, 1),
        ("fp16", 0x8000, 0x0000, 0, 0),          # -0, +0: one value
        ("fp16", 0x8001, 0x0001, 2, 2),          # -tiny, +tiny: 0 between
        ("e4m3fnuz", 0x81, 0x01, 2, 2),          # no -0 code (0x80 is the NaN)
        ("e8m0", 0x00, 0xFE, 254, 254),          # 2**-127 .. 2**127, no zero
        ("binary8p3ue", 0x00, 0x02, 2, 2),       # unsigned
        ("fp16", 0x7C00, 0x7BFF, 1, math.inf),   # inf against the largest finite
        ("fp16", 0xFC00, 0x7C00, 2 * 0x7C00, math.inf),
        ("binary8p3se", 0x7F, 0x7E, 1, math.inf),
        ("fp16", 0x7C00, 0x7C00, 0, 0),          # the same infinity matches
        ("fp16", 0x7E00, 0x3C00, None, math.nan),
        ("fp16", 0x7E00, 0xFE01, None, 0),       # two NaNs match, any codes
    ]
    for name, a, e, ulp, k in cases:
        fmt = fpsim.format(name)
        dt = np.uint8 if fmt.width <= 8 else np.uint16
        assert ulp_distance(a, e, fmt) == ulp, (name, a, e)
        got = kappa(np.array([a], dt), np.array([e], dt), fmt)[0]
        assert (math.isnan(got) and math.isnan(k)) or got == k, (name, hex(a), hex(e), got)


def test_kappa_keeps_the_shape_and_reads_values_or_codes():
    a = np.float16([[1.0, 2.0], [np.inf, -0.0]])
    e = np.float16([[1.0, 2.00390625], [np.inf, 0.0]])
    np.testing.assert_array_equal(kappa(a, e), [[0.0, 2.0], [0.0, 0.0]])
    np.testing.assert_array_equal(kappa(a.view(np.uint16), e.view(np.uint16), "fp16"),
                                  [[0.0, 2.0], [0.0, 0.0]])
    assert kappa(np.float16(1.0), np.float16(1.0009765625)).shape == ()
    with pytest.raises(ValueError, match="shape mismatch"):
        kappa(a, e[0])
    with pytest.raises(TypeError, match="cannot tell the format"):
        kappa(np.uint8([1]), np.uint8([2]))


def test_fp64_counts_are_exact_in_the_report():
    biggest = np.finfo(np.float64).max
    r = compare(np.float64([-biggest]), np.float64([biggest]))
    # 0x7FEFFFFFFFFFFFFF positive finite values, as many negative, and one zero;
    # (-max, max] holds all but -max
    assert r.max_kappa == 2 * 0x7FEFFFFFFFFFFFFF and isinstance(r.max_kappa, int)
    assert kappa(np.float64([-biggest]), np.float64([biggest]))[0] == float(r.max_kappa)


# -- the maximum κ in the report ------------------------------------------------------------------

def test_report_max_kappa_is_nan_over_inf_over_counts_at_the_first_index():
    e = np.float16([1.0, 2.0, 65504.0, 3.0, 0.5, 65504.0, 0.25])
    a = np.float16([1.0, 2.001953125, np.inf, 3.0078125, np.nan, np.inf, np.nan])
    assert compare(a, e).max_kappa != compare(a, e).max_kappa  # NaN
    assert compare(a, e).max_kappa_index == (4,)
    r = compare(a[:4], e[:4])
    assert (r.max_kappa, r.max_kappa_index) == (math.inf, (2,))
    r = compare(a[:2], e[:2])
    assert (r.max_kappa, r.max_kappa_index) == (1, (1,))
    # the ULP distance says 4 at index 3 and 1 at the overflow
    r = compare(a[:4], e[:4])
    assert (r.max_ulp, r.max_ulp_index) == (4, (3,))


def test_report_max_kappa_is_zero_without_an_index_when_every_pair_matches():
    nan2 = np.uint16([0x7E00, 0x7E01, 0x7C00, 0x8000])
    gold = np.uint16([0x7E01, 0x7E00, 0x7C00, 0x0000])
    r = compare(nan2, gold, "fp16", nan="any", signed_zero=False)
    assert r.ok and (r.max_kappa, r.max_kappa_index) == (0, None)
    r = compare(np.float16([]), np.float16([]))
    assert r.ok and (r.max_kappa, r.max_kappa_index) == (0, None)


def test_report_max_kappa_index_is_multidimensional_and_first_in_c_order():
    e = np.zeros((3, 4), np.float16)
    a = e.copy()
    a[2, 1] = np.float16(2 ** -24 * 5)   # 5 values above zero
    a[1, 3] = np.float16(-(2 ** -24) * 5)  # 5 below: the same κ, earlier
    r = compare(a, e)
    assert (r.max_kappa, r.max_kappa_index) == (5, (1, 3))


def test_each_offender_carries_its_kappa():
    e = np.float16([2.0, 65504.0, 0.5, -0.0, np.nan])
    a = np.float16([2.00390625, np.inf, np.nan, 0.0, np.nan])
    r = compare(a, e, nan="exact")
    got = [(o.index, o.kind, o.ulp, o.kappa) for o in r.offenders]
    assert got[0] == ((0,), "ulp", 2, 2)
    assert got[1] == ((1,), "inf", 1, math.inf)
    assert got[2][:3] == ((2,), "nan", None) and math.isnan(got[2][3])
    assert got[3] == ((3,), "signed_zero", 0, 0)
    assert len(got) == 4  # the two NaNs are one code: exact


# -- max_kappa as the tolerance --------------------------------------------------------------------

E = np.float16([1.0, 2.0, 3.0, 4.0])
A = np.float16([1.0, 2.001953125, 3.005859375, 4.0])  # 0, 1, 3 values off


def test_max_kappa_alone_is_the_only_distance_limit():
    r = compare(A, E, max_kappa=3)
    assert r.ok and r.max_ulp_allowed is None and r.max_kappa_allowed == 3
    assert (r.exact, r.within_tolerance, r.beyond_tolerance) == (2, 2, 0)
    r = compare(A, E, max_kappa=2)
    assert not r.ok
    assert (r.within_tolerance, r.beyond_tolerance, r.kappa_mismatch, r.ulp_mismatch) == \
        (1, 1, 1, 0)
    assert [(o.index, o.kind, o.ulp, o.kappa) for o in r.offenders] == [((2,), "kappa", 3, 3)]


def test_with_both_limits_a_pair_must_be_within_both():
    r = compare(A, E, max_ulp=1, max_kappa=3)   # the ULP limit is the tighter one
    assert (r.ulp_mismatch, r.kappa_mismatch, r.beyond_tolerance) == (1, 0, 1)
    assert r.offenders[0].kind == "ulp"
    r = compare(A, E, max_ulp=5, max_kappa=0)   # the κ limit is the tighter one
    assert (r.ulp_mismatch, r.kappa_mismatch, r.beyond_tolerance) == (0, 2, 2)
    assert [o.kind for o in r.offenders] == ["kappa", "kappa"]
    assert compare(A, E, max_ulp=3, max_kappa=3).ok


def test_without_max_kappa_the_ulp_default_stays_zero():
    r = compare(A, E)
    assert (r.max_ulp_allowed, r.max_kappa_allowed, r.ulp_mismatch) == (0, None, 2)
    assert r.max_kappa == 3  # measured all the same


def test_a_max_kappa_beyond_every_count_accepts_every_finite_pair():
    biggest = np.finfo(np.float64).max
    assert compare(np.float64([-biggest, 1.0]), np.float64([biggest, 1.0]), max_kappa=2 ** 70).ok
    assert not compare(np.float64([-biggest]), np.float64([biggest]),
                       max_kappa=2 * 0x7FEFFFFFFFFFFFFF - 1).ok


def test_max_kappa_never_accepts_a_nan_or_infinity_mismatch():
    e = np.float16([65504.0, 1.0, -np.inf])
    a = np.float16([np.inf, np.nan, np.inf])
    r = compare(a, e, max_kappa=10 ** 6)
    assert (r.inf_mismatch, r.nan_mismatch, r.beyond_tolerance) == (2, 1, 3)


def test_nan_codes_and_zero_sign_stay_governed_by_their_options():
    a = np.uint16([0x7E01, 0x8000])
    e = np.uint16([0x7E00, 0x0000])
    r = compare(a, e, "fp16", max_kappa=0)
    assert (r.signed_zero_mismatch, r.nan_mismatch, r.max_kappa) == (1, 0, 0)
    r = compare(a, e, "fp16", max_kappa=0, nan="exact", signed_zero=False)
    assert (r.signed_zero_mismatch, r.nan_mismatch, r.max_kappa) == (0, 1, 0)


@pytest.mark.parametrize("bad, exc", [("1", TypeError), (1.5, TypeError), (True, TypeError),
                                      ([1], TypeError), (-1, ValueError)])
def test_bad_max_kappa_is_refused_naming_it(bad, exc):
    with pytest.raises(exc, match=r"max_kappa must be a non-negative int or None, got"):
        compare(A, E, max_kappa=bad)


def test_counts_add_up_with_kappa_mismatches():
    rng = np.random.default_rng(5)
    e = rng.integers(0, 1 << 16, 5000, dtype=np.uint16)
    a = e + rng.integers(-4, 5, e.size).astype(np.uint16)
    r = compare(a, e, "fp16", max_kappa=2, nan="exact")
    assert r.exact + r.within_tolerance + r.beyond_tolerance == r.total == e.size
    kinds = (r.nan_mismatch + r.inf_mismatch + r.signed_zero_mismatch + r.ulp_mismatch
             + r.kappa_mismatch)
    assert kinds == r.beyond_tolerance and r.kappa_mismatch > 0
    k = kappa(a, e, "fp16")
    finite = np.isfinite(a.view(np.float16)) & np.isfinite(e.view(np.float16))
    assert r.kappa_mismatch == int(np.count_nonzero(finite & (k > 2)))


def test_chunked_comparison_reports_what_one_pass_does(monkeypatch):
    rng = np.random.default_rng(11)
    e = rng.integers(0, 0x7C00, 10_000, dtype=np.uint16)
    a = e.copy()
    a[[17, 4000, 9001]] += np.uint16(3)
    a[[5000, 7000]] += np.uint16(7)        # the largest κ twice: the first is reported
    a[8000] = 0x7E00
    a[2000] = 0x7C00
    whole = compare(a, e, "fp16", max_kappa=2, offenders=4).to_dict()
    monkeypatch.setattr(_compare, "CHUNK", 999)
    chunked = compare(a, e, "fp16", max_kappa=2, offenders=4).to_dict()
    assert chunked == whole
    assert whole["max_kappa"] == "nan" and whole["max_kappa_index"] == [8000]
    assert [o["index"][0] for o in whole["offenders"]] == [17, 2000, 4000, 5000]
    no_nan = compare(np.delete(a, [2000, 8000]), np.delete(e, [2000, 8000]), "fp16")
    assert (no_nan.max_kappa, no_nan.max_kappa_index) == (7, (4999,))  # 5000, one removed before


def test_dask_arrays_report_what_numpy_arrays_do():
    da = pytest.importorskip("dask.array")
    e = np.float16(np.linspace(-4, 4, 3001))
    a = e.copy()
    a.view(np.uint16)[[3, 1500, 2999]] += np.uint16(2)
    a[100] = np.inf
    ref = compare(a, e, max_kappa=1).to_dict()
    got = compare(da.from_array(a, chunks=500), da.from_array(e, chunks=700), max_kappa=1)
    assert got.to_dict() == ref


# -- the report: text and JSON ---------------------------------------------------------------------

def test_text_shows_max_kappa_next_to_max_ulp_and_kappa_offenders():
    e = np.float16([1.0, 2.0, 3.0, 65504.0])
    a = np.float16([1.0, 2.001953125, 3.005859375, np.inf])
    text = str(compare(a, e, max_kappa=2))
    lines = text.splitlines()
    assert lines[0] == ("fpsim compare: MISMATCH: fp16, shape (4,), max_kappa=2, nan=any, "
                        "signed_zero=True")
    i = next(k for k, line in enumerate(lines) if line.startswith("  max ULP distance"))
    assert re.fullmatch(r"  max ULP distance +3 at index \(2,\)", lines[i])
    assert re.fullmatch(r"  max kappa \(P3109\) +inf at index \(3,\)", lines[i + 1])
    assert re.search(r"\n    kappa > 2 +1\n", text)
    assert re.search(r"index +kind +ulp +kappa +actual", text)
    assert re.search(r"\n +2 +kappa +3 +3 +3\.005859375 +3\.0 ", text)
    assert re.search(r"\n +3 +inf +1 +inf +inf +65504\.0 ", text)
    both = str(compare(a, e, max_ulp=1, max_kappa=2)).splitlines()[0]
    assert "max_ulp=1, max_kappa=2, nan=any" in both
    assert "max kappa inf" in repr(compare(a, e))


def test_json_is_strict_with_kappa_as_count_inf_or_nan():
    e = np.float16([1.0, 2.0, 65504.0, 0.5])
    a = np.float16([1.0, 2.00390625, np.inf, np.nan])
    d = json.loads(json.dumps(compare(a, e, max_kappa=1).to_dict(), allow_nan=False))
    assert (d["max_kappa_allowed"], d["max_ulp_allowed"]) == (1, None)
    assert (d["max_kappa"], d["max_kappa_index"], d["kappa_mismatch"]) == ("nan", [3], 1)
    assert [o["kappa"] for o in d["offenders"]] == [2, "inf", "nan"]
    d = compare(a[:3], e[:3]).to_dict()
    assert (d["max_kappa"], d["max_kappa_index"], d["max_kappa_allowed"]) == ("inf", [2], None)
    d = compare(a[:2], e[:2]).to_dict()
    assert (d["max_kappa"], d["max_kappa_index"]) == (2, [1])
    # numpy integers as limits are written as plain ints
    d = json.loads(json.dumps(compare(a, e, max_ulp=np.int64(1), max_kappa=np.int32(0))
                              .to_dict()))
    assert (d["max_ulp_allowed"], d["max_kappa_allowed"]) == (1, 0)


def test_reports_that_do_not_measure_kappa_say_nothing_of_it():
    """A sweep's report (made from the tally alone) has no κ: no line, no
    column, null in JSON."""
    tally = Partial()
    tally.counts.update(total=1, beyond_tolerance=1, ulp_mismatch=1)
    tally.offenders = [(0, 0, "ulp", 1, 0x3C01, 0x3C00)]
    r = tally.report(fpsim.FP16, (1,), Tolerance())
    text = str(r)
    assert r.max_kappa is None and "kappa" not in text
    assert re.search(r"index +kind +ulp +actual", text)
    assert r.to_dict()["max_kappa"] is None and r.to_dict()["offenders"][0]["kappa"] is None


# -- the pytest plugin -----------------------------------------------------------------------------

SCRATCH = '''
import numpy as np
from fpsim.testing import compare

GOLDEN = np.float16([1.0, 2.0, 3.0, 65504.0])

def test_within_kappa():
    out = np.float16([1.0, 2.001953125, 3.0, 65504.0])
    assert compare(out, GOLDEN, max_kappa=1).ok

def test_beyond_kappa():
    out = np.float16([1.0, 2.0, 3.005859375, np.inf])
    assert compare(out, GOLDEN, max_kappa=2).ok
'''


def test_plugin_section_shows_max_kappa_and_the_kappa_offenders(pytester):
    pytester.makepyfile(test_scratch=SCRATCH)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "*test_beyond_kappa*",
        "*- fpsim compare reports -*",
        "fpsim compare: MISMATCH: fp16, shape (4,), max_kappa=2, nan=any, signed_zero=True",
        "*kappa > 2*1",
        "*max ULP distance*3 at index (2,)",
        "*max kappa (P3109)*inf at index (3,)",
        "*index*kind*ulp*kappa*actual*expected*",
        "*2*kappa*3*3*3.005859375*3.0*",
        "*3*inf*1*inf*inf*65504.0*",
    ])
    assert result.stdout.str().count("fpsim compare reports") == 1


# -- python -m fpsim diff --max-kappa --------------------------------------------------------------

def run(capsys, *argv):
    status = main([str(x) for x in argv])
    out, err = capsys.readouterr()
    return status, out, err


@pytest.fixture
def dumps(tmp_path):
    expected = np.float16(np.linspace(-8, 8, 401))
    actual = expected.copy()
    actual.view(np.uint16)[10] += np.uint16(1)
    actual.view(np.uint16)[300] += np.uint16(3)
    paths = tmp_path / "actual.bin", tmp_path / "expected.bin"
    actual.tofile(paths[0])
    expected.tofile(paths[1])
    return paths


def test_diff_max_kappa_exit_status(capsys, dumps):
    a, e = dumps
    status, out, err = run(capsys, "diff", a, e, "--fmt", "fp16", "--max-kappa", "3")
    assert (status, err) == (0, "") and "max_kappa=3" in out and "OK" in out
    assert re.search(r"max kappa \(P3109\) +3 at index \(300,\)", out)
    status, out, _ = run(capsys, "diff", a, e, "--fmt", "fp16", "--max-kappa", "2")
    assert status == 1 and re.search(r"kappa > 2 +1\n", out)
    # both limits: each must hold
    status, _, _ = run(capsys, "diff", a, e, "--fmt", "fp16", "--max-kappa", "3",
                       "--max-ulp", "1")
    assert status == 1
    # without --max-kappa the ULP default (0) applies, and kappa is reported
    status, out, _ = run(capsys, "diff", a, e, "--fmt", "fp16")
    assert status == 1 and "max_ulp=0," in out and "max kappa (P3109)" in out


def test_diff_json_has_max_kappa(capsys, dumps):
    a, e = dumps
    status, out, _ = run(capsys, "diff", a, e, "--fmt", "fp16", "--max-kappa", "1", "--json")
    d = json.loads(out)
    assert status == 1 and (d["max_kappa"], d["max_kappa_index"]) == (3, [300])
    assert (d["max_kappa_allowed"], d["max_ulp_allowed"], d["kappa_mismatch"]) == (1, None, 1)
    assert [(o["index"], o["kind"], o["kappa"]) for o in d["offenders"]] == [([300], "kappa", 3)]


def test_diff_max_kappa_streams_chunks(capsys, dumps, monkeypatch):
    a, e = dumps
    whole = run(capsys, "diff", a, e, "--fmt", "fp16", "--max-kappa", "0", "--json")
    monkeypatch.setattr(_compare, "CHUNK", 7)
    assert run(capsys, "diff", a, e, "--fmt", "fp16", "--max-kappa", "0", "--json") == whole


@pytest.mark.parametrize("value, message", [
    ("-1", "--max-kappa -1: accepted: an integer >= 0"),
    ("x", "argument --max-kappa: invalid int value: 'x'"),
    ("1.5", "argument --max-kappa: invalid int value: '1.5'"),
    ("inf", "argument --max-kappa: invalid int value: 'inf'"),
    ("", "argument --max-kappa: invalid int value: ''"),
])
def test_diff_bad_max_kappa_one_line_exit_2(capsys, dumps, value, message):
    a, e = dumps
    status, out, err = run(capsys, "diff", a, e, "--fmt", "fp16", "--max-kappa", value)
    assert status == 2 and out == ""
    assert message in err and err.count("\n") == 1 and err.startswith("fpsim: error: ")


def test_diff_bad_max_kappa_shows_no_traceback(dumps):
    a, e = dumps
    proc = subprocess.run([sys.executable, "-m", "fpsim", "diff", str(a), str(e), "--fmt",
                           "fp16", "--max-kappa", "-3"], capture_output=True, text=True)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip() == "fpsim: error: --max-kappa -3: accepted: an integer >= 0"


def test_diff_help_explains_max_kappa(capsys):
    status, out, _ = run(capsys, "diff", "--help")
    assert status == 0
    text = " ".join(out.split())
    assert "--max-kappa N" in text and "P3109" in text
    assert "With --max-kappa alone no ULP limit applies" in text
