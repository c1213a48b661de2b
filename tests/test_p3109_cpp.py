"""fpsim against the working group's C++ reference implementation of IEEE
P3109 (github.com/awf/p3109-cpp, header-only over MPFR): every table
tools/p3109cpp/dump.cpp writes (add, subtract, multiply and divide over
every pair of codes, sqrt over every code, conversions of a float32 sample;
every eight-bit format, seven rounding modes, three saturation modes).

Optional: the module runs where ``FPSIM_P3109CPP_OUT`` names a dump
directory (``tox -e p3109cpp`` builds the reference and makes one); it is
skipped elsewhere.

The reference follows the Interim Report v3.2.1, and is compared with
fpsim's ``p3109="v3.2.1"``.  Every difference must be one of its two bugs,
or the one rule where it follows v4.0 instead, each counted and printed:

* ``bug: infinite operand under SatFinite``: the reference returns an
  infinity where an operand is infinite, skipping the projection (v3.2.1
  §4.9.4 and v4.0 §4.7.5 l.23-24: SatFinite sends ±inf to ±max);
* ``bug: largest codes of finite formats``: the reference decodes the
  largest-magnitude codes of a finite-domain format as ±inf (v4.0 §4.7.2:
  they are finite), so any result with such an operand or result differs;
* ``v4.0's rule: round to odd beyond max, unsigned extended``: the
  reference gives the largest finite value, as v4.0 §4.7.5 l.40 says;
  v3.2.1's Saturate (§4.9.4) gives +inf there.

Anything else fails the test.
"""

from __future__ import annotations

import collections
import os
import pathlib

import numpy as np
import pytest
from p3109_oracle import INF, NINF, eight_bit_formats, operate

import fpsim
from fpsim import array as fa

OUT = os.environ.get("FPSIM_P3109CPP_OUT")
pytestmark = pytest.mark.skipif(not OUT, reason="FPSIM_P3109CPP_OUT names no dump of the "
                                                "C++ reference (tox -e p3109cpp makes one)")

MODES = {"NearestTiesToEven": "rne", "NearestTiesToAway": "rna", "TowardZero": "rtz",
         "TowardPositive": "rup", "TowardNegative": "rdn", "TowardMaxMagnitude": "raz",
         "ToOdd": "rto"}
SATS = {"SatFinite": True, "SatPropagate": "satpropagate", "OvfInf": "satnone"}
OPS = {"add": "add", "subtract": "sub", "multiply": "mul", "divide": "div"}
FORMATS = {f.name: f for f in eight_bit_formats()}
COUNTS: collections.Counter = collections.Counter()


def _largest_codes(f) -> set[int]:
    """The codes of ±max in a finite-domain format."""
    if f.extended:
        return set()
    return {f.max_code, f.max_code | 0x80} if f.signed else {f.max_code}


def _classify(f, mode: str, sat: str, x, exact, got: int, want: int, operands: list[int]) -> str:
    inf_codes = {c for c in (f.pinf, f.ninf) if c is not None}
    if sat == "SatFinite" and got in inf_codes and any(v in (INF, NINF) for v in x):
        return "bug: infinite operand under SatFinite"
    big = _largest_codes(f)
    if big and (big & set(operands) or want in big or got in big):
        return "bug: largest codes of finite formats"
    if (not f.signed and f.extended and mode == "ToOdd" and sat == "OvfInf"
            and got == f.max_code and want == f.pinf):
        return "v4.0's rule: round to odd beyond max, unsigned extended"
    return "unexplained"


def _fpsim_settings(mode: str, sat: str) -> dict:
    return dict(rounding=MODES[mode], saturate=SATS[sat], p3109="v3.2.1")


def _files(op: str):
    root = pathlib.Path(OUT or ".") / op
    return sorted(root.glob("*/*/*.u8")) if OUT else []


def _check(path: pathlib.Path, op: str) -> None:
    name, mode, sat = path.parts[-3], path.parts[-2], path.stem
    f, fmt = FORMATS[name], fpsim.format(name)
    got = np.fromfile(path, np.uint8).astype(np.int64)
    settings = _fpsim_settings(mode, sat)
    if op == "sqrt":
        a = np.arange(256, dtype=np.uint8)
        want = fa.sqrt(a, fmt=fmt, **settings).astype(np.int64)
        pairs = [(int(c),) for c in a]
    else:
        a = np.repeat(np.arange(256, dtype=np.uint8), 256)
        b = np.tile(np.arange(256, dtype=np.uint8), 256)
        want = getattr(fa, OPS[op])(a, b, fmt=fmt, **settings).astype(np.int64)
        pairs = None
    assert got.size == want.size
    COUNTS["compared"] += got.size
    for i in np.flatnonzero(got != want).tolist():
        operands = list(pairs[i]) if pairs else [i >> 8, i & 255]
        x = [f.decode(c) for c in operands]
        exact = None if op == "sqrt" else operate(OPS[op], *x)
        kind = _classify(f, mode, sat, x, exact, int(got[i]), int(want[i]), operands)
        COUNTS[kind] += 1
        assert kind != "unexplained", (
            f"{op} {name} {mode} {sat} operands {[hex(c) for c in operands]}: reference "
            f"{hex(got[i])}, fpsim {hex(want[i])}")


@pytest.mark.parametrize("op", ["add", "subtract", "multiply", "divide", "sqrt"])
def test_the_reference_differs_only_where_documented(op):
    files = _files(op)
    if not files:
        pytest.skip(f"no {op} tables in {OUT}")
    for path in files:
        _check(path, op)


def test_conversions_from_float32():
    root = pathlib.Path(OUT or ".")
    if not (root / "convert_input.u32").exists():
        pytest.skip(f"no conversion tables in {OUT}")
    values = np.fromfile(root / "convert_input.u32", np.uint32).view(np.float32)
    for path in sorted((root / "convert").glob("*/*/*.u8")):
        name, mode, sat = path.parts[-3], path.parts[-2], path.stem
        f, fmt = FORMATS[name], fpsim.format(name)
        got = np.fromfile(path, np.uint8).astype(np.int64)
        want = fa.encode(values, fmt, **_fpsim_settings(mode, sat)).astype(np.int64)
        COUNTS["compared"] += got.size
        for i in np.flatnonzero(got != want).tolist():
            v = float(values[i])
            x = INF if v == np.inf else NINF if v == -np.inf else v
            kind = _classify(f, mode, sat, [x], x, int(got[i]), int(want[i]), [])
            COUNTS[kind] += 1
            assert kind != "unexplained", (
                f"convert {name} {mode} {sat} {v!r}: reference {hex(got[i])}, fpsim "
                f"{hex(want[i])}")


def test_zz_report_the_counts(capsys):
    """Prints the counts (run last: pytest -s shows them)."""
    if not COUNTS:
        pytest.skip("nothing compared")
    with capsys.disabled():
        print("\nP3109 C++ reference against fpsim:")
        for kind, n in sorted(COUNTS.items()):
            print(f"  {kind}: {n:,}")
    assert COUNTS["unexplained"] == 0
