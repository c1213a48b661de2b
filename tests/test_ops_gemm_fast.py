"""The float32 path of matmul and dot (fpsim.ops._gemm32): FP32 accumulation
of exact products by the machine's float32 arithmetic, tiled and threaded.

Oracles: step-by-step numpy float32 loops (tests/sum_oracles.py, which never
call fpsim) for the bits; Python Fractions for INEXACT; and the operator's
own step-by-step path through the array engine (proven equal to the scalar
model elsewhere), forced by switching the float32 path off, for bits and
every flag wherever the float32 path gives up."""

from __future__ import annotations

from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
from sum_oracles import pairwise_sum, pieces_sum, seq_sum

import fpsim
from fpsim import _machine, ops
from fpsim.ops import _gemm32

BF16 = ml_dtypes.bfloat16
E4M3 = ml_dtypes.float8_e4m3fn
E5M2 = ml_dtypes.float8_e5m2
INPUTS = [np.float16, BF16, E4M3, E5M2]


def _data(shape, dtype, seed, spread=4.0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape) * np.exp2(rng.uniform(-spread, spread, shape))
    x[rng.random(shape) < 0.05] = 0.0
    return x.astype(dtype)


def _terms(a, b):
    """(M, N, K) float32 products, exact for these formats and ranges."""
    products = a.astype(np.float32)[:, :, None] * b.astype(np.float32)[None, :, :]
    return np.moveaxis(products, 1, 2)


def _same(x, y):
    assert x.dtype == y.dtype and x.shape == y.shape
    bx, by = x.view(np.uint32), y.view(np.uint32)
    bad = np.flatnonzero(bx.ravel() != by.ravel())
    assert bad.size == 0, f"{bad.size} of {x.size} differ, first at {bad[0]}"


def _stepwise(monkeypatch, fn):
    """``fn()`` computed by the operator's step-by-step path."""
    with monkeypatch.context() as m:
        m.setattr(_gemm32, "usable", lambda key: False)
        return fn()


def _with_flags(fn, **kw):
    ctx = fpsim.Context()
    return fn(ctx, **kw), ctx.flags


# -- bits against numpy loops ------------------------------------------------------------------

ORDERS = ["sequential", "pairwise", ("blocked", 7), ("split", 3)]


@pytest.mark.parametrize("dtype", INPUTS)
@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("workers", [1, 2])
def test_orders_match_numpy_float32_loops(dtype, order, workers):
    a, b = _data((9, 45), dtype, 1), _data((45, 13), dtype, 2)
    terms = _terms(a, b)
    if order == "sequential":
        expected = seq_sum(terms, np.float32)
    elif order == "pairwise":
        expected = pairwise_sum(terms, np.float32)
    elif order[0] == "blocked":
        expected = pieces_sum(terms, np.float32, [7] * 6 + [3])
    else:
        expected = pieces_sum(terms, np.float32, [15, 15, 15])
    _same(ops.matmul(a, b, out="fp32", order=order, workers=workers), expected)


def test_fp32_accumulator_promoted_into_fp32_is_the_blocked_order():
    a, b = _data((6, 100), np.float16, 3), _data((100, 5), np.float16, 4)
    expected = pieces_sum(_terms(a, b), np.float32, [32, 32, 32, 4])
    _same(ops.matmul(a, b, out="fp32", promote_every=32), expected)


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_outputs_larger_than_a_tile_in_both_directions(workers):
    # 5,000 columns cross the 4,096-column tile edge: tiles of 4,096 and 904.
    a, b = _data((11, 6), np.float16, 5), _data((6, 5000), np.float16, 6)
    _same(ops.matmul(a, b, out="fp32", workers=workers), seq_sum(_terms(a, b), np.float32))


def test_tall_output_cut_into_many_row_tiles_on_threads():
    a, b = _data((2000, 20), BF16, 7), _data((20, 100), BF16, 8)   # 655 rows a tile
    _same(ops.matmul(a, b, out="fp32", workers=2), seq_sum(_terms(a, b), np.float32))


def test_dot_takes_the_same_path():
    x, y = _data((300,), np.float16, 9), _data((300,), np.float16, 10)
    got = ops.dot(x, y, out="fp32")
    assert got.shape == ()
    _same(got.reshape(1, 1), seq_sum(_terms(x[None, :], y[:, None]), np.float32))


def test_output_in_the_input_format_is_rounded_once_from_fp32():
    a, b = _data((10, 30), np.float16, 11), _data((30, 10), np.float16, 12)
    fp32 = seq_sum(_terms(a, b), np.float32)
    assert np.array_equal(ops.matmul(a, b).view(np.uint16), fp32.astype(np.float16).view(np.uint16))


# -- flags --------------------------------------------------------------------------------------

