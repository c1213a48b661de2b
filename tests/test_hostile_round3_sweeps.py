"""Hostile input, round 3: a sweep never says "agrees" for work it did not
do, and its exit status is 0 (agrees), 1 (differs) or 2 (could not judge)
whatever interrupts it.

* A progress file tells candidates apart by what they compute, not by
  their name: two partials, two lambdas of one module, a callable object
  with other state, a module edited between two runs.  A candidate that
  cannot be told apart sweeps afresh but never resumes; a file of the
  previous format (which recorded the name alone) is never resumed.
* A Dask runner that cannot finish (a worker killed, a cluster that
  cancels, a lost connection) is exit 2 with one line, and in Python one
  ``fpsim.sweep.RunnerError``; never a traceback, never the "differs"
  status 1.  Here the cluster is a stand-in module (the default run has no
  Dask); tests/test_sweep_dask.py kills a real worker.
* ``ver`` with stdout closed gives its verdict (0 or 1) and a note on
  stderr.

The kernels compute through numpy and ml_dtypes: sums of two E5M2 values
are exact in float32, so ml_dtypes' one rounding of them is the correctly
rounded sum; the faulty ones get exactly one pair wrong (1 + 1), so what a
correct sweep reports about them follows from their definitions.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import functools
import hashlib
import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

from fpsim import _schedulers, sweep
from fpsim.cli import main

TESTS = Path(__file__).resolve().parent

KERNELS = '''\
import threading

import ml_dtypes
import numpy as np

E5M2 = ml_dtypes.float8_e5m2
ONE = 0x3C  # 1.0


def good_add(a, b):
    return (a.astype(np.float32) + b.astype(np.float32)).astype(E5M2)


def bad_add(a, b):  # one fault: 1 + 1 gives 1
    out = good_add(a, b)
    out[(a == 1) & (b == 1)] = 1
    return out


# One code, one name ('round3_kernels:<lambda>'): only their defaults differ.
LAMBDAS = [lambda a, b, f=good_add: f(a, b), lambda a, b, f=bad_add: f(a, b)]


def offset_add(offset, a, b):  # 1 + 1 is `offset` codes off
    out = good_add(a, b).view(np.uint8).copy()
    out[(a == 1) & (b == 1)] += np.uint8(offset)
    return out.view(E5M2)


class Adder:  # a callable object whose state decides its results
    def __init__(self, faulty):
        self.faulty = faulty

    def __call__(self, a, b):
        return bad_add(a, b) if self.faulty else good_add(a, b)


_LOCK = threading.Lock()


def locked_add(a, b):  # it holds a lock, whose state cannot be read: no identity
    with _LOCK:
        return good_add(a, b)


TABLE = {"names": {"b", "a", "c", "d"}, 3: (1.5, None)}


def table_add(a, b):  # a set of strings: iterated in a per-process order
    assert len(TABLE["names"]) == 4
    return good_add(a, b)
'''

E5M2_PAIRS = 65536
CHUNK = 4096  # 16 chunks; the pair (1, 1) = (0x3c, 0x3c) is rank 15420, in chunk 3


@pytest.fixture
def kernels(tmp_path, monkeypatch):
    (tmp_path / "round3_kernels.py").write_text(KERNELS)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "dont_write_bytecode", True)  # a module rewritten is read anew
    sys.modules.pop("round3_kernels", None)
    sweep.load_candidate.cache_clear()
    import round3_kernels

    yield round3_kernels
    sys.modules.pop("round3_kernels", None)
    sweep.load_candidate.cache_clear()


def _stop_after(chunks):
    def stop(p):
        if p.chunks_done == chunks:
            raise KeyboardInterrupt
    return stop


def cli(capsys, *argv):
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


# -- item 1: a progress file tells candidates apart by what they compute ---------------------

@pytest.mark.parametrize("wrap", [functools.partial, lambda f: f], ids=["partial", "plain"])
def test_a_partial_of_another_kernel_never_resumes_a_file_as_agreeing(kernels, tmp_path, wrap):
    # The case: the file of a sweep of good_add, then bad_add wrapped
    # in a partial, on the same file (every partial was 'functools:partial').
    path = str(tmp_path / "p.json")
    assert sweep.run("add", "e5m2", wrap(kernels.good_add), progress_file=path).report.ok
    with pytest.raises(ValueError, match=f"progress file {path}"):
        sweep.run("add", "e5m2", functools.partial(kernels.bad_add), progress_file=path)
    # without the file, the partial is judged: one pair beyond tolerance
    fresh = sweep.run("add", "e5m2", functools.partial(kernels.bad_add))
    assert not fresh.ok and fresh.report.beyond_tolerance == 1


@pytest.mark.parametrize("first, second", [
    (lambda k: k.LAMBDAS[0], lambda k: k.LAMBDAS[1]),
    (lambda k: functools.partial(k.offset_add, 0), lambda k: functools.partial(k.offset_add, 1)),
    (lambda k: k.Adder(False), lambda k: k.Adder(True)),
    (lambda k: k.Adder(False).__call__, lambda k: k.Adder(True).__call__),
], ids=["lambdas", "partials", "callable-objects", "bound-methods"])
def test_candidates_of_one_name_are_told_apart(kernels, tmp_path, first, second):
    path = str(tmp_path / "p.json")
    a, b = first(kernels), second(kernels)
    # the same name: only what they compute tells them apart
    assert sweep.run("add", "e5m2", a).spec["candidate"] == \
        sweep.run("add", "e5m2", b).spec["candidate"]
    assert sweep.run("add", "e5m2", a, chunk_size=CHUNK, progress_file=path).ok
    with pytest.raises(ValueError, match="written by another candidate"):
        sweep.run("add", "e5m2", b, chunk_size=CHUNK, progress_file=path)
    # and the same candidate again resumes the whole sweep from the file
    again = sweep.run("add", "e5m2", first(kernels), chunk_size=CHUNK, progress_file=path)
    assert again.ok and again.resumed_from == E5M2_PAIRS


def test_an_edited_kernel_does_not_resume_its_old_progress(kernels, tmp_path, capsys):
    # Half of the sweep with the faulty good_add, then the module fixed under
    # the same name: the chunks done judged the old code.
    source = tmp_path / "round3_kernels.py"
    source.write_text(KERNELS.replace("def good_add(a, b):\n", "def good_add(a, b):\n"
                                      "    b = b.copy(); b[(a == 1) & (b == 1)] = 0\n"))
    sys.modules.pop("round3_kernels", None)
    sweep.load_candidate.cache_clear()
    first = sweep.run("add", "e5m2", "round3_kernels:good_add", chunk_size=CHUNK,
                      progress_file="p.json", on_progress=_stop_after(8), save_every=0.0)
    assert first.interrupted and first.report.beyond_tolerance == 1  # the fault, in chunk 3
    source.write_text(KERNELS)
    sys.modules.pop("round3_kernels", None)
    sweep.load_candidate.cache_clear()
    status, out, err = cli(capsys, "sweep", "add", "--fmt", "e5m2", "--against",
                           "round3_kernels:good_add", "--chunk-size", str(CHUNK),
                           "--progress-file", "p.json")
    assert status == 2 and out == "" and err.count("\n") == 1, err
    assert "progress file p.json" in err and "written by another candidate" in err
    assert "round3_kernels:good_add" in err


def test_an_unidentifiable_candidate_sweeps_afresh_but_never_resumes(kernels, capsys):
    argv = ("sweep", "add", "--fmt", "e5m2", "--against", "round3_kernels:locked_add",
            "--progress-file", "p.json")
    status, out, err = cli(capsys, *argv)
    assert status == 0 and "AGREES" in out  # no file: it runs
    status, out, err = cli(capsys, *argv)
    assert status == 2 and out == "" and err.count("\n") == 1, err
    for needle in ("progress file p.json", "round3_kernels:locked_add",
                   "cannot be identified", "lock", "delete the file"):
        assert needle in err, (needle, err)
    with pytest.raises(ValueError, match="cannot be identified"):
        sweep.run("add", "e5m2", kernels.locked_add, progress_file="p.json")


def test_a_file_of_the_previous_format_is_never_resumed(kernels, tmp_path):
    # Version 2 named the candidate alone: a file fpsim of then wrote (here
    # rebuilt as it wrote it, digest included) for good_add, complete.
    path = str(tmp_path / "p.json")
    sweep.run("add", "e5m2", kernels.good_add, progress_file=path)
    data = json.load(open(path))
    data["spec"].pop("candidate_code")
    data["fpsim_sweep_progress"] = 2
    body = {k: data[k] for k in ("fpsim_sweep_progress", "spec", "chunks", "done", "partial")}
    data["digest"] = hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":"))
                                    .encode()).hexdigest()
    json.dump(data, open(path, "w"))
    # the name was all version 2 recorded: even the same candidate does not
    # resume it
    with pytest.raises(ValueError, match="version 2"):
        sweep.run("add", "e5m2", kernels.good_add, progress_file=path)


def test_a_resume_in_another_process_knows_its_candidate(kernels, tmp_path):
    # Each run is its own process, with its own hash seed (which orders a set
    # of strings): the identity is the same, so the second run resumes.
    argv = [sys.executable, "-m", "fpsim", "sweep", "add", "--fmt", "e5m2", "--against",
            "round3_kernels:table_add", "--chunk-size", str(CHUNK), "--progress-file",
            "p.json", "--json"]
    runs = []
    for seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=seed,
                   PYTHONPATH=os.pathsep.join([str(tmp_path), str(TESTS)]))
        done = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, done.stderr
        runs.append(json.loads(done.stdout))
    assert runs[0]["resumed_from"] == 0 and runs[1]["resumed_from"] == E5M2_PAIRS


# -- item 4: a runner that cannot finish is exit 2, never a verdict --------------------------

class KilledWorker(Exception):
    """Stands in for distributed.KilledWorker (the default run has no Dask)."""


class _Future:
    """A finished future: a chunk's result, its own exception, or the
    failure planted on it (status, exception), as distributed's futures."""

    def __init__(self, fn, item, planted):
        self.value = self.error = None
        if item in planted:
            self.status, self.error = planted[item]
            return
        try:
            self.value, self.status = fn(item), "finished"
        except Exception as exc:  # the task's own error, raised on the "worker"
            self.status, self.error = "error", exc

    def result(self):
        if self.error is not None:
            raise self.error
        return self.value


