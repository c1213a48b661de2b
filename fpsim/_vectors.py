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
from collections.abc import Callable, Collection, Iterator
from pathlib import Path

from . import _files, arith
from ._flagbits import flag_bits
from .context import Context
from .formats import (
    BF16,
    E2M1,
    E2M3,
    E3M2,
    E3M4,
    E4M3,
    E4M3B11FNUZ,
    E4M3FNUZ,
    E4M3IEEE,
    E5M2,
    E5M2FNUZ,
    E8M0,
    FP16,
    FP32,
    FP64,
    TF32,
    Format,
    p3109,
)
from .modes import Flag
from .value import Float, convert

#: The first formats given vectors, PER_FILE of them a file.
FORMATS = (FP32, FP16, BF16, E4M3, E5M2)
#: Every other registered format (fpsim.formats()), PER_FILE_ADDED vectors a
#: file: the other IEEE and OCP formats, ml_dtypes' FP8 types and the 30
#: eight-bit IEEE P3109 formats.
ADDED = (FP64, TF32, E8M0, E5M2FNUZ, E4M3FNUZ, E4M3B11FNUZ, E4M3IEEE, E3M4, E3M2, E2M3, E2M1,
         *(p3109(8, p, signed, extended) for p in range(1, 9) for signed in (True, False)
           for extended in (True, False) if p < 8 or not signed))
MODES = ("rne", "rna", "rtz", "rup", "rdn", "rto")
OPERATIONS: dict[str, tuple[int, Callable[..., Float]]] = {
    "add": (2, arith.add), "sub": (2, arith.sub), "mul": (2, arith.mul),
    "div": (2, arith.div), "fma": (3, arith.fma), "sqrt": (1, arith.sqrt),
}
PER_FILE = 400
PER_FILE_ADDED = 100
MANIFEST = "SHA256SUMS"

def _notable(fmt: Format) -> list[int]:
    """Codes worth crossing with each other: zeros, subnormal and normal
    boundaries, one and its neighbours, the largest values, infinities and
    NaNs (quiet and signaling where the format has both), of both signs
    where the format has a sign.

    Every format works, P = 1 (no fraction bits: no quiet bit to set) and
    unsigned ones included:

    >>> from fpsim import formats
    >>> " ".join(f"{c:02x}" for c in _notable(formats.p3109(8, 1)))   # binary8p1se
    '00 01 3f 40 41 42 7d 7e 7f 80 81 bf c0 c1 c2 fd fe ff'
    >>> " ".join(f"{c:02x}" for c in _notable(formats.p3109(8, 3, signed=False)))  # 8p3ue
    '00 01 03 04 7f 80 81 86 fc fd fe ff'
    """
    m = fmt.mantissa_bits
    one = fmt.round(1).bits
    positive = {0, 1, (1 << m) - 1, 1 << m, one, one + 1, one - 1, fmt.round(3).bits,
                fmt.max_code, fmt.max_code - 1}
    if fmt.inf_code is not None:
        positive.add(fmt.inf_code)
        # The codes just above the infinity: a signaling NaN and (with the
        # quiet bit, the fraction's top bit) a quiet one where the format
        # has NaNs there, as IEEE 754's formats do.
        above = {fmt.inf_code + 1} | ({fmt.inf_code + (1 << (m - 1))} if m else set())
        positive |= {c for c in above if c <= fmt.magnitude_mask and fmt.is_nan_code(c)}
    if fmt.default_nan_code is not None:
        positive.add(fmt.default_nan_code & fmt.magnitude_mask)
    codes = sorted(positive)
    return codes + [c | fmt.sign_bit for c in codes if c | fmt.sign_bit not in positive]


def _near(rng: random.Random, fmt: Format, code: int) -> int:
    """A code whose exponent is within 3 of ``code``'s (likely cancellation,
    or a sum that rounds)."""
    m = fmt.mantissa_bits
    e = (code >> m) & ((1 << fmt.exponent_bits) - 1)
    e2 = min(max(e + rng.randint(-3, 3), 0), (fmt.max_code >> m))
    sign = rng.choice((0, fmt.sign_bit))
    return min(sign | (e2 << m) | rng.getrandbits(m), sign | fmt.max_code)


