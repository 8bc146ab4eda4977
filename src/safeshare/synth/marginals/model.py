"""A graphical model over discrete attributes, and exact inference by belief propagation.

The model is a product of clique potentials, ``p(x) ∝ exp(sum_C theta_C(x_C))``,
over the cliques of a junction tree.  :meth:`GraphicalModel.marginals` runs the
sum-product algorithm once up and once down the tree, in probability space with
every message normalised (fast, and free of overflow), and returns each clique's
marginal scaled to the model's total.

>>> import numpy as np
>>> from safeshare.synth.marginals.junction_tree import JunctionTree
>>> tree = JunctionTree.build(["a", "b"], {"a": 2, "b": 2}, [("a", "b")])
>>> model = GraphicalModel(tree, {"a": 2, "b": 2}, [np.log(np.array([[1.0, 3.0], [2.0, 4.0]]))], 10.0)
>>> model.marginals()[0].round(9).tolist()
[[1.0, 3.0], [2.0, 4.0]]
>>> model.project(["b"]).round(9).tolist()
[3.0, 7.0]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from safeshare.synth.marginals.factor import contract, expand_to, multiply, sum_to
from safeshare.synth.marginals.junction_tree import JunctionTree


class GraphicalModel:
    """Log-potentials on a junction tree's cliques, plus the total count they describe."""

    def __init__(
        self,
        tree: JunctionTree,
        sizes: Mapping[str, int],
        log_potentials: Sequence[np.ndarray] | None = None,
        total: float = 1.0,
    ) -> None:
        self.tree = tree
        self.sizes = dict(sizes)
        self.total = float(total)
        if log_potentials is None:
            log_potentials = [np.zeros(self.shape(c)) for c in tree.cliques]
        self.log_potentials = [np.asarray(p, dtype=float) for p in log_potentials]
        self._schedule = tree.schedule()
        self._separators = {(i, j): tree.separator(i, j) for i, j in self._schedule}
        self._cache: list[np.ndarray] | None = None

    def shape(self, attrs: Sequence[str]) -> tuple[int, ...]:
        return tuple(self.sizes[a] for a in attrs)

    def with_potentials(self, log_potentials: Sequence[np.ndarray]) -> GraphicalModel:
        return GraphicalModel(self.tree, self.sizes, log_potentials, self.total)

    def marginals(self) -> list[np.ndarray]:
        """Each clique's marginal (counts summing to ``total``), in clique order."""
        if self._cache is None:
            self._cache = self._calibrate()
        return self._cache

    def project(self, attrs: Sequence[str]) -> np.ndarray:
        """The marginal (counts) over ``attrs``, in that order; any attributes of the model.

        Inside one clique it is a sum of the clique's marginal; across cliques it is
        variable elimination over the smallest subtree that covers ``attrs``, from the
        calibrated marginals (the junction tree's factorization).
        """
        wanted = tuple(attrs)
        unknown = [a for a in wanted if a not in self.sizes]
        if unknown or len(set(wanted)) != len(wanted):
            raise ValueError(f"cannot project onto {list(wanted)}: unknown or repeated attributes")
        index = self.tree.clique_containing(wanted)
        if index is not None:
            return sum_to(self.marginals()[index], self.tree.cliques[index], wanted)
        result: np.ndarray = np.array(1.0)
        result_attrs: tuple[str, ...] = ()
        for component in self._components_covering(wanted):
            part, part_attrs = self._eliminate(component, wanted)
            result, result_attrs = multiply(result, result_attrs, part / self.total, part_attrs)
        missing = [a for a in wanted if a not in result_attrs]  # attributes in no clique: uniform
        for a in missing:
            result, result_attrs = multiply(
                result, result_attrs, np.full(self.sizes[a], 1.0 / self.sizes[a]), (a,)
            )
        return self.total * sum_to(result, result_attrs, wanted)

    def _components_covering(self, attrs: tuple[str, ...]) -> list[set[int]]:
        """Per connected tree, the smallest subtree whose cliques hold the wanted attributes."""
        tree = self.tree
        needed: set[int] = set()
        for a in attrs:
            holders = [i for i, c in enumerate(tree.cliques) if a in c]
            if holders:
                needed.add(min(holders, key=lambda i: len(tree.cliques[i])))
        components: list[set[int]] = []
        for start in sorted(needed):
            if any(start in c for c in components):
                continue
            reach, frontier = {start}, [start]
            while frontier:
                node = frontier.pop()
                for n in tree.neighbors(node):
                    if n not in reach:
                        reach.add(n)
                        frontier.append(n)
            keep = set(reach)
            pruned = True
            while pruned:  # drop leaves that hold no wanted attribute
                pruned = False
                for node in list(keep):
                    degree = sum(n in keep for n in tree.neighbors(node))
                    if node not in needed and degree <= 1 and len(keep) > 1:
                        keep.discard(node)
                        pruned = True
            components.append(keep)
        return components

    def _eliminate(
        self, nodes: set[int], wanted: tuple[str, ...]
    ) -> tuple[np.ndarray, tuple[str, ...]]:
        """Counts over the wanted attributes held by ``nodes`` (a subtree), summing out the rest."""
        marginals, cliques = self.marginals(), self.tree.cliques
        root = min(nodes)

        def collect(node: int, parent: int) -> tuple[np.ndarray, tuple[str, ...]]:
            # the clique's marginal (given its separator: mu_C / mu_S) times its children's
            # messages, contracted in one einsum onto the separator and the wanted attributes
            operands: list[tuple[np.ndarray, tuple[str, ...]]] = [(marginals[node], cliques[node])]
            separator: tuple[str, ...] = ()
            if parent >= 0:
                separator = self.tree.separator(node, parent)
                mu_s = sum_to(marginals[node], cliques[node], separator)
                inverse = np.divide(1.0, mu_s, out=np.zeros_like(mu_s), where=mu_s > 0)
                operands.append((inverse, separator))
            for child in self.tree.neighbors(node):
                if child in nodes and child != parent:
                    operands.append(collect(child, node))
            present = {a for _, attrs in operands for a in attrs}
            keep = tuple(a for a in (*separator, *wanted) if a in present)
            keep = tuple(dict.fromkeys(keep))
            return contract(operands, keep), keep

        return collect(root, -1)

    def _calibrate(self) -> list[np.ndarray]:
        cliques = self.tree.cliques
        factors = [p - p.max() for p in self.log_potentials]
        for factor in factors:
            np.exp(factor, out=factor)
        messages: dict[tuple[int, int], np.ndarray] = {}
        for sender, receiver in self._schedule:
            belief = self._belief(sender, factors[sender], messages, exclude=receiver)
            message = sum_to(belief, cliques[sender], self._separators[(sender, receiver)])
            total = message.sum()
            messages[(sender, receiver)] = message / total if total > 0 else message
        marginals = []
        for i, factor in enumerate(factors):
            belief = self._belief(i, factor, messages, exclude=None)
            total = belief.sum()
            if total > 0:  # each belief is a fresh array here (or a factor used no more)
                belief *= self.total / total
            marginals.append(belief)
        return marginals

    def _belief(
        self,
        i: int,
        factor: np.ndarray,
        messages: dict[tuple[int, int], np.ndarray],
        exclude: int | None,
    ) -> np.ndarray:
        incoming = [
            (messages[(k, i)], self._separators[(k, i)])
            for k in self.tree.neighbors(i)
            if k != exclude
        ]
        if not incoming:
            return factor
        # multiply the messages on their (smaller) joint axes, then the clique once
        product, axes = incoming[0][0], tuple(incoming[0][1])
        for message, separator in incoming[1:]:
            product, axes = multiply(product, axes, message, separator)
        return factor * expand_to(product, axes, self.tree.cliques[i])
