"""Write spec/formats.md and spec/formats.json from fpsim's format descriptions.

    python spec/generate.py            # (re)write spec/formats.md and spec/formats.json
    python spec/generate.py --check    # exit 1 if either is out of date
    python spec/generate.py --stdout   # print formats.md instead

formats.json is the machine-readable description (its schema is
spec/formats.schema.json): each format's parameters, its limits as exact
rationals, and its notable codes.

Every number in formats.md comes from fpsim (:func:`fpsim.formats`,
:meth:`fpsim.Format.from_bits`, :attr:`fpsim.Float.value`); the generator
also checks that each notable code decodes to the class its row claims.
The functions here are shared with the documentation
(``docs/_ext/fpsim_directives.py``).
"""

from __future__ import annotations

import argparse
import json
import sys
from fractions import Fraction
from pathlib import Path

import fpsim
from fpsim.explain import describe_format
from fpsim.formats import P3109_MAX_K, P3109_MIN_K
from fpsim.value import exact_decimal

OUTPUT = Path(__file__).resolve().parent / "formats.md"
JSON_OUTPUT = OUTPUT.with_suffix(".json")

# Decimal expansions longer than this are given to 17 significant digits.
LONG = 40


# -- exact text for values ----------------------------------------------------------

def pow2(x: Fraction | int) -> str:
    """An exact power-of-two expression of a dyadic rational:
    ``2^-24``, ``(2^10 - 1) × 2^-24``, ``1025 × 2^-10``, ``0``."""
    x = Fraction(x)
    if x == 0:
        return "0"
    sign = "-" if x < 0 else ""
    n, d = abs(x.numerator), x.denominator
    if d & (d - 1):
        raise ValueError(f"{x} is not a dyadic rational")
    k = -(d.bit_length() - 1)
    while n % 2 == 0:
        n //= 2
        k += 1
    if n == 1:
        text = f"2^{k}"
    elif n + 1 == 1 << n.bit_length():  # n = 2**t - 1
        text = f"(2^{n.bit_length()} - 1) × 2^{k}"
    else:
        text = f"{n} × 2^{k}"
    if eval_pow2(text) != abs(x):  # pragma: no cover - a self-check
        raise AssertionError(f"pow2({x}) wrote {text!r}")
    return sign + text


def eval_pow2(text: str) -> Fraction:
    """Evaluate, exactly, an expression that :func:`pow2` writes."""
    expr = text.replace("×", "*").replace("2^", "Fraction(2)**")
    return Fraction(eval(expr, {"__builtins__": {}, "Fraction": Fraction}))  # noqa: S307


def dec(x: Fraction | int, digits: int | None = None) -> str:
    """Exact decimal expansion; rounded to ``digits`` significant digits with
    a ``≈`` prefix when that is asked for or the expansion is longer than
    :data:`LONG` characters."""
    text = exact_decimal(Fraction(x), max_digits=digits)
    if digits is None and len(text) > LONG:
        text = exact_decimal(Fraction(x), max_digits=17)
    return "≈ " + text[1:] if text.startswith("~") else text


def eq(x: Fraction | int) -> str:
    """``pow2(x) = decimal``, or ``pow2(x) ≈ decimal`` when the decimal is rounded."""
    d = dec(x)
    return f"{pow2(x)} {d}" if d.startswith("≈") else f"{pow2(x)} = {d}"


def hexcode(fmt: fpsim.Format, code: int) -> str:
    return f"0x{code:0{(fmt.width + 3) // 4}x}"


# -- notable codes ----------------------------------------------------------------------

