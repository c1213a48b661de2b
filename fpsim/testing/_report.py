"""The report of a comparison: counts by kind, the largest ULP distance and
the largest κ (IEEE P3109's measure, :mod:`fpsim.testing._kappa`), a
histogram and the first offenders (see :mod:`fpsim.testing._compare`)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from .. import array as _array
from ..formats import Format
from . import _kappa


@dataclass(frozen=True)
class Offender:
    """One element pair beyond tolerance: where, of what kind, its ULP
    distance and its κ, and both codes with their values and bit fields."""

    index: tuple[int, ...]
    kind: str                  # "nan", "inf", "signed_zero", "ulp" or "kappa"
    ulp: int | None            # None where a NaN is involved
    actual_bits: int
    expected_bits: int
    actual_value: str
    expected_value: str
    actual_fields: str
    expected_fields: str
    hex_digits: int = 1
    kappa: int | float | None = None  # an int, inf or nan; None where not measured (sweeps)

    def to_dict(self) -> dict[str, Any]:
        return {"index": list(self.index), "kind": self.kind, "ulp": self.ulp,
                "kappa": _kappa.to_json(self.kappa),
                "actual": {"bits": self.hex(self.actual_bits), "fields": self.actual_fields,
                           "value": self.actual_value},
                "expected": {"bits": self.hex(self.expected_bits),
                             "fields": self.expected_fields, "value": self.expected_value}}

    def hex(self, bits: int) -> str:
        """``bits`` in hex with the format's width of digits (0x0000 in FP16)."""
        return f"0x{bits:0{self.hex_digits}x}"

    # Equality field by field, with a κ of NaN equal to a κ of NaN: an
    # offender equals its copy (pickle, a Dask worker's result).
    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return _fields(self) == _fields(other)

    def __hash__(self) -> int:
        return hash(_fields(self))


