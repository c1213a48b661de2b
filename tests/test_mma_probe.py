"""fpsim.mma.probe: black boxes read back from their outputs.

The key check probes every preset as a black box (only calling it) and
compares what it reads with that preset's own parameters, taken from the
preset table (``preset(...).params``), on the parameters that some input can
tell apart.  Which those are is decided here by hand, from the formats'
ranges, not by the probe's own ``observable``:

* ``min_align_exponent`` (Hopper/Blackwell -133, Blackwell FP16-output -15)
  acts only when every term of a row is below it: products of FP16 (>=
  2**-48) and FP8 (>= 2**-32) never are below -133, and a nonzero FP32 ``c``
  has exponent >= -126; BF16 and TF32 products reach 2**-266, and FP16
  products go below 2**-15.  So it is compared for BF16 and TF32 inputs, and
  for FP16 inputs with FP16 output when the bound is above the lowest FP16
  product bit plus the grid (-48 + 23 + extra_bits); elsewhere the probe
  must say None.
* ``zero_c_at_emin`` (CDNA3) acts only on product sums below 2**-126: BF16
  and TF32 inputs only, and only where a directed normalized cut (MMA-Sim's
  F2 = 31 register, whose exponent is at least -126) does not already cut
  below 2**-126 at least as coarsely as the zero c's alignment (31 <= 23 +
  1 + 8 on MI300X: then it changes nothing).
* ``products_limited`` acts only on products >= 2**(emax+1) of the output
  (2**128 for FP32: BF16 and TF32 only; 2**16 for FP16 output), and not in
  a pairwise unit (whose products are rounded to the output first, which
  overflows the same way).
* ``c_joins`` is compared for ``aligned`` only (fixed for the others, and an
  exact sum does not care); ``late_extra_bits``, ``align_rounding``,
  ``c_dropped_below`` and ``normalized_bits`` only where c joins late;
  ``extra_bits``, ``sticky_bit``, ``normalize_products`` only for aligning
  units.
* ``result_bits=None`` and ``result_bits`` equal to the output's fraction
  bits are the same thing.
"""

from __future__ import annotations

import math

import numpy as np
import probe_kernels as K
import pytest

import fpsim.mma as mma
from fpsim.mma import MMAModel, MMAParams

_WIDE_RANGE = ("bf16", "tf32")
_FRACTION_BITS = {"fp32": 23, "fp16": 10}


def expected(p: MMAParams) -> dict:
    """The parameters of ``p`` a black box shows, by the rules above."""
    out = {"k": p.k, "accumulation": p.accumulation, "rounding": p.rounding,
           "input_subnormals": p.input_subnormals, "output_subnormals": p.output_subnormals}
    aligns = p.accumulation in ("aligned", "odd_even")
    late = p.accumulation == "odd_even" or (p.accumulation == "aligned" and p.c_joins == "last")
    if aligns:
        out.update(extra_bits=p.extra_bits, sticky_bit=p.sticky_bit,
                   normalize_products=p.normalize_products)
        m = p.min_align_exponent
        # FP16 products: exponents >= -28, lowest bit 2**-48, so a bound cuts
        # one only when m - (23 + extra_bits) > -48 (Blackwell's -15: yes).
        fp16_sees = p.input == "fp16" and p.output == "fp16" and m is not None and \
            m - 23 - p.extra_bits > -48
        out["min_align_exponent"] = m if p.input in _WIDE_RANGE or fp16_sees else None
    if p.accumulation == "aligned":
        out["c_joins"] = p.c_joins
    if late:
        out.update(late_extra_bits=p.late_extra_bits, align_rounding=p.align_rounding,
                   c_dropped_below=p.c_dropped_below, normalized_bits=p.normalized_bits)
        nb = p.normalized_bits
        cut_first = nb is not None and p.align_rounding != "rne" and \
            nb <= 23 + p.extra_bits + p.late_extra_bits
        if p.input in _WIDE_RANGE and not cut_first:
            out["zero_c_at_emin"] = p.zero_c_at_emin
    if p.accumulation != "pairwise":
        if p.input in _WIDE_RANGE or p.output == "fp16":
            out["products_limited"] = p.products_limited
        r = p.result_bits
        out["result_bits"] = None if r == _FRACTION_BITS[p.output] else r
    return out


def found(p: MMAParams, like: dict) -> dict:
    """The same keys, read from the probe's parameters."""
    d = p.as_dict()
    got = {key: d[key] for key in like}
    if "result_bits" in got and got["result_bits"] == _FRACTION_BITS[p.output]:
        got["result_bits"] = None
    return got


#: The aligned units (the probe reads their parameters; an FMA chain,
#: fpsim.mma.fmachain, has none of them).
ALIGNED = [k for k in mma.presets() if isinstance(mma.preset(*k), mma.MMAModel)]