def notable_codes(fmt: fpsim.Format) -> list[tuple[str, str, str, str]]:
    """Rows ``(what, code, exact value, decimal)`` of the notable codes of ``fmt``."""
    rows: list[tuple[str, str, str, str]] = []

    def finite(what: str, code: int, kind: str) -> None:
        x = fmt.from_bits(code)
        if x.kind != kind:  # pragma: no cover - a self-check
            raise AssertionError(f"{fmt.name} {hexcode(fmt, code)} is {x.kind}, not {kind}")
        rows.append((what, hexcode(fmt, code), pow2(x.value), dec(x.value)))

    def special(what: str, codes: list[int], check: str, text: str) -> None:
        """A row for one code, or for the range ``codes[0]``..``codes[1]``
        (whose two ends, and the codes next to them, are checked)."""
        ends = {codes[0], codes[-1]}
        if codes[-1] - codes[0] > 1:
            ends |= {codes[0] + 1, codes[-1] - 1}
        for c in sorted(ends):
            x = fmt.from_bits(c)
            ok = {"inf": x.is_inf, "qnan": x.is_quiet_nan, "snan": x.is_signaling}[check]
            if not ok:  # pragma: no cover - a self-check
                raise AssertionError(f"{fmt.name} {hexcode(fmt, c)} is not {check}")
        if len(codes) == 2 and codes[0] == codes[1]:
            codes = codes[:1]
        sep = " – " if len(codes) == 2 and codes[1] - codes[0] > 1 else ", "
        shown = sep.join(hexcode(fmt, c) for c in codes)
        rows.append((what, shown, "", text))

    m = fmt.mantissa_bits
    if fmt.has_zero:
        finite("+0", 0, "zero")
        if fmt.has_negative_zero:
            if not fmt.from_bits(fmt.sign_bit).is_zero:  # pragma: no cover - a self-check
                raise AssertionError(f"{fmt.name} has no -0")
            rows.append(("-0", hexcode(fmt, fmt.sign_bit), "0", "-0"))
    if fmt.subnormals and m > 0:
        finite("min subnormal", 1, "subnormal")
        finite("max subnormal", (1 << m) - 1, "subnormal")
        finite("min normal", 1 << m, "normal")
    elif fmt.subnormals:  # no fraction bits: zero is the only subnormal code
        finite("min positive (normal)", 1, "normal")
    else:
        finite("min positive (normal)", 0, "normal")
    one = fmt.round(1, fpsim.Context())
    if one.value == 1:
        finite("one", one.bits, "normal")
        up = one.next_up()
        if up.is_finite:
            finite("1 + eps", up.bits, "normal")
    finite("max", fmt.max_code, "normal")
    if fmt.signed:
        finite("-max", fmt.sign_bit | fmt.max_code, "normal")
    if fmt.has_inf:
        special("+inf", [fmt.inf_code], "inf", "inf")
        if fmt.signed:
            special("-inf", [fmt.sign_bit | fmt.inf_code], "inf", "-inf")
    sp = fmt.specials
    if sp is fpsim.Specials.IEEE:
        quiet = fmt.inf_code | (1 << (m - 1))
        special("default NaN (quiet)", [quiet], "qnan", "NaN")
        special("quiet NaNs, +", [quiet, fmt.magnitude_mask], "qnan", "NaN")
        special("quiet NaNs, -", [fmt.sign_bit | quiet, fmt.sign_bit | fmt.magnitude_mask],
                "qnan", "NaN")
        if m >= 2:
            special("signaling NaNs, +", [fmt.inf_code + 1, quiet - 1], "snan", "sNaN")
            special("signaling NaNs, -", [fmt.sign_bit | (fmt.inf_code + 1),
                                          fmt.sign_bit | (quiet - 1)], "snan", "sNaN")
    elif sp is fpsim.Specials.FN:
        special("NaN", [fmt.magnitude_mask], "qnan", "NaN")
        if fmt.signed:
            special("-NaN", [fmt.sign_bit | fmt.magnitude_mask], "qnan", "NaN")
    elif sp is fpsim.Specials.FNUZ:
        special("NaN (the only one)", [fmt.sign_bit], "qnan", "NaN")
    return rows


