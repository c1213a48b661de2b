"""The operators' FP32 fast paths (fpsim/ops/_fast32.py, and the FP32
round-to-nearest branch of the elementary functions) against the same calls
with them switched off: codes and flags equal, on hard inputs.

The switch: with ``fpsim.array._native.rounds_to_nearest`` reporting False,
neither fast path is taken (nor the array engine's machine rounding), so the
oracle is the step-by-step general path.  Flags are compared per call on a
fresh context, and per element where a function returns them.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import fpsim
from fpsim import array, ops
from fpsim.array import _native
from fpsim.ops import _fast32
from fpsim.ops._reduce import Steps
from fpsim.ops.operands import Distinct

F16, F32 = np.float16, np.float32


@pytest.fixture
def general(monkeypatch):
    """Run a function with the fast paths switched off."""
    def run(fn, *args, **kw):
        with monkeypatch.context() as m:
            m.setattr(_native, "rounds_to_nearest", lambda: False)
            return fn(*args, **kw)
    return run


def _bits(a):
    a = np.asarray(a)
    return a.view(f"u{a.dtype.itemsize}")


def _same(fn, general, *args, **kw):
    """fn(*args) with and without the fast paths: same bits, same flags."""
    fast_ctx, slow_ctx = fpsim.Context(), fpsim.Context()
    fast = fn(*args, ctx=fast_ctx, **kw)
    slow = general(fn, *args, ctx=slow_ctx, **kw)
    fast, slow = (fast, slow) if isinstance(fast, tuple) else ((fast,), (slow,))
    for f, s in zip(fast, slow):
        assert f.dtype == s.dtype and f.shape == s.shape
        mismatch = np.flatnonzero(_bits(f).ravel() != _bits(s).ravel())
        assert mismatch.size == 0, (f"{mismatch.size} differ, first at {mismatch[0]}: "
                                    f"{f.ravel()[mismatch[0]]!r} vs {s.ravel()[mismatch[0]]!r}")
    assert fast_ctx.flags == slow_ctx.flags, (fast_ctx.flags, slow_ctx.flags)
    return fast_ctx.flags


def _rows(seed, shape, scale=3.0, dtype=F16):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) * scale).astype(dtype)


def _hard_rows_fp16():
    """Rows of specials, constants, huge and tiny values, ties of the output."""
    x = _rows(1, (24, 40))
    x[0, 3] = np.nan
    x[1, 5] = np.inf
    x[2, 7] = -np.inf
    x[3, :] = 0.0
    x[4, :] = -0.0
    x[5, :] = 7.5                      # a constant row: var = 0
    x[6, :] = 65504.0                  # huge
    x[7, :] = -65504.0
    x[8, :] = 2.0 ** -24               # subnormal
    x[9, ::2] = 2.0 ** -24
    x[9, 1::2] = -(2.0 ** -24)
    x[10, :] = np.linspace(-20, 20, 40)
    x[11, 0], x[11, 1:] = 11.0, -11.0    # exp of the others underflows toward zero
    x[12, :] = np.float16(60000.0)
    x[12, ::3] = -60000.0
    x[13, 0] = -0.0
    x[13, 1:] = 0.0
    x[14, :] = -np.inf
    x[15, :] = np.inf
    x[16, :] = (np.arange(40) - 20) * 2.0 ** -14     # around FP16's smallest normal
    return x


OPERATORS = {
    "softmax": ops.softmax,
    "log_softmax": ops.log_softmax,
    "layer_norm": ops.layer_norm,
    "rms_norm": ops.rms_norm,
    "gelu": ops.gelu,
    "sigmoid": ops.sigmoid,
    "silu": ops.silu,
}


@pytest.mark.parametrize("name", sorted(OPERATORS))
@pytest.mark.parametrize("data", ["random", "many_rows", "hard"])
def test_operator_equals_the_step_by_step_path(name, data, general):
    x = {"random": lambda: _rows(2, (7, 300)),
         "many_rows": lambda: _rows(3, (600, 33), scale=6.0),   # the column-sum path
         "hard": _hard_rows_fp16}[data]()
    _same(OPERATORS[name], general, x)


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "layer_norm", "rms_norm"])
@pytest.mark.parametrize("out", ["fp32", "bf16", "fp16"])
def test_fp32_inputs_with_overflowing_and_underflowing_steps(name, out, general):
    x = _rows(4, (12, 50), dtype=F32)
    x[0, :] = 3e38                      # sums overflow
    x[1, :] = -3e38
    x[2, :] = 1e-30                     # squares underflow
    x[3, :] = 1.5e-45                   # subnormal inputs
    x[4, ::2] = 2e19                    # squares overflow
    x[5, :] = 1.0 + 2.0 ** -23          # ties and near-ties in sums
    x[5, ::2] = 2.0 ** -24
    x[6, :] = np.float32(65519.996)     # at FP16's overflow threshold
    x[7, :] = np.float32(2.0 ** -14 - 2.0 ** -26)   # FP16's normal edge
    x[8, :] = -50.0
    x[8, 0] = 100.0                     # exp far below FP32's normal range
    _same(OPERATORS[name], general, x, out=out)


def test_layer_norm_affine_and_one_pass(general):
    x = _rows(5, (9, 64))
    w = _rows(6, (64,), scale=40.0)
    b = _rows(7, (64,), dtype=F32)
    _same(ops.layer_norm, general, x, w, b)
    _same(ops.layer_norm, general, x, w, b, variance="one_pass", out="fp32")
    _same(ops.rms_norm, general, x, w, eps=1e-30)


@pytest.mark.parametrize("axis", [0, 1, -2])
def test_other_axes_and_shapes(axis, general):
    x = _rows(8, (31, 5, 17))
    _same(ops.softmax, general, x, axis=axis)
    _same(ops.log_softmax, general, x, axis=axis)
    _same(ops.layer_norm, general, _rows(9, (1, 1)))
    _same(ops.rms_norm, general, _rows(10, (3,)))
    _same(ops.gelu, general, _rows(11, (2, 3, 4)), approximate="tanh")


def test_losses(general):
    logits = _rows(12, (20, 9))
    target = np.arange(20) % 9
    for reduction in ("mean", "sum", "none"):
        _same(ops.cross_entropy, general, logits, target, reduction=reduction)
        _same(ops.mse_loss, general, logits, _rows(13, (20, 9)), reduction=reduction)


def test_an_inexact_context_stays_correct(general):
    """Flags already raised skip the fast path's tests: nothing else changes."""
    x = _rows(14, (6, 40))
    ctx = fpsim.Context()
    ctx.raise_flags(fpsim.Flag.INEXACT)
    got = ops.softmax(x, ctx=ctx)
    assert np.array_equal(_bits(got), _bits(general(ops.softmax, x)))
    assert ctx.flags == fpsim.Flag.INEXACT | fpsim.Flag.UNDERFLOW


