"""Black boxes with no useful worst-case sensitivity: k-means centroids and a small network.

Both start from a fixed, public-or-pool-derived initial state, so they are deterministic
given their input, and both align their output to a fixed order, so that runs on different
secrets are comparable coordinate by coordinate (calibration measures exactly that spread).

>>> import numpy as np, pandas as pd
>>> frame = pd.DataFrame({"a": [0.0, 0.1, 0.2, 5.0, 5.1, 5.2], "b": [0.0] * 3 + [1.0] * 3})
>>> bounds = {"a": (0.0, 6.0), "b": (0.0, 1.0)}
>>> kmeans = KMeans.from_pool(frame, ("a", "b"), k=2, bounds=bounds, seed=0)
>>> sorted(np.round(kmeans(frame)[:, 0] * 6, 2).tolist())  # back from [0, 1] units
[0.1, 5.1]
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.optimize import linear_sum_assignment
from scipy.special import expit

from safeshare.dp.randomness import Randomness
from safeshare.errors import InputError
from safeshare.pac.applications import Bounds, columns_of, scale_to_unit


def kmeans_cost(points: np.ndarray, centroids: np.ndarray) -> float:
    """Mean squared distance of each point to its nearest centroid."""
    distances = ((points[:, None, :] - centroids[None, :, :]) ** 2).sum(axis=2)
    return float(distances.min(axis=1).mean())


def lloyd(points: np.ndarray, start: np.ndarray, iterations: int) -> np.ndarray:
    """Lloyd's iterations from ``start``; an emptied cluster keeps its centroid."""
    centroids = start.copy()
    for _ in range(iterations):
        nearest = ((points[:, None, :] - centroids[None, :, :]) ** 2).sum(axis=2).argmin(axis=1)
        moved = centroids.copy()
        for j in range(len(centroids)):
            members = points[nearest == j]
            if len(members):
                moved[j] = members.mean(axis=0)
        if np.allclose(moved, centroids, rtol=0, atol=1e-12):
            return moved
        centroids = moved
    return centroids


@dataclass(frozen=True)
class KMeans:
    """k-means centroids (in [0, 1]-scaled units of public ``bounds``), in the reference order.

    ``reference`` (k x p) is where Lloyd starts and what the centroids are matched to
    (Hungarian assignment) so that cluster j means the same cluster on every secret.  In the
    membership setting the pool of records is public, so :meth:`from_pool` may fit it there.
    """

    columns: tuple[str, ...]
    bounds: Bounds = field(hash=False)
    reference: np.ndarray = field(hash=False)
    iterations: int = 30

    @classmethod
    def from_pool(
        cls, pool: Any, columns: tuple[str, ...], *, k: int, bounds: Bounds, seed: int = 0
    ) -> KMeans:
        """Reference centroids from k-means++ (public seed) and Lloyd on the whole pool."""
        if k < 1:
            raise InputError(f"k must be at least 1, got {k}")
        points = scale_to_unit(columns_of(pool, columns), columns, bounds)
        if len(points) < k:
            raise InputError(f"k={k} clusters need at least {k} records")
        generator = Randomness(seed).generator()
        chosen = [points[generator.integers(len(points))]]
        for _ in range(1, k):
            gaps = ((points[:, None, :] - np.array(chosen)[None]) ** 2).sum(axis=2).min(axis=1)
            weights = gaps / gaps.sum() if gaps.sum() > 0 else None
            chosen.append(points[generator.choice(len(points), p=weights)])
        reference = lloyd(points, np.array(chosen), 100)
        return cls(columns, bounds, reference)

    def points(self, frame: Any) -> np.ndarray:
        return scale_to_unit(columns_of(frame, self.columns), self.columns, self.bounds)

    def __call__(self, frame: Any) -> np.ndarray:
        centroids = lloyd(self.points(frame), self.reference, self.iterations)
        return align(centroids, self.reference)


def align(centroids: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """Reorder ``centroids`` to best match ``reference`` row by row (least squared distance)."""
    cost = ((reference[:, None, :] - centroids[None, :, :]) ** 2).sum(axis=2)
    rows, cols = linear_sum_assignment(cost)
    return np.asarray(centroids[cols[np.argsort(rows)]])


@dataclass(frozen=True)
class SmallMLP:
    """A one-hidden-layer tanh network for a binary target, trained by full-batch gradient descent.

    Features are clipped and scaled by public bounds; the initial weights come from a public
    seed, and training runs a fixed number of steps: the parameters (flattened: hidden weights,
    hidden biases, output weights, output bias) are a deterministic function of the data.
    """

    target: str
    features: tuple[str, ...]
    bounds: Bounds = field(hash=False)
    hidden: int = 8
    steps: int = 300
    rate: float = 0.5
    threshold: float = 0.0
    seed: int = 0

    @property
    def size(self) -> int:
        p, h = len(self.features), self.hidden
        return p * h + h + h + 1

    def initial(self) -> np.ndarray:
        generator = Randomness(self.seed).generator()
        p, h = len(self.features), self.hidden
        hidden = generator.normal(0.0, 1.0 / math.sqrt(p), size=(p, h))
        out = generator.normal(0.0, 1.0 / math.sqrt(h), size=h)
        return np.concatenate([hidden.ravel(), np.zeros(h), out, [0.0]])

    def design(self, frame: Any) -> tuple[np.ndarray, np.ndarray]:
        x = scale_to_unit(columns_of(frame, self.features), self.features, self.bounds)
        y = (columns_of(frame, (self.target,))[:, 0] > self.threshold).astype(float)
        return x, y

    def unpack(self, params: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
        p, h = len(self.features), self.hidden
        w1 = params[: p * h].reshape(p, h)
        b1 = params[p * h : p * h + h]
        w2 = params[p * h + h : p * h + 2 * h]
        return w1, b1, w2, float(params[-1])

    def gradients(self, params: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Per-example gradients of the log-loss (rows x parameters)."""
        w1, b1, w2, b2 = self.unpack(params)
        hidden = np.tanh(x @ w1 + b1)
        error = expit(hidden @ w2 + b2) - y
        back = (error[:, None] * w2[None, :]) * (1 - hidden**2)
        grad_w1 = (x[:, :, None] * back[:, None, :]).reshape(len(x), -1)
        return np.hstack([grad_w1, back, error[:, None] * hidden, error[:, None]])

    def __call__(self, frame: Any) -> np.ndarray:
        x, y = self.design(frame)
        params = self.initial()
        for _ in range(self.steps):
            w1, b1, w2, b2 = self.unpack(params)
            hidden = np.tanh(x @ w1 + b1)
            error = expit(hidden @ w2 + b2) - y
            back = (error[:, None] * w2[None, :]) * (1 - hidden**2)
            grad = np.concatenate(
                [(x.T @ back).ravel(), back.sum(axis=0), hidden.T @ error, [error.sum()]]
            )
            params = params - self.rate * grad / len(x)
        return params

    def accuracy(self, params: np.ndarray, frame: Any) -> float:
        x, y = self.design(frame)
        w1, b1, w2, b2 = self.unpack(np.asarray(params, dtype=float))
        scores = np.tanh(x @ w1 + b1) @ w2 + b2
        return float(np.mean((scores > 0) == (y > 0.5)))
