"""``python -m fpsim sweep``: a kernel against the golden model on every input.

Exit status: 0 when the whole space was swept and the candidate agrees, 1
when a mismatch was found (complete or not), 2 on bad input and when the
sweep could not judge (a candidate that fails, a Dask worker or scheduler
that dies: one line on stderr), 130 when interrupted (Ctrl-C) before any
mismatch was found.  The
report goes to stdout (``--json``: one JSON object); the progress bar goes
to stderr, and only when stderr is a terminal.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any, TextIO

from ._common import (
    emit,
    rounding_options,
    scheduler_options,
    seconds,
    to_stderr,
    tolerance_options,
)

INTERRUPTED = 130
SUMMARY = "check a kernel against the golden model on every input (exit 0 agree, 1 differ)"


def add(sub: Any) -> None:
    sw = sub.add_parser(
        "sweep", help=SUMMARY,
        description="Evaluate OP on every input tuple of a format (or a sample, or the tuples "
                    "holding given special values) with the candidate kernel and with the "
                    "golden model, and print the differential report. Exit status 0: the "
                    "candidate agrees; 1: it does not; 2: bad input, or the sweep could not "
                    "finish (a failing candidate, a Dask worker that died); 130: interrupted.")
    sw.add_argument("op", help="add, sub, mul, div (all pairs), fma (all triples), sqrt")
    sw.add_argument("--fmt", "--format", dest="fmt", required=True,
                    help="the format (at most 64 bits; every tuple up to 2**63 of them, "
                         "--sample or --specials up to 2**64: FP32 pairs, FP64 codes; "
                         "--sample alone beyond: FP64 pairs and triples, FP32 triples)")
    sw.add_argument("--against", required=True, metavar="MODULE:FUNCTION",
                    help="the candidate: a callable on numpy arrays, importable from here")
    rounding_options(sw, whose="golden: ")
    sw.add_argument("--nan-policy", default="ieee",
                    help="golden NaN results: ieee (default), x86, arm_default_nan, riscv")
    sw.add_argument("--sample", type=float, default=None, metavar="FRACTION",
                    help="sweep a deterministic sample of this fraction of the tuples (fewer "
                         "than 2**40 of them: FP64 pairs take e.g. 1e-32, 3.4 million pairs)")
    sw.add_argument("--seed", type=int, default=0, help="the sample's seed (default 0)")
    sw.add_argument("--specials", default=None, metavar="V,V,...",
                    help="sweep only tuples holding one of these values (0x.. for codes; "
                         "write --specials=-inf,... when the list starts with a minus)")
    scheduler_options(sw, "run the chunks on Dask")
    sw.add_argument("--chunk-size", type=int, default=None,
                    help="tuples per chunk (default 1048576)")
    sw.add_argument("--progress-file", default=None, metavar="FILE",
                    help="save progress there; resume from it if it exists and was written "
                         "by the same candidate, told by its code (one sweep at a time per "
                         "file)")
    sw.add_argument("--chunk-timeout", type=seconds, default=None, metavar="SECONDS",
                    help="end the sweep (exit 2, naming the chunk and its operands) when the "
                         "candidate takes longer than this on one chunk (default: no limit)")
    tolerance_options(sw)
    sw.add_argument("--no-progress", action="store_true",
                    help="no progress bar, even on a terminal")


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


def run(args: argparse.Namespace) -> int:
    from .. import sweep as _sweep
    from ..context import Context
    from ..sweep._task import DEFAULT_CHUNK

    ctx = Context(rounding=args.rounding, saturate=args.saturate, ftz=args.ftz, daz=args.daz,
                  nan=args.nan_policy, p3109=args.p3109)
    show = sys.stderr is not None and sys.stderr.isatty() and not args.no_progress
    bar = _Bar(sys.stderr) if show else None
    try:
        report = _sweep.run(
            args.op, args.fmt, args.against, ctx=ctx, sample=args.sample, seed=args.seed,
            specials=args.specials, scheduler=args.scheduler, workers=args.workers,
            timeout=args.timeout,
            chunk_size=DEFAULT_CHUNK if args.chunk_size is None else args.chunk_size,
            progress_file=args.progress_file, max_ulp=args.max_ulp, nan=args.nan,
            signed_zero=not args.ignore_zero_sign, offenders=args.offenders, on_progress=bar,
            chunk_timeout=args.chunk_timeout)
    finally:
        if bar is not None:
            bar.close()
    emit(json.dumps(report.to_dict(), indent=2) if args.json else report)
    if report.interrupted:
        to_stderr(f"fpsim: sweep interrupted after {report.done:,} of {report.size:,} tuples"
                  + (f"; resume with --progress-file {args.progress_file}"
                     if args.progress_file else ""))
    if not report.report.ok:
        return 1
    return 0 if report.complete else INTERRUPTED
