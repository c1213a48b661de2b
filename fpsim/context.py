"""Contexts, in the manner of Python's :mod:`decimal`.

A :class:`Context` carries the settings every operation reads (rounding mode,
saturation, flush-to-zero, denormals-are-zero, tininess, stochastic rounding
source) and accumulates the IEEE flags the operations raise.  Operations take
``ctx=``; without it they use the current context of the thread or task.

>>> import fpsim
>>> with fpsim.localcontext(rounding="rtz") as ctx:
...     ctx.clear_flags()   # the copy starts with the outer context's flags
...     x = fpsim.FP16.round(1e-5)
...     print(ctx.rounding, ctx.flags)
rtz Flag.UNDERFLOW|INEXACT
"""

from __future__ import annotations

import contextlib
import contextvars
import numbers
import random
from collections.abc import Iterator
from typing import Any

from .modes import (
    P3109,
    P3109_NAMES,
    ROUNDING_NAMES,
    SATURATION_NAMES,
    STOCHASTIC,
    Flag,
    Rounding,
    Saturation,
    Tininess,
)
from .nans import IEEE, NanPolicy, policy

__all__ = ["Context", "getcontext", "setcontext", "localcontext"]

_SETTINGS = ("rounding", "saturate", "ftz", "daz", "tininess", "sr_bits", "nan", "p3109")


