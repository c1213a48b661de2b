"""The golden vector files (spec/vectors/, spec/vectors.md).

* the SHA256SUMS manifest matches every file (a vector file changed without
  regenerating the manifest fails here), and lists exactly the files there;
* ``python -m fpsim vectors --check`` regenerates them identically;
* every vector is re-verified through the scalar path (fpsim.arith,
  fpsim.convert) and the array path (fpsim.array), with the line format
  parsed here from its specification, flags mapped from TestFloat's bits by
  the table in spec/vectors.md (in the default run every file of the first
  five formats and, of each other format, every operation in one mode; all
  of them under ``-m exhaustive``);
* independent oracles: the results in the files of the formats added later
  equal gfloat's ``round_float`` (the IEEE P3109 formats, the FNUZ FP8s as
  the P3109 formats of the same values, OCP MX FP6/FP4; every mode, round
  to odd built from gfloat's two directed roundings) and ml_dtypes' casts
  (every ml_dtypes FP8/FP6/FP4 type, ties to even), applied to the exact
  result computed here with Fractions; their inexact, invalid and
  divide-by-zero flags follow from that exact result.
"""

from __future__ import annotations

import hashlib
import math
import re
import shutil
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from gfloat import RoundMode, decode_float, encode_float, round_float
from gfloat.formats import (
    format_info_ocp_e2m1,
    format_info_ocp_e2m3,
    format_info_ocp_e3m2,
    format_info_p3109,
)
from gfloat.types import Domain, Signedness

import fpsim
from fpsim import array

VECTORS = Path(__file__).resolve().parent.parent / "spec" / "vectors"
FILES = sorted(VECTORS.rglob("*.tv"))
# spec/vectors.md: 01 inexact, 02 underflow, 04 overflow, 08 divide-by-zero, 10 invalid
BITS = {fpsim.Flag.INEXACT: 0x01, fpsim.Flag.UNDERFLOW: 0x02, fpsim.Flag.OVERFLOW: 0x04,
        fpsim.Flag.DIVIDE_BY_ZERO: 0x08, fpsim.Flag.INVALID: 0x10}
HEADER = re.compile(r"# format (\S+)  operation (.+?)  rounding (\S+)  tininess after  nan ieee"
                    r"  ftz no  daz no  saturate no$")


def as_testfloat(flags) -> int:
    """fpsim flags (a Flag, or the array path's per-element integers) as
    TestFloat's bitmask."""
    value = flags.value if isinstance(flags, fpsim.Flag) else int(flags)
    return sum(bit for flag, bit in BITS.items() if value & flag.value)


def parse(path: Path):
    lines = path.read_text(encoding="ascii").splitlines()
    m = HEADER.match(lines[1])
    assert m, f"{path}: bad header {lines[1]!r}"
    fmt, op, mode = fpsim.format(m.group(1)), m.group(2), m.group(3)
    rows = [[int(cell, 16) for cell in line.split()] for line in lines
            if line and not line.startswith("#")]
    return fmt, op, mode, np.array(rows, dtype=np.uint64)


def test_manifest_matches_every_file():
    listed = {}
    for line in (VECTORS / "SHA256SUMS").read_text().splitlines():
        digest, name = line.split("  ", 1)
        listed[name] = digest
    on_disk = {str(p.relative_to(VECTORS)): p for p in FILES}
    assert set(listed) == set(on_disk)
    for name, path in on_disk.items():
        assert hashlib.sha256(path.read_bytes()).hexdigest() == listed[name], name
    assert len(FILES) == 1926


MODES = ("rne", "rna", "rtz", "rup", "rdn", "rto")
FIRST = ("fp32", "fp16", "bf16", "e4m3", "e5m2")


def test_every_registered_format_has_vectors():
    """Every format of fpsim.formats() has its folder with every operation
    in every mode, and the conversions from FP32 (from FP64 into FP32; none
    into FP64)."""
    folders = {p.name for p in VECTORS.iterdir() if p.is_dir()}
    assert folders == {f.name for f in fpsim.formats()}
    for f in fpsim.formats():
        names = {p.name for p in (VECTORS / f.name).iterdir()}
        ops = {f"{op}_{m}.tv" for op in ("add", "sub", "mul", "div", "fma", "sqrt")
               for m in MODES}
        src = {"fp64": None, "fp32": "fp64"}.get(f.name, "fp32")
        conv = {f"from_{src}_{m}.tv" for m in MODES} if src else set()
        assert names == ops | conv, f.name
        for name in ("add_rne.tv", "div_rne.tv", f"from_{src}_rup.tv"):
            if (VECTORS / f.name / name).exists():
                rows = parse(VECTORS / f.name / name)[3]
                assert len(rows) == (400 if f.name in FIRST else 100), (f.name, name)