def stand_in_distributed(planted):
    """A module with what fpsim's Distributed runner uses of ``distributed``:
    Client, KilledWorker, as_completed."""
    module = types.ModuleType("distributed")

    class Client:
        loop = None
        scheduler = types.SimpleNamespace(address="tcp://stand-in:8786")

        def __init__(self, *args, **kwargs):
            pass

        def scheduler_info(self):
            return {"workers": {"tcp://stand-in:1": {"nthreads": 1}}}

        def submit(self, fn, item, pure=True):
            return _Future(fn, item, planted)

        def cancel(self, futures):
            pass

        def close(self):
            pass

    class as_completed:  # noqa: N801  (distributed's name)
        def __init__(self, loop=None):
            self.queue = collections.deque()

        def add(self, future):
            self.queue.append(future)

        def __iter__(self):
            while self.queue:
                yield self.queue.popleft()

    module.Client, module.KilledWorker, module.as_completed = Client, KilledWorker, as_completed
    return module


FAILURES = [
    ("killed-worker", "error", KilledWorker("Attempted to run task 'evaluate-1' on 1 different "
                                            "workers, but all those workers died"),
     "a worker died"),
    ("cancelled", "cancelled",
     concurrent.futures.CancelledError("cancelled for reason: scheduler-connection-lost"),
     "cancelled the work"),
    ("comm-closed", "lost", OSError("in <TCP (closed)>: Stream is closed"),
     "connection to the cluster failed"),
    ("timeout", "pending", TimeoutError("timed out"), "connection to the cluster failed"),
    ("asyncio-cancelled", "cancelled", asyncio.CancelledError(), "cancelled the work"),
]


