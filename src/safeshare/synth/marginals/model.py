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

from safeshare.synth.marginals.factor import expand_to, sum_to
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
        """The marginal over ``attrs``, which must lie inside one clique."""
        index = self.tree.clique_containing(attrs)
        if index is None:
            raise ValueError(f"attributes {list(attrs)} are not inside one clique of the model")
        return sum_to(self.marginals()[index], self.tree.cliques[index], tuple(attrs))

    def _calibrate(self) -> list[np.ndarray]:
        cliques = self.tree.cliques
        factors = [np.exp(p - p.max()) for p in self.log_potentials]
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
            if total > 0:
                belief = belief * (self.total / total)
            marginals.append(belief)
        return marginals

    def _belief(
        self,
        i: int,
        factor: np.ndarray,
        messages: dict[tuple[int, int], np.ndarray],
        exclude: int | None,
    ) -> np.ndarray:
        belief = factor
        for k in self.tree.neighbors(i):
            if k == exclude:
                continue
            separator = self._separators[(k, i)]
            belief = belief * expand_to(messages[(k, i)], separator, self.tree.cliques[i])
        return belief