def _inexact_by_fractions(a, b):
    """Whether any step of the sequential FP32 running sum is inexact."""
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    for i in range(a.shape[0]):
        for j in range(b.shape[1]):
            acc = np.float32(0)
            for k in range(a.shape[1]):
                p = a32[i, k] * b32[k, j]
                s = np.float32(acc + p)
                if Fraction(float(acc)) + Fraction(float(p)) != Fraction(float(s)):
                    return True
                acc = s
    return False


@pytest.mark.parametrize("case", ["integers", "late", "early"])
def test_inexact_is_raised_exactly_when_a_sum_rounds(case):
    rng = np.random.default_rng(13)
    a = rng.integers(-8, 9, (5, 40)).astype(np.float16)
    b = rng.integers(-8, 9, (40, 4)).astype(np.float16)
    if case == "late":      # one inexact sum, at the last step of one element
        a[3, :] = 0
        a[3, 39], b[39, 2] = 2.0**-12, 2.0**-12
        a[3, 0], b[0, 2] = 1024.0, 1024.0
    elif case == "early":   # 2**-24 + 1 at the second step
        a[0, 0], b[0, 0], a[0, 1], b[1, 0] = 2.0**-24, 1.0, 1.0, 1.0
    expected = _inexact_by_fractions(a, b)
    assert expected == (case != "integers")
    got, flags = _with_flags(lambda ctx: ops.matmul(a, b, ctx, out="fp32"))
    assert (fpsim.Flag.INEXACT in flags) == expected
    assert flags & ~fpsim.Flag.INEXACT == fpsim.Flag(0)
    _same(got, seq_sum(_terms(a, b), np.float32))


# -- where the float32 path gives up, the step-by-step path answers ----------------------------

def _both_paths(monkeypatch, a, b, **kw):
    fast = _with_flags(lambda ctx: ops.matmul(a, b, ctx, **kw))
    slow = _stepwise(monkeypatch, lambda: _with_flags(lambda ctx: ops.matmul(a, b, ctx, **kw)))
    return fast, slow


def _assert_agree(fast, slow):
    (x, fx), (y, fy) = fast, slow
    assert np.array_equal(x.view(np.uint8), y.view(np.uint8)) and x.dtype == y.dtype
    assert fx == fy


@pytest.mark.parametrize("order", ORDERS)
def test_an_overflowing_sum_gives_the_stepwise_result_and_flags(monkeypatch, order):
    # BF16 products near FP32's max (exact FP32 values): their sum overflows
    x = np.full((2, 4), 2.0**64, BF16)
    y = np.full((4, 2), 1.5 * 2.0**63, BF16)
    returned = []
    accumulate = _gemm32.accumulate
    monkeypatch.setattr(_gemm32, "accumulate",
                        lambda *args: returned.append(accumulate(*args)) or returned[-1])
    fast = _with_flags(lambda ctx: ops.matmul(x, y, ctx, out="fp32", order=order))
    assert returned == [None]   # the float32 path ran and gave up
    slow = _stepwise(monkeypatch, lambda: _with_flags(
        lambda ctx: ops.matmul(x, y, ctx, out="fp32", order=order)))
    _assert_agree(fast, slow)
    assert fpsim.Flag.OVERFLOW in fast[1] and np.isinf(fast[0]).all()


@pytest.mark.parametrize("special", [np.inf, -np.inf, np.nan])
def test_non_finite_operands_take_the_stepwise_path(monkeypatch, special):
    a, b = _data((4, 10), np.float16, 14), _data((10, 3), np.float16, 15)
    a[1, 4] = special
    _assert_agree(*_both_paths(monkeypatch, a, b, out="fp32"))


def test_bf16_products_outside_fp32_take_the_stepwise_path(monkeypatch):
    # 2**-100 * 2**-100 is far below FP32's subnormals; 2**100 * 2**100 far above its max
    for tiny in (2.0**-100, 2.0**100):
        a, b = _data((4, 10), BF16, 16), _data((10, 3), BF16, 17)
        a[2, 3], b[3, 1] = tiny, tiny
        assert not _gemm32.products_fit(a.astype(np.float32), b.astype(np.float32), fpsim.BF16)
        _assert_agree(*_both_paths(monkeypatch, a, b, out="fp32"))


@pytest.mark.parametrize("settings", [dict(rounding="rtz"), dict(rounding="rup"),
                                      dict(rounding="rna"), dict(ftz=True), dict(daz=True),
                                      dict(tininess="before"), dict(saturate=True)])
def test_other_settings_agree_with_the_stepwise_path(monkeypatch, settings):
    a, b = _data((6, 30), np.float16, 18, spread=8), _data((30, 5), np.float16, 19, spread=8)
    _assert_agree(*_both_paths(monkeypatch, a, b, out="fp32", **settings))
    _assert_agree(*_both_paths(monkeypatch, a, b, **settings))


