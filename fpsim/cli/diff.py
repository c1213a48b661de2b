"""``python -m fpsim diff``: compare a device's tensor dump with the golden one.

Exit status 0: within tolerance; 1: not; 2: bad input (one line naming the
file).  The tolerance is ``--max-ulp N`` (ULP distance), ``--max-kappa N``
(IEEE P3109's κ, :func:`fpsim.testing.kappa`) or both; with ``--max-kappa``
alone no ULP limit applies.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from ._common import (
    emit,
    lookup_format,
    packing_of,
    packing_options,
    scheduler_options,
    tolerance_options,
)

SUMMARY = "compare a device's tensor dump with the golden one (exit 0 agree, 1 differ)"


def add(sub: Any) -> None:
    df = sub.add_parser(
        "diff", help=SUMMARY,
        description="Compare ACTUAL with EXPECTED element by element (raw binary dumps of "
                    "codes, or .npy files; codes of 4- and 6-bit formats may be packed with "
                    "--pack, scale matrices tiled with --layout blocked) and print the report, "
                    "with the largest ULP distance and the largest kappa (IEEE P3109's count "
                    "of the format's values between a result and the expected one; NaN or inf "
                    "where they do not match on NaNs or infinities). "
                    "Exit status 0: within tolerance; 1: not; 2: bad input.")
    df.add_argument("actual", help="the dump under test (raw codes or .npy)")
    df.add_argument("expected", help="the golden dump (raw codes or .npy)")
    df.add_argument("--fmt", "--format", dest="fmt", default=None,
                    help="the format of raw dumps and of .npy files of integer codes "
                         "(.npy files of float values carry their own)")
    df.add_argument("--byteorder", default="little", help="of raw dumps: little (default), big")
    df.add_argument("--shape", default=None,
                    help="the dumps' logical shape, e.g. 64x128 (needed by --layout blocked, "
                         "and by an odd count of packed FP4 codes; default: flat, or a .npy "
                         "file's own)")
    packing_options(df, (("actual", "ACTUAL only"), ("expected", "EXPECTED only")))
    tolerance_options(df)
    df.add_argument("--max-kappa", type=int, default=None, metavar="N",
                    help="accepted kappa (IEEE P3109's measure: the format's values from the "
                         "expected value to the actual one; the ULP distance on finite values, "
                         "inf for an infinity against a finite value). With --max-kappa "
                         "alone no ULP limit applies; with --max-ulp too, a pair must be "
                         "within both (default: kappa is reported, not a limit)")
    # --max-ulp's default, 0, applies unless --max-kappa is given (run() resolves it)
    df.set_defaults(max_ulp=None)
    scheduler_options(df, "compare the chunks on Dask (the files must be readable where the "
                          "workers run)")


def run(args: argparse.Namespace) -> int:
    from .. import _schedulers
    from ..testing import _compare, _dumps

    fmt = lookup_format(args.fmt)
    if args.nan not in ("any", "exact"):
        raise ValueError(f"--nan {args.nan!r}: accepted: any, exact")
    if (args.max_ulp is not None and args.max_ulp < 0) or args.offenders < 0:
        raise ValueError("--max-ulp and --offenders must not be negative")
    if args.max_kappa is not None and args.max_kappa < 0:
        raise ValueError(f"--max-kappa {args.max_kappa}: accepted: an integer >= 0")
    shape = None if args.shape is None else _dumps.parse_shape(args.shape)
    actual, expected = (_dumps.read(path, fmt, args.byteorder, shape, label,
                                    *packing_of(args, label.lower(), fmt))
                        for path, label in ((args.actual, "ACTUAL"), (args.expected, "EXPECTED")))
    for label, path, a in (("ACTUAL", args.actual, actual), ("EXPECTED", args.expected, expected)):
        if fmt is None and a.dtype.kind in "iu":
            raise ValueError(f"{label} {path} holds integer codes: give their format with --fmt")
    if actual.size != expected.size:
        padded = any(d.pack is not None for d in (actual, expected)) and shape is None
        raise ValueError(f"length mismatch: ACTUAL {args.actual} has {actual.size} elements, "
                         f"EXPECTED {args.expected} has {expected.size}"
                         + ("; a packed dump's last byte may hold padding: give the count "
                            "with --shape" if padded else ""))
    if actual.shape != expected.shape:
        if args.actual.endswith(".npy") and args.expected.endswith(".npy"):
            raise ValueError(f"shape mismatch: ACTUAL {args.actual} is {actual.shape}, "
                             f"EXPECTED {args.expected} is {expected.shape}")
        # a raw dump (flat) against a .npy file: compare in flat order
        actual, expected = actual.reshape(-1), expected.reshape(-1)
    options = dict(max_ulp=args.max_ulp, max_kappa=args.max_kappa, nan=args.nan,
                   signed_zero=not args.ignore_zero_sign, offenders=args.offenders,
                   labels=(f"ACTUAL {args.actual}", f"EXPECTED {args.expected}"),
                   hint="give --fmt")
    # In this process too the chunks are read as a task elsewhere reads them
    # (explicit reads, each file checked for changes), and the scheduler's
    # options are checked whether or not a scheduler is named.
    work = _schedulers.runner(args.scheduler, args.workers, args.timeout)
    try:
        report = _compare.run_files(actual, expected, actual.shape, fmt, work, **options)
    finally:
        work.close()
    emit(json.dumps(report.to_dict(), indent=2) if args.json else report)
    return 0 if report.ok else 1
