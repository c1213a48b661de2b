"""Context: settings, sticky flags, current context, local contexts, and
tininess detection (hand-derived FP16 cases)."""

from __future__ import annotations

import random
import threading
from fractions import Fraction

import pytest

import fpsim
from fpsim import FP16, FP32, Context, Flag, Rounding, Tininess

INEXACT, UNDERFLOW, OVERFLOW = Flag.INEXACT, Flag.UNDERFLOW, Flag.OVERFLOW


@pytest.fixture(autouse=True)
def fresh_current_context():
    """Each test starts with a default current context and leaves it so."""
    saved = fpsim.getcontext()
    fpsim.setcontext(Context())
    yield
    fpsim.setcontext(saved)


def test_context_defaults():
    ctx = Context()
    assert ctx.rounding is Rounding.RNE
    assert ctx.saturate is False
    assert ctx.ftz is False
    assert ctx.daz is False
    assert ctx.tininess is Tininess.AFTER
    assert ctx.sr_bits == 32
    assert ctx.nan.name == "ieee"
    assert ctx.flags == Flag(0)
    assert isinstance(ctx.rng, random.Random)
    # the default rng is random.Random(0), so runs are reproducible
    assert ctx.rng.getrandbits(32) == random.Random(0).getrandbits(32)


def test_constructor_arguments_set_the_settings():
    ctx = Context(rounding="rtz", saturate=True, ftz=True, daz=True, tininess="before",
                  sr_bits=8, flags=Flag.INEXACT)
    assert (ctx.rounding, ctx.saturate, ctx.ftz, ctx.daz, ctx.tininess, ctx.sr_bits) == \
        (Rounding.RTZ, True, True, True, Tininess.BEFORE, 8)
    assert ctx.flags == Flag.INEXACT


def test_settings_assigned_later_are_used():
    ctx = Context()
    ctx.rounding = "rup"
    # 1 + 2**-12 lies between FP16 1 (0x3C00) and 1 + 2**-10 (0x3C01)
    assert FP16.round(1 + Fraction(1, 4096), ctx=ctx).bits == 0x3C01
    ctx.rounding = Rounding.RDN
    assert FP16.round(1 + Fraction(1, 4096), ctx=ctx).bits == 0x3C00
    ctx.saturate = True
    assert FP16.round(1e6, ctx=ctx).bits == 0x7BFF


def test_flags_are_sticky_and_accumulate():
    ctx = Context()
    FP16.round(1, ctx=ctx)  # exact
    assert ctx.flags == Flag(0)
    FP16.round(1e-30, ctx=ctx)  # far below min_subnormal: rounds to 0
    assert ctx.flags == UNDERFLOW | INEXACT
    FP16.round(1, ctx=ctx)  # exact: clears nothing
    assert ctx.flags == UNDERFLOW | INEXACT
    FP16.round(1e6, ctx=ctx)  # beyond 65504
    assert ctx.flags == OVERFLOW | UNDERFLOW | INEXACT
    FP16.round(float("inf"), ctx=ctx, saturate=True)  # inf clamped: INVALID
    assert ctx.flags == Flag.INVALID | OVERFLOW | UNDERFLOW | INEXACT
    ctx.clear_flags()
    assert ctx.flags == Flag(0)
    FP16.round(Fraction(1, 3), ctx=ctx)
    assert ctx.flags == INEXACT


def test_flags_can_be_set_and_raised_by_hand():
    ctx = Context()
    ctx.raise_flags(Flag.INVALID)
    ctx.raise_flags(Flag.OVERFLOW)
    assert ctx.flags == Flag.INVALID | Flag.OVERFLOW
    ctx.flags = Flag.INEXACT
    assert ctx.flags == Flag.INEXACT
    ctx.flags = 0
    assert ctx.flags == Flag(0)


