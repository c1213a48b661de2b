"""Compare a kernel's output with the golden model's, code by code.

:func:`compare` reads both arrays as codes of one format and sorts every
element pair into exactly one of three counts:

* ``exact``: the bit patterns are identical;
* ``within_tolerance``: not identical, but accepted: a finite ULP distance of
  at most ``max_ulp``, two NaNs with different codes under ``nan="any"``, or
  +0 against -0 under ``signed_zero=False``;
* ``beyond_tolerance``: everything else, itself split by kind into
  ``nan_mismatch`` (a NaN against a number, or NaN codes that differ under
  ``nan="exact"``), ``inf_mismatch`` (an infinity against a finite value or
  against the opposite infinity: an overflow difference, never within a ULP
  tolerance even though the largest finite value and infinity are 1 ULP
  apart), ``signed_zero_mismatch`` (+0 against -0 under ``signed_zero=True``)
  and ``ulp_mismatch`` (two values further apart than ``max_ulp``).

ULP distances (:mod:`fpsim.testing._ulp`) are exact integers on the format's
ordered codes.  Arrays are processed in chunks, so the memory used is bounded
whatever the input size (memory-mapped files stream through).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import array as _array
from ..array import _common
from ..context import Context
from ..formats import Format
from ..formats import format as _lookup
from . import _ulp

__all__ = ["Offender", "Report", "compare", "assert_bitwise_equal", "assert_ulp_close"]

CHUNK = 1 << 20
NAN_RULES = ("any", "exact")
# Histogram bins by bit length of the distance: 0, 1, 2-3, 4-7, ..., 2**63..2**64-1.
_BIN_EDGES = np.array([1 << k for k in range(64)], np.uint64)

# Lists that a test-runner plugin pushes to collect the failing reports made
# while a test runs (fpsim.testing.pytest_plugin).
_collectors: list[list[Report]] = []


@dataclass(frozen=True)
class Offender:
    """One element pair beyond tolerance."""

    index: tuple[int, ...]
    kind: str                  # "nan", "inf", "signed_zero" or "ulp"
    ulp: int | None            # None where a NaN is involved
    actual_bits: int
    expected_bits: int
    actual_value: str
    expected_value: str
    actual_fields: str
    expected_fields: str
    hex_digits: int = 1

    def to_dict(self) -> dict[str, Any]:
        return {"index": list(self.index), "kind": self.kind, "ulp": self.ulp,
                "actual": {"bits": self.hex(self.actual_bits), "fields": self.actual_fields,
                           "value": self.actual_value},
                "expected": {"bits": self.hex(self.expected_bits),
                             "fields": self.expected_fields, "value": self.expected_value}}

    def hex(self, bits: int) -> str:
        """``bits`` in hex with the format's width of digits (0x0000 in FP16)."""
        return f"0x{bits:0{self.hex_digits}x}"


