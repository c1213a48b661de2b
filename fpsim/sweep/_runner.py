"""Running a sweep: checking its inputs, scheduling its chunks, saving and
resuming its progress, and stopping cleanly on Ctrl-C."""

from __future__ import annotations

import functools
import numbers
import signal
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from .._schedulers import RunnerError, check_seconds, runner
from ..context import Context
from ..formats import Format
from ..formats import format as _lookup
from ..modes import STOCHASTIC
from ..testing._compare import _check_options
from ..testing.tally import Partial, Tolerance
from . import _candidate, _progress
from ._result import SweepReport
from ._space import MAX_CHUNK, Space
from ._task import DEFAULT_CHUNK, OPS, Spec, evaluate, evaluate_within, operands, within


@dataclass(frozen=True)
class Progress:
    """What :func:`run` tells its ``on_progress`` callback after each chunk."""

    done: int          # tuples done, resumed ones included
    size: int          # tuples in the space
    chunks_done: int
    chunks: int
    elapsed: float     # seconds in this run
    rate: float        # tuples per second in this run

    @property
    def eta(self) -> float | None:
        """Seconds left at this run's rate (None before any rate is known)."""
        return (self.size - self.done) / self.rate if self.rate > 0 else None


def _settings(ctx: Context | None, rounding: Any) -> tuple[tuple[str, Any], ...]:
    if ctx is not None and not isinstance(ctx, Context):
        raise TypeError(f"ctx must be a fpsim.Context, got {type(ctx).__name__}")
    ctx = Context() if ctx is None else ctx.copy()
    if rounding is not None:
        ctx.rounding = rounding
    if ctx.rounding in STOCHASTIC:
        raise ValueError("a sweep needs a deterministic rounding mode (rne, rna, rtz, rup, "
                         "rdn, raz, rto): stochastic rounding draws bits the candidate cannot "
                         "share")
    # The NaN policy travels as itself (a frozen dataclass): a custom one
    # may share a preset's name.
    return (("rounding", ctx.rounding.value), ("saturate", ctx.saturate), ("ftz", ctx.ftz),
            ("daz", ctx.daz), ("tininess", ctx.tininess.value), ("nan", ctx.nan))


def _special_codes(values: Iterable[Any], fmt: Format) -> tuple[int, ...]:
    """Codes of the special values: strings ``0x...`` are codes, anything
    else a value the format must hold exactly (``"nan"`` is the format's
    default NaN; give other NaN codes in hex)."""
    if isinstance(values, str):
        values = [v for v in values.split(",") if v.strip()]
    elif not isinstance(values, Iterable):
        values = [values]
    codes = set()
    for v in values:
        if isinstance(v, str) and v.strip().lower().startswith("0x"):
            try:
                codes.add(fmt.check_code(int(v.strip(), 16)))
            except ValueError as exc:
                raise ValueError(f"special code {v.strip()!r}: {exc}") from None
            continue
        ctx = Context()
        try:
            x = fmt.round(v.strip() if isinstance(v, str) else v, ctx)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"special value {v!r}: {exc}") from None
        if ctx.flags or (x.is_nan and not (isinstance(v, str) and "nan" in v.lower())):
            raise ValueError(f"special value {v!r} is not a value of {fmt.name} (it rounds "
                             f"to {x}); give values the format holds, or codes as 0x...")
        codes.add(x.bits)
    if not codes:
        raise ValueError("specials: give at least one value or code")
    return tuple(sorted(codes))