def overflow_threshold(fmt: fpsim.Format) -> tuple[Fraction, bool]:
    """``(t, inclusive)``: under ``rne`` a magnitude overflows iff it is
    ``>= t`` (inclusive) or ``> t``.  ``t`` is ``max + ulp(max)/2``."""
    top = fmt.from_bits(fmt.max_code)
    t = top.value + top.ulp() / 2
    ctx = fpsim.Context()
    fmt.round(t, ctx)
    return t, fpsim.Flag.OVERFLOW in ctx.flags


# -- the document ---------------------------------------------------------------------

def _md_table(header: list[str], rows: list[tuple[str, ...]] | list[list[str]]) -> list[str]:
    def cell(text: str) -> str:
        return text.replace("|", "\\|")
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(cell(c) for c in r) + " |" for r in rows]
    return out


def _code(text: str) -> str:
    return f"`{text}`" if text else ""


def _layout(fmt: fpsim.Format) -> list[str]:
    m, k = fmt.mantissa_bits, fmt.exponent_bits
    header, cells = [], []
    if fmt.signed:
        header.append(f"bit {k + m}")
        cells.append("sign S")
    header.append(f"bits {k + m - 1}–{m}" if k > 1 else f"bit {m}")
    cells.append(f"exponent field E ({k} bits)")
    if m:
        header.append(f"bits {m - 1}–0" if m > 1 else "bit 0")
        cells.append(f"fraction field F ({m} bits)")
    return _md_table(header, [cells])


def _section(fmt: fpsim.Format) -> list[str]:
    m = fmt.mantissa_bits
    lines = [f"## {fmt.name}", ""]
    if fmt.aliases:
        lines += ["Also known to `fpsim.format()` as "
                  + ", ".join(f"`{a}`" for a in fmt.aliases) + ".", ""]
    lines += [f"{describe_format(fmt)}.", ""]
    lines += _layout(fmt) + [""]
    top = fmt.from_bits(fmt.max_code)
    emax_field = top.fields()[1]
    sp = fmt.specials
    value_rules = []
    low = 0
    if fmt.subnormals:
        rule = (f"- E = 0: ±F × 2^{fmt.emin - m} (zero and the subnormals)" if m
                else "- E = 0: zero (no fraction bits: no subnormal but zero)")
        if sp is fpsim.Specials.FNUZ:
            rule += "; but S = 1, F = 0 is the NaN (there is no -0)"
        value_rules.append(rule)
        low = 1
    rule = f"- E = {low} … {emax_field}: ±(2^{m} + F) × 2^(E - {fmt.bias + m})"
    nan_field = fmt.fields(fmt.magnitude_mask)[1]
    if sp is fpsim.Specials.FN and nan_field == emax_field:
        rule += f"; but E = {emax_field} with F = {(1 << m) - 1} (all ones) is NaN"
    value_rules.append(rule)
    if sp is fpsim.Specials.FN and nan_field != emax_field:
        value_rules.append(f"- E = {nan_field}" + (f", F = {(1 << m) - 1}" if m else "")
                           + ": NaN")
    if sp is fpsim.Specials.IEEE:
        value_rules.append(f"- E = {emax_field + 1}: F = 0 is ±inf; F ≠ 0 is NaN, quiet when "
                           f"bit {m - 1} (the top fraction bit) is 1")
    elif fmt.has_inf:  # P3109's extended domain
        inf_e, inf_f = fmt.fields(fmt.inf_code)[1:]
        value_rules.append(f"- but E = {inf_e}" + (f", F = {inf_f}" if m else "")
                           + f" (the largest magnitude below the NaN) is {'±' * fmt.signed}inf")
    lines += ["Decoding (S is the sign, ± means (-1)^S):", ""] + value_rules + [""]
    t, inclusive = overflow_threshold(fmt)
    limits = [
        ("width", str(fmt.width)),
        ("bias", str(fmt.bias)),
        ("precision p", str(fmt.precision)),
        ("emin", str(fmt.emin)),
        ("emax", str(fmt.emax)),
        ("max", eq(fmt.max)),
        ("min normal", eq(fmt.min_normal)),
        ("min subnormal", eq(fmt.min_subnormal) if fmt.subnormals else "none (no subnormals)"),
        ("eps = 2^(1-p)", eq(fmt.eps)),
        ("overflow under rne", f"|x| {'>=' if inclusive else '>'} {eq(t)} "
         f"(max + ulp(max)/2)"),
    ]
    lines += _md_table(["limit", "value"], [(a, b) for a, b in limits]) + [""]
    lines += ["Notable codes:", ""]
    rows = [(what, _code(c), _code(e), d) for what, c, e, d in notable_codes(fmt)]
    lines += _md_table(["", "code", "exact value", "decimal"], rows) + [""]
    return lines


