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
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from . import parse
from .context import Context
from .formats import Format, format
from .modes import Flag, Rounding
from .value import Float, exact_decimal

__all__ = ["explain", "explain_bits", "render", "describe_format"]

_MODE_WORDS = {
    Rounding.RNE: "round to nearest, ties to even",
    Rounding.RNA: "round to nearest, ties away from zero",
    Rounding.RTZ: "round toward zero",
    Rounding.RUP: "round toward +infinity",
    Rounding.RDN: "round toward -infinity",
    Rounding.RTO: "round to odd",
    Rounding.SR: "stochastic rounding",
}


def describe_format(fmt: Format) -> str:
    """One line on the layout of ``fmt``.

    >>> describe_format(format("e4m3"))
    'e4m3: 1 sign, 4 exponent, 3 fraction bits; bias 7; no infinities, NaN = S.1111.111'
    """
    sign = "1 sign" if fmt.signed else "no sign"
    specials = {
        "ieee": "IEEE infinities and NaNs",
        "fn": "no infinities, NaN = S." + "1" * fmt.exponent_bits
              + ("." + "1" * fmt.mantissa_bits if fmt.mantissa_bits else ""),
        "fnuz": f"no infinities, no -0, single NaN 0x{fmt.sign_bit:x}",
        "none": "no infinities, no NaN",
    }[fmt.specials.value]
    return (f"{fmt.name}: {sign}, {fmt.exponent_bits} exponent, {fmt.mantissa_bits} fraction "
            f"bits; bias {fmt.bias}; {specials}")


def explain(value: Any, fmt: Format | str, *, rounding: Rounding | str = "rne",
            saturate: bool = False, ftz: bool = False, daz: bool = False,
            tininess: str = "after", seed: int | None = None) -> dict[str, Any]:
    """Round ``value`` into ``fmt`` and report what happened (a JSON-ready dict).

    Keys: ``input``, ``input_value``, ``format``, ``layout``, ``rounding``,
    ``saturate``, ``ftz``, ``bits``, ``fields``, ``value``, ``class``,
    ``ieee_class``, ``abs_error``, ``rel_error``, ``ulp_error``, ``flags``,
    ``next_down``, ``next_up``, ``notes``.  Exact quantities are decimal
    strings; an approximation (a non-terminating rational) starts with ``~``.

    >>> explain("1000", "e4m3")["value"], explain("1000", "e4m3", saturate=True)["value"]
    ('nan', '448')
    """
    fmt = format(fmt)
    ctx = Context(rounding=rounding, saturate=saturate, ftz=ftz, daz=daz, tininess=tininess,
                  rng=seed)
    source = parse.exact(value)
    result = fmt.round(value, ctx)
    report = _describe(result, ctx)
    report.update(
        input=str(value),
        input_value=_input_text(source),
        rounding=ctx.rounding.value,
        flags=ctx.flags.names(),
    )
    exact = _exact_value(source)
    report.update(_errors(result, exact))
    report["notes"] = _notes(result, exact, source, ctx)
    return report


def explain_bits(bits: int, fmt: Format | str) -> dict[str, Any]:
    """Report on the code ``bits`` of ``fmt`` (no rounding happens).

    >>> r = explain_bits(0x3C00, "fp16")
    >>> r["value"], r["class"], r["next_up"]["value"]
    ('1', 'normal', '1.0009765625')
    """
    fmt = format(fmt)
    x = fmt.from_bits(bits)
    report = _describe(x, Context())
    digits = (fmt.width + 3) // 4
    report.update(input=f"0x{x.bits:0{digits}x} (bits)", input_value=report["value"],
                  rounding=None, flags=[], abs_error="0" if x.is_finite else None,
                  rel_error="0" if x.is_finite and not x.is_zero else None,
                  ulp_error="0" if x.is_finite else None)
    report["notes"] = _value_notes(x, Context())
    return report


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
    }


def _neighbour(x: Float, n: Float) -> dict[str, str] | None:
    if x.is_nan or n.bits == x.bits:
        return None
    digits = (n.fmt.width + 3) // 4
    return {"bits": f"0x{n.bits:0{digits}x}", "value": str(n)}


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
    return "snan" if kind == "snan" else "nan"


def _exact_value(source: tuple[Any, ...]) -> Fraction | None:
    if source[0] == "finite":
        _, negative, num, den, exp = source
        v = Fraction(num << exp, den) if exp >= 0 else Fraction(num, den << -exp)
        return -v if negative else v
    if source[0] == "code":
        x = Float(source[1], source[2])
        return x.value if x.is_finite else None
    return None


