"""The vocabulary shared by every layer: rounding modes, IEEE flags, tininess.

These are plain enums with no behaviour of their own; the rounding kernel
gives them meaning.

>>> Rounding("rne") is Rounding.RNE
True
>>> Rounding("ties_to_away")
<Rounding.RNA: 'rna'>
>>> Flag.INEXACT | Flag.UNDERFLOW
<Flag.UNDERFLOW|INEXACT: 24>
"""

from __future__ import annotations

import enum
from typing import Any

__all__ = ["Rounding", "Flag", "Tininess", "Saturation", "P3109", "STOCHASTIC"]


class Rounding(str, enum.Enum):
    """Rounding modes.  Members accept their short names (``"rne"``) and the
    IEEE 754 attribute names (``"roundTiesToEven"``, ``"ties_to_even"``).

    ``RNE``  roundTiesToEven (the IEEE default)
    ``RNA``  roundTiesToAway
    ``RTZ``  roundTowardZero
    ``RUP``  roundTowardPositive
    ``RDN``  roundTowardNegative
    ``RAZ``  round away from zero (no IEEE P3109 Interim Report defines it;
             the name ``TowardMaxMagnitude``, used in some P3109 code, is
             accepted)
    ``RTO``  round to odd (truncate, then set the last bit if inexact)
    ``SR``   stochastic rounding with ``sr_bits`` random bits: P3109's
             ``StochasticA`` (see :mod:`fpsim.rounding` for the exact rule)
    ``SR_B`` P3109's ``StochasticB``: the random bits centred on the grid
             (no bias from truncating the discarded fraction)
    ``SR_C`` P3109's ``StochasticC``: the discarded fraction rounded to
             ``sr_bits`` bits (ties to even) before the random bits are added

    >>> Rounding("StochasticB"), Rounding("TowardMaxMagnitude")
    (<Rounding.SR_B: 'sr_b'>, <Rounding.RAZ: 'raz'>)
    """

    RNE = "rne"
    RNA = "rna"
    RTZ = "rtz"
    RUP = "rup"
    RDN = "rdn"
    RAZ = "raz"
    RTO = "rto"
    SR = "sr"
    SR_B = "sr_b"
    SR_C = "sr_c"

    @classmethod
    def _missing_(cls, value: object) -> Rounding | None:
        if isinstance(value, str):
            key = value.strip().lower().replace("-", "_").replace(" ", "_")
            member = _ALIASES.get(key)
            if member is not None:
                return cls(member)
        return None

    def __str__(self) -> str:
        return self.value


_ALIASES = {
    "rne": "rne", "nearest": "rne", "nearest_even": "rne", "ties_to_even": "rne",
    "roundtiestoeven": "rne", "rn": "rne",
    "rna": "rna", "nearest_away": "rna", "ties_to_away": "rna", "roundtiestoaway": "rna",
    "rtz": "rtz", "rz": "rtz", "toward_zero": "rtz", "truncate": "rtz",
    "roundtowardzero": "rtz",
    "rup": "rup", "ru": "rup", "toward_positive": "rup", "up": "rup", "ceiling": "rup",
    "roundtowardpositive": "rup",
    "rdn": "rdn", "rd": "rdn", "toward_negative": "rdn", "down": "rdn", "floor": "rdn",
    "roundtowardnegative": "rdn",
    # IEEE P3109's names
    "nearesttiestoeven": "rne", "nearesttiestoaway": "rna", "towardzero": "rtz",
    "towardpositive": "rup", "towardnegative": "rdn",
    "raz": "raz", "away": "raz", "away_from_zero": "raz", "toward_max_magnitude": "raz",
    "towardmaxmagnitude": "raz",
    "rto": "rto", "odd": "rto", "to_odd": "rto", "round_to_odd": "rto", "toodd": "rto",
    "sr": "sr", "stochastic": "sr", "sr_a": "sr", "sra": "sr", "stochastica": "sr",
    "stochastic_a": "sr",
    "sr_b": "sr_b", "srb": "sr_b", "stochasticb": "sr_b", "stochastic_b": "sr_b",
    "sr_c": "sr_c", "src": "sr_c", "stochasticc": "sr_c", "stochastic_c": "sr_c",
}

ROUNDING_NAMES = "rne, rna, rtz, rup, rdn, raz, rto, sr, sr_b, sr_c"

#: The stochastic modes: each rounding draws ``sr_bits`` random bits.
STOCHASTIC = frozenset({Rounding.SR, Rounding.SR_B, Rounding.SR_C})


