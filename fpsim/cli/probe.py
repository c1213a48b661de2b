"""``python -m fpsim probe``: read a dot/GEMM kernel's arithmetic from its
outputs on constructed inputs, and name the GPU models it matches.

The kernel is named ``module:function`` as for ``sweep`` (the same loader)
and called as :func:`fpsim.mma.probe` calls it: ``fn(a, b, c) -> d`` with
``a``, ``b`` of shape ``(rows, K)`` in the input format's dtype and ``c``,
``d`` of shape ``(rows,)`` in the output's, or with ``--shape gemm``
``fn(A, B) -> D = A @ B`` or ``fn(A, B, C) -> D = A @ B + C`` (a library
call: the probe also names its schedule, split-K, promotion and epilogue;
``--fmt e4m3,e5m2`` for mixed FP8).  Exit status 0 when the probe ran
(whatever it found), 2 on bad input or a kernel that fails (one line on
stderr): one that raises anything, ``SystemExit`` included, when imported
or called, or that runs past ``--call-timeout``.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from ._common import emit, lookup_format, seconds

SUMMARY = "infer a dot/GEMM kernel's accumulator parameters and the GPU models it matches"


def add(sub: Any) -> None:
    pr = sub.add_parser(
        "probe", help=SUMMARY,
        description="Call the kernel on small sets of constructed inputs (Fasi et al.; FPRev "
                    "for the summation order), print what each told (group size, extra "
                    "alignment bits, sticky bit, rounding, where c joins, subnormals, ...) "
                    "and the presets of fpsim.mma with the same parameters.")
    pr.add_argument("--against", required=True, metavar="MODULE:FUNCTION",
                    help="the kernel: fn(a, b, c) -> d (or with --shape gemm, "
                         "fn(A, B) -> D or fn(A, B, C) -> D), importable from here")
    pr.add_argument("--fmt", "--format", dest="fmt", required=True,
                    help="input format of a and b (fp16, bf16, tf32, e4m3, e5m2, e4m3fnuz, "
                         "e5m2fnuz); with --shape gemm, A's and B's as e4m3,e5m2")
    pr.add_argument("--out", default="fp32", help="format of c and d: fp32 (default), fp16, "
                    "bf16")
    pr.add_argument("--shape", default="rows", choices=("rows", "gemm"),
                    help="rows (default): fn(a (rows, K), b (rows, K), c (rows,)) -> d; "
                         "gemm: fn(A (M, K), B (K, N)[, C (M, N)]) -> D, a library GEMM "
                         "whose schedule is probed too")
    pr.add_argument("--k", type=int, default=None,
                    help="call the kernel with this K (default: the widest it accepts, up to "
                         "--max-k)")
    pr.add_argument("--max-k", type=int, default=64, help="widest K tried (default 64)")
    pr.add_argument("--call-timeout", type=seconds, default=None, metavar="SECONDS",
                    help="end the probe (exit 2, naming the probe and its inputs) when one call "
                         "of the kernel takes longer than this (default: no limit)")
    pr.add_argument("--json", action="store_true",
                    help="print the findings as one JSON object")


def run(args: argparse.Namespace) -> int:
    from .. import mma
    from ..mma.probe import ProbeTimeout
    from ..sweep import load_candidate as load

    names = args.fmt.split(",")
    if len(names) > 2 or (len(names) == 2 and args.shape != "gemm"):
        raise ValueError(f"--fmt {args.fmt}: one format, or two (A's,B's) with --shape gemm")
    fin: Any = lookup_format(names[0], "--fmt")
    if len(names) == 2:
        fin = (fin, lookup_format(names[1], "--fmt"))
    fout = lookup_format(args.out, "--out")
    fn = load(args.against)
    try:
        result = mma.probe(fn, fin, fout, shape=args.shape, k=args.k, max_k=args.max_k,
                           timeout=args.call_timeout)
    except ProbeTimeout as exc:
        raise ProbeTimeout(f"{exc}; a kernel that is only slow needs a larger --call-timeout "
                           "than that") from exc
    emit(json.dumps(result.to_dict(), indent=2) if args.json else result)
    return 0
