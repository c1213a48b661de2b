"""fpsim.ops neural-network operators (softmax, log_softmax, layer_norm,
rms_norm, relu, sigmoid, silu, gelu, mse_loss, cross_entropy) against
step-by-step oracles written here from the operators' declared numerics.

The oracles never call fpsim.  Every +, -, *, / is numpy float16 / float32
arithmetic, each correctly rounded to nearest even (float16 is computed in
float32 and rounded back: 24 >= 2*11 + 2 bits, so that double rounding is
innocuous); conversions are numpy / ml_dtypes casts (correctly rounded).
The elementary functions (exp, log, erf, tanh, rsqrt) are MPFR (gmpy2),
correctly rounded in a context that emulates the compute format
(tests/oracle.py: precision, subnormals), applied element by element.
Under directed rounding (rtz, rup, rdn) numpy cannot help, so a second
oracle takes every step, arithmetic included, in such MPFR contexts; in rne
the two oracles are checked against each other.
"""

from __future__ import annotations

import gmpy2
import ml_dtypes
import numpy as np
import pytest
from sum_oracles import pairwise_sum, seq_sum

import fpsim
from fpsim import ops

from oracle import SPECS, mpfr_emulating

BF16 = ml_dtypes.bfloat16
F16, F32 = np.float16, np.float32
DT = {"fp16": F16, "fp32": F32, "bf16": BF16}


# -- helpers ------------------------------------------------------------------------------

def _bits(a):
    a = np.asarray(a)
    return a.view(f"u{a.dtype.itemsize}")


def _assert_same_bits(actual, expected):
    """Bit for bit, except that a NaN matches any NaN: the oracle's NaNs are
    numpy's on this machine (x86's default NaN is negative), while IEEE
    754 leaves the default NaN's sign open; the NaN bits are checked
    separately against fpsim's documented default NaN (``DEFAULT_NAN``)."""
    actual = np.asarray(actual)
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    a, e = actual.ravel(), expected.ravel()
    with np.errstate(invalid="ignore"):
        both_nan = np.isnan(a.astype(np.float64)) & np.isnan(e.astype(np.float64))
    mismatch = np.flatnonzero((_bits(a) != _bits(e)) & ~both_nan)
    assert mismatch.size == 0, (f"{mismatch.size} of {actual.size} differ, first at "
                                f"{mismatch[0]}: {actual.ravel()[mismatch[0]]!r} vs "
                                f"{expected.ravel()[mismatch[0]]!r}")


def _data(shape, dtype, seed, scale=3.0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape) * scale
    x[rng.random(shape) < 0.05] = 0.0
    return x.astype(dtype)


# spec/arithmetic.md: the default NaN (invalid operation, no NaN operand) is
# the format's positive quiet NaN with a zero payload (the default "ieee"
# NaN policy); a NaN operand propagates with its sign and payload.
DEFAULT_NAN = {F16: 0x7E00, F32: 0x7FC00000}


def quiet(fn):
    """Run an oracle with numpy's floating-point warnings silenced (its
    overflows and invalid operations are the expected IEEE results)."""
    def wrapper(*args, **kw):
        with np.errstate(all="ignore"):
            return fn(*args, **kw)
    wrapper.__name__ = fn.__name__
    return wrapper


def mp(fn, a, fmt):
    """``fn`` (an MPFR function name: exp, log, erf, tanh, rec_sqrt) of every
    element of ``a``, correctly rounded to nearest even by MPFR in a context
    emulating ``fmt`` (its precision and subnormals; MPFR's exponent range
    is unbounded above, so a result beyond max is >= 2**(emax+1) and the
    final numpy cast makes it inf, as IEEE overflow to nearest does)."""
    ctx = mpfr_emulating(SPECS[fmt], "rne")
    f = getattr(ctx, fn)
    flat = np.asarray(a).astype(np.float64).ravel()
    out = np.array([float(f(gmpy2.mpfr(float(v)))) for v in flat], np.float64)
    with np.errstate(over="ignore"):
        return out.reshape(np.shape(a)).astype(DT[fmt])


def c(v, fmt):
    """A Python float converted (rne) into fmt: numpy's double->half/float
    casts are correctly rounded."""
    return DT[fmt](v)


# -- oracles: the declared steps -----------------------------------------------------------

@quiet
def ref_softmax_parts(x, C, A, stable=True):
    cd, ad = DT[C], DT[A]
    xc = x.astype(cd)
    d = (xc - xc.max(axis=-1, keepdims=True)).astype(cd) if stable else xc
    e = mp("exp", d, C)                       # MPFR exp, correctly rounded in C
    s = seq_sum(e.astype(ad), ad).astype(cd)[..., None]
    return d, e, s


@quiet
def ref_softmax(x, C="fp32", A="fp32", out=None, stable=True):
    d, e, s = ref_softmax_parts(x, C, A, stable)
    y = (e / s).astype(DT[C])
    return y.astype(DT[out] if out else x.dtype)


@quiet
def ref_log_softmax_c(x, C="fp32", A="fp32", stable=True):
    d, e, s = ref_softmax_parts(x, C, A, stable)
    lg = mp("log", s, C)                      # MPFR log, correctly rounded in C
    return (d - lg).astype(DT[C])


