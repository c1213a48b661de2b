"""Check e4m3_mul.v against fpsim on every operand pair (pytest + cocotb + Icarus).

Each simulating test builds one configuration of the design with cocotb's Python
runner, simulates it with Icarus Verilog (e4m3_mul_tb.py applies all 65,536
pairs in both saturation settings and dumps the outputs), then compares the
dump with fpsim's results for the same pairs, bit for bit (NaN codes and the
sign of zero included), with :func:`fpsim.testing.compare`:

* ``test_matches_fpsim[e4m3]``: OUT_FP16 = 0 against ``fpsim.array.mul(a, b,
  fmt="e4m3", saturate=sat)``;
* ``test_matches_fpsim[fp16]``: OUT_FP16 = 1 against the exact product
  rounded once to FP16 (e4m3 -> fp32 is exact, the fp32 product of two E4M3
  values is exact, fp32 -> fp16 rounds once);
* ``test_fp16_products_are_exact``: the claim in the design's header that no
  FP16 result is rounded except on overflow (fpsim's flags; no simulation);
* ``test_broken_variant_is_caught``: the design built with
  E4M3_MUL_BUG_ROUND_HALF_UP must fail the comparison, on exactly the pairs
  where ties-away and ties-to-even differ; its report is printed (``-s``)
  and saved as sim_build/e4m3_bug_round_half_up/report.txt.

Run:  python -m pytest examples/rtl -s      (or: tox -e rtl)
Needs: iverilog (11 or later) on PATH, cocotb >= 2.0, fpsim.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import numpy as np
import pytest

from fpsim import array
from fpsim.rounding import INEXACT, OVERFLOW
from fpsim.testing import Report, compare

HERE = Path(__file__).resolve().parent
BUILD = HERE / "sim_build"
SOURCE = HERE / "e4m3_mul.v"

# name -> (Verilog parameters, Verilog defines, output format)
CONFIGS = {
    "e4m3": ({"OUT_FP16": 0}, {}, "e4m3"),
    "fp16": ({"OUT_FP16": 1}, {}, "fp16"),
    "e4m3_bug_round_half_up": ({"OUT_FP16": 0}, {"E4M3_MUL_BUG_ROUND_HALF_UP": 1}, "e4m3"),
}

CODES = np.arange(256, dtype=np.uint8)
A = np.repeat(CODES, 256).reshape(256, 256)      # A[a, b] = a
B = np.tile(CODES, 256).reshape(256, 256)        # B[a, b] = b

# -- the simulation ----------------------------------------------------------------------------

def simulate(name: str) -> np.ndarray:
    """Build and simulate configuration ``name``; the outputs, ``[sat, a, b]``."""
    if shutil.which("iverilog") is None:
        pytest.fail("Icarus Verilog (iverilog) is not on PATH; install it, e.g. "
                    "`apt-get install iverilog` (Debian/Ubuntu) or `brew install icarus-verilog`")
    from cocotb_tools.runner import get_runner

    parameters, defines, _ = CONFIGS[name]
    build_dir = BUILD / name
    build_dir.mkdir(parents=True, exist_ok=True)
    dump = build_dir / "outputs.npy"
    dump.unlink(missing_ok=True)
    runner = get_runner("icarus")
    start = time.perf_counter()
    runner.build(sources=[SOURCE], hdl_toplevel="e4m3_mul", parameters=parameters,
                 defines=defines, build_dir=build_dir, timescale=("1ns", "1ps"),
                 always=True, log_file=build_dir / "build.log")
    log = build_dir / "sim.log"
    try:
        runner.test(test_module="e4m3_mul_tb", hdl_toplevel="e4m3_mul", build_dir=build_dir,
                    test_dir=HERE, results_xml=str(build_dir / "results.xml"),
                    extra_env={"E4M3_MUL_DUMP": str(dump),
                               "PYTHONPATH": os.pathsep.join(
                                   [str(HERE), os.environ.get("PYTHONPATH", "")])},
                    log_file=log)
    except SystemExit as e:      # the runner exits when the simulation fails
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-40:])
        raise AssertionError(f"simulation of {name} failed ({e}); {log}:\n{tail}") from None
    out = np.load(dump)
    print(f"\n{name}: simulated {out.size} pairs (Icarus + cocotb) in "
          f"{time.perf_counter() - start:.1f} s; log {log.relative_to(HERE)}")
    return out


# -- the golden model --------------------------------------------------------------------------

def golden(fmt: str, sat: int, rounding: str = "rne") -> np.ndarray:
    """fpsim's result for every pair, ``[a, b]``."""
    if fmt == "e4m3":
        return array.mul(A, B, fmt="e4m3", saturate=bool(sat), rounding=rounding)
    # FP16 output: the exact product (in fp32), rounded once to fp16
    product = array.mul(array.convert(A, "e4m3", "fp32"), array.convert(B, "e4m3", "fp32"),
                        fmt="fp32")
    return array.convert(product, "fp32", "fp16", saturate=bool(sat), rounding=rounding)


