"""``python -m fpsim probe``: the table, --json, and bad input (exit 2, one
line on stderr).  The kernels are in tests/probe_kernels.py; what they should
show is read off their definitions (the H100 FP16 instruction: k=16, 2 extra
bits, truncation; a float32 loop: one product at a time, nearest even)."""

from __future__ import annotations

import json

import pytest

from fpsim.cli import main


def run(capsys, *argv):
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_probe_prints_the_table_and_the_matching_gpus(capsys):
    status, out, err = run(capsys, "probe", "--against", "probe_kernels:h100_fp16",
                           "--fmt", "fp16")
    assert status == 0 and err == ""
    lines = out.splitlines()
    assert lines[0].startswith("fpsim probe: fp16 -> fp32, called with K = 16")
    rows = {line.split()[0]: line.split()[1] for line in lines[1:] if line.startswith("  ")
            and len(line.split()) > 1}
    assert rows["k"] == "16" and rows["extra_bits"] == "2" and rows["rounding"] == "rtz"
    assert rows["c_joins"] == "first" and rows["sticky_bit"] == "False"
    assert rows["nan"] == "all_ones"      # inf x 0 gives 0x7fffffff, PTX's canonical NaN
    assert ("model: k=16 aligned extra_bits=2 nan=all_ones rounding=rtz: reproduces every "
            "output") in out
    assert lines[-1] == "matches: h100, h200, b200, rtx-pro-6000"


def test_probe_json_is_one_object_with_the_parameters(capsys):
    status, out, _ = run(capsys, "probe", "--against", "probe_kernels:h100_fp16", "--fmt",
                         "fp16", "--out", "fp32", "--json")
    assert status == 0
    report = json.loads(out)
    assert report["params"]["k"] == 16 and report["params"]["extra_bits"] == 2
    assert report["matches"] == ["h100", "h200", "b200", "rtx-pro-6000"]
    assert report["findings"]["order"]["value"] == "[p0..p15 c]"
    assert report["reproduces"] is True and report["chained"] is False
    assert all({"value", "how", "evidence"} <= set(f) for f in report["findings"].values())


def test_probe_a_gemm_and_a_loop(capsys):
    status, out, _ = run(capsys, "probe", "--against", "probe_kernels:h100_gemm", "--fmt",
                         "fp16", "--shape", "gemm", "--k", "32", "--json")
    report = json.loads(out)
    assert status == 0 and report["chained"] and report["params"]["k"] == 16
    assert report["order"] == "[[p0..p15 c] p16..p31]"
    assert "h100" in report["matches"]
    status, out, _ = run(capsys, "probe", "--against", "probe_kernels:fp32_loop", "--fmt",
                         "fp16", "--max-k", "4")
    assert status == 0
    assert "(((p0 + c) + p1) + p2) + p3)" in out and "matches: none of the fp16 -> fp32" in out


def test_probe_a_library_gemm_without_c(capsys):
    status, out, _ = run(capsys, "probe", "--against", "probe_kernels:scaled_mm_e4m3_e5m2",
                         "--fmt", "e4m3,e5m2", "--shape", "gemm")
    assert status == 0
    assert "fpsim probe: e4m3 x e5m2 -> fp32" in out
    assert "padded with zeros to multiples of 16" in out
    assert "schedule: split_k=1, split_grain=None, promote_every=128" in out
    assert "c_joins=none (fn takes no C)" in out and "matches: h100, h200" in out
    status, _, err = run(capsys, "probe", "--against", "probe_kernels:scaled_mm_e4m3_e5m2",
                         "--fmt", "e4m3,e5m2")
    assert status == 2 and "one format, or two (A's,B's) with --shape gemm" in err


def test_probe_is_listed_in_the_help(capsys):
    status, out, _ = run(capsys, "--help")
    assert status == 0 and "probe" in out and "accumulator parameters" in out
    status, out, _ = run(capsys, "probe", "--help")
    assert status == 0 and "--against" in out and "--shape" in out


@pytest.mark.parametrize("argv, words", [
    (["--against", "probe_kernels:h100_fp16", "--fmt", "fp17"],
     "--fmt: unknown format 'fp17'; did you mean fp16?"),
    (["--against", "probe_kernels:h100_fp16", "--fmt", "fp16", "--out", "e4m3"],
     "out=e4m3; accepted: fp32, fp16, bf16"),
    (["--against", "no_such_module:f", "--fmt", "fp16"],
     "cannot import the candidate 'no_such_module:f'"),
    (["--against", "probe_kernels:missing", "--fmt", "fp16"],
     "'probe_kernels' has no attribute 'missing'"),
    (["--against", "probe_kernels", "--fmt", "fp16"], "name it as 'module:function'"),
    (["--against", "probe_kernels:raises", "--fmt", "fp16"],
     "raised at every K tried (K=1: RuntimeError: device lost)"),
    (["--against", "probe_kernels:wrong_shape", "--fmt", "fp16"],
     "returned shape (1, 2) on the call width probe where (1,) was expected; accepted: "
     "fn(a, b, c) -> d of shape (rows,)"),
    (["--against", "probe_kernels:wrong_dtype", "--fmt", "fp16"],
     "returned dtype float64 on the call width probe; accepted: float32 (fp32 values)"),
    (["--against", "probe_kernels:h100_fp16", "--fmt", "fp16", "--shape", "cols"],
     "invalid choice: 'cols'"),
    (["--fmt", "fp16"], "the following arguments are required: --against"),
])
def test_probe_bad_input_is_one_line_and_exit_2(capsys, argv, words):
    status, out, err = run(capsys, "probe", *argv)
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("fpsim: error: ")
    assert words in err
    assert "Traceback" not in err