@dataclass
class Report:
    """The outcome of :func:`compare`.  ``str(report)`` is a readable table;
    :meth:`to_dict` is JSON-ready; :attr:`ok` says whether every pair is
    within tolerance."""

    fmt: Format
    shape: tuple[int, ...]
    max_ulp_allowed: int
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
    bins: list[int] = field(default_factory=lambda: [0] * 65)
    offenders: list[Offender] = field(default_factory=list)
    offender_limit: int = 10

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

    def to_dict(self) -> dict[str, Any]:
        """The report as plain JSON-ready data."""
        return {
            "format": self.fmt.name, "shape": list(self.shape), "ok": self.ok,
            "max_ulp_allowed": self.max_ulp_allowed, "nan": self.nan,
            "signed_zero": self.signed_zero,
            "total": self.total, "exact": self.exact,
            "within_tolerance": self.within_tolerance,
            "beyond_tolerance": self.beyond_tolerance,
            "nan_mismatch": self.nan_mismatch, "inf_mismatch": self.inf_mismatch,
            "signed_zero_mismatch": self.signed_zero_mismatch,
            "ulp_mismatch": self.ulp_mismatch,
            "max_ulp": self.max_ulp,
            "max_ulp_index": None if self.max_ulp_index is None else list(self.max_ulp_index),
            "histogram": self.histogram,
            "offenders": [o.to_dict() for o in self.offenders],
        }

    def summary(self) -> str:
        """The counts in a few lines (the message of the assertions)."""
        verdict = "OK" if self.ok else "MISMATCH"
        options = (f"max_ulp={self.max_ulp_allowed}, nan={self.nan}, "
                   f"signed_zero={self.signed_zero}")
        where = "" if self.max_ulp_index is None else f" at index {self.max_ulp_index}"
        lines = [
            f"fpsim compare: {verdict}: {self.fmt.name}, shape {self.shape}, {options}",
            f"  total                {self.total:>12}",
            f"  bit-exact            {self.exact:>12}",
            f"  within tolerance     {self.within_tolerance:>12}",
            f"  beyond tolerance     {self.beyond_tolerance:>12}",
        ]
        for label, count in (("NaN mismatch", self.nan_mismatch),
                             ("inf mismatch", self.inf_mismatch),
                             ("sign of zero", self.signed_zero_mismatch),
                             ("ULP distance", self.ulp_mismatch)):
            if count:
                lines.append(f"    {label:<18} {count:>12}")
        lines.append(f"  max ULP distance     {self.max_ulp:>12}{where}")
        return "\n".join(lines)

    def __str__(self) -> str:
        lines = [self.summary()]
        hist = self.histogram
        if hist:
            cells = [(str(h["min"]) if h["min"] == h["max"] else f"{h['min']}-{h['max']}",
                      h["count"]) for h in hist]
            lines.append("  ULP histogram:       " + ", ".join(f"{k}: {n}" for k, n in cells))
        if self.offenders:
            shown = len(self.offenders)
            more = "" if shown == self.beyond_tolerance else f" (of {self.beyond_tolerance})"
            lines.append(f"  first {shown} offenders{more}:")
            rows = [("index", "kind", "ulp", "actual", "expected", "actual bits (s e f)",
                     "expected bits (s e f)")]
            for o in self.offenders:
                rows.append((str(o.index if len(o.index) != 1 else o.index[0]), o.kind,
                             "-" if o.ulp is None else str(o.ulp), o.actual_value,
                             o.expected_value, f"{o.hex(o.actual_bits)} {o.actual_fields}",
                             f"{o.hex(o.expected_bits)} {o.expected_fields}"))
            widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
            for r in rows:
                lines.append("    " + "  ".join(c.rjust(w) for c, w in zip(r, widths)).rstrip())
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (f"<Report {self.fmt.name} {'ok' if self.ok else 'MISMATCH'}: {self.total} total, "
                f"{self.exact} exact, {self.within_tolerance} within, "
                f"{self.beyond_tolerance} beyond tolerance, max {self.max_ulp} ULP>")


# -- reading the inputs --------------------------------------------------------

def _format_of_dtype(dtype: np.dtype) -> Format | None:
    """The built-in format whose value type ``dtype`` is (any byte order)."""
    name = dtype.newbyteorder("=").name if dtype.kind in "fV" else None
    return _lookup(name) if name in _common.VALUE_DTYPE_NAMES else None


def _resolve_format(a: np.ndarray, b: np.ndarray, fmt: Format | str | None,
                    labels: tuple[str, str], hint: str) -> Format:
    if fmt is not None:
        return _lookup(fmt)
    found = [_format_of_dtype(x.dtype) for x in (a, b)]
    for name, x, f in zip(labels, (a, b), found):
        if f is None:
            raise TypeError(f"cannot tell the format of {name} (dtype {x.dtype}): {hint} for "
                            "integer codes or other dtypes; inferred dtypes are numpy "
                            "float16/32/64 and the ml_dtypes types")
    if found[0] != found[1]:
        raise TypeError(f"{labels[0]} is {a.dtype} but {labels[1]} is {b.dtype}: {hint} to "
                        "compare both in one format")
    return found[0]  # type: ignore[return-value]