def check(actual: np.ndarray, fmt: str, sat: int) -> Report:
    """Compare one saturation setting's outputs with fpsim, bit for bit."""
    return compare(actual, golden(fmt, sat), fmt, nan="exact", signed_zero=True, offenders=8)


def operand(code: int) -> str:
    value = float(array.decode(np.array([code], np.uint8), "e4m3")[0])
    return f"0x{code:02x} ({value:.10g})"


def report_text(report: Report, sat: int) -> str:
    """The report's table, with each offender's index written as its operands."""
    text = report.table(index_label="a x b",
                        index_text=lambda o: f"{operand(o.index[0])} x {operand(o.index[1])}")
    return f"sat={sat}: {text}"


# -- the tests ---------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["e4m3", "fp16"])
def test_matches_fpsim(name: str) -> None:
    """The design agrees with fpsim on all 65,536 pairs, in both saturation settings."""
    fmt = CONFIGS[name][2]
    out = simulate(name)
    for sat in (0, 1):
        report = check(out[sat], fmt, sat)
        assert report.ok, report_text(report, sat)
        print(f"sat={sat}: " + report.summary().splitlines()[0]
              + f"; {report.exact} of {report.total} pairs bit-exact")


def test_fp16_products_are_exact() -> None:
    """The design's header: an E4M3 product is exact in FP16 unless it overflows."""
    fa, fb = array.convert(A, "e4m3", "fp32"), array.convert(B, "e4m3", "fp32")
    product, flags = array.mul(fa, fb, fmt="fp32", return_flags=True)
    assert not flags.any()                       # the fp32 product is exact
    _, flags = array.convert(product, "fp32", "fp16", return_flags=True)
    overflow = (flags & OVERFLOW) != 0
    assert ((flags & INEXACT) != 0).tolist() == overflow.tolist()
    assert int(overflow.sum()) == 396            # |a*b| >= 65536: 198 pairs of each sign


def test_broken_variant_is_caught() -> None:
    """The variant that rounds ties away from zero fails, on exactly the ties
    where that differs from ties-to-even, and it agrees with fpsim's ``rna``."""
    name = "e4m3_bug_round_half_up"
    out = simulate(name)
    texts = []
    for sat in (0, 1):
        report = check(out[sat], "e4m3", sat)
        differ = int((golden("e4m3", sat, "rne") != golden("e4m3", sat, "rna")).sum())
        assert not report.ok
        assert report.beyond_tolerance == differ > 0
        # the diagnosis: the broken design is exactly round-to-nearest, ties away
        assert compare(out[sat], golden("e4m3", sat, "rna"), "e4m3", nan="exact").ok
        texts.append(report_text(report, sat))
    text = "\n\n".join(texts)
    (BUILD / name / "report.txt").write_text(text + "\n")
    print("the broken variant is caught (as expected); fpsim's report:\n" + text)
    print("\ndiagnosis: its outputs agree bit for bit with fpsim.array.mul(a, b, fmt='e4m3', "
          "rounding='rna'): it rounds ties away from zero")
