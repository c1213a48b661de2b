"""Platform conversion profiles: what real stacks do, as fpsim context settings.

A :class:`Profile` names a stack (a library, an operator specification, an
instruction) and states the :class:`~fpsim.Context` settings that reproduce
its conversions: the rounding mode, saturation, flush-to-zero and the NaN
policy, with per-format overrides where the stack treats formats differently
(PyTorch saturates E4M3 but not E5M2).  What no context setting can express
(which NaN code a stack writes, how it reads a negative E8M0 input) is stated
in :attr:`Profile.notes`, per format, and not papered over.

Every profile says how it was established (:attr:`Profile.source`): measured
on the installed library (``tests/test_stacks.py`` re-measures it on every
run) or read from a specification.

>>> from fpsim.testing import profile
>>> import fpsim
>>> fpsim.E4M3.round(1000, profile("ml_dtypes").context())      # overflow: NaN
Float(e4m3, 0x7f, nan)
>>> fpsim.E4M3.round(1000, profile("torch").context("e4m3"))    # torch saturates E4M3
Float(e4m3, 0x7e, 448)
>>> fpsim.E5M2.round(1e6, profile("torch").context("e5m2"))     # ...but not E5M2
Float(e5m2, 0x7c, inf)
>>> fpsim.E5M2.round(float("inf"), profile("cuda_satfinite").context("e5m2"))
Float(e5m2, 0x7b, 57344)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ..context import Context
from ..formats import Format
from ..formats import format as _lookup

__all__ = ["Profile", "profile", "profiles"]

_SETTINGS = ("rounding", "saturate", "ftz", "daz", "tininess", "nan")


def _frozen(mapping: Mapping[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(dict(mapping))


@dataclass(frozen=True)
class Profile:
    """What one stack does when it converts (and, where stated, computes).

    name:
        The key :func:`profile` looks up.
    description:
        The stack and the operations the profile covers.
    source:
        How the settings were established: measured (library and version) or
        read from a specification (document and section).
    settings:
        The context settings for every format (names as :class:`~fpsim.Context`
        takes them: ``rounding``, ``saturate``, ``ftz``, ``daz``, ``tininess``,
        ``nan``).
    formats:
        Per-format overrides of ``settings``, by format name.
    notes:
        Per-format behaviour that no context setting expresses (by format
        name; ``"*"`` for all formats).  A result that a note covers may
        differ from fpsim's under :meth:`context`.
    """

    name: str
    description: str
    source: str
    settings: Mapping[str, Any] = field(default_factory=dict)
    formats: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    notes: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for where, values in [("settings", self.settings), *self.formats.items()]:
            unknown = set(values) - set(_SETTINGS)
            if unknown:
                raise ValueError(f"profile {self.name!r}: unknown setting(s) "
                                 f"{', '.join(sorted(unknown))} in {where}")
            Context(**values)  # validate the values now
        for name in (*self.formats, *self.notes):
            if name != "*":
                _lookup(name)
        object.__setattr__(self, "settings", _frozen(self.settings))
        object.__setattr__(self, "formats",
                           _frozen({k: _frozen(v) for k, v in self.formats.items()}))
        object.__setattr__(self, "notes", _frozen(self.notes))

    def __hash__(self) -> int:
        return hash(self.name)

    def __reduce__(self) -> tuple[Any, ...]:
        # A preset comes back as the preset itself; another profile through
        # the constructor (the read-only mappings do not pickle: it takes dicts).
        if _PROFILES.get(self.name) == self:
            return (profile, (self.name,))
        return (Profile, (self.name, self.description, self.source, dict(self.settings),
                          {k: dict(v) for k, v in self.formats.items()}, dict(self.notes)))

    def settings_for(self, fmt: Format | str | None = None) -> dict[str, Any]:
        """The settings for conversions into ``fmt`` (the profile's
        settings, then the format's overrides).

        >>> profile("onnx_saturate").settings_for("fp16")    # saturate is for float8 only
        {'rounding': 'rne', 'saturate': False, 'ftz': False, 'nan': 'ieee'}
        """
        settings = dict(self.settings)
        if fmt is not None:
            settings.update(self.formats.get(_lookup(fmt).name, {}))
        return settings

    def context(self, fmt: Format | str | None = None, **overrides: Any) -> Context:
        """A new :class:`~fpsim.Context` with the profile's settings for
        conversions into ``fmt`` (default: the settings shared by all
        formats), and ``overrides`` on top.

        >>> ctx = profile("onnx_saturate").context("e4m3", rounding="rtz")
        >>> ctx.rounding.value, ctx.saturate
        ('rtz', True)
        """
        return Context(**{**self.settings_for(fmt), **overrides})

    def note(self, fmt: Format | str) -> str:
        """The notes that apply to ``fmt`` (its own and the ``"*"`` note),
        or ``""``.

        >>> profile("numpy").note("bf16")
        ''
        """
        name = _lookup(fmt).name
        return " ".join(n for n in (self.notes.get("*", ""), self.notes.get(name, "")) if n)


_RNE = {"rounding": "rne", "saturate": False, "ftz": False, "nan": "ieee"}
_E8M0_SUBNORMAL = ("An FP32 subnormal input between 2**-127 and 1.5 * 2**-127 gives 2**-126 "
                   "(code 0x01) where 2**-127 (0x00) is nearer: the rounding reads the FP32 "
                   "fraction's top bit as if the input were normal.")

ML_DTYPES = Profile(
    "ml_dtypes",
    "ml_dtypes astype() casts into bfloat16, float8_*, float6_*, float4_e2m1fn and "
    "float8_e8m0fnu from float32 and float64",
    "Measured on ml_dtypes 0.6.0 (tests/test_stacks.py casts every code of a structured "
    "float32 and float64 sample: ties, overflow thresholds, subnormal boundaries, infinities, "
    "NaNs): round to nearest even; overflow to infinity (E5M2) or NaN (formats without "
    "infinity, including E4M3: 1000 gives NaN, not 448); no flush to zero. E8M0 rounds to the "
    "nearest power of two, ties up (3 gives 4), and zero, negative values and infinities give "
    "NaN, as fpsim does.",
    _RNE,
    notes={
        "*": "Casts from float64 round to float32 first, then into the format: two roundings "
             "(431.99999999999994, just below the tie 432 between E4M3's 416 and 448, gives "
             "448, not 416); fpsim rounds once. From float32 the casts agree.",
        "e8m0": _E8M0_SUBNORMAL,
        "bf16": "A NaN becomes the quiet NaN of its sign with no payload (0x7fc0 or 0xffc0); "
                "fpsim keeps the payload's top bits (FP32 0x7fe00000 gives 0x7fe0).",
        "e5m2": "A NaN becomes the quiet NaN of its sign with no payload (0x7e or 0xfe); "
                "fpsim keeps the payload's top bit (FP32 0x7fe00000 gives 0x7f).",
        **{name: "A NaN (this format has none) gives a zero of the OPPOSITE sign (+NaN gives "
                 "-0); fpsim raises ValueError. Infinities saturate to ±max, as fpsim does."
           for name in ("e3m2", "e2m3", "e2m1")},
    },
)

NUMPY = Profile(
    "numpy",
    "numpy float16: astype() from float32/float64, and the elementwise add, subtract, "
    "multiply, divide and sqrt ufuncs (x86-64)",
    "Measured on numpy 2.4 on x86-64 (tests/test_stacks.py: every FP16 code for sqrt, every "
    "code against notable codes and 10**6 random pairs for the binary operations): results "
    "equal fpsim's round to nearest even bit for bit, NaN codes included under the x86 NaN "
    "policy (the operation is done in float32 by SSE, whose invalid operations give the "
    "negative default NaN 0xfe00 and whose NaN operands propagate). np.add and np.multiply "
    "return the NaN of the SECOND operand when both are NaN: the compiler may commute them "
    "(fpsim.array.add(y, x, nan='x86') matches np.add(x, y)). float16 sum() accumulates in "
    "FP32, in numpy's pairwise order, then rounds once to FP16 (docs/stacks.rst).",
    {**_RNE, "nan": "x86"},
    notes={
        "fp16": "float32 -> float16 astype keeps a signaling NaN signaling (0x7f800001 gives "
                "0x7c01: payload truncated, a nonzero bit kept) where fpsim quiets it (0x7e00).",
    },
)

TORCH = Profile(
    "torch",
    "PyTorch CPU Tensor.to() casts from float32 into float16, bfloat16, float8_e4m3fn, "
    "float8_e5m2, the FNUZ float8 types and float8_e8m0fnu",
    "Measured on torch 2.13.0+cpu (tests/test_stacks.py): round to nearest even; "
    "float8_e4m3fn SATURATES (1000 and inf give 448, -inf gives -448) while float8_e5m2 "
    "overflows to infinity and the FNUZ types to NaN. This depends on the version: torch "
    "2.11 (CPU and CUDA, measured on an H100) gives NaN for E4M3 overflow, as "
    "context('e4m3', saturate=False) does; its CUDA NaN codes are in docs/stacks.rst. "
    "float16 NaNs are quieted with the payload's top bits kept, as fpsim's IEEE policy "
    "does. fp16/bf16 matmul accumulates in FP32; no declared order of fpsim.ops.matmul "
    "reproduces every element (docs/stacks.rst).",
    _RNE,
    formats={"e4m3": {"saturate": True}},
    notes={
        "*": "A float64 tensor cast into float8 rounds to float32 first (431.99999999999994 "
             "gives E4M3 448, not 416), as ml_dtypes does; the tests cast from float32.",
        "bf16": "Every NaN becomes 0xffff (negative, all payload bits set) for tensors of "
                "one dimension or more, 0x7fc0 for a 0-d tensor; fpsim keeps sign and payload.",
        "e5m2": "A NaN becomes 0x7f or 0xff (its sign, all mantissa bits set); fpsim gives "
                "0x7e or 0xfe for the default NaN.",
        "e8m0": "Zero gives 0x00 (2**-127) and a negative value gives the code of its "
                "magnitude; fpsim (and ml_dtypes) give NaN. " + _E8M0_SUBNORMAL,
    },
)

ONNX_SATURATE = Profile(
    "onnx_saturate",
    "ONNX Cast (and CastLike, QuantizeLinear) with saturate=1, the default",
    "From the specification (onnx docs/Operators.md, Cast, opsets 19 to 25): with saturate=1 a "
    "float8 result beyond FLT_MAX, after rounding to nearest even, is ±FLT_MAX, and so are "
    "±inf for E4M3FN and E5M2; saturate applies to float8 conversions only. Cast-24 adds "
    "float8e8m0 with round_mode, 'up' by default. Not measured: onnx and onnxruntime are "
    "not installed here.",
    {**_RNE, "saturate": True},
    formats={
        **{name: {"saturate": False} for name in ("fp64", "fp32", "tf32", "bf16", "fp16")},
        "e8m0": {"rounding": "rup"},
    },
    notes={
        "e4m3fnuz": "±inf gives NaN even with saturate=1 (fpsim's saturate clamps infinities "
                    "to ±max).",
        "e5m2fnuz": "±inf gives NaN even with saturate=1 (fpsim's saturate clamps infinities "
                    "to ±max).",
        "e8m0": "0 gives E8M0_MIN (code 0x00) under saturate; fpsim gives NaN. -0 and "
                "negative inputs are unspecified.",
        "*": "The specification says NaN gives NaN without naming the code.",
    },
)

CUDA_SATFINITE = Profile(
    "cuda_satfinite",
    "NVIDIA PTX cvt.rn.satfinite (float8 e4m3x2/e5m2x2, f16, bf16) and the cuda_fp8.h "
    "conversions with __NV_SATFINITE",
    "From the PTX ISA (cvt, .satfinite: a NaN input gives NaN; |x| > MAX_NORM, infinities "
    "included, gives ±MAX_NORM) and cuda_fp8.hpp's reference code of __nv_cvt_double_to_fp8 "
    "(round to nearest even; inputs above MAX_NORM + 1/2 ulp, infinities included, give "
    "MAX_NORM with the input's sign). Not measured: no GPU in this build.",
    {**_RNE, "saturate": True},
    notes={
        "e4m3": "Every NaN becomes 0x7f (the sign is dropped: cuda_fp8.hpp canonicalizes a "
                "float NaN to 0x7fffffff first); fpsim keeps the sign (0xff).",
        "e5m2": "Every NaN becomes 0x7f (positive, all mantissa bits set); fpsim gives 0x7e "
                "or 0xfe for the default NaN.",
    },
)

_PROFILES = {p.name: p for p in (ML_DTYPES, NUMPY, TORCH, ONNX_SATURATE, CUDA_SATFINITE)}


def profiles() -> list[Profile]:
    """Every named profile.

    >>> [p.name for p in profiles()]
    ['ml_dtypes', 'numpy', 'torch', 'onnx_saturate', 'cuda_satfinite']
    """
    return list(_PROFILES.values())


def profile(name: str | Profile) -> Profile:
    """The profile named ``name`` (case and surrounding spaces ignored).

    >>> profile("torch").settings_for("e4m3")["saturate"]
    True
    >>> profile("tensorflow")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
      ...
    ValueError: unknown profile 'tensorflow'; accepted: ml_dtypes, numpy, torch, ...
    """
    if isinstance(name, Profile):
        return name
    if isinstance(name, str) and name.strip().lower() in _PROFILES:
        return _PROFILES[name.strip().lower()]
    raise ValueError(f"unknown profile {name!r}; accepted: {', '.join(_PROFILES)}")
