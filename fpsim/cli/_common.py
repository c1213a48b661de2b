"""What the commands of ``python -m fpsim`` share.

Every command is a module of this package with a stated contract:

* ``SUMMARY`` — one line for the top-level ``--help``;
* ``add(sub)`` — registers its sub-parser (made by :class:`Parser`) on the
  ``add_subparsers()`` object ``sub``;
* ``run(args) -> int`` — does the work and returns the exit status;
* ``VERDICT_WITHOUT_STDOUT`` (optional, True) — it runs with stdout closed,
  which every other command refuses: its exit status is a verdict that
  stands without the report (``ver``), and a note on stderr says so.

A command reports bad input by raising :class:`UsageError`, ``ValueError``,
``TypeError`` or ``OSError`` with a one-line message that names the problem
and what is accepted; :func:`fpsim.cli.main` prints it as ``fpsim: error:
...`` and exits 2.  Nothing here imports numpy or the harness, so that
``python -m fpsim explain`` starts quickly.

The standard streams: a command writes its output through :func:`emit` (or
:func:`write_out`) and its messages through :func:`to_stderr`.  A closed
stdout (``>&-``) is refused (:data:`STDOUT_CLOSED`; a command with
``VERDICT_WITHOUT_STDOUT`` runs and gives its verdict), a closed stderr drops
the messages (never onto stdout), and :func:`ascii_streams` makes every
character a stream's encoding cannot hold degrade to ASCII (``×`` as
``x``, ``±`` as ``+/-``; :data:`ASCII_ERRORS`) instead of failing.
"""

from __future__ import annotations

import argparse
import codecs
import math
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
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

    def _print_message(self, message: str, file: Any = None) -> None:
        # --help and --version: argparse drops a failure to write them (a
        # full disk) and would exit 0; written as every command's output is,
        # the failure is one line and exit 2.  With stdout closed they go to
        # stderr, as argparse sends them.
        if not message:
            return
        if file is not None and file is sys.stdout:
            write_out(message)
        else:
            to_stderr(message.rstrip("\n"))

    def _parse_optional(self, arg_string: str) -> Any:
        # argparse takes '-1e-5', '-inf', '-1/3' or '-0x1p-3' for options (it
        # knows only plain negative integers and decimals as numbers), so a
        # negative VALUE, or a negative option argument such as '--seed -1',
        # would be refused.  Whatever fpsim reads as a number is a value.
        if arg_string[:1] == "-" and arg_string[1:2] not in ("-", "") \
                and reads_as_number(arg_string):
            return None
        return super()._parse_optional(arg_string)


def reads_as_number(text: str) -> bool:
    """Whether fpsim reads ``text`` as a number (``-1e-5`` is a value, not
    an option)."""
    try:
        parse.exact(text)
    except (ValueError, TypeError, ArithmeticError):
        return False
    return True


STDOUT_CLOSED = ("stdout is closed: the output has nowhere to go (give the command an open "
                 "stdout; '>/dev/null' discards it)")


def write_out(text: str) -> bool:
    """Write ``text`` on stdout and flush it; False once the reader went
    away (``| head``): that ends the output, not the command, whose exit
    status still says what was found, so a closed pipe never turns a
    mismatch (1) into success (0).  A closed stdout is a
    :class:`UsageError`; another failure to write (a full disk) an
    ``OSError`` naming stdout."""
    out = sys.stdout
    if out is None:
        raise UsageError(STDOUT_CLOSED)
    try:
        out.write(text)
        out.flush()
    except BrokenPipeError:
        _discard_stdout()
        return False
    except OSError as exc:
        _discard_stdout()
        raise OSError(f"cannot write on stdout: {exc.strerror or exc}") from None
    return True


def emit(text: Any = "") -> None:
    """Print ``text`` (and a newline) on stdout, as :func:`write_out`."""
    write_out(f"{text}\n")