class Context:
    """Settings for rounding, and the sticky flags raised under them.

    Parameters
    ----------
    rounding:
        A :class:`~fpsim.Rounding` or its name: ``"rne"`` (default), ``"rna"``,
        ``"rtz"``, ``"rup"``, ``"rdn"``, ``"raz"``, ``"rto"``, and the
        stochastic ``"sr"``, ``"sr_b"``, ``"sr_c"``.
    saturate:
        ``True``: clamp overflowing results and infinities to ±max (ONNX
        ``Cast`` ``saturate=1``, PTX ``.satfinite``, P3109's SatFinite).
        NaN stays NaN.  IEEE P3109's other modes by name:
        ``"satpropagate"`` (clamp finite overflow, keep infinities) and
        ``"satnone"`` (v4.0's name; release 3's ``"ovfinf"`` is accepted:
        overflow to ±inf; ±max where the format has no infinity); see
        :class:`~fpsim.Saturation`.  ``False`` (default):
        IEEE 754 overflow, NaN where the format has no infinity.
    ftz:
        Flush tiny results to zero (raising UNDERFLOW and INEXACT).
    daz:
        Treat subnormal *operands* (values already in a binary format:
        :class:`~fpsim.Float`, numpy scalars) as zeros of the same sign.
    tininess:
        ``"after"`` (default) or ``"before"`` rounding.
    sr_bits:
        Number of random bits used by stochastic rounding (1..64, default 32).
    nan:
        The NaN policy (:mod:`fpsim.nans`): ``"ieee"`` (default), ``"x86"``,
        ``"arm_default_nan"``, ``"riscv"``, or a :class:`~fpsim.nans.NanPolicy`.
    rng:
        Source of stochastic-rounding bits: an int seed, a :class:`random.Random`,
        or a :class:`numpy.random.Generator`.  Default: ``random.Random(0)``,
        so runs are reproducible.  Per-call ``random_bits=`` overrides it.
    flags:
        Initial flags (default none).
    p3109:
        Which IEEE P3109 text decides the rules P3109 formats add to IEEE
        754's (:class:`~fpsim.modes.P3109`): ``"v4.0"`` (default, the
        Interim Report v4.0), ``"3"`` (release 3) or ``"ieee"`` (none):
        division by zero, negative values into unsigned formats, round to
        odd beyond the largest value (spec/p3109.md).
    """

    __slots__ = (*_SETTINGS, "_rng", "_flags", "_key", "_fast_key")

    rounding: Rounding
    saturate: bool | Saturation
    ftz: bool
    daz: bool
    tininess: Tininess
    sr_bits: int
    nan: NanPolicy
    p3109: P3109

    def __init__(self, rounding: Rounding | str = Rounding.RNE, saturate: bool | str = False,
                 ftz: bool = False, daz: bool = False,
                 tininess: Tininess | str = Tininess.AFTER, sr_bits: int = 32,
                 nan: NanPolicy | str = IEEE, rng: Any = None, flags: Flag | int = 0,
                 p3109: P3109 | str = P3109.V4_0) -> None:
        # The sticky flags live in a one-item list: operations OR into it on
        # their hot path, which a plain attribute behind __setattr__ would slow.
        object.__setattr__(self, "_flags", [0])
        object.__setattr__(self, "_rng", None)
        self.rounding = rounding  # type: ignore[assignment]
        self.saturate = saturate
        self.ftz = ftz
        self.daz = daz
        self.tininess = tininess  # type: ignore[assignment]
        self.sr_bits = sr_bits
        self.nan = nan  # type: ignore[assignment]
        self.p3109 = p3109  # type: ignore[assignment]
        self.rng = rng
        self.flags = flags  # type: ignore[assignment]

    # Settings are validated on assignment, and a tuple of them (the "key")
    # is rebuilt, so that operations read all settings in one attribute access.
    def __setattr__(self, name: str, value: Any) -> None:
        if name in _SETTINGS:
            value = _VALIDATORS[name](value)
            object.__setattr__(self, name, value)
            self._rekey()
        elif name in ("rng", "flags"):
            object.__getattribute__(type(self), name).__set__(self, value)
        else:
            raise AttributeError(f"Context has no setting {name!r}; settings: "
                                 f"{', '.join(_SETTINGS)}, rng, flags")

    def _rekey(self) -> None:
        try:
            key = (self.rounding, self.saturate, self.ftz, self.daz,
                   self.tininess is Tininess.BEFORE, self.sr_bits, self.nan, self.p3109)
        except AttributeError:  # still in __init__
            return
        object.__setattr__(self, "_key", key)
        # The key again where operations may take their fast path (no DAZ to
        # apply to the operands, no random draw), else None: one test for both.
        fast = None if self.daz or self.rounding in STOCHASTIC else key
        object.__setattr__(self, "_fast_key", fast)

    @property
    def flags(self) -> Flag:
        """The sticky flags raised so far."""
        return Flag(self._flags[0])

    @flags.setter
    def flags(self, value: Flag | int) -> None:
        if isinstance(value, bool) or not isinstance(value, (Flag, int)):
            raise TypeError(f"flags must be an fpsim.Flag, got {type(value).__name__}")
        if not isinstance(value, Flag) and not 0 <= value < 32:
            raise ValueError(f"flags={value} is not a combination of fpsim.Flag members "
                             "(INVALID=1, DIVIDE_BY_ZERO=2, OVERFLOW=4, UNDERFLOW=8, INEXACT=16)")
        self._flags[0] = Flag(value).value

    @property
    def rng(self) -> Any:
        """The stochastic-rounding source (see the class docstring)."""
        return self._rng

    @rng.setter
    def rng(self, value: Any) -> None:
        if value is None:
            value = random.Random(0)
        elif isinstance(value, numbers.Integral) and not isinstance(value, bool):
            value = random.Random(check_seed(value))
        elif not (isinstance(value, random.Random) or hasattr(value, "integers")):
            raise TypeError("rng must be an int seed, a random.Random or a "
                            f"numpy.random.Generator, got {type(value).__name__}")
        object.__setattr__(self, "_rng", value)

    def clear_flags(self) -> None:
        """Reset all flags."""
        self._flags[0] = 0

    def raise_flags(self, flags: Flag | int) -> None:
        """OR ``flags`` into the sticky flags: an :class:`~fpsim.Flag` (one
        or a combination) or an int of flag bits from 0 to 31."""
        if isinstance(flags, Flag):
            self._flags[0] |= flags.value
            return
        if isinstance(flags, bool) or not isinstance(flags, numbers.Integral):
            raise TypeError(f"flags must be an fpsim.Flag or an int of flag bits, got "
                            f"{type(flags).__name__}")
        if not 0 <= flags < 32:
            raise ValueError(f"flags={flags} is not a combination of fpsim.Flag members; "
                             "accepted a Flag or an int from 0 to 31 (INVALID=1, "
                             "DIVIDE_BY_ZERO=2, OVERFLOW=4, UNDERFLOW=8, INEXACT=16)")
        self._flags[0] |= int(flags)

    def random_bits(self, bits: int | None = None) -> int:
        """Draw one stochastic-rounding random integer in ``[0, 2**bits)``
        (``bits`` defaults to ``sr_bits``) from :attr:`rng`.

        >>> Context(rng=7).random_bits(8) == Context(rng=7).random_bits(8)
        True
        """
        bits = self.sr_bits if bits is None else _check_sr_bits(bits)
        rng = self._rng
        if isinstance(rng, random.Random):
            value = rng.getrandbits(bits)
        else:
            import numpy as np  # a Generator was passed, so numpy is present

            value = rng.integers(0, 1 << bits, dtype=np.uint64)
        # A number outside [0, 2**bits) would bias every stochastic rounding
        # (the kernel adds it to the discarded bits): a source that draws
        # one, such as a subclass or stand-in with its own integers(), is refused.
        if not (isinstance(value, numbers.Integral) and 0 <= value < (1 << bits)):
            raise ValueError(f"rng drew {value!r}, not an integer in [0, 2**{bits}); accepted "
                             "a random.Random, a numpy.random.Generator, or an object whose "
                             "integers(low, high, dtype=numpy.uint64) draws from [low, high)")
        return int(value)

    def copy(self, **overrides: Any) -> Context:
        """A new context with the same settings, flags and rng, and ``overrides``.

        >>> Context().copy(rounding="rup").rounding
        <Rounding.RUP: 'rup'>
        """
        unknown = set(overrides) - set(_SETTINGS) - {"rng", "flags"}
        if unknown:
            raise TypeError(f"unexpected keyword argument(s) {', '.join(sorted(unknown))}; "
                            f"accepted: {', '.join(_SETTINGS)}, rng, flags")
        new = Context.__new__(Context)
        for name in ("_rng", *_SETTINGS, "_key", "_fast_key"):
            object.__setattr__(new, name, getattr(self, name))
        object.__setattr__(new, "_flags", [self._flags[0]])
        for name, value in overrides.items():
            setattr(new, name, value)
        return new

    __copy__ = copy

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickling and :func:`copy.deepcopy`: the settings, the flags and the
        rng, through the constructor (which checks them again).  The rng
        travels with its state, so the copy draws the random bits the
        original would draw next (``copy.deepcopy`` copies it; the copy of
        :meth:`copy` shares it)."""
        return (type(self), (self.rounding, self.saturate, self.ftz, self.daz, self.tininess,
                             self.sr_bits, self.nan, self._rng, self.flags, self.p3109))

    def __repr__(self) -> str:
        sat = self.saturate
        return (f"Context(rounding={self.rounding.value!r}, "
                f"saturate={sat if isinstance(sat, bool) else repr(sat.value)}, "
                f"ftz={self.ftz}, daz={self.daz}, tininess={self.tininess.value!r}, "
                f"sr_bits={self.sr_bits}, nan={self.nan.name!r}, "
                + ("" if self.p3109 is P3109.V4_0 else f"p3109={self.p3109.value!r}, ")
                + f"flags={self.flags!r})")


def check_seed(value: Any) -> int:
    """An int seed of a random generator (Python's or numpy's), checked:
    numpy refuses negative seeds, and random.Random would take -s as s."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"an rng seed must be an int, got {type(value).__name__}")
    value = int(value)
    if value < 0:
        raise ValueError(f"rng seed {value} is negative; accepted an int >= 0")
    return value


