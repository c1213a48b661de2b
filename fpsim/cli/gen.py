"""``python -m fpsim gen``: Berkeley TestFloat's ``testfloat_gen`` for every
fpsim format (:mod:`fpsim.testfloat`; docs/verifying.rst).

One case a line on stdout: the operands, (under stochastic rounding) the
random bits, the golden result and the flags, in upper-case hex.
"""

from __future__ import annotations

import argparse
from typing import Any

from ._common import UsageError, emit, testfloat_context, testfloat_options, write_out

SUMMARY = "write TestFloat vectors for any format: operands, golden result, flags (testfloat_gen)"

_EPILOG = """\
examples:
  python -m fpsim gen f16_mulAdd -rminMag -n 1000
  python -m fpsim gen e4m3_mul -level 2          (all 65,536 operand pairs)
  python -m fpsim gen f32_to_e5m2 --saturate
  python -m fpsim gen bf16_add --rounding sr --sr-bits 8

Line: operands, [random bits under --rounding sr], result, flags; hex, upper
case, one space apart; flags 01 inexact, 02 underflow, 04 overflow,
08 infinite, 10 invalid.  The same options and seed give the same lines on
every machine.  'python -m fpsim ver OP' checks a device's lines."""


def add(sub: Any) -> None:
    gp = sub.add_parser("gen", help=SUMMARY, allow_abbrev=False,
                        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=_EPILOG,
                        description="Write test vectors of OP in Berkeley TestFloat's line "
                                    "format, with fpsim's golden results.")
    gp.add_argument("op", nargs="?", metavar="OP",
                    help="e.g. f16_add, f32_mulAdd, e4m3_lt_quiet, f32_to_e5m2, i32_to_bf16 "
                         "(-list lists them)")
    testfloat_options(gp)
    gp.add_argument("--nan", default=None, metavar="POLICY",
                    help="NaN policy of the results: ieee (default), x86, arm_default_nan, "
                         "riscv")
    gp.add_argument("--no-flags", action="store_true", help="leave the flags field out")
    gp.add_argument("-list", action="store_true", help="list the operations and exit")


def run(args: argparse.Namespace) -> int:
    from .. import testfloat

    if args.list:
        emit("\n".join(testfloat.operations()))
        return 0
    if args.op is None:
        raise UsageError("missing OP, e.g. 'python -m fpsim gen f16_add' "
                         "('python -m fpsim gen -list' lists them)")
    ctx = testfloat_context(args, args.nan)
    op = testfloat.operation(args.op)
    lines = testfloat.generate(op, ctx, level=args.level, seed=args.seed, n=args.n,
                               exact=args.exact, flags=not args.no_flags, chunk_size=16384)
    block: list[str] = []
    for line in lines:
        block.append(line)
        if len(block) == 16384:
            if not _write(block):
                return 0
            block = []
    if block:
        _write(block)
    return 0


def _write(block: list[str]) -> bool:
    """Write lines on stdout; False once the reader went away (``| head``):
    the generation stops there, which is no error."""
    return write_out("\n".join(block) + "\n")