def _discard_stdout() -> None:
    """Point stdout at /dev/null, so that the interpreter's last flush at
    exit does not fail again (and set its own status)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, sys.stdout.fileno())
        finally:
            os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass  # no file descriptor (a stream of Python's own): nothing is flushed at exit


def to_stderr(line: str) -> None:
    """``line`` on stderr; nothing where stderr is closed (``2>&-``) or
    cannot be written (a full disk): never on stdout, where ``print(...,
    file=None)`` would put it."""
    err = sys.stderr
    if err is None:
        return
    try:
        err.write(f"{line}\n")
        err.flush()
    except (OSError, ValueError):
        # What stayed in its buffer would fail again when the interpreter
        # flushes stderr on exit, which then sets exit status 120: the
        # rest goes nowhere.
        try:
            sys.stderr = open(os.devnull, "w")  # noqa: SIM115  (lives as long as the process)
        except OSError:
            sys.stderr = None


# Characters fpsim's text holds, as ASCII, for a stream whose encoding lacks them.
_AS_ASCII = {"×": "x", "±": "+/-", "·": "*", "κ": "kappa", "∞": "inf", "§": "section ",
             "—": "--", "–": "-", "−": "-", "→": "->", "←": "<-", "≤": "<=", "≥": ">=",
             "≠": "!=", "≈": "~", "²": "^2", "…": "...", "‘": "'", "’": "'", "“": '"',
             "”": '"', "µ": "u", "μ": "u", "σ": "sigma", "δ": "delta"}

#: The codec error handler :func:`ascii_streams` sets: a character the
#: encoding cannot hold is written as ASCII (``×`` as ``x``; one of no
#: fpsim text, such as a user's input, as a backslash escape).  On a stream
#: that used ``surrogateescape`` (a C locale's stdout) the handler
#: ``ASCII_ERRORS + "-surrogateescape"`` still writes a byte of a file
#: name the system gave undecoded as that byte.
ASCII_ERRORS = "fpsim-ascii"


def _ascii_handler(escape_bytes: bool) -> Callable[[UnicodeError], tuple[str | bytes, int]]:
    def handle(exc: UnicodeError) -> tuple[str | bytes, int]:
        if not isinstance(exc, UnicodeEncodeError):
            raise exc
        char = exc.object[exc.start]
        if escape_bytes and "\udc80" <= char <= "\udcff":
            return bytes([ord(char) - 0xDC00]), exc.start + 1
        text = _AS_ASCII.get(char) or char.encode("ascii", "backslashreplace").decode("ascii")
        return text, exc.start + 1

    return handle


codecs.register_error(ASCII_ERRORS, _ascii_handler(False))
codecs.register_error(f"{ASCII_ERRORS}-surrogateescape", _ascii_handler(True))


@contextmanager
def ascii_streams() -> Iterator[None]:
    """stdout and stderr write what their encoding cannot hold as ASCII
    (``PYTHONIOENCODING=ascii``, a C locale) instead of failing; their own
    error handlers are back afterwards."""
    changed = []
    for stream in (sys.stdout, sys.stderr):
        errors = getattr(stream, "errors", None)
        if stream is None or not isinstance(errors, str) or errors.startswith(ASCII_ERRORS) \
                or not hasattr(stream, "reconfigure"):
            continue
        handler = ASCII_ERRORS + ("-surrogateescape" if errors == "surrogateescape" else "")
        try:
            stream.reconfigure(errors=handler)
        except (OSError, ValueError):
            continue
        changed.append((stream, errors))
    try:
        yield
    finally:
        for stream, errors in changed:
            try:
                stream.reconfigure(errors=errors)
            except (OSError, ValueError):
                pass


def seconds(text: str) -> float:
    """A positive finite number of seconds (an argparse type: ``--chunk-timeout``,
    ``--call-timeout``)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 < value < math.inf:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive finite number of seconds")
    return value


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
    saturation_options(parser, whose)
    parser.add_argument("--ftz", action="store_true", help=f"{whose}flush tiny results to zero")
    if daz:
        parser.add_argument("--daz", action="store_true",
                            help=f"{whose}read subnormal inputs as zero")