def plan(op: str, fmt: Format | str, against: Any, *, ctx: Context | None = None,
         rounding: Any = None, sample: float | None = None, seed: int = 0,
         specials: Any = None, chunk_size: int = DEFAULT_CHUNK, max_ulp: int = 0,
         nan: str = "any", signed_zero: bool = True, offenders: int = 10,
         chunk_timeout: float | None = None) -> Spec:
    """Check a sweep's definition and return its :class:`Spec` (what
    :func:`run` does first; bad input raises here, before any work)."""
    _check_timeout(chunk_timeout)
    if op not in OPS:
        raise ValueError(f"unknown operation {op!r}; a sweep runs: {', '.join(OPS)}")
    fmt = _lookup(fmt)
    if fmt.width > 64 or fmt.precision > 53:
        raise ValueError(f"{fmt.name} is {fmt.width} bits wide, of precision {fmt.precision}; "
                         "sweeps run the array engine, which computes in formats of at most 64 "
                         "bits and precision 53 (FP64)")
    _check_options(max_ulp, nan, signed_zero, offenders)
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) \
            or not 1 <= chunk_size <= MAX_CHUNK:
        raise ValueError(f"chunk_size must be an int from 1 to {MAX_CHUNK}, got {chunk_size!r}")
    if sample is not None and specials is not None:
        raise ValueError("give sample or specials, not both")
    if not fmt.has_nan and op in ("div", "sqrt"):
        raise ValueError(f"{fmt.name} has no NaN, so {op} has no result for some operands "
                         f"({'0/0' if op == 'div' else 'negative ones'}): fpsim refuses those, "
                         "and a sweep of every tuple cannot skip them")
    arity = OPS[op]
    if sample is not None:
        if isinstance(sample, bool) or not isinstance(sample, numbers.Real) \
                or not 0 < sample <= 1:
            raise ValueError(f"sample must be a fraction in (0, 1], got {sample!r}")
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise TypeError(f"seed must be an int, got {seed!r}")
        space = Space(fmt, arity, "sample", fraction=float(sample), seed=seed)
    elif specials is not None:
        space = Space(fmt, arity, "specials", specials=_special_codes(specials, fmt))
    else:
        space = Space(fmt, arity)
    settings = _settings(ctx, rounding)
    _candidate.resolve(against)  # fails here if it cannot be imported
    tol = Tolerance(int(max_ulp), nan, bool(signed_zero), int(offenders))
    spec = Spec(op, space, settings, against, chunk_size, tol)
    _probe(spec, chunk_timeout)
    return spec


def _check_timeout(seconds: Any) -> None:
    if seconds is not None:
        check_seconds(seconds, "chunk_timeout", " (or None: no limit)")


def _probe(spec: Spec, seconds: float | None) -> None:
    """Call the candidate on a few tuples, so that a candidate of the wrong
    kind fails at once with a clear message (and one that hangs, within
    the chunk timeout)."""
    codes, _ = operands(spec, 0, min(4, spec.space.size))
    if seconds is None:
        _candidate.call(spec.candidate, codes, spec.fmt)
    else:
        within(float(seconds), _candidate.call, (spec.candidate, codes, spec.fmt), spec,
               lambda: f"its first call (on {len(codes[0])} tuples)")


