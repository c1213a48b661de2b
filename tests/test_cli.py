"""``python -m fpsim``: explain, formats, and the handling of bad input.

Expected numbers are derived by hand from the format definitions:
1e-5 / 2**-24 (FP16's smallest subnormal) = 167.77216, which rounds to 168 =
0xA8, so FP16 holds 168 × 2**-24 = 1.0013580322265625e-05, below the smallest
normal 2**-14, with error 0.22784 ulp.
"""

from __future__ import annotations

import json
import subprocess
import sys
from fractions import Fraction

import pytest

from fpsim.cli import main


def run(capsys, *argv):
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_explain_1e5_fp16_shows_the_subnormal_and_flags(capsys):
    status, out, err = run(capsys, "explain", "1e-5", "--fmt", "fp16")
    assert status == 0 and err == ""
    assert "0x00a8 = 1.0013580322265625e-05" in out
    assert "sign 0 | exponent 00000 | fraction 0010101000" in out
    assert "subnormal" in out
    assert "flags      underflow, inexact" in out
    assert "only 8 of 11 significant bits remain" in out
    assert "flushes to 0 under FTZ" in out
    assert "0x00a7" in out and "0x00a9" in out  # the neighbours


def test_explain_json_has_the_documented_keys_and_exact_values(capsys):
    status, out, _ = run(capsys, "explain", "1e-5", "--fmt", "fp16", "--json")
    assert status == 0
    report = json.loads(out)
    for key in ("input", "format", "rounding", "bits", "value", "class", "abs_error",
                "rel_error", "ulp_error", "flags", "next_down", "next_up", "notes"):
        assert key in report
    assert report["bits"] == "0x00a8"
    assert report["value"] == "1.0013580322265625e-05"
    assert report["class"] == "subnormal"
    assert report["flags"] == ["underflow", "inexact"]
    assert report["rounding"] == "rne" and report["format"] == "fp16"
    # errors, exactly: 168/2**24 - 1/10**5
    assert Fraction(report["abs_error"]) == Fraction(168, 2**24) - Fraction(1, 10**5)
    assert Fraction(report["ulp_error"]) == Fraction("0.22784")
    # 167 × 2**-24 and 169 × 2**-24
    assert report["next_down"] == {"bits": "0x00a7", "value": "9.953975677490234375e-06"}
    assert report["next_up"] == {"bits": "0x00a9", "value": "1.0073184967041015625e-05"}


def test_explain_ftz_flushes_and_says_what_it_would_have_been(capsys):
    _, out, _ = run(capsys, "explain", "1e-5", "--fmt", "fp16", "--ftz", "--json")
    report = json.loads(out)
    assert report["bits"] == "0x0000"
    assert report["flags"] == ["underflow", "inexact"]
    assert any("flushed to zero by FTZ" in n and "0x00a8" in n for n in report["notes"])


@pytest.mark.parametrize("argv, bits, words", [
    # 1000 > 464 (the rounding threshold above 448 = 1.75 × 2**8): NaN in E4M3
    (["1000", "--fmt", "e4m3"], "0x7f", "becomes NaN"),
    (["1000", "--fmt", "e4m3", "--saturate"], "0x7e", "clamped to max"),
    # 65520 = 65504 + 16 is the tie between max and 2**16: even is 2**16, overflow
    (["65520", "--fmt", "fp16"], "0x7c00", "becomes inf"),
    # toward zero, 70000 truncates to 69632 = 1.0001 × 2**16 > max: overflow to max
    # (65520 would truncate to 65504 = max itself: no overflow at all)
    (["70000", "--fmt", "fp16", "--rounding", "rtz"], "0x7bff", "becomes max"),
])
def test_explain_overflow_notes(capsys, argv, bits, words):
    status, out, _ = run(capsys, "explain", *argv, "--json")
    report = json.loads(out)
    assert status == 0
    assert report["bits"] == bits
    assert "overflow" in report["flags"]
    assert any(words in n for n in report["notes"])


