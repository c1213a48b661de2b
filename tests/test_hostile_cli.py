"""Hostile arguments to ``python -m fpsim diff`` and ``ref`` (spec/testing.md,
section 7): each is refused with exit status 2 and exactly one line on
stderr starting "fpsim: error: ", never a traceback; an empty but valid
``ref`` computes and writes its empty (or all-zero) output; an output
larger than memory is refused from the shapes, before any work.

Expected outputs come from what the operations mean (IEEE 754: a sum of no
terms is +0; a mean of none is 0/0, NaN; the product of an M×0 and a 0×N
matrix is M×N zeros), not from fpsim.  Only loopback addresses are used.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

from fpsim import _schedulers

from hostile import cli, one_line_error, run


@pytest.fixture
def dumps(tmp_path):
    values = np.float16([1.0, -2.5, 0.0, 65504.0])
    values.tofile(tmp_path / "a.bin")
    values.tofile(tmp_path / "b.bin")
    return tmp_path / "a.bin", tmp_path / "b.bin"


# -- the scheduler's options ---------------------------------------------------------------------

TIMEOUT = "--timeout/timeout must be a positive finite number of seconds"


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "-1", "0", "1e400"])
@pytest.mark.parametrize("scheduler", [[], ["--scheduler", "local"],
                                       ["--scheduler", "tcp://127.0.0.1:1"]])
def test_diff_timeout_must_be_positive_and_finite(capsys, dumps, value, scheduler):
    status, out, err = run(capsys, "diff", *dumps, "--fmt", "fp16", "--timeout", value,
                           *scheduler)
    one_line_error(status, err, TIMEOUT)
    assert out == ""


@pytest.mark.parametrize("value", ["0", "-3"])
def test_diff_workers_must_be_positive(capsys, dumps, value):
    for scheduler in ([], ["--scheduler", "local"], ["--scheduler", "processes"]):
        status, _, err = run(capsys, "diff", *dumps, "--fmt", "fp16", "--workers", value,
                             *scheduler)
        one_line_error(status, err, f"--workers/workers must be a positive int, got {value}")


@pytest.mark.parametrize("timeout", [math.nan, math.inf, -1.0, 0, True, "10", None])
def test_runner_checks_its_timeout_whatever_the_scheduler(timeout):
    for scheduler in (None, "local"):
        with pytest.raises(ValueError, match="timeout must be a positive finite number"):
            _schedulers.runner(scheduler, None, timeout)


@pytest.mark.parametrize("workers", [0, -1, True, 2.0])
def test_runner_checks_its_workers(workers):
    with pytest.raises(ValueError, match="workers must be a positive int"):
        _schedulers.runner(None, workers, 10.0)


def test_an_unreachable_scheduler_is_one_line_naming_it(dumps):
    pytest.importorskip("distributed")
    start = time.monotonic()
    p = cli("diff", *dumps, "--fmt", "fp16", "--scheduler", "tcp://127.0.0.1:1",
            "--timeout", "1", timeout=60)
    one_line_error(p.returncode, p.stderr,
                   "cannot reach the Dask scheduler at 'tcp://127.0.0.1:1' within 1 s")
    assert time.monotonic() - start < 30


@pytest.mark.parametrize("address, why", [
    ("tcp://127.0.0.1:abc", "ValueError"),
    ("foo://127.0.0.1:1", "unknown address scheme 'foo'"),
    ("tcp://", "ValueError"),
    ("tls://127.0.0.1:1", "TypeError"),  # TLS without certificates configured
])
def test_an_unusable_scheduler_address_is_one_line_and_nothing_at_exit(dumps, address, why):
    """distributed leaves a half-made client behind for these, whose
    finalizer printed a traceback at exit (after waiting 2 s)."""
    pytest.importorskip("distributed")
    p = cli("diff", *dumps, "--fmt", "fp16", "--scheduler", address, "--timeout", "1",
            timeout=60)
    one_line_error(p.returncode, p.stderr,
                   f"cannot use the Dask scheduler address {address!r}", why)


# -- ref: empty but valid inputs ----------------------------------------------------------------

def test_ref_matmul_of_empty_inputs_writes_an_empty_output(capsys, tmp_path):
    (tmp_path / "a.bin").write_bytes(b"")
    (tmp_path / "b.bin").write_bytes(b"")
    out = tmp_path / "out.bin"
    status, stdout, err = run(capsys, "ref", "matmul", "--fmt", "fp16", "--shape", "0x5",
                              "--shape", "5x0", tmp_path / "a.bin", tmp_path / "b.bin", out)
    assert (status, err) == (0, "")
    assert stdout == f"wrote {out}: matmul of 2 fp16 inputs, fp16, shape 0x0 (raw codes, " \
        "little-endian)\n"
    assert out.read_bytes() == b""
    # .npy output: an empty array of that shape
    status, _, err = run(capsys, "ref", "matmul", "--fmt", "fp16", "--shape", "0x5",
                         "--shape", "5x0", tmp_path / "a.bin", tmp_path / "b.bin",
                         tmp_path / "out.npy")
    assert (status, err) == (0, "")
    saved = np.load(tmp_path / "out.npy")
    assert saved.shape == (0, 0) and saved.dtype == np.float16


def test_ref_empty_sums_products_and_means_follow_ieee(capsys, tmp_path):
    empty = tmp_path / "empty.bin"
    empty.write_bytes(b"")
    out = tmp_path / "out.bin"
    # A 3×0 by 0×4 product: 12 sums of no terms, each +0 (code 0x0000).
    status, _, err = run(capsys, "ref", "matmul", "--fmt", "fp16", "--shape", "3x0",
                         "--shape", "0x4", empty, empty, out)
    assert (status, err) == (0, "") and out.read_bytes() == b"\0\0" * 12
    for rounding in ("rne", "rdn"):  # +0 whatever the rounding: no addition is done
        status, _, err = run(capsys, "ref", "sum", "--fmt", "fp16", "--shape", "3x0",
                             "--rounding", rounding, empty, out)
        assert (status, err) == (0, "") and out.read_bytes() == b"\0\0" * 3
    status, _, err = run(capsys, "ref", "mean", "--fmt", "fp16", "--shape", "2x0", empty, out)
    assert (status, err) == (0, "")
    codes = np.fromfile(out, np.uint16)
    assert codes.size == 2 and np.isnan(codes.view(np.float16)).all()  # 0/0


def _ops() -> list[tuple[str, int]]:
    from fpsim.testing import _reference

    return [(r.name, r.inputs) for r in _reference.REFERENCES.values()]


@pytest.mark.parametrize("op, inputs", _ops())
@pytest.mark.parametrize("shape", [None, "0x5", "3x0", "0x0"])
def test_ref_every_operator_on_empty_inputs_works_or_says_why(capsys, tmp_path, op, inputs,
                                                              shape):
    """Each operator of 'ref list' on empty inputs writes an output of the
    size its meaning gives, or refuses in one line where there is no answer
    (a softmax over an empty axis) or no matrix (a flat matmul input)."""
    empty = tmp_path / "empty.bin"
    empty.write_bytes(b"")
    out = tmp_path / "out.bin"
    shapes: list[str] = []
    if shape is not None:
        shapes = [shape] * inputs
        if op == "matmul":
            m, k = shape.split("x")
            shapes = [shape, f"{k}x{m}"]
    argv = ["ref", op, "--fmt", "fp16", *(a for s in shapes for a in ("--shape", s)),
            *[empty] * inputs, out]
    if op == "cast":
        argv[4:4] = ["--out-fmt", "e4m3"]
    status, stdout, err = run(capsys, *argv)
    dims = [int(d) for d in (shape or "0").split("x")]
    if op in ("softmax", "log_softmax") and dims[-1] == 0:
        # exp(x_i) / sum_j exp(x_j) over no j: no value to give
        one_line_error(status, err, "the softmax axis is empty")
        assert not out.exists()
        return
    if op == "matmul" and shape is None:
        one_line_error(status, err, "matmul's first input must be M×K")
        return
    assert status == 0 and err == "" and stdout.startswith(f"wrote {out}: {op} of ")
    if op in ("sum", "mean"):
        elements = math.prod(dims[:-1])  # one per row (a flat input: one, a scalar)
    elif op == "matmul":
        elements = dims[0] * dims[0]  # M×K by K×M
    else:
        elements = math.prod(dims)  # elementwise, or over the last axis, same shape
    assert out.stat().st_size == elements * (1 if op == "cast" else 2)


# -- ref: outputs larger than memory -------------------------------------------------------------

GiB = 1 << 30


@pytest.mark.parametrize("argv, needle", [
    # (4e9 × 0) @ (0 × 4e9): empty inputs, 1.6e19 output elements
    (["matmul", "--shape", "4000000000x0", "--shape", "0x4000000000", "E", "E"],
     "the output would have 16,000,000,000,000,000,000 elements (shape "
     "4000000000x4000000000)"),
    # a sum over the empty last axis of a 1e15-row input
    (["sum", "--shape", "100000x100000x100000x0", "E"],
     "the output would have 1,000,000,000,000,000 elements"),
    # broadcasting two vectors of a million elements: 1e12 outputs
    (["add", "--shape", "1000000x1", "--shape", "1x1000000", "V", "V"],
     "the output would have 1,000,000,000,000 elements (shape 1000000x1000000)"),
])
def test_ref_output_larger_than_memory_is_refused_up_front(tmp_path, argv, needle):
    (tmp_path / "E").write_bytes(b"")
    np.ones(10**6, np.float16).tofile(tmp_path / "V")
    argv = [tmp_path / a if a in ("E", "V") else a for a in argv]
    start = time.monotonic()
    p = cli("ref", "--fmt", "fp16", *argv, tmp_path / "out.bin", timeout=60, limit=GiB)
    one_line_error(p.returncode, p.stderr, needle, "more than this machine's memory")
    assert time.monotonic() - start < 30 and not (tmp_path / "out.bin").exists()


@pytest.mark.parametrize("shape, needle", [
    ("1099511627776x1099511627776x0", "is larger than any array can be"),
    ("x".join(["1"] * 65), "has 65 dimensions; at most 64"),
    ("1" * 5000, "accepted: sizes joined by 'x'"),
    ("2x-1", "has a negative size"),
])
def test_ref_impossible_shapes_are_one_line(capsys, tmp_path, shape, needle):
    (tmp_path / "E").write_bytes(b"")
    status, _, err = run(capsys, "ref", "sum", "--fmt", "fp16", "--shape", shape,
                         tmp_path / "E", tmp_path / "out.bin")
    one_line_error(status, err, needle)


def test_ref_shape_of_an_empty_file_that_is_not_empty(capsys, tmp_path):
    (tmp_path / "E").write_bytes(b"")
    status, _, err = run(capsys, "ref", "sum", "--fmt", "fp16", "--shape",
                         "100000x100000x100000", tmp_path / "E", tmp_path / "out.bin")
    one_line_error(status, err, f"input 1 {tmp_path / 'E'} has 0 fp16 elements, not the "
                   "1000000000000000 of shape (100000, 100000, 100000)")
