"""Local recoding: Mondrian-style top-down partitioning that respects the hierarchies.

Full-domain generalization uses one level per column for the whole table.  Local recoding
lets each group of records take its own levels: start with everything at the top of every
hierarchy (one class) and, in each partition, specialize one column one level down when every
resulting part still satisfies the privacy models (and the table as a whole its table-wide
ones: average risk, sample and population uniqueness); stop when no column can be
specialized.
Every label a record gets is a label of its column's hierarchy, so the output reads like a
full-domain one, only finer where the data allow.  Nothing is suppressed.

The column split first is the one that gives the most parts (ties: the one whose level is
highest relative to its height).  A specialization that leaves the partition whole (one
child label) is always taken.

>>> import numpy as np
>>> from safeshare.anonymize.hierarchy import Hierarchy
>>> from safeshare.anonymize.models import KAnonymity
>>> from safeshare.anonymize.search import Problem
>>> h = Hierarchy.from_rows("a", [["1", "1-2", "*"], ["2", "1-2", "*"], ["3", "3-4", "*"]])
>>> problem = Problem.build([h], [np.array([0, 0, 1, 2, 2, 2])], models=[KAnonymity(3)])
>>> recoding = mondrian(problem)  # '1-2' cannot split; '3-4' holds only 3s: free to level 0
>>> sorted(recoding.classes.sizes.tolist()), sorted(recoding.class_levels[:, 0].tolist())
([3, 3], [0, 1])
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from safeshare.anonymize.models import (
    AnonymizationError,
    AverageRisk,
    Classes,
    NoSolutionError,
)
from safeshare.anonymize.problem import Problem
from safeshare.anonymize.search import best_achievable_k


@dataclass(frozen=True)
class LocalRecoding:
    """The partitions: each distinct row's class and each class's level per column."""

    row_class: np.ndarray
    class_levels: np.ndarray
    classes: Classes
    splits: int


def mondrian(problem: Problem) -> LocalRecoding:
    """Partition ``problem``'s rows top-down; every part satisfies every per-class model."""
    reading = [m.name for m in problem.models if m.reads_population]
    if reading:
        raise AnonymizationError(
            f"{reading[0]} reads a population table, which needs full-domain generalization; "
            f"use search: optimal with {reading[0]}"
        )
    per_class = [m for m in problem.models if m.per_class]
    max_classes = math.inf
    for model in problem.models:
        if isinstance(model, AverageRisk):
            max_classes = min(max_classes, math.floor(model.threshold * problem.n + 1e-9))
    d = len(problem.hierarchies)
    lo = np.asarray(problem.lattice.lo)
    codes = np.stack(problem.codes, axis=1) if d else np.zeros((len(problem.weights), 0), int)
    weights = problem.weights
    sensitive = problem.sensitive

    def classes_of(rows: np.ndarray, inverse: np.ndarray, parts: int) -> Classes:
        sizes = np.bincount(inverse, weights=weights[rows], minlength=parts).astype(np.int64)
        sens = {
            name: np.stack(
                [
                    np.bincount(inverse, weights=counts[rows, j], minlength=parts)
                    for j in range(counts.shape[1])
                ],
                axis=1,
            ).astype(np.int64)
            for name, counts in sensitive.items()
        }
        return Classes(sizes, sens)

    def satisfied(classes: Classes) -> bool:
        ok = np.ones(len(classes), dtype=bool)
        for model in per_class:
            ok &= model.class_ok(classes, problem.infos.get(getattr(model, "attribute", "")))
        return bool(ok.all())

    # table-wide models other than the average risk (kept by counting classes) are checked
    # on the sizes of every part the split would leave: ``current`` counts parts by size
    table_wide = [m for m in problem.models if not m.per_class and not isinstance(m, AverageRisk)]
    current: dict[int, int] = {int(weights.sum()): 1}

    def table_after(replaced: int, parts: np.ndarray) -> bool:
        if not table_wide:
            return True
        after = dict(current)
        after[replaced] -= 1
        for size in parts.tolist():
            after[size] = after.get(size, 0) + 1
        sizes = np.repeat(np.fromiter(after, dtype=np.int64), list(after.values()))
        every = Classes(sizes)
        return all(m.table_ok(every, np.ones(len(sizes), dtype=bool)) for m in table_wide)

    root_rows = np.arange(len(weights))
    root = classes_of(root_rows, np.zeros(len(weights), dtype=np.int64), 1)
    whole = np.ones(1, dtype=bool)
    if not satisfied(root) or not all(
        m.table_ok(root, whole) for m in problem.models if not m.per_class
    ):
        raise NoSolutionError(
            "no partition satisfies "
            + ", ".join(m.describe() for m in problem.models)
            + f" even with every column at its highest level; the best achievable k is "
            f"{best_achievable_k(problem)}",
            best_k=best_achievable_k(problem),
        )
    heights = np.array([max(h.height, 1) for h in problem.hierarchies], dtype=np.float64)
    stack: list[tuple[np.ndarray, np.ndarray]] = [(root_rows, np.asarray(problem.lattice.hi))]
    done_rows: list[np.ndarray] = []
    done_levels: list[np.ndarray] = []
    count = 1
    splits = 0
    while stack:
        rows, levels = stack.pop()
        levels = levels.copy()
        best = None
        for c in np.argsort(-(levels / heights), kind="stable"):
            while levels[c] > lo[c]:
                child = problem.maps[c][levels[c] - 1][codes[rows, c]]
                labels, inverse = np.unique(child, return_inverse=True)
                if len(labels) > 1:
                    break
                levels[c] -= 1  # a specialization that keeps the partition whole is free
            else:
                continue
            parts = len(labels)
            if count - 1 + parts > max_classes:
                continue
            classes = classes_of(rows, inverse, parts)
            if (
                (best is None or parts > best[0])
                and satisfied(classes)
                and table_after(int(weights[rows].sum()), classes.sizes)
            ):
                best = (parts, int(c), inverse, classes.sizes)
        if best is None:
            done_rows.append(rows)
            done_levels.append(levels)
            continue
        parts, c, inverse, part_sizes = best
        splits += 1
        count += parts - 1
        current[int(weights[rows].sum())] -= 1
        for size in part_sizes.tolist():
            current[size] = current.get(size, 0) + 1
        child_levels = levels.copy()
        child_levels[c] -= 1
        order = np.argsort(inverse, kind="stable")
        bounds = np.searchsorted(inverse[order], np.arange(parts + 1))
        for part in range(parts):
            stack.append((rows[order[bounds[part] : bounds[part + 1]]], child_levels))
    row_class = np.empty(len(weights), dtype=np.int64)
    for number, rows in enumerate(done_rows):
        row_class[rows] = number
    class_levels = (
        np.stack(done_levels) if done_levels else np.zeros((0, d), dtype=np.int64)
    ).astype(np.int64)
    classes = classes_of(root_rows, row_class, len(done_rows))
    return LocalRecoding(row_class, class_levels, classes, splits)