def run(op: str, fmt: Format | str, against: Any, *, ctx: Context | None = None,
        rounding: Any = None, sample: float | None = None, seed: int = 0,
        specials: Any = None, scheduler: Any = None, workers: int | None = None,
        timeout: float = 10.0, chunk_size: int = DEFAULT_CHUNK,
        progress_file: str | None = None, save_every: float = 5.0, max_ulp: int = 0,
        nan: str = "any", signed_zero: bool = True, offenders: int = 10,
        on_progress: Callable[[Progress], None] | None = None,
        chunk_timeout: float | None = None) -> SweepReport:
    """Sweep an input space of ``op`` in ``fmt``: the candidate ``against``
    against the golden model, chunk by chunk.

    Ctrl-C (KeyboardInterrupt) stops the sweep: the report then covers the
    chunks done, with ``interrupted`` set, and the progress file is saved.
    A scheduler that cannot finish the chunks (a Dask worker that dies, a
    cluster that goes away) ends the sweep with ``fpsim.sweep.RunnerError``
    (a RuntimeError), never with a report: the chunks done stay in the
    progress file.

    Parameters
    ----------
    op:
        ``add``, ``sub``, ``mul``, ``div`` (all pairs), ``fma`` (all
        triples) or ``sqrt`` (all codes), computed by :mod:`fpsim.array`.
    fmt:
        A format of at most 64 bits.  Every tuple is swept up to ``2**63``
        of them (all pairs of a 16-bit format, all triples of an 8-bit
        one); a sample or the tuples holding special values up to ``2**64``
        (FP32 pairs, every FP64 code: ``sqrt``); a sample alone beyond that
        (FP64 pairs and triples, FP32 triples).
    against:
        The candidate: a callable on numpy arrays, or its name
        ``"module:function"`` (see :mod:`fpsim.sweep`).
    ctx:
        The golden model's context (default ``Context()``).
    rounding:
        A rounding mode to set in the golden model's context (default: the
        context's own).
    sample:
        Sweep a deterministic stratified sample of this fraction of the
        tuples instead of all of them (default: all).  A sample holds
        fewer than ``2**40`` tuples: FP64 pairs (``2**128`` tuples) take
        fractions such as ``1e-32`` (3.4 million pairs).
    seed:
        The seed that picks the sample's tuples (with ``sample``).
    specials:
        Sweep only the tuples with at least one operand among these values
        (strings ``"0x.."`` are codes; a comma-separated string is split).
    scheduler:
        None: in this process.  ``"local"`` (or ``"threads"``) and
        ``"processes"``: Dask's local scheduler.  A scheduler address
        (``"tcp://host:8786"``) or a ``distributed.Client``: that cluster.
    workers:
        The number of workers of Dask's local scheduler (default: the CPU
        count).
    timeout:
        Seconds within which a cluster's scheduler must answer (default 10).
    chunk_size:
        Tuples per chunk (the unit of work, of progress and of resuming).
    progress_file:
        Save progress there (every ``save_every`` seconds, and when the
        sweep ends or is interrupted); if the file exists, resume from it.
        It records the candidate by its code and the values it holds, not
        by its name: a file of another candidate is refused, and so is any
        file when the candidate cannot be identified (it holds an object
        whose state cannot be read), which then sweeps only afresh.
    save_every:
        Seconds between two saves of the progress file.
    max_ulp:
        The tolerance in ULPs, as :func:`fpsim.testing.compare` takes it.
    nan:
        How NaNs must match, as :func:`fpsim.testing.compare` takes it.
    signed_zero:
        Whether ``+0`` and ``-0`` must match, as
        :func:`fpsim.testing.compare` takes it.
    offenders:
        How many offenders the report keeps, as
        :func:`fpsim.testing.compare` takes it.
    on_progress:
        Called with a :class:`Progress` after every chunk.
    chunk_timeout:
        Seconds one chunk (and the first probe call) may take: a candidate
        that runs longer ends the sweep with a
        :class:`~fpsim.sweep.CandidateError` naming the chunk and its
        operands' range (the progress file keeps the chunks done).  The hung
        call is left running in a daemon thread, which cannot be stopped.
        Default None: no limit.

    Returns
    -------
    SweepReport
        The comparison's report, with the progress of the sweep.

    Examples
    --------
    >>> import numpy as np, ml_dtypes
    >>> from fpsim import sweep
    >>> def add_e5m2(a, b):      # through float32, where E5M2 sums are exact
    ...     return (a.astype(np.float32) + b.astype(np.float32)).astype(ml_dtypes.float8_e5m2)
    >>> r = sweep.run("add", "e5m2", add_e5m2)
    >>> r.ok, r.done, r.report.beyond_tolerance
    (True, 65536, 0)

    FP64 pairs by a sample (numpy's float64 multiplication is IEEE's, to
    nearest even): the offenders, if any, would be named by their operands'
    codes:

    >>> r = sweep.run("mul", "fp64", np.multiply, sample=1e-33, seed=1)
    >>> r.ok, r.size, r.report.shape == (2**64, 2**64)
    (True, 340282, True)
    """
    spec = plan(op, fmt, against, ctx=ctx, rounding=rounding, sample=sample, seed=seed,
                specials=specials, chunk_size=chunk_size, max_ulp=max_ulp, nan=nan,
                signed_zero=signed_zero, offenders=offenders, chunk_timeout=chunk_timeout)
    if progress_file is None:
        return _run(spec, None, scheduler, workers, timeout, save_every, on_progress,
                    chunk_timeout)
    with _progress.lock(progress_file):  # one sweep at a time on a progress file
        return _run(spec, progress_file, scheduler, workers, timeout, save_every, on_progress,
                    chunk_timeout)


