"""``python -m fpsim``: explain a value in a format; list the formats.

Usage::

    python -m fpsim explain 1e-5 --fmt fp16 [--rounding MODE] [--saturate] [--ftz] [--json]
    python -m fpsim explain --bits 0x3C00 --fmt fp16
    python -m fpsim formats [--json]
    python -m fpsim diff ACTUAL EXPECTED [--fmt FMT] [--max-ulp N] [--json] [--byteorder ORDER]
                         [--scheduler local|processes|ADDRESS]
    python -m fpsim ref OP --fmt FMT IN [IN ...] OUT [--shape MxK ...] [--accumulate FMT] ...
    python -m fpsim vectors [--out DIR] [--check]
    python -m fpsim sweep OP --fmt FMT --against MODULE:FUNCTION [--scheduler local|ADDRESS]
                         [--sample FRACTION] [--specials V,...] [--progress-file F] [--json]

``diff`` exits 0 when the dumps agree within tolerance, 1 when they do not;
``sweep`` likewise for the candidate kernel, and 130 when interrupted
before a mismatch was found.

Bad input exits with status 2 and one line on stderr; never a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from . import _cli_sweep, parse
from .explain import explain, explain_bits, render
from .formats import Format, formats
from .modes import ROUNDING_NAMES
from .value import exact_decimal

__all__ = ["main"]


class UsageError(Exception):
    """A command-line mistake: reported in one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see '{self.prog} --help')")


def _build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m fpsim",
                     description="Bit-exact floating-point formats: explain values, list formats.")
    sub = parser.add_subparsers(dest="command",
                                metavar="{explain,formats,diff,ref,vectors,sweep}",
                                parser_class=_Parser)
    ex = sub.add_parser("explain", help="what happens to a value in a format",
                        description="Round VALUE into a format (or decode --bits) and explain "
                                    "the result: bits, exact value, error, flags, notes.")
    ex.add_argument("value", nargs="?", help="a decimal ('1e-5', any length), rational ('1/3'), "
                    "hex float ('0x1.ffcp15'), inf or nan")
    # Negative values such as -1e-5 or -inf look like options to argparse;
    # main() passes them through this hidden option instead.
    ex.add_argument("--value", dest="value_opt", help=argparse.SUPPRESS)
    ex.add_argument("--bits", help="explain this bit pattern (hex like 0x3C00, or decimal) "
                    "instead of rounding a value")
    ex.add_argument("--fmt", "--format", dest="fmt", default="fp16",
                    help="format name or alias (default fp16; see 'formats')")
    ex.add_argument("--rounding", default="rne", help=f"rounding mode: {ROUNDING_NAMES}")
    ex.add_argument("--saturate", action="store_true", help="clamp overflow and inf to ±max")
    ex.add_argument("--ftz", action="store_true", help="flush tiny results to zero")
    ex.add_argument("--tininess", default="after", help="after (default) or before rounding")
    ex.add_argument("--seed", type=int, default=None, help="seed for --rounding sr")
    ex.add_argument("--json", action="store_true", help="print one JSON object")
    fm = sub.add_parser("formats", help="a table of every built-in format's limits")
    fm.add_argument("--json", action="store_true", help="print a JSON list (exact values)")
    _add_dump_commands(sub)
    vc = sub.add_parser("vectors", help="write the golden test vector files",
                        description="Write the golden vector files (spec/vectors.md) and their "
                                    "SHA256SUMS manifest, or --check them.")
    vc.add_argument("--out", default="spec/vectors", help="directory (default spec/vectors)")
    vc.add_argument("--check", action="store_true",
                    help="exit 1 unless DIR holds exactly what fpsim generates now")
    _cli_sweep.add_command(sub)
    return parser


