"""A probe's finding: its value, how it was decided, and the rows that
decided it (shared by the probe stages and :class:`fpsim.mma.ProbeResult`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Finding"]


@dataclass
class Finding:
    """One inferred property: its ``value``, ``how`` it was decided (in
    words), and ``evidence``: constructed rows (``input``) with the
    callable's ``output``, a few of those that decided it."""

    value: Any
    how: str
    evidence: list[dict[str, str]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        value = self.value
        if isinstance(value, tuple):
            value = list(value)
        return {"value": value, "how": self.how, "evidence": self.evidence}
