"""Where the chunks of a comparison or a sweep run: in this process, on
Dask's local scheduler, or on a ``distributed`` cluster.  A runner's
``map(fn, items)`` yields ``(item, fn(item))`` as the calls finish, in any
order (the partial tallies they return merge in any order to the same
report), keeping only a bounded number of calls in flight.  ``fn`` must
pickle (a module-level function, or a :func:`functools.partial` of one) for
the process and cluster runners.

Dask and distributed are optional (``pip install fpsim[dask]``); only the
runners that need them import them.
"""

from __future__ import annotations

import math
import numbers
import os
from collections.abc import Callable, Iterable, Iterator
from typing import Any

LOCAL = ("local", "threads", "processes")


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
            yield from zip(batch, self.dask.compute(*tasks, **options))

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

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> Iterator[tuple[Any, Any]]:
        from distributed import as_completed

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
                result = f.result()
                submit()
                yield item, result
        finally:
            if pending:
                self.client.cancel(list(pending))

    def close(self) -> None:
        if self._own:
            self.client.close()


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