@pytest.mark.parametrize("settings", [
    {"rounding": "rtz"}, {"rounding": "rup"}, {"ftz": True}, {"daz": True},
    {"saturate": True}, {"tininess": "before"}, {"compute": "fp16", "accumulate": "fp16"},
    {"compute": "bf16"}, {"order": "pairwise"}, {"order": ("blocked", 7)},
    {"accumulate": "fp16"},
])
def test_other_settings(settings, general):
    x = _hard_rows_fp16()
    for name in ("softmax", "layer_norm", "rms_norm"):
        _same(OPERATORS[name], general, x, **settings)
    if "order" not in settings and "accumulate" not in settings:
        _same(ops.gelu, general, x, **settings)


def test_the_fast_path_is_only_taken_where_proven():
    ctx = fpsim.Context()
    plain = ctx._key
    assert _fast32.usable(plain, None)
    for k, v in ((0, fpsim.Rounding.RTZ), (0, fpsim.Rounding.SR), (2, True), (3, True)):
        key = list(plain)
        key[k] = v
        assert not _fast32.usable(tuple(key), None)
    assert not _fast32.usable(plain, 0)          # rng= is the general path's error
    with pytest.raises(ValueError, match="stochastic"):
        ops.softmax(np.ones((2, 2), F16), rng=0)


# -- the steps themselves, one operand pair at a time -------------------------------------------

