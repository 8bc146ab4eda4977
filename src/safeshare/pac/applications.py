"""Black boxes shipped as examples: mean, histogram, linear and logistic regression.

Each is a small frozen dataclass, a deterministic function of a DataFrame (picklable, so it
runs in worker processes too), returning a pandas Series of named numbers.  ``bounds`` are
public facts (a schema's min/max), never read from the data; the DP baselines in
:mod:`safeshare.pac.dp_baseline` compute the same functions with DP noise instead.

>>> import pandas as pd
>>> frame = pd.DataFrame({"x": [1.0, 2.0, 3.0, 4.0], "y": [2.1, 3.9, 6.2, 7.8]})
>>> Mean(("x", "y"))(frame).round(2).tolist()
[2.5, 5.0]
>>> LinearRegression("y", ("x",))(frame).round(2).tolist()
[0.15, 1.94]
>>> Histogram("x", edges=(0.0, 2.5, 5.0))(frame).tolist()
[0.5, 0.5]
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy.special import expit

from safeshare.errors import InputError

Bounds = Mapping[str, tuple[float, float]]
"""Public lower and upper bounds per column."""


def columns_of(frame: Any, names: Sequence[str]) -> np.ndarray:
    """The named columns as a float matrix (rows x names)."""
    missing = [n for n in names if n not in frame.columns]
    if missing:
        raise InputError(
            f"columns {missing} are not in the data; choose from {list(frame.columns)}"
        )
    return np.asarray(frame[list(names)].to_numpy(dtype=float))


def scale_to_unit(matrix: np.ndarray, names: Sequence[str], bounds: Bounds) -> np.ndarray:
    """Clip each column to its public bounds and map them to [0, 1]."""
    low = np.array([bounds[n][0] for n in names], dtype=float)
    high = np.array([bounds[n][1] for n in names], dtype=float)
    if np.any(high <= low):
        raise InputError("every public bound must have lower < upper")
    return np.asarray((np.clip(matrix, low, high) - low) / (high - low))


@dataclass(frozen=True)
class Mean:
    """Column means."""

    columns: tuple[str, ...]

    def __call__(self, frame: Any) -> pd.Series:
        values = columns_of(frame, self.columns)
        return pd.Series(values.mean(axis=0), index=list(self.columns), dtype=float)


@dataclass(frozen=True)
class Histogram:
    """Share of records per bin of a numeric column (public ``edges``) or per category."""

    column: str
    edges: tuple[float, ...] = ()
    categories: tuple[Any, ...] = ()

    def __post_init__(self) -> None:
        if bool(self.edges) == bool(self.categories):
            raise InputError("give a histogram either public bin edges or public categories")
        if self.edges and (len(self.edges) < 2 or list(self.edges) != sorted(self.edges)):
            raise InputError("bin edges must be at least two increasing numbers")

    @property
    def labels(self) -> list[str]:
        if self.categories:
            return [str(c) for c in self.categories]
        return [f"[{a:g}, {b:g})" for a, b in zip(self.edges[:-1], self.edges[1:], strict=True)]

    def __call__(self, frame: Any) -> pd.Series:
        values = frame[self.column].to_numpy()
        if self.categories:
            counts = np.array([np.sum(values == c) for c in self.categories], dtype=float)
        else:
            numbers = np.clip(values.astype(float), self.edges[0], self.edges[-1])
            counts = np.histogram(numbers, bins=np.asarray(self.edges, dtype=float))[0]
        return pd.Series(counts / max(len(values), 1), index=self.labels, dtype=float)


@dataclass(frozen=True)
class LinearRegression:
    """Ordinary least squares coefficients, on the raw (unclipped) data."""

    target: str
    features: tuple[str, ...]
    intercept: bool = True

    @property
    def names(self) -> list[str]:
        return (["intercept"] if self.intercept else []) + list(self.features)

    def design(self, frame: Any) -> tuple[np.ndarray, np.ndarray]:
        x = columns_of(frame, self.features)
        if self.intercept:
            x = np.hstack([np.ones((len(x), 1)), x])
        return x, columns_of(frame, (self.target,))[:, 0]

    def __call__(self, frame: Any) -> pd.Series:
        x, y = self.design(frame)
        coef = np.linalg.lstsq(x, y, rcond=None)[0]
        return pd.Series(coef, index=self.names, dtype=float)

    def predict(self, coef: np.ndarray, frame: Any) -> np.ndarray:
        return np.asarray(self.design(frame)[0] @ np.asarray(coef, dtype=float))


@dataclass(frozen=True)
class LogisticRegression:
    """L2-regularised logistic regression on features clipped and scaled by public bounds.

    Each row is ``(1, scaled features) / sqrt(p + 1)`` so that ``||x|| <= 1``; the objective
    ``mean(log(1 + exp(-y w.x))) + l2 / 2 ||w||^2`` (``y`` = +1 when ``target > threshold``)
    is minimised by Newton's method: the same function the DP baseline perturbs.
    """

    target: str
    features: tuple[str, ...]
    bounds: Bounds = field(hash=False)
    l2: float = 1e-3
    threshold: float = 0.0
    iterations: int = 50

    @property
    def names(self) -> list[str]:
        return ["intercept", *self.features]

    def design(self, frame: Any) -> tuple[np.ndarray, np.ndarray]:
        scaled = scale_to_unit(columns_of(frame, self.features), self.features, self.bounds)
        x = np.hstack([np.ones((len(scaled), 1)), scaled]) / math.sqrt(len(self.features) + 1)
        y = np.where(columns_of(frame, (self.target,))[:, 0] > self.threshold, 1.0, -1.0)
        return x, y

    def __call__(self, frame: Any) -> pd.Series:
        x, y = self.design(frame)
        n, p = x.shape
        w = np.zeros(p)
        for _ in range(self.iterations):
            margin = y * (x @ w)
            prob = expit(-margin)
            gradient = -(x.T @ (y * prob)) / n + self.l2 * w
            curvature = prob * (1 - prob)
            hessian = (x.T * curvature) @ x / n + self.l2 * np.eye(p)
            step = np.linalg.solve(hessian, gradient)
            w -= step
            if float(np.abs(step).max()) < 1e-10:
                break
        return pd.Series(w, index=self.names, dtype=float)

    def accuracy(self, coef: np.ndarray, frame: Any) -> float:
        x, y = self.design(frame)
        return float(np.mean(np.sign(x @ np.asarray(coef, dtype=float)) == y))