@quiet
def ref_log_softmax(x, C="fp32", A="fp32", out=None, stable=True):
    return ref_log_softmax_c(x, C, A, stable).astype(DT[out] if out else x.dtype)


@quiet
def ref_layer_norm(x, w=None, b=None, C="fp32", A="fp32", out=None, eps=1e-5,
                   variance="two_pass"):
    cd, ad = DT[C], DT[A]
    n = x.shape[-1]
    xc = x.astype(cd)
    na = ad(n)
    mu = (seq_sum(xc.astype(ad), ad) / na).astype(ad).astype(cd)[..., None]
    d = (xc - mu).astype(cd)
    if variance == "two_pass":
        sq = (d * d).astype(cd)
        var = (seq_sum(sq.astype(ad), ad) / na).astype(ad).astype(cd)[..., None]
    else:
        sq = (xc * xc).astype(cd)
        q = (seq_sum(sq.astype(ad), ad) / na).astype(ad).astype(cd)[..., None]
        var = (q - (mu * mu).astype(cd)).astype(cd)
    v = (var + c(eps, C)).astype(cd)
    r = mp("rec_sqrt", v, C)                  # MPFR rec_sqrt: 1/sqrt rounded once
    y = (d * r).astype(cd)
    if w is not None:
        y = (y * w.astype(cd)).astype(cd)
    if b is not None:
        y = (y + b.astype(cd)).astype(cd)
    return y.astype(DT[out] if out else x.dtype)


@quiet
def ref_rms_norm(x, w=None, C="fp32", A="fp32", out=None, eps=1e-6):
    cd, ad = DT[C], DT[A]
    n = x.shape[-1]
    xc = x.astype(cd)
    sq = (xc * xc).astype(cd)
    ms = (seq_sum(sq.astype(ad), ad) / ad(n)).astype(ad).astype(cd)[..., None]
    r = mp("rec_sqrt", (ms + c(eps, C)).astype(cd), C)   # MPFR rec_sqrt
    y = (xc * r).astype(cd)
    if w is not None:
        y = (y * w.astype(cd)).astype(cd)
    return y.astype(DT[out] if out else x.dtype)


@quiet
def ref_sigmoid_c(xc, C):
    cd = DT[C]
    e = mp("exp", (-xc).astype(cd), C)        # MPFR exp
    return (cd(1) / (cd(1) + e).astype(cd)).astype(cd)


@quiet
def ref_sigmoid(x, C="fp32", out=None):
    return ref_sigmoid_c(x.astype(DT[C]), C).astype(DT[out] if out else x.dtype)


@quiet
def ref_silu(x, C="fp32", out=None):
    xc = x.astype(DT[C])
    return (xc * ref_sigmoid_c(xc, C)).astype(DT[C]).astype(DT[out] if out else x.dtype)


@quiet
def ref_gelu(x, C="fp32", out=None, approximate="none"):
    cd = DT[C]
    xc = x.astype(cd)
    half = (xc * cd(0.5)).astype(cd)
    if approximate == "none":
        t = (xc * c(0.7071067811865476, C)).astype(cd)
        g = (cd(1) + mp("erf", t, C)).astype(cd)          # MPFR erf
    else:
        x3 = ((xc * xc).astype(cd) * xc).astype(cd)
        inner = (xc + (c(0.044715, C) * x3).astype(cd)).astype(cd)
        u = mp("tanh", (c(0.7978845608028654, C) * inner).astype(cd), C)   # MPFR tanh
        g = (cd(1) + u).astype(cd)
    return (half * g).astype(cd).astype(DT[out] if out else x.dtype)


@quiet
def ref_mse(p, t, reduction, C="fp32", A="fp32", out=None):
    cd, ad = DT[C], DT[A]
    od = DT[out] if out else p.dtype
    d = (p.astype(cd) - t.astype(cd)).astype(cd)
    q = (d * d).astype(cd)
    if reduction == "none":
        return q.astype(od)
    s = seq_sum(q.reshape(-1).astype(ad), ad)
    if reduction == "sum":
        return s.astype(od)
    return (s / ad(q.size)).astype(ad).astype(od)


@quiet
def ref_cross_entropy(logits, target, reduction, C="fp32", A="fp32", out=None):
    ad = DT[A]
    od = DT[out] if out else logits.dtype
    ls = ref_log_softmax_c(logits, C, A)
    picked = ls[np.arange(ls.shape[0]), target]
    if reduction == "none":
        return (-picked).astype(od)
    s = seq_sum(picked.astype(ad), ad)
    if reduction == "sum":
        return (-s).astype(od)
    return (-(s / ad(picked.size)).astype(ad)).astype(od)


# -- 1. bit for bit: FP16 inputs, FP32 compute and accumulate ----------------------------------

OUTS = [None, "fp32"]   # None: the input's format (fp16)


def _out_kw(out):
    return {} if out is None else {"out": out}


@pytest.mark.parametrize("out", OUTS)
@pytest.mark.parametrize("stable", [True, False])
@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_softmax_and_log_softmax_fp16_in_fp32_steps(op, stable, out):
    x = _data((6, 37), F16, 1 if op == "softmax" else 2, scale=4.0)
    got = getattr(ops, op)(x, stable=stable, **_out_kw(out))
    ref = ref_softmax if op == "softmax" else ref_log_softmax
    _assert_same_bits(got, ref(x, out=out, stable=stable))