def test_getcontext_returns_the_same_object_within_a_thread():
    assert fpsim.getcontext() is fpsim.getcontext()
    seen = {}

    def worker():
        a = fpsim.getcontext()
        FP16.round(Fraction(1, 3))  # raises INEXACT in the thread's context
        seen["same"] = a is fpsim.getcontext()
        seen["ctx"] = a
        seen["flags"] = a.flags

    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert seen["same"] is True
    assert seen["flags"] == INEXACT
    # each thread has its own current context: nothing leaked into this one
    assert seen["ctx"] is not fpsim.getcontext()
    assert fpsim.getcontext().flags == Flag(0)


def test_operations_without_ctx_use_and_flag_the_current_context():
    cur = fpsim.getcontext()
    cur.rounding = "rtz"
    assert FP16.round(1 + Fraction(3, 2048)).bits == 0x3C01  # 1 + 1.5 ulp -> 1 + 1 ulp
    assert cur.flags == INEXACT
    new = Context(rounding="rup")
    fpsim.setcontext(new)
    assert fpsim.getcontext() is new
    assert FP16.round(1 + Fraction(1, 4096)).bits == 0x3C01
    assert new.flags == INEXACT


def test_localcontext_restores_the_previous_context_and_keeps_flags_inside():
    outer = fpsim.getcontext()
    with fpsim.localcontext(rounding="rup", ftz=True) as inner:
        assert fpsim.getcontext() is inner
        assert inner is not outer
        assert inner.rounding is Rounding.RUP and inner.ftz is True
        FP16.round(1e-30)  # ftz: flushed, UNDERFLOW | INEXACT
        assert inner.flags == UNDERFLOW | INEXACT
    assert fpsim.getcontext() is outer
    # decimal semantics: flags raised inside stay in the copy
    assert outer.flags == Flag(0)
    assert outer.rounding is Rounding.RNE and outer.ftz is False


def test_localcontext_starts_from_the_outer_flags_and_settings():
    outer = fpsim.getcontext()
    outer.rounding = "rdn"
    FP16.round(Fraction(1, 3))
    with fpsim.localcontext() as inner:
        assert inner.rounding is Rounding.RDN
        assert inner.flags == INEXACT  # copied, as decimal.localcontext does
        inner.clear_flags()
    assert outer.flags == INEXACT


def test_localcontext_restores_after_an_exception():
    outer = fpsim.getcontext()
    with pytest.raises(ZeroDivisionError):
        with fpsim.localcontext(rounding="rtz"):
            raise ZeroDivisionError
    assert fpsim.getcontext() is outer
    assert outer.rounding is Rounding.RNE


def test_localcontext_of_a_given_context():
    base = Context(rounding="rna", flags=Flag.OVERFLOW)
    with fpsim.localcontext(base, sr_bits=7) as inner:
        assert inner is not base
        assert (inner.rounding, inner.sr_bits, inner.flags) == (Rounding.RNA, 7, OVERFLOW)
        FP16.round(Fraction(1, 3))
    assert base.flags == OVERFLOW and base.sr_bits == 32


def test_localcontext_nests():
    with fpsim.localcontext(rounding="rup") as a:
        with fpsim.localcontext(ftz=True) as b:
            assert fpsim.getcontext() is b
            assert b.rounding is Rounding.RUP and b.ftz
        assert fpsim.getcontext() is a
        assert a.ftz is False


def test_keyword_overrides_do_not_change_the_context_but_flags_go_into_it():
    ctx = Context()
    # 1 + 2**-12 under rup -> 1 + 2**-10 (0x3C01)
    assert FP16.round(1 + Fraction(1, 4096), ctx=ctx, rounding="rup").bits == 0x3C01
    assert ctx.rounding is Rounding.RNE
    assert ctx.flags == INEXACT
    assert FP16.round(1e6, ctx=ctx, saturate=True).bits == 0x7BFF
    assert ctx.saturate is False
    assert ctx.flags == OVERFLOW | INEXACT
    # same for the current context
    cur = fpsim.getcontext()
    assert FP16.round(1e-30, ftz=True, tininess="before").bits == 0x0000
    assert cur.ftz is False and cur.tininess is Tininess.AFTER
    assert cur.flags == UNDERFLOW | INEXACT
    # and the next call without overrides uses the context's own settings again
    assert FP16.round(1e6, ctx=ctx).bits == 0x7C00


