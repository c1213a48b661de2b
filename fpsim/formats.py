"""Format descriptions: a handful of parameters from which every limit,
every special code and every later behaviour is derived.

A :class:`Format` is immutable.  Nothing elsewhere in fpsim tests a format's
name; where formats behave differently, a parameter here says so.

>>> FP16.max, FP16.min_subnormal
(Fraction(65504, 1), Fraction(1, 16777216))
>>> E4M3.max, E5M2.max
(Fraction(448, 1), Fraction(57344, 1))
>>> format("bfloat16") is BF16
True
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from . import _names
from ._locks import ForkSafeLock

if TYPE_CHECKING:  # pragma: no cover
    from .context import Context
    from .value import Float

__all__ = [
    "Specials", "Format", "format", "formats", "register",
    "FP64", "FP32", "TF32", "FP16", "BF16", "E4M3", "E5M2", "E4M3FNUZ", "E5M2FNUZ",
    "E3M2", "E2M3", "E2M1", "E8M0", "E3M4", "E4M3IEEE", "E4M3B11FNUZ", "p3109",
]


class Specials(str, enum.Enum):
    """Which codes are infinities and NaNs.

    ``IEEE``  the top exponent field is reserved: fraction 0 is ±inf, any other
              fraction is NaN (quiet when the fraction's top bit is set).
    ``FN``    finite + NaN (OCP E4M3): only the all-ones exponent *and*
              fraction (S.1111.111) is NaN, the rest of the top binade holds
              finite values.
    ``FNUZ``  finite, NaN, unsigned zero (ml_dtypes ``float8_*fnuz``): no
              negative zero; the code of "-0" (sign bit alone) is the single
              NaN.
    ``NONE``  every code is finite (OCP MX FP6/FP4 elements).

    ``FN`` and ``FNUZ`` formats have no infinity unless the format says
    ``infinities=True`` (IEEE P3109's extended domain): then the largest
    magnitude that is not NaN is ±inf.
    """

    IEEE = "ieee"
    FN = "fn"
    FNUZ = "fnuz"
    NONE = "none"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, eq=True)
class Format:
    """A binary floating-point format.

    Parameters
    ----------
    name:
        Canonical lower-case name, e.g. ``"fp16"``.
    exponent_bits:
        Width of the exponent field.
    mantissa_bits:
        Width of the stored fraction field.
    bias:
        Exponent bias: a normal code with exponent field ``E`` has value
        ``1.f × 2**(E - bias)``.
    specials:
        Which codes are Inf/NaN, see :class:`Specials`.
    subnormals:
        ``True`` (default): exponent field 0 holds zero and the subnormals
        ``0.f × 2**(1 - bias)``.  ``False``: exponent field 0 is an ordinary
        binade ``1.f × 2**(0 - bias)`` and the format has no zero (OCP E8M0).
    signed:
        ``False`` for formats without a sign bit.
    aliases:
        Other names accepted by :func:`format` (case-insensitive).
    infinities:
        For ``fn`` and ``fnuz`` formats: ``True`` makes the largest magnitude
        code that is not a NaN ±inf (IEEE P3109's extended domain: 0x7F and
        0xFF in binary8p3se, 0xFE in the unsigned binary8p3ue).  IEEE-style
        formats always have infinities (the attribute is then ``True``);
        ``none`` formats cannot (they have no NaN for inf - inf).
    code_parity:
        ``True``: round-to-nearest-even and round-to-odd read the parity of
        the result's *code* instead of its significand.  The two differ only
        without fraction bits (``mantissa_bits == 0``): P3109's binary{K}p1
        formats break a tie between 2**e and 2**(e+1) toward the even code
        (P3109's CodeIsEven, gfloat), where E8M0 (OCP MX, ml_dtypes) takes
        the significand's parity, which always rounds such a tie up.
    p3109:
        ``True`` for the IEEE P3109 formats (:func:`fpsim.formats.p3109`
        makes them): results in them follow the P3109 rules the context's
        ``p3109`` setting names (division by zero, negative values into an
        unsigned format, round to odd beyond the largest value: spec/p3109.md).

    Examples
    --------
    Every limit is derived, exactly:

    >>> f = Format("e3m2", exponent_bits=3, mantissa_bits=2, bias=3, specials="none")
    >>> f.max, f.min_normal, f.min_subnormal, f.eps, f.width
    (Fraction(28, 1), Fraction(1, 4), Fraction(1, 16), Fraction(1, 4), 6)
    """

    name: str
    exponent_bits: int
    mantissa_bits: int
    bias: int
    specials: Specials = Specials.IEEE
    subnormals: bool = True
    signed: bool = True
    aliases: tuple[str, ...] = field(default=(), compare=False)
    infinities: bool = False
    code_parity: bool = False
    p3109: bool = False

    # Derived attributes are plain instance attributes (set once in
    # __post_init__) rather than properties: the rounding kernel reads them on
    # every call and attribute lookup is the cheapest access Python has.
    if TYPE_CHECKING:  # pragma: no cover
        width: int
        precision: int
        emax: int
        emin: int
        sign_bit: int
        magnitude_mask: int
        max_code: int
        max: Fraction
        min_normal: Fraction
        min_subnormal: Fraction
        eps: Fraction
        has_inf: bool
        has_nan: bool
        has_zero: bool
        has_negative_zero: bool
        inf_code: int | None
        default_nan_code: int | None

    def __post_init__(self) -> None:
        _check_parameters(self)
        setattr_ = object.__setattr__
        setattr_(self, "specials", Specials(self.specials))
        setattr_(self, "aliases", tuple(a.lower() for a in self.aliases))
        if self.specials is Specials.IEEE:
            setattr_(self, "infinities", True)
        e, m = self.exponent_bits, self.mantissa_bits
        width = int(self.signed) + e + m
        sign_bit = (1 << (e + m)) if self.signed else 0
        top_exponent = (1 << e) - 1
        all_ones = (1 << (e + m)) - 1
        sp = self.specials
        if sp is Specials.IEEE:
            max_code = (top_exponent << m) - 1
        elif sp is Specials.FN:
            max_code = all_ones - 1
        else:  # FNUZ and NONE: every positive code is finite
            max_code = all_ones
        # P3109's extended domain: the largest magnitude below the NaN is inf.
        extra_inf = self.infinities and sp is not Specials.IEEE
        if extra_inf:
            max_code -= 1
        emin = 1 - self.bias if self.subnormals else -self.bias
        emax = (max_code >> m) - self.bias
        frac_max = max_code & ((1 << m) - 1)
        max_value = Fraction((1 << m) + frac_max, 1 << m) * _pow2(emax)
        has_nan = sp is not Specials.NONE
        if sp is Specials.IEEE:
            default_nan = (top_exponent << m) | (1 << (m - 1)) if m > 0 else None
        elif sp is Specials.FN:
            default_nan = all_ones
        elif sp is Specials.FNUZ:
            default_nan = sign_bit
        else:
            default_nan = None
        inf_code = (top_exponent << m) if sp is Specials.IEEE else (
            max_code + 1 if extra_inf else None)
        # The kernel's hot path rounds by the significand's parity: formats
        # whose ties go by the code's parity (and differ: no fraction bits)
        # take the general path, which reads this base.
        parity_base = None
        base = ((emin - m) << m) + (0 if self.subnormals else (1 << m))
        if self.code_parity and m == 0:
            parity_base = base
        values = dict(
            width=width,
            precision=m + 1,
            emax=emax,
            emin=emin,
            sign_bit=sign_bit,
            magnitude_mask=all_ones,
            max_code=max_code,
            max=max_value,
            min_normal=_pow2(emin),
            min_subnormal=_pow2(emin - m) if self.subnormals else _pow2(emin),
            eps=_pow2(-m),
            has_inf=inf_code is not None,
            has_nan=has_nan,
            has_zero=self.subnormals,
            has_negative_zero=self.subnormals and self.signed and sp is not Specials.FNUZ,
            inf_code=inf_code,
            default_nan_code=default_nan,
            # The rounding kernel's constants, read in one attribute access:
            # those of its hot path (precision, mantissa_bits, quantum q of
            # the smallest subnormal, the base that makes a result's code
            # (q << mantissa_bits) + significand - base, max_code, sign bit),
            # then those of its general path (emin, subnormals, sign bit of a
            # negative zero, 0 where there is none, the quantum q of the
            # smallest subnormal, and the base of a code-parity format, None
            # elsewhere).  A format without subnormals has no code for the
            # implicit bit of its smallest binade: the base takes that bit off
            # too.  The hot path's least quantum is q, or infinity where the
            # code's parity decides ties (the hot path reads the significand's).
            _kernel=(m + 1, m, emin - m if parity_base is None else float("inf"),
                     base, max_code, sign_bit,
                     (emin, self.subnormals,
                      sign_bit if self.subnormals and sp is not Specials.FNUZ else 0,
                      emin - m, parity_base)),
            # fpsim.arith's division of a normal dividend (significand at
            # least 2**m) shifts it left by m + 3 bits: the integer quotient by
            # any significand then has at least p + 2 bits, and for formats up
            # to 16 bits the shifted dividend stays in one 30-bit digit of a
            # Python int (a two-digit division costs about a third of a div).
            _div=(m + 3, 1 << m),
            # fpsim.value's decoding of a finite code into significand and
            # exponent: (mantissa_bits, sign bit, magnitude mask, max_code,
            # the FNUZ NaN's code (-1 elsewhere), whether the smallest binade
            # is subnormal, exponent of a subnormal's significand, bias + m).
            _decoding=(m, sign_bit, all_ones, max_code, sign_bit if sp is Specials.FNUZ else -1,
                       self.subnormals, emin - m, self.bias + m),
            # Interned Float values of formats up to 16 bits (fpsim.value):
            # a list of 2**width slots filled on first use of each code.
            _floats=[None] * (1 << width) if width <= 16 else None,
        )
        for k, v in values.items():
            setattr_(self, k, v)

    # -- code classification -------------------------------------------------

    def is_nan_code(self, code: int) -> bool:
        """Whether ``code`` encodes a NaN in this format."""
        sp = self.specials
        if sp is Specials.IEEE:
            return (code & self.magnitude_mask) > self.inf_code  # type: ignore[operator]
        if sp is Specials.FN:
            return (code & self.magnitude_mask) == self.magnitude_mask
        if sp is Specials.FNUZ:
            return code == self.sign_bit
        return False

    def is_signaling_code(self, code: int) -> bool:
        """Whether ``code`` is a signaling NaN.  Only IEEE-style formats with
        a fraction field have them: the quiet bit is the fraction's top bit.
        The single NaN of FN/FNUZ formats is quiet."""
        if self.specials is not Specials.IEEE or not self.is_nan_code(code):
            return False
        return not (code >> (self.mantissa_bits - 1)) & 1

    def fields(self, code: int) -> tuple[int, int, int]:
        """Split a code into ``(sign, exponent_field, fraction_field)``.

        >>> FP16.fields(0x00A8)
        (0, 0, 168)
        """
        m = self.mantissa_bits
        sign = (code >> (self.exponent_bits + m)) & 1 if self.signed else 0
        return sign, (code >> m) & ((1 << self.exponent_bits) - 1), code & ((1 << m) - 1)

    def check_code(self, code: Any) -> int:
        """Validate a bit pattern for this format and return it as an int."""
        if isinstance(code, bool) or not hasattr(code, "__index__"):
            raise TypeError(
                f"bits for {self.name} must be an int, got {type(code).__name__}"
            )
        code = code.__index__()
        if not 0 <= code < (1 << self.width):
            raise ValueError(
                f"bits {code:#x} out of range for {self.name}: "
                f"accepted 0x0..0x{(1 << self.width) - 1:x} ({self.width} bits)"
            )
        return code

    def codes(self) -> range:
        """Every code of the format, in numeric code order.

        >>> len(E4M3.codes())
        256
        """
        return range(1 << self.width)

    # -- conveniences that delegate to the scalar layer -----------------------
    # The description above does not depend on them; they exist because
    # ``FP16.round(x)`` is how people want to spell it.

    def from_bits(self, bits: int) -> Float:
        """The value with bit pattern ``bits``.

        >>> FP16.from_bits(0x3C00)
        Float(fp16, 0x3c00, 1)
        """
        return _value._make(self, self.check_code(bits))

    def round(
        self, x: Any, ctx: Context | None = None, **overrides: Any
    ) -> Float:
        """Round ``x`` exactly once to this format.

        ``x`` may be an int, float, :class:`~fractions.Fraction`,
        :class:`~decimal.Decimal`, numpy scalar, :class:`~fpsim.Float` of any
        format, or a string (decimal of any length, C99 hex float, ``inf``,
        ``nan``, ``snan``).  Settings come from ``ctx`` (default: the current
        context) with keyword overrides ``rounding=``, ``saturate=``, ``ftz=``,
        ``daz=``, ``tininess=``, ``sr_bits=``, ``nan=``; ``random_bits=``
        supplies the random integer for stochastic rounding.  Flags accumulate
        into the context.  DAZ applies to inputs that are binary values
        (Python floats, numpy scalars, :class:`~fpsim.Float`), not to exact
        decimal or rational inputs.

        >>> FP16.round("1.000488281250000000001").bits == 0x3C01
        True
        >>> FP16.round("1.00048828125").bits == 0x3C00
        True
        >>> FP16.round(1e-5)
        Float(fp16, 0x00a8, 1.0013580322265625e-05)
        """
        return _value.round_to(self, x, ctx, overrides)

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        extra = "" if self.specials is Specials.IEEE else f", specials={self.specials.value!r}"
        if not self.subnormals:
            extra += ", subnormals=False"
        if not self.signed:
            extra += ", signed=False"
        if self.infinities and self.specials is not Specials.IEEE:
            extra += ", infinities=True"
        if self.code_parity:
            extra += ", code_parity=True"
        if self.p3109:
            extra += ", p3109=True"
        return (
            f"Format({self.name!r}, exponent_bits={self.exponent_bits}, "
            f"mantissa_bits={self.mantissa_bits}, bias={self.bias}{extra})"
        )

    # A Format is immutable: a copy is the format itself, and a pickled one
    # comes back as the registered or IEEE P3109 format it is where there is
    # one (pickle.loads(pickle.dumps(FP16)) is FP16), else as an equal Format.
    def __reduce__(self) -> tuple[Any, ...]:
        return (_unpickle, (self.name, self.exponent_bits, self.mantissa_bits, self.bias,
                            self.specials, self.subnormals, self.signed, self.aliases,
                            self.infinities, self.code_parity, self.p3109))

    def __copy__(self) -> Format:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Format:
        return self


def _unpickle(*parameters: Any) -> Format:
    """A pickled Format (its constructor's arguments, checked again): the
    registered or IEEE P3109 format of that name where it is the same format,
    aliases included; else a new Format."""
    fmt = Format(*parameters)
    try:
        known = format(fmt.name)
    except ValueError:
        return fmt
    return known if known == fmt and known.aliases == fmt.aliases else fmt


def _pow2(n: int) -> Fraction:
    return Fraction(1 << n) if n >= 0 else Fraction(1, 1 << -n)


def _check_parameters(f: Format) -> None:
    if not isinstance(f.name, str):
        raise TypeError(f"Format name must be a str, got {type(f.name).__name__}")
    if not f.name.strip():
        raise ValueError("Format name must be a non-empty string")
    for attr in ("exponent_bits", "mantissa_bits", "bias"):
        v = getattr(f, attr)
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError(f"Format {attr} must be an int, got {type(v).__name__}")
    if not isinstance(f.aliases, (tuple, list)) or not all(
            isinstance(a, str) for a in f.aliases):
        raise TypeError(f"Format aliases must be a tuple of str, got {f.aliases!r}")
    for attr in ("subnormals", "signed", "infinities", "code_parity", "p3109"):
        v = getattr(f, attr)
        if not isinstance(v, bool):
            raise TypeError(f"Format {attr} must be True or False, got {v!r}")
    if not 1 <= f.exponent_bits <= MAX_EXPONENT_BITS:
        # The bound keeps every format's range inside 2**±(2**20 + 4096),
        # which lets fpsim.parse decide any value beyond about 10**±316907
        # from its exponent alone (fpsim.parse.FAR_DECIMAL).
        raise ValueError(f"Format exponent_bits must be between 1 and {MAX_EXPONENT_BITS}, "
                         f"got {f.exponent_bits}")
    if not 0 <= f.mantissa_bits <= MAX_MANTISSA_BITS:
        raise ValueError(f"Format mantissa_bits must be between 0 and {MAX_MANTISSA_BITS}, "
                         f"got {f.mantissa_bits}")
    if not 0 <= f.bias < (1 << f.exponent_bits):
        raise ValueError(f"Format bias must be between 0 and 2**exponent_bits - 1 = "
                         f"{(1 << f.exponent_bits) - 1}, got {f.bias}")
    try:
        sp = Specials(f.specials)
    except ValueError:
        raise ValueError(
            f"Format specials must be one of ieee, fn, fnuz, none; got {f.specials!r}"
        ) from None
    if sp is Specials.IEEE and f.mantissa_bits < 1:
        raise ValueError("an IEEE-style format needs mantissa_bits >= 1 to encode NaN")
    if sp is Specials.IEEE and f.exponent_bits < 2:
        raise ValueError("an IEEE-style format needs exponent_bits >= 2")
    if sp is Specials.FNUZ and not f.signed:
        raise ValueError("an FNUZ format needs a sign bit: its NaN is the '-0' code")
    if f.infinities and sp is Specials.NONE:
        raise ValueError("infinities=True needs a NaN for inf - inf: specials fn or fnuz, "
                         "not none")
    if f.infinities and sp is not Specials.IEEE and not f.subnormals:
        raise ValueError("infinities=True is supported for formats with subnormals only")
    if not f.subnormals and f.signed:
        raise ValueError(
            "subnormals=False (no zero, exponent field 0 is a normal binade) "
            "is supported for unsigned formats such as E8M0 only"
        )


# Bounds wider than any format in use (IEEE binary256 has 19 and 236), which
# keep every format's magnitudes inside 2**±(2**21).
MAX_EXPONENT_BITS = 20
MAX_MANTISSA_BITS = 4096


# -- registry -----------------------------------------------------------------

# The registry and the P3109 formats made so far are shared by every thread:
# lookups are single dict reads; a registration (its check and its
# insertions, as one step) and every walk over either dict hold _LOCK.
_REGISTRY: dict[str, Format] = {}
_LOCK = ForkSafeLock(reentrant=True)


def register(fmt: Format) -> Format:
    """Make ``fmt`` findable by :func:`format` under its name and aliases
    (safe to call from several threads: of two different formats
    registered under one name at once, one is registered, the other
    refused)."""
    if not isinstance(fmt, Format):
        raise TypeError(f"register() takes a Format, got {type(fmt).__name__}")
    with _LOCK:
        for key in (fmt.name.lower(), *fmt.aliases):
            known = _REGISTRY.get(key)
            if known is not None and known != fmt:
                raise ValueError(f"format name {key!r} is already used by {known.name}")
        for key in (fmt.name.lower(), *fmt.aliases):
            _REGISTRY[key] = fmt
    return fmt


def format(name: str | Format) -> Format:  # noqa: A001 - the public name is the point
    """Look a format up by name or alias, case-insensitively.

    IEEE P3109 names (``binary{K}p{P}{s|u}{e|f}``, and gfloat's
    ``p3109_k{K}p{P}{s|u}{e|f}``) name the formats :func:`fpsim.formats.p3109` makes.

    >>> format("Half") is FP16, format("fp8_e4m3") is E4M3
    (True, True)
    >>> format("binary8p3se") is p3109(8, 3), format("binary11p5ue").bias
    (True, 64)
    """
    if isinstance(name, Format):
        return name
    if not isinstance(name, str):
        raise TypeError(f"format name must be a str, got {type(name).__name__}")
    key = name.strip().lower()
    fmt = _REGISTRY.get(key)
    if fmt is None:
        match = _P3109_NAME.fullmatch(key)
        if match is not None:
            k, p, s, d = match.groups()
            return p3109(int(k), int(p), signed=s == "s", extended=d == "e")
        raise ValueError(refusal(name))
    return fmt


# Names that could mean several formats, by their key (fpsim._names.key):
# refused with the candidates named, never guessed.
_AMBIGUOUS = {
    **dict.fromkeys(("fp8", "float8", "f8"),
                    "FP8 is e4m3 or e5m2 (OCP), or AMD MI300's e4m3fnuz or e5m2fnuz"),
    "mxfp8": "MXFP8's elements are e4m3 or e5m2 (its scales e8m0)",
    **dict.fromkeys(("fp6", "float6", "f6", "mxfp6"), "FP6 is e3m2 or e2m3 (OCP MX)"),
}
# Names of formats fpsim does not have as such, with what to use instead.
_INSTEAD = {
    "ue4m3": "NVFP4's unsigned block-scale format is not one of its own here: its codes "
             "0x00-0x7F are e4m3's, and the block-scaled models read its bytes as e4m3 with "
             "the sign bit ignored; use e4m3",
    **dict.fromkeys(("fp128", "float128", "binary128", "f128", "quad"),
                    "fpsim has no binary128 format; the widest is fp64"),
}
# Where every name is listed, for the messages.
LISTING = "fpsim.formats() or 'python -m fpsim formats' lists every format"


def refusal(name: str, names: Iterable[str] | None = None, listing: str | None = None) -> str:
    """The message for a format name :func:`format` does not know: the
    candidates of an ambiguous name (``fp8``), what to use for a format
    fpsim has not (``ue4m3``), or the nearest names (``fp-16``: did you
    mean fp16?) among ``names`` (default: the registered names and
    aliases; a caller's own, such as TestFloat's ``f16``), and then
    ``listing``: what the caller accepts (default: where every format is
    listed, after the nearest names).  For the modules that look formats
    up with names or choices of their own (:mod:`fpsim.testfloat`,
    :mod:`fpsim.mma.presets`).

    >>> refusal("fp-16").partition("?")[0]
    "unknown format 'fp-16'; did you mean fp16"
    >>> refusal("fp8").partition("(")[0]
    "format 'fp8' is ambiguous: FP8 is e4m3 or e5m2 "
    """
    wanted = _names.key(name)
    if wanted in _AMBIGUOUS:
        text = f"format {name!r} is ambiguous: {_AMBIGUOUS[wanted]}; name one"
        return text if listing is None else f"{text} ({listing})"
    if wanted in _INSTEAD:
        text = f"unknown format {name!r}: {_INSTEAD[wanted]}"
        return text if listing is None else f"{text} ({listing})"
    with _LOCK:
        registered = dict(_REGISTRY)
    candidates = registered if names is None else list(names)
    near = _names.nearest(name, candidates, n=8) if len(wanted) <= 40 else []
    shown: list[str] = []
    seen: set[Any] = set()
    for n in near:  # one name per format: its own where that is near, else the alias
        fmt = registered.get(n)
        if fmt is not None and fmt.name in near:
            n = fmt.name
        if (fmt or n) in seen or len(shown) == 3:
            continue
        seen.add(fmt or n)
        shown.append(n if fmt is None or fmt.name == n else f"{n} ({fmt.name})")
    text = f"unknown format {name!r}"
    if shown:
        text += f"; did you mean {_names.alternatives(shown)}?"
    listing = LISTING if listing is None else listing
    if wanted.startswith(("binary", "p3109")):
        listing = (f"IEEE P3109's are binary{{K}}p{{P}}{{s|u}}{{e|f}}, K from {P3109_MIN_K} to "
                   f"{P3109_MAX_K}, P from 1 to K-1 (s) or to K (u); {listing}")
    return f"{text} ({listing})"


def formats() -> list[Format]:
    """Every registered format, each once, widest first; within a width the
    IEEE P3109 formats (:func:`fpsim.formats.p3109`) come after the others, by precision,
    signed before unsigned, extended before finite.

    >>> [f.name for f in formats()][:3]
    ['fp64', 'fp32', 'tf32']
    """
    with _LOCK:  # (another thread may be registering or making formats)
        registered, made = list(_REGISTRY.values()), list(_P3109.values())
    seen: dict[str, Format] = {}
    for f in registered:
        seen.setdefault(f.name, f)
    family = {id(f) for f in made}

    def key(f: Format) -> tuple[Any, ...]:
        if id(f) in family:
            return (-f.width, 1, f.precision, not f.signed, not f.infinities)
        return (-f.width, 0, -f.exponent_bits, f.name)
    return sorted(seen.values(), key=key)


FP64 = register(Format("fp64", 11, 52, 1023, aliases=("float64", "binary64", "double")))
FP32 = register(Format("fp32", 8, 23, 127, aliases=("float32", "binary32", "single")))
TF32 = register(Format("tf32", 8, 10, 127, aliases=("tensorfloat32",)))
FP16 = register(Format("fp16", 5, 10, 15, aliases=("float16", "binary16", "half")))
BF16 = register(Format("bf16", 8, 7, 127, aliases=("bfloat16",)))
E4M3 = register(Format("e4m3", 4, 3, 7, Specials.FN,
                       aliases=("fp8_e4m3", "float8_e4m3fn", "e4m3fn", "fp8_e4m3fn")))
E5M2 = register(Format("e5m2", 5, 2, 15, aliases=("fp8_e5m2", "float8_e5m2")))
E4M3FNUZ = register(Format("e4m3fnuz", 4, 3, 8, Specials.FNUZ,
                           aliases=("float8_e4m3fnuz", "fp8_e4m3fnuz")))
E5M2FNUZ = register(Format("e5m2fnuz", 5, 2, 16, Specials.FNUZ,
                           aliases=("float8_e5m2fnuz", "fp8_e5m2fnuz")))

# OCP Microscaling (MX) v1.0 element and scale formats: every code finite
# (no infinity, no NaN) for the FP6 and FP4 elements; E8M0 is the unsigned
# power-of-two scale 2**(c - 127) with 0xFF its NaN and no zero.
E3M2 = register(Format("e3m2", 3, 2, 3, Specials.NONE,
                       aliases=("fp6_e3m2", "float6_e3m2fn", "mxfp6_e3m2")))
E2M3 = register(Format("e2m3", 2, 3, 1, Specials.NONE,
                       aliases=("fp6_e2m3", "float6_e2m3fn", "mxfp6_e2m3")))
E2M1 = register(Format("e2m1", 2, 1, 1, Specials.NONE,
                       aliases=("fp4", "fp4_e2m1", "float4_e2m1fn", "mxfp4", "nvfp4")))
E8M0 = register(Format("e8m0", 8, 0, 127, Specials.FN, subnormals=False, signed=False,
                       aliases=("float8_e8m0fnu", "e8m0fnu", "ue8m0")))

# ml_dtypes' other float8 types, under their own names and meanings: E3M4
# and E4M3 IEEE-like (infinities, NaNs filling the top binade); E4M3B11FNUZ
# the "fnuz" layout with bias 11 (max 30).  fpsim's ``e4m3`` is OCP's E4M3FN
# (ml_dtypes float8_e4m3fn); ml_dtypes' float8_e4m3 is ``e4m3ieee`` here.
E3M4 = register(Format("e3m4", 3, 4, 3, aliases=("float8_e3m4", "fp8_e3m4")))
E4M3IEEE = register(Format("e4m3ieee", 4, 3, 7, aliases=("float8_e4m3",)))
E4M3B11FNUZ = register(Format("e4m3b11fnuz", 4, 3, 11, Specials.FNUZ,
                              aliases=("float8_e4m3b11fnuz", "fp8_e4m3b11fnuz")))


# -- IEEE P3109 ----------------------------------------------------------------

P3109_MIN_K = 3
P3109_MAX_K = 16
_P3109_NAME = re.compile(r"(?:binary|p3109_k)(\d+)p(\d+)([su])([ef])")
_P3109: dict[tuple[int, int, bool, bool], Format] = {}


def p3109(k: int, p: int, signed: bool = True, extended: bool = True) -> Format:
    """The IEEE P3109 format binary{K}p{P}{s|u}{e|f}: ``k`` bits, precision
    ``p`` (significand bits, the implicit one included), signed or unsigned,
    extended (with infinities) or finite.

    The semantics are those of the P3109 Interim Report as gfloat 0.5
    implements it (``format_info_p3109``; spec/p3109.md): exponent bias
    2**(K-P-1) (signed) or 2**(K-P) (unsigned); subnormals; one NaN, the
    code of "-0" (0x80 in eight bits) where signed, the all-ones code where
    unsigned; no negative zero; in the extended domain ±inf is the largest
    magnitude below the NaN (0x7F/0xFF signed, 0xFE unsigned).  A P=1
    format has no fraction bits: its codes are 0 and the powers 2**(E-bias),
    and round to nearest breaks ties toward the even code.  K goes from 3 to
    16, P from 1 to K-1 (signed) or K (unsigned).

    >>> f = p3109(8, 3)
    >>> f.name, f.max, hex(f.inf_code), hex(f.default_nan_code)
    ('binary8p3se', Fraction(49152, 1), '0x7f', '0x80')
    >>> p3109(8, 4, signed=False, extended=False).max   # 0xFE = 1.75 × 2**(31 - 16)
    Fraction(57344, 1)
    """
    for what, v in (("k", k), ("p", p)):
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError(f"p3109() {what} must be an int, got {type(v).__name__}")
    for what, v in (("signed", signed), ("extended", extended)):
        if not isinstance(v, bool):
            raise TypeError(f"p3109() {what} must be True or False, got {v!r}")
    top = k - 1 if signed else k
    if not P3109_MIN_K <= k <= P3109_MAX_K or not 1 <= p <= top:
        raise ValueError(
            f"IEEE P3109 has no {'signed' if signed else 'unsigned'} format with K={k}, P={p}; "
            f"accepted: K from {P3109_MIN_K} to {P3109_MAX_K}, and P from 1 to K-1 for signed "
            "formats, from 1 to K for unsigned ones"
        )
    key = (k, p, signed, extended)
    fmt = _P3109.get(key)
    if fmt is None:
        tag = f"{k}p{p}{'s' if signed else 'u'}{'e' if extended else 'f'}"
        e = k - p + (0 if signed else 1)
        fmt = Format(f"binary{tag}", e, p - 1, 1 << (e - 1),
                     Specials.FNUZ if signed else Specials.FN, signed=signed,
                     aliases=(f"p3109_k{tag}",), infinities=extended, code_parity=p == 1,
                     p3109=True)
        with _LOCK:  # one object per format, whichever thread made it first
            fmt = _P3109.setdefault(key, fmt)
    return fmt


# The eight-bit P3109 formats are registered (listed by formats(), in the
# docs and in spec/formats.json); the others are made on first use by name.
for _p in range(1, 9):
    for _signed in (True, False):
        for _extended in (True, False):
            if _p < 8 or not _signed:
                register(p3109(8, _p, _signed, _extended))
del _p, _signed, _extended

# ``fpsim.formats`` is this function at the package level: the constructor
# is reachable as ``fpsim.formats.p3109`` too.
formats.p3109 = p3109  # type: ignore[attr-defined]

from . import value as _value  # noqa: E402  (the conveniences above call rightward)
