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
  ``ulp_mismatch`` (two values further apart than ``max_ulp``) and
  ``kappa_mismatch`` (two values whose κ exceeds ``max_kappa``).

ULP distances (:mod:`fpsim.testing._ulp`) are exact integers on the format's
ordered codes; κ, IEEE P3109's accuracy measure (:mod:`fpsim.testing._kappa`),
is the same count on pairs of finite values, and NaN or ∞ where the pair
does not match on NaNs or on infinities.  ``max_ulp`` and ``max_kappa``
combine as follows: with neither, no distance is accepted (``max_ulp=0``);
with ``max_kappa`` alone, κ is the only distance limit (no ULP limit
applies); with both, a finite pair must be within both (counted as a ULP
mismatch when beyond ``max_ulp``, else as a κ mismatch).  NaN codes and the
sign of zero stay governed by ``nan`` and ``signed_zero`` (κ, a measure on
values, matches any NaN with any NaN and +0 with -0).

Arrays are processed in chunks, so the memory used is bounded whatever the
input size (memory-mapped arrays, and dumps read from disk by
explicit reads, stream through).
"""

from __future__ import annotations

import dataclasses
import functools
import mmap
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np

from .. import array as _array
from .._errstate import quiet
from ..array import engine
from ..context import Context
from ..formats import FP64, Format
from ..formats import format as _lookup
from . import _kappa
from ._dumps import Dump
from ._report import Offender, Report
from .tally import Partial, Tolerance, summarize, unravel

__all__ = ["Offender", "Report", "compare", "kappa", "assert_bitwise_equal",
           "assert_ulp_close"]

CHUNK = 1 << 20
NAN_RULES = ("any", "exact")
# A ULP limit above every distance (they are below 2**64): no ULP limit.
NO_ULP_LIMIT = 1 << 64

# Lists that a test-runner plugin pushes to collect the failing reports made
# while a test runs (fpsim.testing.pytest_plugin).
_collectors: list[list[Report]] = []

# How the Python API's users name a format (the command line passes its own).
HINT = "pass fmt="


class ShapeMismatch(ValueError):
    """Inputs of different shapes: a :class:`ValueError` of :func:`compare`
    (nothing to compare pair by pair), an :class:`AssertionError` of the
    assertions (a result of the wrong shape fails them, as in
    :mod:`numpy.testing`)."""


def _round_hint(labels: tuple[str, str], hint: str, fmt: Format) -> str | None:
    """How to bring a reference (the second input) into the output's
    format ``fmt``: round it first, written as the Python call that does it
    (None on the command line, whose users name formats with ``--fmt``)."""
    if hint != HINT:
        return None
    return (f"round the reference to {fmt.name} first: "
            f'fpsim.array.round({labels[1]}, "{fmt.name}")')


# -- reading the inputs --------------------------------------------------------

def _resolve_format(a: np.ndarray, b: np.ndarray, fmt: Format | str | None,
                    labels: tuple[str, str], hint: str) -> Format:
    if fmt is not None:
        return _lookup(fmt)
    found = [engine.format_of_dtype(x.dtype) for x in (a, b)]
    for name, x, f in zip(labels, (a, b), found):
        if f is None:
            raise TypeError(f"cannot tell the format of {name} (dtype {x.dtype}): {hint} for "
                            "integer codes or other dtypes; inferred dtypes are numpy "
                            "float16/32/64 and the ml_dtypes types")
    if found[0] != found[1]:
        advice = f"{hint} to compare both in one format"
        rounding = _round_hint(labels, hint, found[0])  # type: ignore[arg-type]
        if rounding and found[1].width > found[0].width:  # type: ignore[union-attr]
            advice = f"{rounding} (or {advice})"
        raise TypeError(f"{labels[0]} is {a.dtype} but {labels[1]} is {b.dtype}: {advice}")
    return found[0]  # type: ignore[return-value]


class _Source:
    """The codes of one input in ``fmt``, read chunk by chunk (so memory
    stays bounded whatever the input's size, layout or byte order):

    * integer arrays are codes (signed integers as wide as the format's code
      type are read as bit patterns, as from ``tensor.view(torch.int16)``;
      framework tensors come here as numpy arrays, by ``engine.as_array``);
    * arrays of ``fmt``'s value type are read as their bits;
    * other float arrays (numpy, ml_dtypes) must hold values of ``fmt``
      only: each chunk is converted and must convert back to itself.

    ``x`` may be a :class:`~fpsim.testing._dumps.Dump` (a file on disk),
    whose chunks are read from the file.  ``round_hint`` says how to round
    values outside ``fmt`` into it (given for the reference)."""

    def __init__(self, label: str, x: np.ndarray | Dump, fmt: Format, hint: str,
                 scratch: np.ndarray | None = None, round_hint: str | None = None) -> None:
        self.label, self.fmt, self.hint, self.round_hint = label, fmt, hint, round_hint
        self.size = x.size
        if isinstance(x, Dump):
            self._slice = functools.partial(x.read, scratch=scratch)
        else:
            flat = x.reshape(-1) if x.ndim <= 1 or x.flags.c_contiguous else x.flat
            self._slice = lambda start, stop: np.asarray(flat[start:stop])
        dt = x.dtype
        code_bits = _array.code_dtype(fmt).itemsize * 8
        # (None where the format has no dtype: a dtype compares equal to
        # None when it is float64, numpy's default)
        own = _array.value_dtype(fmt)
        if dt.kind in "iu":
            self.kind = "bits" if dt.kind == "i" and dt.itemsize * 8 == code_bits else "codes"
        elif own is not None and dt.newbyteorder("=") == own:
            self.kind = "bits"
        elif engine.format_of_dtype(dt) is not None or dt.kind == "f":
            self.kind = "values"
        else:
            raise TypeError(f"{label} has dtype {dt}; accepted: integer codes, or float arrays "
                            "(numpy, ml_dtypes) whose values are in the format")

    def read(self, start: int, stop: int) -> np.ndarray:
        x = self._slice(start, stop)
        if self.kind == "values":
            return self._converted(x)
        if self.kind == "codes":
            engine.check_codes(x, self.fmt, self.label)
        return engine.raw_codes(x, self.fmt, check=False)

    def _converted(self, x: np.ndarray) -> np.ndarray:
        fmt = self.fmt
        wide = x.astype(np.float64)
        if x.dtype.itemsize > 8:
            # A long double: its values must be float64 values first (every
            # bit kept), then values of the format as below.
            self._check(x, wide.astype(x.dtype), x)
            x = wide
        try:
            if fmt == FP64:
                codes = wide.view(np.uint64)  # FP64: widening to float64 is exact
            else:
                codes = _array.encode(x, fmt, Context())
        except ValueError as exc:
            raise ValueError(f"{self.label}: {exc}") from None
        self._check(wide, _array.decode(codes, fmt).astype(np.float64), x)
        return codes

    def _check(self, values: np.ndarray, back: np.ndarray, x: np.ndarray) -> None:
        """Raise unless ``back`` (what was read) equals ``values`` (the
        input ``x`` in the same dtype) element by element: NaN for NaN, and
        the sign of zero where the format keeps it."""
        nan = np.isnan(values)
        same = (back == values) | (nan & np.isnan(back))
        if self.fmt.has_negative_zero:
            same &= np.signbit(back) == np.signbit(values)
        if not same.all():
            i = int(np.argmin(same))
            advice = self.round_hint or (f"{self.hint} naming the format the data is in, or "
                                         "pass its codes")
            raise ValueError(f"{self.label} ({x.dtype}) holds values that are not "
                             f"{self.fmt.name} values (the first: {values[i]!r}); {advice}")


def _sources(actual: Any, expected: Any, fmt: Format | str | None,
             labels: tuple[str, str] = ("actual", "expected"), hint: str = HINT
             ) -> tuple[Format, tuple[int, ...], _Source, _Source]:
    a, b = (_as_array(x, name) for x, name in zip((actual, expected), labels))
    if a.shape != b.shape:
        raise ShapeMismatch(f"shape mismatch: {labels[0]} {a.shape}, {labels[1]} {b.shape}")
    f = _resolve_format(a, b, fmt, labels, hint)
    return f, a.shape, _Source(labels[0], a, f, hint), _Source(
        labels[1], b, f, hint, round_hint=_round_hint(labels, hint, f))


def _as_array(x: Any, name: str) -> np.ndarray:
    try:
        a = engine.as_array(x)
    except (TypeError, RuntimeError, BufferError) as exc:
        raise TypeError(f"{name} cannot be read as a numpy array ({exc}); accepted: numpy "
                        "and ml_dtypes arrays, PyTorch tensors, JAX and CuPy arrays, or integer "
                        "codes with fmt=") from None
    if not _file_backed(a):
        # Larger than memory and not a mapped file: a broadcast view, which
        # costs nothing to pass and would be walked for hours.  (A mapped
        # dump of any size streams through in chunks.)
        engine.check_size("compare", a.shape, a.dtype.itemsize, name)
    return a


def _file_backed(a: np.ndarray) -> bool:
    """Whether ``a`` is (a view of) a memory-mapped file."""
    base: Any = a
    while base is not None:
        if isinstance(base, (np.memmap, mmap.mmap)):
            return True
        base = getattr(base, "base", None)
    return False


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


def _limits(max_ulp: Any, max_kappa: Any) -> tuple[int | None, Any, int | None]:
    """``(max_ulp as the report shows it, the ULP limit the tally applies,
    max_kappa)``: without ``max_ulp`` the limit is 0, or none when
    ``max_kappa`` is given."""
    if max_kappa is not None:
        if isinstance(max_kappa, (bool, np.bool_)) or not isinstance(max_kappa,
                                                                    (int, np.integer)):
            raise TypeError(f"max_kappa must be a non-negative int or None, got {max_kappa!r}")
        if max_kappa < 0:
            raise ValueError(f"max_kappa must be a non-negative int or None, got {max_kappa!r}")
        max_kappa = int(max_kappa)
    if max_ulp is None:
        return (0, 0, None) if max_kappa is None else (None, NO_ULP_LIMIT, max_kappa)
    return max_ulp, max_ulp, max_kappa


def _finish(tally: Partial, kappas: _kappa.KappaPartial, fmt: Format, shape: tuple[int, ...],
            tol: Tolerance, max_ulp: int | None, limits: _kappa.Limits) -> Report:
    """The report of the merged tallies: the ULP tally with κ's mismatches
    moved from within to beyond tolerance, and κ's maximum and per offender."""
    if kappas.mismatch:
        tally.counts["beyond_tolerance"] += kappas.mismatch
        tally.counts["within_tolerance"] -= kappas.mismatch
        tally.offenders = sorted(tally.offenders + kappas.offenders)[:tol.offenders]
    report = tally.report(fmt, shape, tol)
    report.max_ulp_allowed = None if max_ulp is None else int(max_ulp)
    report.max_kappa_allowed = limits.max_kappa
    report.kappa_mismatch = kappas.mismatch
    report.max_kappa, flat = _kappa.describe(kappas.top)
    report.max_kappa_index = None if flat is None else unravel(flat, shape)
    report.offenders = [dataclasses.replace(o, kappa=_kappa.of_codes(o.actual_bits,
                                                                     o.expected_bits, fmt))
                        for o in report.offenders]
    return report


@quiet
def compare(actual: Any, expected: Any, fmt: Format | str | None = None, *,
            max_ulp: int | None = None, nan: str = "any", signed_zero: bool = True,
            offenders: int = 10, max_kappa: int | None = None) -> Report:
    """Compare ``actual`` (what a kernel or device produced) with
    ``expected`` (the golden model's result) element by element.

    Parameters
    ----------
    actual:
        What the kernel or device produced: a numpy or ml_dtypes float array
        (its format is inferred from the dtype), an integer array of codes
        (``fmt`` required), or anything :func:`numpy.asarray` takes (PyTorch
        CPU tensors, lists).  A float array of another dtype is accepted when
        every value is a value of ``fmt`` (NaN payloads are then those of the
        conversion).
    expected:
        The golden result, of ``actual``'s shape, in any of the forms
        ``actual`` takes.
    fmt:
        The format, when it cannot be inferred or to override it.
    max_ulp:
        Largest accepted ULP distance between two finite values.  Default:
        0, or no ULP limit when ``max_kappa`` is given.
    nan:
        ``"any"``: any NaN matches any NaN; ``"exact"``: NaN codes must be
        identical (sign and payload).
    signed_zero:
        Whether +0 against -0 is a mismatch.
    offenders:
        How many offending pairs (in flat C order) the report keeps.
    max_kappa:
        Largest accepted κ, IEEE P3109's count of the format's values
        between the actual and the expected value (:func:`kappa`); None (the
        default): κ is measured and reported but not a limit.  On pairs of
        finite values κ is the ULP distance; with both limits a pair must be
        within both.

    Returns
    -------
    Report
        Its ``max_kappa`` is the largest κ over all pairs (NaN where a NaN
        meets a number, ∞ where an infinity meets a finite value or the
        other infinity).

    Notes
    -----
    Packed data (FP4 two codes a byte, FP6 four in three bytes) and scale
    matrices in the blocked layout are compared as their codes in logical
    order, so that offenders are reported at logical indices: unpack them
    first with :func:`fpsim.testing.packing.unpack` or
    :func:`~fpsim.testing.packing.from_blocked` (``python -m fpsim diff``
    does this for files with ``--pack`` and ``--layout``).

    Examples
    --------
    >>> import numpy as np
    >>> from fpsim.testing import compare
    >>> from fpsim.testing.packing import unpack
    >>> device = np.uint8([0x21, 0x43])              # packed FP4, low nibble first
    >>> golden = np.uint8([0x1, 0x2, 0x3, 0x5])      # 0.5, 1.0, 1.5, 3.0 as codes
    >>> r = compare(unpack(device, "e2m1", 4), golden, "e2m1")
    >>> r.ok, r.max_ulp_index
    (False, (3,))

    >>> expected = np.float16([1.0, 2.0, -0.0, 65504.0])
    >>> actual = np.float16([1.0, 2.001953125, 0.0, np.inf])
    >>> r = compare(actual, expected)
    >>> r.ok, r.exact, r.beyond_tolerance
    (False, 1, 3)
    >>> r.ulp_mismatch, r.signed_zero_mismatch, r.inf_mismatch, r.max_ulp, r.max_ulp_index
    (1, 1, 1, 1, (1,))
    >>> compare(actual[:2], expected[:2], max_ulp=1).ok
    True

    κ is the ULP distance on finite pairs, ∞ for the overflow at index 3
    (which is 1 ULP), and with ``max_kappa`` alone no ULP limit applies:

    >>> r.max_kappa, r.max_kappa_index, [o.kappa for o in r.offenders]
    (inf, (3,), [1, 0, inf])
    >>> r = compare(actual[:3], expected[:3], max_kappa=1, signed_zero=False)
    >>> r.ok, r.max_kappa, r.max_ulp_allowed
    (True, 1, None)
    """
    return run(actual, expected, fmt, max_ulp=max_ulp, nan=nan, signed_zero=signed_zero,
               offenders=offenders, max_kappa=max_kappa)


def run(actual: Any, expected: Any, fmt: Format | str | None, *, max_ulp: int | None,
        nan: str, signed_zero: bool, offenders: int, max_kappa: int | None = None,
        labels: tuple[str, str] = ("actual", "expected"), hint: str = HINT) -> Report:
    """:func:`compare`, with the inputs' names and the way to name a format
    as the caller's users know them (the command line's file names and
    ``--fmt``)."""
    shown, applied, max_kappa = _limits(max_ulp, max_kappa)
    _check_options(applied, nan, signed_zero, offenders)
    tol = Tolerance(int(applied), nan, bool(signed_zero), int(offenders))
    limits = _kappa.Limits(max_kappa, tol.max_ulp)
    if _is_dask(actual) or _is_dask(expected):
        report = _dask_report(actual, expected, fmt, tol, limits, shown, labels, hint)
    else:
        f, shape, a, b = _sources(actual, expected, fmt, labels, hint)
        tally, kappas = Partial(), _kappa.KappaPartial()
        for start, stop in _chunks(a.size, CHUNK):
            part, kpart = _summaries(a.read(start, stop), b.read(start, stop), f, tol,
                                     limits, start)
            tally.merge(part, tol.offenders)
            kappas.merge(kpart, tol.offenders)
        report = _finish(tally, kappas, f, shape, tol, shown, limits)
    _collect(report)
    return report


@quiet
def kappa(actual: Any, expected: Any, fmt: Format | str | None = None) -> np.ndarray:
    """IEEE P3109's accuracy measure κ of each element pair, as a float64
    array of the inputs' shape (inputs as :func:`compare` takes them).

    For finite ``actual`` and ``expected``, κ counts the format's values from
    ``expected`` (not counted) to ``actual`` (counted): 0 when they are
    equal (+0 and -0 are one value), 1 for neighbours, the ULP distance in
    general.  It is NaN where exactly one of them is a NaN, ∞ where one is
    an infinity and the other is finite or the other infinity, and 0 where
    both are NaNs or both the same infinity (P3109 leaves those out of κ's
    maximum).  The report of :func:`compare` carries the maximum
    (``max_kappa``: NaN above ∞ above any count) and each offender's κ.
    Counts above 2**53 (FP64 only) are the nearest float64.

    >>> import numpy as np, fpsim
    >>> from fpsim.testing import kappa
    >>> kappa(np.float16([1.0, 2.001953125, np.inf, np.nan, -0.0, np.nan]),
    ...       np.float16([1.0, 2.0, 65504.0, 1.0, 0.0, np.nan]))
    array([ 0.,  1., inf, nan,  0.,  0.])

    P3109's worked example (Annex D.1): a Binary8p4se result flushed to zero
    from the fourth subnormal is 4 values off:

    >>> kappa(np.uint8([0x00, 0x00]), np.uint8([0x04, 0x01]), fpsim.format("binary8p4se"))
    array([4., 1.])
    """
    f, shape, a, b = _sources(actual, expected, fmt)
    out = np.empty(a.size, np.float64)
    for start, stop in _chunks(a.size, CHUNK):
        out[start:stop] = _kappa.as_floats(*_kappa.classify(a.read(start, stop),
                                                            b.read(start, stop), f))
    return out.reshape(shape)


def _collect(report: Report) -> None:
    if not report.ok:
        for collector in tuple(_collectors):  # (a snapshot: the plugin may push or pop)
            collector.append(report)


# -- in parallel: Dask arrays, and dumps on disk chunk by chunk ---------------------------------

def _is_dask(x: Any) -> bool:
    return hasattr(x, "__dask_graph__") and hasattr(x, "blocks")


def _dask_report(actual: Any, expected: Any, fmt: Format | str | None, tol: Tolerance,
                 limits: _kappa.Limits, max_ulp: int | None, labels: tuple[str, str],
                 hint: str) -> Report:
    """Compare Dask arrays block by block, each block a task on the Dask
    scheduler in use (threads by default, or the active ``distributed``
    client): the blocks' partial tallies, ranked by flat index, merge into
    the report one pass over the data would give."""
    import dask
    import dask.array as da

    a, b = (x if _is_dask(x) else _as_array(x, name) for x, name in zip((actual, expected),
                                                                        labels))
    for x, name in zip((a, b), labels):
        if _is_dask(x) and any(np.isnan(n) for n in x.shape):
            raise ValueError(f"{name} is a Dask array of unknown chunk sizes (shape {x.shape}); "
                             "call its compute_chunk_sizes() first")
    a, b = (x if _is_dask(x) else da.from_array(x, chunks=CHUNK if np.ndim(x) == 1 else "auto")
            for x in (a, b))
    if a.shape != b.shape:
        raise ShapeMismatch(f"shape mismatch: {labels[0]} {a.shape}, {labels[1]} {b.shape}")
    f = _resolve_format(a, b, fmt, labels, hint)
    shape = tuple(int(n) for n in a.shape)
    if a.ndim == 0:
        a, b = a.reshape(1), b.reshape(1)
    b = b.rechunk(a.chunks)
    starts = [np.cumsum((0,) + c[:-1]) for c in a.chunks]
    indexed = shape or (1,)  # the shape the blocks' flat indices address
    block = dask.delayed(_block_partial, pure=True)
    tasks = [block(a.blocks[i], b.blocks[i], tuple(int(s[k]) for s, k in zip(starts, i)),
                   indexed, f, tol, limits, labels, hint)
             for i in np.ndindex(*a.numblocks)]
    tally, kappas = Partial(), _kappa.KappaPartial()
    for p, k in dask.compute(*tasks):
        tally.merge(p, tol.offenders)
        kappas.merge(k, tol.offenders)
    return _finish(tally, kappas, f, shape, tol, max_ulp, limits)


def _block_partial(a: np.ndarray, b: np.ndarray, origin: tuple[int, ...],
                   shape: tuple[int, ...], fmt: Format, tol: Tolerance, limits: _kappa.Limits,
                   labels: tuple[str, str], hint: str) -> tuple[Partial, _kappa.KappaPartial]:
    """The tallies (ULP and κ) of one block whose first element is at ``origin``."""
    sources = [_Source(labels[0], engine.as_array(a), fmt, hint),
               _Source(labels[1], engine.as_array(b), fmt, hint,
                       round_hint=_round_hint(labels, hint, fmt))]
    block_shape = np.shape(a)
    tally, kappas = Partial(), _kappa.KappaPartial()
    for start, stop in _chunks(sources[0].size, CHUNK):
        # flat indices in the whole array, slice by slice (bounded memory)
        where = np.unravel_index(np.arange(start, stop), block_shape)
        flat = np.ravel_multi_index(tuple(w + o for w, o in zip(where, origin)), shape)
        part, kpart = _summaries(sources[0].read(start, stop), sources[1].read(start, stop),
                                 fmt, tol, limits, flat)
        tally.merge(part, tol.offenders)
        kappas.merge(kpart, tol.offenders)
    return tally, kappas


def run_files(a: Dump, b: Dump, shape: tuple[int, ...], fmt: Format | None, runner: Any, *,
              max_ulp: int | None, nan: str, signed_zero: bool, offenders: int,
              labels: tuple[str, str], hint: str, max_kappa: int | None = None) -> Report:
    """:func:`run` on two dumps on disk (:func:`fpsim.testing._dumps.read`)
    of as many elements, compared in flat order and reported in ``shape``,
    chunk by chunk on ``runner`` (see :mod:`fpsim._schedulers`):
    each chunk reads its slice of both files where it runs, so the files
    must be readable there.  A file that changed while it was read raises
    :class:`~fpsim.testing._dumps.DumpError`."""
    shown, applied, max_kappa = _limits(max_ulp, max_kappa)
    _check_options(applied, nan, signed_zero, offenders)
    tol = Tolerance(int(applied), nan, bool(signed_zero), int(offenders))
    limits = _kappa.Limits(max_kappa, tol.max_ulp)
    if a.size != b.size:
        raise ValueError(f"length mismatch: {labels[0]} has {a.size} elements, {labels[1]} "
                         f"has {b.size}")
    f = _resolve_format(a, b, fmt, labels, hint)
    _Source(labels[0], a, f, hint), _Source(labels[1], b, f, hint)  # reject bad dtypes here
    job = functools.partial(_file_partial, a, b, f, tol, limits, labels, hint)
    tally, kappas = Partial(), _kappa.KappaPartial()
    for _, (p, k) in runner.map(job, _chunks(a.size, CHUNK)):
        tally.merge(p, tol.offenders)
        kappas.merge(k, tol.offenders)
    if tally.counts["total"] != a.size:
        raise RuntimeError(f"the scheduler returned {tally.counts['total']} of {a.size} "
                           "compared elements")
    for dump in (a, b):  # the counts are of the files as they were opened
        dump.check()
    report = _finish(tally, kappas, f, shape, tol, shown, limits)
    _collect(report)
    return report


def _file_partial(actual: Dump, expected: Dump, fmt: Format, tol: Tolerance,
                  limits: _kappa.Limits, labels: tuple[str, str], hint: str,
                  span: tuple[int, int]) -> tuple[Partial, _kappa.KappaPartial]:
    start, stop = span
    a, b = (_Source(label, dump, fmt, hint, _scratch(i, (stop - start) * dump.dtype.itemsize))
            for i, (label, dump) in enumerate(zip(labels, (actual, expected))))
    return _summaries(a.read(start, stop), b.read(start, stop), fmt, tol, limits, start)


def _summaries(ca: np.ndarray, cb: np.ndarray, fmt: Format, tol: Tolerance,
               limits: _kappa.Limits, rank0: int | np.ndarray
               ) -> tuple[Partial, _kappa.KappaPartial]:
    """The ULP tally and the κ tally of one chunk: the differing pairs found
    once for both (on a chunk that mostly agrees, the pass over it is the
    cost)."""
    differing = np.flatnonzero(ca != cb)
    return (summarize(ca, cb, fmt, tol, rank0, None, differing),
            _kappa.summarize(ca, cb, fmt, limits, tol.offenders, rank0, None, differing))


# Buffers that chunks of dumps are read into, one pair per thread, reused:
# new memory for every chunk costs a page fault per page touched, which made
# reading the chunks several times slower than copying them.  At most a
# chunk of FP64 codes each.
_scratch_space = threading.local()
_SCRATCH_MAX = CHUNK * 8


def _scratch(slot: int, nbytes: int) -> np.ndarray | None:
    if nbytes > _SCRATCH_MAX:
        return None
    pair = getattr(_scratch_space, "pair", None)
    if pair is None:
        pair = _scratch_space.pair = [np.empty(0, np.uint8), np.empty(0, np.uint8)]
    if pair[slot].size < nbytes:
        pair[slot] = np.empty(nbytes, np.uint8)
    return pair[slot]


# The assertions hide their frames from pytest's tracebacks (__tracebackhide__,
# as numpy.testing's do): a failure points at the test's line.  They run
# under np.errstate in their own frame, not in @quiet's wrapper.

def assert_bitwise_equal(actual: Any, expected: Any, fmt: Format | str | None = None, *,
                         err_msg: str = "") -> None:
    """Raise :class:`AssertionError` unless every element of ``actual`` has
    the same bit pattern as ``expected`` (NaN codes and the sign of zero
    included).  The message is the :class:`Report`'s table, then ``err_msg``.

    Inputs of different shapes fail the assertion too (as in
    :mod:`numpy.testing`); inputs that cannot be compared at all raise as
    :func:`compare` does: :class:`TypeError` for a dtype whose format cannot
    be told or dtypes of two formats without ``fmt``, :class:`ValueError`
    for an unknown format, codes out of range or values outside ``fmt``.

    >>> import numpy as np
    >>> from fpsim.testing import assert_bitwise_equal
    >>> assert_bitwise_equal(np.float16([1, 2]), np.float16([1, 2]))
    >>> assert_bitwise_equal(np.float16([1, -0.0]), np.float16([1, 0.0]))
    Traceback (most recent call last):
    ...
    AssertionError: fpsim compare: MISMATCH: fp16, shape (2,), max_ulp=0, nan=exact, ...
    ...
    >>> assert_bitwise_equal(np.float16([1, 2]), np.float16([1]))
    Traceback (most recent call last):
    ...
    AssertionError: shape mismatch: actual (2,), expected (1,)
    """
    __tracebackhide__ = True
    _check_err_msg(err_msg)
    _assert(functools.partial(compare, actual, expected, fmt, max_ulp=0, nan="exact",
                              signed_zero=True), err_msg)


def assert_ulp_close(actual: Any, expected: Any, max_ulp: int = 1,
                     fmt: Format | str | None = None, *, nan: str = "any",
                     signed_zero: bool = True, err_msg: str = "") -> None:
    """Raise :class:`AssertionError` if any pair of finite values is more
    than ``max_ulp`` ULPs apart, or differs in kind (NaN, infinity, the sign
    of zero; see :func:`compare`), or if the shapes differ.  The message is
    the :class:`Report`'s table, then ``err_msg``; arguments that cannot be
    compared raise as in :func:`assert_bitwise_equal`.

    >>> import numpy as np
    >>> from fpsim.testing import assert_ulp_close
    >>> assert_ulp_close(np.float16([1.0, 2.001953125]), np.float16([1.0, 2.0]), max_ulp=1)
    >>> assert_ulp_close(np.float16([1.0, 2.00390625]), np.float16([1.0, 2.0]), max_ulp=1)
    Traceback (most recent call last):
    ...
    AssertionError: fpsim compare: MISMATCH: fp16, shape (2,), max_ulp=1, nan=any, signed_zero=True
    ...
    """
    __tracebackhide__ = True
    _check_err_msg(err_msg)
    _assert(functools.partial(compare, actual, expected, fmt, max_ulp=max_ulp, nan=nan,
                              signed_zero=signed_zero), err_msg)


def _check_err_msg(err_msg: Any) -> None:
    if not isinstance(err_msg, str):
        raise TypeError(f"err_msg must be a str (added to the failure's message), got "
                        f"{type(err_msg).__name__}")


def _assert(check: Any, err_msg: str) -> None:
    """Raise :class:`AssertionError` with the report of ``check()`` unless
    it is OK, or with the shape mismatch it raised."""
    __tracebackhide__ = True
    with np.errstate(all="ignore"):
        try:
            report = check()
        except ShapeMismatch as exc:
            message = str(exc)
        else:
            if report.ok:
                return
            message = str(report)
    raise AssertionError(message + ("\n" + err_msg if err_msg else "")) from None
