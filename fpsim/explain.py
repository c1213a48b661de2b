"""What happens to a value in a format, in words and numbers.

:func:`explain` rounds a value into a format (or decodes a bit pattern) and
reports the bits, the fields, the exact value, the error, the neighbours, the
flags and plain-language notes; :func:`render` prints that report for people.
This is the engine of ``python -m fpsim explain``.

>>> r = explain("1e-5", "fp16")
>>> r["bits"], r["value"], r["class"], r["flags"]
('0x00a8', '1.0013580322265625e-05', 'subnormal', ['underflow', 'inexact'])
>>> r["ulp_error"]
'0.22784'

Errors are signed, one convention for all three: result minus the exact
input (positive when the result lies above it), absolute, relative to
``|input|``, and in units in the last place.  Long exact decimals are given
short as well (``r["short"]``): :func:`short` writes ``2^-133 ~ 9.18e-41``.
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Any

from . import parse
from .context import Context
from .formats import Format, format
from .modes import P3109, STOCHASTIC, Flag, Rounding, Saturation
from .rounding import p3109_applies
from .value import Float, exact_decimal

__all__ = ["explain", "explain_bits", "render", "describe_format", "short", "DEFAULT_SEED",
           "ERROR_CONVENTION"]

DEFAULT_SEED = 0
"""The seed of stochastic rounding's random bits when none is given, so that
every run gives the same result (as :class:`~fpsim.Context` does by default)."""

ERROR_CONVENTION = "result - exact (positive: the result is above the exact value)"
"""The sign of ``abs_error``, ``rel_error`` (over ``|exact|``) and ``ulp_error``."""

# Exact decimals up to this many significant digits are short enough to show
# (every FP16 and BF16 value, most FP32 normals); longer ones are abridged.
_SHORT_DIGITS = 25

# A hex integer (no point, no exponent), which people often mean as a code.
_HEX_INTEGER = re.compile(r"0[xX][0-9a-fA-F_]+")

_MODE_WORDS = {
    Rounding.RNE: "round to nearest, ties to even",
    Rounding.RNA: "round to nearest, ties away from zero",
    Rounding.RTZ: "round toward zero",
    Rounding.RUP: "round toward +infinity",
    Rounding.RDN: "round toward -infinity",
    Rounding.RAZ: "round away from zero",
    Rounding.RTO: "round to odd",
    Rounding.SR: "stochastic rounding",
    Rounding.SR_B: "stochastic rounding (P3109 StochasticB)",
    Rounding.SR_C: "stochastic rounding (P3109 StochasticC)",
}


def describe_format(fmt: Format) -> str:
    """One line on the layout of ``fmt``.

    >>> describe_format(format("e4m3"))
    'e4m3: 1 sign, 4 exponent, 3 fraction bits; bias 7; no infinities, NaN = S.1111.111'
    >>> describe_format(format("e8m0"))
    'e8m0: no sign, 8 exponent, 0 fraction bits; bias 127; no infinities, NaN = 11111111'
    >>> describe_format(format("binary8p3se"))[50:]
    'bias 16; ±inf = 0x7f/0xff, no -0, single NaN 0x80'
    """
    sign = "1 sign" if fmt.signed else "no sign"
    # The all-ones code as fields: S.EEEE.MMM, without a sign field in an
    # unsigned format (E8M0's NaN is 11111111).
    ones = ".".join(["S"] * fmt.signed + ["1" * fmt.exponent_bits]
                    + ["1" * fmt.mantissa_bits] * bool(fmt.mantissa_bits))
    # P3109's extended formats: ±inf at the largest magnitude below the NaN
    if fmt.has_inf and fmt.specials.value != "ieee":
        inf = fmt.inf_code
        infs = f"±inf = 0x{inf:x}/0x{inf | fmt.sign_bit:x}" if fmt.signed else f"inf = 0x{inf:x}"
    else:
        infs = "no infinities"
    specials = {
        "ieee": "IEEE infinities and NaNs",
        "fn": f"{infs}, NaN = {ones}",
        "fnuz": f"{infs}, no -0, single NaN 0x{fmt.sign_bit:x}",
        "none": "no infinities, no NaN",
    }[fmt.specials.value]
    bits = "bit" if fmt.mantissa_bits == 1 else "bits"
    return (f"{fmt.name}: {sign}, {fmt.exponent_bits} exponent, {fmt.mantissa_bits} fraction "
            f"{bits}; bias {fmt.bias}; {specials}")


def explain(value: Any, fmt: Format | str, *, rounding: Rounding | str = "rne",
            saturate: bool = False, ftz: bool = False, daz: bool = False,
            tininess: str = "after", seed: int | None = None,
            p3109: str = "v4.0") -> dict[str, Any]:
    """Round ``value`` into ``fmt`` and report what happened (a JSON-ready dict).

    Keys: ``input``, ``input_value``, ``format``, ``layout``, ``rounding``,
    ``seed`` (stochastic rounding's, else None), ``saturate``, ``ftz``,
    ``bits``, ``fields``, ``value``, ``class``, ``ieee_class``,
    ``abs_error``, ``rel_error``, ``ulp_error``, ``error_convention``,
    ``flags``, ``next_down``, ``next_up``, ``notes``, ``short``.  Exact
    quantities are decimal strings; an approximation (a non-terminating
    rational) starts with ``~``.  ``short`` holds the same quantities in a
    few characters (see :func:`~fpsim.explain.short`).  The errors are signed as
    :data:`~fpsim.explain.ERROR_CONVENTION` says.  A hex integer is a
    number (``"0x3C00"`` is 15360), and the first note says so: a code is
    what :func:`explain_bits` decodes.

    >>> explain("1000", "e4m3")["value"], explain("1000", "e4m3", saturate=True)["value"]
    ('nan', '448')
    >>> r = explain("1/3", "fp16")
    >>> r["abs_error"], r["rel_error"], r["short"]["abs_error"]
    ('~-8.1380208333333333e-05', '-0.000244140625', '-1/12288 ~ -8.13802e-05')
    >>> explain("0x3C00", "fp16")["notes"][0]
    '0x3C00 is read as the number 15360; --bits 0x3C00 (explain_bits) decodes it as a code of fp16'
    """
    fmt = format(fmt)
    seed = DEFAULT_SEED if seed is None else seed
    ctx = Context(rounding=rounding, saturate=saturate, ftz=ftz, daz=daz, tininess=tininess,
                  rng=seed, p3109=p3109)
    sr = ctx.rounding in STOCHASTIC
    source = parse.exact(value)
    result = fmt.round(value, ctx)
    report = _describe(result, ctx)
    exact = _exact_value(source)
    far = parse.is_far(source)
    report.update(
        input=_abridged_input(value),
        input_value=_far_text(source) if far else _input_text(source),
        rounding=ctx.rounding.value,
        seed=seed if sr else None,
        flags=ctx.flags.names(),
    )
    # A value beyond every format's range is read by its sign and side
    # alone (fpsim.parse): it has no error to state, only its notes.
    report.update(_errors(result, None if far else exact))
    report["notes"] = _notes(result, exact, source, ctx)
    if isinstance(value, str) and _HEX_INTEGER.fullmatch(value.strip()):
        # 0x3C00 is the number 15360 here; a code is what --bits decodes
        text = _abridged_input(value.strip())
        report["notes"].insert(0, f"{text} is read as the number {short(exact)}; --bits {text} "
                                  f"(explain_bits) decodes it as a code of {fmt.name}")
    if far:
        report["notes"].insert(0, "the input lies far beyond every format's range: only its "
                                  "sign and size class (huge or tiny) are read, and they decide "
                                  "the result in every format and mode")
    report["short"].update(_short_errors(result, None if far else exact), input_value=(
        short(exact, 17) if exact and not far else report["input_value"]))
    report["short"] = report.pop("short")  # last in the JSON: the exact values come first
    return report


def explain_bits(bits: int, fmt: Format | str) -> dict[str, Any]:
    """Report on the code ``bits`` of ``fmt`` (no rounding happens).

    >>> r = explain_bits(0x3C00, "fp16")
    >>> r["value"], r["class"], r["next_up"]["value"]
    ('1', 'normal', '1.0009765625')
    >>> explain_bits(0x3C00, "fp32")["short"]["value"]
    '15 * 2^-139 ~ 2.15239444e-41'
    """
    fmt = format(fmt)
    x = fmt.from_bits(bits)
    report = _describe(x, Context())
    digits = (fmt.width + 3) // 4
    report.update(input=f"0x{x.bits:0{digits}x} (bits)", input_value=report["value"],
                  rounding=None, seed=None, flags=[])
    report.update(_errors(x, x.value if x.is_finite else None))
    report["notes"] = _value_notes(x, Context())
    report["short"].update(_short_errors(x, x.value if x.is_finite else None),
                           input_value=report["short"]["value"])
    report["short"] = report.pop("short")
    return report


def short(x: Fraction, digits: int = 6) -> str:
    """``x`` in a few characters: its exact decimal when that has at most 25
    significant digits; otherwise an exact short form (``m * 2^e`` for a
    binary value, ``p/q`` for a short fraction) followed by ``~`` and
    ``digits`` significant digits.

    >>> short(Fraction(21, 2097152)), short(Fraction(1, 2**133), 4)
    ('1.0013580322265625e-05', '2^-133 ~ 9.184e-41')
    >>> short(Fraction(-1, 3)), short(Fraction(10**40 + 1, 10**40))
    ('-1/3 ~ -0.333333', '~ 1')
    """
    x = Fraction(x)
    text = exact_decimal(x)
    if not text.startswith("~") and _significant_digits(text) <= _SHORT_DIGITS:
        return text
    approx = exact_decimal(x, max_digits=digits).lstrip("~")
    n, d = x.numerator, x.denominator
    if d & (d - 1) == 0:  # a binary value: m * 2^e with m odd
        twos = (abs(n) & -abs(n)).bit_length() - 1 if d == 1 else -(d.bit_length() - 1)
        m = n >> twos if twos > 0 else n
        if abs(m) < 10**17:  # up to FP64's 53-bit significands
            exact = f"2^{twos}" if abs(m) == 1 else f"{m} * 2^{twos}"
            return f"{'-' if m == -1 else ''}{exact} ~ {approx}"
    if abs(n).bit_length() + d.bit_length() > 80:  # p/q would not be short
        return f"~ {approx}"
    ratio = f"{n}/{d}"
    return f"{ratio} ~ {approx}" if len(ratio) <= 24 else f"~ {approx}"


def _significant_digits(text: str) -> int:
    mantissa = text.lstrip("-").split("e")[0].replace(".", "")
    return len(mantissa.strip("0")) or 1


# -- pieces ---------------------------------------------------------------------

def _describe(x: Float, ctx: Context) -> dict[str, Any]:
    fmt = x.fmt
    sign, exponent, fraction = x.fields()
    digits = (fmt.width + 3) // 4
    return {
        "format": fmt.name,
        "layout": describe_format(fmt),
        "saturate": ctx.saturate,
        "ftz": ctx.ftz,
        "bits": f"0x{x.bits:0{digits}x}",
        "fields": {
            "sign": f"{sign:b}" if fmt.signed else "",
            "exponent": f"{exponent:0{fmt.exponent_bits}b}",
            "fraction": f"{fraction:0{fmt.mantissa_bits}b}" if fmt.mantissa_bits else "",
        },
        "value": str(x),
        "class": x.kind,
        "ieee_class": x.classify().value,
        "next_down": _neighbour(x, x.next_down()),
        "next_up": _neighbour(x, x.next_up()),
        "short": {"value": _short_value(x), "next_down": _short_neighbour(x, x.next_down()),
                  "next_up": _short_neighbour(x, x.next_up())},
    }


def _short_value(x: Float) -> str:
    # enough digits to tell the format's neighbours apart
    if not x.is_finite or x.is_zero:
        return str(x)  # nan, inf, -0: the sign and kind, not a number to abridge
    return short(x.value, _distinguishing_digits(x.fmt))


def _distinguishing_digits(fmt: Format) -> int:
    return max(3, -(-fmt.precision * 30103 // 100000) + 1)


def _neighbour(x: Float, n: Float) -> dict[str, str] | None:
    if x.is_nan or n.bits == x.bits:
        return None
    digits = (n.fmt.width + 3) // 4
    return {"bits": f"0x{n.bits:0{digits}x}", "value": str(n)}


def _short_neighbour(x: Float, n: Float) -> str | None:
    return None if x.is_nan or n.bits == x.bits else _short_value(n)


def _abridged_input(value: Any) -> str:
    """The input as given, cut to a readable length (a million digits can
    be given; the report quotes their start and end)."""
    text = str(value)
    if len(text) <= 100:
        return text
    return f"{text[:40]}...({len(text) - 60:,} characters)...{text[-20:]}"


def _far_text(source: tuple[Any, ...]) -> str:
    sign = "-" if source[1] else ""
    huge = source[4] > 0
    side = f"beyond 1e+{parse.FAR_DECIMAL}" if huge else f"below 1e-{parse.FAR_DECIMAL}"
    return f"{sign}x with |x| {side}"


def _input_text(source: tuple[Any, ...]) -> str:
    kind = source[0]
    if kind == "finite":
        v = _exact_value(source)
        text = exact_decimal(v)  # type: ignore[arg-type]
        return "-0" if v == 0 and source[1] else text
    if kind == "code":
        return str(Float(source[1], source[2]))
    if kind == "inf":
        return "-inf" if source[1] else "inf"
    if source[1] is None:  # a NaN literal: ('nan' | 'snan', None, negative)
        return ("-" if source[2] else "") + kind
    return str(Float(source[1], source[2]))  # a NaN with an encoding (a Python float's)


def _exact_value(source: tuple[Any, ...]) -> Fraction | None:
    if source[0] == "finite":
        _, negative, num, den, exp = source
        v = Fraction(num << exp, den) if exp >= 0 else Fraction(num, den << -exp)
        return -v if negative else v
    if source[0] == "code":
        x = Float(source[1], source[2])
        return x.value if x.is_finite else None
    return None


def _error_values(result: Float, exact: Fraction | None) -> tuple[Any, Any, Any] | None:
    """(absolute, relative, ulp) errors, signed as ERROR_CONVENTION says;
    None where there is no number to compare (a NaN); 'inf' past the range."""
    if exact is None or result.is_nan:
        return None
    if result.is_inf:
        return ("-inf" if result.is_negative else "inf",) * 3
    err = result.value - exact
    if exact:
        rel: Any = err / abs(exact)
    else:
        rel = Fraction(0) if err == 0 else ("inf" if err > 0 else "-inf")
    return err, rel, err / _ulp_at(result.fmt, exact)


def _errors(result: Float, exact: Fraction | None) -> dict[str, Any]:
    values = _error_values(result, exact)
    if values is None:
        return {"abs_error": None, "rel_error": None, "ulp_error": None,
                "error_convention": ERROR_CONVENTION}
    return dict(zip(("abs_error", "rel_error", "ulp_error"),
                    (v if isinstance(v, str) else exact_decimal(v) for v in values)),
                error_convention=ERROR_CONVENTION)


def _short_errors(result: Float, exact: Fraction | None) -> dict[str, Any]:
    values = _error_values(result, exact)
    names = ("abs_error", "rel_error", "ulp_error")
    if values is None:
        return dict.fromkeys(names)
    return dict(zip(names, (v if isinstance(v, str) else short(v) for v in values)))


def _ulp_at(fmt: Format, x: Fraction) -> Fraction:
    """The quantum of ``fmt`` at the exact value ``x`` (the ulp of its binade,
    unbounded above so that errors beyond max are still measured)."""
    if x == 0:
        return fmt.min_subnormal
    n, d = abs(x.numerator), x.denominator
    e = n.bit_length() - d.bit_length()
    if (n << -e if e < 0 else n) < (d << e if e > 0 else d):
        e -= 1
    q = max(e, fmt.emin) - fmt.mantissa_bits
    return Fraction(1 << q) if q >= 0 else Fraction(1, 1 << -q)


def _notes(result: Float, exact: Fraction | None, source: tuple[Any, ...],
           ctx: Context) -> list[str]:
    fmt = result.fmt
    notes: list[str] = []
    flags = ctx.flags
    kind = source[0]
    if kind == "inf" and not fmt.has_inf:
        notes.append(f"{fmt.name} has no infinity: inf becomes "
                     + (f"±max because of {_saturation_words(ctx)}" if ctx.saturate is not False
                        else "NaN (±max with --saturate)"))
    if kind in ("nan", "snan") or (kind == "code" and Float(source[1], source[2]).is_nan):
        notes.append(_nan_note(result, source, flags))
    if exact is not None and exact < 0 and not fmt.signed:
        notes.append(_unsigned_note(result, ctx))
    elif exact is not None:
        if Flag.OVERFLOW in flags:
            notes.append(_overflow_note(result, exact, ctx))
        elif not flags & Flag.INEXACT:
            notes.append(f"exact: {short(exact)} is representable in {fmt.name}")
        elif result.is_zero and exact != 0:
            unflushed = _unflushed(result, ctx, source) if ctx.ftz else result
            if not unflushed.is_zero:
                notes.append(f"flushed to zero by FTZ: without --ftz the result would be "
                             f"0x{unflushed.bits:0{(fmt.width + 3) // 4}x} = "
                             f"{_short_value(unflushed)}")
            else:
                notes.append(f"underflows to zero: |x| is too small for {fmt.name}, whose "
                             f"smallest subnormal is {short(fmt.min_subnormal)}")
        else:
            ulp = _ulp_at(fmt, exact)
            if exact.denominator == 1 and abs(exact) >= 2 ** fmt.precision:
                notes.append(f"integers above 2**{fmt.precision} = {2 ** fmt.precision} are not "
                             f"all representable in {fmt.name}: the spacing here is "
                             f"{short(ulp)}")
            way = "up" if result.value > exact else "down"
            notes.append(f"not representable: rounded {way} ({_MODE_WORDS[ctx.rounding]})")
        if Flag.UNDERFLOW in flags:
            notes.append("underflow flag: the result is tiny (below the smallest normal "
                         f"{short(fmt.min_normal)}) and inexact")
    notes.extend(_value_notes(result, ctx))
    return notes


def _unsigned_note(result: Float, ctx: Context) -> str:
    """What became of a negative value in a format without a sign."""
    fmt = result.fmt
    head = f"negative: {fmt.name} has no negative values; "
    if not p3109_applies(fmt, ctx.p3109):
        return head + "a negative value is NaN (invalid)"
    text = {P3109.V4_0: "P3109 v4.0 (§4.7.5)", P3109.V3_2_1: "P3109 v3.2.1 (§4.9.4)",
            P3109.RELEASE_3: "P3109 release 3 (§4.7.4)"}[ctx.p3109]
    if result.is_nan:
        return (head + f"under {text} a value that does not round to 0 is NaN here (0 with "
                "--saturate or --saturation satpropagate, or rounding toward zero or +inf)")
    return head + f"{text} gives 0, its smallest value"


def _nan_note(result: Float, source: tuple[Any, ...], flags: Flag) -> str:
    """What happened to a NaN input, agreeing with the flags shown."""
    if source[0] == "snan":
        kept = "its signaling NaN" if result.is_signaling else "its NaN (it has no signaling NaN)"
        return (f"a signaling-NaN literal is written as {kept} without a flag: writing a "
                "value down is not an operation; arithmetic on it raises invalid")
    if Flag.INVALID in flags:
        return ("a signaling NaN: converting it raises invalid (shown in flags) and gives a "
                "quiet NaN")
    return "NaN stays NaN: a quiet NaN converts without a flag"


def _unflushed(result: Float, ctx: Context, source: tuple[Any, ...]) -> Float:
    """The same input rounded without FTZ (into a copy: flags don't matter)."""
    x = Float(source[1], source[2]) if source[0] == "code" else _exact_value(source)
    return result.fmt.round(x, ctx.copy(ftz=False))


def _overflow_note(result: Float, exact: Fraction, ctx: Context) -> str:
    fmt = result.fmt
    head = f"overflows: |x| > max = {short(fmt.max)} after rounding; "
    if result.is_inf:
        return head + "becomes inf" + (" (max with --saturate)" if ctx.saturate is False
                                       else f" ({_saturation_words(ctx)})")
    if result.is_nan:
        return head + f"becomes NaN ({fmt.name} has no infinity; max with --saturate)"
    if ctx.saturate is True or ctx.saturate is Saturation.SAT_PROPAGATE:
        return head + f"clamped to max by {_saturation_words(ctx)}"
    if (ctx.saturate is Saturation.OVF_INF and not fmt.has_inf
            and fmt.round(exact, ctx.copy(saturate=False)).is_nan):
        return head + f"becomes max ({fmt.name} has no infinity; --saturation satnone)"
    return head + f"becomes max ({_MODE_WORDS[ctx.rounding]} never rounds up to infinity here)"


def _saturation_words(ctx: Context) -> str:
    """How the command line names the context's saturation setting."""
    return "--saturate" if ctx.saturate is True else f"--saturation {ctx.saturate}"


def _value_notes(x: Float, ctx: Context) -> list[str]:
    fmt = x.fmt
    notes: list[str] = []
    if x.is_subnormal:
        sig = x.fields()[2]
        notes.append(f"subnormal: only {sig.bit_length()} of {fmt.precision} significant bits "
                     f"remain (below the smallest normal {short(fmt.min_normal)})")
        if not ctx.ftz:
            notes.append("not zero: it becomes 0 only where subnormals are flushed "
                         "(flushes to 0 under FTZ, --ftz)")
    if x.is_finite and not x.is_zero and abs(x.value) == fmt.max:
        notes.append(f"{'-' if x.is_negative else '+'}max: the largest-magnitude finite "
                     f"{fmt.name} value")
    if x.is_zero and x.is_negative:
        notes.append("negative zero: equal to +0, but 1/x is -inf")
    if x.is_signaling:
        notes.append("signaling NaN: any arithmetic on it raises invalid and returns a quiet NaN")
    return notes


# -- text -----------------------------------------------------------------------

def render(report: dict[str, Any], exact: bool = False) -> str:
    """The report as aligned text for a terminal: long exact values short
    (``2^-133 ~ 9.18e-41``), or in full with ``exact=True``."""
    mode = report["rounding"]
    how = f" ({_MODE_WORDS[Rounding(mode)]})" if mode else ""
    if report.get("seed") is not None:
        how = how[:-1] + f", seed {report['seed']})"
    sat = report.get("saturate")
    extras = ([] if not sat else ["--saturate" if sat is True else f"--saturation {sat}"]) + (
        ["--ftz"] if report.get("ftz") else [])
    if extras:
        how += " with " + " and ".join(extras)
    f = report["fields"]
    fields = " | ".join(part for part in (
        f"sign {f['sign']}" if f["sign"] else "",
        f"exponent {f['exponent']}",
        f"fraction {f['fraction']}" if f["fraction"] else "",
    ) if part)
    brief = report["short"]

    def shown(key: str) -> str:
        return report[key] if exact else brief[key]

    given = report["input"]
    value = shown("input_value")
    if value == given:
        input_row = given
    elif value.startswith("~") or "|x|" in value:  # rounded, or far beyond every format
        input_row = f"{given}  ({value})"
    elif value.startswith(given + " ~"):
        input_row = f"{given}  ({value[len(given) + 1:]})"
    else:
        input_row = f"{given}  (exactly {value})"
    rows = [
        ("input", input_row),
        ("format", report["layout"]),
        ("result", f"{report['bits']} = {shown('value')}"),
        ("fields", fields),
        ("class", f"{report['class']} ({report['ieee_class']})"),
    ]
    if report["abs_error"] is not None:
        rows += [("abs error", f"{shown('abs_error')}  (result - exact)"),
                 ("rel error", f"{shown('rel_error')}  ((result - exact) / |exact|)"),
                 ("ulp error", f"{shown('ulp_error')} ulp")]
    rows.append(("flags", ", ".join(report["flags"]) or "none"))
    for key, label in (("next_down", "next down"), ("next_up", "next up")):
        n = report[key]
        rows.append((label, f"{n['bits']} = {n['value'] if exact else brief[key]}"
                     if n else "none"))
    title = f"{report['input']} in {report['format']}{how}"
    lines = [title, ""] + [f"  {k:<10} {v}" for k, v in rows]
    if report["notes"]:
        lines += ["", "notes:"] + [f"  - {n}" for n in report["notes"]]
    if not exact and any(_abridged(report, brief, k) for k in brief):
        lines += ["", "(values after ~ are rounded; --exact prints every value in full)"]
    return "\n".join(lines)


def _abridged(report: dict[str, Any], brief: dict[str, Any], key: str) -> bool:
    full = report[key]["value"] if key in ("next_down", "next_up") and report[key] else report[key]
    return brief[key] is not None and brief[key] != full
