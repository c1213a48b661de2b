"""What the commands of ``python -m fpsim`` share.

Every command is a module of this package with a stated contract:

* ``SUMMARY`` — one line for the top-level ``--help``;
* ``add(sub)`` — registers its sub-parser (made by :class:`Parser`) on the
  ``add_subparsers()`` object ``sub``;
* ``run(args) -> int`` — does the work and returns the exit status.

A command reports bad input by raising :class:`UsageError`, ``ValueError``,
``TypeError`` or ``OSError`` with a one-line message that names the problem
and what is accepted; :func:`fpsim.cli.main` prints it as ``fpsim: error:
...`` and exits 2.  Nothing here imports numpy or the harness, so that
``python -m fpsim explain`` starts quickly.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, NoReturn

from .. import parse
from ..formats import Format
from ..formats import format as _lookup
from ..modes import ROUNDING_NAMES


class UsageError(Exception):
    """A command-line mistake: reported in one line, exit status 2."""


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors and negative numbers read as values."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see '{self.prog} --help')")

    def _parse_optional(self, arg_string: str) -> Any:
        # argparse takes '-1e-5', '-inf', '-1/3' or '-0x1p-3' for options (it
        # knows only plain negative integers and decimals as numbers), so a
        # negative VALUE, or a negative option argument such as '--seed -1',
        # would be refused.  Whatever fpsim reads as a number is a value.
        if arg_string[:1] == "-" and arg_string[1:2] not in ("-", "") and _reads(arg_string):
            return None
        return super()._parse_optional(arg_string)


def _reads(text: str) -> bool:
    try:
        parse.exact(text)
    except (ValueError, TypeError, ArithmeticError):
        return False
    return True


def emit(text: Any = "") -> None:
    """Print ``text`` on stdout.  A reader that went away (``| head``) ends
    the output, not the command: its exit status still says what was
    found, so a closed pipe never turns a mismatch (1) into success (0)."""
    try:
        print(text, flush=True)
    except BrokenPipeError:
        # Point stdout at /dev/null, so that the interpreter's last flush at
        # exit does not fail again (and set its own status).
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def lookup_format(name: str | None, option: str = "--fmt") -> Format | None:
    """The format called ``name`` (None for None); a ValueError names the option."""
    if name is None:
        return None
    try:
        return _lookup(name)
    except ValueError as exc:
        raise ValueError(f"{option}: {exc}") from None


def plural(count: int, word: str, words: str | None = None) -> str:
    """``"1 file"``, ``"2 files"``: the count with the word in agreement."""
    return f"{count:,} {word if count == 1 else (words or word + 's')}"


def rounding_options(parser: Any, daz: bool = True, whose: str = "") -> None:
    """The rounding settings, as ``explain``, ``ref`` and ``sweep`` take them
    (``whose`` prefixes the help: ``"golden: "`` where a candidate has its own)."""
    parser.add_argument("--rounding", default="rne", help=f"rounding mode: {ROUNDING_NAMES}")
    parser.add_argument("--saturate", action="store_true",
                        help=f"{whose}clamp overflow (and inf) to ±max")
    parser.add_argument("--ftz", action="store_true", help=f"{whose}flush tiny results to zero")
    if daz:
        parser.add_argument("--daz", action="store_true",
                            help=f"{whose}read subnormal inputs as zero")


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