def test_ctx_argument_is_used_instead_of_the_current_context():
    cur = fpsim.getcontext()
    mine = Context(rounding="rup")
    assert FP16.round(1 + Fraction(1, 4096), ctx=mine).bits == 0x3C01
    assert mine.flags == INEXACT
    assert cur.flags == Flag(0)
    assert fpsim.convert(1e6, "fp16", ctx=mine).bits == 0x7C00
    assert mine.flags == OVERFLOW | INEXACT
    assert cur.flags == Flag(0)


@pytest.mark.parametrize("name,member", [
    ("rne", Rounding.RNE), ("RNE", Rounding.RNE), ("nearest", Rounding.RNE),
    ("nearest_even", Rounding.RNE), ("ties_to_even", Rounding.RNE),
    ("roundTiesToEven", Rounding.RNE), ("rn", Rounding.RNE), ("ties-to-even", Rounding.RNE),
    ("ties to even", Rounding.RNE), (" rne ", Rounding.RNE),
    ("rna", Rounding.RNA), ("nearest_away", Rounding.RNA), ("ties_to_away", Rounding.RNA),
    ("roundTiesToAway", Rounding.RNA),
    ("rtz", Rounding.RTZ), ("rz", Rounding.RTZ), ("toward_zero", Rounding.RTZ),
    ("truncate", Rounding.RTZ), ("roundTowardZero", Rounding.RTZ),
    ("rup", Rounding.RUP), ("ru", Rounding.RUP), ("toward_positive", Rounding.RUP),
    ("up", Rounding.RUP), ("ceiling", Rounding.RUP), ("roundTowardPositive", Rounding.RUP),
    ("rdn", Rounding.RDN), ("rd", Rounding.RDN), ("toward_negative", Rounding.RDN),
    ("down", Rounding.RDN), ("floor", Rounding.RDN), ("roundTowardNegative", Rounding.RDN),
    ("rto", Rounding.RTO), ("odd", Rounding.RTO), ("to_odd", Rounding.RTO),
    ("round_to_odd", Rounding.RTO),
    ("sr", Rounding.SR), ("stochastic", Rounding.SR), ("SR", Rounding.SR),
])
def test_rounding_accepts_short_names_and_aliases(name, member):
    assert Rounding(name) is member
    assert Context(rounding=name).rounding is member
    ctx = Context()
    FP16.round(1, ctx=ctx, rounding=name)
    assert ctx.rounding is Rounding.RNE


def test_rounding_members_and_str():
    assert [m.value for m in Rounding] == ["rne", "rna", "rtz", "rup", "rdn", "raz", "rto", "sr",
                                          "sr_b", "sr_c"]
    assert str(Rounding.RTZ) == "rtz"
    assert Context(rounding=Rounding.RTO).rounding is Rounding.RTO


def test_flag_values_and_names():
    # the five IEEE 754 flags, as bits, named in IEEE order
    assert [(f.name, f.value) for f in Flag] == [
        ("INVALID", 1), ("DIVIDE_BY_ZERO", 2), ("OVERFLOW", 4), ("UNDERFLOW", 8),
        ("INEXACT", 16)]
    assert Flag.INEXACT.names() == ["inexact"]
    assert (Flag.INEXACT | Flag.OVERFLOW).names() == ["overflow", "inexact"]
    everything = Flag.INEXACT | Flag.UNDERFLOW | Flag.OVERFLOW | Flag.DIVIDE_BY_ZERO | \
        Flag.INVALID
    assert everything.names() == ["invalid", "divide_by_zero", "overflow", "underflow",
                                  "inexact"]
    assert Flag(0).names() == []


def test_tininess_names():
    assert Tininess("after") is Tininess.AFTER
    assert Tininess("before") is Tininess.BEFORE
    assert str(Tininess.BEFORE) == "before"
    assert Context(tininess=Tininess.BEFORE).tininess is Tininess.BEFORE


