"""NaN rules, as data: which NaN an operation or a conversion returns.

IEEE 754-2019 (§6.2.3) leaves the choice of NaN result partly open; real
units differ.  A :class:`NanPolicy` states one unit's choices; the presets
match the units named (sources in each preset's ``source``).  The arithmetic
never asks "which CPU is this?", only the policy.

Under every policy:

* a NaN result is quiet; a signaling NaN operand raises INVALID;
* a NaN *created* by an invalid operation (inf - inf, 0 × inf, sqrt(-1), ...)
  is the policy's default NaN;
* formats with a single NaN per sign (E4M3's S.1111.111) or a single NaN
  (FNUZ: 0x80) give that NaN; the sign follows the chosen operand or the
  default NaN's sign.

Under a propagating policy, a NaN operand's sign and payload (the fraction
bits below the quiet bit) carry to the result, left-aligned: widening appends
zero bits, narrowing drops the low-order bits.

>>> from fpsim.formats import FP32, FP16, BF16, E4M3
>>> hex(convert_nan(FP32, 0x7FC00001, FP16)[0])   # low payload bits dropped
'0x7e00'
>>> hex(convert_nan(FP16, 0x7E01, FP32)[0])       # payload kept, left-aligned
'0x7fc02000'
>>> [hex(c) for c in convert_nan(FP32, 0xFF800001, BF16)]  # signaling: quieted, INVALID
['0xffc0', '0x1']
>>> hex(convert_nan(FP16, 0xFE00, E4M3)[0])
'0xff'
>>> hex(convert_nan(FP16, 0x7E01, FP32, policy("riscv"))[0])   # canonical NaN
'0x7fc00000'
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

# Nothing from fpsim.formats at run time: Context holds a NanPolicy, and
# formats' round() conveniences import the scalar layer that imports Context.
from .rounding import INVALID, nan_code

if TYPE_CHECKING:  # pragma: no cover
    from .formats import Format

__all__ = ["NanPolicy", "IEEE", "X86", "ARM_DEFAULT_NAN", "RISCV", "policy", "policies",
           "convert_nan", "propagate", "default_nan", "payload"]


@dataclass(frozen=True)
class NanPolicy:
    """One unit's NaN choices.

    propagate:
        ``True``: a NaN operand's sign and payload carry into the result.
        ``False``: every NaN result is the default NaN.
    prefer_signaling:
        With several NaN operands, take the first *signaling* one if any,
        else the first quiet one (``True``: ARM, SoftFloat's default); or
        simply the first NaN operand (``False``: x86 SSE/AVX).
    default_negative:
        The sign of the default NaN (x86's "QNaN floating-point indefinite"
        is negative; ARM's and RISC-V's default NaN are positive).
    """

    name: str
    propagate: bool
    prefer_signaling: bool
    default_negative: bool
    source: str

    def __str__(self) -> str:
        return self.name

    def __reduce__(self) -> tuple[Any, ...]:
        # A preset comes back as the preset itself (policy("x86") is X86).
        if _POLICIES.get(self.name) == self:
            return (policy, (self.name,))
        return (NanPolicy, (self.name, self.propagate, self.prefer_signaling,
                            self.default_negative, self.source))


IEEE = NanPolicy(
    "ieee", propagate=True, prefer_signaling=True, default_negative=False,
    source="IEEE 754-2019 §6.2.3: the result should be one of the input NaNs, quieted; "
           "the choice among several follows ARM's FPProcessNaNs (signaling first)")
X86 = NanPolicy(
    "x86", propagate=True, prefer_signaling=False, default_negative=True,
    source="Intel SDM vol. 1 §4.8.3.5 and table 4-7 (SSE/AVX): the first source operand "
           "that is a NaN, quieted; the default NaN is the negative 'QNaN floating-point "
           "indefinite' (FP32 0xFFC00000)")
ARM_DEFAULT_NAN = NanPolicy(
    "arm_default_nan", propagate=False, prefer_signaling=True, default_negative=False,
    source="Arm Architecture Reference Manual, FPCR.DN = 1 (Default NaN mode; AArch32 "
           "Advanced SIMD always runs this way): every NaN result is the default NaN "
           "0x7FC00000")
RISCV = NanPolicy(
    "riscv", propagate=False, prefer_signaling=True, default_negative=False,
    source="RISC-V unprivileged ISA, F extension, 'NaN Generation and Propagation': "
           "every NaN result is the canonical NaN 0x7FC00000")

_POLICIES = {p.name: p for p in (IEEE, X86, ARM_DEFAULT_NAN, RISCV)}


def policies() -> list[NanPolicy]:
    """The named presets."""
    return list(_POLICIES.values())


def policy(name: NanPolicy | str) -> NanPolicy:
    """Look a policy up by name (``"ieee"``, ``"x86"``, ``"arm_default_nan"``, ``"riscv"``).

    >>> policy("x86").default_negative
    True
    """
    if isinstance(name, NanPolicy):
        return name
    if isinstance(name, str) and name.strip().lower() in _POLICIES:
        return _POLICIES[name.strip().lower()]
    raise ValueError(f"unknown NaN policy {name!r}; accepted: {', '.join(_POLICIES)} "
                     "or an fpsim.nans.NanPolicy")


def payload(fmt: Format, code: int) -> tuple[int, int]:
    """``(payload, payload_bits)`` of a NaN code: the fraction bits below the
    quiet bit for IEEE-style formats, nothing for single-NaN formats."""
    if fmt.specials == "ieee":
        bits = fmt.mantissa_bits - 1
        return code & ((1 << bits) - 1), bits
    return 0, 0


def default_nan(fmt: Format, pol: NanPolicy = IEEE) -> int:
    """The NaN an invalid operation creates in ``fmt`` under ``pol``.

    >>> from fpsim.formats import FP32, E4M3
    >>> hex(default_nan(FP32)), hex(default_nan(FP32, X86)), hex(default_nan(E4M3))
    ('0x7fc00000', '0xffc00000', '0x7f')
    """
    return nan_code(fmt, pol.default_negative)


def convert_nan(src: Format, code: int, dst: Format, pol: NanPolicy = IEEE) -> tuple[int, int]:
    """The NaN of ``dst`` that the NaN ``code`` of ``src`` converts to, with
    the flags raised (an int of :class:`fpsim.Flag` bits)."""
    flags = INVALID if src.is_signaling_code(code) else 0
    if not pol.propagate:
        return default_nan(dst, pol), flags
    # An FNUZ format's single NaN is the "-0" code: its sign bit carries, as
    # ml_dtypes does (float8_e4m3fnuz NaN -> float32 0xFFC00000).
    negative = bool(code & src.sign_bit)
    if dst.specials != "ieee":
        return nan_code(dst, negative), flags
    value, bits = payload(src, code)
    dst_bits = dst.mantissa_bits - 1
    value = value << (dst_bits - bits) if dst_bits >= bits else value >> (bits - dst_bits)
    return nan_code(dst, negative) | value, flags


def propagate(fmt: Format, codes: Sequence[int], pol: NanPolicy = IEEE) -> tuple[int, int]:
    """The NaN result of an operation on operands ``codes`` (all of ``fmt``,
    in operand order, at least one a NaN), with its flags.

    >>> from fpsim.formats import FP16
    >>> [hex(v) for v in propagate(FP16, [0x7E05, 0x7C01])]       # the signaling one
    ['0x7e01', '0x1']
    >>> [hex(v) for v in propagate(FP16, [0x7E05, 0x7C01], X86)]  # the first one
    ['0x7e05', '0x1']
    """
    nans = [c for c in codes if fmt.is_nan_code(c)]
    signaling = [c for c in nans if fmt.is_signaling_code(c)]
    flags = INVALID if signaling else 0
    if not nans:
        raise ValueError("propagate() needs at least one NaN operand")
    chosen = signaling[0] if signaling and pol.prefer_signaling else nans[0]
    return convert_nan(fmt, chosen, fmt, pol)[0], flags
