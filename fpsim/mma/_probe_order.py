"""The probes of a call's width and summation order: how many products the
callable takes, whether it keeps subnormals, which NaN it writes, and the
tree in which it adds the products and ``c`` (FPRev), classified as one
block, a chain of blocks, a pairwise tree or an exact sum.  A mixin of the
probing session (:mod:`fpsim.mma.probe`)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import array as _array
from . import _order
from ._probe_findings import Finding
from ._probe_io import ProbeError, Row, show
from .params import NAN_RULES, nan_code

__all__ = ["WidthAndOrder"]


class WidthAndOrder:
    """Stages: :meth:`find_width`, :meth:`sanity`, :meth:`subnormals`,
    :meth:`nan_probe`, :meth:`order_probe`."""

    def find_width(self, k: int | None, max_k: int) -> None:
        from .._usercode import failure

        row = [Row.of({0: 1.0}, 0.0)]
        last: list[ProbeError] = []  # the last refusal, which the errors below chain

        def accepts(K: int) -> str | None:
            self.width = K
            try:
                self.call(row, "call width", keep=False)
            except ProbeError as exc:
                last[:] = [exc]
                return failure(exc.__cause__ or exc)
            return None

        if k is not None:
            err = accepts(k)
            if err is not None:
                raise ProbeError(f"the callable {self.caller.name!r} raised at K={k}: "
                                 f"{err}") from last[0]
            self.f["width"] = Finding(k, f"K = {k} as given")
            return
        err = accepts(max_k)
        if err is None:
            self.f["width"] = Finding(max_k, f"accepts K = {max_k} (the largest tried)")
            return
        refused, why = max_k, err
        self.width_limited = True
        first = accepts(1)
        if first is not None:
            raise ProbeError(f"the callable {self.caller.name!r} raised at every K tried "
                             f"(K=1: {first})") from last[0]
        good = 1
        while good * 2 < refused:
            e = accepts(good * 2)
            if e is None:
                good *= 2
            else:
                refused, why = good * 2, e
                break
        while refused - good > 1:
            mid = (good + refused) // 2
            e = accepts(mid)
            if e is None:
                good = mid
            else:
                refused, why = mid, e
        self.width = good
        self.f["width"] = Finding(good, f"accepts K = {good}; K = {refused} raised: "
                                  f"{why.splitlines()[0][:160]}")

    def sanity(self) -> None:
        W = self.width
        rows = [Row.of({0: 2.0}, 0.0), Row.of({0: (2.0, 3.0)}, 1.0), Row.of({}, 1.0),
                Row.of({W - 1: 1.0}, 0.0), Row.of({i: 1.0 for i in range(W)}, 0.0)]
        want = [2.0, 7.0, 1.0, 1.0, float(W)]
        rows, d = self.call(rows, "sanity")
        for r, got, w in zip(rows, d, want):
            if got != w:
                raise ProbeError(f"the callable {self.caller.name!r} does not compute a·b + c "
                                 f"along the last axis: the row {r.describe()} gave "
                                 f"{show(float(got))}, not {show(w)}; the probe needs "
                                 f"fn(a, b, c) = sum_k a[:, k]*b[:, k] + c")

    def subnormals(self) -> None:
        fin, fout = self.fin, self.fout
        tiny = math.ldexp(1.0, fin.emin - fin.mantissa_bits)
        big = math.ldexp(1.0, fin.emax - 1)
        rows = [Row.of({0: (tiny, big)}, 0.0, "a subnormal"),
                Row.of({0: (big, tiny)}, 0.0, "b subnormal")]
        self.caller.subnormals = True
        rows, d = self.call(rows, "subnormal inputs")
        want = tiny * big
        if all(x == want for x in d):
            value, how = True, "a subnormal a or b times a power of two gives the exact product"
        elif all(x == 0 for x in d):
            value, how = False, "a subnormal a or b gives 0: subnormal inputs read as zero"
        else:
            value, how = None, "inconsistent: subnormal a and b treated differently"
        self.f["input_subnormals"] = Finding(value, how, self.evidence(rows, d))
        self.caller.subnormals = bool(value)
        c = 3 * math.ldexp(1.0, fout.emin - 2)
        rows, d = self.call([Row.of({}, c, "c subnormal, no products")], "subnormal outputs")
        if d[0] == c:
            value, how = True, "a subnormal c with zero products comes back unchanged"
        elif d[0] == 0:
            value, how = False, "a subnormal c with zero products gives 0 (flushed)"
        else:
            value, how = None, "a subnormal c with zero products gave another value"
        self.f["output_subnormals"] = Finding(value, how, self.evidence(rows, d))

    def nan_probe(self) -> None:
        """The code of the NaN the callable writes (``MMAParams.nan``): one
        row with ``inf × 0`` (a NaN operand where the input format has no
        infinity), whose bits name the rule of :data:`NAN_RULES` that gives
        them, or none."""
        fin, fout = self.fin, self.fout
        a, b, c = np.zeros((1, self.width)), np.zeros((1, self.width)), np.zeros(1)
        if fin.has_inf:
            a[0, 0], row = math.inf, "p0=inf*0, c=0"
        else:
            a[0, 0], b[0, 0], row = math.nan, 1.0, "a0=NaN, b0=1, c=0"
        try:
            code = int(self.caller.call_codes(a, b, c, "NaN code")[0])
        except ProbeError as exc:  # (math.fsum refuses infinities of both signs, ...)
            self.f["nan"] = Finding(None, f"the callable raised on {row}: "
                                    f"{str(exc.__cause__ or exc).splitlines()[0][:160]}")
            return
        digits = (fout.width + 3) // 4
        seen = [{"input": row, "output": f"0x{code:0{digits}x}"}]
        rules = [r for r in NAN_RULES if nan_code(r, fout) == code]
        if rules:
            self.f["nan"] = Finding(rules[0], f"{row} gives 0x{code:0{digits}x}", seen)
        elif fout.is_nan_code(code):
            self.f["nan"] = Finding(None, f"{row} gives the NaN 0x{code:0{digits}x}, which no "
                                    f"rule gives ({', '.join(NAN_RULES)})", seen)
        else:
            value = float(_array.decode(np.array([code], np.uint64), fout)[0])
            self.f["nan"] = Finding(None, f"{row} gives {show(value)}, not a NaN", seen)

    def zero_sign_probe(self) -> None:
        """The sign of a zero the callable writes (``MMAParams.zero_sign``):
        rows of one negative product (the last, so in a chain the last
        block's) and ``c = 0``, each product a power of two from the
        smallest up to a quarter of the output's smallest value, which every
        rounding sends to zero.  The first the unit keeps through its
        alignment comes back -0 where the sign is IEEE's (``"ieee"``); +0
        from every row is ``"positive"`` (or a unit that cuts them all, for
        which the two are the same)."""
        fin, fout = self.fin, self.fout
        lowest = fin.emin - (fin.mantissa_bits if self.caller.subnormals else 0)
        outs = self.f.get("output_subnormals")
        top = fout.emin - (fout.mantissa_bits if outs is None or outs.value is not False
                           else 0) - 2
        exps = list(range(2 * lowest, min(top, 2 * fin.emax) + 1))
        if not exps:
            return
        n = len(exps)
        a, b, c = np.zeros((n, self.width)), np.zeros((n, self.width)), np.zeros(n)
        for r, e in enumerate(exps):
            ex = max(lowest, e - fin.emax)
            a[r, -1], b[r, -1] = -math.ldexp(1.0, ex), math.ldexp(1.0, e - ex)
        try:
            codes = self.caller.call_codes(a, b, c, "zero sign")
        except ProbeError:
            return
        digits = (fout.width + 3) // 4
        minus = [e for e, code in zip(exps, codes) if int(code) == fout.sign_bit]
        plus = [e for e, code in zip(exps, codes) if int(code) == 0]
        if minus:
            e = minus[0]
            seen = [{"input": f"p{self.width - 1}=-2^{e}, c=0",
                     "output": f"0x{fout.sign_bit:0{digits}x}"}]
            self.f["zero_sign"] = Finding("ieee", f"-2^{e} alone, c=0, gives -0", seen)
        elif len(plus) == n:
            seen = [{"input": f"p{self.width - 1}=-2^{exps[-1]}, c=0", "output": "0x0"}]
            self.f["zero_sign"] = Finding(
                "positive", f"-2^e alone, c=0, gives +0 for every e from {exps[0]} to "
                f"{exps[-1]}", seen)

    def zero_sign_flag(self) -> dict[str, str]:
        found = self.f.get("zero_sign")
        return {"zero_sign": found.value} if found is not None and found.value else {}

    def nan_rule(self) -> dict[str, str]:
        """``{"nan": rule}`` where :meth:`nan_probe` found one, else ``{}``."""
        found = self.f.get("nan")
        return {"nan": found.value} if found is not None and found.value else {}

    def subnormal_flags(self) -> dict[str, Any]:
        """The flags every candidate takes: subnormals, and the zero's sign."""
        return {"input_subnormals": self.f["input_subnormals"].value is not False,
                "output_subnormals": self.f["output_subnormals"].value is not False,
                **self.zero_sign_flag()}

    def order_probe(self) -> dict[str, Any]:
        W, fout = self.width, self.fout
        eM = min(self.prod_hi(), fout.emax - 2)
        eu = max(self.prod_lo(), fout.emin)
        M, u = math.ldexp(1.0, eM), math.ldexp(1.0, eu)
        L = W + 1
        pairs = [(i, j) for i in range(L) for j in range(i + 1, L)]
        rows = []
        for i, j in pairs:
            prods = {p: u for p in range(W)}
            c = u
            for leaf, v in ((i, M), (j, -M)):
                if leaf == W:
                    c = v
                else:
                    prods[leaf] = v
            rows.append(Row.of(prods, c, f"+M at {_leaf(i, W)}, -M at {_leaf(j, W)}"))
        rows, d = self.call(rows, "summation order")
        size: dict[tuple[int, int], int] = {}
        bad = None
        # A unit with a sticky bit leaves, for each absorbed unit, one unit of
        # its grid far above u: the count is what lies below 2**7 u.
        residue = math.ldexp(1.0, eu + 7)
        for (i, j), x in zip(pairs, d):
            n = x / u
            if math.isfinite(n) and n > L - 2:
                n = math.fmod(x, residue) / u
            if not (math.isfinite(n) and n == int(n) and 0 <= n <= L - 2):
                bad = (i, j, x)
                break
            size[i, j] = L - int(n)
        how = (f"FPRev: for each pair of leaves, +M = {show(M)} and -M there and u = {show(u)} "
               "elsewhere; the u that survive count the leaves outside the pair's lowest "
               "common ancestor")
        tree = None if bad is not None else _order.build(size, L)
        if tree is None:
            why = ("a result that is not a count of surviving units"
                   if bad is not None else "no tree has these subtree sizes")
            self.f["order"] = Finding(None, f"{how}; not a summation tree: {why}",
                                      self.evidence(rows, d, limit=3))
            return {"kind": "other", "k": None}
        self.order = _order.render(tree, W)
        self.order_seen = self.seen[-1]
        structure = _classify(tree, W)
        self.f["order"] = Finding(self.order, how, self.evidence(rows, d, limit=2))
        self.f["structure"] = Finding(structure["kind"], structure["how"])
        if structure["k"] is not None:
            self.f["k"] = Finding(structure["k"], structure["k_how"])
        return structure


def _leaf(i: int, W: int) -> str:
    return "c" if i == W else f"p{i}"


def _classify(tree: _order.Node, W: int) -> dict[str, Any]:
    """The shape of the recovered tree: one block (c with the products, or
    after them), a pairwise tree, an exact sum, a chain of blocks, or other."""
    c = W
    prods = frozenset(range(W))

    def flat(node: Any) -> bool:
        return isinstance(node, _order.Node) and all(not isinstance(ch, _order.Node)
                                                     for ch in node.children)

    out: dict[str, Any] = {"kind": "other", "k": None, "how": "the tree is none of the known "
                           "shapes (one block, pairwise, exact, a chain of blocks)",
                           "k_how": ""}
    if tree.exact and tree.leaves() == prods | {c}:
        return {"kind": "exact", "k": W, "how": "no unit is ever lost: the products and c are "
                "added exactly", "k_how": f"all {W} products in one exact sum"}
    if flat(tree) and len(tree.children) == W + 1:
        return {"kind": "block", "k": W, "how": "one multi-term node: all products and c "
                "aligned and added together", "k_how": f"all {W} products in one block"}
    if len(tree.children) == 2 and c in tree.children:
        x = next(ch for ch in tree.children if ch != c)
        if isinstance(x, _order.Node) and x.leaves() == prods:
            if flat(x) and not x.exact:
                return {"kind": "block", "k": W, "how": "one multi-term node of the products; "
                        "c added to their sum", "k_how": f"all {W} products in one block"}
            if x.exact:
                return {"kind": "exact", "k": W, "how": "the products are added exactly, c "
                        "after", "k_how": f"all {W} products in one exact sum"}
            if _is_pairwise(x, list(range(W))):
                return {"kind": "pairwise", "k": W, "how": "a balanced binary tree of the "
                        "products, (p0 + p1) + (p2 + p3), ..., then c", "k_how":
                        f"all {W} products in one tree"}
    if len(tree.children) == 2 and c in tree.children:
        x = next(ch for ch in tree.children if ch != c)
        if _left_deep(x):
            out["how"] = ("products added one at a time in order, (p0 + p1) + p2 ..., c added "
                          "to their sum last: no block FMA (whose c enters the first block)")
    blocks = _chain_blocks(tree, c)
    if blocks:
        k = len(blocks[0])
        if all(b == list(range(i * k, min((i + 1) * k, W))) for i, b in enumerate(blocks)) \
                and sum(len(b) for b in blocks) == W:
            return {"kind": "chain", "k": k, "how": f"{len(blocks)} blocks of {k} products added "
                    "in order, each block's sum passed on to the next",
                    "k_how": f"the first block holds {k} products"}
    return out


def _left_deep(node: Any) -> bool:
    """``((p0 + p1) + p2) + ...``: a sequential sum in position order."""
    want = None
    while isinstance(node, _order.Node):
        if len(node.children) != 2 or node.exact or isinstance(node.children[1], _order.Node):
            return False
        if want is not None and node.children[1] != want:
            return False
        want = node.children[1] - 1
        node = node.children[0]
    return node == 0 and want == 0


def _is_pairwise(node: Any, leaves: list[int]) -> bool:
    if len(leaves) == 1:
        return node == leaves[0]
    if not isinstance(node, _order.Node) or len(node.children) != 2 or node.exact:
        return False
    half = len(leaves) // 2
    return _is_pairwise(node.children[0], leaves[:half]) and _is_pairwise(node.children[1],
                                                                        leaves[half:])


def _chain_blocks(tree: _order.Node, c: int) -> list[list[int]] | None:
    """Blocks of products, innermost first, when the tree is a chain: each
    node adds to the previous block's sum a run of products (as leaves, or
    as one flat node of them)."""
    path = []
    node: Any = tree
    while isinstance(node, _order.Node):
        path.append(node)
        inner = [ch for ch in node.children if isinstance(ch, _order.Node) and
                 (0 in ch.leaves())]
        node = inner[0] if inner else None
    blocks: list[list[int]] = []
    prev: frozenset[int] = frozenset()
    for n in reversed(path):
        new = sorted(n.leaves() - prev - {c})
        for ch in n.children:
            if isinstance(ch, _order.Node) and 0 not in ch.leaves():
                if any(isinstance(g, _order.Node) for g in ch.children):
                    return None
        if new:
            blocks.append(new)
        prev = n.leaves()
    return blocks or None

