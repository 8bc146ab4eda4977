"""From a solution to each record's class and labels: full-domain classes, recoding, labels.

:func:`full_domain` assigns each distinct row its class at a node of the lattice;
:func:`recode_suppressed` partitions the records that node suppresses locally and releases
the parts that satisfy the models (ARX-style); :func:`labels_at` and :func:`record_labels`
give the classes' and the records' labels at their levels.

>>> import numpy as np
>>> from safeshare.anonymize.hierarchy import Hierarchy
>>> from safeshare.anonymize.models import KAnonymity
>>> h = Hierarchy.from_rows("a", [["1", "1-2", "*"], ["2", "1-2", "*"], ["3", "3-4", "*"]])
>>> problem = Problem.build([h], [np.array([0, 1, 2, 2, 0, 2])], models=[KAnonymity(3)])
>>> partition = full_domain(problem, (1,))
>>> partition.row_class.tolist(), partition.classes.sizes.tolist(), partition.kept.tolist()
([0, 0, 1], [3, 3], [True, True])
>>> record_labels(h, np.array([0, 1, 2]), np.array([1, 1, 0]))  # levels 1, 1, 0
(['1', '2', '3', '1-2', '3-4'], array([3, 3, 2]))
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from safeshare.anonymize.evaluator import Evaluator
from safeshare.anonymize.hierarchy import Hierarchy
from safeshare.anonymize.models import Classes, NoSolutionError
from safeshare.anonymize.mondrian import mondrian
from safeshare.anonymize.problem import Problem


@dataclass(frozen=True)
class Partition:
    """Each distinct row's class; each class's levels, counts and whether it is released."""

    row_class: np.ndarray
    class_levels: np.ndarray
    classes: Classes
    kept: np.ndarray
    recoded: int = 0  # suppressed records released by local recoding

    @property
    def one_node(self) -> bool:
        """Whether every class is at the same levels (a full-domain solution): then no two
        classes share their labels."""
        levels = self.class_levels
        return self.recoded == 0 and bool((levels == levels[:1]).all())


def full_domain(problem: Problem, node: tuple[int, ...]) -> Partition:
    """Per distinct row its class at ``node``, the classes' levels, classes and kept flags."""
    row_class, assessment = Evaluator(problem, dense=False).partition(node)
    classes = assessment.groups.classes
    class_levels = np.tile(np.asarray(node, dtype=np.int64), (len(classes), 1))
    return Partition(row_class.astype(np.int64), class_levels, classes, assessment.kept)


def recode_suppressed(problem: Problem, node: tuple[int, ...], partition: Partition) -> Partition:
    """Partition the suppressed rows locally (levels from ``node`` up); release the parts.

    The suppressed records are partitioned among themselves, top-down along the hierarchies
    and never finer than ``node``; every part satisfies every per-class model, so the records
    are released instead of suppressed.  (A released part whose labels equal those of a
    class already released merges with it, which keeps every monotone model; the result's
    models are judged on the table as written, merges included.)  When even
    all of them together break a model, they stay suppressed.
    """
    if any(m.reads_population for m in problem.models):
        return partition
    row_class, classes, kept = partition.row_class, partition.classes, partition.kept
    rows = np.flatnonzero(~kept[row_class])
    sub = Problem(
        problem.hierarchies,
        [c[rows] for c in problem.codes],
        problem.weights[rows],
        [m for m in problem.models if m.per_class],
        {name: counts[rows] for name, counts in problem.sensitive.items()},
        problem.infos,
        0.0,
        node,
        problem.lattice.hi,
    )
    try:
        recoding = mondrian(sub)
    except NoSolutionError:
        return partition
    offset = len(classes)
    row_class = row_class.copy()
    row_class[rows] = offset + recoding.row_class
    merged = Classes(
        np.concatenate([classes.sizes, recoding.classes.sizes]),
        {
            name: np.concatenate([counts, recoding.classes.sensitive[name]])
            for name, counts in classes.sensitive.items()
        },
    )
    levels = np.concatenate([partition.class_levels, recoding.class_levels])
    # the suppressed classes are now empty and stay dropped
    released = np.concatenate([kept, np.ones(len(recoding.classes), dtype=bool)])
    if not all(m.table_ok(merged, released) for m in problem.models if not m.per_class):
        return partition  # e.g. average risk
    return Partition(row_class, levels, merged, released, int(recoding.classes.sizes.sum()))


def class_rows(row_class: np.ndarray, classes: int) -> np.ndarray:
    """One distinct row of each of ``classes`` classes (row 0 for a class without rows)."""
    rows = np.zeros(classes, dtype=np.intp)
    rows[row_class] = np.arange(len(row_class), dtype=np.intp)
    return rows


def labels_at(problem: Problem, c: int, levels: np.ndarray, rep: np.ndarray) -> np.ndarray:
    """The level-``levels`` code of each class of column ``c`` (``rep``: its level-0 code)."""
    if len(levels) and levels.min() == levels.max():
        return problem.maps[c][int(levels[0])][rep]
    labels = np.empty(len(levels), dtype=np.int64)
    for level in np.unique(levels):
        at = levels == level
        labels[at] = problem.maps[c][int(level)][rep[at]]
    return labels


def record_labels(
    h: Hierarchy, level0: np.ndarray, levels: np.ndarray
) -> tuple[list[str], np.ndarray]:
    """Each record's label text codes (one category list across the levels used)."""
    if len(levels) and levels.min() == levels.max():
        level = int(levels[0])
        return list(h.labels[level]), h.maps[level][level0].astype(np.int64)
    position: dict[str, int] = {}
    out = np.empty(len(level0), dtype=np.int64)
    for level in np.unique(levels):
        at = levels == level
        remap = np.array(
            [position.setdefault(label, len(position)) for label in h.labels[int(level)]],
            dtype=np.int64,
        )
        out[at] = remap[h.maps[int(level)][level0[at]]]
    return list(position), out