def test_softmax_other_axis_and_3d():
    x = _data((3, 7, 5), F16, 11, scale=4.0)
    got = ops.softmax(x, axis=1, out="fp32")
    want = np.moveaxis(ref_softmax(np.moveaxis(x, 1, -1), out="fp32"), -1, 1)
    _assert_same_bits(got, want)


def test_softmax_bf16_in_bf16_out():
    x = _data((4, 29), BF16, 12, scale=6.0)
    _assert_same_bits(ops.softmax(x), ref_softmax(x))


def test_softmax_large_spread_underflows_like_the_oracle():
    # exp of very negative differences is subnormal or zero in FP32
    x = np.array([[0.0, -80.0, -90.0, -100.0, -103.5, -104.0, -110.0, -150.0, 5.0]], F16)
    got = ops.softmax(x, out="fp32")
    _assert_same_bits(got, ref_softmax(x, out="fp32"))


@pytest.mark.parametrize("out", OUTS)
@pytest.mark.parametrize("affine", ["none", "weight", "bias", "both"])
@pytest.mark.parametrize("variance", ["two_pass", "one_pass"])
def test_layer_norm_fp16_in_fp32_steps(variance, affine, out):
    x = _data((6, 37), F16, 3, scale=2.0) + F16(5.0)   # a mean away from 0: one_pass cancels
    w = _data((37,), F16, 4, scale=1.0) if affine in ("weight", "both") else None
    b = _data((37,), F16, 5, scale=1.0) if affine in ("bias", "both") else None
    got = ops.layer_norm(x, w, b, variance=variance, **_out_kw(out))
    _assert_same_bits(got, ref_layer_norm(x, w, b, out=out, variance=variance))


def test_layer_norm_eps_keyword():
    x = _data((4, 16), F16, 6, scale=0.01)
    got = ops.layer_norm(x, eps=1e-3, out="fp32")
    _assert_same_bits(got, ref_layer_norm(x, out="fp32", eps=1e-3))


@pytest.mark.parametrize("out", OUTS)
@pytest.mark.parametrize("weighted", [False, True])
def test_rms_norm_fp16_in_fp32_steps(weighted, out):
    x = _data((6, 37), F16, 7, scale=2.0)
    w = _data((37,), F16, 8, scale=1.0) if weighted else None
    got = ops.rms_norm(x, w, **_out_kw(out))
    _assert_same_bits(got, ref_rms_norm(x, w, out=out))


def test_rms_norm_eps_keyword():
    x = _data((4, 16), F16, 9, scale=0.001)
    _assert_same_bits(ops.rms_norm(x, eps=1e-4, out="fp32"),
                      ref_rms_norm(x, out="fp32", eps=1e-4))


def _activation_data(seed):
    x = _data((6, 37), F16, seed, scale=4.0).ravel()
    x[:12] = [0.0, -0.0, 1.0, -1.0, 11.0, -11.0, 20.0, -20.0, 90.0, -90.0, 6e-5, -3e-7]
    return x.reshape(6, 37)


@pytest.mark.parametrize("out", OUTS)
def test_sigmoid_fp16_in_fp32_steps(out):
    x = _activation_data(10)
    _assert_same_bits(ops.sigmoid(x, **_out_kw(out)), ref_sigmoid(x, out=out))


@pytest.mark.parametrize("out", OUTS)
def test_silu_fp16_in_fp32_steps(out):
    x = _activation_data(11)
    _assert_same_bits(ops.silu(x, **_out_kw(out)), ref_silu(x, out=out))


@pytest.mark.parametrize("out", OUTS)
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_fp16_in_fp32_steps(approximate, out):
    x = _activation_data(12)
    got = ops.gelu(x, approximate=approximate, **_out_kw(out))
    _assert_same_bits(got, ref_gelu(x, out=out, approximate=approximate))


def test_gelu_default_is_erf_form():
    x = _activation_data(13)
    _assert_same_bits(ops.gelu(x), ref_gelu(x, approximate="none"))


@pytest.mark.parametrize("out", OUTS)
def test_relu(out):
    x = np.array([1.5, -1.5, 0.0, -0.0, np.inf, -np.inf, np.nan, 6e-8, -6e-8, 65504.0], F16)
    got = ops.relu(x, **_out_kw(out))
    od = DT[out] if out else F16
    want = np.array([1.5, 0.0, 0.0, 0.0, np.inf, 0.0, np.nan, 6e-8, 0.0, 65504.0], F16).astype(od)
    assert got.dtype == od
    ok = ~np.isnan(want)
    _assert_same_bits(got[ok], want[ok])      # every zero is +0
    assert np.isnan(got[6])


@pytest.mark.parametrize("out", OUTS)
@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
def test_mse_loss_fp16_in_fp32_steps(reduction, out):
    p = _data((6, 37), F16, 14, scale=3.0)
    t = _data((6, 37), F16, 15, scale=3.0)
    got = ops.mse_loss(p, t, reduction=reduction, **_out_kw(out))
    _assert_same_bits(got, ref_mse(p, t, reduction, out=out))


def test_mse_loss_default_is_mean():
    p = _data((5, 9), F16, 16)
    t = _data((5, 9), F16, 17)
    _assert_same_bits(ops.mse_loss(p, t), ref_mse(p, t, "mean"))