_HARD_FP32 = np.array([
    0.0, -0.0, 1.0, -1.0, 1.0 + 2.0 ** -23, 2.0 ** -24, 3.0, 1.0 / 3, 2.0 ** -126, -2.0 ** -126,
    2.0 ** -149, -2.0 ** -149, 1.5 * 2.0 ** -127, 2.0 ** -63, 2.0 ** 64, 3.4028235e38,
    -3.4028235e38, 1.7014118e38, np.inf, -np.inf, np.nan, 0.1, 7.0, 2.0 ** 100, 2.0 ** -100,
], F32)
_SNAN = np.array([0x7F800001], np.uint32)


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
def test_each_step_on_hard_pairs(op, general):
    codes = np.concatenate([_HARD_FP32.view(np.uint32), _SNAN])
    for a, b in itertools.product(codes, repeat=2):
        x, y = np.array([a], np.uint32), np.array([b], np.uint32)
        fast_ctx, slow_ctx = fpsim.Context(), fpsim.Context()
        fast = _fast32.Fast32(Steps(fast_ctx, None, {}), fast_ctx)
        got = getattr(fast, op)(x, y)
        fast.finish()
        want = general(getattr(array, op), x, y, slow_ctx, fmt="fp32")
        assert got[0] == want[0] or (np.isnan(got.view(F32)[0]) and np.isnan(want.view(F32)[0])
                                     and got[0] == want[0]), (op, hex(a), hex(b))
        assert fast_ctx.flags == slow_ctx.flags, (op, hex(a), hex(b), fast_ctx.flags,
                                                   slow_ctx.flags)


def _fp16_edges():
    """FP32 values at and next to every kind of FP16 boundary."""
    centres = [2.0 ** -25, 2.0 ** -24, 1.5 * 2.0 ** -24, 2.0 ** -15, 2.0 ** -14 - 2.0 ** -25,
               2.0 ** -14 - 2.0 ** -26, 2.0 ** -14, 2.0 ** -14 + 2.0 ** -25, 1.0,
               1.0 + 2.0 ** -11, 1.0 + 3 * 2.0 ** -11, 2048.0 + 1.0, 65504.0, 65520.0,
               65536.0, 3.4028235e38, 0.0, 2.0 ** -149, 1e-30]
    values = []
    for c in centres:
        bits = np.array([c], F32).view(np.int32)[0]
        values.extend(range(bits - 3, bits + 4))
    v = np.array([b for b in values if b >= 0], np.int32).view(np.uint32)
    v = np.concatenate([v, v | np.uint32(0x80000000),
                        np.array([0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001], np.uint32)])
    return v


@pytest.mark.parametrize("tininess", ["after", "before"])
def test_fp32_to_fp16_edges(general, tininess):
    for code in _fp16_edges():
        x = np.array([code], np.uint32)
        fast_ctx, slow_ctx = fpsim.Context(tininess=tininess), fpsim.Context(tininess=tininess)
        fast = _fast32.Fast32(Steps(fast_ctx, None, {}), fast_ctx)
        got = fast.to_fp16(x)
        fast.finish()
        want = general(array.convert, x, "fp32", "fp16", slow_ctx)
        assert got[0] == want[0], hex(code)
        assert fast_ctx.flags == slow_ctx.flags, (hex(code), fast_ctx.flags, slow_ctx.flags)
    many = np.tile(_fp16_edges(), 3000)            # several chunks at once
    fast_ctx = fpsim.Context(tininess=tininess)
    fast = _fast32.Fast32(Steps(fast_ctx, None, {}), fast_ctx)
    assert np.array_equal(fast.to_fp16(many), general(array.convert, many, "fp32", "fp16",
                                                      fpsim.Context(tininess=tininess)))


@pytest.mark.parametrize("tininess", ["after", "before"])
@pytest.mark.parametrize("signs", ["mixed", "positive", "negative"])
def test_fp32_to_fp16_random_codes(general, tininess, signs):
    """Random FP32 codes from below FP16's subnormals to past its overflow,
    of both signs or of one (chunks of one sign take shorter paths): every
    code as the general conversion gives it, and each lane's flags (one lane
    at a time for a sample) too."""
    rng = np.random.default_rng(7)
    low, high = np.array([2.0 ** -27, 2.0 ** 17], F32).view(np.uint32)
    codes = rng.integers(low, high, 1 << 20, dtype=np.uint32)
    if signs != "positive":
        codes[:: 2 if signs == "mixed" else 1] |= np.uint32(0x80000000)
    fast_ctx, slow_ctx = fpsim.Context(tininess=tininess), fpsim.Context(tininess=tininess)
    fast = _fast32.Fast32(Steps(fast_ctx, None, {}), fast_ctx)
    got = fast.to_fp16(codes)
    fast.finish()
    assert np.array_equal(got, general(array.convert, codes, "fp32", "fp16", slow_ctx))
    assert fast_ctx.flags == slow_ctx.flags
    for code in codes[:1500]:
        x = np.array([code], np.uint32)
        fast_ctx, slow_ctx = fpsim.Context(tininess=tininess), fpsim.Context(tininess=tininess)
        fast = _fast32.Fast32(Steps(fast_ctx, None, {}), fast_ctx)
        fast.to_fp16(x)
        general(array.convert, x, "fp32", "fp16", slow_ctx)
        assert fast_ctx.flags == slow_ctx.flags, hex(code)


