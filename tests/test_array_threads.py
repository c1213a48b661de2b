"""The array engine on threads (``workers=``): the bits, per-element flags
and context flags of a call never depend on how many threads ran it, nor on
the chunking a threaded call chooses; bad values of ``workers`` are refused."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import fpsim
from fpsim import _threads, array
from fpsim.array import engine


def _hard_fp16(n, seed):
    """Random FP16 codes with every special and boundary class mixed in."""
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, 1 << 16, n, dtype=np.uint16)
    specials = np.array([0x0000, 0x8000, 0x0001, 0x03FF, 0x0400, 0x7BFF, 0x7C00, 0xFC00,
                         0x7E00, 0x7D00, 0x3C00, 0xBC00], np.uint16)
    codes[rng.integers(0, n, n // 8)] = rng.choice(specials, n // 8)
    return codes


def _run(fn, *args, **kw):
    ctx = fpsim.Context()
    codes, flags = fn(*args, ctx=ctx, return_flags=True, **kw)
    return codes, flags, ctx.flags


CALLS = {
    "add": lambda x, y, z, **kw: array.add(x, y, fmt="fp16", **kw),
    "sub": lambda x, y, z, **kw: array.sub(x, y, fmt="fp16", **kw),
    "mul": lambda x, y, z, **kw: array.mul(x, y, fmt="fp16", **kw),
    "div": lambda x, y, z, **kw: array.div(x, y, fmt="fp16", **kw),
    "fma": lambda x, y, z, **kw: array.fma(x, y, z, fmt="fp16", **kw),
    "sqrt": lambda x, y, z, **kw: array.sqrt(x, fmt="fp16", **kw),
    "encode": lambda x, y, z, **kw: array.encode(x.view(np.float16), "e4m3", **kw),
    "convert": lambda x, y, z, **kw: array.convert(x, "fp16", "bf16", **kw),
}


@pytest.mark.parametrize("mode", ["rne", "rtz", "rup"])
@pytest.mark.parametrize("name", sorted(CALLS))
def test_threads_give_the_bits_and_flags_of_one_thread(name, mode):
    x, y, z = (_hard_fp16(5003, s) for s in (1, 2, 3))
    call = CALLS[name]
    one = _run(call, x, y, z, rounding=mode, workers=1, chunk_size=97)
    for workers in (2, 3):
        many = _run(call, x, y, z, rounding=mode, workers=workers, chunk_size=97)
        np.testing.assert_array_equal(many[0], one[0])
        np.testing.assert_array_equal(many[1], one[1])
        assert many[2] == one[2]


def test_a_chunk_of_exact_results_among_inexact_ones():
    """The call's flags are the OR of every chunk's, whichever thread ran it."""
    x = np.zeros(4000, np.float16)
    x[3999] = np.float16(1.0) + np.float16(2.0**-10)
    y = np.full(4000, np.float16(2.0**-11))
    ctx = fpsim.Context()
    array.add(x, y, ctx, workers=2, chunk_size=100)
    assert ctx.flags == fpsim.Flag.INEXACT


def test_a_large_call_on_default_workers_equals_one_thread():
    """From PARALLEL_ELEMENTS elements the default uses every CPU, in chunks
    of THREADED_CHUNK (the chunking must not show in the results)."""
    n = _threads.PARALLEL_ELEMENTS + 12345
    rng = np.random.default_rng(4)
    a = (rng.standard_normal(n) * 300).astype(ml_dtypes.bfloat16)
    b = (rng.standard_normal(n) * 1e-3).astype(ml_dtypes.bfloat16)
    r1, f1, c1 = _run(array.add, a, b, workers=1)
    r2, f2, c2 = _run(array.add, a, b)
    np.testing.assert_array_equal(r1.view(np.uint16), r2.view(np.uint16))
    np.testing.assert_array_equal(f1, f2)
    assert c1 == c2
    x = rng.standard_normal(n).astype(np.float32) * np.float32(1e5)
    e1, g1, d1 = _run(array.encode, x, "fp16", workers=1)
    e2, g2, d2 = _run(array.encode, x, "fp16")
    np.testing.assert_array_equal(e1, e2)
    np.testing.assert_array_equal(g1, g2)
    assert d1 == d2


def test_threaded_calls_take_the_larger_chunk_only_by_default(monkeypatch):
    sizes = []
    real = engine.run_chunks

    def spy(size, shape, dtype, chunk_size, compute, ctx, return_flags, workers=1):
        def recording(start, stop):
            sizes.append(stop - start)
            return compute(start, stop)
        return real(size, shape, dtype, chunk_size, recording, ctx, return_flags, workers)

    from fpsim.array import _arith
    monkeypatch.setattr(_arith, "run_chunks", spy)
    n = 3 * engine.THREADED_CHUNK
    x = np.ones(n, np.float16)
    array.add(x, x, workers=2)
    assert max(sizes) == engine.THREADED_CHUNK
    sizes.clear()
    array.add(x, x, workers=2, chunk_size=1000)
    assert max(sizes) == 1000
    sizes.clear()
    array.add(x, x, workers=1)
    assert max(sizes) == engine.DEFAULT_CHUNK


def test_stochastic_rounding_draws_in_element_order_whatever_the_workers():
    x = _hard_fp16(3001, 5)
    y = _hard_fp16(3001, 6)
    one = array.add(x, y, fmt="fp16", rounding="sr", rng=7, workers=1, chunk_size=50)
    many = array.add(x, y, fmt="fp16", rounding="sr", rng=7, workers=2, chunk_size=50)
    np.testing.assert_array_equal(one, many)


def test_an_error_in_a_chunk_leaves_the_flags_as_they_were():
    x = np.array([1, 2, 3, 0x1FF] * 50, np.uint16)   # 0x1FF is not an E4M3 code
    ctx = fpsim.Context()
    with pytest.raises(ValueError):
        array.convert(x, "e4m3", "fp16", ctx, workers=2, chunk_size=8)
    assert ctx.flags == fpsim.Flag(0)


@pytest.mark.parametrize("workers", [0, -2, 2.0, True, "1", 10**9])
@pytest.mark.parametrize("name", ["add", "encode"])
def test_bad_workers_are_refused(name, workers):
    x = np.ones(4, np.float16)
    with pytest.raises(ValueError, match=r"workers=.*accepted None"):
        if name == "add":
            array.add(x, x, workers=workers)
        else:
            array.encode(x, "bf16", workers=workers)


def test_pieces_keep_their_order_and_the_first_failure_is_raised():
    """run_pieces: results in the order of the pieces on any thread count;
    once a piece raises, the exception of the first failing piece (in the
    pieces' order) is raised, after the running pieces have stopped."""
    import threading
    import time

    names = set()

    def square(i):
        names.add(threading.current_thread().name)
        time.sleep(0.001)
        return i * i

    assert _threads.run_pieces(square, range(40), 2) == [i * i for i in range(40)]
    assert len(names) == 2                         # the caller and one pool thread
    assert _threads.run_pieces(square, range(5), 1) == [0, 1, 4, 9, 16]

    def fails_at_3_and_7(i):
        if i in (3, 7):
            time.sleep(0.01 if i == 3 else 0)      # 7 may fail first in time
            raise ValueError(f"piece {i}")
        return i

    with pytest.raises(ValueError, match="piece 3"):
        _threads.run_pieces(fails_at_3_and_7, range(10), 2)


def test_a_call_inside_a_piece_runs_in_that_pieces_thread():
    """Nested calls do not queue behind their own caller in the shared pool
    (which could wait forever): they run in the piece's thread."""
    import threading

    def inner(_):
        return threading.current_thread().name

    def outer(i):
        return set(_threads.run_pieces(inner, range(8), 8)), threading.current_thread().name

    for inner_threads, own in _threads.run_pieces(outer, range(6), 2):
        assert inner_threads == {own}


def test_a_forked_child_starts_a_pool_of_its_own():
    """The parent's pool threads do not exist in a child made by fork: the
    child's threaded calls must still run (not wait on a dead pool)."""
    import multiprocessing
    import os

    if not hasattr(os, "register_at_fork"):
        pytest.skip("no fork on this system")
    _threads.run_pieces(abs, range(4), 2)          # the parent's pool exists
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(1) as pool:
        result = pool.apply_async(_threaded_sum_in_child)
        assert result.get(timeout=60) == sum(range(100))


def _threaded_sum_in_child():
    return sum(_threads.run_pieces(abs, range(100), 2))
