"""``python -m fpsim ref``: write the golden output of a reference operator."""

from __future__ import annotations

import argparse
import math
import os
from typing import Any

from .. import _files
from ._common import emit, lookup_format, packing_of, packing_options, plural, rounding_options

SUMMARY = "write the golden output of a reference operator on tensor dumps ('ref list')"


def add(sub: Any) -> None:
    rf = sub.add_parser(
        "ref", help=SUMMARY,
        description="Compute OP on the input dumps with declared numerics and write the golden "
                    "output (raw codes, or .npy when OUT ends in .npy). OUT appears whole or "
                    "not at all (written beside it, then renamed onto it); a directory, FIFO "
                    "or device is refused, /dev/null discards. 'ref list' lists the "
                    "operators.")
    rf.add_argument("op", help="the operator (e.g. add, matmul, softmax; 'ref list' lists them)")
    rf.add_argument("paths", nargs="*", metavar="IN ... OUT",
                    help="input dumps, then the output file")
    rf.add_argument("--fmt", "--format", dest="fmt", default=None,
                    help="the inputs' format (needed for raw dumps and .npy files of integer "
                         "codes; .npy files of float values carry their own)")
    rf.add_argument("--out-fmt", default=None, help="the output's format (default: --fmt)")
    rf.add_argument("--shape", action="append", default=[],
                    help="shape of a raw input, e.g. 64x128 (once per input, in order)")
    rf.add_argument("--accumulate", default=None,
                    help="accumulation format (default fp32, or the input format where fp32 "
                         "cannot hold its values: fp64)")
    rf.add_argument("--compute", default=None, help="format products/steps are rounded to")
    rf.add_argument("--order", default=None,
                    help="sequential (default), pairwise, blocked:N or split:S")
    rounding_options(rf)
    rf.add_argument("--byteorder", default="little", help="of raw dumps: little (default), big")
    packing_options(rf, (("out", "the output (default: --pack and --layout where the output "
                                 "is in the inputs' format, else none and row-major)"),))


def run(args: argparse.Namespace) -> int:
    from ..testing import _dumps, _reference

    if args.op == "list":
        for r in _reference.REFERENCES.values():
            extra = f" [{' '.join(_flag(o) for o in r.options)}]" if r.options else ""
            emit(f"{r.name:<12} {r.inputs} input{'s' if r.inputs > 1 else ' '}  "
                  f"{r.summary}{extra}")
        return 0
    op = _reference.reference(args.op)
    if len(args.paths) != op.inputs + 1:
        raise ValueError(f"{op.name} takes {plural(op.inputs, 'input file')} and an output "
                         f"file; got {plural(len(args.paths), 'path')}")
    if len(args.shape) > op.inputs:
        raise ValueError(f"{op.name} takes {plural(op.inputs, 'input')}: at most "
                         f"{op.inputs} --shape")
    kw = _options(args, op)
    shapes = [_dumps.parse_shape(s) for s in args.shape] + [None] * op.inputs
    # The output is checked before any work: a FIFO, a directory or a device
    # is refused at once, never opened (a FIFO would wait for a reader).
    _files.check_output(args.paths[-1], "output")
    inputs = args.paths[:-1]
    fmt = lookup_format(args.fmt)
    pack, layout = packing_of(args, None, fmt)
    dumps = [_dumps.read(p, fmt, args.byteorder, shapes[i], f"input {i + 1}", pack, layout)
             for i, p in enumerate(inputs)]
    if fmt is None:
        fmt = _format_of_inputs(inputs, dumps)
    out_fmt = kw.get("out", fmt)
    same = out_fmt == fmt
    out_pack, out_layout = packing_of(args, "out", out_fmt,
                                      (pack if same else None, layout if same else None))
    _check_size(op, dumps)
    operands = [_dumps.codes_of(d.load(), fmt, f"input {i + 1} ({p})")
                for i, (p, d) in enumerate(zip(inputs, dumps))]
    result = op.run(operands, fmt, **kw)
    out = args.paths[-1]
    _dumps.write(out, result, out_fmt, args.byteorder, out_pack, out_layout)
    shape = "x".join(map(str, result.shape)) or "scalar"
    how = ".npy" if out.endswith(".npy") else f"raw codes, {args.byteorder}-endian"
    if out_pack is not None:
        how = f"{'.npy of bytes' if out.endswith('.npy') else 'raw bytes'}, packed {out_pack}"
    elif out_layout == "blocked":
        how = f"{'.npy of bytes' if out.endswith('.npy') else 'raw bytes'}, blocked layout"
    emit(f"wrote {out}: {op.name} of {plural(op.inputs, fmt.name + ' input')}, "
          f"{out_fmt.name}, shape {shape} ({how})")
    return 0


# The array engine's working memory per element, inputs and output together
# (measured: about 40 bytes per output element of a matmul, 8 of an
# elementwise add): what fits the machine's memory at this rate is computed,
# anything larger is refused before any work.
WORK_BYTES = 64


def _check_size(op: Any, dumps: list[Any]) -> None:
    """Refuse, from the shapes alone, an output (with the inputs) larger
    than this machine's memory: a small or empty input can ask for one
    ((4e9 × 0) @ (0 × 4e9), broadcasting, --shape 1000000x1000000x0 summed
    over its last axis), and computing it would grow memory until killed."""
    out = op.shape([d.shape for d in dumps])
    if out is None:  # the operator refuses these shapes itself, before any work
        return
    elements = math.prod(out) + sum(d.size for d in dumps)
    memory = _physical_memory()
    if elements * WORK_BYTES > memory:
        raise ValueError(f"{op.name}: the output would have {plural(math.prod(out), 'element')} "
                         f"(shape {'x'.join(map(str, out)) or 'scalar'}), more than this "
                         f"machine's memory ({memory / 2**30:.1f} GiB) can compute at about "
                         f"{WORK_BYTES} bytes an element (inputs included)")


def _physical_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):  # no sysconf (Windows): assume 16 GiB
        return 16 << 30


def _format_of_inputs(paths: list[str], arrays: list[Any]) -> Any:
    """The inputs' format read from their .npy dtypes, as ``diff`` reads it;
    raw dumps and integer codes need --fmt."""
    from ..array.engine import format_of_dtype

    found = []
    for i, (p, a) in enumerate(zip(paths, arrays)):
        f = format_of_dtype(a.dtype)
        if f is None:
            raise ValueError(f"input {i + 1} {p} holds integer codes: give their format with "
                             "--fmt (e.g. --fmt fp16)")
        found.append(f)
    if len(set(found)) > 1:
        listed = ", ".join(f"{p} is {f.name}" for p, f in zip(paths, found))
        raise ValueError(f"the inputs differ in format ({listed}): give --fmt, and cast the "
                         "inputs to it")
    return found[0]


def _flag(option: str) -> str:
    return "--out-fmt" if option == "out" else f"--{option}"


def _options(args: argparse.Namespace, op: Any) -> dict[str, Any]:
    from ..testing import _reference

    given = {"out": lookup_format(args.out_fmt, "--out-fmt"),
             "accumulate": lookup_format(args.accumulate, "--accumulate"),
             "compute": lookup_format(args.compute, "--compute"),
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
    kw.update(rounding=args.rounding, saturate=args.saturate, ftz=args.ftz, daz=args.daz,
              p3109=args.p3109)
    return kw