class _Source:
    """The codes of one input in ``fmt``, read chunk by chunk (so memory
    stays bounded whatever the input's size, layout or byte order):

    * integer arrays are codes (signed integers as wide as the format's code
      type are read as bit patterns, as from ``tensor.view(torch.int16)``);
    * arrays of ``fmt``'s value type are read as their bits;
    * other float arrays (numpy, ml_dtypes) must hold values of ``fmt``
      only: each chunk is converted and must convert back to itself."""

    def __init__(self, label: str, x: np.ndarray, fmt: Format, hint: str) -> None:
        self.label, self.fmt, self.hint = label, fmt, hint
        self.size = x.size
        self.flat = x.reshape(-1) if x.ndim <= 1 or x.flags.c_contiguous else x.flat
        dt = x.dtype
        code_bits = _array.code_dtype(fmt).itemsize * 8
        if dt.kind in "iu":
            self.kind = "bits" if dt.kind == "i" and dt.itemsize * 8 == code_bits else "codes"
        elif dt.newbyteorder("=") == _array.value_dtype(fmt):
            self.kind = "bits"
        elif _format_of_dtype(dt) is not None or dt.kind == "f":
            self.kind = "values"
        else:
            raise TypeError(f"{label} has dtype {dt}; accepted: integer codes, or float arrays "
                            "(numpy, ml_dtypes) whose values are in the format")

    def read(self, start: int, stop: int) -> np.ndarray:
        x = np.asarray(self.flat[start:stop])
        if self.kind == "values":
            return self._converted(x)
        if self.kind == "codes":
            _common.check_codes(x, self.fmt, self.label)
        return _common.raw_codes(x, self.fmt, check=False)

    def _converted(self, x: np.ndarray) -> np.ndarray:
        fmt = self.fmt
        wide = x.astype(np.float64)
        try:
            if fmt.width > 32:  # FP64: every narrower binary value is one of its values
                codes = wide.view(np.uint64)
            else:
                codes = _array.encode(x, fmt, Context())
        except ValueError as exc:
            raise ValueError(f"{self.label}: {exc}") from None
        back = _array.decode(codes, fmt).astype(np.float64)
        nan = np.isnan(wide)
        same = (back == wide) | (nan & np.isnan(back))
        if fmt.has_negative_zero:
            same &= np.signbit(back) == np.signbit(wide)
        if not same.all():
            i = int(np.argmin(same))
            raise ValueError(f"{self.label} ({x.dtype}) holds values that are not {fmt.name} "
                             f"values (the first: {wide[i]!r}); {self.hint} naming the format "
                             "the data is in, or pass its codes")
        return codes


def _sources(actual: Any, expected: Any, fmt: Format | str | None,
             labels: tuple[str, str] = ("actual", "expected"), hint: str = "pass fmt="
             ) -> tuple[Format, tuple[int, ...], _Source, _Source]:
    a, b = (_as_array(x, name) for x, name in zip((actual, expected), labels))
    if a.shape != b.shape:
        raise ValueError(f"shape mismatch: {labels[0]} {a.shape}, {labels[1]} {b.shape}")
    f = _resolve_format(a, b, fmt, labels, hint)
    return f, a.shape, _Source(labels[0], a, f, hint), _Source(labels[1], b, f, hint)


def _as_array(x: Any, name: str) -> np.ndarray:
    try:
        return _common.as_array(x)
    except (TypeError, RuntimeError, BufferError) as exc:
        raise TypeError(f"{name} cannot be read as a numpy array ({exc}); a PyTorch tensor of "
                        "bfloat16 or float8 can be passed as its bit patterns, "
                        "t.view(torch.int16).numpy() or t.view(torch.uint8).numpy(), with "
                        "fmt=") from None


# -- the tally -------------------------------------------------------------------