def render() -> str:
    """The text of spec/formats.md."""
    lines = [
        "<!-- GENERATED by spec/generate.py from fpsim; do not edit. "
        "Regenerate with: python spec/generate.py -->",
        "",
        "# Formats",
        "",
        "*This file is generated by `spec/generate.py` from fpsim's format descriptions; "
        "do not edit it by hand.*",
        "",
        "## Encoding rules common to all formats",
        "",
        "A format is given by the widths of its exponent field (k bits) and fraction "
        "field (m bits), its exponent bias, whether it has a sign bit, whether exponent "
        "field 0 holds subnormals, and which codes are special:",
        "",
        "- `ieee`: exponent field all ones is reserved: fraction 0 is ±inf, any other "
        "fraction is NaN, quiet when the top fraction bit is 1, signaling otherwise.",
        "- `fn` (finite and NaN): no infinities; only the code with exponent and fraction "
        "all ones (either sign) is NaN; the rest of the top binade is finite.",
        "- `fnuz` (finite, NaN, unsigned zero): no infinities and no negative zero; the code "
        "with only the sign bit set is the single NaN.",
        "- `none`: every code is a finite number.",
        "",
        "For a code with sign S, exponent field E and fraction field F:",
        "",
        "- with subnormals, E = 0 encodes (-1)^S × F × 2^(1 - bias - m) (zero and the "
        "subnormals);",
        "- every other finite code encodes (-1)^S × (2^m + F) × 2^(E - bias - m).",
        "",
        "Derived limits: precision p = m + 1; emin = 1 - bias (0 - bias without subnormals); "
        "emax is the exponent field of the largest finite code minus the bias; "
        "max is the value of the largest finite code; min normal = 2^emin; "
        "min subnormal = 2^(emin - m); eps = 2^-m is the distance from 1 to the next value.",
        "",
        "Exact values below are written as n × 2^k (exact); decimals are exact unless "
        "marked ≈ (then rounded to 17 significant digits).",
        "",
        "## Summary",
        "",
    ]
    summary = []
    for f in fpsim.formats():
        summary.append((
            f"[`{f.name}`](#{f.name})", str(f.width),
            f"{int(f.signed)}/{f.exponent_bits}/{f.mantissa_bits}", str(f.bias),
            f.specials.value + ("" if f.subnormals else ", no subnormals"),
            str(f.precision), str(f.emin), str(f.emax), pow2(f.max),
        ))
    lines += _md_table(["format", "width", "S/E/F bits", "bias", "specials", "p", "emin",
                        "emax", "max"], summary) + [""]
    for f in fpsim.formats():
        lines += _section(f)
    return "\n".join(lines).rstrip("\n") + "\n"


def rational(x: Fraction | int) -> str:
    """An exact rational as text: ``"65504"``, ``"1/16384"``, ``"-3/2"``."""
    return str(Fraction(x))


def _code_or_none(fmt: fpsim.Format, code: int | None) -> str | None:
    return None if code is None else hexcode(fmt, code)


