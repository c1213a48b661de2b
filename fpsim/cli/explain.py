"""``python -m fpsim explain``: what happens to a value in a format."""

from __future__ import annotations

import argparse
import json
import re
from typing import Any

from ..explain import DEFAULT_SEED, explain, explain_bits, render
from ._common import UsageError, emit, lookup_format, rounding_options

SUMMARY = "what happens to a value in a format: bits, exact value, error, flags"

_BINARY = re.compile(r"0[bB][01_]+")


def add(sub: Any) -> None:
    ex = sub.add_parser(
        "explain", help=SUMMARY,
        description="Round VALUE into a format (or decode --bits) and explain the result: "
                    "bits, exact value, error, flags, notes. Long exact decimals are shown "
                    "short (2^-133 ~ 9.18e-41); --exact prints them in full, --json gives "
                    "both. Errors are signed: result minus the exact input.")
    ex.add_argument("value", nargs="?",
                    help="a decimal ('1e-5', any length), rational ('1/3'), hex float "
                         "('0x1.ffcp15'), inf, nan or snan; negative ones too ('-1e-5', "
                         "or after '--')")
    ex.add_argument("--bits", help="explain this bit pattern (hex like 0x3C00, or decimal) "
                    "instead of rounding a value")
    ex.add_argument("--fmt", "--format", dest="fmt", default="fp16",
                    help="format name or alias (default fp16; see 'formats')")
    rounding_options(ex, daz=False)
    ex.add_argument("--tininess", default="after", help="after (default) or before rounding")
    ex.add_argument("--seed", type=int, default=None,
                    help=f"seed of the random bits of --rounding sr (default {DEFAULT_SEED}: "
                         "the same result every run)")
    ex.add_argument("--exact", action="store_true",
                    help="print every value as its exact decimal expansion, however long")
    ex.add_argument("--json", action="store_true",
                    help="print one JSON object (exact values, and their short forms)")


def run(args: argparse.Namespace) -> int:
    args.fmt = lookup_format(args.fmt)  # a mistyped name: "--fmt: ...; did you mean ...?"
    if args.bits is not None:
        if args.value is not None:
            raise UsageError("give either VALUE or --bits, not both")
        report = explain_bits(_parse_bits(args.bits), args.fmt)
    else:
        if args.value is None:
            raise UsageError("explain needs a VALUE (e.g. 1e-5) or --bits 0x3C00")
        if _BINARY.fullmatch(args.value.strip()):
            # a code written in binary: fpsim reads no binary numbers
            raise UsageError(f"VALUE {args.value.strip()!r} is binary, which is no number "
                             f"fpsim reads: '--bits {args.value.strip()}' decodes it as a code "
                             "(a value is decimal, rational or a hex float)")
        report = explain(args.value, args.fmt, rounding=args.rounding, saturate=args.saturate,
                         ftz=args.ftz, tininess=args.tininess, seed=args.seed,
                         p3109=args.p3109)
    emit(json.dumps(report, indent=2) if args.json else render(report, exact=args.exact))
    return 0


def _parse_bits(text: str) -> int:
    if len(text) > 80:  # no code is wider than 64 bits: 66 characters in binary
        raise UsageError(f"--bits: {len(text):,} characters is more than any format's code "
                         "(at most 64 bits); accepted: hex like 0x3C00, binary like "
                         "0b0011110000000000, or decimal")
    try:
        return int(text, 0)
    except ValueError:
        raise UsageError(f"--bits {text!r} is not an integer; accepted: hex like 0x3C00, "
                         "binary like 0b0011110000000000, or decimal") from None
