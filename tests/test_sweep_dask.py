"""Sweeps and comparisons on Dask: the same reports as in this process.

Needs dask and distributed (``pip install fpsim[dask]``; ``tox -e dask``
runs this file, the full FP16 sweeps included); skipped without them.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
import sweep_kernels as K

dask = pytest.importorskip("dask")
distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")

from fpsim import sweep  # noqa: E402
from fpsim.cli import main  # noqa: E402
from fpsim.testing import compare  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning",
                                        "ignore::ResourceWarning")


@pytest.fixture(scope="module")
def cluster():
    """A 2-worker distributed.LocalCluster (worker processes), its workers
    able to import sweep_kernels."""
    os.environ["PYTHONPATH"] = os.pathsep.join([HERE, os.environ.get("PYTHONPATH", "")])
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as c:
        # Not the default client: the runner must use its own (a default
        # client would hide a runner that reaches for one).
        with distributed.Client(c, set_as_default=False) as client:
            client.run(lambda: __import__("sys").path.insert(0, HERE))
        yield c


def _same(reports):
    dicts = []
    for r in reports:
        d = r.to_dict()
        for k in ("elapsed_s", "rate_per_s", "scheduler"):
            d.pop(k)
        dicts.append(d)
    assert all(d == dicts[0] for d in dicts[1:])
    return dicts[0]


@pytest.mark.parametrize("kw", [
    dict(op="add", fmt="e5m2", against="sweep_kernels:broken_e5m2_add", chunk_size=4096),
    dict(op="add", fmt="fp16", against="sweep_kernels:broken_fp16_add", sample=2 ** -12,
         chunk_size=1 << 18),
    dict(op="add", fmt="fp16", against="sweep_kernels:broken_fp16_add",
         specials="0,-0,1,0x0001,0x8001,inf,nan", chunk_size=1 << 18),
])
def test_in_process_dask_local_and_cluster_give_identical_reports(kw, cluster):
    kw = dict(kw)
    op, fmt, against = kw.pop("op"), kw.pop("fmt"), kw.pop("against")
    reports = [sweep.run(op, fmt, against, **kw),
               sweep.run(op, fmt, against, scheduler="local", workers=2, **kw),
               sweep.run(op, fmt, against, scheduler="processes", workers=2, **kw),
               sweep.run(op, fmt, against, scheduler=cluster.scheduler_address, **kw)]
    assert reports[3].scheduler.startswith("distributed") and "2 workers" in reports[3].scheduler
    d = _same(reports)
    assert d["verdict"] == "disagrees" and d["complete"]
    assert d["report"]["beyond_tolerance"] > 0


def test_broken_fp16_adder_mismatches_are_exactly_the_planted_ones(cluster):
    # A sample of FP16 pairs; the planted subsets counted with numpy alone.
    r = sweep.run("add", "fp16", "sweep_kernels:broken_fp16_add", sample=2 ** -10,
                  scheduler=cluster.scheduler_address, chunk_size=1 << 18)
    from fpsim.formats import format as fmt_of
    from fpsim.sweep._space import Space
    codes, _ = Space(fmt_of("fp16"), 2, "sample", fraction=2 ** -10).take(0, r.size)
    a, b = (c.astype(np.uint16).view(np.float16) for c in codes)
    with np.errstate(all="ignore"):
        exact = a + b
    flushed = (np.abs(exact) < np.float16(2.0 ** -14)) & (exact != 0)
    up = (a.view(np.uint16) == 0x3C00) & (b.view(np.uint16) >= 0x3C00) & \
        (b.view(np.uint16) < 0x4000)
    assert r.report.ulp_mismatch == int(flushed.sum() + up.sum()) > 0
    assert r.report.beyond_tolerance == r.report.ulp_mismatch


def test_resume_on_another_scheduler_gives_the_same_report(tmp_path, cluster):
    path = str(tmp_path / "progress.json")
    kw = dict(chunk_size=1024)
    whole = sweep.run("add", "e5m2", "sweep_kernels:broken_e5m2_add", **kw)

    def stop(p):
        if p.chunks_done == 20:
            raise KeyboardInterrupt

    first = sweep.run("add", "e5m2", "sweep_kernels:broken_e5m2_add", progress_file=path,
                      on_progress=stop, save_every=0.0, **kw)
    assert first.interrupted and first.chunks_done == 20
    second = sweep.run("add", "e5m2", "sweep_kernels:broken_e5m2_add", progress_file=path,
                       scheduler=cluster.scheduler_address, **kw)
    assert second.complete and second.resumed_from == 20 * 1024
    a, b = whole.to_dict(), second.to_dict()
    for d in (a, b):
        for k in ("elapsed_s", "rate_per_s", "scheduler", "resumed_from"):
            d.pop(k)
    assert a == b


def test_unreachable_scheduler_is_a_clear_error():
    with pytest.raises(ConnectionError, match=r"cannot reach the Dask scheduler at "
                                              r"'tcp://127.0.0.1:9' within 2 s"):
        sweep.run("add", "e5m2", K.e5m2_add, scheduler="tcp://127.0.0.1:9", timeout=2)


def test_a_killed_worker_is_exit_2_in_one_line_never_a_verdict(tmp_path, cluster):
    """A candidate that ends its worker process (os._exit on a chunk): the
    sweep could not finish, which is exit 2 with one line, and in Python a
    RunnerError; never a traceback, never the "differs" status 1.  A
    cluster of its own (the module's keeps its workers), one worker, no
    retries (``allowed-failures`` 0), read by its scheduler in this
    process."""
    import subprocess
    import sys

    with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
        with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                      dashboard_address=None) as dying:
            env = dict(os.environ, PYTHONPATH=os.pathsep.join([HERE, os.environ.get(
                "PYTHONPATH", "")]))
            done = subprocess.run(
                [sys.executable, "-m", "fpsim", "sweep", "add", "--fmt", "e5m2", "--against",
                 "sweep_kernels:dies_on_chunks", "--chunk-size", "4096", "--scheduler",
                 dying.scheduler_address, "--progress-file", str(tmp_path / "p.json")],
                capture_output=True, text=True, env=env, timeout=300)
            assert done.returncode == 2 and done.stdout == "", done.stderr
            err = done.stderr
            assert err.startswith("fpsim: error: the sweep could not finish (0 of 16 chunks")
            assert err.count("\n") == 1 and "Traceback" not in err
            assert "a worker died" in err and "KilledWorker" in err
            with pytest.raises(sweep.RunnerError, match="a worker died") as caught:
                sweep.run("add", "e5m2", "sweep_kernels:dies_on_chunks", chunk_size=4096,
                          scheduler=dying.scheduler_address)
            assert isinstance(caught.value.__cause__.__cause__, distributed.KilledWorker)
    # the chunks done (none: the first one killed the only worker) are saved
    saved = json.load(open(tmp_path / "p.json"))
    assert saved["done"] == []


def test_a_dead_local_worker_process_is_a_runner_error(capsys):
    # --scheduler processes: the pool breaks (BrokenProcessPool)
    with pytest.raises(sweep.RunnerError, match="worker process of Dask's local scheduler "
                                                r"\(dask processes, 1 workers\) died"):
        sweep.run("add", "e5m2", "sweep_kernels:dies_on_chunks", chunk_size=4096,
                  scheduler="processes", workers=1)
    status = main(["sweep", "add", "--fmt", "e5m2", "--against", "sweep_kernels:dies_on_chunks",
                   "--scheduler", "processes", "--workers", "1"])
    out, err = capsys.readouterr()
    assert status == 2 and out == "" and err.count("\n") == 1 and "BrokenProcessPool" in err


def test_the_candidates_own_error_on_a_worker_is_a_candidate_error(cluster, capsys):
    with pytest.raises(sweep.CandidateError, match="ZeroDivisionError: planted on a chunk"):
        sweep.run("add", "e5m2", "sweep_kernels:raises_on_chunks",
                  scheduler=cluster.scheduler_address)


def test_cli_sweep_and_diff_on_the_cluster(tmp_path, cluster, capsys):
    status = main(["sweep", "add", "--fmt", "e5m2", "--against", "sweep_kernels:e5m2_add",
                   "--scheduler", cluster.scheduler_address, "--json"])
    out, err = capsys.readouterr()
    assert status == 0 and json.loads(out)["scheduler"].startswith("distributed")
    status = main(["sweep", "add", "--fmt", "e5m2", "--against", "sweep_kernels:e5m2_add",
                   "--scheduler", "tcp://127.0.0.1:9", "--timeout", "1"])
    out, err = capsys.readouterr()
    assert status == 2 and err.count("\n") == 1 and "cannot reach the Dask scheduler" in err
    # diff of two dumps, chunk by chunk on the cluster, as in this process
    rng = np.random.default_rng(1)
    expected = rng.integers(0, 0x7C00, 3 * (1 << 20) + 5, dtype=np.uint16)
    actual = expected.copy()
    actual[[7, 1 << 20, 3 * (1 << 20) + 4]] += 1
    actual[2_000_000] = 0x7E00
    expected.tofile(tmp_path / "e.bin")
    actual.tofile(tmp_path / "a.bin")
    outs = []
    for extra in ([], ["--scheduler", cluster.scheduler_address], ["--scheduler", "local"]):
        status = main(["diff", str(tmp_path / "a.bin"), str(tmp_path / "e.bin"), "--fmt", "fp16",
                       "--json", *extra])
        out, _ = capsys.readouterr()
        assert status == 1
        outs.append(json.loads(out))
    assert outs[0] == outs[1] == outs[2]
    assert outs[0]["ulp_mismatch"] == 3 and outs[0]["nan_mismatch"] == 1


def test_compare_of_dask_arrays_equals_compare_of_numpy_arrays():
    rng = np.random.default_rng(2)
    expected = rng.integers(0, 0x7C00, (300, 700), dtype=np.uint16).view(np.float16)
    actual = expected.copy()
    flat = actual.reshape(-1).view(np.uint16)
    flat[[5, 1000, 70_000, 209_999]] += np.uint16(3)
    flat[150_000] ^= np.uint16(0x8000)
    ref = compare(actual, expected, max_ulp=1)
    assert ref.ulp_mismatch == 5 and ref.max_ulp_index == (214, 200)  # the sign flip
    for chunks in ((64, 128), (300, 700), (7, 700), (299, 50)):
        got = compare(da.from_array(actual, chunks=chunks),
                      da.from_array(expected, chunks=(50, 50)), max_ulp=1)
        assert got.to_dict() == ref.to_dict()
    mixed = compare(da.from_array(actual, chunks=(100, 100)), expected, max_ulp=1)
    assert mixed.to_dict() == ref.to_dict()
    listed = compare(actual.tolist(), da.from_array(expected, chunks=(100, 100)), "fp16",
                     max_ulp=1)
    assert listed.to_dict() == ref.to_dict()
    unknown = da.from_array(expected.reshape(-1), chunks=1000)
    unknown = unknown[unknown == unknown]   # chunk sizes unknown until computed
    with pytest.raises(ValueError, match="compute_chunk_sizes"):
        compare(unknown, unknown)


def test_diff_on_the_cluster_through_the_command_line(tmp_path, cluster):
    """A separate process given only the scheduler's address (no default
    client anywhere)."""
    import subprocess
    import sys

    e = np.arange(0, 0x7C00, dtype=np.uint16)
    a = e.copy()
    a[100] += 1
    e.tofile(tmp_path / "e.bin")
    a.tofile(tmp_path / "a.bin")
    p = subprocess.run([sys.executable, "-m", "fpsim", "diff", str(tmp_path / "a.bin"),
                        str(tmp_path / "e.bin"), "--fmt", "fp16", "--json", "--scheduler",
                        cluster.scheduler_address], capture_output=True, text=True)
    assert p.returncode == 1, p.stderr
    assert json.loads(p.stdout)["ulp_mismatch"] == 1


@pytest.mark.exhaustive
@pytest.mark.parametrize("op, kernel", [("add", "sweep_kernels:np_add"),
                                        ("mul", "sweep_kernels:np_mul")])
def test_numpy_float16_full_sweep_agrees(op, kernel):
    """All 4,294,967,296 FP16 operand pairs (rne): numpy's float16 arithmetic
    against the golden model, on 2 local worker processes."""
    r = sweep.run(op, "fp16", kernel, scheduler="processes", workers=2)
    assert r.complete and r.done == 1 << 32
    assert r.ok, str(r)
    assert r.report.nan_mismatch == r.report.ulp_mismatch == 0