@pytest.mark.parametrize("out", OUTS)
@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
def test_cross_entropy_fp16_in_fp32_steps(reduction, out):
    logits = _data((6, 37), F16, 18, scale=4.0)
    target = np.random.default_rng(19).integers(0, 37, 6)
    target[0], target[1] = 0, 36
    got = ops.cross_entropy(logits, target, reduction=reduction, **_out_kw(out))
    _assert_same_bits(got, ref_cross_entropy(logits, target, reduction, out=out))


def test_cross_entropy_default_is_mean():
    logits = _data((5, 11), F16, 20, scale=4.0)
    target = np.array([0, 3, 10, 5, 5])
    _assert_same_bits(ops.cross_entropy(logits, target),
                      ref_cross_entropy(logits, target, "mean"))


# -- 1b. FP16 compute and accumulate ------------------------------------------------------

# The oracles now take every step in numpy float16 and the elementary
# functions from MPFR emulating FP16.

@pytest.mark.parametrize("out", OUTS)
@pytest.mark.parametrize("stable", [True, False])
def test_softmax_fp16_steps(stable, out):
    x = _data((6, 37), F16, 21, scale=2.0)   # small enough that the naive FP16 sum is finite
    got = ops.softmax(x, stable=stable, compute="fp16", accumulate="fp16", **_out_kw(out))
    _assert_same_bits(got, ref_softmax(x, "fp16", "fp16", out=out, stable=stable))


@pytest.mark.parametrize("out", OUTS)
def test_log_softmax_fp16_steps(out):
    x = _data((6, 37), F16, 22, scale=4.0)
    got = ops.log_softmax(x, compute="fp16", accumulate="fp16", **_out_kw(out))
    _assert_same_bits(got, ref_log_softmax(x, "fp16", "fp16", out=out))


@pytest.mark.parametrize("out", OUTS)
@pytest.mark.parametrize("affine", [False, True])
@pytest.mark.parametrize("variance", ["two_pass", "one_pass"])
def test_layer_norm_fp16_steps(variance, affine, out):
    x = _data((6, 37), F16, 23, scale=2.0) + F16(1.0)
    w = _data((37,), F16, 24, scale=1.0) if affine else None
    b = _data((37,), F16, 25, scale=1.0) if affine else None
    got = ops.layer_norm(x, w, b, variance=variance, compute="fp16", accumulate="fp16",
                         **_out_kw(out))
    _assert_same_bits(got, ref_layer_norm(x, w, b, "fp16", "fp16", out=out, variance=variance))


def test_fp16_compute_with_fp32_accumulate_layer_norm_and_softmax():
    x = _data((6, 37), F16, 26, scale=2.0)
    _assert_same_bits(ops.layer_norm(x, compute="fp16", accumulate="fp32"),
                      ref_layer_norm(x, None, None, "fp16", "fp32"))
    _assert_same_bits(ops.softmax(x, compute="fp16", accumulate="fp32"),
                      ref_softmax(x, "fp16", "fp32"))


def test_rms_norm_fp16_steps():
    x = _data((6, 37), F16, 27, scale=2.0)
    _assert_same_bits(ops.rms_norm(x, compute="fp16", accumulate="fp16"),
                      ref_rms_norm(x, None, "fp16", "fp16"))


@pytest.mark.parametrize("fn", ["sigmoid", "silu", "gelu", "gelu_tanh"])
def test_activations_fp16_steps(fn):
    # erf / tanh / exp now from MPFR emulating FP16
    x = _activation_data(28)
    if fn == "sigmoid":
        got, want = ops.sigmoid(x, compute="fp16"), ref_sigmoid(x, "fp16")
    elif fn == "silu":
        got, want = ops.silu(x, compute="fp16"), ref_silu(x, "fp16")
    else:
        a = "tanh" if fn == "gelu_tanh" else "none"
        got, want = ops.gelu(x, approximate=a, compute="fp16"), ref_gelu(x, "fp16", approximate=a)
    _assert_same_bits(got, want)


def test_mse_and_cross_entropy_fp16_steps():
    p, t = _data((4, 33), F16, 29), _data((4, 33), F16, 30)
    for r in ("none", "sum", "mean"):
        _assert_same_bits(ops.mse_loss(p, t, reduction=r, compute="fp16", accumulate="fp16"),
                          ref_mse(p, t, r, "fp16", "fp16"))
    target = np.array([0, 32, 7, 7])
    for r in ("none", "sum", "mean"):
        _assert_same_bits(ops.cross_entropy(p, target, reduction=r, compute="fp16",
                                            accumulate="fp16"),
                          ref_cross_entropy(p, target, r, "fp16", "fp16"))


def test_special_values_follow_the_literal_steps():
    # +-inf through the declared steps (numpy oracle: IEEE specials):
    # gelu(-inf) = (-inf * 0.5) * (1 + erf(-inf)) = -inf * 0 = NaN, silu(-inf) =
    # -inf * (1 / (1 + inf)) = -inf * 0 = NaN; sigmoid(+-inf) = 1, 0.
    x = np.array([np.inf, -np.inf, 0.0, -0.0, 65504.0, -65504.0], F16)
    _assert_same_bits(ops.sigmoid(x), ref_sigmoid(x))
    _assert_same_bits(ops.silu(x), ref_silu(x))
    _assert_same_bits(ops.gelu(x), ref_gelu(x))
    _assert_same_bits(ops.gelu(x, approximate="tanh"), ref_gelu(x, approximate="tanh"))
    assert _bits(ops.gelu(x[1:2])).item() == DEFAULT_NAN[F16]
    assert _bits(ops.silu(x[1:2])).item() == DEFAULT_NAN[F16]


