"""The probe of where ``c`` joins a block's sum: aligned with the products
(``c_joins="first"``) or added after them (``"last"``), with the late
alignment's extra bits and rounding.  A mixin of the probing session
(:mod:`fpsim.mma.probe`)."""

from __future__ import annotations

import math
from typing import Any

from ._probe_bits import ROUNDINGS, cand_text
from ._probe_findings import Finding
from ._probe_io import Row
from .params import MMAParams

__all__ = ["WhereCJoins"]


class WhereCJoins:
    """Stage: :meth:`join_probe`."""

    def join_probe(self, base: MMAParams, F: int, r_bits: int | None) -> MMAParams | None:
        """Where c joins, how late alignment rounds, and odd/even groups:
        rows where ``c`` is larger than the products' sum, and smaller, with
        bits at every depth below the alignment grid, rows where ``c`` is
        the larger and the sum leaves its binade (a carry, a cancellation)
        with a bit at every depth below ``c``'s grid, and rows with small
        terms at odd positions beside a large one at position 0; every
        candidate architecture is run on them and those that give every
        output are kept.  A late candidate comes with and without the drop
        of a ``c`` more than ``F + 1`` binades below the sum
        (``c_dropped_below``) and with and without a normalized register one
        bit narrower than the late alignment's (``normalized_bits``: MMA-Sim's
        CDNA3 ``F2``)."""
        fout = self.fout
        r = fout.mantissa_bits if r_bits is None else r_bits
        eb = self._scale()
        s = math.ldexp(1.0, eb)
        U = math.ldexp(1.0, -r)
        rows: list[Row] = []
        k = base.k
        for delta in range(0, 11):
            tiny = math.ldexp(1.0, -F - delta)
            for sc in (1, -1):
                for odd in (0, 1):
                    for tie in (0, 1):
                        for st in (1, -1):
                            prods = {0: sc * tie * U / 2 * s, 1: st * tiny * s}
                            if tie == 0:
                                prods[2] = st * tiny * s
                            rows.append(Row.of({p: v for p, v in prods.items() if v},
                                               sc * (1 + odd * U) * s, "c larger"))
        for delta in range(0, 7):
            for odd in (0, 1):
                for sc in (1, -1):
                    for m in (1, 3):
                        rows.append(Row.of({0: s, 1: odd * U * s, 2: U / 2 * s},
                                           sc * m * math.ldexp(1.0, -F - delta) * s,
                                           "products larger"))
        for delta in range(0, 11):
            tiny = math.ldexp(1.0, -F - delta) * s
            for sc in (1, -1):
                for st in (1, -1):
                    # (2 - U) + 2U: a carry to the tie 2 + U; 1 - 3U/4: a cancellation
                    # below c's binade to 1 - 3U/4, a tie of the binade below
                    rows.append(Row.of({0: sc * 2 * U * s, 1: st * tiny},
                                       sc * (2 - U) * s, "c larger, a carry"))
                    rows.append(Row.of({0: -sc * 0.75 * U * s, 1: st * tiny},
                                       sc * s, "c larger, a cancellation"))
        odds = [p for p in range(1, k, 2)]
        evens = [p for p in range(2, k, 2)]
        for delta in range(-1, 4):
            small = math.ldexp(1.0, -F - delta) * s
            for group in (odds, evens):
                for tie in (0, 1):
                    prods = {0: s}
                    prods.update({p: small for p in group})
                    if tie and 2 not in group:
                        prods[2] = U / 2 * s
                    rows.append(Row.of(prods, 0.0, "small terms in one parity"))
        rows += self.random_rows(120, positions=k, full_mantissas=False, eb=eb)
        cands: list[dict[str, Any]] = [{"accumulation": "aligned", "c_joins": "first"}]
        for acc in ("aligned", "odd_even"):
            for late in range(0, 9):
                for ar in ROUNDINGS:
                    for drop in (None, F + 1):
                        for norm in (None, F + late - 1):
                            if norm is not None and norm < fout.mantissa_bits:
                                continue
                            cands.append({"accumulation": acc, "c_joins": "last",
                                          "late_extra_bits": late, "align_rounding": ar,
                                          "c_dropped_below": drop, "normalized_bits": norm})
        keep, rows, d = self.eliminate(base, cands, rows, "where c joins")
        how = ("rows with c larger and smaller than the products' sum, bits below the grid "
               "and ties; c larger with a carry or a cancellation to a tie; small terms at "
               "odd or even positions beside a large one; "
               f"{len(cands)} candidate architectures run on them")
        if not keep:
            self.f["c_joins"] = Finding(None, how + ": none reproduces the outputs",
                                        self.evidence(rows, d, limit=3))
            return None
        best = keep[0]
        note = "" if len(keep) == 1 else (f"; {len(keep)} candidates agree on every row, "
                                          "the first kept: " + ", ".join(
                                              cand_text(c) for c in keep[:4]))
        self.f["accumulation"] = Finding(best["accumulation"], how + note)
        self.f["c_joins"] = Finding(best["c_joins"], "from the same rows")
        if best["c_joins"] == "last" or best["accumulation"] == "odd_even":
            for name in ("late_extra_bits", "align_rounding", "c_dropped_below",
                         "normalized_bits"):
                self.f[name] = Finding(best[name], "from the same rows")
        return base.replace(**best)

