"""The parts of a CPU library's row (:mod:`fpsim.mma.cputable`): a
:class:`Part` is an accumulation and where it applies, the shapes (an
expression in ``M``, ``K``, ``N`` and ``T``), the output rows and
columns, and optionally a predicate over each element's row ``i`` and
column ``j``.  Expressions are parsed by a restricted grammar (names,
integers, ``+ - * // %`` by positive constants, comparisons and
and/or/not) and run on ints or, for ``where``, on numpy arrays of ``i``
and ``j``.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .accumulation import Accumulation

__all__ = ["Part"]

_NAMES = ("M", "K", "N", "T")
_OPS = (ast.Expression, ast.BoolOp, ast.And, ast.Or, ast.UnaryOp, ast.Not, ast.USub,
        ast.BinOp, ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod, ast.Compare, ast.Eq,
        ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Name, ast.Load, ast.Constant)


def _compile(text: str, what: str, names: tuple[str, ...] = _NAMES) -> Any:
    """An expression over M, K, N, T (``names``) of ints: + - * // %,
    comparisons, and/or/not.  Anything else is refused."""
    if not isinstance(text, str):
        raise TypeError(f"Part: {what} must be a string, got {type(text).__name__}")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as e:
        raise ValueError(f"Part: {what}={text!r} is not an expression: {e.msg}") from None
    for node in ast.walk(tree):
        if not isinstance(node, _OPS):
            raise ValueError(f"Part: {what}={text!r}: {type(node).__name__} is not allowed "
                             "(accepted: M, K, N, T, integers, + - * // %, comparisons, "
                             "and/or/not)")
        if isinstance(node, ast.Name) and node.id not in names:
            raise ValueError(f"Part: {what}={text!r}: unknown name {node.id!r}; accepted: "
                             f"{', '.join(names)}")
        if isinstance(node, ast.Constant) and (type(node.value) is not int):
            raise ValueError(f"Part: {what}={text!r}: only integer constants")
        if (isinstance(node, ast.BinOp) and isinstance(node.op, (ast.FloorDiv, ast.Mod))
                and not (isinstance(node.right, ast.Constant) and node.right.value > 0)):
            raise ValueError(f"Part: {what}={text!r}: // and % take a positive integer on "
                             "their right")
    return compile(ast.fix_missing_locations(_Vector().visit(tree)), f"<{what}>", "eval")


class _Vector(ast.NodeTransformer):
    """and/or/not and chained comparisons as numpy's logical functions, so an
    expression (checked by :func:`_compile`) also runs on arrays of ``i``
    and ``j``; on ints it gives the same truth values."""

    def visit_BoolOp(self, node: ast.BoolOp) -> ast.AST:
        self.generic_visit(node)
        fn = "_and" if isinstance(node.op, ast.And) else "_or"
        return ast.Call(ast.Name(fn, ast.Load()), node.values, [])

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.op, ast.Not):
            return ast.Call(ast.Name("_not", ast.Load()), [node.operand], [])
        return node

    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        self.generic_visit(node)
        if len(node.ops) == 1:
            return node
        left, pairs = node.left, []
        for op, right in zip(node.ops, node.comparators):
            pairs.append(ast.Compare(left, [op], [right]))
            left = right
        return ast.Call(ast.Name("_and", ast.Load()), pairs, [])


_LOGIC = {"_and": lambda *v: np.logical_and.reduce(np.broadcast_arrays(*v)),
          "_or": lambda *v: np.logical_or.reduce(np.broadcast_arrays(*v)),
          "_not": np.logical_not, "__builtins__": {}}


def _eval(code: Any, env: Mapping[str, Any]) -> Any:
    return eval(code, _LOGIC, dict(env))  # noqa: S307 - checked by _compile


@dataclass(frozen=True)
class Part:
    """One accumulation of a CPU library and where it applies.

    ``when``: the shapes (an expression in ``M``, ``K``, ``N``, ``T``);
    ``rows``, ``cols``: ``"lo:hi"`` ranges of output rows and columns
    (either bound an expression, empty for the edge); ``where``: None (every
    element of the range) or an expression that also names ``i`` and ``j``,
    the output element's row and column, and the names ``defs`` gives (pairs
    ``(name, expression)``, each over those before it), for a kernel whose
    tiles or stores treat elements apart; ``accumulation``: None where the
    kernel is not decoded; ``source``: where the rule comes from.

    >>> p = Part(Accumulation(lanes=16, join="pairs"), when="N % 16 >= 1", cols="N // 16 * 16:")
    >>> p.region(dict(M=4, K=40, N=21, T=1))
    (0, 4, 16, 21)
    >>> q = Part(Accumulation(), where="j < i % 3")        # row i: its first i mod 3 columns
    >>> q.cells(dict(M=4, K=8, N=2, T=1)).tolist()
    [[False, False], [True, False], [True, True], [False, False]]
    >>> r = Part(Accumulation(), defs=(("x", "j % 8"),), where="x < 2 and not i")
    >>> r.cells(dict(M=2, K=1, N=10, T=1)).astype(int).tolist()
    [[1, 1, 0, 0, 0, 0, 0, 0, 1, 1], [0, 0, 0, 0, 0, 0, 0, 0, 0, 0]]
    """

    accumulation: Accumulation | None
    when: str = "1 == 1"
    rows: str = ":"
    cols: str = ":"
    source: str = ""
    where: str | None = None
    defs: tuple[tuple[str, str], ...] = ()
    _code: tuple[Any, ...] = field(default=(), repr=False, compare=False)
    _defs: tuple[tuple[str, Any], ...] = field(default=(), repr=False, compare=False)
    _pred: Any = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.accumulation is not None and not isinstance(self.accumulation, Accumulation):
            raise TypeError(f"Part: accumulation must be an Accumulation or None, got "
                            f"{type(self.accumulation).__name__}")
        codes = [_compile(self.when, "when")]
        for what in ("rows", "cols"):
            text = getattr(self, what)
            if not isinstance(text, str) or text.count(":") != 1:
                raise ValueError(f"Part: {what}={text!r} must be 'lo:hi' (either side may be "
                                 "empty)")
            lo, hi = text.split(":")
            codes += [_compile(lo or "0", what), _compile(hi or ("M" if what == "rows" else "N"),
                                                         what)]
        object.__setattr__(self, "_code", tuple(codes))
        if not isinstance(self.defs, tuple) or not all(
                isinstance(d, tuple) and len(d) == 2 and isinstance(d[0], str) for d in self.defs):
            raise TypeError("Part: defs must be a tuple of (name, expression) pairs")
        if self.defs and self.where is None:
            raise ValueError("Part: defs without a where= expression")
        names = _NAMES + ("i", "j")
        defs = []
        for name, text in self.defs:
            if not name.isidentifier() or name in names or name.startswith("_"):
                raise ValueError(f"Part: defs name {name!r} must be a new identifier (not M, K, "
                                 "N, T, i, j, nor starting with _)")
            defs.append((name, _compile(text, f"defs {name}", names)))
            names += (name,)
        object.__setattr__(self, "_defs", tuple(defs))
        if self.where is not None:
            object.__setattr__(self, "_pred", _compile(self.where, "where", names))

    def applies(self, env: Mapping[str, int]) -> bool:
        """Whether ``when`` holds at ``env`` (``M``, ``K``, ``N``, ``T``).

        >>> Part(None, when="M * N * K > 1000000 and T >= 2").applies(
        ...     dict(M=128, K=128, N=128, T=2))
        True
        """
        return bool(_eval(self._code[0], env))

    def region(self, env: Mapping[str, int]) -> tuple[int, int, int, int]:
        """``(row_lo, row_hi, col_lo, col_hi)`` at this shape, clipped."""
        r0, r1, c0, c1 = (int(_eval(c, env)) for c in self._code[1:])
        M, N = env["M"], env["N"]
        return (max(0, min(r0, M)), max(0, min(r1, M)), max(0, min(c0, N)), max(0, min(c1, N)))

    def cells(self, env: Mapping[str, int]) -> np.ndarray:
        """Which elements of :meth:`region` the part covers (every one
        unless ``where`` says otherwise), as a bool array."""
        r0, r1, c0, c1 = self.region(env)
        shape = (r1 - r0, c1 - c0)
        if self._pred is None:
            return np.ones(shape, bool)
        scope: dict[str, Any] = {**env, "i": np.arange(r0, r1, dtype=np.int64)[:, None],
                                 "j": np.arange(c0, c1, dtype=np.int64)[None, :]}
        for name, code in self._defs:
            scope[name] = _eval(code, scope)
        return np.broadcast_to(np.asarray(_eval(self._pred, scope)) != 0, shape).copy()
