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
whatever the input size (memory-mapped arrays, and dumps read from disk by
explicit reads, stream through).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np

from .. import array as _array
from ..array import _common
from ..context import Context
from ..formats import Format
from ..formats import format as _lookup
from ._dumps import Dump
from ._report import Offender, Report
from .tally import Partial, Tolerance, summarize

__all__ = ["Offender", "Report", "compare", "assert_bitwise_equal", "assert_ulp_close"]

CHUNK = 1 << 20
NAN_RULES = ("any", "exact")

# Lists that a test-runner plugin pushes to collect the failing reports made
# while a test runs (fpsim.testing.pytest_plugin).
_collectors: list[list[Report]] = []


# -- reading the inputs --------------------------------------------------------

def _resolve_format(a: np.ndarray, b: np.ndarray, fmt: Format | str | None,
                    labels: tuple[str, str], hint: str) -> Format:
    if fmt is not None:
        return _lookup(fmt)
    found = [_common.format_of_dtype(x.dtype) for x in (a, b)]
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
      only: each chunk is converted and must convert back to itself.

    ``x`` may be a :class:`~fpsim.testing._dumps.Dump` (a file on disk),
    whose chunks are read from the file."""

    def __init__(self, label: str, x: np.ndarray | Dump, fmt: Format, hint: str,
                 scratch: np.ndarray | None = None) -> None:
        self.label, self.fmt, self.hint = label, fmt, hint
        self.size = x.size
        if isinstance(x, Dump):
            self._slice = functools.partial(x.read, scratch=scratch)
        else:
            flat = x.reshape(-1) if x.ndim <= 1 or x.flags.c_contiguous else x.flat
            self._slice = lambda start, stop: np.asarray(flat[start:stop])
        dt = x.dtype
        code_bits = _array.code_dtype(fmt).itemsize * 8
        if dt.kind in "iu":
            self.kind = "bits" if dt.kind == "i" and dt.itemsize * 8 == code_bits else "codes"
        elif dt.newbyteorder("=") == _array.value_dtype(fmt):
            self.kind = "bits"
        elif _common.format_of_dtype(dt) is not None or dt.kind == "f":
            self.kind = "values"
        else:
            raise TypeError(f"{label} has dtype {dt}; accepted: integer codes, or float arrays "
                            "(numpy, ml_dtypes) whose values are in the format")

    def read(self, start: int, stop: int) -> np.ndarray:
        x = self._slice(start, stop)
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

    Packed data (FP4 two codes a byte, FP6 four in three bytes) and scale
    matrices in the blocked layout are compared as their codes in logical
    order, so that offenders are reported at logical indices: unpack them
    first with :func:`fpsim.testing.packing.unpack` or
    :func:`~fpsim.testing.packing.from_blocked` (``python -m fpsim diff``
    does this for files with ``--pack`` and ``--layout``).

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
    tol = Tolerance(int(max_ulp), nan, bool(signed_zero), int(offenders))
    if _is_dask(actual) or _is_dask(expected):
        report = _dask_report(actual, expected, fmt, tol, labels, hint)
    else:
        f, shape, a, b = _sources(actual, expected, fmt, labels, hint)
        tally = Partial()
        for start, stop in _chunks(a.size, CHUNK):
            tally.merge(summarize(a.read(start, stop), b.read(start, stop), f, tol, start),
                        tol.offenders)
        report = tally.report(f, shape, tol)
    _collect(report)
    return report


def _collect(report: Report) -> None:
    if not report.ok:
        for collector in _collectors:
            collector.append(report)


# -- in parallel: Dask arrays, and dumps on disk chunk by chunk ---------------------------------

def _is_dask(x: Any) -> bool:
    return hasattr(x, "__dask_graph__") and hasattr(x, "blocks")


def _dask_report(actual: Any, expected: Any, fmt: Format | str | None, tol: Tolerance,
                 labels: tuple[str, str], hint: str) -> Report:
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
        raise ValueError(f"shape mismatch: {labels[0]} {a.shape}, {labels[1]} {b.shape}")
    f = _resolve_format(a, b, fmt, labels, hint)
    shape = tuple(int(n) for n in a.shape)
    if a.ndim == 0:
        a, b = a.reshape(1), b.reshape(1)
    b = b.rechunk(a.chunks)
    starts = [np.cumsum((0,) + c[:-1]) for c in a.chunks]
    indexed = shape or (1,)  # the shape the blocks' flat indices address
    block = dask.delayed(_block_partial, pure=True)
    tasks = [block(a.blocks[i], b.blocks[i], tuple(int(s[k]) for s, k in zip(starts, i)),
                   indexed, f, tol, labels, hint)
             for i in np.ndindex(*a.numblocks)]
    tally = Partial()
    for p in dask.compute(*tasks):
        tally.merge(p, tol.offenders)
    return tally.report(f, shape, tol)


def _block_partial(a: np.ndarray, b: np.ndarray, origin: tuple[int, ...],
                   shape: tuple[int, ...], fmt: Format, tol: Tolerance,
                   labels: tuple[str, str], hint: str) -> Partial:
    """The tally of one block whose first element is at ``origin``."""
    sources = [_Source(label, np.asarray(x), fmt, hint) for label, x in zip(labels, (a, b))]
    block_shape = np.shape(a)
    tally = Partial()
    for start, stop in _chunks(sources[0].size, CHUNK):
        # flat indices in the whole array, slice by slice (bounded memory)
        where = np.unravel_index(np.arange(start, stop), block_shape)
        flat = np.ravel_multi_index(tuple(w + o for w, o in zip(where, origin)), shape)
        tally.merge(summarize(sources[0].read(start, stop), sources[1].read(start, stop), fmt,
                              tol, flat), tol.offenders)
    return tally


def run_files(a: Dump, b: Dump, shape: tuple[int, ...], fmt: Format | None, runner: Any, *,
              max_ulp: int, nan: str, signed_zero: bool, offenders: int,
              labels: tuple[str, str], hint: str) -> Report:
    """:func:`run` on two dumps on disk (:func:`fpsim.testing._dumps.read`)
    of as many elements, compared in flat order and reported in ``shape``,
    chunk by chunk on ``runner`` (see :mod:`fpsim.testing._schedulers`):
    each chunk reads its slice of both files where it runs, so the files
    must be readable there.  A file that changed while it was read raises
    :class:`~fpsim.testing._dumps.DumpError`."""
    _check_options(max_ulp, nan, signed_zero, offenders)
    tol = Tolerance(int(max_ulp), nan, bool(signed_zero), int(offenders))
    if a.size != b.size:
        raise ValueError(f"length mismatch: {labels[0]} has {a.size} elements, {labels[1]} "
                         f"has {b.size}")
    f = _resolve_format(a, b, fmt, labels, hint)
    _Source(labels[0], a, f, hint), _Source(labels[1], b, f, hint)  # reject bad dtypes here
    job = functools.partial(_file_partial, a, b, f, tol, labels, hint)
    tally = Partial()
    for _, p in runner.map(job, _chunks(a.size, CHUNK)):
        tally.merge(p, tol.offenders)
    if tally.counts["total"] != a.size:
        raise RuntimeError(f"the scheduler returned {tally.counts['total']} of {a.size} "
                           "compared elements")
    for dump in (a, b):  # the counts are of the files as they were opened
        dump.check()
    report = tally.report(f, shape, tol)
    _collect(report)
    return report


def _file_partial(actual: Dump, expected: Dump, fmt: Format, tol: Tolerance,
                  labels: tuple[str, str], hint: str, span: tuple[int, int]) -> Partial:
    start, stop = span
    a, b = (_Source(label, dump, fmt, hint, _scratch(i, (stop - start) * dump.dtype.itemsize))
            for i, (label, dump) in enumerate(zip(labels, (actual, expected))))
    return summarize(a.read(start, stop), b.read(start, stop), fmt, tol, start)


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
