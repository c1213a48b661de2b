"""TestFloat's ``f64_*`` operations in ``gen`` and ``ver`` (fpsim.testfloat),
computed by the array engine, against independent oracles.

* Berkeley SoftFloat itself (softfloatpy) computes the results and flags of
  f64 add, sub, mul, div, sqrt, mulAdd, the comparisons and the conversions
  to and from f64; ``ver`` must accept its lines in every rounding mode
  SoftFloat has and both tininess modes, count exactly the lines corrupted
  afterwards, and ``gen`` must write SoftFloat's results.
* SoftFloat (in softfloatpy) has no round to odd and no rounding away from
  zero: exact fractions (``fractions.Fraction``) round those, for results in
  the normal range.

The operands come from fpsim's own case generator (inputs, not
expectations); every expected result comes from the oracle.
"""

from __future__ import annotations

from fractions import Fraction

import pytest
import softfloatpy as sf
from test_testfloat_gen_ver import (
    MODES,
    TININESS,
    _gen,
    _same,
    check_corrupted_count,
    options,
    run_ver,
    softfloat_lines,
    softfloat_result,
)

import fpsim
from fpsim import testfloat

N = 300  # cases per operation, mode and tininess
ROUNDED = ("add", "sub", "mul", "div", "sqrt", "mulAdd")
COMPARISONS = ("eq", "le", "lt", "eq_signaling", "le_quiet", "lt_quiet")
CONVERSIONS = ("f64_to_f16", "f64_to_f32", "f16_to_f64", "f32_to_f64")
ONE = 0x3FF0000000000000
TWO = 0x4000000000000000
MIN_NORMAL = 0x0010000000000000


def test_f64_operations_run_in_the_array_engine():
    # The speed of gen and ver on f64 comes from the array engine: every
    # operation it has takes that path; the rest stay with the scalar model.
    engine = [f"f64_{op}" for op in (*ROUNDED, *COMPARISONS)] + list(CONVERSIONS)
    for name in engine:
        assert testfloat._array_path(testfloat.operation(name)) is not None, name
    for name in ("f64_rem", "f64_roundToInt", "i64_to_f64", "ui32_to_f64"):
        assert testfloat._array_path(testfloat.operation(name)) is None, name


# -- ver accepts SoftFloat's own results ---------------------------------------------------------

@pytest.mark.parametrize("name", [f"f64_{op}" for op in ROUNDED] + list(CONVERSIONS))
def test_ver_accepts_softfloats_f64_results_in_every_mode_and_tininess(capsys, tmp_path, name):
    checked = 0
    for mode in MODES:
        for tininess in TININESS:
            lines = softfloat_lines(name, mode, tininess, n=N, seed=17)
            status, out, err = run_ver(capsys, tmp_path, name, lines, options(mode, tininess))
            assert status == 0, f"{mode} {tininess}:\n{out}{err}"
            assert f"lines                {len(lines):,}" in out and ": OK (" in out
            checked += len(lines)
    assert checked == len(MODES) * len(TININESS) * N


@pytest.mark.parametrize("op", COMPARISONS)
def test_ver_accepts_softfloats_f64_comparisons(capsys, tmp_path, op):
    name = f"f64_{op}"
    lines = softfloat_lines(name, "rne", "after", n=2 * N, seed=5)
    assert any(line.endswith(" 10") for line in lines)  # NaN operands: invalid raised
    assert {line.split()[2] for line in lines} == {"0", "1"}
    status, out, _ = run_ver(capsys, tmp_path, name, lines, [])
    assert status == 0, out