def _near_midpoints(name):
    """Arguments whose float64 value lies within 2**12 float64 ulps of an
    FP32 midpoint: the fast branch leaves them to the general check."""
    start = np.array([0.75 if name != "log" else 1.5], F32).view(np.uint32)[0]
    x = (start + np.arange(1 << 20, dtype=np.uint32)).view(F32)
    with np.errstate(all="ignore"):
        y = {"exp": np.exp, "log": np.log, "tanh": np.tanh, "rsqrt": lambda v: 1 / np.sqrt(v),
             "erf": np.tanh}[name](x.astype(np.float64))   # (erf: any argument will do)
    low = (y.view(np.uint64) & np.uint64((1 << 29) - 1)).astype(np.int64) - (1 << 28)
    near = x[np.abs(low) < (1 << 12)]
    assert name == "erf" or near.size
    return near[:50]


@pytest.mark.parametrize("name", ["exp", "log", "tanh", "erf", "rsqrt"])
def test_elementary_fp32_round_to_nearest(name, general):
    rng = np.random.default_rng(15)
    x = (rng.standard_normal(20000) * np.exp2(rng.uniform(-30, 8, 20000))).astype(F32)
    specials = np.concatenate([_HARD_FP32, np.array([4.0, 0.25, 2.0 ** -20, 88.72, 88.73,
                                                     -87.3, -103.97, -104.0, -150.0, 9.0,
                                                     1e-8, -1e-8, 3.9, 4.0 + 2.0 ** -21],
                                                    F32)])
    x = np.concatenate([specials, x, _near_midpoints(name), _SNAN.view(F32)])
    _same(getattr(ops, name), general, x, return_flags=True)
    _same(getattr(ops, name), general, x)            # the flags ORed chunk by chunk
    _same(getattr(ops, name), general, np.zeros(70000, F32))  # zeros across chunks


@pytest.mark.parametrize("edge", [-86.0, 87.0, -86.5, 87.5, 88.72, np.nan, None])
def test_exp_chunks_tested_by_their_arguments_extremes(edge, general):
    """exp decides the safe range from its arguments' extremes: chunks of
    softmax-like arguments (zeros among them, each chunk's flags ORed) with
    one lane at, inside or past the edge of the arguments tested at once."""
    rng = np.random.default_rng(3)
    x = -np.abs(rng.standard_normal(3 * 65536)).astype(F32)
    x[::1024] = 0.0
    if edge is not None:
        x[70000] = edge
    _same(ops.exp, general, x)
    _same(ops.exp, general, x, return_flags=True)
    for exact in ([0.0], [0.0, -0.0, 0.0], [0.0, np.nan]):  # no lane inexact
        _same(ops.exp, general, np.array(exact, F32))


# -- elementwise operators on narrow inputs: each distinct code once ----------------------------

def _every_code_shuffled(width, repeats, seed):
    rng = np.random.default_rng(seed)
    codes = np.tile(np.arange(1 << width, dtype=np.uint16 if width > 8 else np.uint8), repeats)
    return rng.permutation(codes)


@pytest.fixture
def distinct_spy(monkeypatch):
    """Counts the calls that take the distinct-code path; ``off()`` turns it off."""
    calls = []
    init = Distinct.__init__

    def spy(self, *args):
        calls.append(1)
        init(self, *args)

    monkeypatch.setattr(Distinct, "__init__", spy)

    class Spy:
        @staticmethod
        def taken():
            return bool(calls)

        @staticmethod
        def off():
            monkeypatch.setattr(Distinct, "RATIO", 1 << 40)   # every element computed
    return Spy


# Every code of a 16-bit format, four times, is 262,144 elements computed
# one by one by the oracle: those run with the exhaustive tests.
_SLOW = pytest.mark.exhaustive
SETTINGS = [
    ("fp16", {}), pytest.param("fp16", {"rounding": "rtz"}, marks=_SLOW),
    pytest.param("fp16", {"ftz": True}, marks=_SLOW),
    pytest.param("fp16", {"daz": True}, marks=_SLOW),
    pytest.param("bf16", {"saturate": True, "rounding": "rdn"}, marks=_SLOW), ("e4m3", {}),
    ("e4m3", {"rounding": "rtz", "saturate": True}), ("e5m2", {"rounding": "rup"}),
    ("e5m2", {"ftz": True}), ("e2m1", {"tininess": "before"}),
]


