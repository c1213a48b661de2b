"""fpsim.testing on FP64 outputs: compare, the assertions, ulp_distance,
kappa and the report, with ULP distances that exceed 2**53 (and 2**63):
exact integers, never rounded through float64 or wrapped in int64.

The oracle of a distance is the count of binary64 values between two
numbers, written here from IEEE 754's encoding: a non-negative double's bit
pattern, read as an integer, is its rank among the non-negative doubles
(+0 first, +inf last), and a negative double's rank is minus its magnitude's
(so -0 and +0 share rank 0).  The distance is the difference of ranks, in
Python integers.  For small distances it is checked against counting
``math.nextafter`` steps.  The expected values never come from fpsim."""

from __future__ import annotations

import json
import math
import struct

import numpy as np
import pytest

import fpsim
from fpsim.testing import (
    assert_bitwise_equal,
    assert_ulp_close,
    compare,
    kappa,
    ulp_distance,
)

MAX = float.fromhex("0x1.fffffffffffffp+1023")
TINY = 2.0 ** -1074
INF = float("inf")
NAN = float("nan")


def bits(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def from_bits(b: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", b))[0]


def rank(x: float) -> int:
    b = bits(x)
    return b if b >> 63 == 0 else -(b & ((1 << 63) - 1))


def oracle_distance(a: float, b: float) -> int:
    return abs(rank(a) - rank(b))


def steps(a: float, b: float) -> int:
    """The distance by walking from a to b with nextafter (small distances)."""
    lo, hi = sorted((a, b))
    n = 0
    while lo != hi:
        lo = math.nextafter(lo, INF)
        n += 1
    return n


ONE_UP = math.nextafter(1.0, 2.0)
# (a, b, distance) with the distances derived by hand from the encodings
PAIRS = [
    (1.0, ONE_UP, 1),
    (1.0, 2.0, 2 ** 52),                            # one binade
    (TINY, -TINY, 2),                               # across zero
    (0.0, -0.0, 0),
    (TINY, 1.0, 0x3FF0000000000000 - 1),
    (1.0, -1.0, 2 * 0x3FF0000000000000),
    (1.0, -ONE_UP, 0x7FE0000000000001),             # odd, above 2**62: no float64 holds it
    (MAX, -MAX, 2 * 0x7FEFFFFFFFFFFFFF),            # 0xffdffffffffffffe, above 2**63
    (2.0 ** -1022, -(2.0 ** -1022), 2 * 2 ** 52),
]


def test_the_oracle_agrees_with_the_hand_derived_distances_and_nextafter():
    for a, b, d in PAIRS:
        assert oracle_distance(a, b) == d, (a, b)
    for a, b in [(1.0, ONE_UP), (TINY, -TINY), (0.0, -0.0), (-3 * TINY, 2 * TINY),
                 (2.0 ** -1022 - 5 * TINY, 2.0 ** -1022 + 2 ** -1074 * 7)]:
        assert oracle_distance(a, b) == steps(a, b)


def test_distances_are_exact_beyond_2_53():
    for a, b, d in PAIRS:
        assert ulp_distance(bits(a), bits(b), "fp64") == d, (a, b)
        assert ulp_distance(bits(b), bits(a), fpsim.FP64) == d
        r = compare(np.array([a]), np.array([b]))
        assert r.fmt == fpsim.FP64 and r.max_ulp == d and type(r.max_ulp) is int
        if d:
            (o,) = r.offenders
            assert (o.ulp, o.kappa, o.kind) == (d, d, "signed_zero" if a == 0 else "ulp")
            assert r.max_kappa == d
    # the largest finite value and infinity are 1 apart; the infinities
    # 2 × (magnitude of inf) apart
    assert ulp_distance(bits(MAX), bits(INF), "fp64") == 1
    assert ulp_distance(bits(INF), bits(-INF), "fp64") == 2 * 0x7FF0000000000000
    assert ulp_distance(bits(NAN), bits(1.0), "fp64") is None


def test_the_ulp_limit_is_exact_at_every_size():
    # max_ulp = d passes, d - 1 fails, where float64(d) == float64(d - 1)
    for a, b, d in PAIRS[1:]:
        if d == 0:
            continue
        x, y = np.array([a, 1.0]), np.array([b, 1.0])
        assert compare(x, y, max_ulp=d).ok
        r = compare(x, y, max_ulp=d - 1)
        assert (r.ok, r.ulp_mismatch, r.within_tolerance) == (False, 1, 0)
        assert_ulp_close(x, y, max_ulp=d)
        with pytest.raises(AssertionError, match=f"max ULP distance +{d} at index"):
            assert_ulp_close(x, y, max_ulp=d - 1)
    # limits beyond every distance (2**64 and more) accept every finite pair
    assert compare(np.array([MAX]), np.array([-MAX]), max_ulp=2 ** 64).ok
    assert compare(np.array([MAX]), np.array([-MAX]), max_ulp=2 ** 200).ok
    assert compare(np.array([MAX]), np.array([-MAX]), max_kappa=2 ** 64 - 1).ok
    assert not compare(np.array([MAX]), np.array([-MAX]), max_kappa=2 * 0x7FEFFFFFFFFFFFFF - 1).ok


def _random_doubles(rng, n):
    """Codes drawn uniformly (every binade alike), both signs, with zeros,
    subnormals, infinities and NaNs among them."""
    codes = rng.integers(0, 2 ** 64, n, dtype=np.uint64, endpoint=False)
    special = rng.random(n)
    codes[special < 0.02] = bits(INF)
    codes[(special >= 0.02) & (special < 0.04)] = bits(-0.0)
    codes[(special >= 0.04) & (special < 0.06)] = rng.integers(1, 1000)  # subnormals
    return codes.view(np.float64)


def test_random_pairs_against_the_oracle():
    rng = np.random.default_rng(1)
    n = 20000
    a = _random_doubles(rng, n)
    b = a.copy()
    near = rng.random(n) < 0.5          # half of them a few ULPs apart
    b[near] = (a[near].view(np.uint64) ^ rng.integers(0, 8, int(near.sum()),
                                                      dtype=np.uint64)).view(np.float64)
    b[~near] = _random_doubles(rng, int((~near).sum()))
    limit = 2 ** 60 + 12345
    r = compare(a, b, max_ulp=limit)
    pairs = list(zip(a.tolist(), b.tolist()))
    nan = [math.isnan(x) or math.isnan(y) for x, y in pairs]
    dist = [None if m else oracle_distance(x, y) for (x, y), m in zip(pairs, nan)]
    numeric = [d for d in dist if d is not None]
    top = max(numeric)
    assert r.max_ulp == top
    assert r.max_ulp_index == (dist.index(top),)
    assert r.total == n and r.exact == sum(bits(x) == bits(y) for x, y in pairs)
    # the histogram: bins by bit length of the distance, NaN pairs left out
    want_bins = [0] * 65
    for d in numeric:
        want_bins[d.bit_length()] += 1
    assert r.bins == want_bins and r.histogram_excluded == sum(nan)
    inf = [not m and (math.isinf(x) or math.isinf(y)) and x != y for (x, y), m in zip(pairs, nan)]
    ulp_bad = sum(d is not None and d > limit and not i for d, i in zip(dist, inf))
    assert r.ulp_mismatch == ulp_bad
    assert r.nan_mismatch == sum(math.isnan(x) != math.isnan(y) for x, y in pairs)
    assert r.inf_mismatch == sum(inf)
    for o in r.offenders:
        i = o.index[0]
        assert o.ulp == dist[i]
        assert (o.actual_bits, o.expected_bits) == (bits(a[i]), bits(b[i]))
    # κ of every element: the count as the nearest float64, NaN, or ∞
    k = kappa(a, b)
    for (x, y), m, d, kk in zip(pairs, nan, dist, k.tolist()):
        if math.isnan(x) != math.isnan(y):
            assert math.isnan(kk)
        elif m:
            assert kk == 0.0
        elif (math.isinf(x) or math.isinf(y)) and x != y:
            assert kk == INF
        else:
            assert kk == float(d)
    assert r.max_kappa != r.max_kappa or r.max_kappa == INF  # NaNs and infinities present


def test_the_report_keeps_exact_integers_in_its_text_and_json():
    a, b = np.array([MAX, 1.0, TINY]), np.array([-MAX, -ONE_UP, -0.0])
    r = compare(a, b)
    d = 2 * 0x7FEFFFFFFFFFFFFF
    data = json.loads(json.dumps(r.to_dict()))
    assert data["max_ulp"] == d and data["max_kappa"] == d
    assert [o["ulp"] for o in data["offenders"]] == [d, 0x7FE0000000000001, 1]
    assert data["histogram"][-1] == {"min": 2 ** 63, "max": 2 ** 64 - 1, "count": 1}
    assert data["offenders"][0]["actual"] == {
        "bits": "0x7fefffffffffffff",
        "fields": "0 11111111110 " + "1" * 52,
        "value": "1.7976931348623157e+308"}
    text = str(r)
    assert f"max ULP distance     {d} at index (0,)" in text
    assert "0x8000000000000000 1 00000000000 " + "0" * 52 in text
    assert "5e-324" in text


def test_assertions_on_float64_outputs():
    golden = np.array([1.0, -0.0, TINY, MAX, INF, NAN])
    assert_bitwise_equal(golden.copy(), golden)
    assert_ulp_close(golden.copy(), golden, max_ulp=0, fmt="fp64")
    near = golden.copy()
    near[0], near[2] = ONE_UP, 2 * TINY
    assert_ulp_close(near, golden, max_ulp=1)
    with pytest.raises(AssertionError, match="fp64, shape \\(6,\\)"):
        assert_bitwise_equal(near, golden)
    flipped = golden.copy()
    flipped[1] = 0.0
    with pytest.raises(AssertionError, match="zero-sign mismatches +1"):
        assert_ulp_close(flipped, golden, max_ulp=1)
    assert_ulp_close(flipped, golden, max_ulp=0, signed_zero=False)
    # another NaN (sign and payload): a match under nan="any", not bit for bit
    other_nan = golden.copy()
    other_nan[5] = from_bits(0xFFF8000000000123)
    assert_ulp_close(other_nan, golden, max_ulp=0)
    with pytest.raises(AssertionError, match="NaN mismatches +1"):
        assert_bitwise_equal(other_nan, golden)
    # an overflow is never within a ULP tolerance (max and inf are 1 apart)
    over = golden.copy()
    over[3] = INF
    with pytest.raises(AssertionError, match="inf mismatches +1"):
        assert_ulp_close(over, golden, max_ulp=2 ** 60)
    with pytest.raises(AssertionError, match="shape mismatch"):
        assert_ulp_close(golden[:2], golden, fmt="fp64")


def test_codes_of_every_integer_kind():
    golden = np.array([1.0, -2.5, TINY, -MAX])
    actual = golden.copy()
    actual[1] = math.nextafter(-2.5, 0.0)
    for codes in (actual.view(np.uint64), actual.view(np.int64), actual.view(np.int64).tolist()):
        r = compare(codes, golden.view(np.int64), fmt="fp64")
        assert (r.exact, r.max_ulp, r.max_ulp_index) == (3, 1, (1,))
    with pytest.raises(TypeError, match="fmt="):
        compare(actual.view(np.uint64), golden.view(np.uint64))


def test_narrower_values_compared_in_fp64():
    # float32 and float16 outputs widened exactly to FP64
    x32 = np.float32([1.1, -0.0, 3.4e38, np.inf])
    ref = np.array([1.1, -0.0, 3.4e38, INF])
    r = compare(x32, ref, fmt="fp64")
    assert r.max_ulp == max(oracle_distance(float(v), w) for v, w in zip(x32[:3], ref[:3]))
    assert r.max_ulp_index == (0,) or r.max_ulp_index == (2,)
    assert compare(np.float16([0.5, 65504.0]), np.array([0.5, 65504.0]), fmt="fp64").ok
    # float64 values that are not FP32 values are refused, with a way out
    with pytest.raises(ValueError, match="not fp32 values"):
        compare(np.array([0.1]), np.array([0.1]), fmt="fp32")
    with pytest.raises(TypeError, match='fpsim.array.round\\(expected, "fp32"\\)'):
        compare(np.float32([0.1]), np.array([0.1]))


@pytest.mark.skipif(np.finfo(np.longdouble).nmant <= 52,
                    reason="long double is float64 here")
def test_long_double_holds_fp64_values_or_is_refused():
    exact = np.array([1.5, -0.0, TINY], np.longdouble)
    assert compare(exact, np.array([1.5, -0.0, TINY]), fmt="fp64").ok
    finer = exact.copy()
    finer[0] += np.longdouble(2) ** -60  # between two doubles
    with pytest.raises(ValueError, match="not fp64 values"):
        compare(finer, np.array([1.5, -0.0, TINY]), fmt="fp64")
    huge = np.array([np.longdouble(2) ** 1100], np.longdouble)  # beyond float64's range
    with pytest.raises(ValueError, match="not fp64 values"):
        compare(huge, np.array([INF]), fmt="fp64")


def test_a_wide_custom_format_reads_float64_values():
    # 51 bits: 10 exponent bits (bias 511), 40 fraction bits; 1.5 is
    # exponent field 511 and fraction 2**39
    fmt = fpsim.Format("test_e10m40", exponent_bits=10, mantissa_bits=40, bias=511)
    r = compare(np.array([1.5, 2.0]), np.array([1.5, 2.0 + 2.0 ** -39]), fmt=fmt)
    assert (r.exact, r.max_ulp) == (1, 1)
    assert r.offenders[0].actual_bits == 512 << 40
    code = (511 << 40) | (1 << 39)
    assert compare(np.array([1.5]), np.array([code], np.uint64), fmt=fmt).ok
    with pytest.raises(ValueError, match="not test_e10m40 values"):
        compare(np.array([1.0 + 2.0 ** -45]), np.array([1.0]), fmt=fmt)


def test_memory_mapped_float64_dumps(tmp_path):
    n = 3000
    a = np.memmap(tmp_path / "a.bin", np.float64, "w+", shape=(n,))
    a[:] = np.linspace(-1e300, 1e300, n)
    b = np.array(a)
    b[1234] = -b[1234]
    r = compare(a, b)
    assert (r.exact, r.max_ulp_index) == (n - 1, (1234,))
    assert r.max_ulp == oracle_distance(float(a[1234]), float(b[1234]))


def test_float64_values_in_a_format_without_a_dtype_are_values_not_bits():
    # (numpy's float64 dtype compares equal to None, the dtype of a format
    # without one: the values were once read as their float64 bit patterns)
    # binary8p4se has 4 bits of precision: 2.0, 2.25, 2.5, 2.75, 3.0
    r = compare(np.array([1.0, 2.0]), np.array([1.0, 3.0]), fmt="binary8p4se")
    assert (r.exact, r.max_ulp, r.max_ulp_index) == (1, 4, (1,))
    assert r.offenders[0].actual_value == "2.0"
    from fpsim.testing import _dumps

    with pytest.raises(_dumps.DumpError, match="float64 values, not binary8p4se"):
        _dumps.codes_of(np.array([1.0]), fpsim.format("binary8p4se"), "input 1")


def test_ref_and_diff_on_fp64_dumps(tmp_path, capsys):
    from fpsim.cli import main

    # ref sum on FP64 accumulates in FP64 (1e16 + 1 ties to 1e16, 1 + 1 is 2)
    np.save(tmp_path / "x.npy", np.array([[1e16, 1.0, 1.0], [1.0, 1.0, 1e16]]))
    assert main(["ref", "sum", str(tmp_path / "x.npy"), str(tmp_path / "s.npy")]) == 0
    assert np.load(tmp_path / "s.npy").tolist() == [1e16, 1e16 + 2]
    # diff: the exact distance between them, 1 ULP (FP64's spacing above
    # 2**53 is 2), and exit status 1 beyond --max-ulp
    np.save(tmp_path / "t.npy", np.array([1e16, 1e16]))
    capsys.readouterr()
    assert main(["diff", str(tmp_path / "s.npy"), str(tmp_path / "t.npy")]) == 1
    out = capsys.readouterr().out
    assert "fp64" in out and "max ULP distance                1 at index (1,)" in out
    assert main(["diff", str(tmp_path / "s.npy"), str(tmp_path / "t.npy"),
                 "--max-ulp", "1"]) == 0
