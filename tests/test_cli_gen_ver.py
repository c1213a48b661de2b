"""``python -m fpsim gen`` and ``ver``: round trips for every format and
operation, the options, the report, and bad input (exit 2, one line on
stderr naming the line).

Hand-derived lines: E4M3 1.0 is 0x38 (exponent field 7 = bias, fraction 0)
and 2.0 is 0x40; FP16 1.0 is 0x3C00, 2.0 0x4000, 3.0 0x4200, 2**-24 0x0001.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys

import numpy as np
import pytest

import fpsim
from fpsim import testfloat
from fpsim.cli import main

ALL_FORMATS = [testfloat.format_name(f) for f in fpsim.formats()]
# The default run takes every format outside IEEE P3109's family and four of
# its eight-bit members (signed and unsigned, extended and finite, P = 1 and
# P > 1); tox -e exhaustive takes every registered format.
P3109_SAMPLE = {"binary8p3se", "binary8p1ue", "binary8p4sf", "binary8p5uf"}
SAMPLED = {f for f in ALL_FORMATS if not f.startswith("binary") or f in P3109_SAMPLE}
FORMATS = [f if f in SAMPLED else pytest.param(f, marks=pytest.mark.exhaustive)
           for f in ALL_FORMATS]
OPS = [*testfloat.ARITHMETIC, *testfloat.COMPARISONS]


def gen(capsys, *argv: str) -> list[str]:
    status = main(["gen", *argv])
    out, err = capsys.readouterr()
    assert status == 0 and err == "", err
    return out.splitlines()


def ver(capsys, monkeypatch, lines: list[str], *argv: str) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "stdin", io.StringIO("".join(f"{x}\n" for x in lines)))
    status = main(["ver", *argv])
    out, err = capsys.readouterr()
    return status, out, err


def round_trip(capsys, monkeypatch, op: str, *options: str, n: int = 200) -> list[str]:
    lines = gen(capsys, op, "-n", str(n), *options)
    status, out, err = ver(capsys, monkeypatch, lines, op, *options)
    assert status == 0, out + err
    assert err == "" and f"lines                {len(lines):,}" in out
    return lines


# -- round trips -------------------------------------------------------------------------------

@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("fmt", FORMATS)
def test_gen_then_ver_round_trips_every_operation_of_every_format(capsys, monkeypatch, fmt, op):
    name = f"{fmt}_{op}"
    lines = round_trip(capsys, monkeypatch, name)
    f = testfloat.operation(name)
    fields = f.arity + 2
    assert all(len(line.split()) == fields for line in lines)
    if f.output is not None and f.output.has_nan:
        assert len(lines) == 200  # only a format without NaN leaves cases out
    digits = [-(-x.width // 4) for x in f.inputs] + [1 if f.output is None
                                                       else -(-f.output.width // 4), 2]
    cells = lines[0].split()
    assert [len(c) for c in cells] == digits and lines[0] == lines[0].upper()


CONVERSIONS = [
    f"{a}_to_{b}" if {a, b} <= SAMPLED | set(testfloat.INT_FORMATS)
    else pytest.param(f"{a}_to_{b}", marks=pytest.mark.exhaustive)
    for a in ALL_FORMATS + list(testfloat.INT_FORMATS) for b in ALL_FORMATS if a != b]


@pytest.mark.parametrize("op", CONVERSIONS)
def test_gen_then_ver_round_trips_every_conversion(capsys, monkeypatch, op):
    round_trip(capsys, monkeypatch, op, n=100)


SETTINGS = [
    [], ["-rminMag"], ["-rmin"], ["-rmax"], ["-rnear_maxMag"], ["-rodd"], ["-tininessbefore"],
    ["--saturate"], ["--ftz"], ["--daz"], ["--ftz", "--daz", "-rmax"],
    ["--nan", "riscv"], ["--nan", "x86"], ["--nan", "arm_default_nan", "-rmin"],
    ["--rounding", "sr"], ["--rounding", "sr", "--sr-bits", "3"], ["-level", "2"],
    ["-seed", "99"], ["--no-flags"],
]


@pytest.mark.parametrize("op", ["f16_mulAdd", "e4m3_div", "bf16_sqrt", "f32_to_e5m2",
                                "e2m1_add", "f64_roundToInt", "e5m2fnuz_mul", "i32_to_bf16"])
@pytest.mark.parametrize("settings", SETTINGS, ids=lambda s: "_".join(s) or "default")
def test_gen_then_ver_round_trips_under_every_setting(capsys, monkeypatch, op, settings):
    round_trip(capsys, monkeypatch, op, *settings, n=150)


def test_roundtoint_exact_raises_inexact_only_with_exact(capsys, monkeypatch):
    plain = gen(capsys, "f16_roundToInt", "-n", "400")
    exact = gen(capsys, "f16_roundToInt", "-n", "400", "-exact")
    assert [x.split()[:2] for x in plain] == [x.split()[:2] for x in exact]
    assert not any(int(x.split()[2], 16) & 1 for x in plain)
    assert any(int(x.split()[2], 16) & 1 for x in exact)
    status, out, _ = ver(capsys, monkeypatch, exact, "f16_roundToInt")  # without -exact
    assert status == 1 and "in the flags only" in out
    assert ver(capsys, monkeypatch, exact, "f16_roundToInt", "-exact")[0] == 0


# -- what gen writes -------------------------------------------------------------------------

def test_the_same_seed_gives_the_same_lines_pinned(capsys):
    # pinned: a change here changes every user's vector files
    assert gen(capsys, "f16_add", "-n", "3", "-seed", "3") == [
        "EC0B A5FE EC0B 01", "0000 46FB 46FB 00", "075F 7BF9 7BF9 01"]
    assert gen(capsys, "e4m3_mul", "-n", "3", "-seed", "1") == gen(capsys, "e4m3_mul", "-n", "3")
    assert gen(capsys, "f32_add", "-seed", "2", "-n", "50") != gen(capsys, "f32_add", "-n", "50")


def test_the_cases_do_not_depend_on_the_chunk_size():
    whole = list(testfloat.generate("f32_mulAdd", n=5000, chunk_size=5000))
    assert list(testfloat.generate("f32_mulAdd", n=5000, chunk_size=333)) == whole


def test_level_2_of_an_8_bit_format_is_every_pair_once(capsys):
    lines = gen(capsys, "e4m3_add", "-level", "2")
    pairs = [tuple(x.split()[:2]) for x in lines]
    assert len(pairs) == 65536 == len(set(pairs))


def test_level_1_crosses_the_specials_of_a_format():
    # every exponent-field boundary and significand pattern appears, both signs
    a = np.concatenate([ops[0] for ops, _ in testfloat.cases("f16_mul")])
    assert testfloat.count("f16_mul") == a.size == 6 * 88 * 88
    codes = set(a.tolist())
    for c in (0x0000, 0x8000, 0x0001, 0x03FF, 0x0400, 0x3C00, 0x3C01, 0x7BFF, 0x7C00, 0xFC00,
              0x7C01, 0x7FFF, 0xFFFE):
        assert c in codes, hex(c)


def test_n_beyond_the_level_starts_the_sequence_again():
    total = testfloat.count("e2m1_sqrt")
    first = list(testfloat.generate("e2m1_sqrt", n=total))
    more = list(testfloat.generate("e2m1_sqrt", n=2 * total))
    assert len(more) >= len(first) and more[:len(first)] == first


def test_stochastic_rounding_writes_its_random_bits_after_the_operands(capsys, monkeypatch):
    lines = gen(capsys, "f16_add", "--rounding", "sr", "--sr-bits", "8", "-n", "300")
    assert all(len(x.split()) == 5 and len(x.split()[2]) == 2 for x in lines)
    # 1 + 2**-24 with random bits r: rounds up exactly when r is high enough
    # (the discarded part 2**-24 is 2**-14 of FP16's ulp at 1; with 8 bits it
    # never carries) and the same line with a changed random column differs
    status, out, _ = ver(capsys, monkeypatch, ["3C00 0001 FF 3C00 01"], "f16_add",
                         "--rounding", "sr", "--sr-bits", "8")
    assert status == 0, out
    # 1 + 2**-11 (half an ulp): r >= 128 of 256 carries to 1 + 2**-10
    assert ver(capsys, monkeypatch, ["3C00 1000 80 3C01 01"], "f16_add", "--rounding", "sr",
               "--sr-bits", "8")[0] == 0
    status, out, _ = ver(capsys, monkeypatch, ["3C00 1000 7F 3C01 01"], "f16_add",
                         "--rounding", "sr", "--sr-bits", "8")
    assert status == 1 and "random   0x7F" in out


def test_gen_list_names_operations_of_every_format(capsys):
    names = gen(capsys, "-list")
    for name in ("f16_add", "f32_mulAdd", "bf16_mul", "e4m3_add", "f32_to_e5m2",
                 "e4m3_to_f32", "f16_lt_quiet", "f16_roundToInt", "i32_to_e2m1", "e8m0_sqrt"):
        assert name in names


def test_gen_stops_quietly_when_its_reader_goes_away(tmp_path):
    # `gen | head -2`: two lines, no traceback, no error status
    r = subprocess.run(f"{sys.executable} -m fpsim gen e4m3_add -level 2 | head -2",
                       shell=True, capture_output=True, text=True, timeout=120)
    assert r.stdout.count("\n") == 2 and r.stderr == ""


# -- what ver reports ------------------------------------------------------------------------

def test_ver_by_hand_lines(capsys, monkeypatch):
    good = ["38 40 40 00", "3C00 4000 4000 00"]
    assert ver(capsys, monkeypatch, good[:1], "e4m3_mul")[0] == 0
    assert ver(capsys, monkeypatch, ["3C00 4000 4200 00"], "f16_add")[0] == 0  # 1 + 2 = 3
    # 1 + 2**-24: inexact (flags 01), result 1
    status, out, _ = ver(capsys, monkeypatch, ["3C00 0001 3C00 00"], "f16_add")
    assert status == 1
    assert "line 1: 3C00 0001 3C00 00   (the flags differ)" in out
    assert "expected 0x3C00" in out and "flags 01 inexact" in out and "flags 00" in out
    assert "1 of 1 lines differ" in out


def test_ver_decodes_offenders_field_by_field(capsys, monkeypatch):
    status, out, _ = ver(capsys, monkeypatch, ["# a comment", "", "3C00 4000 4400 00"],
                         "f16_add")
    assert status == 1
    assert "line 3:" in out  # counted from the top of the input, comments included
    assert "s e f 0 01111 0000000000" in out and "1.0" in out          # a = 1
    assert "s e f 0 10000 0000000000" in out and "2.0" in out          # b = 2
    assert "expected 0x4200" in out and "s e f 0 10000 1000000000" in out  # 3
    assert "actual   0x4400" in out and "4.0" in out


def test_ver_json_report(capsys, monkeypatch):
    status, out, _ = ver(capsys, monkeypatch, ["38 40 48 00", "38 40 40 00"], "e4m3_mul",
                         "--json")
    assert status == 1
    r = json.loads(out)
    assert (r["lines"], r["agree"], r["differ"], r["result_mismatches"]) == (2, 1, 1, 1)
    o = r["offenders"][0]
    assert o["line"] == 1 and o["expected"]["bits"] == "0x40" and o["actual"]["bits"] == "0x48"
    assert o["operands"]["a"]["value"] == "1.0" and o["differs"] == "result"


def test_any_nan_agrees_unless_a_policy_is_named(capsys, monkeypatch):
    # inf - inf: invalid, the default NaN 0x7E00 (ieee); a device gives 0xFE00
    line = ["7C00 7C00 FE00 10"]
    assert ver(capsys, monkeypatch, line, "f16_sub")[0] == 0
    status, out, _ = ver(capsys, monkeypatch, line, "f16_sub", "--nan", "ieee")
    assert status == 1 and "NaNs by code, ieee" in out
    assert ver(capsys, monkeypatch, line, "f16_sub", "-checkNaNs")[0] == 1
    # x86's default NaN is negative
    assert ver(capsys, monkeypatch, line, "f16_sub", "--nan", "x86")[0] == 0
    # a NaN against a number is a mismatch in either case
    assert ver(capsys, monkeypatch, ["7C00 7C00 7BFF 10"], "f16_sub")[0] == 1


def test_no_flags_takes_lines_with_or_without_the_field(capsys, monkeypatch):
    lines = ["3C00 0001 3C00", "3C00 0001 3C00 00", "3C00 0001 3C00 1F"]
    status, out, _ = ver(capsys, monkeypatch, lines, "f16_add", "--no-flags")
    assert status == 0 and "flags not checked" in out
    status, _, _ = ver(capsys, monkeypatch, ["3C00 0001 3C01"], "f16_add", "--no-flags")
    assert status == 1
    lines = gen(capsys, "bf16_div", "-n", "50", "--no-flags")
    assert all(len(x.split()) == 3 for x in lines)
    assert ver(capsys, monkeypatch, lines, "bf16_div", "--no-flags")[0] == 0


def test_a_format_without_nan_has_no_result_for_an_invalid_operation(capsys, monkeypatch):
    # E2M1 0/0 and sqrt(-1): no NaN to deliver; gen leaves them out, ver
    # reports them as not checked
    lines = gen(capsys, "e2m1_div", "-level", "2")
    assert len(lines) == 256 - 4  # the pairs of +-0 left out
    status, out, _ = ver(capsys, monkeypatch, ["0 8 0 10"], "e2m1_div")
    assert status == 0 and "not checked          1" in out


def test_ver_reads_a_file_and_offenders_are_bounded(capsys, tmp_path):
    lines = [f"{a:02X} 38 {a ^ 1:02X} 00" for a in range(0x10, 0x30)]  # x*1 off by one bit
    path = tmp_path / "device.txt"
    path.write_text("\n".join(lines) + "\n")
    status = main(["ver", "e4m3_mul", str(path), "--offenders", "3"])
    out, _ = capsys.readouterr()
    assert status == 1 and "32 of 32 lines differ" in out
    assert out.count("  line ") == 3 and "the first 3 offenders" in out


def test_ignored_generation_options_let_gen_and_ver_share_an_option_list(capsys, monkeypatch):
    opts = ["-level", "2", "-seed", "5", "-n", "100", "-rmax", "-tininessbefore"]
    lines = gen(capsys, "e5m2_mul", *opts)
    assert ver(capsys, monkeypatch, lines, "e5m2_mul", *opts)[0] == 0


# -- bad input -------------------------------------------------------------------------------

def fail(capsys, monkeypatch, argv: list[str], stdin: str = "") -> str:
    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    status = main(argv)
    out, err = capsys.readouterr()
    assert status == 2, (out, err)
    assert out == "" and err.count("\n") == 1 and err.startswith("fpsim: error: "), err
    return err


@pytest.mark.parametrize("argv, words", [
    (["gen", "f16_frobnicate"], "unknown operation 'f16_frobnicate'; accepted"),
    (["gen", "q7_add"], "unknown format 'q7'"),
    (["gen", "f128_add"], "no binary128"),
    (["gen", "f16_to_i32"], "no conversion to an integer format"),
    (["gen", "i32_add"], "integer formats have conversions to a float format only"),
    (["gen"], "missing OP"),
    (["gen", "f16_add", "-bogus"], "unrecognized arguments: -bogus"),
    (["gen", "f16_add", "--frobnicate"], "unrecognized arguments: --frobnicate"),
    (["gen", "f16_add", "-level", "3"], "-level 3: accepted 1 or 2"),
    (["gen", "f16_add", "-n", "-5"], "-n -5: accepted an integer >= 0"),
    (["gen", "f16_add", "-seed", "-1"], "-seed -1: accepted an integer >= 0"),
    (["gen", "f16_add", "--rounding", "sideways"], "unknown rounding mode 'sideways'"),
    (["gen", "f16_add", "-rmin", "-rmax"], "not allowed with argument"),
    (["gen", "f16_add", "--nan", "mips"], "mips"),
    (["gen", "f16_add", "--rounding", "sr", "--sr-bits", "0"], "sr_bits"),
    (["ver", "f16_add", "/nonexistent/device.txt"], "input file not found: /nonexistent"),
    (["ver", "f16_add", "--offenders", "-1"], "--offenders -1"),
    (["ver", "nonsense"], "unknown operation 'nonsense'"),
])
def test_bad_arguments_exit_2_with_one_line(capsys, monkeypatch, argv, words):
    assert words in fail(capsys, monkeypatch, argv)


@pytest.mark.parametrize("op, text, words", [
    ("f16_add", "3C00 4000 4200 00\n3C00 4000 00\n",
     "line 2: f16_add: 3 fields, expected 4 (a b result flags)"),
    ("f16_add", "3C00 4000 4200 00 00\n", "line 1: f16_add: 5 fields, expected 4"),
    ("f16_add", "# header\n3C00 4G00 4200 00\n", "line 2: field 2 (b) '4G00' is not hexadecimal"),
    ("f16_add", "3C00 0x4000 4200 00\n", "line 1: field 2 (b) '0x4000' is not hexadecimal"),
    ("f16_add", "3C00 -400 4200 00\n", "line 1: field 2 (b) '-400' is not hexadecimal"),
    ("e4m3_add", "38 140 40 00\n", "line 1: field 2 (b) 0x140 is out of range for e4m3: "
                                   "accepted 0x0..0xFF"),
    ("e2m1_add", "2 2 14 00\n", "line 1: field 3 (result) 0x14 is out of range for e2m1"),
    ("f16_add", "3C00 4000 4200 20\n", "line 1: field 4 (flags) 0x20 is out of range for "
                                       "TestFloat's flags"),
    ("f16_lt", "3C00 4000 2 00\n", "line 1: field 3 (result) 0x2 is out of range for a "
                                   "comparison"),
    ("f16_add", "", "no lines to check in stdin"),
    ("f16_add", "\n# only a comment\n", "no lines to check"),
    ("f16_add", "3C00 4000 4200 00\n" + "0" * 5000 + "\n", "line 2: longer than 4,096"),
])
def test_malformed_lines_name_their_number(capsys, monkeypatch, op, text, words):
    assert words in fail(capsys, monkeypatch, ["ver", op], stdin=text)


def test_sr_lines_need_their_random_column(capsys, monkeypatch):
    err = fail(capsys, monkeypatch, ["ver", "f16_add", "--rounding", "sr", "--sr-bits", "4"],
               stdin="3C00 0001 3C00 01\n")
    assert "4 fields, expected 5 (a b random result flags)" in err
    err = fail(capsys, monkeypatch, ["ver", "f16_add", "--rounding", "sr", "--sr-bits", "4"],
               stdin="3C00 0001 1F 3C00 01\n")
    assert "field 3 (random) 0x1F is out of range for sr_bits=4" in err


def test_a_directory_is_refused_in_one_line(capsys, monkeypatch, tmp_path):
    assert "not a regular file" in fail(capsys, monkeypatch, ["ver", "f16_add", str(tmp_path)])


def test_bad_input_in_a_fresh_process_is_one_line_and_no_traceback(tmp_path):
    r = subprocess.run([sys.executable, "-m", "fpsim", "ver", "f16_add"], input="3C00 zz 1 00\n",
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stdout == "" and "Traceback" not in r.stderr
    assert r.stderr == "fpsim: error: line 1: field 2 (b) 'zz' is not hexadecimal\n"
