"""The golden vector files (spec/vectors/, spec/vectors.md).

* the SHA256SUMS manifest matches every file (a vector file changed without
  regenerating the manifest fails here), and lists exactly the files there;
* ``python -m fpsim vectors --check`` regenerates them identically;
* every vector is re-verified through the scalar path (fpsim.arith,
  fpsim.convert) and the array path (fpsim.array), with the line format
  parsed here from its specification, flags mapped from TestFloat's bits by
  the table in spec/vectors.md.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

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
    assert len(FILES) == 210


def test_regeneration_is_identical():
    done = subprocess.run([sys.executable, "-m", "fpsim", "vectors", "--check", "--out",
                           str(VECTORS)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


def test_check_finds_a_changed_file(tmp_path):
    copy = tmp_path / "vectors"
    shutil.copytree(VECTORS, copy)
    path = copy / "fp16" / "add_rne.tv"
    text = path.read_text().splitlines()
    last = text[-1].split()
    last[-2] = f"{int(last[-2], 16) ^ 1:04x}"
    path.write_text("\n".join(text[:-1] + [" ".join(last)]) + "\n")
    done = subprocess.run([sys.executable, "-m", "fpsim", "vectors", "--check", "--out",
                           str(copy)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 1 and "differs from what fpsim computes now: fp16/add_rne.tv" \
        in done.stdout


SCALAR = {"add": fpsim.arith.add, "sub": fpsim.arith.sub, "mul": fpsim.arith.mul,
          "div": fpsim.arith.div, "fma": fpsim.arith.fma, "sqrt": fpsim.arith.sqrt}
ARRAY = {"add": array.add, "sub": array.sub, "mul": array.mul, "div": array.div,
         "fma": array.fma, "sqrt": array.sqrt}


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(VECTORS)))
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
    dt = array.code_dtype(fmt)
    codes, got_flags = ARRAY[op](*(operands[:, i].astype(dt) for i in range(operands.shape[1])),
                                 fmt=fmt, rounding=mode, return_flags=True)
    assert np.array_equal(codes.astype(np.uint64), results)
    assert [as_testfloat(f) for f in got_flags.tolist()] == flags.tolist()
