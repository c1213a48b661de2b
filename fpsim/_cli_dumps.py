"""``python -m fpsim diff`` and ``python -m fpsim ref``: the harness on files.

Bad input raises ValueError (or OSError) with a one-line message naming the
file; :func:`fpsim.cli.main` prints it and exits 2.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from .formats import Format
from .formats import format as _lookup
from .testing import _compare, _dumps, _reference, _schedulers


def _format(name: str | None, option: str = "--fmt") -> Format | None:
    if name is None:
        return None
    try:
        return _lookup(name)
    except ValueError as exc:
        raise ValueError(f"{option}: {exc}") from None


def diff(args: argparse.Namespace) -> int:
    fmt = _format(args.fmt)
    if args.nan not in ("any", "exact"):
        raise ValueError(f"--nan {args.nan!r}: accepted: any, exact")
    if args.max_ulp < 0 or args.offenders < 0:
        raise ValueError("--max-ulp and --offenders must not be negative")
    actual = _dumps.read(args.actual, fmt, args.byteorder, label="ACTUAL")
    expected = _dumps.read(args.expected, fmt, args.byteorder, label="EXPECTED")
    for label, path, a in (("ACTUAL", args.actual, actual), ("EXPECTED", args.expected, expected)):
        if fmt is None and a.dtype.kind in "iu":
            raise ValueError(f"{label} {path} holds integer codes: give their format with --fmt")
    if actual.size != expected.size:
        raise ValueError(f"length mismatch: ACTUAL {args.actual} has {actual.size} elements, "
                         f"EXPECTED {args.expected} has {expected.size}")
    if actual.shape != expected.shape:
        if args.actual.endswith(".npy") and args.expected.endswith(".npy"):
            raise ValueError(f"shape mismatch: ACTUAL {args.actual} is {actual.shape}, "
                             f"EXPECTED {args.expected} is {expected.shape}")
        # a raw dump (flat) against a .npy file: compare in flat order
        actual, expected = actual.reshape(-1), expected.reshape(-1)
    options = dict(max_ulp=args.max_ulp, nan=args.nan, signed_zero=not args.ignore_zero_sign,
                   offenders=args.offenders,
                   labels=(f"ACTUAL {args.actual}", f"EXPECTED {args.expected}"),
                   hint="give --fmt")
    if args.scheduler is None:
        report = _compare.run(actual, expected, fmt, **options)
    else:
        refs = (_dumps.ref(actual, f"ACTUAL {args.actual}"),
                _dumps.ref(expected, f"EXPECTED {args.expected}"))
        work = _schedulers.runner(args.scheduler, args.workers, args.timeout)
        try:
            report = _compare.run_files(*refs, actual.shape, fmt, work, **options)
        finally:
            work.close()
    print(json.dumps(report.to_dict(), indent=2) if args.json else report)
    return 0 if report.ok else 1


def ref(args: argparse.Namespace) -> int:
    if args.op == "list":
        for r in _reference.REFERENCES.values():
            extra = f" [{' '.join(_flag(o) for o in r.options)}]" if r.options else ""
            print(f"{r.name:<12} {r.inputs} input{'s' if r.inputs > 1 else ' '}  "
                  f"{r.summary}{extra}")
        return 0
    op = _reference.reference(args.op)
    fmt = _format(args.fmt)
    if fmt is None:
        raise ValueError("ref needs the inputs' format: --fmt FMT (e.g. --fmt fp16)")
    if len(args.paths) != op.inputs + 1:
        raise ValueError(f"{op.name} takes {op.inputs} input file"
                         f"{'s' if op.inputs > 1 else ''} and an output file; got "
                         f"{len(args.paths)} path{'s' if len(args.paths) != 1 else ''}")
    if len(args.shape) > op.inputs:
        raise ValueError(f"{op.name} takes {op.inputs} input(s): at most {op.inputs} --shape")
    kw = _options(args, op)
    shapes = [_dumps.parse_shape(s) for s in args.shape] + [None] * op.inputs
    operands = [_dumps.codes_of(_dumps.read(p, fmt, args.byteorder, shapes[i], f"input {i + 1}"),
                                fmt, f"input {i + 1} ({p})")
                for i, p in enumerate(args.paths[:-1])]
    result = op.run(operands, fmt, **kw)
    out_fmt = kw.get("out", fmt)
    _dumps.write(args.paths[-1], result, out_fmt, args.byteorder)
    return 0


def _flag(option: str) -> str:
    return "--out-fmt" if option == "out" else f"--{option}"


def _options(args: argparse.Namespace, op: _reference.Reference) -> dict[str, Any]:
    given = {"out": _format(args.out_fmt, "--out-fmt"),
             "accumulate": _format(args.accumulate, "--accumulate"),
             "compute": _format(args.compute, "--compute"),
             "order": None if args.order is None else _reference.parse_order(args.order)}
    kw: dict[str, Any] = {}
    for name, value in given.items():
        if value is None:
            continue
        if name not in op.options:
            takes = ", ".join(_flag(o) for o in op.options) or "only the rounding settings"
            raise ValueError(f"{op.name} does not take {_flag(name)}; it takes: {takes}")
        kw[name] = value
    if op.name == "cast" and "out" not in kw:
        raise ValueError("cast needs the output format: --out-fmt FMT")
    kw.update(rounding=args.rounding, saturate=args.saturate, ftz=args.ftz, daz=args.daz)
    return kw