def format_record(fmt: fpsim.Format) -> dict[str, object]:
    """The machine-readable description of one format."""
    m = fmt.mantissa_bits
    one = fmt.round(1).bits if fmt.min_normal <= 1 <= fmt.max else None
    return {
        "name": fmt.name,
        "aliases": list(fmt.aliases),
        "width": fmt.width,
        "sign_bits": int(fmt.signed),
        "exponent_bits": fmt.exponent_bits,
        "mantissa_bits": m,
        "bias": fmt.bias,
        "specials": fmt.specials.value,
        "subnormals": fmt.subnormals,
        "infinities": fmt.infinities,
        "code_parity": fmt.code_parity,
        "limits": {
            "precision": fmt.precision,
            "emin": fmt.emin,
            "emax": fmt.emax,
            "max": rational(fmt.max),
            "min_normal": rational(fmt.min_normal),
            "min_subnormal": rational(fmt.min_subnormal) if fmt.subnormals else None,
            "eps": rational(fmt.eps),
            "overflow_threshold_rne": rational(overflow_threshold(fmt)[0]),
        },
        "codes": {
            "max": hexcode(fmt, fmt.max_code),
            "min_normal": hexcode(fmt, fmt.round(fmt.min_normal).bits),
            "min_subnormal": hexcode(fmt, 1) if fmt.subnormals and m else None,
            "one": _code_or_none(fmt, one),
            "positive_zero": hexcode(fmt, 0) if fmt.has_zero else None,
            "negative_zero": hexcode(fmt, fmt.sign_bit) if fmt.has_negative_zero else None,
            "positive_infinity": _code_or_none(fmt, fmt.inf_code),
            "negative_infinity": (None if fmt.inf_code is None or not fmt.signed
                                  else hexcode(fmt, fmt.inf_code | fmt.sign_bit)),
            "default_nan": _code_or_none(fmt, fmt.default_nan_code),
        },
    }


# IEEE P3109's formats beyond the eight-bit ones (listed above as formats)
# are made by name on first use: the family is stated by its rule.
P3109_FAMILY = {
    "name": "p3109",
    "pattern": "binary{K}p{P}{s|u}{e|f}",
    "aliases": ["p3109_k{K}p{P}{s|u}{e|f}"],
    "source": "IEEE P3109 Interim Report v3 as gfloat 0.5.2 implements it (spec/p3109.md)",
    "K": {"min": P3109_MIN_K, "max": P3109_MAX_K},
    "P": {"signed": "1 .. K-1", "unsigned": "1 .. K"},
    "rule": {
        "signed (s)": {"sign_bits": 1, "exponent_bits": "K - P", "mantissa_bits": "P - 1",
                       "bias": "2^(K-P-1)", "specials": "fnuz"},
        "unsigned (u)": {"sign_bits": 0, "exponent_bits": "K - P + 1", "mantissa_bits": "P - 1",
                         "bias": "2^(K-P)", "specials": "fn"},
        "extended (e)": {"infinities": True},
        "finite (f)": {"infinities": False},
        "subnormals": True,
        "code_parity": "P = 1",
    },
}


def render_json() -> str:
    """The text of spec/formats.json."""
    doc = {
        "$schema": "./formats.schema.json",
        "description": "The binary floating-point formats of fpsim (generated by "
                       "spec/generate.py; the encoding rules are in spec/formats.md). "
                       "Rationals are exact, as 'n' or 'n/d'; codes are hex strings.",
        "formats": [format_record(f) for f in fpsim.formats()],
        "families": [P3109_FAMILY],
    }
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--check", action="store_true",
                       help="exit 1 if spec/formats.md differs from what would be generated")
    group.add_argument("--stdout", action="store_true", help="print instead of writing")
    args = parser.parse_args(argv)
    text = render()
    if args.stdout:
        sys.stdout.write(text)
        return 0
    outputs = ((OUTPUT, text), (JSON_OUTPUT, render_json()))
    if args.check:
        status = 0
        for path, wanted in outputs:
            current = path.read_text(encoding="utf-8") if path.exists() else ""
            if current != wanted:
                print(f"{path} is out of date: run python spec/generate.py", file=sys.stderr)
                status = 1
        return status
    for path, wanted in outputs:
        path.write_text(wanted, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
