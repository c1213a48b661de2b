"""``gen`` and ``ver`` (fpsim.testfloat) against independent oracles.

* Berkeley SoftFloat itself (through softfloatpy, the library TestFloat is
  built on) computes the results and flags of the IEEE operations; ``ver``
  must accept its lines in every rounding mode SoftFloat has and both
  tininess modes, and count exactly the lines corrupted afterwards.
* ``gen``'s conversions must agree with SoftFloat (IEEE formats) and with
  ml_dtypes' casts (FP8, FP6, FP4).

The operands come from fpsim's own case generator (they are inputs, not
expectations); every expected result comes from the oracle.
"""

from __future__ import annotations

import math
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
import softfloatpy as sf

import fpsim
from fpsim import testfloat
from fpsim.cli import main

N = 300  # cases per operation, mode and tininess

# SoftFloat's modes (it has no round-to-odd in softfloatpy) and TestFloat's options for them
MODES = {"rne": ("-rnear_even", sf.RoundingMode.NEAR_EVEN),
         "rtz": ("-rminMag", sf.RoundingMode.MIN_MAG),
         "rdn": ("-rmin", sf.RoundingMode.MIN),
         "rup": ("-rmax", sf.RoundingMode.MAX),
         "rna": ("-rnear_maxMag", sf.RoundingMode.NEAR_MAX_MAG)}
TININESS = {"after": ("-tininessafter", sf.TininessMode.AFTER_ROUNDING),
            "before": ("-tininessbefore", sf.TininessMode.BEFORE_ROUNDING)}
TYPES = {"f16": (sf.Float16, 2), "f32": (sf.Float32, 4), "f64": (sf.Float64, 8),
         "bf16": (sf.BFloat16, 2), "i32": (sf.Int32, 4), "i64": (sf.Int64, 8),
         "ui32": (sf.UInt32, 4), "ui64": (sf.UInt64, 8)}
WIDTH = {"f16": 16, "f32": 32, "f64": 64, "bf16": 16}
COMPARISONS = ("eq", "le", "lt", "eq_signaling", "le_quiet", "lt_quiet")
ROUNDED = ("add", "sub", "mul", "div", "sqrt", "mulAdd", "rem", "roundToInt")
CONVERSIONS = ("f16_to_f32", "f16_to_f64", "f32_to_f16", "f32_to_f64", "f64_to_f16",
               "f64_to_f32", "bf16_to_f32", "f32_to_bf16",
               *(f"{i}_to_{f}" for i in ("i32", "i64", "ui32", "ui64") for f in ("f16", "f32",
                                                                                   "f64")))


def sf_value(fmt: str, code: int):
    cls, size = TYPES[fmt]
    return cls.from_bytes(code.to_bytes(size, "big"))


def sf_code(x) -> int:
    return int.from_bytes(x.to_bytes(), "big")


def softfloat_result(name: str, codes: list[int], mode: str, exact: bool) -> tuple[int, int]:
    """(result code, flags) of Berkeley SoftFloat for the operation ``name``."""
    sf.set_exception_flags(0)
    if "_to_" in name:
        a, b = name.split("_to_")
        r = getattr(sf, name)(sf_value(a, codes[0]))
        return sf_code(r), sf.get_exception_flags()
    fmt, op = name.split("_", 1)
    xs = [sf_value(fmt, c) for c in codes]
    if op == "roundToInt":
        r = getattr(sf, f"{fmt}_round_to_int")(xs[0], MODES[mode][1], exact)
    elif op == "mulAdd":
        r = getattr(sf, f"{fmt}_mul_add")(*xs)
    elif op in COMPARISONS:
        return int(getattr(sf, f"{fmt}_{op}")(*xs)), sf.get_exception_flags()
    else:
        r = getattr(sf, f"{fmt}_{op}")(*xs)
    return sf_code(r), sf.get_exception_flags()


