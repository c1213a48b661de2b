"""Golden test vectors: ``python -m fpsim vectors``.

Files of hex operands, hex result and flags, one vector per line, in the
spirit of Berkeley TestFloat's ``testfloat_gen`` output, so that an
implementation in any language can check itself against fpsim without
running Python.  The line format is stated in ``spec/vectors.md``.

The operands are chosen deterministically (a seeded :class:`random.Random`
per file): the format's notable codes crossed with each other, then codes
drawn to make the hard cases likely (operands of nearby exponents for
cancellation, midpoints between the target's neighbours for conversions,
the overflow and underflow boundaries).  Results come from the scalar
golden model (:mod:`fpsim.arith`, :func:`fpsim.convert`), one fresh context
per vector.
"""

from __future__ import annotations

import hashlib
import os
import random
from collections.abc import Callable, Iterator
from pathlib import Path

from . import _files, arith
from ._flagbits import flag_bits
from .context import Context
from .formats import BF16, E4M3, E5M2, FP16, FP32, FP64, Format
from .modes import Flag
from .value import Float, convert

FORMATS = (FP32, FP16, BF16, E4M3, E5M2)
MODES = ("rne", "rna", "rtz", "rup", "rdn", "rto")
OPERATIONS: dict[str, tuple[int, Callable[..., Float]]] = {
    "add": (2, arith.add), "sub": (2, arith.sub), "mul": (2, arith.mul),
    "div": (2, arith.div), "fma": (3, arith.fma), "sqrt": (1, arith.sqrt),
}
PER_FILE = 400
MANIFEST = "SHA256SUMS"

def _notable(fmt: Format) -> list[int]:
    """Codes worth crossing with each other: zeros, subnormal and normal
    boundaries, one and its neighbours, the largest values, infinities and
    NaNs (quiet and signaling where the format has both), of both signs."""
    m = fmt.mantissa_bits
    one = fmt.round(1).bits
    positive = {0, 1, (1 << m) - 1, 1 << m, one, one + 1, one - 1, fmt.round(3).bits,
                fmt.max_code, fmt.max_code - 1}
    if fmt.inf_code is not None:
        positive |= {fmt.inf_code, fmt.inf_code + (1 << (m - 1)), fmt.inf_code + 1}
    elif fmt.default_nan_code is not None:
        positive.add(fmt.default_nan_code & fmt.magnitude_mask)
    codes = sorted(positive)
    return codes + [c | fmt.sign_bit for c in codes]


def _near(rng: random.Random, fmt: Format, code: int) -> int:
    """A code whose exponent is within 3 of ``code``'s (likely cancellation,
    or a sum that rounds)."""
    m = fmt.mantissa_bits
    e = (code >> m) & ((1 << fmt.exponent_bits) - 1)
    e2 = min(max(e + rng.randint(-3, 3), 0), (fmt.max_code >> m))
    sign = rng.choice((0, fmt.sign_bit))
    return min(sign | (e2 << m) | rng.getrandbits(m), sign | fmt.max_code)