def _operands(fmt: Format, arity: int, rng: random.Random,
              count: int) -> Iterator[tuple[int, ...]]:
    """Operand codes: ``count // 2`` crossings of the notable codes, then
    random ones without end (the caller takes what it needs)."""
    notable = _notable(fmt)
    if arity == 1:
        crossed = [(a,) for a in notable]
    elif arity == 2:
        crossed = [(a, b) for a in notable for b in notable]
    else:
        crossed = [(rng.choice(notable), rng.choice(notable), rng.choice(notable))
                   for _ in range(count // 4)]
    rng.shuffle(crossed)
    yield from crossed[:count // 2]
    while True:
        a = rng.getrandbits(fmt.width)
        rest = tuple(_near(rng, fmt, a) if rng.random() < 0.7 else rng.getrandbits(fmt.width)
                     for _ in range(arity - 1))
        yield (a, *rest)


def _conversion_inputs(src: Format, dst: Format, rng: random.Random) -> Iterator[int]:
    """Codes of ``src`` at, and a few ``src`` ULPs around (2, or 8 into a
    4-bit format), the midpoints between neighbouring ``dst`` values, and
    the overflow/underflow boundaries; then the notable codes of ``src``."""
    ctx = Context(rounding="rtz")
    boundaries = [dst.max + dst.from_bits(dst.max_code).ulp() / 2,
                  dst.min_subnormal / 2, dst.min_normal - dst.min_subnormal / 2]
    for v in boundaries:
        for delta in (-1, 0, 1):
            code = src.round(v, ctx).bits + delta
            yield code
            yield code | src.sign_bit
    yield from _notable(src)
    # FP4 has 7 midpoints: 2 ULPs either side of them would not fill a file.
    spread = 2 if dst.width > 4 else 8
    while True:
        d = rng.getrandbits(dst.width) & dst.magnitude_mask
        if d >= dst.max_code:
            continue
        lo, hi = dst.from_bits(d).value, dst.from_bits(d + 1).value
        code = src.round((lo + hi) / 2, ctx).bits + rng.randint(-spread, spread)
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


def per_file(fmt: Format) -> int:
    """How many vectors each file of ``fmt`` holds."""
    return PER_FILE if fmt in FORMATS else PER_FILE_ADDED


def _result(fmt: Format, fn: Callable[..., Float], args: tuple[Float, ...],
            mode: str) -> tuple[Float, Flag] | None:
    """``fn(*args)`` (a result in ``fmt``) under a fresh context and its
    flags, or None where the result is a NaN that ``fmt`` cannot encode
    (OCP MX FP6 and FP4 have none: 0/0, sqrt(-1), a NaN converted)."""
    ctx = Context(rounding=mode)
    try:
        result = fn(*args, ctx)
    except ValueError:
        if fmt.has_nan:
            raise
        return None
    return result, ctx.flags


def operation_file(fmt: Format, op: str, mode: str) -> str:
    """The text of one vector file: ``op`` on operands of ``fmt`` under
    rounding ``mode``."""
    arity, fn = OPERATIONS[op]
    rng = random.Random(f"{fmt.name}-{op}-{mode}")
    names = "abc"[:arity]
    lines = _header(fmt, op, mode, " ".join(names) + " result")
    count = per_file(fmt)
    for codes in _operands(fmt, arity, rng, count):
        got = _result(fmt, fn, tuple(fmt.from_bits(c) for c in codes), mode)
        if got is not None:
            lines.append(_line(codes, (fmt.width,) * arity, *got, fmt.width))
            count -= 1
            if not count:
                break
    return "\n".join(lines) + "\n"


def conversion_file(src: Format, dst: Format, mode: str) -> str:
    """The text of the vector file of conversions from ``src`` to ``dst``."""
    rng = random.Random(f"{src.name}-to-{dst.name}-{mode}")
    lines = _header(dst, f"convert from {src.name}", mode, f"a ({src.name}) result")
    seen: set[int] = set()
    count = per_file(dst)
    for code in _conversion_inputs(src, dst, rng):
        code &= (1 << src.width) - 1
        if code in seen:
            continue
        seen.add(code)
        got = _result(dst, lambda x, ctx: convert(x, dst, ctx), (src.from_bits(code),), mode)
        if got is not None:
            lines.append(_line((code,), (src.width,), *got, dst.width))
            count -= 1
            if not count:
                break
    return "\n".join(lines) + "\n"


def files(only: Collection[str] | None = None) -> Iterator[tuple[str, Callable[[], str]]]:
    """Every vector file (of the formats named in ``only``, where given):
    (relative path, a function that writes its text)."""
    for fmt in FORMATS + ADDED:
        if only is not None and fmt.name not in only:
            continue
        for op in OPERATIONS:
            for mode in MODES:
                yield (f"{fmt.name}/{op}_{mode}.tv",
                       lambda f=fmt, o=op, m=mode: operation_file(f, o, m))
        src = source(fmt)
        if src is None:
            continue
        for mode in MODES:
            yield (f"{fmt.name}/from_{src.name}_{mode}.tv",
                   lambda s=src, f=fmt, m=mode: conversion_file(s, f, m))


def source(fmt: Format) -> Format | None:
    """The format whose codes the conversion vectors of ``fmt`` convert:
    FP64 into FP32, FP32 into every other format but FP64 (none: no wider
    format)."""
    return None if fmt is FP64 else FP64 if fmt is FP32 else FP32


def manifest(directory: Path, names: list[str]) -> str:
    """``sha256sum``-compatible lines for ``names`` under ``directory``."""
    return "".join(f"{hashlib.sha256((directory / n).read_bytes()).hexdigest()}  {n}\n"
                   for n in sorted(names))


def write(directory: Path) -> list[str]:
    """Write every vector file and the manifest under ``directory``; return
    the relative paths written.  Each file appears whole or not at all
    (:func:`fpsim._files.write_atomic`), the manifest last: an interrupted
    run leaves every file either as it was or as it is now, which
    ``--check`` reports."""
    names = []
    for name, text in files():
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        _files.write_atomic(path, text(), "vector file")
        names.append(name)
    _files.write_atomic(directory / MANIFEST, manifest(directory, names), "manifest")
    return names


def check(directory: Path, only: Collection[str] | None = None) -> list[str]:
    """The problems found comparing ``directory`` with freshly generated
    vectors and its manifest (empty when it is up to date); with ``only``,
    the folders of those formats and their lines of the manifest.  A file
    there that is not a regular file (symlinks followed) raises
    ``ValueError``: only regular files are read, each up to one byte more
    than expected."""
    if only is not None:
        unknown = sorted(set(only) - {f.name for f in FORMATS + ADDED})
        if unknown:
            raise ValueError(f"--formats: no vectors for {', '.join(unknown)}; accepted: "
                             f"{', '.join(f.name for f in FORMATS + ADDED)}")
    problems = []
    digests = []
    for name, text in files(only):
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
    if only is None:
        found = _read(directory, MANIFEST, len(listed))
    else:  # the manifest's lines of those formats (it lists every format's files)
        found = _read(directory, MANIFEST, 1 << 24)
        if found is not None:
            found = b"".join(line for line in found.splitlines(keepends=True)
                             if line.partition(b"  ")[2].split(b"/")[0].decode("ascii", "replace")
                             in only)
    if found is None:
        problems.append(f"missing: {MANIFEST}")
    elif not problems and found != listed:
        problems.append(f"{MANIFEST} does not match the files")
    names = {name for name, _ in digests}
    extra = sorted(name for name in _tree(directory) if name.endswith(".tv") and name not in names
                   and (only is None or name.split("/")[0] in only))
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
