"""Where the chunks of a comparison or a sweep run: in this process, on
Dask's local scheduler, or on a ``distributed`` cluster.  A runner's
``map(fn, items)`` yields ``(item, fn(item))`` as the calls finish, in any
order (the partial tallies they return merge in any order to the same
report), keeping only a bounded number of calls in flight.  ``fn`` must
pickle (a module-level function, or a :func:`functools.partial` of one) for
the process and cluster runners.

What ``fn`` raises comes out of ``map`` as it is.  A failure of the runner
itself (a worker process that died, a scheduler that went away, a call the
cluster cancelled or gave up on, a connection lost) comes out as one
:class:`RunnerError` naming what happened: the work could not finish, which
is neither an agreement nor a mismatch (on the command line, exit status 2).

Dask and distributed are optional (``pip install fpsim[dask]``); only the
runners that need them import them.
"""

from __future__ import annotations

import math
import numbers
import os
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import BrokenExecutor, CancelledError
from contextlib import contextmanager, nullcontext
from typing import Any

LOCAL = ("local", "threads", "processes")


class RunnerError(RuntimeError):
    """The runner could not finish the work: a worker died, the scheduler
    went away, a call was cancelled or timed out, a connection failed.  The
    message names what happened; the exception it came from is chained."""


def _what(exc: BaseException) -> str:
    """An exception of the runner's machinery, in one phrase."""
    try:
        text = " ".join(str(exc).split())
    except Exception:  # noqa: BLE001  (a message that cannot be read is no reason to fail here)
        text = ""
    if len(text) > 240:
        text = text[:240] + "..."
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _need(package: str, what: str) -> Any:
    import importlib

    try:
        return importlib.import_module(package)
    except ImportError:
        raise ImportError(f"{what} needs the {package!r} package: pip install 'fpsim[dask]' "
                          "(or leave the scheduler out to run in this process)") from None


class InProcess:
    """Chunk after chunk in this process (numpy only)."""

    name = "in-process"

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> Iterator[tuple[Any, Any]]:
        for item in items:
            yield item, fn(item)

    def close(self) -> None:
        pass


class DaskLocal:
    """Dask's local scheduler: ``threads`` (``local``) or ``processes``,
    ``workers`` at a time, in batches of a few chunks per worker."""

    def __init__(self, kind: str, workers: int | None) -> None:
        self.dask = _need("dask", f"--scheduler {kind}")
        self.kind = "threads" if kind == "local" else kind
        self.workers = workers if workers is not None else (os.cpu_count() or 1)
        self.name = f"dask {self.kind}, {self.workers} workers"
        self._pool = None
        if self.kind == "processes":
            # One pool for the whole sweep: each process builds the golden
            # model's tables once, not once per batch.  Workers ignore
            # SIGINT: Ctrl-C reaches the whole process group, and only this
            # process should stop (with its report).  They start as the
            # platform does (fork on Linux), so a script needs no
            # ``if __name__ == "__main__"`` guard; a candidate that set up
            # CUDA in this process cannot run in a forked child.
            from concurrent.futures import ProcessPoolExecutor

            self._pool = ProcessPoolExecutor(self.workers, initializer=_ignore_sigint)

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> Iterator[tuple[Any, Any]]:
        delayed = self.dask.delayed(fn, pure=True)
        todo = iter(items)
        step = 4 * self.workers
        options: dict[str, Any] = {"scheduler": self.kind, "num_workers": self.workers}
        if self._pool is not None:
            options["pool"] = self._pool
        while batch := [item for _, item in zip(range(step), todo)]:
            tasks = [delayed(item, dask_key_name=f"fpsim-chunk-{i}") for i, item in
                     enumerate(batch)]
            try:
                results = self.dask.compute(*tasks, **options)
            except BrokenExecutor as exc:  # a worker process died (killed, os._exit, a crash)
                raise RunnerError(f"a worker process of Dask's local scheduler ({self.name}) "
                                  f"died while running the work ({_what(exc)})") from exc
            yield from zip(batch, results)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)