def _operands(fmt: Format, arity: int, rng: random.Random) -> Iterator[tuple[int, ...]]:
    notable = _notable(fmt)
    if arity == 1:
        crossed = [(a,) for a in notable]
    elif arity == 2:
        crossed = [(a, b) for a in notable for b in notable]
    else:
        crossed = [(rng.choice(notable), rng.choice(notable), rng.choice(notable))
                   for _ in range(PER_FILE // 4)]
    rng.shuffle(crossed)
    yield from crossed[:PER_FILE // 2]
    for _ in range(PER_FILE - min(len(crossed), PER_FILE // 2)):
        a = rng.getrandbits(fmt.width)
        rest = tuple(_near(rng, fmt, a) if rng.random() < 0.7 else rng.getrandbits(fmt.width)
                     for _ in range(arity - 1))
        yield (a, *rest)


def _conversion_inputs(src: Format, dst: Format, rng: random.Random) -> Iterator[int]:
    """Codes of ``src`` at, and a few ``src`` ULPs around, the midpoints
    between neighbouring ``dst`` values, and the overflow/underflow
    boundaries; then the notable codes of ``src``."""
    ctx = Context(rounding="rtz")
    boundaries = [dst.max + dst.from_bits(dst.max_code).ulp() / 2,
                  dst.min_subnormal / 2, dst.min_normal - dst.min_subnormal / 2]
    for v in boundaries:
        for delta in (-1, 0, 1):
            code = src.round(v, ctx).bits + delta
            yield code
            yield code | src.sign_bit
    yield from _notable(src)
    while True:
        d = rng.getrandbits(dst.width) & dst.magnitude_mask
        if d >= dst.max_code:
            continue
        lo, hi = dst.from_bits(d).value, dst.from_bits(d + 1).value
        code = src.round((lo + hi) / 2, ctx).bits + rng.randint(-2, 2)
        yield code | (src.sign_bit if rng.random() < 0.5 else 0)


def _line(codes: tuple[int, ...], widths: tuple[int, ...], result: Float, flags: Flag,
          out_width: int) -> str:
    cells = [f"{c:0{-(-w // 4)}x}" for c, w in zip(codes, widths)]
    return " ".join([*cells, f"{result.bits:0{-(-out_width // 4)}x}", f"{flag_bits(flags):02x}"])


def _header(fmt: Format, op: str, mode: str, fields: str) -> list[str]:
    return [
        "# fpsim golden vectors (spec/vectors.md); regenerate: python -m fpsim vectors",
        f"# format {fmt.name}  operation {op}  rounding {mode}  tininess after  nan ieee  "
        "ftz no  daz no  saturate no",
        f"# {fields} flags   (hex codes; flags as TestFloat: 01 inexact, 02 underflow, "
        "04 overflow, 08 divide-by-zero, 10 invalid)",
    ]


def operation_file(fmt: Format, op: str, mode: str) -> str:
    """The text of one vector file: ``op`` on operands of ``fmt`` under
    rounding ``mode``."""
    arity, fn = OPERATIONS[op]
    rng = random.Random(f"{fmt.name}-{op}-{mode}")
    names = "abc"[:arity]
    lines = _header(fmt, op, mode, " ".join(names) + " result")
    for codes in _operands(fmt, arity, rng):
        ctx = Context(rounding=mode)
        result = fn(*(fmt.from_bits(c) for c in codes), ctx)
        lines.append(_line(codes, (fmt.width,) * arity, result, ctx.flags, fmt.width))
    return "\n".join(lines) + "\n"


def conversion_file(src: Format, dst: Format, mode: str) -> str:
    """The text of the vector file of conversions from ``src`` to ``dst``."""
    rng = random.Random(f"{src.name}-to-{dst.name}-{mode}")
    lines = _header(dst, f"convert from {src.name}", mode, f"a ({src.name}) result")
    seen: set[int] = set()
    for code in _conversion_inputs(src, dst, rng):
        code &= (1 << src.width) - 1
        if code in seen:
            continue
        seen.add(code)
        ctx = Context(rounding=mode)
        result = convert(src.from_bits(code), dst, ctx)
        lines.append(_line((code,), (src.width,), result, ctx.flags, dst.width))
        if len(seen) == PER_FILE:
            break
    return "\n".join(lines) + "\n"


def files() -> Iterator[tuple[str, Callable[[], str]]]:
    """Every vector file: (relative path, a function that writes its text)."""
    for fmt in FORMATS:
        for op in OPERATIONS:
            for mode in MODES:
                yield (f"{fmt.name}/{op}_{mode}.tv",
                       lambda f=fmt, o=op, m=mode: operation_file(f, o, m))
        src = FP64 if fmt is FP32 else FP32
        for mode in MODES:
            yield (f"{fmt.name}/from_{src.name}_{mode}.tv",
                   lambda s=src, f=fmt, m=mode: conversion_file(s, f, m))


def manifest(directory: Path, names: list[str]) -> str:
    """``sha256sum``-compatible lines for ``names`` under ``directory``."""
    return "".join(f"{hashlib.sha256((directory / n).read_bytes()).hexdigest()}  {n}\n"
                   for n in sorted(names))


def write(directory: Path) -> list[str]:
    """Write every vector file and the manifest under ``directory``; return
    the relative paths written."""
    names = []
    for name, text in files():
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text(), encoding="ascii")
        names.append(name)
    (directory / MANIFEST).write_text(manifest(directory, names), encoding="ascii")
    return names


def check(directory: Path) -> list[str]:
    """The problems found comparing ``directory`` with freshly generated
    vectors and its manifest (empty when it is up to date).  A file there
    that is not a regular file (symlinks followed) raises ``ValueError``:
    only regular files are read, each up to one byte more than expected."""
    problems = []
    digests = []
    for name, text in files():
        expected = text().encode("ascii")
        # The manifest lists what fpsim generates: digests of the texts, so
        # no file is read twice.
        digests.append((name, hashlib.sha256(expected).hexdigest()))
        found = _read(directory, name, len(expected))
        if found is None:
            problems.append(f"missing: {name}")
        elif found != expected:
            problems.append(f"differs from what fpsim computes now: {name}")
    listed = "".join(f"{digest}  {name}\n" for name, digest in sorted(digests)).encode("ascii")
    found = _read(directory, MANIFEST, len(listed))
    if found is None:
        problems.append(f"missing: {MANIFEST}")
    elif not problems and found != listed:
        problems.append(f"{MANIFEST} does not match the files")
    names = {name for name, _ in digests}
    extra = sorted(name for name in _tree(directory) if name.endswith(".tv") and name not in names)
    problems += [f"not generated by fpsim: {n}" for n in extra]
    return problems


def _read(directory: Path, name: str, size: int) -> bytes | None:
    """The content of ``directory/name``, or None where there is none; at
    most ``size + 1`` bytes (enough to tell a longer file from the one
    expected, whatever its size)."""
    path = directory / name
    if not path.exists():  # a dangling symlink is missing too
        return None
    fd, _ = _files.open_regular(str(path), "--check: vector file")
    try:
        buffer = bytearray(size + 1)
        got = _files.read_into(fd, memoryview(buffer), 0)
    finally:
        os.close(fd)
    return bytes(buffer[:got])


def _tree(directory: Path) -> list[str]:
    """The files under ``directory`` (relative, with '/'), not descending
    into symlinked folders (one pointing up would loop)."""
    out = []
    for root, _, names in os.walk(directory):
        rel = Path(root).relative_to(directory)
        out += [(rel / n).as_posix() for n in names]
    return out
