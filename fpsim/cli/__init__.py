"""``python -m fpsim``: the command line, one module per command.

Usage::

    python -m fpsim explain 1e-5 --fmt fp16 [--rounding MODE] [--saturate] [--ftz] [--json]
    python -m fpsim explain --bits 0x3C00 --fmt fp16
    python -m fpsim formats [--json]
    python -m fpsim diff ACTUAL EXPECTED [--fmt FMT] [--max-ulp N] [--json] [--byteorder ORDER]
                         [--scheduler local|processes|ADDRESS]
    python -m fpsim ref OP [--fmt FMT] IN [IN ...] OUT [--shape MxK ...] [--accumulate FMT] ...
    python -m fpsim vectors [--out DIR] [--check]
    python -m fpsim sweep OP --fmt FMT --against MODULE:FUNCTION [--scheduler local|ADDRESS]
                         [--sample FRACTION] [--specials V,...] [--progress-file F] [--json]
    python -m fpsim gen OP [-level 1|2] [-seed N] [-n COUNT] [-rmin ...] [-tininessbefore]
    python -m fpsim ver OP [same options] [FILE] [--no-flags] [--nan POLICY] [--json]
    python -m fpsim probe --against MODULE:FUNCTION --fmt FMT [--out FMT] [--shape rows|gemm]
                         [--k K] [--call-timeout SECONDS] [--json]
    python -m fpsim --version

``diff`` exits 0 when the dumps agree within tolerance, 1 when they do not;
``sweep`` likewise for the candidate kernel, and 130 when interrupted
before a mismatch was found; ``ver`` likewise for a device's TestFloat lines.

Bad input exits with status 2 and one line on stderr; never a traceback.
So does user code that fails (a ``--against`` module or callable raising
anything, ``SystemExit`` included, when imported or called): only Ctrl-C
(KeyboardInterrupt) interrupts.  A closed stdout is bad input (but for
``ver``, whose status is the verdict: a note on stderr); a closed stderr
drops the messages; text a stream's encoding cannot hold degrades
to ASCII (``×`` as ``x``).  The commands are the modules :mod:`fpsim.cli.explain`, ``formats``,
``diff``, ``ref``, ``vectors``, ``sweep``, ``gen``, ``ver`` and ``probe``; :mod:`fpsim.cli._common`
states what each provides.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from .. import __version__, _names
from . import _common, diff, explain, formats, gen, probe, ref, sweep, vectors, ver
from ._common import STDOUT_CLOSED, Parser, UsageError, ascii_streams, to_stderr

__all__ = ["main"]

COMMANDS = (explain, formats, diff, ref, vectors, sweep, gen, ver, probe)
_NAMES = [c.__name__.rsplit(".", 1)[1] for c in COMMANDS]

_EXAMPLES = """\
examples:
  python -m fpsim explain 1e-5 --fmt fp16
  python -m fpsim explain --bits 0x7e --fmt e4m3
  python -m fpsim diff out.bin gold.bin --fmt fp16 --max-ulp 1
  python -m fpsim ref list

'python -m fpsim COMMAND --help' describes a command.  Exit status 2 means
bad input (one line on stderr)."""


def _build_parser() -> tuple[Parser, dict[str, Parser]]:
    """The parser, and each command's own parser by name."""
    parser = Parser(
        prog="python -m fpsim",
        description="fpsim: the bit-exact golden model of the floating-point formats\n"
                    "ML hardware computes in (FP32, FP16, BF16, FP8, MX, ...).",
        epilog=_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"fpsim {__version__}")
    sub = parser.add_subparsers(dest="command", title="commands",
                                metavar="{" + ",".join(_NAMES) + "}", parser_class=Parser)
    for command in COMMANDS:
        command.add(sub)
    return parser, sub.choices


def _nearest_options(parser: argparse.ArgumentParser, extra: list[str]) -> str:
    """"; did you mean -level?" for unrecognized options near the command's
    own (``--level``: TestFloat's options take one dash), else nothing."""
    owner = {o: action for action in parser._actions for o in action.option_strings}
    found: list[tuple[str, list[str]]] = []
    for given in extra:
        flag = given.split("=", 1)[0]
        if flag.startswith("-") and not _common.reads_as_number(flag):
            near: list[str] = []
            for o in _names.nearest(flag, owner, n=4):  # one spelling per option
                if all(owner[o] is not owner[n] for n in near) and len(near) < 2:
                    near.append(o)
            if near:
                found.append((flag, near))
    if not found:
        return ""
    if len(found) == 1:
        text = f"; did you mean {_names.alternatives(found[0][1])}?"
    else:
        text = "; did you mean " + ", ".join(f"{_names.alternatives(near)} for {flag}"
                                            for flag, near in found) + "?"
    one_dash = any(flag.startswith("--") and not o.startswith("--") and len(o) > 2
                   for flag, near in found for o in near)
    return text + (" (TestFloat's options take one dash)" if one_dash else "")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status."""
    with ascii_streams():
        return _main(argv)


def _main(argv: Sequence[str] | None) -> int:
    parser, commands = _build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        try:
            args, extra = parser.parse_known_args(argv)
        except SystemExit as done:  # --help and --version print, then stop
            return int(done.code or 0)
        if args.command == "ref":
            # argparse gives 'ref OP --fmt F IN OUT' the paths after the
            # options as extras: they are the paths.
            args.paths += [e for e in extra if not e.startswith("-")]
            extra = [e for e in extra if e.startswith("-")]
        if extra:
            command = commands.get(args.command, parser)
            command.error(f"unrecognized arguments: {' '.join(extra)}"
                          + _nearest_options(command, extra))
        if args.command is None:
            raise UsageError(f"missing command; accepted: {', '.join(_NAMES)} "
                             "(e.g. 'python -m fpsim explain 1e-5 --fmt fp16'; "
                             "'python -m fpsim --help' lists them)")
        command = COMMANDS[_NAMES.index(args.command)]
        if sys.stdout is None and not getattr(command, "VERDICT_WITHOUT_STDOUT", False):
            raise UsageError(STDOUT_CLOSED)  # '>&-': the command's output would be lost
        return command.run(args)
    except (UsageError, ValueError, TypeError, OverflowError) as exc:
        return _fail(str(exc))
    except BrokenPipeError:
        # Commands write through _common.emit, which keeps their status when
        # the reader goes away; output lost anywhere else is not a success.
        return 1
    except (ImportError, RuntimeError, ConnectionError) as exc:
        # a candidate kernel that cannot be imported or that fails; an
        # unreachable Dask scheduler
        return _fail(str(exc))
    except KeyboardInterrupt:
        to_stderr("fpsim: interrupted")
        return sweep.INTERRUPTED
    except OSError as exc:  # unreadable or unwritable files
        return _fail(f"{exc.strerror or exc}: {exc.filename}" if exc.filename else str(exc))
    except MemoryError:
        return _fail("out of memory")


_LONGEST = 600  # characters of an error message; longer ones echo a huge input


def _fail(message: str) -> int:
    """One line on stderr, exit 2.  A message quoting a huge argument (a
    5000-digit --bits, say) keeps its start and end, so it stays readable."""
    message = " ".join(message.split())  # one line, whatever the input held
    if len(message) > _LONGEST:
        cut = len(message) - _LONGEST
        message = f"{message[:450]} ...({cut:,} characters left out)... {message[-150:]}"
    to_stderr(f"fpsim: error: {message}")
    return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