def test_softmax_rows_with_infinities():
    ninf, inf = -np.inf, np.inf
    x = np.array([[ninf, 0.0, 1.0, ninf],        # exp(-inf) = 0
                  [ninf, ninf, ninf, ninf],      # m = -inf: -inf - -inf = NaN
                  [inf, 0.0, 1.0, 2.0]], F16)    # inf - inf = NaN: the row's sum NaN
    got = ops.softmax(x, out="fp32")
    _assert_same_bits(got, ref_softmax(x, out="fp32"))
    assert np.all(np.isnan(got[1:]))
    _assert_same_bits(ops.log_softmax(x[:1]), ref_log_softmax(x[:1]))


def test_weight_and_bias_of_another_format_are_converted_to_compute():
    x = _data((4, 19), F16, 60)
    w = (1.0 + _data((19,), F32, 61, scale=0.1)).astype(F32)   # not FP16 values
    b = _data((19,), F32, 62, scale=0.1)
    _assert_same_bits(ops.layer_norm(x, w, b, out="fp32"), ref_layer_norm(x, w, b, out="fp32"))
    _assert_same_bits(ops.rms_norm(x, w), ref_rms_norm(x, w))
    # compute fp16: the FP32 weight is rounded into FP16 first
    _assert_same_bits(ops.layer_norm(x, w, b, compute="fp16", accumulate="fp16"),
                      ref_layer_norm(x, w, b, "fp16", "fp16"))


@pytest.mark.parametrize("loss", ["mse_loss", "cross_entropy"])
@pytest.mark.parametrize("reduction", ["sum", "mean"])
def test_loss_reductions_go_from_accumulate_straight_to_out(reduction, loss):
    # Spec: "sum": sum_A -> O; "mean": (sum_A / N in A) -> O; no rounding
    # through C.  With C = FP16 narrower than A = O = FP32 a detour through
    # C would round the FP32 sum to 11 bits.
    p, t = _data((4, 33), F16, 63), _data((4, 33), F16, 64)
    kw = dict(compute="fp16", accumulate="fp32", out="fp32")
    if loss == "mse_loss":
        _assert_same_bits(ops.mse_loss(p, t, reduction=reduction, **kw),
                          ref_mse(p, t, reduction, "fp16", "fp32", "fp32"))
    else:
        target = np.array([0, 32, 7, 7])
        _assert_same_bits(ops.cross_entropy(p, target, reduction=reduction, **kw),
                          ref_cross_entropy(p, target, reduction, "fp16", "fp32", "fp32"))


def test_loss_sum_beyond_the_compute_range():
    # sum_A = 4 * 33 * 100**2 = 1320000 > 65504: finite in A = O = FP32
    p, t = np.full((4, 33), 100.0, F16), np.zeros((4, 33), F16)
    got = ops.mse_loss(p, t, reduction="sum", compute="fp16", accumulate="fp32", out="fp32")
    assert float(got) == 1320000.0


def test_the_count_is_rounded_into_accumulate():
    # N = 2051 is not an FP16 value: in A = FP16 the divisor is 2052.
    assert float(F16(2051)) == 2052.0
    x = _data((2, 2051), F16, 65, scale=0.01) + F16(0.5)
    h = dict(compute="fp16", accumulate="fp16")
    _assert_same_bits(ops.layer_norm(x, **h), ref_layer_norm(x, None, None, "fp16", "fp16"))
    _assert_same_bits(ops.rms_norm(x, **h), ref_rms_norm(x, None, "fp16", "fp16"))
    p, t = x[:, :2051], np.zeros((1, 2051), F16)
    _assert_same_bits(ops.mse_loss(p[:1], t, **h), ref_mse(p[:1], t, "mean", "fp16", "fp16"))


def _flush(a):
    """ftz: a subnormal result becomes a zero of its sign."""
    a = np.asarray(a)
    tiny = np.abs(a.astype(np.float64)) < float(np.finfo(a.dtype).tiny)
    return np.where(tiny, np.copysign(np.zeros((), a.dtype), a), a).astype(a.dtype)


@pytest.mark.parametrize("out", OUTS)
def test_softmax_ftz_flushes_each_steps_tiny_results(out):
    x = np.array([[0.0, -80.0, -90.0, -100.0, -103.5, -104.0, -3.0, -20.0, 5.0],
                  [0.0, -9.0, -10.0, -11.0, -12.0, -13.0, -14.0, -15.0, -16.0]], F16)
    xc = x.astype(F32)
    with np.errstate(all="ignore"):
        d = _flush((xc - xc.max(axis=-1, keepdims=True)).astype(F32))
        e = _flush(mp("exp", d, "fp32"))                      # MPFR exp, then flushed
        acc = np.zeros(2, F32)
        for k in range(x.shape[1]):
            acc = _flush((acc + e[:, k]).astype(F32))
        y = _flush((e / acc[:, None]).astype(F32))
        want = _flush(y.astype(DT[out] if out else F16))
    assert np.any(mp("exp", d, "fp32")[0] != e[0])           # something was flushed
    _assert_same_bits(ops.softmax(x, ftz=True, **_out_kw(out)), want)


