"""The integer path of the array arithmetic: each chunk's operands decoded,
every element's exact result computed as ``(negative, sig, exp, sticky)``
(see :mod:`fpsim.array._kernel`) with uint64/int64 integer arithmetic
(FP64's 106-bit products in two words, :mod:`fpsim.array._int128`), and all
rounded at once through the vectorized kernel; NaN, infinity and invalid
cases follow the scalar rules, case by case, in the same order as
:mod:`fpsim.arith`.  Settings the integers cannot hold are computed by the
scalar model, element by element (:func:`_scalar_chunk`).
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any

import numpy as np

from ..context import Context
from ..formats import Format
from ..modes import STOCHASTIC, Rounding, Tininess
from ..nans import default_nan
from ..rounding import DIVIDE_BY_ZERO, INVALID, infinity_code, p3109_applies
from . import _int128
from ._kernel import I64, U8, U64, bit_length, fields, nan_results, round_values

# The width of the aligned significands of a sum: the larger operand is
# placed at bits 61..(62 - its length), so a sum of two fits an int64.
_WIDTH = 62


def _wide(cs: list[np.ndarray]) -> list[np.ndarray]:
    """Operand codes as uint64, as the integer path computes on them."""
    return [c.astype(U64) for c in cs]


def _scalar_chunk(op: str, fmt: Format, cs: list[np.ndarray], key: tuple[Any, ...],
                  rand: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """The scalar model, element by element (settings the integers cannot hold)."""
    from .. import arith

    mode, saturate, ftz, daz, before, sr_bits, nan, rules = key
    ctx = Context(rounding=mode, saturate=saturate, ftz=ftz, daz=daz, sr_bits=sr_bits, nan=nan,
                  tininess=Tininess.BEFORE if before else Tininess.AFTER, p3109=rules)
    fn = getattr(arith, op)
    make = fmt.from_bits
    n = cs[0].shape[0]
    out = np.empty(n, U64)
    flags = np.empty(n, U8)
    columns = [c.tolist() for c in cs]
    for i in builtins.range(n):
        ctx._flags[0] = 0
        args = [make(col[i]) for col in columns]
        if rand is None:
            r = fn(*args, ctx)
        else:
            r = fn(*args, ctx, random_bits=int(rand[i]))
        out[i] = r.bits
        flags[i] = ctx._flags[0]
    return out, flags


# -- the operations on one chunk ------------------------------------------------------------------

class _Result:
    """One chunk's results under construction: codes and flags, filled case
    by case (NaN operands, invalid operations, infinities, then the finite
    values through the kernel)."""

    def __init__(self, fmt: Format, key: tuple[Any, ...], n: int) -> None:
        self.fmt, self.key = fmt, key
        self.codes = np.zeros(n, U64)
        self.flags = np.zeros(n, U8)

    def nans(self, where: np.ndarray, operands: list[np.ndarray], nans: list[np.ndarray],
             extra: np.ndarray | None = None) -> None:
        """NaN operands propagate by the policy (:func:`fpsim.nans.propagate`)."""
        if where.any():
            code, flags = nan_results(self.fmt, operands, nans, self.key[6])
            if extra is not None:
                flags = flags | np.where(extra, INVALID, 0).astype(U8)
            self.codes[where] = code[where]
            self.flags[where] = flags[where]

    def invalid(self, where: np.ndarray) -> None:
        """Invalid operations give the policy's default NaN."""
        if where.any():
            self.codes[where] = default_nan(self.fmt, self.key[6])
            self.flags[where] = INVALID

    def infinity(self, where: np.ndarray, negative: np.ndarray, computed: int = 0) -> None:
        """Exact infinite results, as :func:`fpsim.arith._infinity`."""
        if not where.any():
            return
        (pos, pos_flags), (neg, neg_flags) = (
            infinity_code(self.fmt, s, self.key[1], computed, self.key[7]) for s in (False, True))
        code = np.where(negative, U64(neg), U64(pos))
        flags = np.where(negative, U8(neg_flags), U8(pos_flags))
        self.codes[where] = np.broadcast_to(code, where.shape)[where]
        self.flags[where] = np.broadcast_to(flags, where.shape)[where]

    def finite(self, where: np.ndarray, negative: np.ndarray, sig: np.ndarray,
               exp: np.ndarray, sticky: np.ndarray | None, rand: np.ndarray | None
               ) -> tuple[np.ndarray, np.ndarray]:
        """Round the exact results (zeros included) and return the chunk."""
        if where.any():
            round_values(self.fmt, negative, sig, exp, sticky, self.key, rand, self.codes,
                         self.flags, where)
        return self.codes, self.flags