def test_copy_has_the_same_settings_and_flags_and_is_independent():
    ctx = Context(rounding="rtz", saturate=True, ftz=True, daz=True, tininess="before",
                  sr_bits=5, flags=Flag.UNDERFLOW)
    c = ctx.copy()
    assert c is not ctx
    assert (c.rounding, c.saturate, c.ftz, c.daz, c.tininess, c.sr_bits, c.flags) == \
        (ctx.rounding, ctx.saturate, ctx.ftz, ctx.daz, ctx.tininess, ctx.sr_bits, ctx.flags)
    FP16.round(1e6, ctx=c)
    assert c.flags == Flag.UNDERFLOW | OVERFLOW | INEXACT
    assert ctx.flags == Flag.UNDERFLOW
    c.rounding = "rup"
    assert ctx.rounding is Rounding.RTZ
    # the copy computes with its own settings
    assert FP16.round(1 + Fraction(1, 4096), ctx=c).bits == 0x3C01
    assert FP16.round(1 + Fraction(1, 4096), ctx=ctx).bits == 0x3C00


def test_copy_with_overrides():
    ctx = Context()
    c = ctx.copy(rounding="rdn", sr_bits=16)
    assert c.rounding is Rounding.RDN and c.sr_bits == 16
    assert ctx.rounding is Rounding.RNE and ctx.sr_bits == 32
    import copy as copy_module
    d = copy_module.copy(c)
    assert d is not c and d.rounding is Rounding.RDN


def test_repr_shows_the_settings():
    text = repr(Context(rounding="rtz", flags=Flag.INEXACT))
    for fragment in ("rounding='rtz'", "saturate=False", "ftz=False", "daz=False",
                     "tininess='after'", "sr_bits=32", "INEXACT"):
        assert fragment in text


# -- tininess before and after rounding: FP16 hand-derived cases --------------
#
# FP16: m = 10, emin = -14, min_normal = 2**-14 = 0x0400, subnormal quantum
# 2**-24; largest subnormal 1023 * 2**-24 = 2**-14 - 2**-24 = 0x03FF.
#
# Delivered result (subnormal quantum 2**-24) for x in (0x03FF, 0x0400):
#   the midpoint is 2**-14 - 2**-25; 0x03FF is odd, so under rne every
#   x >= 2**-14 - 2**-25 delivers min_normal.
# Tininess after: round x to 11 bits with unbounded exponent range.  x lies in
#   [2**-15, 2**-14), where the 11-bit quantum is 2**-25, so 2**-14 - 2**-25
#   (2047 * 2**-25) is a full-precision value below min_normal; its rne
#   rounding interval reaches up to the tie 2**-14 - 2**-26 (which goes to
#   even, 2048 * 2**-25 = 2**-14).  Hence, under rne:
#
#   x                             delivered  after: tiny?   before: tiny?
#   2**-14 - 2**-25 - 2**-30      0x03FF     yes            yes
#   2**-14 - 2**-25               0x0400     yes (= 2047*2**-25 exactly)  yes
#   2**-14 - 2**-25 + 2**-27      0x0400     yes (-> 2047*2**-25)          yes
#   2**-14 - 2**-26               0x0400     no  (tie -> 2**-14)           yes
#   2**-14 - 2**-27               0x0400     no                            yes
#
# The second and third rows are the band where the subnormal-quantum rounding
# reaches min_normal but full-precision rounding does not.

MN = Fraction(1, 2**14)


def p2(n):
    return Fraction(1, 2**-n) if n < 0 else Fraction(2**n)