def saturation_options(parser: Any, whose: str = "") -> None:
    """``--saturate`` (P3109's SatFinite) or ``--saturation MODE`` by the
    report's name: both set ``args.saturate`` (False by default); and
    ``--p3109 TEXT``, the P3109 text whose rules P3109 formats follow
    (``args.p3109``, "v4.0" by default)."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--saturate", action="store_const", const=True, dest="saturate",
                       help=f"{whose}clamp overflow (and inf) to ±max (P3109 SatFinite)")
    group.add_argument("--saturation", dest="saturate", metavar="MODE", type=str.lower,
                       choices=["satfinite", "satpropagate", "satnone", "ovfinf"],
                       help=f"{whose}IEEE P3109 saturation mode: satfinite (= --saturate), "
                            "satpropagate (clamp finite overflow, keep inf), satnone "
                            "(release 3's ovfinf: overflow to inf; max where the format "
                            "has none)")
    parser.set_defaults(saturate=False)
    parser.add_argument("--p3109", metavar="TEXT", type=str.lower, default="v4.0",
                        choices=["v4.0", "v3.2.1", "3", "ieee"],
                        help=f"{whose}the IEEE P3109 text whose rules P3109 formats follow: "
                             "v4.0 (default), v3.2.1, 3 (release 3) or ieee (IEEE 754's: x/0 is "
                             "inf, a negative value into an unsigned format NaN)")


def tolerance_options(parser: Any) -> None:
    """The report's options, as ``diff`` and ``sweep`` take them."""
    parser.add_argument("--max-ulp", type=int, default=0,
                        help="accepted ULP distance (default 0; in diff, none when only "
                             "--max-kappa is given)")
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


# TestFloat's rounding options (testfloat_gen, testfloat_ver) and fpsim's names for them.
TESTFLOAT_ROUNDING = (("-rnear_even", "rne", "to nearest, ties to even (default)"),
                      ("-rminMag", "rtz", "toward zero"), ("-rmin", "rdn", "toward -inf"),
                      ("-rmax", "rup", "toward +inf"),
                      ("-rnear_maxMag", "rna", "to nearest, ties away from zero"),
                      ("-rodd", "rto", "to odd"))


def testfloat_options(parser: Any) -> None:
    """The options ``gen`` and ``ver`` share: TestFloat's own where it has
    them (single dash), then fpsim's (double dash)."""
    parser.add_argument("-level", type=int, default=1,
                        help="1 (default) or 2: how many special and boundary codes are "
                             "crossed (level 2: every tuple of codes of formats up to 8 bits)")
    parser.add_argument("-seed", type=int, default=1, help="seed of the random cases (default 1)")
    parser.add_argument("-n", type=int, default=None, metavar="COUNT",
                        help="number of cases (default: the level's count)")
    modes = parser.add_mutually_exclusive_group()
    for option, mode, words in TESTFLOAT_ROUNDING:
        modes.add_argument(option, dest="rounding", action="store_const", const=mode,
                           help=f"round {words} ({mode})")
    modes.add_argument("--rounding", dest="rounding", metavar="MODE",
                       help=f"rounding mode by fpsim's name: {ROUNDING_NAMES} (sr: stochastic, "
                            "with a column of random bits after the operands)")
    parser.set_defaults(rounding="rne")
    tininess = parser.add_mutually_exclusive_group()
    tininess.add_argument("-tininessbefore", dest="tininess", action="store_const",
                          const="before", help="detect tininess before rounding")
    tininess.add_argument("-tininessafter", dest="tininess", action="store_const",
                          const="after", help="detect tininess after rounding (default)")
    parser.set_defaults(tininess="after")
    exact = parser.add_mutually_exclusive_group()
    exact.add_argument("-exact", dest="exact", action="store_const", const=True,
                       help="roundToInt: raise inexact when the value changes")
    exact.add_argument("-notexact", dest="exact", action="store_const", const=False,
                       help="roundToInt: no inexact flag (default)")
    parser.set_defaults(exact=False)
    saturation_options(parser)
    parser.add_argument("--ftz", action="store_true", help="flush tiny results to zero")
    parser.add_argument("--daz", action="store_true", help="read subnormal operands as zero")
    parser.add_argument("--sr-bits", type=int, default=32, metavar="N",
                        help="random bits of stochastic rounding (default 32)")


