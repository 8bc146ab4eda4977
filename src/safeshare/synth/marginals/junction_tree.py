"""Junction trees: the cliques of a graphical model arranged so that inference is exact.

Given the attribute sets a model must represent (the measured marginals), the
graph is triangulated by greedy elimination (each step eliminates the attribute
whose clique would be smallest, counting cells), the maximal cliques are kept, and
they are joined by a maximum spanning tree on separator sizes.

>>> tree = JunctionTree.build(["a", "b", "c"], {"a": 2, "b": 3, "c": 4}, [("a", "b"), ("b", "c")])
>>> tree.cliques
(('a', 'b'), ('b', 'c'))
>>> tree.separator(0, 1)
('b',)
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True)
class JunctionTree:
    """Maximal cliques (attributes in model order) and the tree edges between them."""

    cliques: tuple[tuple[str, ...], ...]
    edges: tuple[tuple[int, int], ...]
    _neighbors: tuple[tuple[int, ...], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        neighbors: list[list[int]] = [[] for _ in self.cliques]
        for i, j in self.edges:
            neighbors[i].append(j)
            neighbors[j].append(i)
        object.__setattr__(self, "_neighbors", tuple(tuple(n) for n in neighbors))

    @classmethod
    def build(
        cls, attrs: Sequence[str], sizes: Mapping[str, int], cliques: Iterable[Sequence[str]]
    ) -> JunctionTree:
        order = {a: i for i, a in enumerate(attrs)}
        graph: dict[str, set[str]] = {a: set() for a in attrs}
        for clique in cliques:
            for a in clique:
                graph[a].update(b for b in clique if b != a)
        maximal = _eliminate(graph, sizes)
        ordered = tuple(tuple(sorted(c, key=order.__getitem__)) for c in maximal)
        return cls(ordered, _spanning_tree(ordered))

    def neighbors(self, i: int) -> tuple[int, ...]:
        return self._neighbors[i]

    def separator(self, i: int, j: int) -> tuple[str, ...]:
        """Attributes shared by cliques ``i`` and ``j``, in clique ``i``'s order."""
        other = set(self.cliques[j])
        return tuple(a for a in self.cliques[i] if a in other)

    def schedule(self) -> list[tuple[int, int]]:
        """Messages (sender, receiver): leaves to roots, then roots to leaves."""
        upward: list[tuple[int, int]] = []
        seen: set[int] = set()
        for root in range(len(self.cliques)):
            if root in seen:
                continue
            stack = [(root, -1)]
            visit: list[tuple[int, int]] = []
            while stack:
                node, parent = stack.pop()
                seen.add(node)
                visit.append((node, parent))
                stack.extend((n, node) for n in self._neighbors[node] if n != parent)
            upward.extend((node, parent) for node, parent in reversed(visit) if parent >= 0)
        downward = [(j, i) for i, j in reversed(upward)]
        return upward + downward

    def clique_containing(self, attrs: Iterable[str]) -> int | None:
        wanted = set(attrs)
        best = None
        for i, clique in enumerate(self.cliques):
            if wanted <= set(clique) and (best is None or len(clique) < len(self.cliques[best])):
                best = i
        return best


def _eliminate(graph: dict[str, set[str]], sizes: Mapping[str, int]) -> list[frozenset[str]]:
    graph = {a: set(n) for a, n in graph.items()}
    found: list[frozenset[str]] = []
    while graph:

        def cost(a: str) -> tuple[float, str]:
            return (math.prod(sizes[b] for b in graph[a]) * sizes[a], a)

        var = min(graph, key=cost)
        clique = frozenset(graph[var] | {var})
        if not any(clique <= other for other in found):
            found = [c for c in found if not c < clique] + [clique]
        neighbors = graph.pop(var)
        for a in neighbors:
            graph[a].discard(var)
            graph[a].update(b for b in neighbors if b != a)
    return found


def _spanning_tree(cliques: tuple[tuple[str, ...], ...]) -> tuple[tuple[int, int], ...]:
    """Kruskal on separator size (largest first); components stay separate trees."""
    pairs = [
        (len(set(cliques[i]) & set(cliques[j])), i, j)
        for i in range(len(cliques))
        for j in range(i + 1, len(cliques))
    ]
    parent = list(range(len(cliques)))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    edges = []
    for weight, i, j in sorted(pairs, key=lambda p: (-p[0], p[1], p[2])):
        if weight == 0:
            break
        root_i, root_j = find(i), find(j)
        if root_i != root_j:
            parent[root_i] = root_j
            edges.append((i, j))
    return tuple(edges)
