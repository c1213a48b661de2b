"""FPRev-style recovery of a summation order (Xie et al., "FPRev: revealing
the order of floating-point summation", 2024), extended to multi-term nodes.

For every pair of leaves ``(i, j)`` the probe sets leaf ``i`` to ``+M``,
leaf ``j`` to ``-M`` and every other leaf to a unit ``u`` so small beside
``M`` that a partial sum holding ``M`` absorbs it.  The units that survive
are those added outside the smallest subtree holding both ``i`` and ``j``,
so the result counts them: ``size(i, j) = leaves - result/u`` is the number
of leaves under the pair's lowest common ancestor.  From all the sizes the
tree is rebuilt bottom-up (:func:`build`); a node may have many children (a
block FMA adds all its terms at once).  A node in which nothing is lost
(``size == 2`` for every pair inside it) is an *exact* node: its sum is
exact, so its inner order is not observable.

Leaves are ints: the products' positions ``0..W-1`` and ``W`` for ``c``.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Node", "build", "render"]


@dataclass(frozen=True)
class Node:
    """An addition node: ``children`` are leaves (ints) or nodes."""

    children: tuple[int | Node, ...]
    exact: bool = False

    def leaves(self) -> frozenset[int]:
        out: set[int] = set()
        for ch in self.children:
            out |= ch.leaves() if isinstance(ch, Node) else {ch}
        return frozenset(out)


def build(size: dict[tuple[int, int], int], n: int) -> Node | None:
    """The tree over leaves ``0..n-1`` whose lowest common ancestors have the
    given sizes (``size[i, j]``, ``i < j``), or None when no tree does."""
    clusters: dict[int, int | Node] = {i: i for i in range(n)}  # representative -> subtree
    owner = list(range(n))  # leaf -> representative of its cluster

    def leaves_of(t: int | Node) -> frozenset[int]:
        return t.leaves() if isinstance(t, Node) else frozenset({t})

    parent: dict[int, int] = {}

    def find(x: int) -> int:
        while parent.get(x, x) != x:
            x = parent[x]
        return x

    for s in sorted(set(size.values())):
        # link the clusters that pairs of this size join
        parent.clear()

        for (i, j), v in size.items():
            if v != s:
                continue
            ri, rj = find(owner[i]), find(owner[j])
            if ri != rj:
                parent[ri] = rj
        groups: dict[int, list[int]] = {}
        for rep in list(clusters):
            root = find(rep)
            groups.setdefault(root, []).append(rep)
        for members in groups.values():
            if len(members) < 2:
                continue
            kids = [clusters[m] for m in sorted(members, key=lambda m: min(leaves_of(
                clusters[m])))]
            node_leaves = frozenset().union(*(leaves_of(k) for k in kids))
            if len(node_leaves) == s:
                node = Node(tuple(kids))
            elif s == 2:
                node = Node(tuple(kids), exact=True)
            else:
                return None
            # every pair inside must have had a size below s, across children s
            for m in members:
                del clusters[m]
            rep = min(node_leaves)
            clusters[rep] = node
            for leaf in node_leaves:
                owner[leaf] = rep
    if len(clusters) != 1:
        return None
    (tree,) = clusters.values()
    if not isinstance(tree, Node) or not _consistent(tree, size):
        return None
    return tree


def _consistent(tree: Node, size: dict[tuple[int, int], int]) -> bool:
    """Every pair's size is that of its lowest common ancestor (exact nodes:
    2 inside)."""
    lca: dict[tuple[int, int], int] = {}

    def walk(node: Node) -> None:
        groups = [c.leaves() if isinstance(c, Node) else frozenset({c}) for c in node.children]
        total = 2 if node.exact else sum(len(g) for g in groups)
        for x in range(len(groups)):
            for y in range(x + 1, len(groups)):
                for i in groups[x]:
                    for j in groups[y]:
                        lca[min(i, j), max(i, j)] = total
        for c in node.children:
            if isinstance(c, Node):
                walk(c)

    walk(tree)
    return all(lca.get(k) == v for k, v in size.items())


def render(tree: int | Node, c_leaf: int) -> str:
    """The tree as text: ``p3`` a product, ``c`` the addend, ``(x + y)`` an
    addition, ``[x y z]`` one multi-term node (all its terms added at once),
    ``{x y z}`` an exact node (no loss observed, inner order unknown)."""
    if not isinstance(tree, Node):
        return "c" if tree == c_leaf else f"p{tree}"
    inner = [render(ch, c_leaf) for ch in tree.children]
    if tree.exact:
        return "{" + " ".join(_compress(inner)) + "}"
    if len(inner) == 2:
        return f"({inner[0]} + {inner[1]})"
    return "[" + " ".join(_compress(inner)) + "]"


def _compress(items: list[str]) -> list[str]:
    """``p0 p1 p2 p3`` -> ``p0..p3`` (runs of consecutive products)."""
    out: list[str] = []
    run: list[int] = []

    def flush() -> None:
        if len(run) >= 3:
            out.append(f"p{run[0]}..p{run[-1]}")
        else:
            out.extend(f"p{r}" for r in run)
        run.clear()

    for it in items:
        if it.startswith("p") and it[1:].isdigit():
            v = int(it[1:])
            if run and v != run[-1] + 1:
                flush()
            run.append(v)
        else:
            flush()
            out.append(it)
    flush()
    return out
