"""Hostile input, round 2 (issue 31): time bombs (class 6) and degenerate
shapes of the matrix units (class 7).  Cost is bounded by the size of the
data, never by the magnitude of a number or a length with no data behind
it; K = 0 gives d = c; every parameter error is a TypeError/ValueError
naming the parameter."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from decimal import Decimal

import numpy as np
import pytest

import fpsim.mma as mma
from fpsim import quant

F16 = np.float16


def _within(seconds: float, code: str) -> str:
    """Run ``code`` in a fresh interpreter; fail if it takes longer."""
    try:
        done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                              text=True, timeout=seconds)
    except subprocess.TimeoutExpired:
        pytest.fail(f"did not return within {seconds} s:\n{code}")
    assert done.returncode == 0, done.stderr
    return done.stdout


# -- class 6: time bombs -------------------------------------------------------------------


def test_huge_decimals_round_to_an_integer_format_at_once():
    out = _within(60, """
        from decimal import Decimal
        from fpsim import quant
        for x in ("1e999999999", "-1e999999999", "1e-999999999", "-1e-999999999"):
            print(x, [quant.INT8.round(Decimal(x), m) for m in ("rne", "rup", "rdn", "rto")],
                  quant.INT4.round(Decimal(x), "sr", rand=2**32 - 1))
    """)
    assert out.split("\n")[:4] == [
        "1e999999999 [127, 127, 127, 127] 7",
        "-1e999999999 [-128, -128, -128, -128] -8",
        "1e-999999999 [0, 1, 0, 1] 0",
        "-1e-999999999 [0, 0, -1, -1] 0",
    ]


def test_a_huge_decimal_bound_of_a_strategy_is_read_at_once():
    out = _within(60, """
        from decimal import Decimal
        import fpsim, fpsim.strategies as st
        print(st.values(fpsim.FP16, min_value=Decimal("1e999999999")).example(),
              st.values(fpsim.FP16, max_value=Decimal("-1e999999999")).example())
    """)
    assert out.split() == ["inf", "-inf"]


def test_decimals_read_through_fpsim_parse_round_as_their_exact_values():
    from fractions import Fraction

    for x in ("1e400", "-1e-400", "123e-45", "-2.5", "0.5"):
        for mode in ("rne", "rup", "rdn", "rna"):
            assert quant.INT8.round(Decimal(x), mode) == quant.INT8.round(Fraction(Decimal(x)),
                                                                          mode)


def test_a_chain_over_zero_rows_runs_no_block_whatever_k():
    out = _within(60, """
        import numpy as np, fpsim.mma as mma
        m = mma.preset("h100", "fp16")
        print(m(np.zeros((0, 10**7), np.float16), np.zeros((0, 10**7), np.float16),
                chain=True).shape)
    """)
    assert out.strip() == "(0,)"


# -- class 7: degenerate shapes and parameters of the matrix units -------------------------


def test_k_zero_gives_c():
    m = mma.preset("h100", "fp16")
    c = np.float32([1.5, -0.0, 3.0])
    d = m(np.zeros((3, 0), F16), np.zeros((3, 0), F16), c)
    assert d.dtype == np.float32 and np.array_equal(d.view(np.uint32), c.view(np.uint32))
    assert m(np.zeros((2, 3, 0), F16), np.zeros((2, 3, 0), F16)).tolist() == [[0.0] * 3] * 2
    amd = mma.preset("mi300x", "fp16")
    assert amd(np.zeros((1, 0), F16), np.zeros((1, 0), F16), np.float32([2.0]),
               chain=True).tolist() == [2.0]
    g = mma.cublas("h100", "fp16")
    assert g(np.zeros((2, 0), F16), np.zeros((0, 3), F16),
             np.ones((2, 3), np.float32)).tolist() == [[1.0] * 3] * 2


@pytest.mark.parametrize("call, exc, words", [
    (lambda m, a: m(a, a, 10**400), ValueError, "c="),
    (lambda m, a: m(a, a, -(10**400)), ValueError, "c="),
    (lambda m, a: m(a, a, chain="yes"), TypeError, "chain"),
    (lambda m, a: m(a, a, chain=None), TypeError, "chain"),
    (lambda m, a: mma.cublas("h100", "fp16")(a[:, :2], a[:2], alpha=10**400), ValueError,
     "alpha"),
    (lambda m, a: mma.cublas("h100", "fp16")(a[:, :2], a[:2], scheduler=5), TypeError,
     "scheduler"),
    (lambda m, a: mma.cublas("h100", "fp16")(a[:, :2], a[:2], workers=0), ValueError,
     "workers"),
], ids=["c-huge", "c-huge-negative", "chain-str", "chain-none", "alpha-huge",
        "scheduler-int", "workers-0"])
def test_parameters_of_the_matrix_units_are_refused_by_name(call, exc, words):
    m = mma.preset("h100", "fp16")
    with pytest.raises(exc, match=words):
        call(m, np.ones((3, 4), F16))


def test_alpha_true_is_not_taken_for_one():
    from fpsim import ops

    with pytest.raises(ValueError, match="alpha=True"):
        ops.matmul(np.ones((2, 2), F16), np.ones((2, 2), F16), alpha=True)