# -- 1c. orders, codes, shapes -------------------------------------------------------------

pairwise_sum = quiet(pairwise_sum)


def test_softmax_and_rms_norm_pairwise_order(monkeypatch):
    x = _data((5, 37), F16, 40, scale=2.0)
    with monkeypatch.context() as m:
        m.setitem(globals(), "seq_sum", pairwise_sum)   # the oracles' running sum, as a tree
        want_sm = ref_softmax(x, "fp16", "fp16")
        want_rms = ref_rms_norm(x, None, "fp16", "fp16")
    _assert_same_bits(ops.softmax(x, compute="fp16", accumulate="fp16", order="pairwise"),
                      want_sm)
    _assert_same_bits(ops.rms_norm(x, compute="fp16", accumulate="fp16", order="pairwise"),
                      want_rms)


def test_codes_in_codes_out():
    x = _data((3, 17), F16, 41)
    got = ops.softmax(x.view(np.uint16), fmt="fp16")
    assert got.dtype == np.uint16
    _assert_same_bits(got.view(F16), ref_softmax(x))
    got = ops.layer_norm(x.view(np.uint16), fmt="fp16", out="fp32")
    assert got.dtype == np.uint32
    _assert_same_bits(got.view(F32), ref_layer_norm(x, out="fp32"))


def test_one_dimensional_inputs():
    x = _data((23,), F16, 42)
    _assert_same_bits(ops.softmax(x), ref_softmax(x))
    _assert_same_bits(ops.layer_norm(x), ref_layer_norm(x))
    _assert_same_bits(ops.rms_norm(x), ref_rms_norm(x))


# -- 1d. directed rounding: every step in MPFR --------------------------------------------

# Under rounding= every step rounds in that mode.  numpy only rounds to
# nearest, so this oracle takes every step (+, -, *, /, exp, log, rec_sqrt,
# the conversions) in MPFR contexts emulating the formats (correctly rounded
# in the mode); the data keeps every value far from overflow (MPFR's
# exponent range is unbounded above: checked in ``_to_numpy``).

def _ctx(fmt, mode):
    return mpfr_emulating(SPECS[fmt], mode)


def _to_numpy(vals, fmt):
    spec = SPECS[fmt]
    out = []
    for v in vals:
        assert gmpy2.is_finite(v) and abs(v) <= spec.max, v
        out.append(float(v))        # exact: v has the format's precision
    return np.array(out, np.float64).astype(DT[fmt])


def _mp_sum(terms, ca):
    acc = gmpy2.mpfr(0)
    for t in terms:
        acc = ca.add(acc, ca.mul(t, 1))      # convert the term to A, then add in A
    return acc


def mp_softmax(x, mode, C, A, out, log=False):
    cc, ca, co = _ctx(C, mode), _ctx(A, mode), _ctx(out, mode)
    rows = []
    for row in x.reshape(-1, x.shape[-1]):
        xc = [cc.mul(gmpy2.mpfr(float(v)), 1) for v in row]
        m = max(xc)
        d = [cc.sub(v, m) for v in xc]
        e = [cc.exp(v) for v in d]
        s = cc.mul(_mp_sum(e, ca), 1)
        y = [cc.sub(v, cc.log(s)) for v in d] if log else [cc.div(v, s) for v in e]
        rows.append(_to_numpy([co.mul(v, 1) for v in y], out))
    return np.stack(rows).reshape(x.shape)


def mp_layer_norm(x, w, b, mode, C, A, out, eps=1e-5, rms=False):
    cc, ca, co = _ctx(C, mode), _ctx(A, mode), _ctx(out, mode)
    n = ca.mul(gmpy2.mpfr(x.shape[-1]), 1)
    eps_c = cc.mul(gmpy2.mpfr(eps), 1)       # the Python float eps into C, in the mode
    rows = []
    for row in x.reshape(-1, x.shape[-1]):
        xc = [cc.mul(gmpy2.mpfr(float(v)), 1) for v in row]
        if rms:
            d = xc
        else:
            mu = cc.mul(ca.div(_mp_sum(xc, ca), n), 1)
            d = [cc.sub(v, mu) for v in xc]
        var = cc.mul(ca.div(_mp_sum([cc.mul(v, v) for v in d], ca), n), 1)
        r = cc.rec_sqrt(cc.add(var, eps_c))
        y = [cc.mul(v, r) for v in d]
        if w is not None:
            y = [cc.mul(v, cc.mul(gmpy2.mpfr(float(wi)), 1)) for v, wi in zip(y, w)]
        if b is not None:
            y = [cc.add(v, cc.mul(gmpy2.mpfr(float(bi)), 1)) for v, bi in zip(y, b)]
        rows.append(_to_numpy([co.mul(v, 1) for v in y], out))
    return np.stack(rows).reshape(x.shape)