@pytest.mark.parametrize("gpu, fmt, out", ALIGNED)
def test_probing_a_preset_recovers_its_own_parameters_and_names_it(gpu, fmt, out):
    model = mma.preset(gpu, fmt, out)
    calls = []

    def black_box(a, b, c):  # the probe sees nothing but calls
        calls.append(a.shape)
        return model(a, b, c)

    r = mma.probe(black_box, fmt, out)
    want = expected(model.params)
    assert r.params is not None, str(r)
    assert found(r.params, want) == want, str(r)
    assert r.width == model.issue_k and not r.chained
    assert r.reproduces and r.mismatches == 0
    assert gpu in r.matches
    assert calls[-1][1] == model.issue_k  # after the width search, every call has K = k


def test_presets_with_the_same_observable_parameters_match_together():
    # T4, A100 and Ada FP16 -> FP32 are one parameter set (extra_bits=1, k=8, rtz);
    # H100 and B200 FP16 -> FP32 differ only in what FP16 cannot show.
    r = mma.probe(mma.preset("a100", "fp16"), "fp16")
    assert set(r.matches) == {"t4", "a100", "a2", "a30", "ada", "l40s"}
    r = mma.probe(mma.preset("h100", "fp16"), "fp16")
    assert set(r.matches) == {"h100", "h200", "b200", "rtx-pro-6000"}
    assert r.params.min_align_exponent is None  # -133 is not observable with FP16 inputs


@pytest.mark.parametrize("params", [
    # parameter sets of no GPU: a sticky bit, renormalized products, rounding up
    MMAParams("fp16", "fp32", k=8, extra_bits=3, sticky_bit=True, rounding="rne"),
    MMAParams("fp16", "fp32", k=4, extra_bits=0, normalize_products=True, rounding="rup"),
    MMAParams("bf16", "fp32", k=8, extra_bits=2, rounding="rdn", min_align_exponent=-140),
    MMAParams("fp16", "fp32", k=8, extra_bits=2, c_joins="last", late_extra_bits=3,
              align_rounding="rtz", rounding="rne"),
    MMAParams("e5m2", "fp32", k=16, accumulation="odd_even", extra_bits=0, c_joins="last",
              late_extra_bits=2, align_rounding="rne", rounding="rtz"),
    MMAParams("fp16", "fp16", k=8, accumulation="pairwise", extra_bits=None, c_joins="last",
              rounding="rne"),
    MMAParams("e4m3", "fp32", k=32, extra_bits=-12, result_bits=11),
])
def test_probing_hand_built_parameters_recovers_them_and_matches_no_gpu(params):
    r = mma.probe(MMAModel(params), params.input, params.output)
    want = expected(params)
    assert found(r.params, want) == want, str(r)
    assert r.reproduces
    assert r.matches == []


def fsum_dot(a, b, c):
    """Exact products, exact sum (math.fsum), one rounding to FP32."""
    A, B, C = a.astype(np.float64), b.astype(np.float64), c.astype(np.float64)
    return np.float32([math.fsum(list(A[i] * B[i]) + [C[i]]) for i in range(len(C))])


def test_a_correctly_rounded_dot_is_an_exact_sum_rounded_to_nearest_and_no_gpu():
    r = mma.probe(fsum_dot, "fp16", max_k=16)
    assert r.params.accumulation == "exact" and r.params.rounding == "rne"
    assert r.params.k == 16 and r.width == 16 and not r.chained
    assert r.findings["structure"].value == "exact"
    assert r.reproduces
    assert r.matches == []  # MI100's exact unit has k=4; this one never rounds before K=16
    assert "no unit is ever lost" in r.findings["structure"].how


def test_a_sequential_fp32_loop_is_recovered_as_its_order():
    r = mma.probe(K.fp32_loop, "fp16", max_k=8)
    # ((((c + p0) + p1) + p2) ...): FPRev writes the first addition's leaves in order
    assert r.order == "(((((((" + "(p0 + c) + p1) + p2) + p3) + p4) + p5) + p6) + p7)"
    assert r.findings["structure"].value == "chain" and r.params.k == 1 and r.chained
    assert r.params.accumulation == "exact" and r.params.rounding == "rne"
    assert r.reproduces and r.matches == []
    assert "not one of" not in str(r) and "none of the fp16 -> fp32 presets" in str(r)