def softfloat_lines(name: str, mode: str, tininess: str, exact: bool = False, n: int = N,
                    seed: int = 1) -> list[str]:
    """TestFloat lines of ``name`` with SoftFloat's results: operands from
    fpsim's generator (level 1: the crossed specials, then random codes)."""
    op = testfloat.operation(name)
    sf.set_rounding_mode(MODES[mode][1])
    sf.set_tininess_mode(TININESS[tininess][1])
    digits = [-(-f.width // 4) for f in op.inputs]
    out_digits = 1 if op.output is None else -(-op.output.width // 4)
    lines = []
    for operands, _ in testfloat.cases(op, n=n, seed=seed):
        for codes in zip(*(a.tolist() for a in operands)):
            result, flags = softfloat_result(op.name, list(codes), mode, exact)
            cells = [f"{c:0{d}X}" for c, d in zip(codes, digits)]
            lines.append(" ".join([*cells, f"{result:0{out_digits}X}", f"{flags:02X}"]))
    return lines


def options(mode: str, tininess: str, exact: bool = False) -> list[str]:
    return [MODES[mode][0], TININESS[tininess][0], *(["-exact"] if exact else [])]


def run_ver(capsys, tmp_path, name: str, lines: list[str], argv: list[str]):
    path = tmp_path / f"{name}.txt"
    path.write_text("\n".join(lines) + "\n")
    status = main(["ver", name, str(path), *argv])
    out, err = capsys.readouterr()
    return status, out, err


# -- ver accepts SoftFloat's own results ---------------------------------------------------------

CASES = ([(f"{f}_{op}", exact) for f in ("f16", "f32", "f64") for op in ROUNDED
          for exact in ((False, True) if op == "roundToInt" else (False,))]
         + [(c, False) for c in CONVERSIONS])


@pytest.mark.parametrize("name, exact", CASES, ids=[f"{n}{'-exact' if e else ''}"
                                                    for n, e in CASES])
def test_ver_accepts_softfloats_results_in_every_mode_and_tininess(capsys, tmp_path, name,
                                                                    exact):
    checked = 0
    for mode in MODES:
        for tininess in TININESS:
            lines = softfloat_lines(name, mode, tininess, exact)
            status, out, err = run_ver(capsys, tmp_path, name, lines,
                                       options(mode, tininess, exact))
            assert status == 0, f"{mode} {tininess}:\n{out}{err}"
            assert f"lines                {len(lines):,}" in out and ": OK (" in out
            checked += len(lines)
    assert checked == len(MODES) * len(TININESS) * N


@pytest.mark.parametrize("fmt", ["f16", "f32", "f64"])
@pytest.mark.parametrize("op", COMPARISONS)
def test_ver_accepts_softfloats_comparisons(capsys, tmp_path, fmt, op):
    name = f"{fmt}_{op}"
    lines = softfloat_lines(name, "rne", "after", n=2 * N)
    # the crossed specials hold NaNs of both kinds: the invalid flag is exercised
    assert any(line.endswith(" 10") for line in lines)
    status, out, _ = run_ver(capsys, tmp_path, name, lines, [])
    assert status == 0, out


def _corrupt(lines: list[str], op: testfloat.Operation, results: int, flags: int,
             rng: np.random.Generator) -> list[str]:
    """Flip the last result bit of ``results`` lines whose result is no NaN
    (another NaN would still agree), and one flag bit of ``flags`` other lines."""
    out = list(lines)
    nan = [op.output is not None and op.output.is_nan_code(int(line.split()[-2], 16))
           for line in lines]
    numbers = [i for i in range(len(lines)) if not nan[i]]
    chosen = rng.choice(numbers, results + flags, replace=False).tolist()
    for k, i in enumerate(chosen):
        cells = out[i].split()
        if k < results:
            cells[-2] = f"{int(cells[-2], 16) ^ 1:0{len(cells[-2])}X}"
        else:
            cells[-1] = f"{int(cells[-1], 16) ^ (1 << (k % 5)):02X}"
        out[i] = " ".join(cells)
    return out


@pytest.mark.parametrize("name, mode, tininess", [
    ("f16_add", "rne", "after"), ("f32_mulAdd", "rdn", "before"), ("f64_div", "rup", "after"),
    ("f32_sqrt", "rna", "before"), ("f32_to_f16", "rtz", "before"), ("f16_lt_quiet", "rne",
                                                                      "after"),
])
def test_ver_counts_exactly_the_corrupted_softfloat_lines(capsys, tmp_path, name, mode,
                                                          tininess):
    lines = softfloat_lines(name, mode, tininess)
    check_corrupted_count(capsys, tmp_path, name, lines, mode, tininess, results=4, flags=3,
                          seed=5)


def check_corrupted_count(capsys, tmp_path, name, lines, mode, tininess, *, results, flags,
                          seed, offenders=10):
    """``ver`` on ``lines`` with ``results`` results and ``flags`` flags
    corrupted counts exactly those lines (the CLI's summary and the
    report's offenders)."""
    op = testfloat.operation(name)
    bad = _corrupt(lines, op, results=results, flags=flags, rng=np.random.default_rng(seed))
    total = results + flags
    assert sum(a != b for a, b in zip(lines, bad)) == total
    status, out, err = run_ver(capsys, tmp_path, name, bad, options(mode, tininess))
    assert status == 1 and err == ""
    assert f"{total} of {len(lines):,} lines differ" in out
    assert f"in the result      {results}" in out and f"in the flags only  {flags}" in out
    report = testfloat.verify(name, bad, fpsim.Context(rounding=mode, tininess=tininess),
                              offenders=offenders)
    assert (report.differ, report.result_mismatches, report.flag_mismatches) == (
        total, results, flags)
    wrong = sorted(i + 1 for i, (a, b) in enumerate(zip(lines, bad)) if a != b)
    assert sorted(o["line"] for o in report.offenders) == wrong


# -- gen's conversions against SoftFloat and ml_dtypes ----------------------------------------

def _gen(capsys, argv: list[str]) -> list[str]:
    assert main(["gen", *argv]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    return out.splitlines()


def _same(fmt: fpsim.Format, a: int, b: int) -> bool:
    return a == b or (fmt.is_nan_code(a) and fmt.is_nan_code(b))


@pytest.mark.parametrize("name", ["f16_to_f32", "f32_to_f16", "f64_to_f16", "f64_to_f32",
                                  "f32_to_bf16", "bf16_to_f32", "i64_to_f16", "ui32_to_f32"])
@pytest.mark.parametrize("mode", list(MODES))
def test_gen_conversions_agree_with_softfloat(capsys, name, mode):
    op = testfloat.operation(name)
    sf.set_rounding_mode(MODES[mode][1])
    sf.set_tininess_mode(sf.TininessMode.AFTER_ROUNDING)
    lines = _gen(capsys, [name, MODES[mode][0], "-n", "2000", "-seed", "11"])
    assert len(lines) == 2000
    inexact = 0
    for line in lines:
        a, result, flags = (int(c, 16) for c in line.split())
        expected, expected_flags = softfloat_result(op.name, [a], mode, False)
        assert _same(op.output, result, expected), line
        assert flags == expected_flags, line
        inexact += flags & 1
    assert "_to_f64" in name or "f16_to_f32" in name or "bf16_to_f32" in name or inexact > 50


ML_DTYPES = {"e4m3": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2,
             "e4m3fnuz": ml_dtypes.float8_e4m3fnuz, "e5m2fnuz": ml_dtypes.float8_e5m2fnuz,
             "e3m2": ml_dtypes.float6_e3m2fn, "e2m3": ml_dtypes.float6_e2m3fn,
             "e2m1": ml_dtypes.float4_e2m1fn}
SOURCES = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16}


@pytest.mark.parametrize("src", list(SOURCES))
@pytest.mark.parametrize("dst", list(ML_DTYPES))
def test_gen_conversions_agree_with_ml_dtypes(capsys, src, dst):
    # ml_dtypes casts to nearest even.  Into FP8 it overflows to NaN (E4M3,
    # FNUZ) or inf (E5M2): fpsim's non-saturating conversion.  Into FP6/FP4
    # (no inf, no NaN) it clamps to ±max: fpsim's --saturate.  fpsim leaves
    # out the cases without a result there (a NaN into a format without NaN).
    fmt = fpsim.format(dst)
    argv = [f"{src}_to_{dst}", "-n", "3000", "-seed", "2"]
    if not fmt.has_nan:
        argv.append("--saturate")
    lines = _gen(capsys, argv)
    cells = np.array([[int(c, 16) for c in line.split()] for line in lines], dtype=np.uint64)
    width = {"f32": np.uint32, "f16": np.uint16, "bf16": np.uint16}[src]
    values = cells[:, 0].astype(width).view(SOURCES[src])
    with np.errstate(invalid="ignore"):  # NaN and inf cast into formats without them
        expected = values.astype(ML_DTYPES[dst]).view(np.uint8) & ((1 << fmt.width) - 1)
    got = cells[:, 1]
    same = [_same(fmt, int(a), int(b)) for a, b in zip(got, expected)]
    assert all(same), [lines[i] for i, s in enumerate(same) if not s][:5]
    # the generator reaches the hard cases: exact midpoints between two
    # neighbours of the target (ties), resolved both ways, and overflow
    info = ml_dtypes.finfo(ML_DTYPES[dst])
    with np.errstate(invalid="ignore"):  # signaling NaNs
        wide = values.astype(np.float64).tolist()
    ties = sum(_is_midpoint(abs(v), info) for v in wide if math.isfinite(v))
    assert ties >= 20, ties
    assert (cells[:, 2] & 0x04).any() or dst == "e5m2" and src == "f16"


def _is_midpoint(v: float, info) -> bool:
    """Whether v lies exactly halfway between two adjacent values of the
    target (below its max), from ml_dtypes' finfo of it."""
    if v == 0 or v >= float(info.max):
        return False
    e = max(math.frexp(v)[1] - 1, info.minexp)
    quantum = Fraction(2) ** (e - info.nmant)
    return (Fraction(v) / quantum).denominator == 2


@pytest.mark.parametrize("fmt", ["f16", "f32", "f64"])
@pytest.mark.parametrize("mode", list(MODES))
def test_ver_accepts_softfloats_tininess_on_the_underflow_boundary(capsys, tmp_path, fmt, mode):
    # Products just below the smallest normal 2**emin: a value just below 1
    # (the 32 codes under 1.0) times the 32 smallest normals from 2**emin up.
    # Rounded, some reach 2**emin: tiny before rounding, not after, so the
    # underflow flag depends on the tininess mode; SoftFloat decides it.
    w, m = WIDTH[fmt], {"f16": 10, "f32": 23, "f64": 52}[fmt]
    one = {"f16": 0x3C00, "f32": 0x3F800000, "f64": 0x3FF0000000000000}[fmt]
    name = f"{fmt}_mul"
    digits = w // 4
    sf.set_rounding_mode(MODES[mode][1])
    by_tininess = {}
    for tininess in TININESS:
        sf.set_tininess_mode(TININESS[tininess][1])
        lines = []
        for a in range(one - 32, one):
            for b in range(1 << m, (1 << m) + 32):
                r, f = softfloat_result(name, [a, b], mode, False)
                lines.append(f"{a:0{digits}X} {b:0{digits}X} {r:0{digits}X} {f:02X}")
        status, out, _ = run_ver(capsys, tmp_path, name, lines, options(mode, tininess))
        assert status == 0, out
        by_tininess[tininess] = lines
    differ = sum(a != b for a, b in zip(by_tininess["after"], by_tininess["before"]))
    assert differ > 0 or mode == "rtz" or mode == "rdn"  # toward zero never reaches 2**emin
