"""A guess of how many records a node suppresses, learnt from the nodes checked so far.

The search uses it only to choose *which* node to check next (the one likely to violate the
models while covering many unsettled nodes); what it concludes comes from checks alone, so a
poor guess costs checks, never exactness.  ``log(1 + suppressed)`` is fitted, by ridge least
squares over the checks, as a sum of one term per column and level: generalizing a column one
level shrinks the count by about the same factor wherever the other columns stand.

>>> guide = SuppressionGuide(lo=(0, 0), hi=(2, 1), limit=3)
>>> for node, suppressed in [((0, 0), 40), ((1, 0), 10), ((0, 1), 20), ((2, 1), 0)]:
...     guide.learn(node, suppressed, suppressed <= 3)
>>> guide.violates((1, 1)), guide.violates((2, 1))
(True, False)
>>> [round(rise, 2) for rise in guide.rises((1, 0))]  # the second column shrinks it less
[-1.73, -0.67]
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

_RIDGE = 1e-3
_REFIT = 4  # refit once the new checks number a quarter of those fitted (1/_REFIT)


class SuppressionGuide:
    """Per column and level, a learnt term; a node's guess is their sum plus an intercept."""

    def __init__(self, lo: Sequence[int], hi: Sequence[int], limit: int) -> None:
        self.lo = tuple(lo)
        self.offsets = [0]
        for a, b in zip(lo, hi, strict=True):
            self.offsets.append(self.offsets[-1] + b - a + 1)
        size = self.offsets[-1] + 1  # the last term is the intercept
        self._gram = np.eye(size) * _RIDGE
        self._moment = np.zeros(size)
        self._pending: list[tuple[list[int], float]] = []
        self._terms: list[float] = [0.0] * size
        self._fitted = 0
        self.threshold = math.log1p(limit)
        self._over = math.log1p(limit + 1)

    def _features(self, node: Sequence[int]) -> list[int]:
        return [o + v - a for o, v, a in zip(self.offsets, node, self.lo, strict=False)] + [
            self.offsets[-1]
        ]

    def learn(self, node: Sequence[int], suppressed: int, feasible: bool) -> None:
        """Add one check: the node's suppressed count, and whether it met the models."""
        target = math.log1p(suppressed)
        if not feasible:  # (a table-wide model may fail with little suppressed)
            target = max(target, self._over)
        self._pending.append((self._features(node), target))

    @property
    def terms(self) -> list[float]:
        """The fitted terms (refitted once the new checks are a quarter of those fitted)."""
        if self._pending and len(self._pending) >= max(1, self._fitted // _REFIT):
            features = np.array([features for features, _ in self._pending])
            design = np.zeros((len(features), len(self._moment)))
            np.put_along_axis(design, features, 1.0, axis=1)
            targets = np.array([target for _, target in self._pending])
            self._gram += design.T @ design
            self._moment += design.T @ targets
            self._fitted += len(self._pending)
            self._pending.clear()
            self._terms = np.linalg.solve(self._gram, self._moment).tolist()
        return self._terms

    def guess(self, node: Sequence[int]) -> float:
        """The guessed ``log(1 + suppressed)`` at ``node``."""
        terms = self.terms
        return sum(terms[f] for f in self._features(node))

    def violates(self, node: Sequence[int]) -> bool:
        """Whether ``node`` is guessed to suppress more than the limit."""
        return self.guess(node) > self.threshold

    def rises(self, node: Sequence[int]) -> list[float]:
        """Per column, how the guess changes when that column of ``node`` goes one level up
        (``-inf`` where it is at its highest level)."""
        terms = self.terms
        out = []
        for c, (o, v, a) in enumerate(zip(self.offsets, node, self.lo, strict=False)):
            f = o + v - a
            out.append(terms[f + 1] - terms[f] if f + 1 < self.offsets[c + 1] else -math.inf)
        return out
