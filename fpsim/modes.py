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

__all__ = ["Rounding", "Flag", "Tininess"]


class Rounding(str, enum.Enum):
    """Rounding modes.  Members accept their short names (``"rne"``) and the
    IEEE 754 attribute names (``"roundTiesToEven"``, ``"ties_to_even"``).

    ``RNE``  roundTiesToEven (the IEEE default)
    ``RNA``  roundTiesToAway
    ``RTZ``  roundTowardZero
    ``RUP``  roundTowardPositive
    ``RDN``  roundTowardNegative
    ``RTO``  round to odd (truncate, then set the last bit if inexact)
    ``SR``   stochastic rounding (see :mod:`fpsim.rounding` for the exact rule)
    """

    RNE = "rne"
    RNA = "rna"
    RTZ = "rtz"
    RUP = "rup"
    RDN = "rdn"
    RTO = "rto"
    SR = "sr"

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
    "rto": "rto", "odd": "rto", "to_odd": "rto", "round_to_odd": "rto",
    "sr": "sr", "stochastic": "sr",
}

ROUNDING_NAMES = "rne, rna, rtz, rup, rdn, rto, sr"


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