@dataclass
class Report:
    """The outcome of :func:`compare`.  ``str(report)`` is a readable table;
    :meth:`to_dict` is JSON-ready; :attr:`ok` says whether every pair is
    within tolerance.

    ``max_kappa`` is IEEE P3109's κ over all pairs (an int, ``inf`` or
    ``nan``; see :func:`fpsim.testing.kappa`) and ``max_kappa_index`` the
    first index where it occurs (None when κ is 0); both are None in reports
    that do not measure κ (sweeps).  ``max_ulp_allowed`` is None when only a
    κ limit (``max_kappa_allowed``) applies."""

    fmt: Format
    shape: tuple[int, ...]
    max_ulp_allowed: int | None
    nan: str
    signed_zero: bool
    total: int = 0
    exact: int = 0
    within_tolerance: int = 0
    beyond_tolerance: int = 0
    nan_mismatch: int = 0
    inf_mismatch: int = 0
    signed_zero_mismatch: int = 0
    ulp_mismatch: int = 0
    max_ulp: int = 0
    max_ulp_index: tuple[int, ...] | None = None
    max_kappa_allowed: int | None = None
    kappa_mismatch: int = 0
    max_kappa: int | float | None = None
    max_kappa_index: tuple[int, ...] | None = None
    bins: list[int] = field(default_factory=lambda: [0] * 65)
    offenders: list[Offender] = field(default_factory=list)
    offender_limit: int = 10

    def __eq__(self, other: object) -> bool:
        # (as a dataclass's, but a max κ of NaN equals a max κ of NaN)
        if other.__class__ is not self.__class__:
            return NotImplemented
        return _fields(self) == _fields(other)

    @property
    def ok(self) -> bool:
        """True when no pair is beyond tolerance."""
        return self.beyond_tolerance == 0

    @property
    def histogram(self) -> list[dict[str, int]]:
        """ULP distances of the pairs without a NaN, in power-of-two bins:
        ``[{"min": 0, "max": 0, "count": n}, {"min": 1, "max": 1, ...},
        {"min": 2, "max": 3, ...}, ...]``, empty bins left out."""
        out = []
        for k, count in enumerate(self.bins):
            if count:
                low = 0 if k == 0 else 1 << (k - 1)
                high = 0 if k == 0 else (1 << k) - 1
                out.append({"min": low, "max": high, "count": count})
        return out

    @property
    def histogram_excluded(self) -> int:
        """Pairs left out of :attr:`histogram`: those with a NaN on either
        side, which have no ULP distance."""
        return self.total - sum(self.bins)

    def to_dict(self) -> dict[str, Any]:
        """The report as plain JSON-ready data."""
        return {
            "format": self.fmt.name, "shape": list(self.shape), "ok": self.ok,
            "max_ulp_allowed": self.max_ulp_allowed,
            "max_kappa_allowed": self.max_kappa_allowed, "nan": self.nan,
            "signed_zero": self.signed_zero,
            "total": self.total, "exact": self.exact,
            "within_tolerance": self.within_tolerance,
            "beyond_tolerance": self.beyond_tolerance,
            "nan_mismatch": self.nan_mismatch, "inf_mismatch": self.inf_mismatch,
            "signed_zero_mismatch": self.signed_zero_mismatch,
            "ulp_mismatch": self.ulp_mismatch, "kappa_mismatch": self.kappa_mismatch,
            "max_ulp": self.max_ulp,
            "max_ulp_index": None if self.max_ulp_index is None else list(self.max_ulp_index),
            "max_kappa": _kappa.to_json(self.max_kappa),
            "max_kappa_index": (None if self.max_kappa_index is None
                                else list(self.max_kappa_index)),
            "histogram": self.histogram,
            "histogram_excluded": self.histogram_excluded,
            "offenders": [o.to_dict() for o in self.offenders],
        }

    def summary(self) -> str:
        """The counts in a few lines (the message of the assertions)."""
        verdict = ("OK" if self.total else "OK (nothing compared)") if self.ok else "MISMATCH"
        limits = [f"max_ulp={self.max_ulp_allowed}"] if self.max_ulp_allowed is not None else []
        if self.max_kappa_allowed is not None:
            limits.append(f"max_kappa={self.max_kappa_allowed}")
        options = ", ".join(limits + [f"nan={self.nan}", f"signed_zero={self.signed_zero}"])
        where = "" if self.max_ulp_index is None else f" at index {self.max_ulp_index}"
        lines = [
            f"fpsim compare: {verdict}: {self.fmt.name}, shape {self.shape}, {options}",
            f"  total                {self.total:>12}",
            f"  bit-exact            {self.exact:>12}",
            f"  within tolerance     {self.within_tolerance:>12}",
            f"  beyond tolerance     {self.beyond_tolerance:>12}",
        ]
        # the kinds of the pairs beyond tolerance: counts of pairs
        for label, count in (("NaN mismatches", self.nan_mismatch),
                             ("inf mismatches", self.inf_mismatch),
                             ("zero-sign mismatches", self.signed_zero_mismatch),
                             (f"ULP distance > {self.max_ulp_allowed}", self.ulp_mismatch),
                             (f"kappa > {self.max_kappa_allowed}", self.kappa_mismatch)):
            if count:
                lines.append(f"    {label:<20} {count:>10}")
        lines.append(f"  max ULP distance     {self.max_ulp:>12}{where}")
        if self.max_kappa is not None:
            where = ("" if self.max_kappa_index is None
                     else f" at index {self.max_kappa_index}")
            lines.append(f"  max kappa (P3109)    {_kappa.text(self.max_kappa):>12}{where}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()

    def table(self, index_label: str = "index", index_text: Any = None) -> str:
        """The readable table; ``index_text(offender)`` writes an
        offender's index (default: the index tuple, or the number in 1-D)."""
        if index_text is None:
            index_text = lambda o: str(o.index if len(o.index) != 1 else o.index[0])  # noqa: E731
        lines = [self.summary()]
        hist = self.histogram
        if hist:
            cells = [(str(h["min"]) if h["min"] == h["max"] else f"{h['min']}-{h['max']}",
                      h["count"]) for h in hist]
            excluded = self.histogram_excluded
            heading = "ULP histogram" + (f" ({excluded} pair{'s' if excluded != 1 else ''} "
                                         "with a NaN left out)" if excluded else "")
            lines.append(f"  {heading}: " + ", ".join(f"{k}: {n}" for k, n in cells))
        if self.offenders:
            shown = len(self.offenders)
            if shown == self.beyond_tolerance:
                head = "the offender" if shown == 1 else f"the {shown} offenders"
            else:
                head = ("the first offender" if shown == 1 else f"the first {shown} offenders")
                head += f" (of {self.beyond_tolerance})"
            lines.append(f"  {head}:")
            kappa = self.max_kappa is not None  # a column where κ was measured
            rows = [(index_label, "kind", "ulp", *(("kappa",) if kappa else ()), "actual",
                     "expected", "actual bits (s e f)", "expected bits (s e f)")]
            for o in self.offenders:
                rows.append((index_text(o), o.kind, "-" if o.ulp is None else str(o.ulp),
                             *((_kappa.text(o.kappa),) if kappa and o.kappa is not None
                               else ("-",) if kappa else ()),
                             o.actual_value, o.expected_value,
                             f"{o.hex(o.actual_bits)} {o.actual_fields}",
                             f"{o.hex(o.expected_bits)} {o.expected_fields}"))
            widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
            for r in rows:
                lines.append("    " + "  ".join(c.rjust(w) for c, w in zip(r, widths)).rstrip())
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (f"<Report {self.fmt.name} {'ok' if self.ok else 'MISMATCH'}: {self.total} total, "
                f"{self.exact} exact, {self.within_tolerance} within, "
                f"{self.beyond_tolerance} beyond tolerance, max {self.max_ulp} ULP"
                + ("" if self.max_kappa is None else f", max kappa {_kappa.text(self.max_kappa)}")
                + ">")


_NAN = ("nan",)  # stands for a float NaN in _fields


def _fields(obj: Any) -> tuple[Any, ...]:
    """The values of a dataclass's fields in order, a float NaN replaced by
    one marker (NaN is unequal to itself, and its hash is its identity's)."""
    return tuple(_NAN if isinstance(v, float) and v != v else v
                 for v in (getattr(obj, f.name) for f in fields(obj)))


def value_text(code: int, fmt: Format) -> str:
    """The value of ``code`` as text: ``repr`` of the float (formats without
    a numpy type wider than 32 bits: Float.short_text)."""
    if fmt.width <= 32 or _array.value_dtype(fmt) is not None:
        return repr(float(_array.decode(np.array([code], _array.code_dtype(fmt)), fmt)[0]))
    return fmt.from_bits(code).short_text()


def fields_text(code: int, fmt: Format) -> str:
    """The bit fields of ``code``: ``"s eeeee ffffffffff"``."""
    s, e, f = fmt.fields(code)
    parts = [str(s)] if fmt.signed else []
    parts.append(format(e, f"0{fmt.exponent_bits}b"))
    if fmt.mantissa_bits:
        parts.append(format(f, f"0{fmt.mantissa_bits}b"))
    return " ".join(parts)