@pytest.fixture
def cluster(monkeypatch):
    """Plant a failure of the runner on a chunk: ``cluster(chunk, status,
    error)`` gives the address of a stand-in cluster that fails it so."""
    def plant(chunk, status, error):
        monkeypatch.setitem(sys.modules, "distributed",
                            stand_in_distributed({chunk: (status, error)}))
        monkeypatch.setattr(_schedulers, "_probe", lambda address, timeout: None)
        return "tcp://stand-in:8786"
    return plant


@pytest.mark.parametrize("name, status, error, words", FAILURES, ids=[f[0] for f in FAILURES])
def test_a_runner_that_cannot_finish_is_exit_2_in_one_line(kernels, capsys, cluster, name,
                                                           status, error, words):
    address = cluster(5, status, error)
    # bad_add's one fault is in chunk 3, found before chunk 5 fails: still no verdict
    status_, out, err = cli(capsys, "sweep", "add", "--fmt", "e5m2", "--against",
                            "round3_kernels:bad_add", "--chunk-size", str(CHUNK),
                            "--scheduler", address, "--progress-file", "p.json")
    assert status_ == 2 and out == "", (out, err)
    assert err.startswith("fpsim: error: the sweep could not finish (5 of 16 chunks done")
    assert err.count("\n") == 1 and "Traceback" not in err
    assert words in err and type(error).__name__ in err, err
    # the chunks done are kept: the same sweep resumes from them, here in this
    # process, to the verdict
    resumed = sweep.run("add", "e5m2", "round3_kernels:bad_add", chunk_size=CHUNK,
                        progress_file="p.json")
    assert resumed.resumed_from == 5 * CHUNK and resumed.complete
    assert resumed.verdict == "disagrees" and resumed.report.beyond_tolerance == 1