def testfloat_context(args: argparse.Namespace, nan: str | None) -> Any:
    """The :class:`fpsim.Context` the options of :func:`testfloat_options` set."""
    from ..context import Context

    return Context(rounding=args.rounding, tininess=args.tininess, saturate=args.saturate,
                   ftz=args.ftz, daz=args.daz, sr_bits=args.sr_bits,
                   nan=nan if nan is not None else "ieee", p3109=args.p3109)


# Packed and tiled dumps (fpsim.testing.packing names the same values).
PACK_ORDERS = ("low-first", "high-first")
LAYOUTS = ("row-major", "blocked")


def packing_options(parser: Any, overrides: tuple[tuple[str, str], ...]) -> None:
    """``--pack`` and ``--layout``, as ``diff`` and ``ref`` take them, and
    an override of each per file: ``overrides`` pairs an option prefix
    (``"actual"`` gives ``--actual-pack``) with the help for it."""
    parser.add_argument("--pack", default=None, choices=PACK_ORDERS, metavar="ORDER",
                        help="the dumps hold codes of a 4- or 6-bit format packed several to "
                             "a byte: low-first (the first code in the lowest bits: FP4's low "
                             "nibble first, as torch.float4_e2m1fn_x2) or high-first "
                             "(default: one code a byte)")
    parser.add_argument("--layout", default=None, choices=LAYOUTS, metavar="LAYOUT",
                        help="row-major (default) or blocked: a matrix of 8-bit scale codes "
                             "(e8m0, e4m3) in cuBLAS's 128x4-tile layout, of the logical "
                             "shape --shape")
    for prefix, whom in overrides:
        parser.add_argument(f"--{prefix}-pack", default=None, choices=PACK_ORDERS + ("none",),
                            metavar="ORDER", help=f"--pack for {whom} (none: one code a byte)")
        parser.add_argument(f"--{prefix}-layout", default=None, choices=LAYOUTS,
                            metavar="LAYOUT", help=f"--layout for {whom}")


def packing_of(args: argparse.Namespace, prefix: str | None, fmt: Format | None,
               default: tuple[str | None, str | None] | None = None
               ) -> tuple[str | None, str]:
    """``(pack, layout)`` of a file: ``--PREFIX-pack`` and ``--PREFIX-layout``
    where given (no prefix: none), else ``default``, else ``--pack`` and
    ``--layout``; checked against the file's format ``fmt`` (when known)
    with the option's name in the message."""
    pack, layout = default if default is not None else (args.pack, args.layout)
    pack_flag, layout_flag = "--pack", "--layout"
    if prefix is not None and getattr(args, f"{prefix}_pack") is not None:
        pack, pack_flag = getattr(args, f"{prefix}_pack"), f"--{prefix}-pack"
    if prefix is not None and getattr(args, f"{prefix}_layout") is not None:
        layout, layout_flag = getattr(args, f"{prefix}_layout"), f"--{prefix}-layout"
    pack = None if pack == "none" else pack
    layout = layout or "row-major"
    if fmt is not None and pack is not None and fmt.width not in (4, 6):
        raise ValueError(f"{pack_flag} {pack}: {fmt.name} codes are {fmt.width} bits; packing "
                         "applies to the 4- and 6-bit formats (e2m1, e3m2, e2m3)")
    if fmt is not None and layout == "blocked" and (fmt.width != 8 or pack is not None):
        raise ValueError(f"{layout_flag} blocked: {fmt.name} codes are {fmt.width} bits; the "
                         "blocked layout is of 8-bit scale codes, one a byte (e8m0, e4m3)")
    return pack, layout