class Flag(enum.Flag):
    """The five IEEE 754 exception flags.  They are sticky: a
    :class:`~fpsim.Context` ORs in the flags of every operation."""

    INVALID = 1
    DIVIDE_BY_ZERO = 2
    OVERFLOW = 4
    UNDERFLOW = 8
    INEXACT = 16

    def names(self) -> list[str]:
        """The names of the set flags, in IEEE order.

        >>> (Flag.INEXACT | Flag.OVERFLOW).names()
        ['overflow', 'inexact']
        """
        return [m.name.lower() for m in Flag if m in self]  # type: ignore[union-attr]


class Saturation(str, enum.Enum):
    """IEEE P3109's saturation modes, accepted by a context's ``saturate``
    setting next to ``False`` (IEEE 754 and OCP overflow: ±inf, or NaN in a
    format without infinity) and ``True`` (which is ``SAT_FINITE``).

    ``SAT_FINITE``     every result beyond ±max, infinities included, is ±max
    ``SAT_PROPAGATE``  finite results beyond ±max are ±max; infinities stay
                       infinite (±max in a format without infinity)
    ``SAT_NONE``       results beyond ±max overflow to ±inf as the rounding
                       mode directs (±max in a format without infinity: never
                       NaN); the Interim Report v4.0's name, ``OVF_INF``
                       (``"ovfinf"``, release 3's OvfInf) is the same member

    Names are read case-insensitively (``"SatPropagate"``).  The table of
    what each mode gives is in spec/rounding.md, rule 4.

    >>> Saturation("SatPropagate"), Saturation("OvfInf")
    (<Saturation.SAT_PROPAGATE: 'satpropagate'>, <Saturation.SAT_NONE: 'satnone'>)
    """

    SAT_FINITE = "satfinite"
    SAT_PROPAGATE = "satpropagate"
    SAT_NONE = "satnone"
    OVF_INF = "satnone"  # (an alias: release 3's name)

    @classmethod
    def _missing_(cls, value: object) -> Saturation | None:
        return _by_name(cls, value, {"ovfinf": "satnone"})

    def __str__(self) -> str:
        return self.value


def _by_name(cls: Any, value: object, aliases: dict[str, str]) -> Any:
    """The member of ``cls`` a name means: case, spaces, ``-`` and ``_``
    ignored, then ``aliases``; None for none."""
    if isinstance(value, str):
        key = value.strip().lower().replace("-", "").replace("_", "").replace(" ", "")
        key = aliases.get(key, key)
        for member in cls:
            if member.value == key:
                return member
    return None


SATURATION_NAMES = ("False, True, 'satfinite' (= True), 'satpropagate', 'satnone' "
                    "(or 'ovfinf')")


class P3109(str, enum.Enum):
    """Which text of IEEE P3109 decides the rules that P3109 formats add to
    IEEE 754's (a context's ``p3109`` setting; spec/p3109.md has the table):

    ``V4_0``       the Interim Report v4.0 (June 2026), the default
    ``V3_2_1``     the Interim Report v3.2.1 (January 2026), which the working
                   group's C++ reference (awf/p3109-cpp) follows
    ``RELEASE_3``  the Interim Report's release 3 (v3.0.1, July 2025)
    ``IEEE``       IEEE 754's rules on P3109 formats (fpsim before the
                   setting existed): x/0 is ±inf, a negative value into an
                   unsigned format the NaN, round to odd never overflows to inf

    The names accepted are ``"v4.0"`` (``"4.0"``, ``"v4"``), ``"v3.2.1"``
    (``"3.2.1"``), ``"3"`` (``"v3"``, ``"release3"``, ``"v3.0.1"``) and
    ``"ieee"``.

    >>> P3109("v4"), P3109("release 3")
    (<P3109.V4_0: 'v4.0'>, <P3109.RELEASE_3: '3'>)
    """

    V4_0 = "v4.0"
    V3_2_1 = "v3.2.1"
    RELEASE_3 = "3"
    IEEE = "ieee"

    @classmethod
    def _missing_(cls, value: object) -> P3109 | None:
        return _by_name(cls, value, {"4.0": "v4.0", "v4": "v4.0", "4": "v4.0", "v3": "3",
                                     "release3": "3", "v3.0.1": "3", "3.0.1": "3",
                                     "v3.0": "3", "3.0": "3", "3.2.1": "v3.2.1"})

    def __str__(self) -> str:
        return self.value


P3109_NAMES = "'v4.0' (default), 'v3.2.1', '3' (release 3), 'ieee'"


class Tininess(str, enum.Enum):
    """When a nonzero result is *tiny* (IEEE 754-2019 §7.5): ``AFTER``
    rounding (the result rounded to the format's precision with an unbounded
    exponent range is below the smallest normal; x86 SSE and RISC-V) or
    ``BEFORE`` rounding (the exact value is below the smallest normal; Arm
    VFP/NEON, as in SoftFloat's ARM-VFPv2 specialization)."""

    AFTER = "after"
    BEFORE = "before"

    def __str__(self) -> str:
        return self.value
