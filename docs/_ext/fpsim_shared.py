"""What the documentation's extensions share (no Sphinx import, so the
table code of fpsim_limits can be tested without Sphinx installed)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import fpsim

# The built-in formats: the registry as it is when the extensions load,
# before any doctest could register a format of its own.
BUILTIN = tuple(fpsim.formats())

# Exact decimals longer than this are written as power-of-two expressions.
SHORT = 24


def load_spec_generator() -> Any:
    """spec/generate.py as a module: its ``pow2`` notation and notable codes
    are those of spec/formats.md."""
    path = Path(__file__).resolve().parents[2] / "spec" / "generate.py"
    spec = importlib.util.spec_from_file_location("fpsim_spec_generate", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


GEN = load_spec_generator()
