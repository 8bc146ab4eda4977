"""A population of synthetic samples: what PE evolves, with the links to where each came from.

Every sample knows its parent (its row in the previous population, or -1 when the
random API drew it) and, once the private data have voted, its noisy vote count.
Nothing here is private: samples come from the APIs, votes are DP outputs.

>>> import numpy as np, pandas as pd
>>> first = Population.random(pd.DataFrame({"x": [0, 1, 2]}))
>>> first.parents.tolist(), first.measured
([-1, -1, -1], False)
>>> voted = first.with_votes(np.array([5.0, 0.0, 2.0]))
>>> child = voted.offspring(pd.DataFrame({"x": [0, 2]}), np.array([0, 2]))
>>> child.iteration, child.parents.tolist()
(1, [0, 2])
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from safeshare.errors import InputError


@dataclass(frozen=True)
class Population:
    """Samples (one per row), their parents' rows, the iteration, and votes once measured."""

    samples: pd.DataFrame
    parents: np.ndarray
    iteration: int = 0
    votes: np.ndarray | None = field(default=None)

    def __post_init__(self) -> None:
        parents = np.asarray(self.parents, dtype=np.int64)
        object.__setattr__(self, "parents", parents)
        object.__setattr__(self, "samples", self.samples.reset_index(drop=True))
        if parents.shape != (len(self.samples),):
            raise InputError(
                f"population of iteration {self.iteration}: {len(self.samples)} samples but "
                f"{parents.size} parent links; give one parent per sample"
            )
        if self.votes is not None:
            votes = np.asarray(self.votes, dtype=float)
            if votes.shape != parents.shape:
                raise InputError(
                    f"population of iteration {self.iteration}: {votes.size} votes for "
                    f"{parents.size} samples; give one vote count per sample"
                )
            object.__setattr__(self, "votes", votes)

    @classmethod
    def random(cls, samples: pd.DataFrame) -> Population:
        """The first population: samples from the random API, without parents."""
        return cls(samples, np.full(len(samples), -1, dtype=np.int64), 0)

    def __len__(self) -> int:
        return len(self.samples)

    @property
    def measured(self) -> bool:
        """True once the private data have voted on this population."""
        return self.votes is not None

    def with_votes(self, votes: np.ndarray) -> Population:
        """The same population with its noisy votes."""
        return Population(self.samples, self.parents, self.iteration, votes)

    def offspring(self, samples: pd.DataFrame, parents: np.ndarray) -> Population:
        """The next population: ``samples`` varied from these rows (``parents``)."""
        rows = np.asarray(parents, dtype=np.int64)
        if rows.size and (rows.min() < 0 or rows.max() >= len(self)):
            raise InputError(
                f"parent rows must lie in 0..{len(self) - 1} (the population of iteration "
                f"{self.iteration})"
            )
        return Population(samples, rows, self.iteration + 1)

    def weights(self) -> np.ndarray:
        """Sampling weights from the votes: negative counts clipped to zero (post-processing)."""
        if self.votes is None:
            raise InputError(
                f"the population of iteration {self.iteration} has no votes yet; measure it first"
            )
        return np.clip(self.votes, 0.0, None)