def test_in_python_a_runner_failure_is_a_runner_error(kernels, cluster):
    address = cluster(2, "error", KilledWorker("all those workers died"))
    with pytest.raises(sweep.RunnerError, match=r"could not finish \(2 of 16 chunks done\): a "
                                                r"worker died") as caught:
        sweep.run("add", "e5m2", kernels.good_add, chunk_size=CHUNK, scheduler=address)
    assert isinstance(caught.value, RuntimeError)
    assert isinstance(caught.value.__cause__, sweep.RunnerError)
    assert isinstance(caught.value.__cause__.__cause__, KilledWorker)


def test_the_candidates_own_error_on_a_worker_stays_the_candidates(kernels, cluster):
    # a task that raised is not a dead worker: CandidateError, naming it
    address = cluster(99, "error", KilledWorker("never reached"))
    fails = functools.partial(_fails_on_chunks, kernels.good_add)
    with pytest.raises(sweep.CandidateError, match="ZeroDivisionError"):
        sweep.run("add", "e5m2", fails, chunk_size=CHUNK, scheduler=address)


def _fails_on_chunks(add, a, b):
    if a.size > 64:  # not the sweep's first call (4 operands)
        raise ZeroDivisionError("planted on a chunk")
    return add(a, b)


# -- item 9: ver with stdout closed gives its verdict ----------------------------------------

def _ver_with_stdout_closed(folder):
    """``python -m fpsim ver f16_add lines.txt`` in ``folder``, file
    descriptor 1 closed (``>&-``)."""
    return subprocess.run([sys.executable, "-m", "fpsim", "ver", "f16_add", "lines.txt"],
                          cwd=folder, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=60, preexec_fn=lambda: os.close(1))


@pytest.mark.parametrize("lines, status, differ", [
    ("3C00 3C00 4000 00\n", 0, 0),                        # 1 + 1 = 2, no flags
    ("3C00 3C00 4000 00\n3C00 3C00 4200 00\n", 1, 1),     # 1 + 1 = 3: a device's error
])
def test_ver_with_stdout_closed_gives_its_verdict(tmp_path, lines, status, differ):
    (tmp_path / "lines.txt").write_text(lines)
    done = _ver_with_stdout_closed(tmp_path)
    assert done.returncode == status, done.stderr
    assert done.stdout == "" and done.stderr.count("\n") == 1
    assert "stdout is closed" in done.stderr and "Traceback" not in done.stderr
    n = lines.count("\n")
    assert f"{n} line{'s' if n > 1 else ''} checked, {differ} differ" in done.stderr


def test_ver_with_stdout_closed_still_refuses_bad_input(tmp_path):
    (tmp_path / "lines.txt").write_text("3C00 3C00\n")  # no result field
    done = _ver_with_stdout_closed(tmp_path)
    assert done.returncode == 2 and done.stderr.startswith("fpsim: error: ")
    assert done.stderr.count("\n") == 1 and "line 1" in done.stderr