def test_a_unit_that_is_not_ieee_is_not_trusted(monkeypatch):
    a, b = _data((6, 30), np.float16, 20), _data((30, 5), np.float16, 21)
    expected = ops.matmul(a, b, out="fp32")
    monkeypatch.setattr(_machine, "float32_adds_are_ieee", lambda: False)
    monkeypatch.setattr(_gemm32, "float32_adds_are_ieee", lambda: False)
    called = []
    monkeypatch.setattr(_gemm32, "accumulate", lambda *args: called.append(1))
    _same(ops.matmul(a, b, out="fp32"), expected)
    assert not called


# -- products_fit ------------------------------------------------------------------------------

@pytest.mark.parametrize("fmt,dtype", [(fpsim.BF16, BF16), (fpsim.FP16, np.float16),
                                       (fpsim.E4M3, E4M3), (fpsim.E5M2, E5M2)])
def test_products_fit_only_when_every_product_is_an_fp32_value(fmt, dtype):
    rng = np.random.default_rng(22)
    for trial in range(300):
        spread = rng.uniform(0, 140)
        with np.errstate(over="ignore"):   # values beyond the format: skipped below
            a = (rng.standard_normal(6) * np.exp2(rng.uniform(-spread, spread, 6))).astype(dtype)
            b = (rng.standard_normal(6) * np.exp2(rng.uniform(-spread, spread, 6))).astype(dtype)
        a32, b32 = a.astype(np.float32), b.astype(np.float32)
        if not (np.isfinite(a32).all() and np.isfinite(b32).all()):
            continue
        if _gemm32.products_fit(a32, b32, fmt):
            exact = np.outer(a32.astype(np.float64), b32.astype(np.float64))
            assert np.array_equal(exact.astype(np.float32).astype(np.float64), exact), trial


def test_products_fit_at_fp32s_edges():
    one = np.ones(1, np.float32)
    f = _gemm32.products_fit
    assert f(np.float32([2.0**64]), np.float32([1.5 * 2.0**63]), fpsim.BF16)     # 1.5 * 2**127
    assert not f(np.float32([2.0**64]), np.float32([2.0**64]), fpsim.BF16)       # 2**128
    assert f(np.float32([2.0**-60]), np.float32([2.0**-75]), fpsim.BF16)         # 2**-135, 8 bits
    assert not f(np.float32([2.0**-70]), np.float32([2.0**-75]), fpsim.BF16)
    assert f(np.zeros(3, np.float32), np.float32([2.0**100]), fpsim.BF16)        # all zero
    assert not f(one, one, fpsim.FP32)                                         # 48-bit products


# -- workers ------------------------------------------------------------------------------------

@pytest.mark.parametrize("workers", [0, -1, True, 1.5, "2", 10**6])
def test_bad_workers_are_refused(workers):
    a = np.ones((2, 2), np.float16)
    with pytest.raises(ValueError, match="workers="):
        ops.matmul(a, a, workers=workers)
    with pytest.raises(ValueError, match="workers="):
        ops.dot(a[0], a[0], workers=workers)


def test_workers_never_change_bits_or_flags_on_the_stepwise_path():
    a, b = _data((40, 30), np.float16, 23), _data((30, 50), np.float16, 24)
    results = [_with_flags(lambda ctx, w=w: ops.matmul(a, b, ctx, rounding="rup", workers=w))
               for w in (1, 2, None)]
    for r in results[1:]:
        _assert_agree(r, results[0])


def test_the_inexact_test_of_a_sum_against_exact_fractions():
    """_machine.two_sum_error in work arrays (as the GEMM checks), lane by lane against
    Fractions: exact sums, sums that round, cancellation, signed zeros,
    subnormals, and whole arrays with one inexact lane among exact ones."""
    from fractions import Fraction

    rng = np.random.default_rng(11)
    x = np.concatenate([rng.standard_normal(300), [1.0, 2.0 ** -149, -0.0, 3.0, 2.0 ** 24]])
    y = np.concatenate([rng.standard_normal(300) * 2.0 ** rng.integers(-30, 30, 300),
                        [2.0 ** -24, 2.0 ** -149, 0.0, -3.0, 1.0]])
    x, y = x.astype(np.float32), y.astype(np.float32)
    work = (np.empty(1, np.float32), np.empty(1, np.float32))
    seen = {True: 0, False: 0}
    for a, b in zip(x, y):
        s = np.add(a, b, dtype=np.float32)
        want = Fraction(float(a)) + Fraction(float(b)) != Fraction(float(s))
        got = bool(_machine.two_sum_error(np.array([s]), np.array([a]), np.array([b]), work)[0])
        assert got == want, (a, b)
        seen[want] += 1
    assert min(seen.values()) > 10          # both kinds were tested
    exact_x, exact_y = np.arange(1000, dtype=np.float32), np.ones(1000, np.float32)
    work = (np.empty(1000, np.float32), np.empty(1000, np.float32))
    assert not _machine.two_sum_error(exact_x + exact_y, exact_x, exact_y, work).any()
    exact_y[717] = np.float32(2.0 ** -30)
    assert _machine.two_sum_error(exact_x + exact_y, exact_x, exact_y, work).any()
