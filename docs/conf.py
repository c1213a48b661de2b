"""Sphinx configuration for the fpsim documentation.

Build (warnings are errors) and run the doctests:

    python -m sphinx -W -b html docs docs/_build/html
    python -m sphinx -W -b doctest docs docs/_build/doctest
"""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
# Document the checkout's fpsim, and load the local extension.
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE / "_ext"))

import fpsim  # noqa: E402

project = "fpsim"
author = "fpsim developers"
copyright = "fpsim developers"  # noqa: A001 - Sphinx's name
release = fpsim.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.doctest",
    "fpsim_directives",
    "fpsim_stacks",
    "fpsim_limits",
    "fpsim_instructions",
    "myst_parser",
]
# spec/*.md are included as pages (docs/spec/); their section links
# (formats.md#fp16) need anchors for headings.
myst_heading_anchors = 3
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}

html_theme = "alabaster"
html_static_path = []
exclude_patterns = ["_build"]
# Every cross-reference must resolve (a broken internal link fails the -W
# build); references into other projects' documentation are not checked,
# since the build has no network for intersphinx.
nitpicky = True
nitpick_ignore_regex = [
    (r"py:.*", r"(numpy|np|fractions|decimal|hypothesis|random|collections|typing|types|enum|"
               r"ml_dtypes|torch|dataclasses|pathlib|os|io|contextlib)(\..*)?"),
    (r"py:.*", r"(SearchStrategy|Fraction|Decimal|ndarray|Generator|Random|Mapping|Sequence|"
               r"Iterator|Callable|Any|Path|PathLike)"),
    # the fields of fpsim.sweep.Spec: internal types, described in its docstring
    (r"py:class", r"fpsim\.(sweep\._space\.Space|testing\.tally\.Tolerance)"),
]
root_doc = "index"

autodoc_member_order = "bysource"
autodoc_typehints = "description"
napoleon_numpy_docstring = True
napoleon_google_docstring = False

# Only the ``.. doctest::`` blocks of the pages are run by the doctest
# builder; the ``>>>`` examples in fpsim's docstrings are run by pytest.
doctest_test_doctest_blocks = ""
# Every page starts with a fresh current context, so that examples do not
# see flags raised on another page.
doctest_global_setup = "import importlib.util\nimport fpsim\nfpsim.setcontext(fpsim.Context())\n"

# Show default values as written in the source (``nan=IEEE``), not as reprs.
autodoc_preserve_defaults = True
