"""fpsim.testing: compare, its report, the assertions and the ULP distance.

Expected counts come from faults injected at known places into arrays whose
codes are written here; ULP distances are checked against ranks of the exact
values that tests/oracle.py decodes from the bit fields (independent of
fpsim), and against fpsim's scalar next_up/next_down for adjacent codes.
"""

from __future__ import annotations

import json

import ml_dtypes
import numpy as np
import pytest

import fpsim
from fpsim.testing import assert_bitwise_equal, assert_ulp_close, compare, ulp_distance
from fpsim.testing._ulp import distance

from oracle import spec_of

SMALL_FORMATS = [f for f in fpsim.formats() if f.width <= 16]
EIGHT_BIT = [f for f in fpsim.formats() if f.width <= 8]


def injected():
    """10,000 FP16 values with one fault of each kind at a known index."""
    rng = np.random.default_rng(7)
    expected = rng.uniform(-100, 100, 10_000).astype(np.float16)
    expected[10] = -0.0
    expected[20] = 65504.0
    expected[30] = 3.0
    actual = expected.copy()
    bits = actual.view(np.uint16)
    bits[1] += 1                      # 1 ULP (same sign: magnitude + 1)
    bits[2] += 100                    # 100 ULP
    actual[3] = np.nan                # NaN for a number
    actual[10] = 0.0                  # +0 for -0
    actual[20] = np.inf               # inf for max
    actual[30] = np.float16(3.0) - np.float16(2 ** -9)  # 1 ULP below 3 (spacing 2**-9 below 2)
    return actual, expected


def test_injected_faults_land_in_their_buckets_and_nothing_else_is_flagged():
    actual, expected = injected()
    r = compare(actual, expected, max_ulp=0)
    assert (r.total, r.exact, r.within_tolerance, r.beyond_tolerance) == (10_000, 9_994, 0, 6)
    assert (r.nan_mismatch, r.inf_mismatch, r.signed_zero_mismatch, r.ulp_mismatch) == (1, 1, 1, 3)
    assert r.max_ulp == 100 and r.max_ulp_index == (2,)
    assert [(o.index, o.kind, o.ulp) for o in r.offenders] == [
        ((1,), "ulp", 1), ((2,), "ulp", 100), ((3,), "nan", None), ((10,), "signed_zero", 0),
        ((20,), "inf", 1), ((30,), "ulp", 1)]
    assert not r.ok


def test_tolerance_moves_only_the_small_ulp_faults():
    actual, expected = injected()
    r = compare(actual, expected, max_ulp=1)
    assert (r.exact, r.within_tolerance, r.beyond_tolerance) == (9_994, 2, 4)
    assert (r.nan_mismatch, r.inf_mismatch, r.signed_zero_mismatch, r.ulp_mismatch) == (1, 1, 1, 1)
    r = compare(actual, expected, max_ulp=100, signed_zero=False)
    assert (r.within_tolerance, r.beyond_tolerance) == (4, 2)
    assert [o.kind for o in r.offenders] == ["nan", "inf"]


def test_histogram_counts_every_pair_without_a_nan():
    actual, expected = injected()
    r = compare(actual, expected)
    hist = {(h["min"], h["max"]): h["count"] for h in r.histogram}
    # 9,994 exact + the ±0 pair at distance 0; 1 ULP three times; 100 in 64..127.
    assert hist == {(0, 0): 9_995, (1, 1): 3, (64, 127): 1}
    assert sum(hist.values()) == r.total - 1  # the NaN pair has no distance


def test_offenders_show_both_values_and_fields():
    actual, expected = injected()
    r = compare(actual, expected)
    o = r.offenders[4]
    assert (o.actual_bits, o.expected_bits) == (0x7C00, 0x7BFF)
    assert (o.actual_value, o.expected_value) == ("inf", "65504.0")
    assert (o.actual_fields, o.expected_fields) == ("0 11111 0000000000", "0 11110 1111111111")
    text = str(r)
    assert "0x7c00 0 11111 0000000000" in text and "65504.0" in text
    assert "the 6 offenders:" in text and "MISMATCH" in text