def test_mpfr_oracle_agrees_with_numpy_oracle_in_rne():
    # The two oracles check each other where both apply (rne).
    x = _data((3, 37), F16, 50, scale=3.0)
    w, b = _data((37,), F16, 51), _data((37,), F16, 52)
    _assert_same_bits(mp_softmax(x, "rne", "fp32", "fp32", "fp16"), ref_softmax(x))
    _assert_same_bits(mp_softmax(x, "rne", "fp16", "fp16", "fp16", log=True),
                      ref_log_softmax(x, "fp16", "fp16"))
    _assert_same_bits(mp_layer_norm(x, w, b, "rne", "fp32", "fp32", "fp32"),
                      ref_layer_norm(x, w, b, out="fp32"))
    _assert_same_bits(mp_layer_norm(x, None, None, "rne", "fp16", "fp16", "fp16", rms=True,
                                    eps=1e-6), ref_rms_norm(x, None, "fp16", "fp16"))


CA = [("fp32", "fp32"), ("fp16", "fp16"), ("fp16", "fp32")]


@pytest.mark.parametrize("C,A", CA)
@pytest.mark.parametrize("mode", ["rtz", "rup", "rdn"])
def test_softmax_and_log_softmax_directed_rounding(mode, C, A):
    x = _data((3, 37), F16, 53, scale=3.0)
    _assert_same_bits(ops.softmax(x, rounding=mode, compute=C, accumulate=A),
                      mp_softmax(x, mode, C, A, "fp16"))
    _assert_same_bits(ops.log_softmax(x, rounding=mode, compute=C, accumulate=A, out="fp32"),
                      mp_softmax(x, mode, C, A, "fp32", log=True))


@pytest.mark.parametrize("C,A", CA)
@pytest.mark.parametrize("mode", ["rtz", "rup", "rdn"])
def test_layer_norm_and_rms_norm_directed_rounding(mode, C, A):
    x = _data((3, 37), F16, 54, scale=2.0) + F16(1.0)
    w, b = _data((37,), F16, 55), _data((37,), F16, 56)
    _assert_same_bits(ops.layer_norm(x, w, b, rounding=mode, compute=C, accumulate=A),
                      mp_layer_norm(x, w, b, mode, C, A, "fp16"))
    _assert_same_bits(ops.rms_norm(x, w, rounding=mode, compute=C, accumulate=A, out="fp32"),
                      mp_layer_norm(x, w, None, mode, C, A, "fp32", eps=1e-6, rms=True))


def test_rounding_from_a_context():
    x = _data((3, 37), F16, 57, scale=3.0)
    ctx = fpsim.Context(rounding="rtz")
    _assert_same_bits(ops.softmax(x, ctx=ctx), mp_softmax(x, "rtz", "fp32", "fp32", "fp16"))


# -- 2. failure stories ------------------------------------------------------------------------

def test_fp16_layer_norm_eps_is_subnormal_and_ftz_daz_make_nan():
    x = np.full((2, 64), 3.0, F16)
    h = dict(compute="fp16", accumulate="fp16")
    assert _bits(F16(1e-5)).item() == 0x00A8          # 1e-5 is an FP16 subnormal
    # IEEE subnormals: var = 0, v = eps (subnormal), rsqrt(v) ~ 316, d * r = +0
    y = ops.layer_norm(x, eps=1e-5, **h)
    assert y.dtype == F16
    assert np.all(_bits(y) == 0)
    # eps flushed (daz: read as 0; ftz: converted to 0): rsqrt(0) = inf, 0 * inf = NaN
    for flush in ({"daz": True}, {"ftz": True}, {"ftz": True, "daz": True}):
        y = ops.layer_norm(x, eps=1e-5, **h, **flush)
        assert np.all(_bits(y) == DEFAULT_NAN[F16]), (flush, _bits(y))
    # The fixes: a normal FP16 eps (>= 2**-14 = 6.1035e-05) ...
    assert 6.2e-5 >= 2.0**-14
    for flush in ({"ftz": True}, {"daz": True}, {"ftz": True, "daz": True}):
        y = ops.layer_norm(x, eps=6.2e-5, **h, **flush)
        assert np.all(_bits(y) == 0), flush
        # ... or FP32 compute, where 1e-5 is normal
        for acc in ("fp16", "fp32"):
            y = ops.layer_norm(x, eps=1e-5, compute="fp32", accumulate=acc, **flush)
            assert np.all(np.isfinite(y)) and np.all(_bits(y) == 0), (flush, acc)


def _logits_with(top):
    row = np.array([top, 2.0, -1.0, 0.5, 3.0, -4.0, 1.0, 0.0], F16)
    return np.stack([row, row[::-1], np.roll(row, 3)])


def test_fp16_naive_softmax_overflows_to_nan_and_max_subtraction_fixes_it():
    h = dict(compute="fp16", accumulate="fp16")
    x12 = _logits_with(12.0)
    naive = ops.softmax(x12, stable=False, **h)
    # exp(12) = 162754.8 > 65504: inf in FP16; the sum is inf; inf / inf = NaN
    assert np.isnan(naive).sum() == 3                     # one per row, where the 12 is
    assert np.all(_bits(naive[x12 == 12.0]) == DEFAULT_NAN[F16])
    assert np.all(_bits(naive[x12 != 12.0]) == 0)         # finite / inf = +0
    _assert_same_bits(naive, ref_softmax(x12, "fp16", "fp16", stable=False))
    # logits <= 11: exp(11) = 59874 fits, so does the sum here
    x11 = _logits_with(11.0)
    naive11 = ops.softmax(x11, stable=False, **h)
    assert np.all(np.isfinite(naive11))
    _assert_same_bits(naive11, ref_softmax(x11, "fp16", "fp16", stable=False))
    # the fix: subtract the row maximum
    fixed = ops.softmax(x12, stable=True, **h)
    assert np.all(np.isfinite(fixed))
    np.testing.assert_allclose(fixed.astype(np.float64).sum(axis=-1), 1.0, atol=1e-2)
    _assert_same_bits(fixed, ref_softmax(x12, "fp16", "fp16", stable=True))


