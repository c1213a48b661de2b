"""The default run's sample (``tests/conftest.py``, SAMPLED) names tests that
exist: a renamed test would otherwise run in full again, unnoticed."""

import ast
import pathlib

from conftest import SAMPLED

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_every_sampled_test_exists_and_is_parametrized():
    for name, every in SAMPLED.items():
        path, _, function = name.partition("::")
        tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
        found = [f for f in ast.walk(tree)
                 if isinstance(f, ast.FunctionDef) and f.name == function]
        assert found, f"{name} names no test"
        decorators = [ast.unparse(d) for d in found[0].decorator_list]
        assert any("parametrize" in d for d in decorators), f"{name} is not parametrized"
        assert isinstance(every, int) and every >= 2, name