def test_to_dict_is_json_ready_with_the_documented_keys():
    actual, expected = injected()
    d = json.loads(json.dumps(compare(actual, expected).to_dict(), allow_nan=False))
    for key in ("total", "exact", "within_tolerance", "beyond_tolerance", "nan_mismatch",
                "inf_mismatch", "signed_zero_mismatch", "max_ulp", "max_ulp_index",
                "histogram", "offenders"):
        assert key in d
    assert d["max_ulp_index"] == [2]
    assert d["offenders"][2]["actual"] == {"bits": "0x7e00", "fields": "0 11111 1000000000",
                                           "value": "nan"}


def test_offender_limit_and_multidimensional_index():
    expected = np.zeros((4, 5), np.float32)
    actual = expected.copy()
    bits = actual.view(np.uint32)
    bits[1, 2] = 1                     # the smallest FP32 subnormal: 1 ULP from +0
    bits[3, 4] = 0x80000001            # 1 ULP on the other side
    bits[2, 0] = 2
    r = compare(actual, expected, offenders=1)
    assert r.beyond_tolerance == 3 and len(r.offenders) == 1
    assert r.offenders[0].index == (1, 2)
    assert r.max_ulp == 2 and r.max_ulp_index == (2, 0)
    assert "the first offender (of 3):" in str(r)


def test_nan_rules():
    a = np.array([0x7E00, 0x7E01, 0xFE00, 0x3C00], np.uint16)
    b = np.array([0x7E00, 0x7E00, 0x7E00, 0x7E00], np.uint16)
    r = compare(a, b, "fp16")
    assert (r.exact, r.within_tolerance, r.nan_mismatch) == (1, 2, 1)
    r = compare(a, b, "fp16", nan="exact")
    assert (r.exact, r.within_tolerance, r.nan_mismatch) == (1, 0, 3)


def test_inf_against_opposite_inf_is_an_inf_mismatch():
    r = compare(np.float16([np.inf, -np.inf]), np.float16([-np.inf, 1.0]), max_ulp=10 ** 6)
    assert r.inf_mismatch == 2 and r.within_tolerance == 0
    assert r.max_ulp == 2 * 0x7C00


def test_review_findings_stay_fixed():
    # A value outside the format (inf into E8M0/E4M3/E3M2, 0 into E8M0) is an error,
    # not a silent NaN or max that then matches.
    for fmt, bad in (("e8m0", 0.0), ("e8m0", -1.0), ("e8m0", np.inf), ("e4m3", np.inf),
                     ("e3m2", np.inf), ("e4m3fnuz", np.inf)):
        with pytest.raises(ValueError, match=f"not {fmt} values"):
            compare(np.float32([bad]), np.float32([1.0]), fmt)
    with pytest.raises(ValueError, match="^expected: NaN"):
        compare(np.float32([1.0]), np.float32([np.nan]), "e3m2")
    # FNUZ's NaN code is not a zero: one kind per pair.
    fnuz = ml_dtypes.float8_e4m3fnuz
    r = compare(np.array([0.0], fnuz), np.array([np.nan], fnuz))
    assert (r.nan_mismatch, r.signed_zero_mismatch, r.beyond_tolerance) == (1, 0, 1)
    # The largest distance is found among the pairs without a NaN.
    assert compare(np.float16([np.nan, 1.0]), np.float16([1.0, 1.0])).max_ulp_index == (1,)
    # Big-endian value arrays carry their format; float64 holding FP32 values.
    assert compare(np.float16([1, 2]).astype(">f2"), np.float16([1, 2])).ok
    assert compare(np.float32([1.5, -np.inf]), np.float64([1.5, -np.inf]), "fp64").ok
    # Signed integers as wide as the codes are bit patterns (torch's t.view(torch.int16)).
    assert compare(np.int16([-17408]), np.uint16([0xBC00]), "fp16").ok  # -17408 is 0xBC00
    # Any tolerance beyond 2**64 accepts every finite distance.
    assert compare(np.float16([-65504]), np.float16([65504]), max_ulp=2 ** 70).ok
    # Non-contiguous and big-endian inputs are read chunk by chunk.
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    assert compare(x.T, x.T.copy()).ok and compare(x[:, ::2], x[:, ::2].astype(">f4")).ok
    assert ulp_distance(0x3C00, 0x3C01, "fp16") == 1


