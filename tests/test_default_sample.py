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


def test_the_default_run_keeps_a_few_spread_cases_of_every_parametrized_test():
    from conftest import DEFAULT_CASES, _default_cases

    for n in range(1, 200):
        keep = _default_cases(n)
        every = -(-n // DEFAULT_CASES)
        assert 0 in keep and keep <= set(range(n)) and 1 <= len(keep) <= DEFAULT_CASES
        assert n > DEFAULT_CASES or keep == set(range(n))        # few cases: all of them
        assert max(keep) >= n - every                            # spread to the end
        assert all(b - a == every for a, b in zip(sorted(keep), sorted(keep)[1:]))
