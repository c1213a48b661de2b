"""``python -m fpsim ver``: Berkeley TestFloat's ``testfloat_ver`` for every
fpsim format (:mod:`fpsim.testfloat`; docs/verifying.rst).

Reads a device's lines (a FILE or stdin), checks each result and its flags
against the golden model.  Exit status 0: every line agrees; 1: some differ
(the report says how many); 2: bad input (a malformed line, named by its
number).  The status is the verdict even where the report cannot be shown:
with stdout closed (``>&-``) the lines are checked all the same, and a note
on stderr says how many differ.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
from collections.abc import Callable, Iterator
from typing import Any, TextIO

from ._common import (
    STDOUT_CLOSED,
    UsageError,
    emit,
    plural,
    testfloat_context,
    testfloat_options,
    to_stderr,
)

SUMMARY = "check a device's TestFloat lines against the golden model (exit 0 agree, 1 differ)"

# Its exit status is a verdict: it runs with stdout closed (cli._common).
VERDICT_WITHOUT_STDOUT = True

_LONGEST_LINE = 4096

_EPILOG = """\
examples:
  python -m fpsim gen f16_add -rmin | ./device | python -m fpsim ver f16_add -rmin
  python -m fpsim ver e4m3_mul results.txt --no-flags
  python -m fpsim ver f32_div results.txt --nan riscv      (NaN codes checked exactly)

-level, -seed and -n are accepted and ignored, so that gen and ver can take
the same options.  Exit status 0: all lines agree; 1: some differ; 2: bad input."""


def add(sub: Any) -> None:
    vp = sub.add_parser("ver", help=SUMMARY, allow_abbrev=False,
                        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=_EPILOG,
                        description="Check lines of OP in Berkeley TestFloat's format (a "
                                    "device's results) against fpsim's golden model.")
    vp.add_argument("op", metavar="OP", help="e.g. f16_add, e4m3_mulAdd, f32_to_e5m2")
    vp.add_argument("file", nargs="?", default="-", metavar="FILE",
                    help="the lines to check (default: stdin)")
    testfloat_options(vp)
    vp.add_argument("--nan", default=None, metavar="POLICY",
                    help="check NaN results' codes exactly, as this policy gives them (ieee, "
                         "x86, arm_default_nan, riscv); without it any NaN agrees with any NaN")
    vp.add_argument("-checkNaNs", dest="check_nans", action="store_true",
                    help="check NaN results' codes exactly under the --nan policy (default ieee)")
    vp.add_argument("--no-flags", action="store_true",
                    help="do not check flags: a line may leave the flags field out; one that "
                         "has it has it read but not compared")
    vp.add_argument("--offenders", "-errors", dest="offenders", type=int, default=10,
                    metavar="N", help="offenders shown (default 10)")
    vp.add_argument("--json", action="store_true", help="print the report as one JSON object")


def run(args: argparse.Namespace) -> int:
    from .. import testfloat

    ctx = testfloat_context(args, args.nan)
    op = testfloat.operation(args.op)
    if args.offenders < 0:
        raise ValueError(f"--offenders {args.offenders}: accepted an integer >= 0")
    where = "stdin" if args.file == "-" else args.file
    source, done = _open(args.file)
    try:
        report = testfloat.verify(op, _lines(source, where), ctx, exact=args.exact,
                                  nan_exact=args.nan is not None or args.check_nans,
                                  flags=not args.no_flags, offenders=args.offenders)
    finally:
        done()
    if report.lines == 0:
        raise ValueError(f"no lines to check in {where} (blank lines and '#' comments "
                         "are skipped)")
    if sys.stdout is None:  # '>&-': the verdict is known, the report has nowhere to go
        to_stderr(f"fpsim: note: {STDOUT_CLOSED.split(':')[0]}, so the report is not shown: "
                  f"{plural(report.lines, 'line')} checked, {report.differ:,} differ")
    else:
        emit(report.to_json() if args.json else report)
    return 0 if report.ok else 1


STDIN_CLOSED = ("stdin is closed: give the lines as FILE, or on an open stdin "
                "(e.g. '< results.txt')")


def _open(path: str) -> tuple[TextIO, Callable[[], None]]:
    """The lines' source, read as ASCII (any other byte is U+FFFD, so a
    line holding one is malformed and named by its number, whatever the
    locale), and what to do once it is read."""
    if path == "-":
        stdin = sys.stdin
        if stdin is None:  # '<&-'
            raise UsageError(STDIN_CLOSED)
        buffer = getattr(stdin, "buffer", None)
        if buffer is None:  # a text stream of Python's own
            return stdin, lambda: None
        text = io.TextIOWrapper(buffer, encoding="ascii", errors="replace", newline=None)

        def done() -> None:
            text.detach()  # stdin itself stays open

        return text, done
    from .. import _files

    fd, _ = _files.open_regular(path, "input")  # "input file not found: results.txt"
    source = os.fdopen(fd, "r", encoding="ascii", errors="replace", newline=None)
    return source, source.close


def _lines(source: TextIO, where: str) -> Iterator[str]:
    """The lines of ``source`` (called ``where``), each at most
    _LONGEST_LINE characters (a longer one is no vector: refused with its
    number, before it is read whole)."""
    number = 0
    while True:
        try:
            line = source.readline(_LONGEST_LINE + 1)
        except OSError as exc:  # stdin open for writing only, a directory, ...
            raise OSError(f"cannot read {where}: {exc.strerror or exc}") from None
        if not line:
            return
        number += 1
        if len(line) > _LONGEST_LINE and not line.endswith("\n"):
            raise ValueError(f"line {number}: longer than {_LONGEST_LINE:,} characters; "
                             "a vector line is a few hex fields")
        yield line