@pytest.mark.parametrize("folder", sorted(p.name for p in VECTORS.iterdir() if p.is_dir()))
def test_regeneration_is_identical(folder, capsys):
    # a format's folder and its manifest lines, regenerated and compared
    from fpsim.cli import main

    status = main(["vectors", "--check", "--out", str(VECTORS), "--formats", folder])
    assert status == 0, capsys.readouterr().out


@pytest.mark.exhaustive
def test_regeneration_of_every_file_is_identical():
    # every file of the manifest at once, as `python -m fpsim vectors --check`
    done = subprocess.run([sys.executable, "-m", "fpsim", "vectors", "--check", "--out",
                           str(VECTORS)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


def test_check_finds_a_changed_file(tmp_path, capsys):
    # --formats fp16: that folder and its manifest lines alone (regenerating
    # all 1,926 files takes seconds; the check is the same for every file).
    from fpsim.cli import main
    copy = tmp_path / "vectors"
    shutil.copytree(VECTORS, copy)
    check = ["vectors", "--check", "--out", str(copy), "--formats", "fp16"]
    assert main(check) == 0
    path = copy / "fp16" / "add_rne.tv"
    text = path.read_text().splitlines()
    last = text[-1].split()
    last[-2] = f"{int(last[-2], 16) ^ 1:04x}"
    path.write_text("\n".join(text[:-1] + [" ".join(last)]) + "\n")
    (copy / "bf16" / "add_rne.tv").unlink()  # another format's problem: not looked at
    capsys.readouterr()
    assert main(check) == 1
    out = capsys.readouterr().out
    assert "differs from what fpsim computes now: fp16/add_rne.tv" in out
    assert "bf16" not in out and "1 problem" in out
    assert main(check[:-1] + ["bf16,fp16"]) == 1
    assert "missing: bf16/add_rne.tv" in capsys.readouterr().out


def test_check_formats_names_what_it_accepts(capsys):
    from fpsim.cli import main
    assert main(["vectors", "--check", "--out", str(VECTORS), "--formats", "fp16,fp17"]) == 2
    err = capsys.readouterr().err
    assert "--formats: no vectors for fp17; accepted: fp32, fp16" in err
    assert main(["vectors", "--out", str(VECTORS), "--formats", "fp16"]) == 2
    assert "--formats selects what --check reads" in capsys.readouterr().err


SCALAR = {"add": fpsim.arith.add, "sub": fpsim.arith.sub, "mul": fpsim.arith.mul,
          "div": fpsim.arith.div, "fma": fpsim.arith.fma, "sqrt": fpsim.arith.sqrt}
ARRAY = {"add": array.add, "sub": array.sub, "mul": array.mul, "div": array.div,
         "fma": array.fma, "sqrt": array.sqrt}


def _sampled(path: Path):
    """The files of the first five formats, and of each later one every
    operation in one mode (a different one per format); the others under
    ``-m exhaustive``."""
    folder = path.parent.name
    order = sorted({p.parent.name for p in FILES})
    mode = MODES[order.index(folder) % len(MODES)]
    if folder in FIRST or path.stem.endswith("_" + mode):
        return path
    return pytest.param(path, marks=pytest.mark.exhaustive)


@pytest.mark.parametrize("path", [_sampled(p) for p in FILES],
                         ids=lambda p: str(p.relative_to(VECTORS)))
def test_vectors_hold_through_the_scalar_and_array_paths(path):
    fmt, op, mode, rows = parse(path)
    operands, results, flags = rows[:, :-2], rows[:, -2], rows[:, -1]
    if op.startswith("convert from "):
        src = fpsim.format(op.removeprefix("convert from "))
        for (a,), r, f in zip(operands.tolist(), results.tolist(), flags.tolist()):
            ctx = fpsim.Context(rounding=mode)
            got = fpsim.convert(src.from_bits(a), fmt, ctx)
            assert (got.bits, as_testfloat(ctx.flags)) == (r, f), (hex(a), path.name)
        if fmt.width <= 32 and src.width <= 64:
            codes, got_flags = array.convert(operands[:, 0].astype(array.code_dtype(src)), src,
                                             fmt, rounding=mode, return_flags=True)
            assert np.array_equal(codes.astype(np.uint64), results)
            assert [as_testfloat(f) for f in got_flags.tolist()] == flags.tolist()
        return
    for row, r, f in zip(operands.tolist(), results.tolist(), flags.tolist()):
        ctx = fpsim.Context(rounding=mode)
        got = SCALAR[op](*(fmt.from_bits(c) for c in row), ctx)
        assert (got.bits, as_testfloat(ctx.flags)) == (r, f), ([hex(c) for c in row], op)
    if fmt.width > 32:  # the array path's arithmetic stops at 32 bits
        return
    dt = array.code_dtype(fmt)
    codes, got_flags = ARRAY[op](*(operands[:, i].astype(dt) for i in range(operands.shape[1])),
                                 fmt=fmt, rounding=mode, return_flags=True)
    assert np.array_equal(codes.astype(np.uint64), results)
    assert [as_testfloat(f) for f in got_flags.tolist()] == flags.tolist()


# -- independent oracles: gfloat and ml_dtypes on the exact results ----------

P3109 = [f for f in fpsim.formats() if f.name.startswith("binary8p")]


def _gfloat_format(name: str):
    """gfloat's description of a format, where gfloat has one of the same
    values, codes and rules (None otherwise)."""
    if name.startswith("binary8p"):
        p, sign, domain = int(name[8]), name[9], name[10]
        return format_info_p3109(8, p, Signedness.Signed if sign == "s" else Signedness.Unsigned,
                                 Domain.Extended if domain == "e" else Domain.Finite)
    # FNUZ FP8 are the finite signed P3109 formats of the same precision,
    # code for code (spec/p3109.md); OCP MX FP6/FP4 saturate (no inf, no NaN).
    return {"e4m3fnuz": format_info_p3109(8, 4, Signedness.Signed, Domain.Finite),
            "e5m2fnuz": format_info_p3109(8, 3, Signedness.Signed, Domain.Finite),
            "e3m2": format_info_ocp_e3m2, "e2m3": format_info_ocp_e2m3,
            "e2m1": format_info_ocp_e2m1}.get(name)


ML_DTYPES = {"e8m0": ml_dtypes.float8_e8m0fnu, "e5m2fnuz": ml_dtypes.float8_e5m2fnuz,
             "e4m3fnuz": ml_dtypes.float8_e4m3fnuz, "e4m3b11fnuz": ml_dtypes.float8_e4m3b11fnuz,
             "e4m3ieee": ml_dtypes.float8_e4m3, "e3m4": ml_dtypes.float8_e3m4,
             "e3m2": ml_dtypes.float6_e3m2fn, "e2m3": ml_dtypes.float6_e2m3fn,
             "e2m1": ml_dtypes.float4_e2m1fn}
GFLOAT_MODES = {"rne": RoundMode.TiesToEven, "rna": RoundMode.TiesToAway,
                "rtz": RoundMode.TowardZero, "rup": RoundMode.TowardPositive,
                "rdn": RoundMode.TowardNegative}


def _decode(name: str, width: int, codes: list[int]) -> list[float]:
    """Values of codes as ml_dtypes reads them (gfloat for the P3109
    formats): exact float64s."""
    if name in ML_DTYPES:
        raw = np.array(codes, dtype=np.uint8)
        return raw.view(ML_DTYPES[name]).astype(np.float64).tolist()
    fi = _gfloat_format(name)
    return [decode_float(fi, c).fval for c in codes]


def _to_odd(q: Fraction, precision: int = 53, emin: int = -1022) -> float:
    """``q`` rounded to ``precision`` bits (float64's by default, float32's
    with 24 and -126) by round to odd: rounding that once more into a format
    of at most ``precision - 2`` bits of precision and a narrower exponent
    range gives the correct rounding of ``q``, in every mode."""
    if q == 0:
        return 0.0
    a = abs(q)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    e = max(e - (Fraction(2) ** e > a), emin) - precision + 1
    n, rest = divmod(a, Fraction(2) ** e)
    n = int(n) | (rest != 0)
    return math.copysign(math.ldexp(n, e), q)


def _sqrt(q: Fraction) -> Fraction:
    """sqrt(q) if it is rational, else a rational in the same open interval
    of relative width below 2^-400 (so that it rounds to odd the same)."""
    n = q.numerator * q.denominator << 800
    r = math.isqrt(n)
    scale = q.denominator << 400
    return Fraction(r, scale) if r * r == n else Fraction(2 * r + 1, 2 * scale)


def _exact(op: str, xs: list[float], mode: str) -> tuple[Fraction | None, float]:
    """The exact result of ``op`` on the values ``xs``: the Fraction (None
    where it is zero, infinite or NaN) and a float64 that rounds as it does
    (rounded to odd; the signed zero by IEEE 754's rules)."""
    if not all(math.isfinite(x) for x in xs) or (op == "div" and xs[1] == 0):
        with np.errstate(all="ignore"):
            a = [np.float64(x) for x in xs]
            r = {"add": lambda: a[0] + a[1], "sub": lambda: a[0] - a[1],
                 "mul": lambda: a[0] * a[1], "div": lambda: a[0] / a[1],
                 "fma": lambda: a[0] * a[1] + a[2], "sqrt": lambda: np.sqrt(a[0])}[op]()
        return None, float(r)
    q = [Fraction(x) for x in xs]
    neg = [math.copysign(1, x) < 0 for x in xs]
    if op in ("add", "sub", "fma"):
        if op == "fma":
            a, a_neg, b, b_neg = q[0] * q[1], neg[0] != neg[1], q[2], neg[2]
        else:
            a, a_neg, b, b_neg = q[0], neg[0], q[1], neg[1]
        if op == "sub":
            b, b_neg = -b, not b_neg
        v = a + b
        if v == 0:  # IEEE 754 6.3: -0 only from two -0 terms, or in rdn
            both = a == 0 and b == 0 and a_neg == b_neg
            return None, -0.0 if (a_neg if both else mode == "rdn") else 0.0
    elif op in ("mul", "div"):
        v = q[0] * q[1] if op == "mul" else q[0] / q[1]
        if v == 0:
            return None, -0.0 if neg[0] != neg[1] else 0.0
    elif q[0] <= 0:  # sqrt: of a negative, NaN; sqrt(-0) = -0
        return None, xs[0] if q[0] == 0 else math.nan
    else:
        v = _sqrt(q[0])
    return v, _to_odd(v)


def _gfloat_round(fi, v: float, mode: str, sat: bool) -> int:
    """The code gfloat gives ``v`` under ``mode`` (round to odd: the one of
    the two directed roundings with an odd code; ±max past it)."""
    if math.isnan(v) or (not fi.is_signed and v < 0):
        return encode_float(fi, math.nan)   # negative into unsigned: the NaN
    if mode != "rto":
        return encode_float(fi, round_float(fi, v, GFLOAT_MODES[mode], sat))
    if abs(v) > fi.max and math.isfinite(v):
        return encode_float(fi, math.copysign(fi.max, v))
    down = encode_float(fi, round_float(fi, v, RoundMode.TowardZero, sat))
    up = encode_float(fi, round_float(
        fi, v, RoundMode.TowardPositive if v > 0 else RoundMode.TowardNegative, sat))
    return down if down == up or down & 1 else up


ADDED_FILES = [p for p in FILES if p.parent.name in ML_DTYPES or _gfloat_format(p.parent.name)]


def _p3109_rule(fi, op, x, v, mode, got, got_value, flags, where) -> bool:
    """The rules the P3109 Interim Report v4.0 adds (the vectors' default,
    ``p3109="v4.0"``; spec/p3109.md), where one applies: x / 0 is NaN with
    INVALID (§4.10.5); a negative value into an unsigned format is rounded
    first (gfloat rounds its magnitude, the direction mirrored), 0 stays 0,
    and else it is 0 toward zero or +inf and the NaN with INVALID otherwise
    (§4.7.5 under SatNone, which the vectors' saturate=False follows for
    negative values), -inf the NaN.  True where a rule applied (checked)."""
    if op == "div" and x[1] == 0:
        assert math.isnan(got_value) and flags & 0x10 and not flags & 0x08, where
        return True
    if fi.is_signed or math.isnan(v) or not v < 0:
        return False
    if math.isinf(v):
        zero = False
    else:
        mirrored = {"rup": "rdn", "rdn": "rup"}.get(mode, mode)
        zero = _gfloat_round(fi, -v, mirrored, sat=False) == 0
    if math.isfinite(v) and (zero or mode in ("rtz", "rup")):
        assert got == 0 and not flags & 0x10 and flags & 0x01, where
    else:
        assert math.isnan(got_value) and flags & 0x10, where
    return True


def test_x_minus_inf_in_an_unsigned_format():
    """-inf, a negative result, is the NaN with INVALID in an unsigned
    format (spec/p3109.md), by the scalar and the array path."""
    f = fpsim.format("binary8p3ue")
    ctx = fpsim.Context()
    got = fpsim.arith.sub(f.from_bits(0x80), f.from_bits(f.inf_code), ctx)
    assert got.is_nan and ctx.flags == fpsim.Flag.INVALID
    codes, flags = fpsim.array.sub(np.uint8([0x80]), np.uint8([f.inf_code]), fmt=f,
                                   return_flags=True)
    assert codes.tolist() == [0xFF] and flags.tolist() == [fpsim.Flag.INVALID.value]


@pytest.mark.parametrize("folder", sorted({p.parent.name for p in ADDED_FILES}))
def test_added_formats_agree_with_gfloat_and_ml_dtypes(folder):
    """Every vector of the format: the result code as gfloat rounds the
    exact result (every mode) and as ml_dtypes casts it (ties to even);
    the inexact, invalid and divide-by-zero flags as the exact result says
    (spec/rounding.md's table of flags)."""
    fi = _gfloat_format(folder)
    ml = ML_DTYPES.get(folder)
    fmt = fpsim.format(folder)
    checked = 0
    for path in sorted((VECTORS / folder).glob("*.tv")):
        _, op, mode, rows = parse(path)
        op = op.split()[0]  # 'convert' from FP32
        rows = rows.tolist()
        for row in rows:
            got, flags = row[-2], row[-1]
            if op == "convert":  # an FP32 code: its value, exactly
                x = [float(np.uint32(row[0]).view(np.float32))]
                q, v = (Fraction(x[0]), x[0]) if math.isfinite(x[0]) and x[0] else (None, x[0])
            else:
                x = _decode(folder, fmt.width, row[:-2])
                q, v = _exact(op, x, mode)
            got_value = _decode(folder, fmt.width, [got])[0]
            where = (path.name, [hex(c) for c in row], v)
            nan_in = any(math.isnan(e) for e in x)
            if fmt.p3109 and not nan_in and _p3109_rule(fi, op, x, v, mode, got, got_value,
                                                        flags, where):
                checked += 1
                continue
            # The NaN: invalid operations, negative values into an unsigned
            # format, zero into one without zero (E8M0).
            want_nan = (math.isnan(v) or (not fmt.signed and v < 0)
                        or (v == 0 and not fmt.has_zero))
            if fi is not None:
                want = _gfloat_round(fi, v, mode, sat=not fmt.has_nan)
                assert got == want or (want_nan and math.isnan(got_value)), where
            if ml is not None and mode == "rne":
                # ml_dtypes casts from float32 (rounded to odd: one rounding)
                with np.errstate(over="ignore"):
                    x32 = np.float32(v if q is None else _to_odd(q, 24, -126))
                    cast = float(np.array([x32]).astype(ml).astype(np.float64)[0])
                if math.isnan(cast) or want_nan:
                    assert math.isnan(got_value) and math.isnan(cast), where
                else:
                    assert got_value == cast, where
            invalid = not nan_in and (want_nan or (op == "convert" and math.isinf(v)
                                                   and not fmt.has_inf))
            by_zero = op == "div" and x[1] == 0 and math.isfinite(x[0]) and x[0] != 0
            if not nan_in:  # (a signaling NaN operand raises INVALID)
                assert bool(flags & 0x10) == invalid, where
            assert bool(flags & 0x08) == by_zero, where
            if q is not None and not want_nan:
                assert bool(flags & 0x01) == (Fraction(got_value) != q
                                              if math.isfinite(got_value) else True), where
            checked += 1
    assert checked >= 4000
