"""fpsim.sweep in this process (no Dask): spaces, candidates, planted faults,
resume, bad input and the command line.

Expected values come from numpy and ml_dtypes (the kernels in
sweep_kernels.py) and from the faults' construction, never from fpsim.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
import sweep_kernels as K

from fpsim import sweep
from fpsim.cli import main
from fpsim.formats import format as fmt_of
from fpsim.sweep._space import Space

HERE = os.path.dirname(os.path.abspath(__file__))
E5M2 = ml_dtypes.float8_e5m2
E4M3 = ml_dtypes.float8_e4m3fn


def _without_timing(r):
    d = r.to_dict()
    for k in ("elapsed_s", "rate_per_s", "scheduler", "resumed_from", "interrupted"):
        d.pop(k)
    return d


# -- spaces -------------------------------------------------------------------------------------

def _all_taken(space, chunk=1000):
    codes, flats = [], []
    for r0 in range(0, space.size, chunk):
        c, f = space.take(r0, min(r0 + chunk, space.size))
        codes.append(np.stack(c, axis=1))
        flats.append(f)
    return np.concatenate(codes), np.concatenate(flats)


def test_space_all_is_every_tuple_in_flat_order():
    space = Space(fmt_of("e2m1"), 3)
    codes, flat = _all_taken(space, 777)
    assert space.size == 16 ** 3
    assert flat.tolist() == list(range(16 ** 3))
    assert [tuple(t) for t in codes.tolist()] == [(a, b, c) for a in range(16) for b in range(16)
                                                  for c in range(16)]


@pytest.mark.parametrize("fraction", [1.0, 0.5, 0.01, 1e-4])
def test_space_sample_is_stratified_distinct_and_deterministic(fraction):
    space = Space(fmt_of("e5m2"), 2, "sample", fraction=fraction, seed=7)
    m = round(fraction * 65536) or 1
    assert space.size == m
    codes, flat = _all_taken(space, 333)
    assert len(set(flat.tolist())) == m
    assert (np.diff(flat.astype(np.int64)) > 0).all()  # increasing flat order
    strata = [(r * 65536 // m, (r + 1) * 65536 // m) for r in range(m)]
    assert all(lo <= f < hi for f, (lo, hi) in zip(flat.tolist(), strata))
    assert (codes[:, 0] * 256 + codes[:, 1]).tolist() == flat.tolist()
    again = _all_taken(Space(fmt_of("e5m2"), 2, "sample", fraction=fraction, seed=7), 1000)[1]
    assert again.tolist() == flat.tolist()  # independent of chunking
    if fraction < 1:
        other = _all_taken(Space(fmt_of("e5m2"), 2, "sample", fraction=fraction, seed=8))[1]
        assert other.tolist() != flat.tolist()


def test_space_sample_of_a_huge_space_stays_exact():
    # FP16 triples: 2**48 tuples; strata bounds in Python integers as the oracle.
    space = Space(fmt_of("fp16"), 3, "sample", fraction=1e-6, seed=1)
    m = space.size
    full = 1 << 48
    r0 = m - 5000
    _, flat = space.take(r0, m)
    for i, f in enumerate(flat.tolist()):
        r = r0 + i
        assert r * full // m <= f < (r + 1) * full // m


@pytest.mark.parametrize("arity", [1, 2, 3])
def test_space_specials_is_every_tuple_holding_one_once(arity):
    fmt = fmt_of("e2m1")
    specials = (0x0, 0x7, 0xF)
    space = Space(fmt, arity, "specials", specials=specials)
    codes, flat = _all_taken(space, 50)
    tuples = [tuple(t) for t in codes.tolist()]
    expected = {t for t in np.ndindex(*(16,) * arity) if any(c in specials for c in t)}
    assert len(tuples) == len(set(tuples)) == space.size == len(expected)
    assert set(tuples) == expected
    assert flat.tolist() == [int(np.ravel_multi_index(t, (16,) * arity)) for t in tuples]


# -- sweeps against independent kernels -----------------------------------------------------------

def test_e5m2_add_and_e4m3_mul_all_pairs_agree():
    for op, fmt, fn in (("add", "e5m2", K.e5m2_add), ("mul", "e4m3", K.e4m3_mul)):
        r = sweep.run(op, fmt, fn)
        assert r.ok and r.complete and r.verdict == "agrees"
        assert r.done == r.report.total == 65536
        assert r.report.beyond_tolerance == 0


def test_fp16_add_sample_and_specials_agree_with_numpy():
    r = sweep.run("add", "fp16", "sweep_kernels:np_add", sample=1 / 4096, chunk_size=1 << 16)
    assert r.ok and r.done == 1 << 20 and r.chunks == 16
    r = sweep.run("mul", "fp16", K.np_mul, specials="0,-0,inf,-inf,nan,65504,0x0001,0x3c00")
    assert r.ok and r.done == 65536 ** 2 - (65536 - 8) ** 2


def test_broken_e5m2_adder_reports_exactly_the_planted_faults():
    r = sweep.run("add", "e5m2", "sweep_kernels:broken_e5m2_add", chunk_size=4096, offenders=1000)
    # The planted subsets, derived from the construction with ml_dtypes alone.
    a, b = np.meshgrid(np.arange(256, dtype=np.uint8), np.arange(256, dtype=np.uint8),
                       indexing="ij")
    with np.errstate(invalid="ignore"):  # inf - inf
        exact = (a.view(E5M2).astype(np.float32) + b.view(E5M2).astype(np.float32)).astype(E5M2)
    value = exact.astype(np.float32)
    flushed = (np.abs(value) < 2.0 ** -14) & (value != 0)
    one_ulp = (a == K.ONE_ULP_A) & (b >= K.ONE_ULP_B.start) & (b < K.ONE_ULP_B.stop)
    wrong_nan = (a == K.WRONG_NAN_A) & (b < K.WRONG_NAN_B.stop)
    assert not (flushed & one_ulp).any() and not (flushed & wrong_nan).any()
    rep = r.report
    assert not r.ok and r.verdict == "disagrees"
    assert rep.nan_mismatch == int(wrong_nan.sum()) == 16
    assert rep.ulp_mismatch == int(flushed.sum() + one_ulp.sum())
    assert rep.inf_mismatch == rep.signed_zero_mismatch == 0
    assert rep.beyond_tolerance == rep.nan_mismatch + rep.ulp_mismatch
    # Every offender is a planted one, in flat order, with its kind.
    planted = flushed | one_ulp | wrong_nan
    assert [o.index for o in rep.offenders] == [tuple(map(int, t)) for t in np.argwhere(planted)]
    for o in rep.offenders:
        kind = "nan" if wrong_nan[o.index] else "ulp"
        assert o.kind == kind
        if o.index in zip(*np.nonzero(flushed)):
            assert o.ulp == int(exact.view(np.uint8)[o.index] & 0x7F)  # distance to zero
    # The largest distance: a flushed subnormal of code 3, the first in flat order.
    big = flushed & ((exact.view(np.uint8) & 0x7F) == 3)
    assert rep.max_ulp == 3 and rep.max_ulp_index == tuple(map(int, np.argwhere(big)[0]))


def test_report_does_not_depend_on_chunk_size():
    reports = [_without_timing(sweep.run("add", "e5m2", K.broken_e5m2_add, chunk_size=c))
               for c in (65536, 5000, 97)]
    for d in reports:
        d["sweep"].pop("chunk_size")
        d.pop("chunks")
        d.pop("chunks_done")
    assert reports[0] == reports[1] == reports[2]


def _fma_e4m3_reference(a, b, c):
    """a*b + c rounded once to E4M3 (nearest, ties to even; overflow to NaN,
    the OCP format's rule without saturation), from exact Fractions and the
    list of E4M3 values decoded by ml_dtypes."""
    codes = np.arange(256, dtype=np.uint8)
    values = codes.view(E4M3).astype(np.float64)
    finite = [(Fraction(float(v)), int(c)) for v, c in zip(values, codes)
              if not np.isnan(v) and c < 0x80]
    out = np.empty(a.size, np.uint8)
    for i, (x, y, z) in enumerate(zip(a.view(np.uint8), b.view(np.uint8), c.view(np.uint8))):
        vx, vy, vz = (float(values[k]) for k in (x, y, z))
        if np.isnan(vx) or np.isnan(vy) or np.isnan(vz):
            out[i] = 0x7F
            continue
        exact = Fraction(vx) * Fraction(vy) + Fraction(vz)
        if exact == 0:
            negative = (np.signbit(vx) != np.signbit(vy)) and np.signbit(vz)
            out[i] = 0x80 if negative else 0
            continue
        mag = abs(exact)
        below = max((v, k) for v, k in finite if v <= mag)
        above = [(v, k) for v, k in finite if v > mag]
        if mag == below[0]:
            k = below[1]
        elif not above:  # beyond 448: to 448 up to the midpoint 464 (a tie to even
            # 448), beyond it to the would-be 480, which overflows to NaN
            k = below[1] if mag - below[0] <= Fraction(16) else 0x7F
        else:
            up = min(above)
            d_lo, d_hi = mag - below[0], up[0] - mag
            k = below[1] if d_lo < d_hi or (d_lo == d_hi and below[1] % 2 == 0) else up[1]
        out[i] = k if k == 0x7F else k | (0x80 if exact < 0 else 0)
    return out.view(E4M3)


def test_fma_e4m3_sample_against_exact_fractions():
    r = sweep.run("fma", "e4m3", _fma_e4m3_reference, sample=2 ** -11, chunk_size=2048, seed=3)
    assert r.ok, str(r)
    assert r.done == 2 ** 13


# -- resume and interruption ---------------------------------------------------------------------

def test_interrupted_then_resumed_sweep_gives_the_uninterrupted_report(tmp_path):
    path = str(tmp_path / "progress.json")
    whole = sweep.run("add", "e5m2", K.broken_e5m2_add, chunk_size=1024)

    def stop_halfway(p):
        if p.chunks_done == 32:
            raise KeyboardInterrupt

    first = sweep.run("add", "e5m2", K.broken_e5m2_add, chunk_size=1024, progress_file=path,
                      on_progress=stop_halfway, save_every=0.0)
    assert first.interrupted and not first.complete and first.chunks_done == 32
    assert first.done == 32 * 1024 == first.report.total
    saved = json.load(open(path))
    assert saved["done"] == [[0, 32]]
    seen = []
    second = sweep.run("add", "e5m2", K.broken_e5m2_add, chunk_size=1024, progress_file=path,
                       on_progress=lambda p: seen.append(p.chunks_done))
    assert second.complete and second.resumed_from == 32 * 1024
    assert seen == list(range(33, 65))  # finished chunks were not redone
    assert _without_timing(second) == _without_timing(whole)
    assert json.load(open(path))["done"] == [[0, 64]]


def test_progress_file_of_another_sweep_is_refused(tmp_path):
    path = str(tmp_path / "p.json")
    sweep.run("add", "e5m2", K.e5m2_add, progress_file=path)
    with pytest.raises(ValueError, match=r"another sweep \(differs in: op\)"):
        sweep.run("sub", "e5m2", K.e5m2_add, progress_file=path)
    with open(path, "w") as f:
        f.write("{not json")
    with pytest.raises(ValueError, match="progress file"):
        sweep.run("add", "e5m2", K.e5m2_add, progress_file=path)


# -- bad input ---------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, exc, message", [
    (dict(op="pow"), ValueError, "unknown operation 'pow'; a sweep runs: add, sub"),
    (dict(fmt="fp64"), ValueError, r"every fp64 pair \(2\*\*128\) is beyond reach; sweep a "),
    (dict(fmt="fp99"), ValueError, "fp99"),
    (dict(against="no_such_module_xyz:f"), ImportError, "module 'no_such_module_xyz' cannot be"),
    (dict(against="sweep_kernels:missing"), ImportError, "has no attribute 'missing'"),
    (dict(against="sweep_kernels"), ValueError, "name it as 'module:function'"),
    (dict(against="sweep_kernels:not_callable"), TypeError, "not a callable"),
    (dict(against=42), TypeError, "must be a callable"),
    (dict(against="sweep_kernels:wrong_shape"), ValueError, r"returned shape \(3,\)"),
    (dict(against="sweep_kernels:wrong_dtype"), TypeError, "returned float32 results; accepted"),
    (dict(against="sweep_kernels:raises"), RuntimeError, "raised ZeroDivisionError: planted"),
    (dict(sample=0.0), ValueError, r"fraction in \(0, 1\]"),
    (dict(sample=1.5), ValueError, r"fraction in \(0, 1\]"),
    (dict(sample=0.5, specials="0"), ValueError, "not both"),
    (dict(specials="1e-9"), ValueError, "not a value of e5m2"),
    (dict(specials="0x1ff"), ValueError, "0x1ff"),
    (dict(specials=""), ValueError, "at least one"),
    (dict(rounding="sr"), ValueError, "deterministic rounding"),
    (dict(rounding="bogus"), ValueError, "bogus"),
    (dict(chunk_size=0), ValueError, "chunk_size"),
    (dict(max_ulp=-1), ValueError, "max_ulp"),
    (dict(nan="some"), ValueError, "nan must be"),
    (dict(scheduler="nowhere"), ValueError, "accepted: local, threads, processes"),
])
def test_bad_input(kwargs, exc, message):
    args = dict(op="add", fmt="e5m2", against="sweep_kernels:e5m2_add")
    args.update(kwargs)
    with pytest.raises(exc, match=message):
        sweep.run(args.pop("op"), args.pop("fmt"), args.pop("against"), **args)


def test_missing_dask_is_a_clear_error(monkeypatch):
    import builtins
    real = builtins.__import__

    def no_dask(name, *args, **kw):
        if name.split(".")[0] in ("dask", "distributed"):
            raise ImportError(name)
        return real(name, *args, **kw)

    monkeypatch.setattr(builtins, "__import__", no_dask)
    monkeypatch.setattr("importlib.import_module", lambda n: no_dask(n))
    with pytest.raises(ImportError, match=r"pip install 'fpsim\[dask\]'"):
        sweep.run("add", "e5m2", K.e5m2_add, scheduler="local")
    with pytest.raises(ImportError, match="needs the 'distributed' package"):
        sweep.run("add", "e5m2", K.e5m2_add, scheduler="tcp://127.0.0.1:1")


# -- the command line ---------------------------------------------------------------------------

def _cli(args, capsys):
    status = main(args)
    out, err = capsys.readouterr()
    return status, out, err


def test_cli_agrees_disagrees_and_json(capsys):
    status, out, err = _cli(["sweep", "add", "--fmt", "e5m2", "--against",
                             "sweep_kernels:e5m2_add"], capsys)
    assert status == 0 and "AGREES" in out and err == ""
    status, out, _ = _cli(["sweep", "add", "--fmt", "e5m2", "--against",
                           "sweep_kernels:broken_e5m2_add", "--json", "--offenders", "3"], capsys)
    assert status == 1
    d = json.loads(out)
    assert d["verdict"] == "disagrees" and d["report"]["nan_mismatch"] == 16
    assert len(d["report"]["offenders"]) == 3
    first = d["report"]["offenders"][0]
    assert [o["bits"] for o in first["operands"]] == [f"0x{i:02x}" for i in first["index"]]


@pytest.mark.parametrize("args, message", [
    (["sweep", "pow", "--fmt", "e5m2", "--against", "sweep_kernels:e5m2_add"], "unknown operation"),
    (["sweep", "add", "--fmt", "e5m2", "--against", "nomod_q:f"], "cannot import the candidate"),
    (["sweep", "add", "--fmt", "e5m2", "--against", "sweep_kernels:wrong_dtype"], "float32"),
    (["sweep", "add", "--fmt", "e5m2", "--against", "sweep_kernels:raises"], "ZeroDivision"),
    (["sweep", "add", "--fmt", "e5m2"], "--against"),
    (["sweep", "add", "--fmt", "e5m2", "--against", "sweep_kernels:e5m2_add", "--sample", "2"],
     "fraction"),
    (["sweep", "add", "--fmt", "e5m2", "--against", "sweep_kernels:e5m2_add", "--nan-policy",
      "arm"], "arm"),
])
def test_cli_bad_input_exits_2_with_one_line(args, message, capsys):
    status, out, err = _cli(args, capsys)
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and message in err and "Traceback" not in err


def _subprocess_env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([HERE, env.get("PYTHONPATH", "")])
    return env


def test_cli_ctrl_c_prints_the_partial_report(tmp_path, ctrl_c):
    progress = str(tmp_path / "progress.json")
    cmd = [sys.executable, "-m", "fpsim", "sweep", "add", "--fmt", "fp16", "--against",
           "sweep_kernels:np_add", "--sample", "0.25", "--chunk-size", "65536",
           "--progress-file", progress, "--json"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=_subprocess_env(), preexec_fn=ctrl_c)
    def chunks_saved():
        try:
            return json.load(open(progress))["done"]
        except (OSError, ValueError):  # not written yet
            return []

    # The file is written before the first chunk, then every 5 s: wait for
    # a save with chunks done, so that the sweep is interrupted mid-way.
    deadline = time.monotonic() + 240
    while not chunks_saved() and time.monotonic() < deadline:
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "sweep interrupted after" in err
    d = json.loads(out)
    assert d["interrupted"] and not d["complete"] and d["verdict"] == "incomplete"
    assert 0 < d["done"] < d["size"] and d["report"]["total"] == d["done"]
    saved = json.load(open(progress))
    assert sum(b - a for a, b in saved["done"]) == d["chunks_done"]


def test_cli_progress_bar_only_on_a_terminal(monkeypatch, capsys):
    import io

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    term = Terminal()
    monkeypatch.setattr(sys, "stderr", term)
    status = main(["sweep", "add", "--fmt", "e5m2", "--against", "sweep_kernels:e5m2_add",
                   "--chunk-size", "4096"])
    shown = term.getvalue()
    assert status == 0
    assert shown.startswith("\r[") and "100.0%" in shown and "65,536/65,536 tuples" in shown
    assert "M/s" in shown and shown.endswith("\n")
    term = Terminal()
    monkeypatch.setattr(sys, "stderr", term)
    main(["sweep", "add", "--fmt", "e5m2", "--against", "sweep_kernels:e5m2_add",
          "--no-progress"])
    assert term.getvalue() == ""


# -- review mends -------------------------------------------------------------------------------

def test_a_ctrl_c_during_the_bookkeeping_waits_for_it(tmp_path, monkeypatch, ctrl_c):
    """SIGINT arriving while a chunk's tally is merged is held until the
    tally and the list of chunks done agree, so a resume counts nothing twice."""
    from fpsim.testing import tally as _tally
    path = str(tmp_path / "p.json")
    whole = sweep.run("add", "e5m2", K.broken_e5m2_add, chunk_size=4096)
    real_merge = _tally.Partial.merge
    calls = []

    def merge_then_interrupt(self, other, limit):
        calls.append(1)
        if len(calls) == 3:
            os.kill(os.getpid(), signal.SIGINT)   # arrives in the middle of the merge
            time.sleep(0.05)
        return real_merge(self, other, limit)

    monkeypatch.setattr(_tally.Partial, "merge", merge_then_interrupt)
    first = sweep.run("add", "e5m2", K.broken_e5m2_add, chunk_size=4096, progress_file=path)
    monkeypatch.setattr(_tally.Partial, "merge", real_merge)
    assert first.interrupted and first.chunks_done == 3
    assert first.report.total == first.done == 3 * 4096
    second = sweep.run("add", "e5m2", K.broken_e5m2_add, chunk_size=4096, progress_file=path)
    assert second.report.to_dict() == whole.report.to_dict()


def test_progress_file_is_written_before_any_work(tmp_path):
    with pytest.raises(OSError):
        sweep.run("add", "e5m2", K.e5m2_add, progress_file=str(tmp_path / "no" / "p.json"),
                  on_progress=lambda p: pytest.fail("a chunk ran"))
    path = tmp_path / "p.json"
    sweep.run("add", "e5m2", K.e5m2_add, progress_file=str(path), chunk_size=1 << 15)
    assert json.load(open(path))["done"] == [[0, 2]]


def test_a_custom_nan_policy_is_the_golden_models(tmp_path):
    import dataclasses

    from fpsim import Context, array, nans
    mine = dataclasses.replace(nans.policy("ieee"), prefer_signaling=False)  # same name "ieee"

    def fpsim_add_mine(a, b):   # the golden model under that policy, as a candidate
        return array.add(a, b, Context(nan=mine))

    r = sweep.run("add", "fp16", fpsim_add_mine, ctx=Context(nan=mine), nan="exact",
                  specials="nan,0x7c01,0xfd00,1", progress_file=str(tmp_path / "p.json"))
    assert r.ok and r.report.nan_mismatch == 0
    described = json.load(open(tmp_path / "p.json"))["spec"]["context"]["nan"]
    assert described["prefer_signaling"] is False and described["name"] == "ieee"
    ieee = sweep.run("add", "fp16", fpsim_add_mine, nan="exact", specials="nan,0x7c01,0xfd00,1")
    assert ieee.report.nan_mismatch > 0   # the preset differs, and is not mistaken for it


def test_fp32_pairs_by_sample_against_numpy_float32():
    r = sweep.run("add", "fp32", lambda a, b: a + b, sample=1e-14, seed=5)
    assert r.ok and r.size == round(1e-14 * 2 ** 64) and r.report.shape == (2 ** 32, 2 ** 32)
    with pytest.raises(ValueError, match="beyond reach; sweep a sample"):
        sweep.run("add", "fp32", lambda a, b: a + b)


@pytest.mark.parametrize("kwargs, exc, message", [
    (dict(fmt="e2m1", op="div"), ValueError, "e2m1 has no NaN, so div has no result"),
    (dict(fmt="e3m2", op="sqrt"), ValueError, "e3m2 has no NaN, so sqrt"),
    (dict(scheduler="local", workers=0), ValueError, "workers must be a positive int"),
    (dict(workers=-1), ValueError, "workers must be a positive int"),
])
def test_more_bad_input(kwargs, exc, message):
    args = dict(op="add", fmt="e5m2", against=K.e5m2_add)
    args.update(kwargs)
    with pytest.raises(exc, match=message):
        sweep.run(args.pop("op"), args.pop("fmt"), args.pop("against"), **args)


def test_scalar_special_and_numpy_fraction():
    assert sweep.run("add", "e5m2", K.e5m2_add, specials=0.0).size == 256 * 2 - 1
    assert sweep.run("add", "e5m2", K.e5m2_add, sample=np.float32(0.5)).size == 32768


@pytest.mark.parametrize("extra, message", [(["--chunk-size", "0"], "chunk_size"),
                                            (["--scheduler", "local", "--workers", "-1"],
                                             "workers must be a positive int")])
def test_cli_rejects_zero_chunks_and_workers(extra, message, capsys):
    status, out, err = _cli(["sweep", "add", "--fmt", "e5m2", "--against",
                             "sweep_kernels:e5m2_add", *extra], capsys)
    assert status == 2 and message in err and err.count("\n") == 1