def test_explain_negative_values_are_not_taken_for_options(capsys):
    status, out, _ = run(capsys, "explain", "-1e-30", "--fmt", "fp16", "--json")
    assert status == 0
    assert json.loads(out)["bits"] == "0x8000"  # -0: underflow keeps the sign
    status, out, _ = run(capsys, "explain", "-inf", "--fmt", "e4m3", "--json")
    assert json.loads(out)["bits"] == "0xff"  # E4M3 has no inf: NaN


def test_explain_bits_decodes_a_code(capsys):
    status, out, _ = run(capsys, "explain", "--bits", "0x3C00", "--fmt", "fp16", "--json")
    report = json.loads(out)
    assert status == 0
    assert report["value"] == "1" and report["class"] == "normal"
    assert report["next_up"] == {"bits": "0x3c01", "value": "1.0009765625"}  # 1 + 2**-10
    assert report["next_down"] == {"bits": "0x3bff", "value": "0.99951171875"}  # 1 - 2**-11
    assert report["flags"] == []


def test_explain_text_for_bits_and_alias_format(capsys):
    status, out, _ = run(capsys, "explain", "--bits", "0x7e", "--format", "float8_e4m3fn")
    assert status == 0
    assert "0x7e = 448" in out and "largest-magnitude finite e4m3" in out


def test_formats_table_lists_every_builtin_format(capsys):
    status, out, _ = run(capsys, "formats")
    assert status == 0
    for name in ("fp64", "fp32", "tf32", "bf16", "fp16", "e5m2", "e4m3", "e4m3fnuz",
                 "e5m2fnuz"):
        assert f"\n{name} " in out
    assert "65504" in out and "448" in out and "57344" in out and "240" in out


def test_formats_json_gives_exact_limits(capsys):
    status, out, _ = run(capsys, "formats", "--json")
    rows = {r["name"]: r for r in json.loads(out)}
    assert rows["fp16"]["max"] == "65504"
    assert Fraction(rows["fp16"]["min_subnormal"]) == Fraction(1, 2**24)
    assert Fraction(rows["fp32"]["max"]) == (2 - Fraction(1, 2**23)) * 2**127
    assert rows["e4m3"]["specials"] == "fn" and rows["e4m3"]["max"] == "448"


@pytest.mark.parametrize("argv, fragment", [
    (["explain", "abc", "--fmt", "fp16"], "could not read 'abc'"),
    (["explain", "1e-5", "--fmt", "fp17"], "unknown format 'fp17'"),
    (["explain", "--bits", "0x10000", "--fmt", "fp16"], "out of range for fp16"),
    (["explain", "--bits", "zz", "--fmt", "fp16"], "--bits 'zz' is not an integer"),
    (["explain", "1", "--rounding", "nearest_odd"], "unknown rounding mode"),
    (["explain", "1", "--tininess", "never"], "unknown tininess"),
    (["explain"], "explain needs a VALUE"),
    (["explain", "1", "--bits", "0x3c00"], "either VALUE or --bits"),
    (["explain", "1", "--bogus"], "unrecognized arguments: --bogus"),
    (["explain", "snan", "--fmt", "e4m3"], "has no signaling NaN"),
    ([], "missing command"),
    (["frobnicate"], "invalid choice"),
])
def test_bad_input_exits_2_with_one_line_on_stderr(capsys, argv, fragment):
    status, out, err = run(capsys, *argv)
    assert status == 2
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("fpsim: error: ")
    assert fragment in err
    assert "Traceback" not in err


def test_module_entry_point_runs_in_a_subprocess():
    ok = subprocess.run([sys.executable, "-m", "fpsim", "explain", "1e-5", "--fmt", "fp16"],
                        capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0 and "0x00a8" in ok.stdout
    bad = subprocess.run([sys.executable, "-m", "fpsim", "explain", "1e-5", "--fmt", "nope"],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2
    assert bad.stderr.count("\n") == 1 and "Traceback" not in bad.stderr
