"""Hostile input, round 2: shared caches under threads, and serialization.

Class 1: every module-level cache and registry of fpsim is safe under
concurrent use.  Threads computing over the 8-bit formats under different
roundings (each building and evicting tables of results), registering
formats, making IEEE P3109 formats and listing the formats, all at once and
with the interpreter switching threads every microsecond, raise nothing and
get the results of a single thread.

Class 8: every public value object round-trips through :mod:`pickle` and
:func:`copy.deepcopy` unchanged: equal where it defines equality, and
behaving the same (a context's settings, flags and random stream; a
format's identity; a model's results).
"""

from __future__ import annotations

import copy
import pickle
import random
import sys
import threading

import ml_dtypes
import numpy as np
import pytest

import fpsim
import fpsim.mma
import fpsim.testfloat
from fpsim import array, quant, sweep, testing
from fpsim.array import _tables

_formats_module = sys.modules["fpsim.formats"]  # (fpsim.formats is the function)

# -- class 1: threads -------------------------------------------------------------------------

FORMATS8 = ["e4m3", "e5m2", "e4m3fnuz", "e5m2fnuz", "e3m4", "e4m3b11fnuz",
            "binary8p3se", "binary8p4uf"]
MODES = ["rne", "rtz", "rup", "rdn"]
THREADS = 5


