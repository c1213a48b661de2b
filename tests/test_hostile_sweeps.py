"""Hostile input to sweeps: never a success on a mismatch, a candidate that
fails or hangs is the candidate's failure, a progress file is believed only
when it adds up, and two sweeps never share one progress file.

The candidates here compute through numpy and ml_dtypes (sums of two E5M2
values are exact in float32, so ml_dtypes' one rounding is the correctly
rounded sum), or fail on purpose; what a correct sweep reports about them
(65,536 pairs, none beyond tolerance) follows from that, not from fpsim.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fpsim import sweep
from fpsim.cli import main
from fpsim.sweep import _progress

KERNELS = '''\
import time

import ml_dtypes
import numpy as np

E5M2 = ml_dtypes.float8_e5m2


def good(a, b):
    return (a.astype(np.float32) + b.astype(np.float32)).astype(E5M2)


def wrong(a, b):  # one fault: 1 + 1 gives 1
    out = good(a, b)
    out[(a == 1) & (b == 1)] = 1
    return out


class Planted(BaseException):
    pass


def _after_probe(exc):
    def kernel(a, b):
        if a.size > 64:  # the sweep's first call (its probe) has 4 operands
            raise exc
        return good(a, b)
    return kernel


exits_0 = _after_probe(SystemExit(0))
exits_none = _after_probe(SystemExit(None))
generator_exit = _after_probe(GeneratorExit())
planted = _after_probe(Planted("a BaseException of its own"))


def hangs_on_chunk_3(a, b):
    if a.size > 64 and int(a.view(np.uint8)[0]) == 0x30 and int(b.view(np.uint8)[0]) == 0:
        time.sleep(3600)
    return good(a, b)


def hangs_at_once(a, b):
    time.sleep(3600)
'''

E5M2_PAIRS = 65536
CHUNK = 4096  # 16 chunks; chunk 3 holds ranks 12288..16383: a = 0x30..0x3f, b = 0x00..0xff


@pytest.fixture
def kernels(tmp_path, monkeypatch):
    (tmp_path / "hostile_kernels.py").write_text(KERNELS)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    sys.modules.pop("hostile_kernels", None)
    sweep.load_candidate.cache_clear()
    yield tmp_path
    sys.modules.pop("hostile_kernels", None)
    sweep.load_candidate.cache_clear()


def cli(capsys, *argv):
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def subprocess_cli(cwd: Path, *argv, timeout=120, **kw):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(cwd), os.environ.get("PYTHONPATH",
                                                                               "")]))
    return subprocess.run([sys.executable, "-m", "fpsim", *argv], cwd=cwd, env=env,
                          timeout=timeout, **kw)


# -- rule 1: a candidate's exceptions, of every kind, are its failures ---------------------

@pytest.mark.parametrize("kernel, name", [
    ("exits_0", "SystemExit"), ("exits_none", "SystemExit"),
    ("generator_exit", "GeneratorExit"), ("planted", "Planted"),
])
def test_a_candidate_raising_any_base_exception_fails_with_exit_2(kernels, capsys, kernel,
                                                                  name):
    status, out, err = cli(capsys, "sweep", "add", "--fmt", "e5m2", "--against",
                           f"hostile_kernels:{kernel}")
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and f"hostile_kernels:{kernel}" in err and name in err
    with pytest.raises(sweep.CandidateError, match=name):
        sweep.run("add", "e5m2", f"hostile_kernels:{kernel}")


def test_system_exit_0_in_a_subprocess_is_not_a_success(kernels):
    done = subprocess_cli(kernels, "sweep", "add", "--fmt", "e5m2", "--against",
                          "hostile_kernels:exits_0", capture_output=True, text=True)
    assert done.returncode == 2 and done.stdout == "" and "SystemExit" in done.stderr


def test_a_closed_stdout_never_turns_a_mismatch_into_success(kernels):
    for kernel, expected in (("wrong", 1), ("good", 0)):
        read, write = os.pipe()
        os.close(read)  # the reader is gone before the first byte
        try:
            done = subprocess_cli(kernels, "sweep", "add", "--fmt", "e5m2", "--against",
                                  f"hostile_kernels:{kernel}", stdout=write,
                                  stderr=subprocess.PIPE, text=True)
        finally:
            os.close(write)
        assert done.returncode == expected, (kernel, done.stderr)
        assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr


# -- rule 1: a progress file is believed only when it adds up --------------------------------

def _saved(kernels, kernel="wrong"):
    path = str(kernels / "p.json")
    report = sweep.run("add", "e5m2", f"hostile_kernels:{kernel}", chunk_size=CHUNK,
                       progress_file=path)
    return path, report


def _rewrite(path, change, redigest=True):
    data = json.load(open(path))
    change(data)
    if redigest:  # an editor who also recomputes the digest
        body = {k: data[k] for k in ("fpsim_sweep_progress", "spec", "chunks", "done",
                                     "partial")}
        data["digest"] = hashlib.sha256(json.dumps(body, sort_keys=True,
                                                   separators=(",", ":")).encode()).hexdigest()
    json.dump(data, open(path, "w"))


def _zero_counts(data):
    p = data["partial"]
    p.update(exact=p["total"], within_tolerance=0, beyond_tolerance=0, ulp_mismatch=0,
             nan_mismatch=0, inf_mismatch=0, signed_zero_mismatch=0, offenders=[])


@pytest.mark.parametrize("change, redigest, message", [
    (_zero_counts, False, "does not match its digest"),
    # counts edited consistently with each other, and the digest redone: the
    # largest distance still recorded betrays the edit
    (_zero_counts, True, "largest distance is beyond tolerance"),
    (lambda d: d["partial"].update(total=0, exact=0), True, "does not add up"),
    (lambda d: d.update(done=[[0, 10**10]]), True, "not a sorted, disjoint range"),
    (lambda d: d.update(done=[[3, 2]]), True, "not a sorted, disjoint range"),
    (lambda d: d.update(done=[[0, 4], [2, 6]]), True, "not a sorted, disjoint range"),
    (lambda d: d.update(done="all"), True, "not a list of ranges"),
    (lambda d: d.update(chunks=10**12), True, "chunks"),
    (lambda d: d["partial"].update(bins=[0] * 3), True, "histogram"),
    (lambda d: d["partial"].update(total=-5), True, "not a count"),
    (lambda d: d["partial"].update(offenders=[["x"]]), True, "offenders"),
    (lambda d: d["spec"].update(op="mul"), True, "another sweep"),
    (lambda d: d.update(fpsim_sweep_progress=1), True, "version"),
    (lambda d: d.pop("partial"), False, "lacks partial"),
])
def test_an_edited_progress_file_is_refused_naming_it(kernels, capsys, change, redigest,
                                                      message):
    path, first = _saved(kernels)
    assert first.report.beyond_tolerance == 1  # the one planted fault: 1 + 1
    _rewrite(path, change, redigest)
    start = time.monotonic()
    status, out, err = cli(capsys, "sweep", "add", "--fmt", "e5m2", "--against",
                           "hostile_kernels:wrong", "--chunk-size", str(CHUNK),
                           "--progress-file", path)
    assert time.monotonic() - start < 30
    assert status == 2 and out == "", (out, err)
    assert err.count("\n") == 1 and f"progress file {path}" in err and message in err, err


@pytest.mark.parametrize("content", [
    "", "[]", "null", "5", '"text"', "{}", '{"fpsim_sweep_progress": 2}',
    '{"fpsim_sweep_progress": 2, "spec": 5, "chunks": 1, "done": [], "partial": {}, '
    '"digest": ""}',
    "[" * 100000 + "]" * 100000,  # deeper than the JSON reader recurses
    "\x00\xff garbage",
])
def test_a_wrong_shaped_progress_file_is_one_line(kernels, capsys, content):
    path = kernels / "p.json"
    path.write_bytes(content.encode("latin-1"))
    status, out, err = cli(capsys, "sweep", "add", "--fmt", "e5m2", "--against",
                           "hostile_kernels:good", "--progress-file", str(path))
    assert status == 2 and out == "" and err.count("\n") == 1
    assert err.startswith(f"fpsim: error: progress file {path}")


def test_a_fifo_progress_file_is_refused_not_waited_on(kernels):
    fifo = kernels / "p.json"
    os.mkfifo(fifo)
    done = subprocess_cli(kernels, "sweep", "add", "--fmt", "e5m2", "--against",
                          "hostile_kernels:good", "--progress-file", str(fifo), timeout=60,
                          capture_output=True, text=True)
    assert done.returncode == 2 and "not a regular file" in done.stderr
    assert done.stderr.count("\n") == 1


def test_a_resumed_sweep_still_reports_the_mismatch(kernels):
    # the honest path: a file fpsim wrote resumes to the same verdict
    path, first = _saved(kernels)
    again = sweep.run("add", "e5m2", "hostile_kernels:wrong", chunk_size=CHUNK,
                      progress_file=path)
    assert not again.ok and again.report.beyond_tolerance == 1 and again.done == E5M2_PAIRS


# -- rule 5: a candidate that hangs, and two sweeps on one progress file ---------------------

def test_a_hanging_candidate_ends_the_sweep_naming_the_chunk(kernels):
    start = time.monotonic()
    done = subprocess_cli(kernels, "sweep", "add", "--fmt", "e5m2", "--against",
                          "hostile_kernels:hangs_on_chunk_3", "--chunk-size", str(CHUNK),
                          "--chunk-timeout", "2", "--progress-file", "p.json", timeout=120,
                          capture_output=True, text=True)
    assert time.monotonic() - start < 60
    assert done.returncode == 2 and done.stdout == ""
    err = done.stderr
    assert err.count("\n") == 1 and "did not finish chunk 3 of 16" in err
    # rank r is the pair (a, b) = (r // 256, r % 256)
    assert "tuples 12288..16383" in err and "operands (0x30, 0x00) to (0x3f, 0xff)" in err
    assert "within 2 s" in err
    # the chunks finished before the hang stay done
    saved = json.load(open(kernels / "p.json"))
    assert saved["done"] and saved["done"][0][0] == 0


def test_a_candidate_hanging_on_its_first_call_is_bounded_too(kernels):
    with pytest.raises(sweep.CandidateError, match="its first call"):
        sweep.run("add", "e5m2", "hostile_kernels:hangs_at_once", chunk_timeout=0.5)


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf"), "5", True])
def test_chunk_timeout_must_be_positive_seconds(kernels, bad):
    with pytest.raises(ValueError, match="chunk_timeout"):
        sweep.run("add", "e5m2", "hostile_kernels:good", chunk_timeout=bad)


@pytest.mark.parametrize("text", ["nan", "inf", "0", "-3", "soon"])
def test_cli_chunk_timeout_must_be_positive_seconds(kernels, capsys, text):
    status, out, err = cli(capsys, "sweep", "add", "--fmt", "e5m2", "--against",
                           "hostile_kernels:good", "--chunk-timeout", text)
    assert status == 2 and err.count("\n") == 1 and "--chunk-timeout" in err


def test_two_sweeps_on_one_progress_file_refuse_rather_than_corrupt(kernels, capsys):
    path = str(kernels / "p.json")
    with _progress.lock(path):  # another sweep holds the file
        status, out, err = cli(capsys, "sweep", "add", "--fmt", "e5m2", "--against",
                               "hostile_kernels:good", "--progress-file", path)
        assert status == 2 and "in use by another sweep" in err and err.count("\n") == 1
        assert not os.path.exists(path)  # nothing written over the holder's file
    report = sweep.run("add", "e5m2", "hostile_kernels:good", progress_file=path)
    assert report.ok  # once it is free, it works


def test_two_sweep_processes_on_one_file(kernels):
    # the first sweep hangs holding the file; the second is refused at once
    first = subprocess.Popen(
        [sys.executable, "-m", "fpsim", "sweep", "add", "--fmt", "e5m2", "--against",
         "hostile_kernels:hangs_on_chunk_3", "--chunk-size", str(CHUNK),
         "--chunk-timeout", "30", "--progress-file", "p.json"],
        cwd=kernels, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=dict(os.environ, PYTHONPATH=str(kernels)))
    try:
        deadline = time.monotonic() + 60
        while not (kernels / "p.json").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        second = subprocess_cli(kernels, "sweep", "add", "--fmt", "e5m2", "--against",
                                "hostile_kernels:hangs_on_chunk_3", "--chunk-size",
                                str(CHUNK), "--progress-file", "p.json", timeout=60,
                                capture_output=True, text=True)
        assert second.returncode == 2 and "in use by another sweep" in second.stderr
    finally:
        first.kill()
        first.communicate()


# -- the command line's one-line errors stay short and on one line --------------------------

@pytest.mark.parametrize("argv", [
    ["explain", "--bits", "9" * 5000, "--fmt", "fp16"],
    ["explain", "--bits", "0x" + "f" * 5000, "--fmt", "fp16"],
    ["explain", "1", "--fmt", "x" * 5000],
    ["explain", "1", "--rounding", "y" * 5000],
    ["explain", "1", "--fmt", "a\nb"],
])
def test_errors_quoting_huge_or_multiline_arguments_stay_one_short_line(capsys, argv):
    status, out, err = cli(capsys, *argv)
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("fpsim: error: ") and len(err) < 700
