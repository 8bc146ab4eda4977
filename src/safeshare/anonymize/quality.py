"""Quality models: how much information a transformation loses (lower is better).

Per quasi-identifier, with ``n`` records, ``s`` of them suppressed (a suppressed record counts
as fully generalized) and each kept record ``r`` at a label ``g_r``:

* ``precision`` (ARX's Precision, Sweeney): ``((n - s) * level / height + s) / n``;
* ``loss`` (Iyengar's generalization loss, ARX's Loss per column): the mean of
  ``(leaves(g_r) - 1) / (leaves(*) - 1)``, leaves counted in the hierarchy;
* ``ncp`` (normalized certainty penalty, Xu et al.): as ``loss`` but numeric labels cost
  their interval's width over the column's range;
* ``entropy`` (non-uniform entropy, Gionis & Tassa): ``sum_r -log2(f(a_r) / f(g_r))`` with
  ``f`` the frequency in the input, normalized by its value when all is suppressed.

Overall, each is the arithmetic mean over the quasi-identifiers (what the search minimizes),
weighted by the attribute weights when the config gives them (``weight: 2`` counts a column
twice).
ARX aggregates its Loss differently by default, as the geometric mean of ``1 + loss`` minus 1
over the quasi-identifiers (lower than the arithmetic mean when the columns differ): that
figure is reported too, as ``loss_geometric``, to compare with the number ARX shows.  Two more
are table-wide:
``discernibility`` (``sum |E|^2`` over kept classes ``+ s * n``, reported over ``n^2``) and
``aecs`` (average equivalence class size of the kept records); and, with a ``target``
column, ``classification`` (Iyengar's classification metric: the share of records that are
suppressed or hold another value of the target than their class's most frequent one, what
a classifier predicting each class's majority label would get wrong).

The four per-attribute models are *separable*: without suppression a node's value is a sum
of one term per column and level, and suppression only adds to it.  The search uses that
sum as an exact lower bound.

>>> from safeshare.anonymize.hierarchy import Hierarchy
>>> h = Hierarchy.from_rows("a", [["1", "1-2", "*"], ["2", "1-2", "*"], ["3", "3-4", "*"]])
>>> ctx = QualityContext([h], [np.array([2, 1, 1])])
>>> round(float(ctx.bounds("loss")[0][1]), 4)  # three of four records in a 2-leaf label
0.375
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from safeshare.anonymize.hierarchy import Hierarchy
from safeshare.anonymize.models import AnonymizationError

SEPARABLE = ("precision", "loss", "ncp", "entropy")
QUALITY_MODELS = (*SEPARABLE, "discernibility", "aecs", "classification")


@dataclass(frozen=True)
class QualityScores:
    """Overall and per-attribute scores of every quality model (lower loses less)."""

    overall: dict[str, float]
    per_attribute: dict[str, dict[str, float]]

    def to_dict(self) -> dict[str, Any]:
        return {"overall": self.overall, "per_attribute": self.per_attribute}


class QualityContext:
    """Per column and level, what each separable model charges a record at each label."""

    def __init__(
        self,
        hierarchies: Sequence[Hierarchy],
        counts: Sequence[np.ndarray],
        importance: Sequence[float] | None = None,
    ) -> None:
        self.hierarchies = list(hierarchies)
        given = np.ones(len(hierarchies)) if importance is None else np.asarray(importance, float)
        if len(given) != len(hierarchies) or (given <= 0).any() or not np.isfinite(given).all():
            raise AnonymizationError(
                f"attribute weights must be one positive number per quasi-identifier, got {given}"
            )
        self.importance = given / given.sum() if len(given) else given
        self.names = [h.column for h in hierarchies]
        self.n = int(counts[0].sum()) if counts else 0
        self.label_counts: list[list[np.ndarray]] = []
        self.loss: list[list[np.ndarray]] = []
        self.ncp: list[list[np.ndarray]] = []
        self.entropy_const: list[float] = []
        self.entropy_max: list[float] = []
        for h, given in zip(hierarchies, counts, strict=True):
            count = np.asarray(given, dtype=np.float64)
            per_level_counts, loss, ncp = [], [], []
            for level in range(h.height + 1):
                labels = len(h.labels[level])
                per_level_counts.append(np.bincount(h.maps[level], weights=count, minlength=labels))
                label_loss, label_ncp = h.coverage(level)
                loss.append(label_loss)
                ncp.append(label_ncp)
            self.label_counts.append(per_level_counts)
            self.loss.append(loss)
            self.ncp.append(ncp)
            present = count > 0
            const = -float((count[present] * np.log2(count[present])).sum())
            self.entropy_const.append(const)
            self.entropy_max.append(const + self.n * np.log2(max(self.n, 1)))

    def bounds(self, metric: str) -> list[np.ndarray] | None:
        """Per column, the normalized value of each level for all records kept (a lower bound)."""
        if metric not in SEPARABLE:
            return None
        out = []
        n = max(self.n, 1)
        for c, h in enumerate(self.hierarchies):
            values = np.empty(h.height + 1)
            for level in range(h.height + 1):
                counts = self.label_counts[c][level]
                if metric == "precision":
                    values[level] = level / h.height if h.height else 0.0
                elif metric in ("loss", "ncp"):
                    table = self.loss if metric == "loss" else self.ncp
                    values[level] = float(counts @ table[c][level]) / n
                else:
                    present = counts > 0
                    raw = self.entropy_const[c] + float(
                        (counts[present] * np.log2(counts[present])).sum()
                    )
                    top = self.entropy_max[c]
                    values[level] = raw / top if top > 0 else 0.0
            out.append(values)
        return out

    def column_score(
        self,
        metric: str,
        c: int,
        levels: np.ndarray,
        labels: np.ndarray,
        sizes: np.ndarray,
        suppressed: int,
    ) -> float:
        """One column's normalized score for kept classes at ``levels``/``labels`` of ``sizes``."""
        h = self.hierarchies[c]
        n = max(self.n, 1)
        sizes = sizes.astype(np.float64)
        if metric == "precision":
            height = max(h.height, 1)
            return float((sizes @ (levels / height)) + suppressed) / n
        if metric in ("loss", "ncp"):
            table = self.loss if metric == "loss" else self.ncp
            charge = _per_level(table[c], levels, labels)
            return float(sizes @ charge + suppressed) / n
        if metric == "entropy":
            logs = np.log2(np.maximum(_per_level(self.label_counts[c], levels, labels), 1.0))
            raw = self.entropy_const[c] + float(sizes @ logs) + suppressed * np.log2(n)
            top = self.entropy_max[c]
            return raw / top if top > 0 else 0.0
        raise AnonymizationError(f"unknown quality model {metric!r}; use one of {QUALITY_MODELS}")

    def scores(
        self,
        levels: Sequence[np.ndarray],
        labels: Sequence[np.ndarray],
        sizes: np.ndarray,
        suppressed: int,
        target: np.ndarray | None = None,
    ) -> QualityScores:
        """Every model, overall and per attribute, for kept classes and ``suppressed`` records
        (``target``: the kept classes' counts of each target value, for ``classification``)."""
        per_attribute: dict[str, dict[str, float]] = {}
        overall: dict[str, float] = {}
        for metric in SEPARABLE:
            values = [
                self.column_score(metric, c, levels[c], labels[c], sizes, suppressed)
                for c in range(len(self.hierarchies))
            ]
            overall[metric] = self.combine(values)
            if metric == "loss":
                overall["loss_geometric"] = geometric_loss(values, self.importance)
            for name, value in zip(self.names, values, strict=True):
                per_attribute.setdefault(name, {})[metric] = value
        overall["discernibility"] = table_score("discernibility", sizes, suppressed, self.n)
        overall["aecs"] = table_score("aecs", sizes, suppressed, self.n)
        if target is not None:
            overall["classification"] = classification(target, suppressed, self.n)
        return QualityScores(overall, per_attribute)

    def score(
        self,
        metric: str,
        levels: Sequence[np.ndarray],
        labels: Sequence[np.ndarray],
        sizes: np.ndarray,
        suppressed: int,
        target: np.ndarray | None = None,
    ) -> float:
        """The overall value of one model (what the search minimizes)."""
        if metric == "classification":
            if target is None:
                raise AnonymizationError("the classification quality model needs a target")
            return classification(target, suppressed, self.n)
        if metric in SEPARABLE:
            values = [
                self.column_score(metric, c, levels[c], labels[c], sizes, suppressed)
                for c in range(len(self.hierarchies))
            ]
            return self.combine(values)
        return table_score(metric, sizes, suppressed, self.n)

    def combine(self, values: Sequence[float]) -> float:
        """The overall value of per-column values: their mean, weighted by the attribute
        weights (equal by default)."""
        return float(self.importance @ np.asarray(values, dtype=np.float64)) if len(values) else 0.0