class Distributed:
    """A ``distributed`` cluster: a scheduler's address (``tcp://host:port``)
    or a ``distributed.Client``."""

    def __init__(self, where: Any, timeout: float) -> None:
        if not isinstance(where, str) and type(where).__name__ != "Client":
            raise TypeError(f"scheduler must be None, a name (local, threads, processes), a "
                            f"Dask scheduler's address or a distributed.Client; got "
                            f"{type(where).__name__}")
        distributed = _need("distributed", "a Dask cluster address")
        if isinstance(where, distributed.Client):
            self.client, self._own = where, False
        else:
            try:
                _probe(where, timeout)
                self.client = distributed.Client(where, timeout=timeout, set_as_default=False)
            except OSError as exc:  # TimeoutError included
                raise ConnectionError(f"cannot reach the Dask scheduler at {where!r} within "
                                      f"{timeout:g} s ({type(exc).__name__}: {exc}); start one "
                                      "(dask scheduler, or distributed.LocalCluster) or leave "
                                      "the scheduler out to run in this process") from None
            except Exception as exc:  # a malformed address, a protocol not set up
                raise ValueError(f"cannot use the Dask scheduler address {where!r} "
                                 f"({type(exc).__name__}: {exc}); accepted: local, threads, "
                                 "processes, or a running scheduler's address such as "
                                 "tcp://127.0.0.1:8786") from None
            self._own = True
        workers = self.client.scheduler_info().get("workers", {})
        threads = sum(w.get("nthreads", 1) for w in workers.values()) or 1
        self.window = 4 * threads
        self.name = f"distributed {self.client.scheduler.address}, {len(workers)} workers"
        self._broken = False

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> Iterator[tuple[Any, Any]]:
        import asyncio

        from distributed import KilledWorker

        own: list[BaseException] = []  # what fn raised: it goes through as it is
        try:
            yield from self._map(fn, items, own)
        except (Exception, asyncio.CancelledError) as exc:
            if own and exc is own[0]:
                raise
            self._broken = True
            if isinstance(exc, KilledWorker):
                what = "a worker died while running the work"
            elif isinstance(exc, (asyncio.CancelledError, CancelledError)):
                what = "the cluster cancelled the work (its scheduler or workers went away)"
            elif isinstance(exc, (TimeoutError, OSError)):
                what = "the connection to the cluster failed"
            else:
                what = "the cluster failed"
            raise RunnerError(f"{what}: {self.name} ({_what(exc)})") from exc

    def _map(self, fn: Callable[[Any], Any], items: Iterable[Any],
             own: list[BaseException]) -> Iterator[tuple[Any, Any]]:
        from distributed import KilledWorker, as_completed

        todo = iter(items)
        running = as_completed(loop=self.client.loop)  # this client, not a default one
        pending: dict[Any, Any] = {}
        done = object()

        def submit() -> bool:
            item = next(todo, done)
            if item is done:
                return False
            f = self.client.submit(fn, item, pure=False)
            pending[f] = item
            running.add(f)
            return True

        try:
            for _ in range(self.window):
                if not submit():
                    break
            for f in running:
                item = pending.pop(f)
                try:
                    result = f.result()
                except BaseException as exc:
                    # fn's own exception, raised on the worker; not the
                    # KilledWorker the scheduler gives a task whose workers died
                    if f.status == "error" and not isinstance(exc, KilledWorker):
                        own.append(exc)
                    raise
                submit()
                yield item, result
        finally:
            if pending:
                try:
                    self.client.cancel(list(pending))
                except Exception:  # noqa: BLE001  (a client that lost its cluster: nothing runs)
                    pass

    def close(self) -> None:
        if self._own:
            import asyncio

            # After a failure, the client's attempt to reconnect, cancelled
            # by close(), logs its traceback: the RunnerError said it all.
            with _quiet("distributed") if self._broken else nullcontext():
                try:
                    self.client.close()
                except (Exception, asyncio.CancelledError):  # a cluster that went away
                    pass


@contextmanager
def _quiet(package: str) -> Iterator[None]:
    """The loggers of ``package`` silent for a while."""
    import logging

    loggers = [logging.getLogger(name) for name in list(logging.root.manager.loggerDict)
               if name == package or name.startswith(package + ".")]
    was = [logger.disabled for logger in loggers]
    for logger in loggers:
        logger.disabled = True
    try:
        yield
    finally:
        for logger, disabled in zip(loggers, was):
            logger.disabled = disabled


def _probe(address: str, timeout: float) -> None:
    """Open and close one connection to ``address``.  ``distributed.Client``
    closes itself when a scheduler cannot be reached, but not when the
    address is malformed (``tcp://host:abc``, an unknown protocol) or its
    protocol is not set up (``tls://`` without certificates): it raises and
    leaves a half-made client whose finalizer prints a traceback at exit.
    Connecting alone raises the same errors and leaves nothing behind."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    from distributed.comm import connect
    from distributed.security import Security

    async def once() -> None:
        comm = await connect(address, timeout=timeout,
                             **Security().get_connection_args("client"))
        await comm.close()

    # In a thread of its own: its event loop must not meet one running here
    # (a notebook's).
    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, once()).result()


def _ignore_sigint() -> None:
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def check_seconds(value: Any, name: str, extra: str = "") -> None:
    """ValueError unless ``value`` is a positive finite real number of
    seconds (the scheduler's timeout, a sweep's chunk timeout)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) \
            or not 0 < value < math.inf:
        raise ValueError(f"{name} must be a positive finite number of seconds{extra}, got "
                         f"{value!r}")


def max_workers() -> int:
    """The most local workers accepted: 8 per CPU, at least 64."""
    return max(64, 8 * (os.cpu_count() or 1))


def runner(scheduler: Any, workers: int | None, timeout: float) -> Any:
    """The runner for ``scheduler``: None (in this process), ``"local"``
    (Dask threads), ``"threads"``, ``"processes"``, a scheduler address, or
    a ``distributed.Client``."""
    # Checked whatever the scheduler, so a bad value is refused alike by
    # every command and call (diff and sweep, Python and the command line).
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int)
                                or workers < 1):
        raise ValueError(f"--workers/workers must be a positive int, got {workers!r}")
    if workers is not None and workers > max_workers():
        # Each local worker is a thread or a process of this machine: a
        # number from the command line must not start a million of them.
        raise ValueError(f"--workers/workers {workers:,} is more than this machine runs "
                         f"usefully; accepted 1 to {max_workers()} (8 per CPU, at least 64)")
    check_seconds(timeout, "--timeout/timeout")
    if scheduler is None or scheduler == "inprocess":
        return InProcess()
    if isinstance(scheduler, str):
        if scheduler in LOCAL:
            return DaskLocal(scheduler, workers)
        if "://" not in scheduler and ":" not in scheduler:
            raise ValueError(f"scheduler {scheduler!r}: accepted: local, threads, processes, "
                             "or a Dask scheduler's address such as tcp://127.0.0.1:8786")
    return Distributed(scheduler, timeout)