def _add_dump_commands(sub: Any) -> None:
    df = sub.add_parser(
        "diff", help="compare a device dump with the golden one",
        description="Compare ACTUAL with EXPECTED element by element (raw binary dumps of "
                    "codes, or .npy files) and print the report. Exit status 0: within "
                    "tolerance; 1: not; 2: bad input.")
    df.add_argument("actual", help="the dump under test (raw codes or .npy)")
    df.add_argument("expected", help="the golden dump (raw codes or .npy)")
    df.add_argument("--fmt", "--format", dest="fmt", default=None,
                    help="the format of raw dumps (and of .npy files of codes)")
    df.add_argument("--byteorder", default="little", help="of raw dumps: little (default), big")
    _cli_sweep.tolerance_options(df)
    _cli_sweep.scheduler_options(df, "compare the chunks on Dask (the files must be readable "
                                     "where the workers run)")
    rf = sub.add_parser(
        "ref", help="write the golden output of a reference operator",
        description="Compute OP on the input dumps with declared numerics and write the golden "
                    "output (raw codes, or .npy when OUT ends in .npy).")
    rf.add_argument("op", help="the operator (e.g. add, matmul, softmax; 'ref list' lists them)")
    rf.add_argument("paths", nargs="*", metavar="IN ... OUT",
                    help="input dumps, then the output file")
    rf.add_argument("--fmt", "--format", dest="fmt", default=None, help="the inputs' format")
    rf.add_argument("--out-fmt", default=None, help="the output's format (default: --fmt)")
    rf.add_argument("--shape", action="append", default=[],
                    help="shape of a raw input, e.g. 64x128 (once per input, in order)")
    rf.add_argument("--accumulate", default=None, help="accumulation format (default fp32)")
    rf.add_argument("--compute", default=None, help="format products/steps are rounded to")
    rf.add_argument("--order", default=None,
                    help="sequential (default), pairwise, blocked:N or split:S")
    rf.add_argument("--rounding", default="rne", help=f"rounding mode: {ROUNDING_NAMES}")
    rf.add_argument("--saturate", action="store_true", help="clamp overflow to ±max")
    rf.add_argument("--ftz", action="store_true", help="flush tiny results to zero")
    rf.add_argument("--daz", action="store_true", help="read subnormal inputs as zero")
    rf.add_argument("--byteorder", default="little", help="of raw dumps: little (default), big")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status."""
    parser = _build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args, extra = parser.parse_known_args([_protect_negative(a) for a in argv])
        if args.command == "ref":
            # argparse gives 'ref OP --fmt F IN OUT' the paths after the
            # options as extras: they are the paths.
            args.paths += [e for e in extra if not e.startswith("-")]
            extra = [e for e in extra if e.startswith("-")]
        if extra:
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
        if args.command == "explain":
            return _explain(args)
        if args.command == "formats":
            return _formats(args)
        if args.command in ("diff", "ref"):
            from . import _cli_dumps

            return _cli_dumps.diff(args) if args.command == "diff" else _cli_dumps.ref(args)
        if args.command == "vectors":
            return _vectors(args)
        if args.command == "sweep":
            return _cli_sweep.sweep(args)
        raise UsageError("missing command; accepted: explain, formats, diff, ref, vectors, sweep "
                         "(e.g. 'python -m fpsim explain 1e-5 --fmt fp16')")
    except (UsageError, ValueError, TypeError, OverflowError) as exc:
        print(f"fpsim: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # e.g. piped into head
        return 0
    except (ImportError, RuntimeError, ConnectionError) as exc:
        # a candidate kernel that cannot be imported or that fails; an
        # unreachable Dask scheduler
        print(f"fpsim: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("fpsim: interrupted", file=sys.stderr)
        return 130
    except OSError as exc:  # unreadable or unwritable files
        print(f"fpsim: error: {exc.strerror or exc}: {exc.filename}", file=sys.stderr)
        return 2
    except MemoryError:
        print("fpsim: error: out of memory", file=sys.stderr)
        return 2


def _vectors(args: argparse.Namespace) -> int:
    from pathlib import Path

    from . import _vectors

    out = Path(args.out)
    if args.check:
        problems = _vectors.check(out)
        for p in problems:
            print(p)
        print(f"{out}: {'up to date' if not problems else f'{len(problems)} problem(s)'}")
        return 1 if problems else 0
    names = _vectors.write(out)
    print(f"wrote {len(names)} vector files and {_vectors.MANIFEST} under {out}")
    return 0


def _protect_negative(arg: str) -> str:
    if arg.startswith("-") and not arg.startswith("--") and len(arg) > 2:
        try:
            parse.exact(arg)
        except (ValueError, TypeError):
            return arg
        return f"--value={arg}"
    return arg


def _explain(args: argparse.Namespace) -> int:
    if args.value_opt is not None:
        if args.value is not None:
            raise UsageError("give one VALUE")
        args.value = args.value_opt
    if args.bits is not None:
        if args.value is not None:
            raise UsageError("give either VALUE or --bits, not both")
        report = explain_bits(_parse_bits(args.bits), args.fmt)
    else:
        if args.value is None:
            raise UsageError("explain needs a VALUE (e.g. 1e-5) or --bits 0x3C00")
        report = explain(args.value, args.fmt, rounding=args.rounding, saturate=args.saturate,
                         ftz=args.ftz, tininess=args.tininess, seed=args.seed)
    print(json.dumps(report, indent=2) if args.json else render(report))
    return 0


def _parse_bits(text: str) -> int:
    try:
        return int(text, 0)
    except ValueError:
        raise UsageError(f"--bits {text!r} is not an integer; accepted: hex like 0x3C00, "
                         "binary like 0b0011110000000000, or decimal") from None


def _format_row(f: Format) -> dict[str, Any]:
    return {
        "name": f.name,
        "aliases": list(f.aliases),
        "width": f.width,
        "sign_bits": int(f.signed),
        "exponent_bits": f.exponent_bits,
        "mantissa_bits": f.mantissa_bits,
        "bias": f.bias,
        "specials": f.specials.value,
        "subnormals": f.subnormals,
        "precision": f.precision,
        "emax": f.emax,
        "emin": f.emin,
        "max": exact_decimal(f.max),
        "min_normal": exact_decimal(f.min_normal),
        "min_subnormal": exact_decimal(f.min_subnormal),
        "eps": exact_decimal(f.eps),
    }


def _formats(args: argparse.Namespace) -> int:
    rows = [_format_row(f) for f in formats()]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    header = ("name", "S/E/M", "bias", "specials", "p", "emin", "emax", "max",
              "min normal", "min subnormal", "eps")
    table = [header]
    for f, r in zip(formats(), rows):
        table.append((
            r["name"], f"{r['sign_bits']}/{r['exponent_bits']}/{r['mantissa_bits']}",
            str(r["bias"]), r["specials"], str(r["precision"]), str(r["emin"]), str(r["emax"]),
            exact_decimal(f.max, max_digits=8).lstrip("~"),
            f"2^{f.emin}",
            f"2^{f.emin - f.mantissa_bits}" if f.subnormals else "-",
            f"2^{-f.mantissa_bits}",
        ))
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for i, row in enumerate(table):
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
        if i == 0:
            print("  ".join("-" * w for w in widths))
    print("\nmax is rounded to 8 significant digits; 'formats --json' gives exact values.")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
