"""Sphinx directives and roles that put numbers computed by fpsim into the docs.

No number about a format or a value is typed into the documentation by hand:
it is computed here, at build time, or checked by a doctest.

``.. fpsim-formats-table::``
    A table of every built-in format's layout and limits, from
    :func:`fpsim.formats`.  Option ``:columns:`` picks columns (keys of
    :data:`COLUMNS`, comma-separated); ``:formats:`` picks formats by name.

``.. fpsim-cli:: explain 1e-5 --fmt fp16``
    Runs :func:`fpsim.cli.main` with those arguments and shows the command
    line and what it printed (stdout, then stderr).  ``:exit-status: N``
    states the expected exit status (default 0); any other status fails the
    build.  A nonzero status is shown as ``echo $?``.

``.. fpsim-codes:: e4m3``
    The notable codes of a format (zeros, subnormal and normal limits, one,
    max, infinities, NaNs), from ``spec/generate.py``.

``.. fpsim-framework-dtypes::``
    The numpy/ml_dtypes dtype, fpsim format, PyTorch, JAX and CuPy dtype of
    each value type fpsim reads, from
    ``fpsim.array._frameworks.dtype_table()``.

``.. fpsim-nan-policies::``
    A table of the NaN policy presets of :mod:`fpsim.nans`, with their
    default NaNs and sources.

Docstrings are adjusted for display without editing fpsim: lists of
````NAME``  text```` lines (``Rounding``, ``Specials``) become bullet lists;
text after a numpy ``Parameters`` section gets a ``Notes`` header; property
docstrings bypass napoleon.

``:fpsim:`expr``` and ``:fpsim-code:`expr```
    Evaluate a Python expression over the names of :mod:`fpsim` (plus
    ``Fraction``, ``dec``, ``pow2``, ``code``) and insert the result as text
    or as inline code.  Fractions print as exact decimals.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import re
import shlex
from fractions import Fraction
from typing import Any

from docutils import nodes
from docutils.parsers.rst import directives
from fpsim_shared import BUILTIN, GEN, SHORT
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

import fpsim
import fpsim.cli
from fpsim.value import exact_decimal

# Decimal strings longer than SHORT are shown as 2^k expressions with a
# 17-significant-digit approximation.
# -- value formatting (shared with spec/generate.py) ---------------------------------

pow2 = GEN.pow2


def dec(x: Any, digits: int | None = None) -> str:
    """Exact decimal of a value (``digits``: round to that many significant
    digits, prefixed ``≈``)."""
    if isinstance(x, fpsim.Float):
        x = x.value
    text = exact_decimal(Fraction(x), max_digits=digits)
    return "≈ " + text[1:] if text.startswith("~") else text


def short(x: Fraction) -> str:
    """Exact decimal when short, else ``2^k`` form ≈ 17 significant digits."""
    text = exact_decimal(x)
    if len(text) <= SHORT:
        return text
    return f"{pow2(x)} {dec(x, 17)}"


def code(x: fpsim.Float) -> str:
    """The bit pattern of a Float as fpsim prints it: ``0x00a8``."""
    return f"0x{x.bits:0{(x.fmt.width + 3) // 4}x}"


def _render(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, Fraction):
        return exact_decimal(value)
    if isinstance(value, fpsim.Float):
        return str(value)
    if isinstance(value, (list, tuple)):
        return ", ".join(_render(v) for v in value)
    return str(value)


def _namespace() -> dict[str, Any]:
    ns: dict[str, Any] = {name: getattr(fpsim, name) for name in fpsim.__all__}
    ns.update(fpsim=fpsim, Fraction=Fraction, dec=dec, pow2=pow2, code=code, short=short,
              exact_decimal=exact_decimal)
    return ns


# -- the formats table ---------------------------------------------------------------

def _specials(f: fpsim.Format) -> str:
    text = f.specials.value
    if f.infinities and f.specials.value != "ieee":  # P3109's extended domain
        text += " +inf"
    if not f.subnormals:
        text += ", no subnormals"
    return text


COLUMNS: dict[str, tuple[str, Any]] = {
    "name": ("name", lambda f: f.name),
    "aliases": ("aliases", lambda f: ", ".join(f.aliases)),
    "bits": ("sign/exp/frac bits", lambda f: f"{int(f.signed)}/{f.exponent_bits}/"
             f"{f.mantissa_bits}"),
    "width": ("width", lambda f: str(f.width)),
    "bias": ("bias", lambda f: str(f.bias)),
    "specials": ("specials", _specials),
    "precision": ("precision p", lambda f: str(f.precision)),
    "emin": ("emin", lambda f: str(f.emin)),
    "emax": ("emax", lambda f: str(f.emax)),
    "max": ("max", lambda f: short(f.max)),
    "min_normal": ("min normal", lambda f: short(f.min_normal)),
    "min_subnormal": ("min subnormal", lambda f: short(f.min_subnormal) if f.subnormals
                      else "none"),
    "eps": ("eps", lambda f: short(f.eps)),
}


def _columns(argument: str) -> list[str]:
    keys = [k.strip() for k in argument.split(",") if k.strip()]
    unknown = [k for k in keys if k not in COLUMNS]
    if unknown:
        raise ValueError(f"unknown column(s) {', '.join(unknown)}; "
                         f"accepted: {', '.join(COLUMNS)}")
    return keys


def table(header: list[str], rows: list[list[str]],
          literal_cols: set[int] | frozenset[int] = frozenset()) -> nodes.table:
    """A table of text cells (the extensions' one table builder): a "\\n" in
    a cell starts a new line; cells of ``literal_cols`` are inline code."""
    result = nodes.table(classes=["fpsim-table"])
    group = nodes.tgroup(cols=len(header))
    result += group
    for i, title in enumerate(header):  # widths in characters (used by text builders)
        width = max([len(title)] + [len(line) for r in rows for line in r[i].split("\n")])
        group += nodes.colspec(colwidth=min(width + (2 if i in literal_cols else 0), 40))
    thead = nodes.thead()
    group += thead
    thead += _row(header, set())
    tbody = nodes.tbody()
    group += tbody
    for r in rows:
        tbody += _row(r, literal_cols)
    return result


def _row(cells: list[str], literal_cols: set[int] | frozenset[int]) -> nodes.row:
    row = nodes.row()
    for i, text in enumerate(cells):
        entry = nodes.entry()
        for line in text.split("\n"):
            para = nodes.paragraph()
            para += nodes.literal(line, line) if i in literal_cols and line else nodes.Text(line)
            entry += para
        row += entry
    return row


class FormatsTable(SphinxDirective):
    """``.. fpsim-formats-table::`` (see the module docstring)."""

    has_content = False
    option_spec = {"columns": _columns, "formats": directives.unchanged}

    def run(self) -> list[nodes.Node]:
        keys = self.options.get("columns") or list(COLUMNS)
        fmts = list(BUILTIN)
        if "formats" in self.options:
            fmts = [fpsim.format(n.strip()) for n in self.options["formats"].split(",")]
        header = [COLUMNS[k][0] for k in keys]
        rows = [[COLUMNS[k][1](f) for k in keys] for f in fmts]
        literal = {i for i, k in enumerate(keys) if k in ("name", "aliases")}
        return [table(header, rows, literal)]


class FrameworkDtypes(SphinxDirective):
    """``.. fpsim-framework-dtypes::`` (see the module docstring)."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        from fpsim.array import _frameworks

        header = ["numpy / ml_dtypes", "fpsim format", "PyTorch", "JAX", "CuPy"]
        rows = [list(r) for r in _frameworks.dtype_table()]
        return [table(header, rows, {0, 1, 2, 3, 4})]


# -- notable codes ------------------------------------------------------------------

class Codes(SphinxDirective):
    """``.. fpsim-codes:: FORMAT`` (see the module docstring)."""

    has_content = False
    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        fmt = fpsim.format(self.arguments[0])
        rows = [list(row) for row in GEN.notable_codes(fmt)]
        return [table(["", "code", "exact value", "decimal"], rows, {1, 2})]


# -- NaN policies --------------------------------------------------------------------

class NanPolicies(SphinxDirective):
    """``.. fpsim-nan-policies::`` (see the module docstring)."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        from fpsim import nans

        rows = []
        for p in nans.policies():
            rows.append([
                p.name,
                "yes" if p.propagate else "no: always the default NaN",
                ("first signaling, else first NaN" if p.prefer_signaling
                 else "first NaN operand") if p.propagate else "-",
                f"0x{nans.default_nan(fpsim.FP32, p):08x} / "
                f"0x{nans.default_nan(fpsim.FP16, p):04x}",
                p.source,
            ])
        return [table(["policy", "propagates payloads", "operand chosen",
                        "default NaN (FP32 / FP16)", "source"], rows, {0, 3})]


# -- the CLI --------------------------------------------------------------------------

class Cli(SphinxDirective):
    """``.. fpsim-cli:: ARGS`` (see the module docstring)."""

    has_content = False
    required_arguments = 1
    final_argument_whitespace = True
    option_spec = {"exit-status": directives.nonnegative_int}

    def run(self) -> list[nodes.Node]:
        argv = shlex.split(self.arguments[0])
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = fpsim.cli.main(argv)
        expected = self.options.get("exit-status", 0)
        if status != expected:
            raise self.error(f"fpsim-cli: 'python -m fpsim {self.arguments[0]}' exited with "
                             f"{status}, expected {expected}; stderr: {err.getvalue()!r}")
        text = f"$ python -m fpsim {shlex.join(argv)}\n{out.getvalue()}{err.getvalue()}"
        if status:
            text += f"$ echo $?\n{status}\n"
        block = nodes.literal_block(text.rstrip("\n"), text.rstrip("\n"))
        block["language"] = "console"
        return [block]


# -- inline roles -----------------------------------------------------------------------

def _make_role(literal: bool) -> Any:
    def role(name: str, rawtext: str, text: str, lineno: int, inliner: Any,
             options: dict[str, Any] | None = None,
             content: list[str] | None = None) -> tuple[list[nodes.Node], list[nodes.Node]]:
        try:
            value = _render(eval(text, _namespace()))  # noqa: S307 - docs source only
        except Exception as exc:  # report any failure as a build error
            msg = inliner.reporter.error(f"{name}: cannot evaluate {text!r}: {exc!r}",
                                         line=lineno)
            return [inliner.problematic(rawtext, rawtext, msg)], [msg]
        node = nodes.literal(rawtext, value) if literal else nodes.Text(value)
        return [node], []
    return role


# -- docstrings ------------------------------------------------------------------------

_ITEM = re.compile(r"^(``[A-Z0-9_]+``)\s{2,}(.*)$")


def member_lists(app: Sphinx, what: str, name: str, obj: Any, options: Any,
                 lines: list[str]) -> None:
    """Turn aligned ````NAME``  text```` lines of a docstring into a bullet list."""
    out: list[str] = []
    in_list = False
    for line in lines:
        m = _ITEM.match(line)
        if m:
            if not in_list and out and out[-1].strip():
                out.append("")
            out.append(f"* {m.group(1)}: {m.group(2)}")
            in_list = True
        elif in_list and line.startswith(" ") and line.strip():
            out.append("  " + line.strip())
        else:
            if in_list and line.strip():
                out.append("")
            in_list = False
            out.append(line)
    lines[:] = out


_PARAM = re.compile(r"^[A-Za-z_*][\w*]*(\s*,\s*[A-Za-z_*][\w*]*)*\s*(:.*)?$")


def end_parameters(app: Sphinx, what: str, name: str, obj: Any, options: Any,
                   lines: list[str]) -> None:
    """Before napoleon: text that follows a numpy-style ``Parameters`` section
    without a header of its own (``Format``'s "Every limit is derived" and its
    example) is given a ``Notes`` header, so that it is not read as more
    parameters."""
    out: list[str] = []
    in_params = False
    for i, line in enumerate(lines):
        header = bool(line.strip()) and i + 1 < len(lines) and \
            set(lines[i + 1].strip()) == {"-"}
        if header:  # a section of its own (Returns, Examples, ...) ends the parameters
            in_params = line.strip() == "Parameters"
        elif in_params and line and not line[0].isspace() and not set(line.strip()) <= {"-"} \
                and not _PARAM.match(line):
            out += ["Notes", "-----"]
            in_params = False
        out.append(line)
    lines[:] = out


def raw_property_docs(app: Sphinx, what: str, name: str, obj: Any, options: Any,
                      lines: list[str]) -> None:
    """After napoleon: a property's docstring as written (napoleon would read
    "The sign bit: 1 for ..." as a type and a description)."""
    if what == "property" and getattr(obj, "__doc__", None):
        lines[:] = inspect.cleandoc(obj.__doc__).splitlines() + [""]


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("autodoc-process-docstring", end_parameters, priority=100)
    app.connect("autodoc-process-docstring", raw_property_docs, priority=900)
    app.connect("autodoc-process-docstring", member_lists)
    app.add_directive("fpsim-formats-table", FormatsTable)
    app.add_directive("fpsim-cli", Cli)
    app.add_directive("fpsim-codes", Codes)
    app.add_directive("fpsim-nan-policies", NanPolicies)
    app.add_directive("fpsim-framework-dtypes", FrameworkDtypes)
    app.add_role("fpsim", _make_role(literal=False))
    app.add_role("fpsim-code", _make_role(literal=True))
    return {"version": fpsim.__version__, "parallel_read_safe": True,
            "parallel_write_safe": True}