class Tally:
    """Counts of element pairs, fed chunk by chunk in flat order; the
    report it makes is the same however the input is chunked."""

    def __init__(self, fmt: Format, shape: tuple[int, ...], *, max_ulp: int, nan: str,
                 signed_zero: bool, offenders: int) -> None:
        self.report = Report(fmt, tuple(shape), max_ulp, nan, signed_zero, offender_limit=offenders)
        self._max_flat: int | None = None

    def add(self, a: np.ndarray, b: np.ndarray, offset: int) -> None:
        """Count the pairs ``a[i], b[i]`` (code arrays of the format's code
        type), elements ``offset + i``.  Identical pairs only need counting
        (distance 0 unless NaN); the rest, usually few, are classified."""
        r, fmt = self.report, self.report.fmt
        n = a.size
        r.total += n
        same = a == b
        n_same = int(np.count_nonzero(same))
        r.exact += n_same
        numeric = ~_ulp.nans(a, fmt)
        if n_same < n:
            at = np.flatnonzero(~same)
            a, b = a[at], b[at]
            nan_a, inf_a, zero_a = _ulp.kinds(a, fmt)
            nan_b, inf_b, zero_b = _ulp.kinds(b, fmt)
            numeric[at] = ~(nan_a | nan_b)
        r.bins[0] += int(np.count_nonzero(numeric & same))
        if n_same == n:
            if self._max_flat is None and numeric.any():
                self._note_max(0, offset + int(np.argmax(numeric)))
            return

        any_nan = nan_a | nan_b
        d = _ulp.distance(a, b, fmt)
        counts = np.bincount(np.searchsorted(_BIN_EDGES, d[~any_nan], side="right"),
                             minlength=65)
        for k in np.flatnonzero(counts):
            r.bins[k] += int(counts[k])
        top = int(d[~any_nan].max()) if (~any_nan).any() else 0
        if top:  # the first differing pair at the largest distance
            self._note_max(top, offset + int(at[np.argmax(np.where(any_nan, 0, d) == top)]))
        elif self._max_flat is None and numeric.any():
            self._note_max(0, offset + int(np.argmax(numeric)))

        nan_bad = nan_a != nan_b
        if r.nan == "exact":
            nan_bad |= nan_a & nan_b
        inf_bad = ~any_nan & (inf_a | inf_b)
        zero_bad = zero_a & zero_b if r.signed_zero else np.zeros(a.shape, bool)
        # Distances are below 2**64: a larger tolerance accepts them all.
        limit = np.uint64(min(r.max_ulp_allowed, (1 << 64) - 1))
        ulp_bad = ~any_nan & ~(inf_a | inf_b) & (d > limit)
        bad = nan_bad | inf_bad | zero_bad | ulp_bad
        n_bad = int(np.count_nonzero(bad))
        r.nan_mismatch += int(np.count_nonzero(nan_bad))
        r.inf_mismatch += int(np.count_nonzero(inf_bad))
        r.signed_zero_mismatch += int(np.count_nonzero(zero_bad))
        r.ulp_mismatch += int(np.count_nonzero(ulp_bad))
        r.beyond_tolerance += n_bad
        r.within_tolerance += n - n_same - n_bad
        room = r.offender_limit - len(r.offenders)
        for i in np.flatnonzero(bad)[:max(room, 0)]:
            kind = ("nan" if nan_bad[i] else "inf" if inf_bad[i]
                    else "signed_zero" if zero_bad[i] else "ulp")
            self._offend(offset + int(at[i]), kind, None if any_nan[i] else int(d[i]),
                         int(a[i]), int(b[i]))

    def _note_max(self, dist: int, flat: int) -> None:
        r = self.report
        if self._max_flat is None or dist > r.max_ulp:
            r.max_ulp, self._max_flat = dist, flat
            r.max_ulp_index = self._index(flat)

    def _index(self, flat: int) -> tuple[int, ...]:
        shape = self.report.shape
        if not shape:
            return ()
        return tuple(int(i) for i in np.unravel_index(flat, shape))

    def _offend(self, flat: int, kind: str, ulp: int | None, a: int, b: int) -> None:
        fmt = self.report.fmt
        self.report.offenders.append(Offender(
            self._index(flat), kind, ulp, a, b, _value_text(a, fmt), _value_text(b, fmt),
            _fields_text(a, fmt), _fields_text(b, fmt), -(-fmt.width // 4)))


def _value_text(code: int, fmt: Format) -> str:
    if fmt.width <= 32 or _array.value_dtype(fmt) is not None:
        return repr(float(_array.decode(np.array([code], _array.code_dtype(fmt)), fmt)[0]))
    return str(fmt.from_bits(code).value)  # wide formats without a numpy dtype


def _fields_text(code: int, fmt: Format) -> str:
    s, e, f = fmt.fields(code)
    parts = [str(s)] if fmt.signed else []
    parts.append(format(e, f"0{fmt.exponent_bits}b"))
    if fmt.mantissa_bits:
        parts.append(format(f, f"0{fmt.mantissa_bits}b"))
    return " ".join(parts)


def _chunks(size: int, chunk: int) -> Iterator[tuple[int, int]]:
    for start in range(0, size, chunk):
        yield start, min(start + chunk, size)


def _check_options(max_ulp: Any, nan: Any, signed_zero: Any, offenders: Any) -> None:
    if isinstance(max_ulp, bool) or not isinstance(max_ulp, (int, np.integer)) or max_ulp < 0:
        raise ValueError(f"max_ulp must be a non-negative int, got {max_ulp!r}")
    if nan not in NAN_RULES:
        raise ValueError(f"nan must be one of {NAN_RULES}, got {nan!r}")
    if not isinstance(signed_zero, (bool, np.bool_)):
        raise TypeError(f"signed_zero must be True or False, got {signed_zero!r}")
    if isinstance(offenders, bool) or not isinstance(offenders, (int, np.integer)) \
            or offenders < 0:
        raise ValueError(f"offenders must be a non-negative int, got {offenders!r}")


def compare(actual: Any, expected: Any, fmt: Format | str | None = None, *, max_ulp: int = 0,
            nan: str = "any", signed_zero: bool = True, offenders: int = 10) -> Report:
    """Compare ``actual`` (what a kernel or device produced) with
    ``expected`` (the golden model's result) element by element.

    Parameters
    ----------
    actual, expected:
        Arrays of one shape: numpy or ml_dtypes float arrays (their format is
        inferred from the dtype), integer arrays of codes (``fmt`` required),
        or anything :func:`numpy.asarray` takes (PyTorch CPU tensors, lists).
        Float arrays of another dtype are accepted when every value is a
        value of ``fmt`` (NaN payloads are then those of the conversion).
    fmt:
        The format, when it cannot be inferred or to override it.
    max_ulp:
        Largest accepted ULP distance between two finite values.
    nan:
        ``"any"``: any NaN matches any NaN; ``"exact"``: NaN codes must be
        identical (sign and payload).
    signed_zero:
        Whether +0 against -0 is a mismatch.
    offenders:
        How many offending pairs (in flat C order) the report keeps.

    Returns a :class:`Report`.

    >>> import numpy as np
    >>> from fpsim.testing import compare
    >>> expected = np.float16([1.0, 2.0, -0.0, 65504.0])
    >>> actual = np.float16([1.0, 2.001953125, 0.0, np.inf])
    >>> r = compare(actual, expected)
    >>> r.ok, r.exact, r.beyond_tolerance
    (False, 1, 3)
    >>> r.ulp_mismatch, r.signed_zero_mismatch, r.inf_mismatch, r.max_ulp, r.max_ulp_index
    (1, 1, 1, 1, (1,))
    >>> compare(actual[:2], expected[:2], max_ulp=1).ok
    True
    """
    return run(actual, expected, fmt, max_ulp=max_ulp, nan=nan, signed_zero=signed_zero,
               offenders=offenders)


def run(actual: Any, expected: Any, fmt: Format | str | None, *, max_ulp: int, nan: str,
        signed_zero: bool, offenders: int, labels: tuple[str, str] = ("actual", "expected"),
        hint: str = "pass fmt=") -> Report:
    """:func:`compare`, with the inputs' names and the way to name a format
    as the caller's users know them (the command line's file names and
    ``--fmt``)."""
    _check_options(max_ulp, nan, signed_zero, offenders)
    f, shape, a, b = _sources(actual, expected, fmt, labels, hint)
    tally = Tally(f, shape, max_ulp=int(max_ulp), nan=nan, signed_zero=bool(signed_zero),
                  offenders=int(offenders))
    for start, stop in _chunks(a.size, CHUNK):
        tally.add(a.read(start, stop), b.read(start, stop), start)
    report = tally.report
    if not report.ok:
        for collector in _collectors:
            collector.append(report)
    return report


def assert_bitwise_equal(actual: Any, expected: Any, fmt: Format | str | None = None, *,
                         err_msg: str = "") -> None:
    """Raise :class:`AssertionError` unless every element of ``actual`` has
    the same bit pattern as ``expected`` (NaN codes and the sign of zero
    included).  The message is the :class:`Report`'s table.

    >>> import numpy as np
    >>> from fpsim.testing import assert_bitwise_equal
    >>> assert_bitwise_equal(np.float16([1, 2]), np.float16([1, 2]))
    >>> assert_bitwise_equal(np.float16([1, -0.0]), np.float16([1, 0.0]))
    Traceback (most recent call last):
    ...
    AssertionError: fpsim compare: MISMATCH: fp16, shape (2,), max_ulp=0, nan=exact, ...
    ...
    """
    _assert(compare(actual, expected, fmt, max_ulp=0, nan="exact", signed_zero=True), err_msg)


def assert_ulp_close(actual: Any, expected: Any, max_ulp: int = 1,
                     fmt: Format | str | None = None, *, nan: str = "any",
                     signed_zero: bool = True, err_msg: str = "") -> None:
    """Raise :class:`AssertionError` if any pair of finite values is more
    than ``max_ulp`` ULPs apart, or differs in kind (NaN, infinity, the sign
    of zero; see :func:`compare`).  The message is the :class:`Report`'s table.

    >>> import numpy as np
    >>> from fpsim.testing import assert_ulp_close
    >>> assert_ulp_close(np.float16([1.0, 2.001953125]), np.float16([1.0, 2.0]), max_ulp=1)
    >>> assert_ulp_close(np.float16([1.0, 2.00390625]), np.float16([1.0, 2.0]), max_ulp=1)
    Traceback (most recent call last):
    ...
    AssertionError: fpsim compare: MISMATCH: fp16, shape (2,), max_ulp=1, nan=any, signed_zero=True
    ...
    """
    _assert(compare(actual, expected, fmt, max_ulp=max_ulp, nan=nan, signed_zero=signed_zero),
            err_msg)


def _assert(report: Report, err_msg: str) -> None:
    if not report.ok:
        raise AssertionError(str(report) + ("\n" + err_msg if err_msg else ""))
