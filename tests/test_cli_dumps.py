"""``python -m fpsim diff`` and ``python -m fpsim ref`` on files.

Golden outputs written by ``ref`` are checked against numpy computing the
same operation (float16 elementwise arithmetic is correctly rounded; an FP32
accumulation of FP16 products is exact for these small integers), never
against fpsim itself.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest

from fpsim.cli import main


def run(capsys, *argv):
    status = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return status, out, err


@pytest.fixture
def dumps(tmp_path):
    rng = np.random.default_rng(3)
    expected = rng.uniform(-10, 10, 1000).astype(np.float16)
    actual = expected.copy()
    actual.view(np.uint16)[17] += 1
    paths = {"expected": tmp_path / "expected.bin", "actual": tmp_path / "actual.bin",
             "same": tmp_path / "same.bin"}
    expected.tofile(paths["expected"])
    actual.tofile(paths["actual"])
    expected.tofile(paths["same"])
    return paths, actual, expected


def test_diff_exit_status_0_when_identical(capsys, dumps):
    paths, _, _ = dumps
    status, out, err = run(capsys, "diff", paths["same"], paths["expected"], "--fmt", "fp16")
    assert (status, err) == (0, "")
    assert "OK" in out and re.search(r"bit-exact +1000\n", out)


def test_diff_exit_status_1_and_the_offender(capsys, dumps):
    paths, actual, expected = dumps
    status, out, _ = run(capsys, "diff", paths["actual"], paths["expected"], "--fmt", "fp16")
    assert status == 1
    assert "MISMATCH" in out and "17" in out
    status, _, _ = run(capsys, "diff", paths["actual"], paths["expected"], "--fmt", "fp16",
                       "--max-ulp", "1")
    assert status == 0


def test_diff_json_parses_with_the_documented_keys(capsys, dumps):
    paths, actual, expected = dumps
    status, out, _ = run(capsys, "diff", paths["actual"], paths["expected"], "--fmt", "fp16",
                         "--json")
    d = json.loads(out)
    assert status == 1 and d["beyond_tolerance"] == 1 and d["max_ulp_index"] == [17]
    o = d["offenders"][0]
    assert o["actual"]["bits"] == hex(int(actual.view(np.uint16)[17]))
    assert o["expected"]["bits"] == hex(int(expected.view(np.uint16)[17]))


def test_diff_big_endian_dumps(capsys, tmp_path):
    values = np.float32([1.0, -2.5, np.inf])
    big = tmp_path / "big.bin"
    values.astype(">f4").tofile(big)
    np.save(tmp_path / "little.npy", values)
    status, _, _ = run(capsys, "diff", big, tmp_path / "little.npy", "--fmt", "fp32",
                       "--byteorder", "big")
    assert status == 0
    status, _, _ = run(capsys, "diff", big, tmp_path / "little.npy", "--fmt", "fp32")
    assert status == 1


def test_diff_npy_files_carry_their_format(capsys, tmp_path):
    a = np.array([1.0, 448.0], ml_dtypes.bfloat16)
    np.save(tmp_path / "a.npy", np.float16(a.astype(np.float32)))
    np.save(tmp_path / "b.npy", np.float16([1.0, 448.0]))
    status, out, _ = run(capsys, "diff", tmp_path / "a.npy", tmp_path / "b.npy")
    assert status == 0 and "fp16" in out


@pytest.mark.parametrize("case, message", [
    ("missing", "ACTUAL file not found"),
    ("odd", "is 7 bytes, not a multiple of fp16's 2-byte elements"),
    ("length", "length mismatch: ACTUAL"),
    ("nofmt", "is a raw dump: give its format with --fmt"),
    ("badfmt", "--fmt: unknown format 'fp9'"),
    ("byteorder", "byte order 'middle': accepted: little, big"),
    ("notnpy", "is not a readable .npy file"),
    ("codes", "holds integer codes: give their format with --fmt"),
])
def test_diff_bad_input_one_line_exit_2(capsys, tmp_path, dumps, case, message):
    paths, _, _ = dumps
    expected = paths["expected"]
    odd = tmp_path / "odd.bin"
    odd.write_bytes(b"\0" * 7)
    short = tmp_path / "short.bin"
    np.float16([1, 2]).tofile(short)
    bad_npy = tmp_path / "bad.npy"
    bad_npy.write_bytes(b"not an npy file")
    codes = tmp_path / "codes.npy"
    np.save(codes, np.uint16([1, 2]))
    argv = {
        "missing": [tmp_path / "nope.bin", expected, "--fmt", "fp16"],
        "odd": [expected, odd, "--fmt", "fp16"],
        "length": [short, expected, "--fmt", "fp16"],
        "nofmt": [short, expected],
        "badfmt": [short, expected, "--fmt", "fp9"],
        "byteorder": [short, expected, "--fmt", "fp16", "--byteorder", "middle"],
        "notnpy": [bad_npy, expected, "--fmt", "fp16"],
        "codes": [codes, codes],
    }[case]
    status, out, err = run(capsys, "diff", *argv)
    assert status == 2 and out == ""
    assert message in err and err.count("\n") == 1 and err.startswith("fpsim: error: ")


def test_cli_errors_never_show_a_traceback(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "fpsim", "diff", str(tmp_path / "a"),
                           str(tmp_path / "b"), "--fmt", "fp16"], capture_output=True, text=True)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().count("\n") == 0


def test_ref_matmul_writes_the_golden_file(capsys, tmp_path):
    rng = np.random.default_rng(5)
    x = rng.integers(-8, 9, (6, 40)).astype(np.float16)
    y = rng.integers(-8, 9, (40, 3)).astype(np.float16)
    x.tofile(tmp_path / "x.bin")
    y.tofile(tmp_path / "y.bin")
    status, out, err = run(capsys, "ref", "matmul", "--fmt", "fp16", "--shape", "6x40",
                           tmp_path / "x.bin", tmp_path / "y.bin", tmp_path / "gold.bin")
    assert (status, err) == (0, "")
    gold = np.fromfile(tmp_path / "gold.bin", np.float16).reshape(6, 3)
    # Integer products and sums below 2**11: every step exact.
    assert np.array_equal(gold, (x.astype(np.float64) @ y.astype(np.float64)).astype(np.float16))
    # and the device's output diffs clean against it
    gold.tofile(tmp_path / "device.bin")
    assert run(capsys, "diff", tmp_path / "device.bin", tmp_path / "gold.bin",
               "--fmt", "fp16")[0] == 0


@pytest.mark.parametrize("op, numpy_op", [("add", np.add), ("mul", np.multiply),
                                          ("div", np.divide)])
def test_ref_elementwise_matches_numpy_float16(capsys, tmp_path, op, numpy_op):
    rng = np.random.default_rng(9)
    x = rng.uniform(-100, 100, 500).astype(np.float16)
    y = rng.uniform(0.5, 100, 500).astype(np.float16)
    np.save(tmp_path / "x.npy", x)
    y.tofile(tmp_path / "y.bin")
    status, _, err = run(capsys, "ref", op, tmp_path / "x.npy", tmp_path / "y.bin",
                         tmp_path / "out.npy", "--fmt", "fp16")
    assert (status, err) == (0, "")
    out = np.load(tmp_path / "out.npy")
    assert out.dtype == np.float16
    assert np.array_equal(out.view(np.uint16), numpy_op(x, y).view(np.uint16))


def test_ref_cast_to_e4m3_saturating_writes_codes(capsys, tmp_path):
    x = np.float32([1.0, 500.0, -1e6, 0.3])
    x.tofile(tmp_path / "x.bin")
    status, _, _ = run(capsys, "ref", "cast", "--fmt", "fp32", "--out-fmt", "e4m3",
                       "--saturate", tmp_path / "x.bin", tmp_path / "y.bin")
    assert status == 0
    got = np.fromfile(tmp_path / "y.bin", np.uint8)
    want = np.clip(x, -448, 448).astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
    assert np.array_equal(got, want)


def test_ref_sum_with_declared_accumulation(capsys, tmp_path):
    x = np.full((2, 4096), 0.1, np.float16)
    x.tofile(tmp_path / "x.bin")
    for order, want in (("sequential", 256.0), ("pairwise", 409.5)):
        status, _, _ = run(capsys, "ref", "sum", "--fmt", "fp16", "--shape", "2x4096",
                           "--accumulate", "fp16", "--order", order,
                           tmp_path / "x.bin", tmp_path / "s.bin")
        assert status == 0
        # 0.1 in FP16 is 0.0999755859375; a sequential FP16 running sum
        # stops growing at 256 (half an ULP there is 0.125 > 0.0999...).
        assert np.fromfile(tmp_path / "s.bin", np.float16).tolist() == [want, want]


def test_ref_list(capsys):
    status, out, _ = run(capsys, "ref", "list")
    assert status == 0 and "matmul" in out and "softmax" in out


@pytest.mark.parametrize("argv, message", [
    (["ref", "nope", "--fmt", "fp16", "a", "b"], "unknown operator 'nope'"),
    (["ref", "add", "--fmt", "fp16", "a", "b"], "add takes 2 input files and an output file"),
    (["ref", "exp", "a", "b"], "input 1 file not found: a"),
    (["ref", "exp", "--fmt", "fp16", "--accumulate", "fp16", "a", "b"],
     "exp does not take --accumulate"),
    (["ref", "cast", "--fmt", "fp16", "a", "b"], "cast needs the output format"),
    (["ref", "sum", "--fmt", "fp16", "--order", "blocked:x", "a", "b"], "order 'blocked:x'"),
    (["ref", "sum", "--fmt", "fp16", "--shape", "2y3", "a", "b"], "shape '2y3'"),
    (["ref", "sum", "--fmt", "fp16", "missing.bin", "out.bin"], "input 1 file not found"),
    (["ref", "sum", "--fmt", "fp16", "a", "b", "--bogus"], "unrecognized arguments: --bogus"),
])
def test_ref_bad_input_one_line_exit_2(capsys, argv, message):
    status, out, err = run(capsys, *argv)
    assert status == 2 and message in err and err.count("\n") == 1


def test_diff_review_findings(capsys, tmp_path):
    """Inputs that once passed or failed wrongly: values outside the format,
    .npy files of different shapes, codes of the wrong width."""
    np.save(tmp_path / "inf.npy", np.float32([np.inf, 0, 0, 0]))
    np.save(tmp_path / "nan.npy", np.float32([np.nan, 0, 0, 0]))
    status, _, err = run(capsys, "diff", tmp_path / "inf.npy", tmp_path / "nan.npy",
                         "--fmt", "e8m0")
    assert status == 2 and f"ACTUAL {tmp_path / 'inf.npy'} (float32) holds values that are " \
        "not e8m0 values" in err and "give --fmt" in err
    np.save(tmp_path / "a.npy", np.float16([1, 2, 3, 4]))
    np.save(tmp_path / "b.npy", np.float16([1, 2, 3, 4]).reshape(2, 2))
    status, _, err = run(capsys, "diff", tmp_path / "a.npy", tmp_path / "b.npy")
    assert status == 2 and "shape mismatch" in err
    np.save(tmp_path / "e4.npy", np.array([1.0, 2.0], ml_dtypes.float8_e4m3fn))
    status, _, err = run(capsys, "diff", tmp_path / "e4.npy", tmp_path / "e4.npy",
                         "--fmt", "bf16")
    assert status == 2 and "holds 1-byte codes; bf16 codes take 2 bytes" in err
    status, out, _ = run(capsys, "diff", tmp_path / "e4.npy", tmp_path / "e4.npy",
                         "--fmt", "e4m3")
    assert status == 0
    status, _, err = run(capsys, "diff", tmp_path / "a.npy", tmp_path / "nan.npy")
    assert status == 2 and "ACTUAL" in err and "EXPECTED" in err and "give --fmt" in err


def test_ref_review_findings(capsys, tmp_path):
    np.uint8([0x20, 0x21]).tofile(tmp_path / "x.bin")
    status, _, err = run(capsys, "ref", "sum", "--fmt", "fp16", "--compute", "fp32",
                         tmp_path / "x.bin", tmp_path / "o.bin")
    assert status == 2 and "it takes: --accumulate, --out-fmt, --order" in err
    status, _, err = run(capsys, "ref", "relu", "--fmt", "e2m1", tmp_path / "x.bin",
                         tmp_path / "o.bin")
    assert status == 2 and "input 1" in err and "out of range for e2m1" in err
    if __import__("os").path.exists("/dev/full"):
        # a device is refused as an output (tests/test_hostile_round3_files.py
        # holds a full disk to its rule)
        np.float16([1.0]).tofile(tmp_path / "h.bin")
        status, _, err = run(capsys, "ref", "relu", "--fmt", "fp16", tmp_path / "h.bin",
                             "/dev/full")
        assert status == 2 and "output /dev/full is a character device" in err


@pytest.mark.parametrize("scheduler", [[], ["--scheduler", "local"]])
def test_diff_fortran_ordered_npy_files_in_c_order(capsys, tmp_path, scheduler):
    """A .npy file saved in Fortran order holds its elements column by
    column; the report indexes them as numpy does (C order), in this
    process and on a scheduler alike."""
    if scheduler:
        pytest.importorskip("dask")
    golden = np.arange(60, dtype=np.float16).reshape(3, 4, 5)
    device = golden.copy()
    bits = device.view(np.uint16)
    bits[2, 0, 1] += 1   # flat C index 41
    bits[0, 3, 4] += 3   # flat C index 19
    np.save(tmp_path / "device.npy", np.asfortranarray(device))
    np.save(tmp_path / "golden.npy", golden)
    assert np.load(tmp_path / "device.npy").flags.f_contiguous
    status, out, err = run(capsys, "diff", tmp_path / "device.npy", tmp_path / "golden.npy",
                           "--json", *scheduler)
    d = json.loads(out)
    assert (status, err) == (1, "")
    assert d["ulp_mismatch"] == 2 and d["exact"] == 58 and d["max_ulp"] == 3
    assert [o["index"] for o in d["offenders"]] == [[0, 3, 4], [2, 0, 1]]