@pytest.mark.parametrize("name", ["sigmoid", "silu", "gelu"])
@pytest.mark.parametrize("fmt,settings", SETTINGS + [
    pytest.param("fp16", {"out": "fp32"}, marks=_SLOW),
    pytest.param("fp16", {"rounding": "rtz", "out": "e4m3"}, marks=_SLOW),
    ("e4m3", {"out": "fp32"}), ("e5m2", {"daz": True, "compute": "bf16", "out": "fp16"}),
    pytest.param("fp16", {"daz": True, "compute": "bf16"}, marks=_SLOW),
    pytest.param("bf16", {"out": "fp16", "saturate": True}, marks=_SLOW)])
def test_operators_on_distinct_codes_give_every_elements_bits_and_the_calls_flags(
        name, fmt, settings, distinct_spy):
    # Every code of the format (NaNs, infinities, subnormals, both zeros),
    # each four times in a shuffled order, in a 2-D shape.
    codes = _every_code_shuffled(fpsim.format(fmt).width, 4, 7).reshape(4, -1)
    fn = getattr(ops, name)
    once_ctx, each_ctx = fpsim.Context(), fpsim.Context()
    once = fn(codes, once_ctx, fmt=fmt, **settings)
    assert distinct_spy.taken()
    distinct_spy.off()
    each = fn(codes, each_ctx, fmt=fmt, **settings)
    assert once.dtype == each.dtype and np.array_equal(once, each)
    assert once_ctx.flags == each_ctx.flags


@pytest.mark.parametrize("name", ["exp", "log", "tanh", "erf", "rsqrt", "reciprocal"])
@pytest.mark.parametrize("fmt,settings", SETTINGS)
def test_functions_on_distinct_codes_give_every_elements_bits_and_flags(
        name, fmt, settings, distinct_spy):
    codes = _every_code_shuffled(fpsim.format(fmt).width, 4, 8).reshape(2, 2, -1)
    fn = getattr(ops, name)
    once_ctx, each_ctx = fpsim.Context(), fpsim.Context()
    if fmt == "e2m1" and name in ("log", "rsqrt"):
        # a negative argument gives NaN, which E2M1 lacks
        with pytest.raises(ValueError, match="no NaN"):
            fn(codes, once_ctx, fmt=fmt, **settings)
        return
    once, once_flags = fn(codes, once_ctx, fmt=fmt, return_flags=True, **settings)
    if name != "reciprocal":   # (reciprocal is array.div's)
        assert distinct_spy.taken()
    distinct_spy.off()
    each, each_flags = fn(codes, each_ctx, fmt=fmt, return_flags=True, **settings)
    assert once.shape == each.shape == codes.shape
    assert np.array_equal(once, each) and np.array_equal(once_flags, each_flags)
    assert once_ctx.flags == each_ctx.flags
    # typed values in, typed values out, without return_flags
    if fmt == "fp16":
        x = codes.view(np.float16)
        assert np.array_equal(fn(x, **settings).view(np.uint16), once)


def test_the_calls_flags_are_those_of_the_codes_present():
    # 2**20 copies of 1.0 (exact steps but inexact sigmoid) and one -65504
    # (whose exp(-x) overflows): that flag appears only with that element.
    x = np.ones(1 << 20, np.float16)
    plain, with_big = fpsim.Context(), fpsim.Context()
    ops.sigmoid(x, plain)
    x[12345] = -65504.0
    y = ops.sigmoid(x, with_big)
    assert fpsim.Flag.OVERFLOW not in plain.flags
    assert fpsim.Flag.OVERFLOW in with_big.flags     # exp(65504) overflows FP32
    assert y[12345] == 0 and y[0] == np.float16(0.731)


