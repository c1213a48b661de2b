"""``python -m fpsim sweep``: a kernel against the golden model on every input.

Exit status: 0 when the whole space was swept and the candidate agrees, 1
when a mismatch was found (complete or not), 2 on bad input (one line on
stderr), 130 when interrupted (Ctrl-C) before any mismatch was found.  The
report goes to stdout (``--json``: one JSON object); the progress bar goes
to stderr, and only when stderr is a terminal.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any, TextIO

from .modes import ROUNDING_NAMES

INTERRUPTED = 130


def add_command(sub: Any) -> None:
    sw = sub.add_parser(
        "sweep", help="check a kernel against the golden model on every input",
        description="Evaluate OP on every input tuple of a format (or a sample, or the tuples "
                    "holding given special values) with the candidate kernel and with the "
                    "golden model, and print the differential report. Exit status 0: the "
                    "candidate agrees; 1: it does not; 2: bad input; 130: interrupted.")
    sw.add_argument("op", help="add, sub, mul, div (all pairs), fma (all triples), sqrt")
    sw.add_argument("--fmt", "--format", dest="fmt", required=True,
                    help="the format (at most 32 bits)")
    sw.add_argument("--against", required=True, metavar="MODULE:FUNCTION",
                    help="the candidate: a callable on numpy arrays, importable from here")
    sw.add_argument("--rounding", default="rne", help=f"rounding mode: {ROUNDING_NAMES}")
    sw.add_argument("--saturate", action="store_true", help="golden: clamp overflow to ±max")
    sw.add_argument("--ftz", action="store_true", help="golden: flush tiny results to zero")
    sw.add_argument("--daz", action="store_true", help="golden: read subnormal inputs as zero")
    sw.add_argument("--nan-policy", default="ieee",
                    help="golden NaN results: ieee (default), x86, arm_default_nan, riscv")
    sw.add_argument("--sample", type=float, default=None, metavar="FRACTION",
                    help="sweep a deterministic sample of this fraction of the tuples")
    sw.add_argument("--seed", type=int, default=0, help="the sample's seed (default 0)")
    sw.add_argument("--specials", default=None, metavar="V,V,...",
                    help="sweep only tuples holding one of these values (0x.. for codes; "
                         "write --specials=-inf,... when the list starts with a minus)")
    scheduler_options(sw, "run the chunks on Dask")
    sw.add_argument("--chunk-size", type=int, default=None,
                    help="tuples per chunk (default 1048576)")
    sw.add_argument("--progress-file", default=None, metavar="FILE",
                    help="save progress there; resume from it if it exists")
    tolerance_options(sw)
    sw.add_argument("--no-progress", action="store_true",
                    help="no progress bar, even on a terminal")


def tolerance_options(parser: Any) -> None:
    """The report's options, as ``diff`` and ``sweep`` take them."""
    parser.add_argument("--max-ulp", type=int, default=0,
                        help="accepted ULP distance (default 0)")
    parser.add_argument("--nan", default="any", help="any (default): any NaN matches any NaN; "
                        "exact: NaN codes must be identical")
    parser.add_argument("--ignore-zero-sign", action="store_true", help="accept +0 against -0")
    parser.add_argument("--offenders", type=int, default=10,
                        help="offenders listed (default 10)")
    parser.add_argument("--json", action="store_true",
                        help="print the report as one JSON object")


def scheduler_options(parser: Any, what: str) -> None:
    """Where the chunks run, as ``diff`` and ``sweep`` take it."""
    parser.add_argument("--scheduler", default=None, metavar="local|processes|ADDRESS",
                        help=f"{what}: local threads, local processes, or a distributed "
                             "scheduler's address (default: in this process, no Dask)")
    parser.add_argument("--workers", type=int, default=None,
                        help="workers of a local Dask scheduler (default: the CPU count)")
    parser.add_argument("--timeout", type=float, default=10.0,
                        help="seconds to reach a distributed scheduler (default 10)")


class _Bar:
    """A one-line progress display on a terminal, redrawn at most 5 times
    a second."""

    def __init__(self, out: TextIO) -> None:
        self.out, self.last, self.shown = out, 0.0, False

    def __call__(self, p: Any) -> None:
        now = time.monotonic()
        if now - self.last < 0.2 and p.chunks_done < p.chunks:
            return
        self.last = now
        eta = "" if p.eta is None else f"  ETA {_duration(p.eta)}"
        width = 24
        filled = int(width * p.done / p.size) if p.size else width
        self.out.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {100 * p.done / p.size:5.1f}%"
                       f"  {p.done:,}/{p.size:,} tuples  {p.rate / 1e6:.2f} M/s{eta}   ")
        self.out.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown:
            self.out.write("\n")
            self.out.flush()


def _duration(seconds: float) -> str:
    s = int(seconds)
    if s >= 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


def sweep(args: argparse.Namespace) -> int:
    from . import sweep as _sweep
    from .context import Context
    from .sweep._task import DEFAULT_CHUNK

    ctx = Context(rounding=args.rounding, saturate=args.saturate, ftz=args.ftz, daz=args.daz,
                  nan=args.nan_policy)
    show = sys.stderr.isatty() and not args.no_progress
    bar = _Bar(sys.stderr) if show else None
    try:
        report = _sweep.run(
            args.op, args.fmt, args.against, ctx=ctx, sample=args.sample, seed=args.seed,
            specials=args.specials, scheduler=args.scheduler, workers=args.workers,
            timeout=args.timeout,
            chunk_size=DEFAULT_CHUNK if args.chunk_size is None else args.chunk_size,
            progress_file=args.progress_file, max_ulp=args.max_ulp, nan=args.nan,
            signed_zero=not args.ignore_zero_sign, offenders=args.offenders, on_progress=bar)
    finally:
        if bar is not None:
            bar.close()
    print(json.dumps(report.to_dict(), indent=2) if args.json else report)
    if report.interrupted:
        print(f"fpsim: sweep interrupted after {report.done:,} of {report.size:,} tuples"
              + (f"; resume with --progress-file {args.progress_file}"
                 if args.progress_file else ""), file=sys.stderr)
    if not report.report.ok:
        return 1
    return 0 if report.complete else INTERRUPTED