def test_fp16_sum_of_squares_overflows_above_256():
    x = np.full((2, 64), 300.0, F16)          # 300**2 = 90000 > 65504
    h = dict(compute="fp16", accumulate="fp16")
    # rms: sum of squares inf, rsqrt(inf + eps) = +0, y = 300 * 0 = 0: wrong
    y = ops.rms_norm(x, **h)
    assert np.all(_bits(y) == 0)
    _assert_same_bits(y, ref_rms_norm(x, None, "fp16", "fp16"))
    # one_pass layer_norm: E[x^2] = inf, mu*mu = inf, inf - inf = NaN
    y = ops.layer_norm(x, variance="one_pass", **h)
    assert np.all(_bits(y) == DEFAULT_NAN[F16])
    _assert_same_bits(y, ref_layer_norm(x, None, None, "fp16", "fp16", variance="one_pass"))
    # the fix: FP32 compute and accumulate
    y = ops.rms_norm(x, compute="fp32", accumulate="fp32")
    np.testing.assert_allclose(y.astype(np.float64), 1.0, rtol=1e-3)
    _assert_same_bits(y, ref_rms_norm(x))
    y = ops.layer_norm(x, variance="one_pass", compute="fp32", accumulate="fp32")
    assert np.all(_bits(y) == 0)
    _assert_same_bits(y, ref_layer_norm(x, variance="one_pass"))


# -- 3. bad input ----------------------------------------------------------------------------

def _raises_naming(names, fn, *args, **kw):
    with pytest.raises(ValueError) as info:
        fn(*args, **kw)
    msg = str(info.value)
    for name in names:
        assert name in msg, (name, msg)


def test_unknown_names_are_rejected_with_the_accepted_ones():
    x = _data((2, 8), F16, 30)
    _raises_naming(["two_pass", "one_pass"], ops.layer_norm, x, variance="three_pass")
    _raises_naming(["none", "tanh"], ops.gelu, x, approximate="fast")
    _raises_naming(["none", "sum", "mean"], ops.mse_loss, x, x, reduction="avg")
    _raises_naming(["none", "sum", "mean"], ops.cross_entropy, x, np.array([0, 1]),
                   reduction="avg")


def test_weight_and_bias_shapes_must_match_the_last_axis():
    x = _data((2, 8), F16, 31)
    with pytest.raises(ValueError):
        ops.layer_norm(x, np.ones(7, F16))
    with pytest.raises(ValueError):
        ops.layer_norm(x, np.ones(8, F16), np.ones(9, F16))
    with pytest.raises(ValueError):
        ops.rms_norm(x, np.ones(16, F16))


@pytest.mark.parametrize("target", [[0, 8], [-1, 0], [0, 1, 2], [[0], [1]], [0]])
def test_cross_entropy_target_out_of_range_or_misshapen(target):
    logits = _data((2, 8), F16, 32)
    with pytest.raises(ValueError):
        ops.cross_entropy(logits, np.array(target))


def test_mse_loss_shapes_must_match():
    with pytest.raises(ValueError):
        ops.mse_loss(np.zeros((2, 8), F16), np.zeros((2, 7), F16))
    with pytest.raises(ValueError):
        ops.mse_loss(np.zeros((2, 8), F16), np.zeros((8,), F16))


# -- 4. flags ----------------------------------------------------------------------------------

def test_naive_fp16_softmax_overflow_raises_the_flags():
    ctx = fpsim.Context()
    y = ops.softmax(_logits_with(12.0), ctx=ctx, stable=False, compute="fp16",
                    accumulate="fp16")
    assert np.isnan(y).any()
    assert fpsim.Flag.OVERFLOW in ctx.flags
    assert fpsim.Flag.INVALID in ctx.flags            # inf / inf
    ok = fpsim.Context()
    ops.softmax(_logits_with(12.0), ctx=ok, compute="fp16", accumulate="fp16")
    assert fpsim.Flag.OVERFLOW not in ok.flags
    assert fpsim.Flag.INVALID not in ok.flags


def test_fp16_sum_of_squares_overflow_raises_overflow():
    ctx = fpsim.Context()
    ops.rms_norm(np.full((1, 64), 300.0, F16), ctx=ctx, compute="fp16", accumulate="fp16")
    assert fpsim.Flag.OVERFLOW in ctx.flags
    ok = fpsim.Context()
    ops.rms_norm(np.full((1, 64), 300.0, F16), ctx=ok)
    assert fpsim.Flag.OVERFLOW not in ok.flags


def test_layer_norm_daz_nan_raises_invalid():
    ctx = fpsim.Context(daz=True)
    y = ops.layer_norm(np.full((1, 64), 3.0, F16), ctx=ctx, compute="fp16", accumulate="fp16")
    assert np.all(np.isnan(y))
    assert fpsim.Flag.INVALID in ctx.flags            # 0 * inf