def _check_bool(name: str) -> Any:
    def check(value: Any) -> bool:
        if not isinstance(value, bool):
            raise TypeError(f"{name} must be True or False, got {value!r}")
        return value
    return check


def check_saturate(value: Any) -> bool | Saturation:
    """A ``saturate`` setting, normalized: ``False``, ``True`` (P3109's
    SatFinite, also accepted by that name), or :attr:`Saturation.SAT_PROPAGATE`
    / :attr:`Saturation.SAT_NONE` (release 3's ``"ovfinf"`` too).

    >>> check_saturate("SatFinite"), check_saturate("ovfinf")
    (True, <Saturation.SAT_NONE: 'satnone'>)
    """
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        try:
            mode = Saturation(value)
        except ValueError:
            raise ValueError(f"unknown saturation mode {value!r}; accepted: "
                             f"{SATURATION_NAMES}") from None
        return True if mode is Saturation.SAT_FINITE else mode
    raise TypeError(f"saturate must be True or False, or a P3109 saturation mode name "
                    f"({SATURATION_NAMES}), got {value!r}")


def _check_rounding(value: Any) -> Rounding:
    try:
        return Rounding(value)
    except ValueError:
        raise ValueError(f"unknown rounding mode {value!r}; accepted: {ROUNDING_NAMES}") from None


