"""``python -m fpsim vectors``: write, or check, the golden vector files."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ._common import UsageError, emit, plural

SUMMARY = "write (or --check) the golden test vector files of spec/vectors"


def add(sub: Any) -> None:
    vc = sub.add_parser("vectors", help=SUMMARY,
                        description="Write the golden vector files (spec/vectors.md) and their "
                                    "SHA256SUMS manifest, or --check them.")
    vc.add_argument("--out", default="spec/vectors",
                    help="directory (default spec/vectors, as in a checkout of fpsim)")
    vc.add_argument("--check", action="store_true",
                    help="exit 1 unless DIR holds exactly what fpsim generates now")
    vc.add_argument("--formats", metavar="NAME[,NAME...]", default=None,
                    help="with --check: check only these formats' folders and manifest lines "
                         "(default: every format)")


def run(args: argparse.Namespace) -> int:
    from .. import _vectors

    out = Path(args.out)
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