def _boundary_lines(name: str, mode: str, tininess: str) -> list[str]:
    """SoftFloat's lines of ``name`` on results just below FP64's smallest
    normal 2**-1022, where rounding may reach it: tiny before rounding, not
    after, so the underflow flag depends on the tininess mode."""
    sf.set_rounding_mode(MODES[mode][1])
    sf.set_tininess_mode(TININESS[tininess][1])
    below_one = range(ONE - 24, ONE)
    normals = range(MIN_NORMAL, MIN_NORMAL + 24)
    if name == "f64_div":  # 2**-1021 (1 - k 2**-53) / 2 (1 - j 2**-53): just below 2**-1022
        tuples = [(a, b) for a in range(2 * MIN_NORMAL - 24, 2 * MIN_NORMAL)
                  for b in range(TWO - 24, TWO)]
    elif name == "f64_mulAdd":  # (1 - k ulp) 2**-1022 (1 + j ulp) plus a zero or a subnormal
        tuples = [(a, b, c) for a in below_one[8:] for b in normals[:16]
                  for c in (0, 1 << 63, 1, (1 << 63) | 1)]
    else:
        tuples = [(a, b) for a in below_one for b in normals]
    lines = []
    for codes in tuples:
        r, f = softfloat_result(name, list(codes), mode, False)
        lines.append(" ".join([*(f"{c:016X}" for c in codes), f"{r:016X}", f"{f:02X}"]))
    return lines


@pytest.mark.parametrize("name", ["f64_mul", "f64_div", "f64_mulAdd"])
def test_ver_accepts_softfloats_tininess_on_the_f64_underflow_boundary(capsys, tmp_path, name):
    for mode in MODES:
        by_tininess = {}
        for tininess in TININESS:
            lines = _boundary_lines(name, mode, tininess)
            status, out, _ = run_ver(capsys, tmp_path, name, lines, options(mode, tininess))
            assert status == 0, f"{mode} {tininess}:\n{out}"
            by_tininess[tininess] = lines
        differ = sum(a != b for a, b in zip(by_tininess["after"], by_tininess["before"]))
        if name == "f64_div":
            # A quotient of two FP64 numbers is 2**-1022 exactly or more than
            # 2**-1075 below it: never rounded up to it with an unbounded
            # exponent, so tiny after rounding as before (SoftFloat agrees).
            assert differ == 0, mode
        else:
            # toward zero (and down, for these positive results) never reaches 2**-1022
            assert differ > 0 or mode in ("rtz", "rdn"), mode


@pytest.mark.parametrize("name, mode, tininess", [
    ("f64_mul", "rne", "after"), ("f64_add", "rtz", "before"), ("f64_mulAdd", "rdn", "before"),
    ("f64_div", "rup", "after"), ("f64_sqrt", "rna", "before"), ("f64_lt_quiet", "rne", "after"),
    ("f64_to_f32", "rna", "before"), ("f32_to_f64", "rtz", "after"),
])
def test_ver_counts_exactly_the_corrupted_f64_lines(capsys, tmp_path, name, mode, tininess):
    lines = softfloat_lines(name, mode, tininess, n=N, seed=9)
    check_corrupted_count(capsys, tmp_path, name, lines, mode, tininess, results=5, flags=4,
                          seed=11, offenders=20)


# -- gen writes SoftFloat's results --------------------------------------------------------------

def _check_gen_against_softfloat(name: str, lines: list[str], mode: str) -> int:
    """Every line's result and flags are SoftFloat's; returns how many were inexact."""
    op = testfloat.operation(name)
    inexact = 0
    for line in lines:
        cells = [int(c, 16) for c in line.split()]
        codes, result, flags = cells[:op.arity], cells[op.arity], cells[op.arity + 1]
        expected, expected_flags = softfloat_result(op.name, codes, mode, False)
        if op.output is None:
            assert result == expected, line
        else:
            assert _same(op.output, result, expected), line
        assert flags == expected_flags, line
        inexact += flags & 1
    return inexact


@pytest.mark.parametrize("name", [f"f64_{op}" for op in (*ROUNDED, "lt", "le_quiet",
                                                           "eq_signaling")]
                         + list(CONVERSIONS))