def _check_tininess(value: Any) -> Tininess:
    try:
        return Tininess(value)
    except ValueError:
        raise ValueError(f"unknown tininess {value!r}; accepted: after, before") from None


def _check_p3109(value: Any) -> P3109:
    if not isinstance(value, str):
        raise TypeError(f"p3109 must be a name of an IEEE P3109 text ({P3109_NAMES}), "
                        f"got {value!r}")
    try:
        return P3109(value)
    except ValueError:
        raise ValueError(f"unknown IEEE P3109 text {value!r}; accepted: {P3109_NAMES}") from None


def _check_sr_bits(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"sr_bits must be an int, got {type(value).__name__}")
    if not 1 <= value <= 64:
        raise ValueError(f"sr_bits must be between 1 and 64, got {value}")
    return value


_VALIDATORS = {
    "rounding": _check_rounding,
    "saturate": check_saturate,
    "ftz": _check_bool("ftz"),
    "daz": _check_bool("daz"),
    "tininess": _check_tininess,
    "sr_bits": _check_sr_bits,
    "nan": policy,
    "p3109": lambda value: _check_p3109(value),
}

_current: contextvars.ContextVar[Context] = contextvars.ContextVar("fpsim_context")


def getcontext() -> Context:
    """The current context of this thread or task (created on first use).

    >>> getcontext().rounding
    <Rounding.RNE: 'rne'>
    """
    try:
        return _current.get()
    except LookupError:
        ctx = Context()
        _current.set(ctx)
        return ctx


def setcontext(ctx: Context) -> None:
    """Make ``ctx`` the current context."""
    if not isinstance(ctx, Context):
        raise TypeError(f"setcontext() takes a Context, got {type(ctx).__name__}")
    _current.set(ctx)


def localcontext(ctx: Context | None = None,
                 **overrides: Any) -> contextlib.AbstractContextManager[Context]:
    """Run a block under a copy of ``ctx`` (default: the current context)
    with ``overrides``; the previous context is restored afterwards.  As in
    :mod:`decimal`, flags raised inside stay in the copy.

    >>> with localcontext(rounding="rdn", ftz=True) as c:
    ...     (c.rounding.value, c.ftz)
    ('rdn', True)
    """
    # Checked at the call, not when the block is entered, so that
    # localcontext(5) fails where it is written.
    if ctx is not None and not isinstance(ctx, Context):
        raise TypeError(f"localcontext() takes a Context or None, got {type(ctx).__name__}; "
                        "settings go by keyword, e.g. localcontext(rounding='rtz')")
    return _local(ctx, overrides)


@contextlib.contextmanager
def _local(ctx: Context | None, overrides: dict[str, Any]) -> Iterator[Context]:
    new = (ctx if ctx is not None else getcontext()).copy(**overrides)
    token = _current.set(new)
    try:
        yield new
    finally:
        _current.reset(token)


def resolve(ctx: Context | None, overrides: dict[str, Any]) -> tuple[Context, tuple[Any, ...]]:
    """The context that receives flags, and the settings key to compute with.

    Keyword overrides apply to this one call; flags still go to ``ctx``."""
    if ctx is None:
        ctx = getcontext()
    elif not isinstance(ctx, Context):
        raise TypeError(f"ctx must be an fpsim.Context, got {type(ctx).__name__}")
    if not overrides:
        return ctx, ctx._key
    unknown = set(overrides) - set(_SETTINGS)
    if unknown:
        raise TypeError(f"unexpected keyword argument(s) {', '.join(sorted(unknown))}; "
                        f"accepted: ctx, random_bits, {', '.join(_SETTINGS)}")
    values = {name: getattr(ctx, name) for name in _SETTINGS}
    for name, value in overrides.items():
        values[name] = _VALIDATORS[name](value)
    key = (values["rounding"], values["saturate"], values["ftz"], values["daz"],
           values["tininess"] is Tininess.BEFORE, values["sr_bits"], values["nan"],
           values["p3109"])
    return ctx, key