def _errors(result: Float, exact: Fraction | None) -> dict[str, Any]:
    if exact is None or result.is_nan:
        return {"abs_error": None, "rel_error": None, "ulp_error": None}
    if result.is_inf:
        return {"abs_error": "inf", "rel_error": "inf", "ulp_error": "inf"}
    err = result.value - exact
    fmt = result.fmt
    rel = exact_decimal(abs(err) / abs(exact)) if exact else ("0" if err == 0 else "inf")
    return {
        "abs_error": exact_decimal(err),
        "rel_error": rel,
        "ulp_error": exact_decimal(err / _ulp_at(fmt, exact)),
    }


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
                     + ("±max because of --saturate" if ctx.saturate
                        else "NaN (±max with --saturate)"))
    if kind in ("nan", "snan") or (kind == "code" and Float(source[1], source[2]).is_nan):
        notes.append("NaN stays NaN (quiet; a signaling NaN raises invalid)")
    if exact is not None:
        if Flag.OVERFLOW in flags:
            notes.append(_overflow_note(result, exact, ctx))
        elif not flags & Flag.INEXACT:
            notes.append(f"exact: {exact_decimal(exact)} is representable in {fmt.name}")
        elif result.is_zero and exact != 0:
            unflushed = _unflushed(result, ctx, source) if ctx.ftz else result
            if not unflushed.is_zero:
                notes.append(f"flushed to zero by FTZ: without --ftz the result would be "
                             f"0x{unflushed.bits:0{(fmt.width + 3) // 4}x} = {unflushed}")
            else:
                notes.append(f"underflows to zero: |x| is too small for {fmt.name}, whose "
                             f"smallest subnormal is {exact_decimal(fmt.min_subnormal)}")
        else:
            ulp = _ulp_at(fmt, exact)
            if exact.denominator == 1 and abs(exact) >= 2 ** fmt.precision:
                notes.append(f"integers above 2**{fmt.precision} = {2 ** fmt.precision} are not "
                             f"all representable in {fmt.name}: the spacing here is "
                             f"{exact_decimal(ulp)}")
            way = "up" if result.value > exact else "down"
            notes.append(f"not representable: rounded {way} ({_MODE_WORDS[ctx.rounding]})")
        if Flag.UNDERFLOW in flags:
            notes.append("underflow flag: the result is tiny (below the smallest normal "
                         f"{exact_decimal(fmt.min_normal)}) and inexact")
    notes.extend(_value_notes(result, ctx))
    return notes


def _unflushed(result: Float, ctx: Context, source: tuple[Any, ...]) -> Float:
    """The same input rounded without FTZ (into a copy: flags don't matter)."""
    x = Float(source[1], source[2]) if source[0] == "code" else _exact_value(source)
    return result.fmt.round(x, ctx.copy(ftz=False))


def _overflow_note(result: Float, exact: Fraction, ctx: Context) -> str:
    fmt = result.fmt
    head = f"overflows: |x| > max = {exact_decimal(fmt.max)} after rounding; "
    if result.is_inf:
        return head + "becomes inf" + ("" if ctx.saturate else " (max with --saturate)")
    if result.is_nan:
        return head + f"becomes NaN ({fmt.name} has no infinity; max with --saturate)"
    if ctx.saturate:
        return head + "clamped to max by --saturate"
    return head + f"becomes max ({_MODE_WORDS[ctx.rounding]} never rounds up to infinity here)"


def _value_notes(x: Float, ctx: Context) -> list[str]:
    fmt = x.fmt
    notes: list[str] = []
    if x.is_subnormal:
        sig = x.fields()[2]
        notes.append(f"subnormal: only {sig.bit_length()} of {fmt.precision} significant bits "
                     f"remain (below the smallest normal {exact_decimal(fmt.min_normal)})")
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

def render(report: dict[str, Any]) -> str:
    """The report as aligned text for a terminal."""
    mode = report["rounding"]
    how = f" ({_MODE_WORDS[Rounding(mode)]})" if mode else ""
    extras = [name for name in ("saturate", "ftz") if report.get(name)]
    if extras:
        how += " with " + " and ".join(f"--{e}" for e in extras)
    f = report["fields"]
    fields = " | ".join(part for part in (
        f"sign {f['sign']}" if f["sign"] else "",
        f"exponent {f['exponent']}",
        f"fraction {f['fraction']}" if f["fraction"] else "",
    ) if part)
    rows = [
        ("input", report["input_value"] if report["input"] == report["input_value"]
         else f"{report['input']}  (exactly {report['input_value']})"),
        ("format", report["layout"]),
        ("result", f"{report['bits']} = {report['value']}"),
        ("fields", fields),
        ("class", f"{report['class']} ({report['ieee_class']})"),
    ]
    if report["abs_error"] is not None:
        rows += [("abs error", report["abs_error"]), ("rel error", report["rel_error"]),
                 ("ulp error", f"{report['ulp_error']} ulp")]
    rows.append(("flags", ", ".join(report["flags"]) or "none"))
    for key, label in (("next_down", "next down"), ("next_up", "next up")):
        n = report[key]
        rows.append((label, f"{n['bits']} = {n['value']}" if n else "none"))
    title = f"{report['input']} in {report['format']}{how}"
    lines = [title, ""] + [f"  {k:<10} {v}" for k, v in rows]
    if report["notes"]:
        lines += ["", "notes:"] + [f"  - {n}" for n in report["notes"]]
    return "\n".join(lines)
