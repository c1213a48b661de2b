"""Sphinx directives for docs/limits.rst: every format's limits, and plots of
its values, computed by fpsim when the documentation is built.

``.. fpsim-limits-table::``
    A table of the limits of every built-in format (:func:`fpsim.formats`),
    from :func:`limits_rows`.  Option ``:columns:`` picks columns (keys of
    :data:`COLUMNS`, comma-separated; default: all).

``.. fpsim-plot:: NAME``
    Draws the plot ``NAME`` (a key of :data:`PLOTS`) with matplotlib into
    the build's doctree directory and shows it as an image; nothing is
    written into the source tree, and no image is committed.  Options
    ``:alt:`` and ``:width:`` are those of ``.. image::``.

The functions that compute the table (:func:`limits_rows`) and draw the
plots (:data:`PLOTS`) need neither Sphinx nor docutils, so that the tests
can import this file on its own (``tests/test_docs_limits.py``).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable
from fractions import Fraction
from pathlib import Path
from typing import Any

from fpsim_shared import BUILTIN, GEN, SHORT

import fpsim
from fpsim.value import exact_decimal

try:  # Sphinx is needed for the directives, not for the functions the tests import
    from docutils import nodes
    from docutils.parsers.rst import directives
    from sphinx.util.docutils import SphinxDirective
except ImportError:  # pragma: no cover - depends on what is installed
    HAVE_SPHINX = False
else:
    HAVE_SPHINX = True

# ``pow2`` writes ``2^-24``, ``(2^8 - 1) × 2^120``: the notation of spec/formats.md.
pow2 = GEN.pow2


# -- text for values -------------------------------------------------------------------

def exact(x: Fraction) -> str:
    """The exact decimal of ``x`` when it is short, else its exact ``2^k`` form."""
    text = exact_decimal(x)
    return text if len(text) <= SHORT else pow2(x)


def shortest(x: Fraction) -> str:
    """The shortest decimal that reads back as the float64 ``float(x)`` (its
    ``repr``).  Every limit of the built-in formats is a float64; a value that
    is not is refused rather than shown rounded."""
    f = float(x)
    if Fraction(f) != x:
        raise ValueError(f"{x} is not a float64")
    return repr(f)


def power(x: Fraction) -> str:
    """``2^k`` form of a power of two, with its float64 repr after ``=`` when
    that is exact and ``≈`` when it is not: ``2^-2 = 0.25``,
    ``2^-24 ≈ 5.960464477539063e-08``."""
    text = shortest(x)
    return f"{pow2(x)}\n{'=' if Fraction(text) == x else '≈'} {text}"


def hexcode(fmt: fpsim.Format, code: int) -> str:
    return f"0x{code:0{(fmt.width + 3) // 4}x}"


def _runs(codes: Iterable[int]) -> list[tuple[int, int]]:
    """Sorted codes as runs ``(first, last)`` of consecutive codes."""
    out: list[tuple[int, int]] = []
    for c in codes:
        if out and c == out[-1][1] + 1:
            out[-1] = (out[-1][0], c)
        else:
            out.append((c, c))
    return out


def _code_runs(fmt: fpsim.Format, pred: Callable[[int], bool]) -> list[tuple[int, int]]:
    """The codes of ``fmt`` for which ``pred`` holds, as runs.  Formats of up
    to 16 bits are scanned code by code; for wider ones the runs are found
    where the format's layout puts special codes (the top exponent field and
    zero, with either sign), and ``pred`` is checked at both ends of each run
    and on the codes just outside it."""
    if fmt.width <= 16:
        return _runs(c for c in fmt.codes() if pred(c))
    m = fmt.mantissa_bits
    top = ((1 << fmt.exponent_bits) - 1) << m
    candidates: list[tuple[int, int]] = []
    for sign in ([0, fmt.sign_bit] if fmt.signed else [0]):
        candidates += [(sign, sign), (sign | top, sign | top),
                       (sign | (top + 1), sign | fmt.magnitude_mask)]
    runs = []
    for lo, hi in candidates:
        inside = [pred(lo), pred(hi)]
        if all(inside):
            outside = [c for c in (lo - 1, hi + 1) if 0 <= c < 1 << fmt.width]
            outside = [c for c in outside if not any(a <= c <= b for a, b in candidates)]
            if any(pred(c) for c in outside):  # pragma: no cover - a self-check
                raise AssertionError(f"{fmt.name}: run {lo:#x}..{hi:#x} is not maximal")
            runs.append((lo, hi))
        elif any(inside):  # pragma: no cover - a self-check
            raise AssertionError(f"{fmt.name}: {lo:#x}..{hi:#x} is not one run")
    return sorted(runs)


def _show_runs(fmt: fpsim.Format, runs: list[tuple[int, int]]) -> str:
    if not runs:
        return "none"
    return ", ".join(hexcode(fmt, a) if a == b else f"{hexcode(fmt, a)}–{hexcode(fmt, b)}"
                     for a, b in runs)


def _inf_codes(fmt: fpsim.Format) -> str:
    return _show_runs(fmt, _code_runs(fmt, lambda c: fmt.from_bits(c).is_inf))


def _nan_codes(fmt: fpsim.Format) -> str:
    return _show_runs(fmt, _code_runs(fmt, fmt.is_nan_code))


def _negative_zero(fmt: fpsim.Format) -> str:
    def pred(c: int) -> bool:
        x = fmt.from_bits(c)
        return x.is_zero and x.is_negative
    return _show_runs(fmt, _code_runs(fmt, pred))


# -- derived quantities ----------------------------------------------------------------

def log10(x: Fraction) -> float:
    """log10 of a positive rational, without overflow (FP64's max / min
    subnormal does not fit a float64)."""
    return math.log10(x.numerator) - math.log10(x.denominator)


def digits_precision(fmt: fpsim.Format) -> float:
    """p·log10(2): the precision in decimal digits."""
    return fmt.precision * log10(Fraction(2))


def digits_safe(fmt: fpsim.Format) -> int:
    """floor((p-1)·log10(2)) (C's ``FLT_DIG``): every decimal of this many
    significant digits survives decimal → format → decimal.  Exactly: the
    largest d with 10**d <= 2**(p-1)."""
    return len(str(1 << (fmt.precision - 1))) - 1


def digits_roundtrip(fmt: fpsim.Format) -> int:
    """ceil(1 + p·log10(2)) (C's ``FLT_DECIMAL_DIG``): this many significant
    digits tell every value of the format apart, format → decimal → format.
    Exactly: 1 + the number of digits of 2**p (never a power of ten)."""
    return 1 + len(str(1 << fmt.precision))


def decades(fmt: fpsim.Format, subnormals: bool) -> float:
    """log10(max / min_subnormal) (``subnormals``) or log10(max / min_normal)."""
    low = fmt.min_subnormal if subnormals else fmt.min_normal
    return log10(fmt.max / low)


def _specials(f: fpsim.Format) -> str:
    text = f.specials.value
    if f.infinities and f.specials.value != "ieee":  # P3109's extended domain
        text += " +inf"
    if not f.subnormals:
        text += ", no subnormals"
    if not f.signed:
        text += ", unsigned"
    return text


# -- the table ---------------------------------------------------------------------------

# key: (header, value of a format as text).  A "\n" in a value starts a new line.
COLUMNS: dict[str, tuple[str, Callable[[fpsim.Format], str]]] = {
    "name": ("format", lambda f: f.name),
    "width": ("bits", lambda f: str(f.width)),
    "fields": ("sign/exp/frac", lambda f: f"{int(f.signed)}/{f.exponent_bits}/"
               f"{f.mantissa_bits}"),
    "specials": ("specials", _specials),
    "exponents": ("emin..emax", lambda f: f"{f.emin}..{f.emax}"),
    "precision": ("p", lambda f: str(f.precision)),
    "max": ("max (exact)", lambda f: exact(f.max)),
    "max_decimal": ("max (decimal)", lambda f: shortest(f.max)),
    "min_normal": ("min normal", lambda f: power(f.min_normal)),
    "min_subnormal": ("min subnormal", lambda f: power(f.min_subnormal) if f.subnormals
                      else "none"),
    "eps": ("eps", lambda f: pow2(f.eps)),
    "digits": ("p·log10 2", lambda f: f"{digits_precision(f):.2f}"),
    "digits_safe": ("digits kept", lambda f: str(digits_safe(f))),
    "digits_roundtrip": ("digits to round-trip", lambda f: str(digits_roundtrip(f))),
    "decades_normal": ("decades (normal)", lambda f: f"{decades(f, False):.2f}"),
    "decades": ("decades (with subnormals)", lambda f: f"{decades(f, True):.2f}"
                if f.subnormals else "no subnormals"),
    "inf": ("inf codes", _inf_codes),
    "nan": ("NaN codes", _nan_codes),
    "negative_zero": ("-0 code", _negative_zero),
}

LITERAL = {"name", "inf", "nan", "negative_zero"}


def limits_rows(fmts: Iterable[fpsim.Format] = BUILTIN) -> list[dict[str, str]]:
    """One row per format: ``{column key: text}`` for every key of
    :data:`COLUMNS`, computed from fpsim's description of the format."""
    return [{key: fn(f) for key, (_, fn) in COLUMNS.items()} for f in fmts]


def _columns(argument: str) -> list[str]:
    keys = [k.strip() for k in argument.split(",") if k.strip()]
    unknown = [k for k in keys if k not in COLUMNS]
    if unknown:
        raise ValueError(f"unknown column(s) {', '.join(unknown)}; "
                         f"accepted: {', '.join(COLUMNS)}")
    return keys


# -- the plots --------------------------------------------------------------------------

SMALL = ("e4m3", "e5m2", "e4m3fnuz", "e5m2fnuz", "e4m3ieee", "e3m4", "e4m3b11fnuz",
         "binary8p3se", "binary8p4se", "binary8p5se", "e3m2", "e2m3", "e2m1")
SPACING = ("fp32", "tf32", "bf16", "fp16", "e5m2", "e4m3")


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def positive_values(fmt: fpsim.Format) -> tuple[list[Fraction], list[Fraction]]:
    """The positive finite values of ``fmt``: ``(subnormals, normals)``."""
    sub: list[Fraction] = []
    normal: list[Fraction] = []
    for c in range(fmt.max_code + 1):
        x = fmt.from_bits(c)
        if x.is_finite and not x.is_zero:
            (sub if x.is_subnormal else normal).append(x.value)
    return sub, normal


def values_figure() -> Any:
    """Every positive finite value of the formats of :data:`SMALL`, one row
    of tick marks per format on a log axis; subnormals in a second colour.
    Rows are labelled with fpsim's names of the formats."""
    plt = _pyplot()
    fmts = [fpsim.format(n) for n in SMALL]
    fig, ax = plt.subplots(figsize=(9, 0.5 + 0.55 * len(fmts)), layout="constrained")
    for row, f in enumerate(fmts):
        y = len(fmts) - 1 - row
        sub, normal = positive_values(f)
        ax.vlines([float(v) for v in normal], y - 0.35, y + 0.35, colors="C0", lw=0.8,
                  label="normal" if row == 0 else None)
        ax.vlines([float(v) for v in sub], y - 0.35, y + 0.35, colors="C1", lw=0.8,
                  label="subnormal" if row == 0 else None)
    ax.set_xscale("log", base=2)
    ax.set_yticks(range(len(fmts)), [f.name for f in reversed(fmts)])
    ax.set_ylim(-0.6, len(fmts) - 0.4)
    ax.set_xlabel("positive finite values (log scale)")
    ax.grid(axis="x", which="major", alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    return fig


def plot_values(path: str | os.PathLike[str]) -> None:
    """:func:`values_figure`, written to ``path`` as a PNG."""
    _save(values_figure(), path)


def _save(fig: Any, path: str | os.PathLike[str]) -> None:
    fig.savefig(path, dpi=110, metadata={"Software": None})
    _pyplot().close(fig)


def spacing_points(fmt: fpsim.Format) -> tuple[list[tuple[float, float]],
                                               list[tuple[float, float]]]:
    """``(subnormal, normal)`` points ``(x, ulp(x)/x)`` at the first and the
    last value of each binade of ``fmt`` (and of its subnormal range), in
    increasing order.  Within a binade ulp(x) is constant, so ulp(x)/x falls
    as 1/x: on log-log axes, the straight segment between these two points;
    from the last value of one binade to the first of the next it jumps up."""
    m = fmt.mantissa_bits
    sub: list[tuple[float, float]] = []
    normal: list[tuple[float, float]] = []
    for field in range((fmt.max_code >> m) + 1):
        first, last = field << m, min((field << m) | ((1 << m) - 1), fmt.max_code)
        for c in sorted({max(first, 1), last}):
            x = fmt.from_bits(c)
            if x.is_finite and not x.is_zero:
                point = (float(x.value), float(x.ulp() / x.value))
                (sub if x.is_subnormal else normal).append(point)
    if sub:  # join the subnormal range to the first normal binade
        sub.append(normal[0])
    return sub, normal


# How each format's lines are drawn in the spacing plot.  TF32 and FP16
# have the same precision, so their lines coincide wherever both formats
# have values: TF32 is drawn first as a wide, pale band and FP16 as a thin
# line on it, so that both stay visible.
SPACING_STYLE = {"tf32": {"lw": 5.0, "alpha": 0.45}}


def spacing_figure() -> Any:
    """ulp(x)/x against x for the formats of :data:`SPACING`, log-log: the
    sawtooth of the normal binades (solid) and the subnormal range (dashed);
    over the whole range of the formats, and near 1.  Lines are labelled
    with fpsim's names of the formats and styled by :data:`SPACING_STYLE`."""
    plt = _pyplot()
    fig, (whole, near1) = plt.subplots(2, 1, figsize=(9, 8.5), layout="constrained")
    for i, name in enumerate(SPACING):
        f = fpsim.format(name)
        sub, normal = spacing_points(f)
        style = {"color": f"C{i}", "lw": 1.0, **SPACING_STYLE.get(name, {})}
        for ax in (whole, near1):
            ax.plot(*zip(*normal), label=f.name, **style)
            if sub:
                ax.plot(*zip(*sub), ls="--", **style)
    for ax in (whole, near1):
        ax.set_yscale("log", base=2)
        ax.set_ylabel("ulp(x) / x")
        ax.grid(which="major", alpha=0.3)
    whole.set_xscale("log", base=10)
    whole.set_xlabel("x (the whole range of the formats)")
    # in the empty band between FP32's sawtooth and the 16-bit formats'
    whole.legend(loc="center", bbox_to_anchor=(0.5, 0.3), ncols=3,
                 title="dashed: subnormal range\ntf32 (wide) and fp16 coincide: same precision")
    near1.set_xscale("log", base=2)
    near1.set_xlim(2.0**-3, 2.0**3)
    near1.set_xlabel("x (near 1)")
    return fig


def plot_spacing(path: str | os.PathLike[str]) -> None:
    """:func:`spacing_figure`, written to ``path`` as a PNG."""
    _save(spacing_figure(), path)


PLOTS: dict[str, Callable[[str | os.PathLike[str]], None]] = {
    "values": plot_values,
    "spacing": plot_spacing,
}


# -- Sphinx ------------------------------------------------------------------------------

if HAVE_SPHINX:  # the directives; limits_rows() and PLOTS work without them
    from fpsim_directives import table

    class LimitsTable(SphinxDirective):
        """``.. fpsim-limits-table::`` (see the module docstring)."""

        has_content = False
        option_spec = {"columns": _columns}

        def run(self) -> list[Any]:
            keys = self.options.get("columns") or list(COLUMNS)
            rows = [[row[k] for k in keys] for row in limits_rows()]
            literal = {i for i, k in enumerate(keys) if k in LITERAL}
            return [table([COLUMNS[k][0] for k in keys], rows, literal)]

    class Plot(SphinxDirective):
        """``.. fpsim-plot:: NAME`` (see the module docstring)."""

        has_content = False
        required_arguments = 1
        option_spec = {"alt": directives.unchanged,
                       "width": directives.length_or_percentage_or_unitless}

        def run(self) -> list[Any]:
            name = self.arguments[0]
            if name not in PLOTS:
                raise self.error(f"fpsim-plot: unknown plot {name!r}; accepted: {', '.join(PLOTS)}")
            # The build's own directory (the doctree cache), never the source tree.
            out = Path(self.env.doctreedir) / "fpsim_plots"
            out.mkdir(parents=True, exist_ok=True)
            png = out / f"{name}.png"
            try:
                PLOTS[name](png)
            except ImportError as exc:
                raise self.error(f"fpsim-plot needs matplotlib (the docs extra): {exc}") \
                    from exc
            docdir = Path(self.env.doc2path(self.env.docname)).parent
            uri = Path(os.path.relpath(png, docdir)).as_posix()
            image = nodes.image(uri=uri, alt=self.options.get("alt", name))
            if "width" in self.options:
                image["width"] = self.options["width"]
            return [image]


def setup(app: Any) -> dict[str, Any]:
    app.add_directive("fpsim-limits-table", LimitsTable)
    app.add_directive("fpsim-plot", Plot)
    return {"version": fpsim.__version__, "parallel_read_safe": True,
            "parallel_write_safe": True}