def _decode(fmt: Format, codes: np.ndarray, daz: bool) -> tuple[np.ndarray, ...]:
    """Fields of operand codes; with ``daz`` a subnormal reads as a zero."""
    is_nan, is_inf, negative, sig, exp = fields(fmt, codes)
    if daz and fmt.subnormals:
        sig = np.where(sig < U64(1 << fmt.mantissa_bits), U64(0), sig)
    return is_nan, is_inf, negative, sig, exp


def _binary(fmt: Format, cs: list[np.ndarray], key: tuple[Any, ...]
            ) -> tuple[_Result, np.ndarray, tuple[np.ndarray, ...], tuple[np.ndarray, ...]]:
    """The start of a two-operand operation: both operands' fields (DAZ
    applied), and a result with the NaN operands' results already in."""
    a, b = cs
    fa, fb = _decode(fmt, a, key[3]), _decode(fmt, b, key[3])
    res = _Result(fmt, key, a.shape[0])
    any_nan = fa[0] | fb[0]
    res.nans(any_nan, [a, b], [fa[0], fb[0]])
    return res, any_nan, fa, fb


def _add_chunk(fmt: Format, cs: list[np.ndarray], key: tuple[Any, ...],
               rand: np.ndarray | None, negate_b: bool = False
               ) -> tuple[np.ndarray, np.ndarray]:
    res, any_nan, (_, inf_a, na, sa, ea), (_, inf_b, nb, sb, eb) = _binary(fmt, cs, key)
    if negate_b:
        nb = ~nb
    both_inf = inf_a & inf_b & ~any_nan
    res.invalid(both_inf & (na != nb))
    res.infinity(both_inf & (na == nb), na)
    res.infinity(inf_a & ~inf_b & ~any_nan, na)
    res.infinity(inf_b & ~inf_a & ~any_nan, nb)
    finite = ~(any_nan | inf_a | inf_b)
    negative, sig, exp, sticky = _exact_sum(na, sa, ea, nb, sb, eb, key[0])
    return res.finite(finite, negative, sig, exp, sticky, rand)


