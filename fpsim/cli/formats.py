"""``python -m fpsim formats``: a table of every built-in format's limits."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..formats import Format, formats
from ..value import exact_decimal
from ._common import emit

SUMMARY = "a table of every built-in format's limits"


def add(sub: Any) -> None:
    fm = sub.add_parser("formats", help=SUMMARY, description=SUMMARY + ".")
    fm.add_argument("--json", action="store_true", help="print a JSON list (exact values)")


def _row(f: Format) -> dict[str, Any]:
    return {
        "name": f.name,
        "aliases": list(f.aliases),
        "width": f.width,
        "sign_bits": int(f.signed),
        "exponent_bits": f.exponent_bits,
        "mantissa_bits": f.mantissa_bits,
        "bias": f.bias,
        # (a P3109 extended format: its single NaN and infinities)
        "specials": f.specials.value + ("+inf" if f.infinities and f.specials.value != "ieee"
                                         else ""),
        "subnormals": f.subnormals,
        "precision": f.precision,
        "emax": f.emax,
        "emin": f.emin,
        "max": exact_decimal(f.max),
        "min_normal": exact_decimal(f.min_normal),
        "min_subnormal": exact_decimal(f.min_subnormal),
        "eps": exact_decimal(f.eps),
    }


def run(args: argparse.Namespace) -> int:
    rows = [_row(f) for f in formats()]
    if args.json:
        emit(json.dumps(rows, indent=2))
        return 0
    header = ("name", "S/E/M", "bias", "specials", "p", "emin", "emax", "max",
              "min normal", "min subnormal", "eps")
    table = [header]
    for f, r in zip(formats(), rows):
        table.append((
            r["name"], f"{r['sign_bits']}/{r['exponent_bits']}/{r['mantissa_bits']}",
            str(r["bias"]), r["specials"], str(r["precision"]), str(r["emin"]), str(r["emax"]),
            exact_decimal(f.max, max_digits=8).lstrip("~"),
            f"2^{f.emin}",
            f"2^{f.emin - f.mantissa_bits}" if f.subnormals else "-",
            f"2^{-f.mantissa_bits}",
        ))
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for i, row in enumerate(table):
        emit("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
        if i == 0:
            emit("  ".join("-" * w for w in widths))
    emit("\nmax is rounded to 8 significant digits; 'formats --json' gives exact values.")
    return 0