def test_an_fp32_chain_with_c_added_after_is_described_not_matched():
    # One FP32 sequential chain of the exact FP16 products, then + C: numpy's
    # elementwise float32 operations in a fixed order (not `@`, whose order is
    # the host BLAS kernel's, which differs between CPUs).
    def gemm(A, B, C):
        A, B = A.astype(np.float32), B.astype(np.float32)
        acc = np.zeros((A.shape[0], B.shape[1]), np.float32)
        for k in range(A.shape[1]):
            acc = acc + A[:, k:k + 1] * B[k:k + 1, :]
        return (acc + C).astype(np.float32)

    r = mma.probe(gemm, "fp16", shape="gemm", max_k=8)
    assert r.params is None and r.matches == []
    assert r.findings["rounding"].value == "rne"
    assert r.order == "((((((((p0 + p1) + p2) + p3) + p4) + p5) + p6) + p7) + c)"


def test_a_gemm_built_on_h100_is_the_h100_instruction_chained():
    r = mma.probe(K.h100_gemm, "fp16", shape="gemm", max_k=48)
    assert r.order == "[[[p0..p15 c] p16..p31] p32..p47]"
    assert r.chained and r.params.k == 16 and r.params.extra_bits == 2
    assert "h100" in r.matches and r.reproduces


def test_findings_keep_the_rows_that_decided_them():
    r = mma.probe(mma.preset("v100", "fp16"), "fp16")
    ev = r.findings["extra_bits"].evidence
    # 23 bits: 2^(e-23) survives beside +-2^e, 2^(e-24) does not (e = 30)
    assert {"input": "p0=2^30, p1=-2^30, p2=128, c=0  (t=23)", "output": "128"} in ev
    assert {"input": "p0=2^30, p1=-2^30, p2=64, c=0  (t=24)", "output": "0"} in ev
    d = r.to_dict()
    assert d["params"]["k"] == 4 and d["findings"]["rounding"]["value"] == "rtz"


def test_one_probe_is_a_few_calls():
    # The probe's cost in calls and rows, not in seconds (a time would depend
    # on the machine): 23 calls of 1,364 rows in all for an H100 E4M3 unit.
    r = mma.probe(mma.preset("h100", "e4m3"), "e4m3")
    assert r.calls <= 30 and r.rows <= 2000


# -- bad input ---------------------------------------------------------------------------


def test_unknown_formats_and_shapes_name_what_is_accepted():
    with pytest.raises(ValueError, match=r"inputs: unknown format 'fp17'; did you mean fp16\?"):
        mma.probe(K.h100_fp16, "fp17")
    with pytest.raises(ValueError, match="out=e4m3; accepted: fp32, fp16, bf16"):
        mma.probe(K.h100_fp16, "fp16", "e4m3")
    with pytest.raises(ValueError, match="shape='cols'; accepted: 'rows', 'gemm'"):
        mma.probe(K.h100_fp16, "fp16", shape="cols")
    with pytest.raises(TypeError, match="fn must be a callable"):
        mma.probe("h100", "fp16")


def test_a_callable_that_raises_is_named_with_the_probe():
    with pytest.raises(mma.ProbeError, match=r"'raises' raised at every K tried "
                       r"\(K=1: RuntimeError: device lost\)"):
        mma.probe(K.raises, "fp16")

    def fails_later(a, b, c):
        if a.shape[0] > 10:
            raise ValueError("too many rows")
        return K.h100_fp16(a, b, c)

    with pytest.raises(mma.ProbeError, match="raised ValueError on the summation order probe.*"
                       "first row: p0=2\\^30, p1=-2\\^30.*too many rows"):
        mma.probe(fails_later, "fp16")


def test_wrong_shapes_and_dtypes_name_the_convention():
    with pytest.raises(ValueError, match=r"returned shape \(1, 2\) on the call width probe "
                       r"where \(1,\) was expected; accepted: fn\(a, b, c\) -> d of shape"):
        mma.probe(K.wrong_shape, "fp16")
    with pytest.raises(TypeError, match="returned dtype float64 on the call width probe; "
                       r"accepted: float32 \(fp32 values\)"):
        mma.probe(K.wrong_dtype, "fp16")


def test_a_callable_that_is_not_a_dot_product_is_refused():
    def doubled(a, b, c):
        return (2 * K.h100_fp16(a, b, c)).astype(np.float32)

    with pytest.raises(mma.ProbeError, match="does not compute a·b \\+ c"):
        mma.probe(doubled, "fp16")


def test_a_pairwise_result_prints():
    """A probe that finds a pairwise tree (which adds c last) prints its
    parameters: the defaults it is compared with are a valid unit (issue 42:
    str() of jnp.dot bf16 -> bf16's result raised MMAParams' ValueError)."""
    from fpsim.mma.probe import _params_text
    p = mma.MMAParams("bf16", "bf16", k=64, accumulation="pairwise", c_joins="last",
                      extra_bits=None)
    text = _params_text(p)
    assert text == "k=64 pairwise rounding=rtz"
    for key in ALIGNED:
        model = mma.preset(*key)
        assert _params_text(model.params).startswith(f"k={model.params.k} ")
