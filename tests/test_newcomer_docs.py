"""A newcomer's day, round 2 (issue 41): what the documentation, the examples
and the packaging tell a reader, checked against what fpsim does.

These run in the default suite without PyTorch or JAX: the examples are read
as source (their many-seed runs are ``tox -e frameworks``), the API page's
docstrings are parsed with Sphinx's napoleon as the docs build parses them,
the plots are drawn with matplotlib and inspected, and the README's library
GEMM expression is evaluated on the shipped H100 captures.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import fpsim

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
DOCS = ROOT / "docs"
KERNELS = ROOT / "examples" / "kernels"


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _words(text: str) -> str:
    """``text`` with its line breaks and runs of spaces as single spaces."""
    return re.sub(r"\s+", " ", text)


# -- item 3: the examples compute in the golden model's order, on many seeds -----------------

def _number_over_something(tree: ast.AST) -> list[str]:
    """``number / expression`` divisions in ``tree``: torch evaluates them as
    ``expression.reciprocal() * number`` (``Tensor.__rdiv__``), two roundings."""
    return [ast.unparse(node) for node in ast.walk(tree)
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div)
            and isinstance(node.left, ast.Constant) and isinstance(node.left.value, float | int)
            and not isinstance(node.right, ast.Constant)]


@pytest.mark.parametrize("name", ["test_torch_kernel.py", "test_triton_kernel.py"])
def test_the_kernels_under_test_divide_once_as_the_recipe_does(name):
    # quantize(..., scale_rule="max/amax") rounds max / amax once; a kernel
    # that writes 448.0 / amax computes amax.reciprocal() * 448.0, and
    # differs on about one amax in four.  Only a function named as the
    # deliberate bug may do that.
    tree = ast.parse(_text(KERNELS / name))
    for fn in tree.body:
        if isinstance(fn, ast.FunctionDef) and "rdiv" not in fn.name:
            assert not _number_over_something(fn), (name, fn.name)


def test_the_pages_torch_doctests_divide_once_as_the_recipe_does():
    page = _text(DOCS / "testing_kernels.rst")
    code = "\n".join(line.strip()[4:] for line in page.splitlines()
                     if line.strip().startswith((">>> ", "... ")))
    assert "scale_rule=\"max/amax\"" in code
    assert not _number_over_something(ast.parse(code))


def _seeds(path: Path) -> dict[str, int]:
    """The number of seeds each test function of an example runs on: the
    length of its ``pytest.mark.parametrize("seed", ...)`` values (1 without)."""
    tree = ast.parse(_text(path))
    names = {"range": range}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name):
            try:
                names[node.targets[0].id] = eval(compile(ast.Expression(node.value), "", "eval"),
                                                 {"__builtins__": {}}, dict(names))
            except Exception:
                pass
    seeds = {}
    for fn in tree.body:
        if isinstance(fn, ast.FunctionDef) and fn.name.startswith("test_"):
            seeds[fn.name] = 1
            for dec in fn.decorator_list:
                if isinstance(dec, ast.Call) \
                        and ast.unparse(dec.func) == "pytest.mark.parametrize" \
                        and isinstance(dec.args[0], ast.Constant) and dec.args[0].value == "seed":
                    values = eval(compile(ast.Expression(dec.args[1]), "", "eval"),
                                  {"__builtins__": {}}, dict(names))
                    seeds[fn.name] = len(values)
    return seeds


@pytest.mark.parametrize("name,test", [
    ("test_torch_kernel.py", "test_to_float8_is_bit_exact"),
    ("test_torch_kernel.py", "test_the_double_rounding_is_caught"),
    ("test_jax_kernel.py", "test_gelu_bf16_is_bit_exact_above_the_tail"),
    ("test_triton_kernel.py", "test_triton_to_float8_is_bit_exact"),
])
def test_the_kernel_examples_run_on_many_seeds(name, test):
    # one seed let 448.0 / amax pass; 50 seeds catch it
    assert _seeds(KERNELS / name)[test] >= 50


def test_the_page_includes_the_examples_by_content_not_line_numbers():
    # the examples grow; ``:lines: 8-`` would cut into them
    page = _text(DOCS / "testing_kernels.rst")
    includes = re.findall(r"literalinclude:: \.\./examples/kernels/(\S+)\n((?:   :.*\n)+)", page)
    assert {name for name, _ in includes} == {"test_torch_kernel.py", "test_jax_kernel.py",
                                              "test_triton_kernel.py"}
    for name, options in includes:
        start = re.search(r":start-at: (.+)", options)
        assert ":lines:" not in options and start, name
        # the first statement after the module's docstring
        source = _text(KERNELS / name)
        after_docstring = ast.parse(source).body[1].lineno
        assert source.splitlines()[after_docstring - 1] == start[1].strip(), name


# -- item 4: torch's E4M3 cast saturates; the torch profile, by its public name --------------

def test_the_testing_kernels_page_says_torch_saturates_e4m3_and_names_the_profile():
    page = _words(_text(DOCS / "testing_kernels.rst"))
    assert re.search(r"float8_e4m3fn\)`` \*\*saturates\*\*", page)
    assert "±inf give ±448" in page and "ml_dtypes, JAX" in page
    assert 'profile("torch").context("e4m3")' in page
    assert ">>> from fpsim.testing import profile" in _text(DOCS / "testing_kernels.rst")
    assert ":doc:`stacks`" in page


def test_pages_and_doctests_import_profiles_by_their_public_name():
    assert fpsim.testing.profile is importlib.import_module("fpsim.testing._profiles").profile
    readers = [*DOCS.glob("*.rst"), *(DOCS / "_ext").glob("*.py"), ROOT / "README.md",
               ROOT / "fpsim" / "testing" / "_profiles.py",
               *KERNELS.glob("*.py"), *(ROOT / "tests").glob("test_stacks*.py")]
    private = [p.relative_to(ROOT).as_posix() for p in readers if "testing._profiles" in _text(p)]
    assert not private


# -- item 6: the README's library GEMM is what torch.mm returned -----------------------------

def test_the_readmes_cublas_expression_returns_torch_mms_float16():
    match = re.search(r"`(fpsim\.mma\.cublas\([^`]*\)\(a, b\))` is (.*?) `(torch\.mm\([^`]*\))`",
                      README)
    assert match, "no fpsim.mma.cublas(...)(a, b) claim in README.md"
    expression, _, torch_call = match.groups()
    assert torch_call == "torch.mm(a, b)"  # an FP16 output: torch.mm's own dtype
    z = np.load(ROOT / "tests" / "data" / "h100-cublas" / "captures.npz")
    a = z["fp16_64x4096x32_a"][:8].view(np.float16)     # cuBLASLt: numSplitsK=3
    b = z["fp16_64x4096x32_b"].view(np.float16)
    d = eval(expression, {"fpsim": fpsim, "a": a, "b": b})
    assert d.dtype == np.float16
    assert np.array_equal(d.view(np.uint16), z["fp16_64x4096x32_d16"][:8])


def test_import_fpsim_alone_reaches_every_subpackage_the_readme_names():
    # `import fpsim` then `fpsim.mma.cublas(...)`, as the README writes it:
    # the subpackages load when first named (in a fresh interpreter, where
    # nothing else has imported them)
    code = ("import fpsim, sys; assert 'fpsim.mma' not in sys.modules; "
            "print(fpsim.mma.cublas('h100', 'fp16', out='fp16').out.name, "
            "fpsim.array.add.__name__, fpsim.testing.compare.__name__, "
            "fpsim.quant.__name__, fpsim.ops.matmul.__name__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.split() == ["fp16", "add", "compare", "fpsim.quant", "matmul"]
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        fpsim.nothing  # noqa: B018


# -- item 11: napoleon's reading of the API page's docstrings --------------------------------

def _napoleon_params(doc: str) -> dict[str, str]:
    """The ``:param name: text`` fields napoleon makes of a numpy-style docstring."""
    pytest.importorskip("sphinx")
    from sphinx.ext.napoleon import Config
    from sphinx.ext.napoleon.docstring import NumpyDocstring

    lines = NumpyDocstring(doc, Config(napoleon_use_param=True), what="function").lines()
    params: dict[str, list[str]] = {}
    current = None
    for line in lines:
        field = re.match(r":param (.*?):\s?(.*)", line)
        if field:
            current = field[1]
            params[current] = [field[2]]
        elif line.startswith(":") or not line.startswith(" "):
            current = None
        elif current is not None:
            params[current].append(line.strip())
    return {name: " ".join(text).strip() for name, text in params.items()}


def _numpy_documented() -> dict[str, object]:
    """Every function, class and method of fpsim whose docstring has a numpy
    ``Parameters`` section, by qualified name."""
    found = {}
    for info in pkgutil.walk_packages(fpsim.__path__, "fpsim."):
        if info.name.endswith("__main__"):
            continue
        try:
            module = importlib.import_module(info.name)
        except ImportError:  # an optional dependency (Hypothesis) not installed
            continue
        for name, obj in vars(module).items():
            if not (inspect.isclass(obj) or inspect.isfunction(obj)) \
                    or obj.__module__ != module.__name__:
                continue
            members = [(name, obj)]
            if inspect.isclass(obj):
                members += [(f"{name}.{m}", getattr(v, "__func__", v))
                            for m, v in vars(obj).items() if inspect.isfunction(
                                getattr(v, "__func__", v))]
            for qual, member in members:
                doc = inspect.getdoc(member) or ""
                if re.search(r"^Parameters\n-{3,}$", doc, re.MULTILINE):
                    found[f"{module.__name__}.{qual}"] = member
    return found


NUMPY_DOCUMENTED = _numpy_documented()


def _parameter_entries(doc: str) -> list[str]:
    """The unindented lines of a numpy ``Parameters`` section, read without
    Sphinx: each should name one parameter (``name:`` or ``name : type``),
    and the section should end at the next section's header (``Returns``,
    ``Examples``, ...) or at the docstring's end, not in prose, which
    napoleon reads as more parameters."""
    lines = doc.splitlines()
    entries: list[str] = []
    inside = False
    for i, line in enumerate(lines):
        header = bool(line.strip()) and i + 1 < len(lines) and set(lines[i + 1].strip()) == {"-"}
        if header:
            inside = line.strip() == "Parameters"
        elif inside and line.strip() and not line[0].isspace() and set(line.strip()) != {"-"}:
            entries.append(line)
    return entries


def test_sweep_run_gives_each_parameter_its_own_text():
    params = _napoleon_params(inspect.getdoc(fpsim.sweep.run))
    assert list(params) == list(inspect.signature(fpsim.sweep.run).parameters)
    assert "seed" in params["seed"] and not params["seed"].startswith("Sweep")
    assert params["rounding"] != params["ctx"] and "rounding" in params["rounding"]
    assert len(set(params.values())) == len(params)


@pytest.mark.parametrize("name", sorted(NUMPY_DOCUMENTED))
def test_numpy_docstrings_give_each_parameter_its_own_entry(name):
    obj = NUMPY_DOCUMENTED[name]
    accepted = set(inspect.signature(obj).parameters) | {"*args", "**kwargs"}
    for entry in _parameter_entries(inspect.getdoc(obj)):
        assert re.fullmatch(r"(\*{0,2}\w+)\s*:.*", entry), entry   # one name, not "a, b:"
        assert re.match(r"\*{0,2}(\w+)", entry)[0] in accepted, entry
    params = _napoleon_params(inspect.getdoc(obj))
    # every entry a parameter of the signature: no prose or doctest read as one
    assert set(params) <= accepted, sorted(set(params) - accepted)
    # no two parameters given one text (``a, b:``, which napoleon copies)
    texts = list(params.values())
    assert len(set(texts)) == len(texts), [p for p in params if texts.count(params[p]) > 1]


def test_the_docs_build_leaves_sections_after_the_parameters_alone():
    # docs/_ext/fpsim_directives.py gives prose after a Parameters section a
    # Notes header; a Returns or Examples section of its own is not prose
    pytest.importorskip("sphinx")
    sys.path.insert(0, str(DOCS / "_ext"))
    directives = importlib.import_module("fpsim_directives")
    for obj in (fpsim.sweep.run, NUMPY_DOCUMENTED["fpsim.strategies.codes"]):
        lines = inspect.getdoc(obj).splitlines()
        directives.end_parameters(None, "function", obj.__name__, obj, None, lines)
        assert "Notes" not in lines and lines == inspect.getdoc(obj).splitlines()


def test_the_scan_found_the_docstrings_it_should():
    assert {"fpsim.sweep._runner.run", "fpsim.strategies.codes"} <= set(NUMPY_DOCUMENTED)


# -- item 11: the plots ----------------------------------------------------------------------

def _limits():
    sys.path.insert(0, str(DOCS / "_ext"))  # the extensions' shared module, as conf.py does
    spec = importlib.util.spec_from_file_location("fpsim_limits_newcomer",
                                                  DOCS / "_ext" / "fpsim_limits.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _panel_pixels(fig, ax) -> np.ndarray:
    fig.canvas.draw()
    image = np.asarray(fig.canvas.buffer_rgba())[..., :3].astype(int)
    x0, y0, x1, y1 = ax.get_window_extent().extents.astype(int)
    return image[image.shape[0] - y1:image.shape[0] - y0, x0:x1]


def _drawn(fig, ax, color) -> np.ndarray:
    """The pixels of ``ax`` that the lines of ``color`` change."""
    full = _panel_pixels(fig, ax)
    lines = [line for line in ax.lines if line.get_color() == color]
    for line in lines:
        line.set_visible(False)
    without = _panel_pixels(fig, ax)
    for line in lines:
        line.set_visible(True)
    return (full != without).any(axis=-1)


def test_the_spacing_plot_shows_tf32_where_it_coincides_with_fp16():
    pytest.importorskip("matplotlib")
    limits = _limits()
    fig = limits.spacing_figure()
    try:
        for ax in fig.axes:
            color = {line.get_label(): line.get_color() for line in ax.lines}
            tf32 = _drawn(fig, ax, color["tf32"])
            fp16 = _drawn(fig, ax, color["fp16"])
            # TF32 shows outside FP16's line, not only beneath it
            assert (tf32 & ~fp16).sum() >= fp16.sum(), ax.get_xlabel()
    finally:
        limits._pyplot().close(fig)


def test_the_plots_label_formats_by_fpsims_names():
    pytest.importorskip("matplotlib")
    limits = _limits()
    values = limits.values_figure()
    spacing = limits.spacing_figure()
    try:
        rows = [t.get_text() for t in values.axes[0].get_yticklabels()]
        assert rows == [fpsim.format(n).name for n in reversed(limits.SMALL)]
        legend = [t.get_text() for t in spacing.axes[0].get_legend().get_texts()]
        assert legend == [fpsim.format(n).name for n in limits.SPACING]
    finally:
        limits._pyplot().close(values)
        limits._pyplot().close(spacing)


# -- item 11: a light extra for downstream tests ---------------------------------------------

def _pyproject() -> dict:
    try:
        import tomllib
    except ImportError:  # Python 3.10
        tomllib = pytest.importorskip("tomli")
    return tomllib.loads(_text(ROOT / "pyproject.toml"))


def _distribution(requirement: str) -> str:
    return re.match(r"[A-Za-z0-9_.\-]+", requirement)[0].lower().replace("-", "_")


def _top_level_imports(path: Path) -> set[str]:
    """Third-party modules a file imports when it is imported (not inside
    functions: those are optional, as Dask in compare)."""
    names = set()
    for node in ast.parse(_text(path)).body:
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names.add(node.module.split(".")[0])
    return names - set(sys.stdlib_module_names) - {"fpsim"}


def test_a_light_extra_holds_what_downstream_tests_import():
    project = _pyproject()["project"]
    light = project["optional-dependencies"]["pytest"]
    assert sorted(map(_distribution, light)) == ["hypothesis", "pytest"]
    installed = {_distribution(r) for r in project["dependencies"] + light}
    # what the plugin, the assertions and the strategies import
    files = [ROOT / "fpsim" / "strategies.py", *(ROOT / "fpsim" / "testing").glob("*.py")]
    for path in files:
        assert _top_level_imports(path) <= installed, path.name
    # the plugin is registered under the extra's pytest
    assert project["entry-points"]["pytest11"]["fpsim"] == "fpsim.testing.pytest_plugin"


@pytest.mark.parametrize("page", ["README.md", "docs/quickstart.rst", "docs/strategies.rst"])
def test_the_install_text_names_the_light_extra(page):
    text = _words(_text(ROOT / page))
    assert "fpsim[pytest]" in text
    if page != "docs/strategies.rst":
        assert "pip install .[pytest]" in text and "The ``test`` extra" in text.replace(
            "The `test` extra", "The ``test`` extra")


# -- item 11: _scaled_mm on the CPU ----------------------------------------------------------

def test_the_library_gemm_page_says_scaled_mm_on_the_cpu_is_not_cublas():
    page = _words(_text(DOCS / "library_gemms.rst"))
    said = re.search(r"On the CPU,\*\* ``torch\._scaled_mm`` \*\*is not what\*\* "
                     r"``cublas\(\"h100\", \"e4m3\"\)`` \*\*models\*\*: (.*?)\. ", page)
    assert said and "dequantizes" in said[1] and "FP32 matmul" in said[1]
    assert "_scaled_mm`` (FP8) dequantizes" in _words(_text(DOCS / "stacks.rst"))