def _sub_chunk(fmt: Format, cs: list[np.ndarray], key: tuple[Any, ...],
               rand: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    return _add_chunk(fmt, cs, key, rand, negate_b=True)


def _exact_sum(na: np.ndarray, sa: np.ndarray, ea: np.ndarray, nb: np.ndarray,
               sb: np.ndarray, eb: np.ndarray, mode: Rounding
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``±sa×2**ea ± sb×2**eb`` as ``(negative, sig, exp, sticky)``.

    Both significands are aligned so that the larger operand fills bits
    61..(62 - its length); bits of the smaller one that fall below bit 0 are
    lost into the sticky bit.  Bits are lost only when the smaller operand
    lies entirely below the larger one's significand, so the sum then keeps
    at least 61 bits, and subtracting a lost part ``d`` is ``(s - 1) + (1 - d)``.
    An exact zero sum has the sign IEEE 754 §6.3 gives it."""
    la, lb = bit_length(sa), bit_length(sb)
    # A zero operand must not set the alignment: give it the lowest top.
    floor = np.iinfo(I64).min // 4
    ta = np.where(sa == 0, floor, ea + la)
    tb = np.where(sb == 0, floor, eb + lb)
    exp = np.maximum(ta, tb) - _WIDTH
    va, lost_a = _align(sa, ea - exp)
    vb, lost_b = _align(sb, eb - exp)
    s = np.where(na, -va, va) + np.where(nb, -vb, vb)
    negative = s < 0
    sig = np.abs(s).astype(U64)
    sticky = lost_a | lost_b
    lost_negative = np.where(lost_a, na, nb)
    sig -= (sticky & (negative != lost_negative)).astype(U64)
    # An exact zero: the common sign of the terms, else +0 (-0 toward -inf).
    zero_sign = np.where(na == nb, na, mode is Rounding.RDN)
    negative = np.where(s == 0, zero_sign, negative)
    return negative, sig, exp, sticky


def _align(sig: np.ndarray, shift: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``sig × 2**shift`` as int64, truncated, and whether bits were lost."""
    left = np.clip(shift, 0, 62).astype(U64)
    right = np.clip(-shift, 0, 63).astype(U64)
    gone = shift <= -64
    value = np.where(shift >= 0, sig << left, np.where(gone, U64(0), sig >> right))
    low = sig & ((U64(1) << right) - U64(1))
    lost = (shift < 0) & np.where(gone, sig != 0, low != 0)
    return value.astype(I64), lost


def _mul_chunk(fmt: Format, cs: list[np.ndarray], key: tuple[Any, ...],
               rand: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    res, any_nan, (_, inf_a, na, sa, ea), (_, inf_b, nb, sb, eb) = _binary(fmt, cs, key)
    negative = na != nb
    any_inf = (inf_a | inf_b) & ~any_nan
    zero_times_inf = any_inf & (((sa == 0) & ~inf_a) | ((sb == 0) & ~inf_b))
    res.invalid(zero_times_inf)
    res.infinity(any_inf & ~zero_times_inf, negative)
    finite = ~(any_nan | inf_a | inf_b)
    if fmt.precision > 31:
        sig, exp, sticky = _int128.product(sa, sb, ea + eb)
        return res.finite(finite, negative, sig, exp, sticky, rand)
    return res.finite(finite, negative, sa * sb, ea + eb, None, rand)


def _div_chunk(fmt: Format, cs: list[np.ndarray], key: tuple[Any, ...],
               rand: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    res, any_nan, (_, inf_a, na, sa, ea), (_, inf_b, nb, sb, eb) = _binary(fmt, cs, key)
    negative = na != nb
    ok = ~any_nan
    res.invalid(ok & inf_a & inf_b)                              # inf / inf
    res.infinity(ok & inf_a & ~inf_b, negative)
    by_zero = ok & ~inf_a & ~inf_b & (sb == 0)
    if p3109_applies(fmt, key[7]):  # P3109: x / 0 is NaN (rule 7)
        res.invalid(ok & ~inf_b & (sb == 0))
    else:
        res.invalid(by_zero & (sa == 0))                         # 0 / 0
        res.infinity(by_zero & (sa != 0), negative, DIVIDE_BY_ZERO)
    over_inf = ok & ~inf_a & inf_b                               # finite / inf = 0
    finite = ok & ~inf_a & ~by_zero
    extra = key[5] + 1 if key[0] in STOCHASTIC else 0
    sig, exp, sticky = _divide(sa, ea, np.where(sb == 0, U64(1), sb), eb,
                               fmt.precision + 1 + extra, fmt.precision)
    sig = np.where(over_inf, U64(0), sig)
    return res.finite(finite, negative, sig, exp, sticky, rand)


def _divide(sa: np.ndarray, ea: np.ndarray, sb: np.ndarray, eb: np.ndarray, bits: int,
            precision: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``sa×2**ea / (sb×2**eb)`` to at least ``bits`` quotient bits and a
    sticky remainder, by long division in steps: every partial remainder is
    below 2**precision, so shifting it by ``63 - precision`` stays in 63 bits."""
    la, lb = bit_length(sa), bit_length(sb)
    # sa × 2**k / sb >= 2**(bits - 1) with k = lb - la + bits.
    k = np.where(sa == 0, 0, lb - la + bits)
    step = 63 - precision
    q = np.zeros(sa.shape, U64)
    r = sa.copy()
    todo = k.copy()
    first = True
    while first or todo.any():
        s = np.clip(todo, 0, step).astype(U64)
        t = r << s
        q = (q << s) + t // sb
        r = t % sb
        todo = todo - s.astype(I64)
        first = False
    return q, ea - eb - k, r != 0


def _fma_chunk(fmt: Format, cs: list[np.ndarray], key: tuple[Any, ...],
               rand: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    a, b, c = cs
    nan_a, inf_a, na, sa, ea = _decode(fmt, a, key[3])
    nan_b, inf_b, nb, sb, eb = _decode(fmt, b, key[3])
    nan_c, inf_c, nc, sc, ec = _decode(fmt, c, key[3])
    np_ = na != nb
    res = _Result(fmt, key, a.shape[0])
    zero_times_inf = (inf_a & ~nan_b & ~inf_b & (sb == 0)) | (inf_b & ~nan_a & ~inf_a & (sa == 0))
    any_nan = nan_a | nan_b | nan_c
    res.nans(any_nan, [a, b, c], [nan_a, nan_b, nan_c], extra=zero_times_inf)
    ok = ~any_nan
    res.invalid(ok & zero_times_inf)
    product_inf = ok & ~zero_times_inf & (inf_a | inf_b)
    res.invalid(product_inf & inf_c & (nc != np_))              # inf - inf
    res.infinity(product_inf & ~(inf_c & (nc != np_)), np_)
    res.infinity(ok & ~inf_a & ~inf_b & inf_c, nc)
    finite = ok & ~(inf_a | inf_b | inf_c)
    if fmt.precision > 31:
        negative, sig, exp, sticky = _int128.fma_sum(np_, sa, sb, ea + eb, nc, sc, ec, key[0])
        return res.finite(finite, negative, sig, exp, sticky, rand)
    negative, sig, exp, sticky = _exact_sum(np_, sa * sb, ea + eb, nc, sc, ec, key[0])
    return res.finite(finite, negative, sig, exp, sticky, rand)


def _sqrt_chunk(fmt: Format, cs: list[np.ndarray], key: tuple[Any, ...],
                rand: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    (a,) = cs
    nan_a, inf_a, na, sa, ea = _decode(fmt, a, key[3])
    res = _Result(fmt, key, a.shape[0])
    res.nans(nan_a, [a], [nan_a])
    ok = ~nan_a
    res.invalid(ok & na & (inf_a | (sa != 0)))                  # sqrt(x < 0)
    res.infinity(ok & ~na & inf_a, na)
    finite = ok & ~inf_a & (~na | (sa == 0))
    extra = key[5] + 1 if key[0] in STOCHASTIC else 0
    if fmt.precision > 31:
        with np.errstate(all="ignore"):  # (non-finite lanes compute garbage, not kept)
            sig, exp, sticky = _int128.root(np.where(finite, sa, U64(0)), ea)
        return res.finite(finite, na, sig, exp, sticky, rand)
    sig, exp, sticky = _root(sa, ea, fmt.precision + 1 + extra)
    return res.finite(finite, na, sig, exp, sticky, rand)


def _root(sa: np.ndarray, ea: np.ndarray, bits: int
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``sqrt(sa×2**ea)`` to at least ``bits`` root bits and a sticky bit
    (``2 × bits <= 62``)."""
    odd = (ea & 1) == 1
    sa = np.where(odd, sa << U64(1), sa)
    ea = ea - odd
    # A radicand of 2*bits - 1 or 2*bits bits has a root of `bits` bits.
    k = np.maximum(0, (2 * bits - bit_length(sa)) // 2)
    x = sa << (2 * k).astype(U64)
    r = np.sqrt(x.astype(np.float64)).astype(U64)
    # float64 rounds x above 2**53: correct the root by at most a step or two.
    for _ in range(2):
        r = np.where(r * r > x, r - U64(1), r)
        r = np.where((r + U64(1)) * (r + U64(1)) <= x, r + U64(1), r)
    return r, ea // 2 - k, r * r != x


_CHUNK_OPS: dict[str, Callable[..., tuple[np.ndarray, np.ndarray]]] = {
    "add": _add_chunk, "sub": _sub_chunk, "mul": _mul_chunk, "div": _div_chunk,
    "fma": _fma_chunk, "sqrt": _sqrt_chunk,
}
_BINARY = ("add", "sub", "mul", "div")