def test_gen_f64_agrees_with_softfloat_in_every_mode_and_tininess(capsys, name):
    inexact = 0
    for mode in MODES:
        for tininess in TININESS:
            sf.set_rounding_mode(MODES[mode][1])
            sf.set_tininess_mode(TININESS[tininess][1])
            lines = _gen(capsys, [name, MODES[mode][0], TININESS[tininess][0], "-n", "300",
                                  "-seed", "23"])
            assert len(lines) == 300
            inexact += _check_gen_against_softfloat(name, lines, mode)
    # the cases reach inexact results (conversions into f64 and comparisons are exact)
    assert inexact > 100 or name in ("f16_to_f64", "f32_to_f64") or "_l" in name \
        or "_eq" in name


def test_gen_f64_sqrt_level_2_agrees_with_softfloat(capsys):
    sf.set_rounding_mode(sf.RoundingMode.NEAR_EVEN)
    sf.set_tininess_mode(sf.TininessMode.AFTER_ROUNDING)
    lines = _gen(capsys, ["f64_sqrt", "-level", "2"])
    assert len(lines) == testfloat.count("f64_sqrt", level=2) == 15504
    assert _check_gen_against_softfloat("f64_sqrt", lines, "rne") > 1000


# -- round to odd and away from zero: exact fractions --------------------------------------------

def _value(code: int) -> Fraction | None:
    """The exact value of a finite FP64 code (None for inf and NaN)."""
    e, m = (code >> 52) & 0x7FF, code & ((1 << 52) - 1)
    if e == 0x7FF:
        return None
    v = Fraction(m, 1 << 52) * Fraction(2) ** -1022 if e == 0 else \
        Fraction((1 << 52) | m, 1 << 52) * Fraction(2) ** (e - 1023)
    return -v if code >> 63 else v


def _round(x: Fraction, mode: str) -> tuple[int, int] | None:
    """``x`` rounded to FP64 to odd (``rto``) or away from zero (``raz``)
    and its flags (inexact or none), for nonzero results in the normal range
    (None elsewhere: no underflow or overflow to decide)."""
    if x == 0:
        return None
    sign, mag = int(x < 0), abs(x)
    e = mag.numerator.bit_length() - mag.denominator.bit_length()
    if Fraction(2) ** e > mag:
        e -= 1
    scaled = mag / Fraction(2) ** (e - 52)  # in [2**52, 2**53)
    n = scaled.numerator // scaled.denominator
    exact = n == scaled
    if not exact:
        n = n | 1 if mode == "rto" else n + 1
    if n == 1 << 53:
        n, e = n >> 1, e + 1
    if not -1022 <= e <= 1023:
        return None
    return (sign << 63) | ((e + 1023) << 52) | (n - (1 << 52)), 0 if exact else 1


def _exact(op: str, xs: list[Fraction]) -> Fraction:
    a, b = xs[0], xs[1]
    if op == "add":
        return a + b
    if op == "sub":
        return a - b
    if op == "mul":
        return a * b
    if op == "div":
        return a / b
    return a * b + xs[2]


@pytest.mark.parametrize("mode", ["rto", "raz"])
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "mulAdd"])
def test_gen_and_ver_f64_round_to_odd_and_away_against_fractions(op, mode):
    name, ctx = f"f64_{op}", fpsim.Context(rounding=mode)
    oracle_lines, checked, inexact = [], 0, 0
    for line in testfloat.generate(name, ctx, n=1500, seed=31):
        cells = [int(c, 16) for c in line.split()]
        codes = cells[:-2]
        xs = [_value(c) for c in codes]
        if any(x is None for x in xs) or (op == "div" and xs[1] == 0):
            continue
        expected = _round(_exact(op, xs), mode)
        if expected is None:
            continue
        assert (cells[-2], cells[-1]) == expected, line
        checked += 1
        inexact += expected[1]
        oracle_lines.append(" ".join([*(f"{c:016X}" for c in codes), f"{expected[0]:016X}",
                                      f"{expected[1]:02X}"]))
    assert checked > 500 and inexact > 300
    assert testfloat.verify(name, oracle_lines, ctx).ok