def geometric_loss(values: Sequence[float], weights: np.ndarray | None = None) -> float:
    """ARX's default aggregate of per-attribute losses: ``prod(1 + v) ** (1 / d) - 1``
    (``weights``, summing to 1, in place of the ``1 / d``).

    >>> round(geometric_loss([0.0, 0.5, 1.0]), 4)  # the arithmetic mean is 0.5
    0.4422
    """
    if not len(values):
        return 0.0
    logs = np.log1p(np.asarray(values, dtype=np.float64))
    mean = float(logs.mean()) if weights is None else float(weights @ logs)
    return float(np.exp(mean) - 1.0)


def _per_level(tables: Sequence[np.ndarray], levels: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """``tables[level][label]`` per class (one lookup when the classes share their level)."""
    if len(levels) and levels.min() == levels.max():
        return np.asarray(tables[int(levels[0])][labels], dtype=np.float64)
    out = np.empty(len(labels))
    for level in np.unique(levels):
        at = levels == level
        out[at] = tables[int(level)][labels[at]]
    return out


def classification(target: np.ndarray, suppressed: int, n: int) -> float:
    """Iyengar's classification metric: the share of the ``n`` records that are suppressed
    or whose target value is not their class's most frequent (``target[g, v]``: how many of
    class ``g``'s records hold value ``v``).

    >>> classification(np.array([[3, 1], [0, 2]]), suppressed=2, n=8)  # (1 + 0 + 2) / 8
    0.375
    """
    minority = int(target.sum() - target.max(axis=1, initial=0).sum()) if len(target) else 0
    return (minority + suppressed) / max(n, 1)


def table_score(metric: str, sizes: np.ndarray, suppressed: int, n: int) -> float:
    """Discernibility (over ``n^2``) or the average class size of the kept records."""
    if metric == "discernibility":
        squares = float((sizes.astype(np.float64) ** 2).sum())
        return (squares + suppressed * n) / max(n, 1) ** 2
    if metric == "aecs":
        return float(sizes.sum()) / max(len(sizes), 1)
    raise AnonymizationError(f"unknown quality model {metric!r}; use one of {QUALITY_MODELS}")