@pytest.fixture
def hostile_switching():
    """The interpreter switches threads every microsecond while the test runs."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


@pytest.fixture
def scratch_registry():
    """Formats the test registers are gone afterwards, and the P3109
    formats wider than 8 bits are made afresh in the test (the ones made
    before are back afterwards)."""
    registry, family = _formats_module._REGISTRY, _formats_module._P3109
    names, made = set(registry), dict(family)
    for key in [k for k in family if k[0] > 8]:
        del family[key]
    try:
        yield
    finally:
        for name in set(registry) - names:
            del registry[name]
        family.clear()
        family.update(made)


def _operands(fmt: str, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return (rng.integers(0, 256, 3000, dtype=np.uint8),
            rng.integers(0, 256, 3000, dtype=np.uint8))


def _tasks() -> list[tuple]:
    """(what, format, mode) of each call the threads make."""
    tasks = [(op, f, m) for op in ("add", "mul") for f in FORMATS8 for m in MODES]
    tasks += [("convert", f, m) for f in FORMATS8 for m in MODES]
    tasks += [("encode", f, m) for f in FORMATS8 for m in MODES]
    return tasks


_X8 = (np.random.default_rng(7).standard_normal(3000) * 40).astype(ml_dtypes.float8_e5m2)


def _call(task: tuple) -> tuple[np.ndarray, np.ndarray, fpsim.Flag]:
    what, fmt, mode = task
    ctx = fpsim.Context(rounding=mode)
    i = FORMATS8.index(fmt)
    a, b = _operands(fmt, i)
    if what == "add":
        r, f = array.add(a, b, ctx, fmt=fmt, return_flags=True)
    elif what == "mul":
        r, f = array.mul(a, b, ctx, fmt=fmt, return_flags=True)
    elif what == "convert":  # 8-bit codes into the next 8-bit format (a table of 256)
        r, f = array.convert(a, fmt, FORMATS8[(i + 1) % len(FORMATS8)], ctx,
                             return_flags=True)
    else:  # E5M2 values into the format (a table of every E5M2 code)
        r, f = array.encode(_X8, fmt, ctx, return_flags=True)
    return np.asarray(r).copy(), np.asarray(f).copy(), ctx.flags


def _hammer(workers: list, rounds: int = 1) -> list[BaseException]:
    """Run each worker(thread_index) on its own thread, all released at once."""
    errors: list[BaseException] = []
    start = threading.Barrier(len(workers))

    def run(i: int, work) -> None:
        try:
            start.wait()
            for _ in range(rounds):
                work(i)
        except BaseException as exc:  # reported by the test
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i, w)) for i, w in enumerate(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads), "a thread did not finish"
    return errors


def _check_same(expected: dict, got: dict) -> None:
    assert set(got) == set(expected)
    for task, (r, f, flags) in got.items():
        er, ef, eflags = expected[task]
        np.testing.assert_array_equal(r, er, err_msg=str(task))
        np.testing.assert_array_equal(f, ef, err_msg=str(task))
        assert flags == eflags, task


def _ballast(n: int = 2000) -> None:
    """Tiny tables that make every walk over the cache long (as a process
    that has converted between many formats has it)."""
    def fill(inputs):
        return inputs.astype(np.uint8), np.zeros(inputs.size, np.uint8)
    for i in range(n):
        _tables.cached(("hostile ballast", i), fpsim.E4M3, 1, fill)


@pytest.mark.parametrize("cache_bytes", [None, 12 << 20], ids=["roomy", "evicting"])
def test_array_calls_on_threads_share_the_table_cache(hostile_switching, monkeypatch,
                                                      cache_bytes):
    """Threads building, reading and (with a cache of 48 of the 64 pair tables)
    evicting tables at once, and the cache cleared under them: no exception,
    every result as computed alone."""
    tasks = _tasks()
    _tables.clear()
    expected = {t: _call(t) for t in tasks}
    if cache_bytes is not None:
        monkeypatch.setattr(_tables, "CACHE_BYTES", cache_bytes)
    _tables.clear()
    _ballast()
    got: dict = {}

    def work(i: int) -> None:
        order = tasks[:]
        random.Random(i).shuffle(order)
        for n, task in enumerate(order):
            got[task, i] = _call(task)
            if i == 0 and n % 40 == 39:
                _tables.clear()  # a benchmark's cold start, in the middle of it all
                _ballast()

    try:
        errors = _hammer([work] * THREADS)
        assert not errors, errors[0]
        for i in range(THREADS):
            _check_same(expected, {t: v for (t, j), v in got.items() if j == i})
        if cache_bytes is not None:
            assert sum(t.packed.nbytes for t in _tables._CACHE.values()) <= cache_bytes
    finally:
        _tables.clear()


def test_registering_and_listing_formats_on_threads(hostile_switching, scratch_registry):
    """register(), formats(), format() and p3109() at once: every listing is
    whole and in order, every format made once, every name found."""
    before = fpsim.formats()
    made: dict[int, list] = {i: [] for i in range(6)}
    listings: list[list] = []
    family = [(k, p, s, e) for k in range(9, 17) for p in (2, 3, 5) for s in (True, False)
              for e in (True, False)]

    def register(i: int) -> None:
        for n in range(120):
            fmt = fpsim.Format(f"hostile_thread_{i}_{n}", 4, 3, 7, "fn",
                               aliases=(f"hostile_alias_{i}_{n}",))
            assert fpsim.register(fmt) is fmt
            made[i].append(fmt)

    def listing(i: int) -> None:
        for n in range(150):
            listings.append(fpsim.formats())
            with pytest.raises(ValueError, match="unknown format"):
                fpsim.format("no_such_format")  # (its message lists the formats)

    def p3109(i: int) -> None:
        order = family[:]
        random.Random(i).shuffle(order)
        for k, p, s, e in order:
            made[i].append(fpsim.p3109(k, p, s, e))
            made[i].append(fpsim.format(f"binary{k}p{p}{'s' if s else 'u'}{'e' if e else 'f'}"))

    errors = _hammer([register, register, listing, listing, p3109, p3109])
    assert not errors, errors[0]
    for fmts in listings:
        assert [f for f in fmts if not f.name.startswith("hostile_")] == before
    for i in (0, 1):
        for fmt in made[i]:
            assert fpsim.format(fmt.name) is fmt
            assert fpsim.format(fmt.aliases[0]) is fmt
    ours = [f for f in fpsim.formats() if f.name.startswith("hostile_")]
    assert len(ours) == 240
    for k, p, s, e in family:  # one object per P3109 format, whichever thread made it
        fmt = fpsim.p3109(k, p, s, e)
        assert all(g is fmt for g in made[4] + made[5] if g.name == fmt.name)


def test_conflicting_registrations_on_threads(hostile_switching, scratch_registry):
    """Two threads registering different formats under one name: exactly
    one succeeds, the others get ValueError, and every name and alias keeps
    the winner."""
    for n in range(60):
        name = f"hostile_conflict_{n}"
        aliases = tuple(f"{name}_alias_{j}" for j in range(1000))  # a longer check
        candidates = [fpsim.Format(name, 4, 3, b, "fn", aliases=aliases) for b in (5, 6, 7, 8)]
        won: list = []

        def attempt(i: int, candidates=candidates, won=won) -> None:
            try:
                won.append(fpsim.register(candidates[i]))
            except ValueError:
                pass

        errors = _hammer([attempt] * 4)
        assert not errors, errors[0]
        assert len(won) == 1, (name, won)
        assert fpsim.format(name) is won[0]
        assert all(fpsim.format(a) is won[0] for a in aliases)


def test_interned_values_of_a_fresh_format_on_threads(hostile_switching):
    """The Floats of a format up to 16 bits are interned on first use; a
    thread reading one that another thread is making gets a whole value."""
    fmt = fpsim.Format("hostile_fp16", 5, 10, 15)  # (its own, empty, table of values)
    one = fpsim.FP16.from_bits(0x3C00)
    expected = [fpsim.arith.mul(fpsim.FP16.from_bits(c), one, fpsim.Context()).bits
                for c in range(0, 1 << 16, 3)]

    def work(i: int) -> None:
        ctx, unit = fpsim.Context(), fmt.from_bits(0x3C00)
        got = [fpsim.arith.mul(fmt.from_bits(c), unit, ctx).bits for c in range(0, 1 << 16, 3)]
        assert got == expected
        assert all(fmt.from_bits(c).fields() == fmt.fields(c) for c in range(0, 1 << 16, 7))

    errors = _hammer([work] * 4)
    assert not errors, errors[0]


# -- class 8: pickle and deepcopy -------------------------------------------------------------

def _round_trips(x):
    """``x`` through pickle (each protocol) and through copy.deepcopy."""
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        yield pickle.loads(pickle.dumps(x, protocol=protocol))
    yield copy.deepcopy(x)


def _context_state(ctx: fpsim.Context) -> tuple:
    return (repr(ctx), ctx._key, ctx._fast_key, ctx.flags, type(ctx.rng))


CONTEXTS = {
    "default": lambda: fpsim.Context(),
    "settings": lambda: fpsim.Context(rounding="rtz", saturate="ovfinf", ftz=True, daz=True,
                                      tininess="before", sr_bits=11, nan="x86",
                                      flags=fpsim.Flag.INEXACT | fpsim.Flag.UNDERFLOW),
    "stochastic": lambda: fpsim.Context(rounding="sr", saturate=True, rng=12345),
    "numpy_rng": lambda: fpsim.Context(rounding="sr_b", rng=np.random.default_rng(5)),
    "custom_nan_policy": lambda: fpsim.Context(nan=fpsim.nans.NanPolicy(
        "mine", propagate=False, prefer_signaling=False, default_negative=True, source="me")),
}


def _used(name: str) -> fpsim.Context:
    """The context ``name`` after some use: flags raised, its stream moved on."""
    ctx = CONTEXTS[name]()
    fpsim.FP16.round(1e-6, ctx)
    ctx.random_bits()
    return ctx


@pytest.mark.parametrize("name", sorted(CONTEXTS))
def test_a_context_round_trips_with_its_settings_flags_and_random_stream(name):
    ctx = _used(name)
    for c in _round_trips(ctx):
        twin = _used(name)  # what ctx is, made again
        assert type(c) is fpsim.Context
        assert _context_state(c) == _context_state(ctx)
        assert c.rng is not ctx.rng and c._flags is not ctx._flags  # independent copies
        assert [c.random_bits() for _ in range(5)] == [twin.random_bits() for _ in range(5)]
        for x in (1.0 + 2.0**-9, 3e38, 2.0**-130):
            assert fpsim.BF16.round(x, c).bits == fpsim.BF16.round(x, twin).bits
        assert c.flags == twin.flags
        c.raise_flags(fpsim.Flag.DIVIDE_BY_ZERO)
        assert fpsim.Flag.DIVIDE_BY_ZERO not in ctx.flags


def test_a_copied_context_draws_what_the_original_draws_next():
    ctx = fpsim.Context(rounding="sr", rng=99)
    ctx.random_bits()
    copies = list(_round_trips(ctx))
    expected = [ctx.random_bits() for _ in range(8)]
    for c in copies:
        assert [c.random_bits() for _ in range(8)] == expected
    x = np.float32([1.0 + 2.0**-12] * 64)
    results = {bytes(array.encode(x, "bf16", c)) for c in _round_trips(ctx)}
    assert len(results) == 1  # stochastic rounding from the same state


FORMATS = [*fpsim.formats(), fpsim.p3109(11, 5), fpsim.p3109(16, 1, signed=False,
                                                              extended=False)]


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.name)
def test_a_known_format_comes_back_as_itself(fmt):
    for g in (*_round_trips(fmt), copy.copy(fmt)):
        assert g is fmt


@pytest.mark.parametrize("fmt", [
    fpsim.Format("e3m2_mine", 3, 2, 3, "none", aliases=("mine",)),
    fpsim.Format("fp16", 5, 10, 15),              # FP16's parameters, without its aliases
    fpsim.Format("binary8p3se", 4, 3, 7, "fn"),   # a P3109 name, other parameters
    fpsim.Format("u8", 8, 0, 127, "fn", subnormals=False, signed=False),
], ids=lambda f: f.name)
def test_a_user_made_format_comes_back_equal_and_usable(fmt):
    codes = np.arange(1 << fmt.width, dtype=np.uint8)
    expected = array.add(codes, codes[::-1].copy(), fpsim.Context(), fmt=fmt,
                         return_flags=True) if fmt.has_nan else None
    for g in _round_trips(fmt):
        assert g == fmt and g.aliases == fmt.aliases and repr(g) == repr(fmt)
        assert (g.max, g.min_subnormal, g.inf_code, g.default_nan_code) == \
            (fmt.max, fmt.min_subnormal, fmt.inf_code, fmt.default_nan_code)
        assert [g.from_bits(c).value if not g.is_nan_code(c) else None for c in range(16)] == \
            [fmt.from_bits(c).value if not fmt.is_nan_code(c) else None for c in range(16)]
        if expected is not None:
            got = array.add(codes, codes[::-1].copy(), fpsim.Context(), fmt=g, return_flags=True)
            np.testing.assert_array_equal(got[0], expected[0])
            np.testing.assert_array_equal(got[1], expected[1])


@pytest.mark.parametrize("fmt,bits", [
    (fpsim.FP16, 0x3C01), (fpsim.FP16, 0x7E01), (fpsim.E4M3, 0xFF), (fpsim.p3109(8, 3), 0x80),
    (fpsim.p3109(11, 5), 0x123), (fpsim.FP64, 0x7FEFFFFFFFFFFFFF), (fpsim.E8M0, 0x7F),
])
def test_a_float_comes_back_with_its_format_and_bits(fmt, bits):
    x = fmt.from_bits(bits)
    for y in _round_trips(x):
        assert type(y) is fpsim.Float and y.fmt is fmt and y.bits == bits
        assert y.is_nan == x.is_nan and (x.is_nan or (y == x and y.value == x.value))
        assert fpsim.arith.add(y, y, fpsim.Context()).bits == \
            fpsim.arith.add(x, x, fpsim.Context()).bits


@pytest.mark.parametrize("value", [
    fpsim.Flag.INEXACT | fpsim.Flag.OVERFLOW, fpsim.Rounding.RTO, fpsim.Saturation.OVF_INF,
    fpsim.Tininess.BEFORE, fpsim.Specials.FNUZ, *fpsim.nans.policies(),
    *testing.profiles(),
], ids=lambda v: f"{type(v).__name__}.{getattr(v, 'name', v)}")
def test_named_settings_and_presets_come_back_as_themselves(value):
    for v in _round_trips(value):
        assert v is value


def test_a_user_made_nan_policy_and_profile_come_back_equal():
    mine = fpsim.nans.NanPolicy("mine", propagate=True, prefer_signaling=False,
                                default_negative=True, source="a note")
    prof = testing.Profile("mine", "a stack", "measured", settings={"rounding": "rtz"},
                           formats={"e4m3": {"saturate": True}}, notes={"*": "a note"})
    for v in _round_trips(mine):
        assert v == mine and v is not fpsim.nans.X86
    for p in _round_trips(prof):
        assert p == prof
        assert p.settings_for("e4m3") == prof.settings_for("e4m3")
        assert _context_state(p.context("e4m3")) == _context_state(prof.context("e4m3"))


# Objects with equality: a round trip gives an equal object.
def _report():
    return testing.compare(np.float16([1.0, 2.0, np.nan, 0.0]),
                           np.float16([1.0, 2.002, 1.0, -0.0]))


def _sweep_report():
    return sweep.run("mul", "e2m1", lambda a, b: a * b)


def _quantized():
    return quant.quantize(np.float32([[1.0, -2.0, 3.0], [0.25, 8.0, 1e-3]]), "e4m3", "channel")


EQUAL = {
    "report": _report,
    "offender": lambda: _report().offenders[0],
    "sweep_report": _sweep_report,
    "sweep_spec": lambda: sweep.plan("add", "e4m3", "numpy:add", sample=0.5, seed=3),
    "sweep_space": lambda: sweep.Space(fpsim.E4M3, 2, "specials", specials=(0, 0x7F)),
    "mma_params": lambda: fpsim.mma.preset("h100", "e4m3", out="fp32").params,
    "mma_schedule": lambda: fpsim.mma.cublas("h100", "fp16", split_k=3).schedule,
    "probe_result": lambda: fpsim.mma.probe(fpsim.mma.preset("a100", "fp16", out="fp32")),
    "recipe": lambda: _quantized().recipe,
    "quant_report": lambda: quant.error_report(np.float32([[1.0, -2.0, 3.0],
                                                           [0.25, 8.0, 1e-3]]), _quantized()),
    "step_record": lambda: quant.LossScaler().step(np.float32([1.0, 7e4])),
    "scale_sweep": lambda: quant.scale_sweep(np.float32([1e-8, 1e-3, 2.0])),
    "int_format": lambda: quant.MXINT8_SYM,
    "testfloat_operation": lambda: fpsim.testfloat.operation("bf16_mulAdd"),
    "testfloat_report": lambda: fpsim.testfloat.verify(
        "f16_add", list(fpsim.testfloat.generate("f16_add", n=20))),
}


@pytest.mark.parametrize("name", sorted(EQUAL))
def test_a_value_object_comes_back_equal(name):
    x = EQUAL[name]()
    for y in _round_trips(x):
        assert type(y) is type(x)
        assert y == x
        if hasattr(x, "__hash__") and x.__hash__ is not None:
            assert hash(y) == hash(x)


# Objects without equality (models, stateful recipes, results holding
# arrays): a round trip behaves as the original does.
def _same_arrays(a, b):
    """Same dtype, shape and bytes (NaNs included)."""
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    assert np.atleast_1d(a).tobytes() == np.atleast_1d(b).tobytes()


def _gemm_inputs(k: int):
    rng = np.random.default_rng(1)
    a = (rng.standard_normal((4, k)) * 4).astype(np.float16)
    b = (rng.standard_normal((k, 3)) * 4).astype(np.float16)
    return a, b


def _check_model(m, n):
    a, b = _gemm_inputs(m.k)
    b = np.ascontiguousarray(b[:, :1].repeat(4, axis=1).T)  # rows of (a, b) pairs
    c = np.float32([0.5, -1.0, 2.0**-30, 0.0])
    assert repr(n) == repr(m) and n.params == m.params
    _same_arrays(n(a, b, c), m(a, b, c))


def _check_gemm(g, h):
    a, b = _gemm_inputs(70)
    c = np.float32(np.ones((4, 3)))
    assert repr(h) == repr(g) and h.schedule == g.schedule
    _same_arrays(h(a, b, c, alpha=0.5, beta=2.0), g(a, b, c, alpha=0.5, beta=2.0))


def _check_quantized(q, r):
    for f in ("data", "scale", "amax", "saturated"):
        _same_arrays(getattr(r, f), getattr(q, f))
    assert (r.element_format, r.scale_format, r.recipe) == \
        (q.element_format, q.scale_format, q.recipe)
    _same_arrays(r.dequantize(), q.dequantize())


def _check_delayed(d, e):
    assert vars(e).keys() == vars(d).keys()
    _same_arrays(e.history, d.history)
    _same_arrays(e.scale, d.scale)
    for x in (np.float32([3.0, -1.0]), np.float32([1e4]), np.float32([0.5])):
        _check_quantized(d.step(x), e.step(x))
    _same_arrays(e.history, d.history)
    _same_arrays(e.scale, d.scale)


def _check_scaler(s, t):
    assert (t.scale, t.growth_tracker, t.records) == (s.scale, s.growth_tracker, s.records)
    for g in (np.float32([1.0]), np.float32([1e30]), np.float32([2.0])):
        assert t.step(g) == s.step(g)
    assert (t.scale, t.growth_tracker, t.records) == (s.scale, s.growth_tracker, s.records)


def _used_delayed():
    d = quant.DelayedScaling(history_len=3, margin=1, ctx=fpsim.Context(rounding="rtz"))
    for x in (np.float32([1.0, 2.0]), np.float32([300.0])):
        d.step(x)
    return d


def _used_scaler():
    s = quant.LossScaler(init_scale=2.0**10, growth_interval=2)
    for g in (np.float32([1.0]), np.float32([np.inf]), np.float32([3.0])):
        s.step(g)
    return s


BEHAVING = {
    "mma_model": (lambda: fpsim.mma.preset("h100", "fp16", out="fp32"), _check_model),
    "mma_model_mixed": (lambda: fpsim.mma.preset("mi300x", "fp16", out="fp32"),
                        _check_model),
    "cublas": (lambda: fpsim.mma.cublas("h100", "fp16", split_k=2), _check_gemm),
    "cutlass": (lambda: fpsim.mma.cutlass("a100", "fp16"), _check_gemm),
    "triton": (lambda: fpsim.mma.triton("h100", "fp16"), _check_gemm),
    "quantized": (_quantized, _check_quantized),
    "delayed_scaling": (_used_delayed, _check_delayed),
    "loss_scaler": (_used_scaler, _check_scaler),
}


@pytest.mark.parametrize("name", sorted(BEHAVING))
def test_a_model_or_recipe_comes_back_behaving_the_same(name):
    make, check = BEHAVING[name]
    for y in _round_trips(make()):
        check(make(), y)


def test_a_malformed_vector_error_comes_back_whole():
    e = fpsim.testfloat.VectorError(12, "3 fields, expected 4")
    for f in _round_trips(e):
        assert type(f) is type(e) and str(f) == str(e) and f.line == 12 and f.args == e.args
