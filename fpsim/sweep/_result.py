"""A sweep's outcome: the differential report plus how far the sweep got."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..testing import Report
from ..testing._report import Offender, value_text


@dataclass
class SweepReport:
    """The outcome of :func:`fpsim.sweep.run`.

    ``report`` is the harness's :class:`~fpsim.testing.Report` over the
    tuples evaluated, indexed by operand codes (an offender's ``index`` is
    its operands' codes).  ``complete`` says whether every chunk was done;
    an interrupted sweep's report covers the ``done`` tuples only.
    ``str(sweep_report)`` is a readable table,
    :meth:`~fpsim.sweep.SweepReport.to_dict` JSON-ready.
    """

    spec: dict[str, Any]
    report: Report
    size: int
    done: int
    chunks: int
    chunks_done: int
    interrupted: bool
    scheduler: str
    elapsed: float
    resumed_from: int = 0

    @property
    def complete(self) -> bool:
        """True when every chunk was done."""
        return self.chunks_done == self.chunks

    @property
    def ok(self) -> bool:
        """True when the whole space was swept and every pair is within tolerance."""
        return self.complete and self.report.ok

    @property
    def verdict(self) -> str:
        """``"agrees"``, ``"disagrees"`` (a mismatch was found, complete or
        not) or ``"incomplete"`` (no mismatch in what was done)."""
        if not self.report.ok:
            return "disagrees"
        return "agrees" if self.complete else "incomplete"

    @property
    def rate(self) -> float:
        """Tuples per second in this run (resumed work not counted)."""
        return (self.done - self.resumed_from) / self.elapsed if self.elapsed > 0 else 0.0

    def operands_text(self, o: Offender) -> str:
        """An offender's operands: codes and values."""
        return ", ".join(f"{o.hex(c)} ({value_text(c, self.report.fmt)})" for c in o.index)

    def to_dict(self) -> dict[str, Any]:
        """The sweep's definition, how far it got, and the report (each
        offender with its operands), as JSON-ready data."""
        report = self.report.to_dict()
        for o, d in zip(self.report.offenders, report["offenders"]):
            d["operands"] = [{"bits": o.hex(c), "value": value_text(c, self.report.fmt)}
                             for c in o.index]
        return {"sweep": self.spec, "verdict": self.verdict, "complete": self.complete,
                "interrupted": self.interrupted, "size": self.size, "done": self.done,
                "chunks": self.chunks, "chunks_done": self.chunks_done,
                "resumed_from": self.resumed_from, "scheduler": self.scheduler,
                "elapsed_s": round(self.elapsed, 3), "rate_per_s": round(self.rate, 1),
                "report": report}

    def __str__(self) -> str:
        s = self.spec
        ctx = s["context"]
        space = s["space"]
        how = space["kind"]
        if how == "sample":
            how += f" {space['fraction']:g} (seed {space['seed']})"
        elif how == "specials":
            how += " " + ",".join(space["specials"])
        settings = ", ".join(f"{k}={v}" for k, v in ctx.items())
        state = ("complete" if self.complete else
                 "INTERRUPTED" if self.interrupted else "incomplete")
        lines = [f"fpsim sweep: {s['op']} {space['format']} ({settings}) against "
                 f"{s['candidate']}: {self.verdict.upper()}"
                 + (" (nothing compared)" if self.done == 0 else ""),
                 f"  space                {how}, {self.size} tuples",
                 f"  done                 {self.done} tuples, {self.chunks_done}/{self.chunks} "
                 f"chunks of {s['chunk_size']} ({state})",
                 f"  run                  {self.elapsed:.1f} s, {self.rate:,.0f} tuples/s, "
                 f"{self.scheduler}" + (f", resumed at {self.resumed_from}"
                                        if self.resumed_from else "")]
        if self.done == 0:
            # no tuple was evaluated: there is no comparison to call OK
            lines.append("  compared             nothing: stopped before the first chunk was done")
        else:
            lines.append(self.report.table("operands", self.operands_text))
        return "\n".join(lines)
