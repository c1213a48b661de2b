"""``python -m fpsim vectors``: write, or check, the golden vector files."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ._common import UsageError, emit, plural

SUMMARY = "write (or --check) the golden test vector files of spec/vectors"

# Where a checkout of fpsim keeps the vectors, next to their description.
DEFAULT_OUT = "spec/vectors"
_CHECKOUT_MARK = "spec/vectors.md"


def add(sub: Any) -> None:
    vc = sub.add_parser("vectors", help=SUMMARY,
                        description="Write the golden vector files (spec/vectors.md) and their "
                                    "SHA256SUMS manifest, or --check them.")
    vc.add_argument("--out", default=None, metavar="DIR",
                    help=f"directory (default {DEFAULT_OUT}, in a checkout of fpsim only: "
                         "elsewhere give --out DIR)")
    vc.add_argument("--check", action="store_true",
                    help="exit 1 unless DIR holds exactly what fpsim generates now")
    vc.add_argument("--formats", metavar="NAME[,NAME...]", default=None,
                    help="with --check: check only these formats' folders and manifest lines "
                         "(default: every format)")


def run(args: argparse.Namespace) -> int:
    from .. import _vectors

    if args.out is None and not args.check and not Path(_CHECKOUT_MARK).is_file():
        # Outside a checkout the default would make ./spec/vectors and write
        # ~2,000 files into it: only a named folder is written.
        raise UsageError(f"no checkout of fpsim here (no {_CHECKOUT_MARK}): name the folder to "
                         "write the vector files into with --out DIR")
    out = Path(DEFAULT_OUT if args.out is None else args.out)
    if args.check:
        if not out.is_dir():
            # Outside a checkout there is nothing to check: one line, not one
            # 'missing:' line per vector file.
            raise UsageError(f"--check: no folder {out} here; run it from a checkout of "
                             "fpsim, or name the folder with --out DIR")
        only = None if args.formats is None else {n.strip() for n in args.formats.split(",")}
        problems = _vectors.check(out, only)
        for p in problems:
            emit(p)
        emit(f"{out}: {'up to date' if not problems else plural(len(problems), 'problem')}")
        return 1 if problems else 0
    if args.formats is not None:
        raise UsageError("--formats selects what --check reads; writing writes every format "
                         "(and the manifest of all of them)")
    names = _vectors.write(out)
    emit(f"wrote {plural(len(names), 'vector file')} and {_vectors.MANIFEST} under {out}")
    return 0