TININESS_CASES = [
    # (id, mode, x, delivered code, tiny after?)
    ("rne-below-subnormal-midpoint", "rne", MN - p2(-25) - p2(-30), 0x03FF, True),
    ("rne-subnormal-midpoint", "rne", MN - p2(-25), 0x0400, True),
    ("rne-band", "rne", MN - p2(-25) + p2(-27), 0x0400, True),
    ("rne-full-precision-tie", "rne", MN - p2(-26), 0x0400, False),
    ("rne-just-below-min-normal", "rne", MN - p2(-27), 0x0400, False),
    # rna: the same tie goes away from zero, to 2**-14: not tiny
    ("rna-full-precision-tie", "rna", MN - p2(-26), 0x0400, False),
    # rna at the subnormal midpoint: delivered 0x0400; full precision exact 2047*2**-25
    ("rna-subnormal-midpoint", "rna", MN - p2(-25), 0x0400, True),
    # rup: 2**-14 - 2**-30 delivers 0x0400; at 11 bits it rounds up to 2**-14: not tiny
    ("rup-just-below-min-normal", "rup", MN - p2(-30), 0x0400, False),
    # rup: 1023*2**-24 + 2**-30 = 2046*2**-25 + 2**-30 delivers 0x0400, but at
    # 11 bits it rounds up only to 2047*2**-25 < min_normal: tiny
    ("rup-band", "rup", MN - p2(-24) + p2(-30), 0x0400, True),
    # rtz/rdn/rto never reach min_normal from below
    ("rtz-just-below-min-normal", "rtz", MN - p2(-30), 0x03FF, True),
    ("rdn-just-below-min-normal", "rdn", MN - p2(-30), 0x03FF, True),
    ("rto-just-below-min-normal", "rto", MN - p2(-30), 0x03FF, True),
]


@pytest.mark.parametrize("name,mode,x,code,tiny_after", TININESS_CASES,
                         ids=[c[0] for c in TININESS_CASES])
def test_tininess_after_versus_before(name, mode, x, code, tiny_after):
    for negative in (False, True):
        v = -x if negative else x
        # the directed modes mirror: rup on -x behaves like rdn on x
        m = {"rup": "rdn", "rdn": "rup"}.get(mode, mode) if negative else mode
        sign = 0x8000 if negative else 0
        after, before = Context(rounding=m), Context(rounding=m, tininess="before")
        assert FP16.round(v, ctx=after).bits == code | sign
        assert FP16.round(v, ctx=before).bits == code | sign
        assert after.flags == (UNDERFLOW | INEXACT if tiny_after else INEXACT)
        assert before.flags == UNDERFLOW | INEXACT  # 0 < |x| < min_normal, inexact
        # ftz flushes exactly the tiny results, to a zero of x's sign
        ftz_after = Context(rounding=m, ftz=True)
        got = FP16.round(v, ctx=ftz_after).bits
        assert got == (sign if tiny_after else code | sign)
        assert ftz_after.flags == (UNDERFLOW | INEXACT if tiny_after else INEXACT)
        ftz_before = Context(rounding=m, ftz=True, tininess="before")
        assert FP16.round(v, ctx=ftz_before).bits == sign
        assert ftz_before.flags == UNDERFLOW | INEXACT


def test_an_exact_subnormal_is_tiny_but_raises_no_underflow():
    # 3 * 2**-24 = 0x0003 exactly: tiny either way, but UNDERFLOW needs inexactness
    for tininess in ("after", "before"):
        ctx = Context(tininess=tininess)
        assert FP16.round(3 * p2(-24), ctx=ctx).bits == 0x0003
        assert ctx.flags == Flag(0)
    # ... except under ftz, where the flush itself is inexact
    ctx = Context(ftz=True)
    assert FP16.round(3 * p2(-24), ctx=ctx).bits == 0x0000
    assert ctx.flags == UNDERFLOW | INEXACT


def test_min_normal_itself_is_not_tiny():
    for tininess in ("after", "before"):
        ctx = Context(tininess=tininess, ftz=True)
        assert FP16.round(MN, ctx=ctx).bits == 0x0400
        # FP32: 2**-126 = 0x00800000
        assert FP32.round(p2(-126), ctx=ctx).bits == 0x00800000
        assert ctx.flags == Flag(0)