def test_format_inference_and_overrides():
    # ml_dtypes arrays carry their format; codes need fmt=.
    e4m3 = np.array([448, -448, 1.5], ml_dtypes.float8_e4m3fn)
    assert compare(e4m3, e4m3).fmt is fpsim.E4M3
    codes = e4m3.view(np.uint8)
    assert compare(codes, e4m3, "e4m3").exact == 3
    # float32 arrays holding BF16 values, compared as BF16: 1 BF16 ULP.
    a = np.float32([1.0, 1.0078125])
    assert compare(a, np.float32([1.0, 1.0]), "bf16").max_ulp == 1
    with pytest.raises(ValueError, match="not bf16 values"):
        compare(np.float32([1.0001]), np.float32([1.0]), "bf16")


@pytest.mark.parametrize("bad, match, exc", [
    (dict(actual=np.float16([1.0]), expected=np.float16([1.0, 2.0])), "shape mismatch",
     ValueError),
    (dict(actual=np.float16([1.0]), expected=np.float32([1.0])), "pass fmt=", TypeError),
    (dict(actual=np.uint16([1]), expected=np.uint16([1])), "cannot tell the format", TypeError),
    (dict(actual=np.uint16([0x100]), expected=np.uint16([1]), fmt="e4m3"), "out of range",
     ValueError),
    (dict(actual=np.int16([-1]), expected=np.int16([1]), fmt="e4m3"), "negative codes",
     ValueError),
    (dict(actual=np.float16([1.0]), expected=np.float16([1.0]), fmt="fp17"), "fp17",
     ValueError),
    (dict(actual=np.float16([1.0]), expected=np.float16([1.0]), max_ulp=-1), "max_ulp",
     ValueError),
    (dict(actual=np.float16([1.0]), expected=np.float16([1.0]), nan="some"), "nan must be",
     ValueError),
    (dict(actual=np.array(["a"]), expected=np.array(["a"]), fmt="fp16"), "accepted",
     TypeError),
])
def test_bad_input_is_named(bad, match, exc):
    actual, expected = bad.pop("actual"), bad.pop("expected")
    with pytest.raises(exc, match=match):
        compare(actual, expected, **bad)


def test_assertions_raise_with_the_report():
    a, b = np.float16([1.0, 2.001953125]), np.float16([1.0, 2.0])
    assert_ulp_close(a, b, max_ulp=1)
    with pytest.raises(AssertionError, match=r"(?s)beyond tolerance +1.*ULP distance > 0 +1"):
        assert_bitwise_equal(a, b)
    with pytest.raises(AssertionError, match="NaN mismatches"):
        assert_bitwise_equal(np.uint16([0x7E01]), np.uint16([0x7E00]), "fp16")
    with pytest.raises(AssertionError, match="see kernel 3"):
        assert_ulp_close(np.float16([4.0]), b[:1], err_msg="see kernel 3")


def test_chunking_does_not_change_the_report(monkeypatch):
    import fpsim.testing._compare as cmp

    actual, expected = injected()
    whole = compare(actual, expected).to_dict()
    monkeypatch.setattr(cmp, "CHUNK", 7)
    assert compare(actual, expected).to_dict() == whole


