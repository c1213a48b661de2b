"""TestFloat's flag bits: the one mapping between fpsim's flags and the
flags field of Berkeley TestFloat's lines (SoftFloat's ``softfloat_flag_*``).

Shared by the golden vector files (:mod:`fpsim._vectors`) and the
TestFloat generator and verifier (:mod:`fpsim.testfloat`).  The contract:
:data:`TESTFLOAT_BITS` pairs each :class:`~fpsim.Flag` with its bit;
:func:`flag_bits` and :func:`flags_of` convert one way and the other, and
:data:`BITS_OF` is :func:`flag_bits` as a table indexed by ``Flag.value``
(0..31), for numpy's ``take``.

>>> from fpsim.modes import Flag
>>> hex(flag_bits(Flag.INVALID | Flag.INEXACT))
'0x11'
>>> flags_of(0x0A)
<Flag.DIVIDE_BY_ZERO|UNDERFLOW: 10>
"""

from __future__ import annotations

from .modes import Flag

__all__ = ["TESTFLOAT_BITS", "flag_bits", "flags_of", "BITS_OF", "NAMES"]

# Berkeley TestFloat's flag bits (softfloat_flag_*), so its users read ours.
TESTFLOAT_BITS = ((Flag.INEXACT, 0x01), (Flag.UNDERFLOW, 0x02), (Flag.OVERFLOW, 0x04),
                  (Flag.DIVIDE_BY_ZERO, 0x08), (Flag.INVALID, 0x10))

# TestFloat's names of its bits, in bit order (its reports say "infinite"
# for divide-by-zero).
NAMES = ((0x01, "inexact"), (0x02, "underflow"), (0x04, "overflow"), (0x08, "infinite"),
         (0x10, "invalid"))


def flag_bits(flags: Flag | int) -> int:
    """fpsim flags as TestFloat's bitmask."""
    flags = Flag(flags)
    return sum(bit for flag, bit in TESTFLOAT_BITS if flags & flag)


def flags_of(bits: int) -> Flag:
    """TestFloat's bitmask (0..0x1F) as fpsim flags."""
    out = Flag(0)
    for flag, bit in TESTFLOAT_BITS:
        if bits & bit:
            out |= flag
    return out


BITS_OF = tuple(flag_bits(Flag(v)) for v in range(32))