def test_stochastic_rounding_draws_for_every_element(distinct_spy):
    x = np.ones(1 << 18, np.float16)
    y = ops.gelu(x, rounding="sr", rng=5)
    z = ops.exp(x, rounding="sr", rng=5)
    assert not distinct_spy.taken()
    assert len(np.unique(y)) == 2 and len(np.unique(z)) == 2   # up or down, element by element


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("name", ["softmax", "log_softmax", "layer_norm", "rms_norm"])
def test_row_blocks_on_threads_give_the_bits_and_flags_of_one_pass(name, workers, general,
                                                                   monkeypatch):
    """A large row-wise call runs blocks of rows (here made small), each on
    its own flags, on up to ``workers`` threads: the same as one pass of the
    general path, hard rows included (a block of them raising what the
    others do not)."""
    from fpsim.ops import _nn
    monkeypatch.setattr(_nn, "ROW_BLOCK", 3 * 40)
    x = np.concatenate([_rows(8, (40, 40)), _hard_rows_fp16(), _rows(9, (31, 40))])
    _same(OPERATORS[name], general, x, workers=workers)
    _same(OPERATORS[name], general, x, workers=workers, out="fp32")
    # a block of exact rows alone: the others' INEXACT must not leak, nor be lost
    exact = np.zeros((9, 40), F16)
    _same(OPERATORS[name], general, exact, workers=workers)


def test_row_sums_when_numpy_would_not_reduce_in_order(general, monkeypatch):
    """Where numpy's reduction down columns is not the sequential sum, the
    running sums fall back to numpy.cumsum: same bits and flags."""
    from fpsim import _machine
    monkeypatch.setattr(_machine, "reduces_in_order", lambda: False)
    _same(ops.layer_norm, general, _rows(3, (600, 33), scale=6.0))


def test_the_in_order_probe_agrees_with_an_explicit_running_sum():
    """The probe behind the column sums says True exactly when numpy's
    reduction down columns is the running sum added one row at a time."""
    from fpsim import _machine
    v = (np.random.default_rng(5).standard_normal((3000, 50)) * 1e3).astype(F32)
    acc = np.zeros(50, F32)
    for row in v:
        acc = acc + row
    assert _machine.reduces_in_order() == bool(
        np.array_equal(np.add.reduce(v, axis=0), acc))


@pytest.mark.parametrize("workers", [0, -1, 1.5, True, "2"])
def test_workers_must_be_a_positive_integer(workers):
    with pytest.raises(ValueError, match="workers="):
        ops.softmax(_rows(1, (2, 3)), workers=workers)


@pytest.mark.parametrize("fmt", [fpsim.FP16, fpsim.BF16], ids=lambda f: f.name)
def test_widening_equals_the_general_conversion_on_every_code(fmt):
    """FP16 and BF16 codes widen to FP32 on the fast path: every
    non-NaN code as the general conversion gives it (exact, no flag), and
    any NaN among the codes leaves the conversion to the general path."""
    codes = np.arange(1 << 16, dtype=np.uint16)
    want, flags = array.convert(codes, fmt, fpsim.FP32, fpsim.Context(), return_flags=True)
    nan = np.isnan(array.decode(codes, fmt))
    fast = _fast32.Fast32(Steps(fpsim.Context(), None, {}), fpsim.Context())
    got = fast.widen(codes[~nan], fmt)
    assert got is not None and np.array_equal(got, want[~nan]) and not flags[~nan].any()
    assert fast.widen(codes[nan][:1], fmt) is None
    finite = np.isfinite(array.decode(codes, fmt))  # (FP16: by the bits, not the table)
    got = fast.widen(codes[finite].reshape(-1, 2), fmt)
    assert got is not None and np.array_equal(got.reshape(-1), want[finite])
    empty = fast.widen(np.zeros((0, 3), np.uint16), fmt)
    assert empty is not None and empty.shape == (0, 3)
    for special in codes[~finite]:   # one infinity or NaN among finite codes
        got = fast.widen(np.array([0x3C00, special, 0x8001], np.uint16), fmt)
        if np.isnan(array.decode(np.array([special], np.uint16), fmt))[0]:
            assert got is None
        else:
            assert got is not None and got[1] == want[special]


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "layer_norm", "rms_norm", "gelu"])
def test_numpys_error_settings_do_not_reach_the_fast_paths(name):
    """A caller with numpy's floating-point errors set to raise gets the same
    bits and flags: the fast steps' float32 arithmetic on NaNs, infinities,
    overflows and subnormals is theirs to ignore."""
    x = _rows(2, (64, 256))
    x[0, :4] = [np.inf, -np.inf, np.nan, 65504.0]
    x[1, :3] = [2.0 ** -24, -2.0 ** -24, 0.0]
    fn = getattr(ops, name)
    plain_ctx, raising_ctx = fpsim.Context(), fpsim.Context()
    plain = fn(x, ctx=plain_ctx)
    with np.errstate(all="raise"):
        raising = fn(x, ctx=raising_ctx)
    assert np.array_equal(_bits(plain), _bits(raising))
    assert plain_ctx.flags == raising_ctx.flags