# -- the ULP distance ---------------------------------------------------------------

def _ranks(fmt):
    """Rank of every non-NaN code among the format's distinct values, from
    the oracle's exact decoding (±0 share a rank; ±inf come last/first)."""
    spec = spec_of(fmt)
    keyed = {}
    for c in range(1 << fmt.width):
        kind, sign, v = spec.decode(c)
        if kind == "nan":
            continue
        key = (-1 if sign else 1) * (10 ** 400) if kind == "inf" else v
        keyed[c] = key
    order = {v: i for i, v in enumerate(sorted(set(keyed.values())))}
    return {c: order[k] for c, k in keyed.items()}


@pytest.mark.parametrize("fmt", EIGHT_BIT, ids=lambda f: f.name)
def test_distance_is_the_rank_difference_for_every_pair_of_8_bit_codes(fmt):
    ranks = _ranks(fmt)
    codes = np.array(sorted(ranks), np.uint64)
    a, b = np.meshgrid(codes, codes)
    want = np.abs(np.vectorize(ranks.get)(a).astype(np.int64)
                  - np.vectorize(ranks.get)(b).astype(np.int64))
    got = distance(a.ravel(), b.ravel(), fmt).reshape(a.shape)
    assert np.array_equal(got.astype(np.int64), want)


@pytest.mark.parametrize("fmt", SMALL_FORMATS, ids=lambda f: f.name)
def test_adjacent_codes_are_one_ulp_apart_both_ways(fmt):
    """For every code: next_up and next_down (fpsim's scalar arithmetic) are
    at distance 1 unless they return the code itself (the ends) or it is a
    zero whose neighbour is the other zero; and distance is symmetric."""
    ups, downs, xs = [], [], []
    for c in range(1 << fmt.width):
        if fmt.is_nan_code(c):
            continue
        x = fmt.from_bits(c)
        xs.append(c)
        ups.append(fpsim.arith.next_up(x).bits)
        downs.append(fpsim.arith.next_down(x).bits)
    xs, ups, downs = (np.array(v, np.uint64) for v in (xs, ups, downs))
    for other in (ups, downs):
        d = distance(xs, other, fmt)
        assert np.array_equal(d, distance(other, xs, fmt))
        moved = xs != other
        assert np.all(d[moved] == 1), fmt.name
        assert np.all(d[~moved] == 0)


@pytest.mark.parametrize("fmt", [f for f in SMALL_FORMATS if f.width == 16],
                         ids=lambda f: f.name)
def test_distance_matches_ranks_on_random_16_bit_pairs(fmt):
    ranks = _ranks(fmt)
    rank = np.full(1 << 16, -1, np.int64)
    for c, r in ranks.items():
        rank[c] = r
    rng = np.random.default_rng(16)
    a = rng.integers(0, 1 << 16, 200_000, dtype=np.uint64)
    b = rng.integers(0, 1 << 16, 200_000, dtype=np.uint64)
    keep = (rank[a] >= 0) & (rank[b] >= 0)
    a, b = a[keep], b[keep]
    assert np.array_equal(distance(a, b, fmt).astype(np.int64), np.abs(rank[a] - rank[b]))


def test_scalar_ulp_distance():
    assert ulp_distance(0x7F7FFFFF, 0x7F800000, fpsim.FP32) == 1
    assert ulp_distance(0xFF800000, 0x7F800000, fpsim.FP32) == 2 * 0x7F800000
    assert ulp_distance(0, 0xFFFFFFFFFFFFFFFF, fpsim.FP64) is None
    top = 0x7FEFFFFFFFFFFFFF  # FP64 max
    assert ulp_distance(top | 1 << 63, top, fpsim.FP64) == 2 * top
    assert ulp_distance(0x00, 0xFE, fpsim.E8M0) == 0xFE
    with pytest.raises(ValueError, match="out of range"):
        ulp_distance(0x100, 0, fpsim.E4M3)