def _run(spec: Spec, progress_file: str | None, scheduler: Any, workers: int | None,
         timeout: float, save_every: float, on_progress: Callable[[Progress], None] | None,
         chunk_timeout: float | None) -> SweepReport:
    described = spec.describe()
    chunks = spec.chunks
    done: set[int] = set()
    partial = Partial()
    stored = described  # what the progress file records: the candidate's identity too
    if progress_file is not None:
        code, unidentified = _candidate.identity(spec.candidate)
        stored = dict(described, candidate_code=code)
        state = _progress.load(progress_file, stored, chunks, functools.partial(_count, spec),
                               unidentified)
        if state is not None:
            done, partial = state
        # Written before any work: an unwritable path fails now, not at the end.
        _progress.save(progress_file, stored, chunks, done, partial)
    resumed = _count(spec, done)
    done_tuples = resumed
    work = runner(scheduler, workers, timeout)
    start = last_save = time.monotonic()
    interrupted = False
    try:
        todo = (c for c in range(chunks) if c not in done)
        task = (functools.partial(evaluate, spec) if chunk_timeout is None
                else functools.partial(evaluate_within, spec, float(chunk_timeout)))
        for c, p in work.map(task, todo):
            with _interrupt_deferred():  # the tally and the chunks done change together
                partial.merge(p, spec.tol.offenders)
                done.add(c)
                done_tuples += p.counts["total"]
            now = time.monotonic()
            if progress_file is not None and now - last_save >= save_every:
                _save(progress_file, stored, chunks, done, partial)
                last_save = now
            if on_progress is not None:
                elapsed = now - start
                rate = (done_tuples - resumed) / elapsed if elapsed > 0 else 0.0
                on_progress(Progress(done_tuples, spec.space.size, len(done), chunks,
                                     elapsed, rate))
    except KeyboardInterrupt:
        interrupted = True
    except RunnerError as exc:
        # The chunks could not all run (a worker died, the cluster went
        # away): no verdict, whatever the chunks done found.  Those are saved.
        kept = (f", saved in the progress file {progress_file}, from which the same sweep "
                "resumes" if progress_file is not None else "")
        raise RunnerError(f"the sweep could not finish ({len(done):,} of {chunks:,} chunks "
                          f"done{kept}): {exc}") from exc
    finally:
        work.close()
        if progress_file is not None:
            _save(progress_file, stored, chunks, done, partial)
    return SweepReport(described, partial.report(spec.fmt, spec.space.shape, spec.tol),
                       spec.space.size, done_tuples, chunks, len(done), interrupted, work.name,
                       time.monotonic() - start, resumed)


def _save(path: str, described: dict[str, Any], chunks: int, done: set[int],
          partial: Partial) -> None:
    """Save progress; a failure (a full disk) is a warning, not the loss of
    the sweep's report."""
    with _interrupt_deferred():
        try:
            _progress.save(path, described, chunks, done, partial)
        except OSError as exc:
            warnings.warn(f"the progress file {path} could not be saved: {exc}", stacklevel=3)


@contextmanager
def _interrupt_deferred() -> Iterator[None]:
    """Hold a Ctrl-C (SIGINT) back until the block is done, so that state
    which must change together does (only possible in the main thread)."""
    if threading.current_thread() is not threading.main_thread() \
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        yield
        return
    caught: list[Any] = []
    signal.signal(signal.SIGINT, lambda *args: caught.append(args))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if caught:
        raise KeyboardInterrupt


def _count(spec: Spec, done: set[int]) -> int:
    """Tuples in the chunks ``done``."""
    return sum(b - a for a, b in (spec.bounds(c) for c in done))
