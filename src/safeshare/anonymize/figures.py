"""What a solution releases, in figures, from the distinct rows and their record counts alone.

The search works on the table's distinct quasi-identifier rows, each with the number of
records it stands for (:class:`~safeshare.anonymize.problem.Problem`).  Every figure of an
anonymization - records suppressed, the released classes and their sizes, quality, the models
reached - is a sum of those counts, so it is the same whether the rows came from records in
memory or from an engine's ``GROUP BY`` over a table larger than memory (:func:`account`).

>>> import numpy as np
>>> from safeshare.anonymize.config import AnonymizeConfig
>>> from safeshare.anonymize.hierarchy import Hierarchy
>>> from safeshare.anonymize.models import KAnonymity
>>> from safeshare.anonymize.recoding import full_domain
>>> h = Hierarchy.from_rows("a", [["1", "1-2", "*"], ["2", "1-2", "*"], ["3", "3-4", "*"]])
>>> config = AnonymizeConfig.from_dict({"quasi_identifiers": ["a"], "privacy": {"k": 2},
...                                     "suppression_limit": 0.5})
>>> problem = Problem.build([h], [np.array([0, 1, 2])], models=[KAnonymity(2)],
...                         suppression_limit=0.5, weights=np.array([2, 1, 1]))
>>> partition = full_domain(problem, (0,))  # '1' (2 records) is kept, '2' and '3' are not
>>> prepared = Prepared([h], [KAnonymity(2)], {}, problem)
>>> sizes = released_class_sizes(prepared, partition)
>>> result = account(config, prepared, partition, {"a": 0}, {}, ["a"], sizes)
>>> result.suppressed, result.rows_out, result.class_sizes.tolist()
(2, 2, [2])
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from safeshare.anonymize.config import AnonymizeConfig
from safeshare.anonymize.hierarchy import Hierarchy
from safeshare.anonymize.models import Classes, PrivacyModel, SensitiveInfo
from safeshare.anonymize.output import column_account
from safeshare.anonymize.problem import Problem
from safeshare.anonymize.recoding import Partition, class_rows, labels_at
from safeshare.anonymize.result import AnonymizationResult, ClassStatistics, ModelOutcome


@dataclass(frozen=True)
class Prepared:
    """What the search needs, read through the config: hierarchies, models and the problem."""

    hierarchies: list[Hierarchy]
    models: list[PrivacyModel]
    infos: dict[str, SensitiveInfo]
    problem: Problem


def released_class_sizes(prepared: Prepared, partition: Partition) -> np.ndarray:
    """The sizes of the released classes as the released table groups them, from the counts.

    Records are grouped by their released labels (text), so a part that local recoding
    releases with the labels of a released class counts with it, as a ``GROUP BY`` over the
    released records would count it.
    """
    problem = prepared.problem
    row_class, kept = partition.row_class, partition.kept
    rows = np.flatnonzero(kept[row_class])
    if not len(rows):
        return np.zeros(0, dtype=np.int64)
    levels = partition.class_levels[row_class[rows]]
    labels = np.empty((len(rows), len(prepared.hierarchies)), dtype=np.int64)
    for c, h in enumerate(prepared.hierarchies):
        position: dict[str, int] = {}  # one id per label text, across the levels used
        for level in np.unique(levels[:, c]).tolist():
            at = levels[:, c] == level
            ids = np.array([position.setdefault(t, len(position)) for t in h.labels[level]])
            labels[at, c] = ids[h.maps[level][problem.codes[c][rows[at]]]]
    _, inverse = np.unique(labels, axis=0, return_inverse=True)
    sizes = np.bincount(inverse.ravel(), weights=problem.weights[rows])
    return np.rint(sizes).astype(np.int64)


def account(
    config: AnonymizeConfig,
    prepared: Prepared,
    partition: Partition,
    transformation: dict[str, int | None],
    search: dict[str, Any],
    columns: Sequence[str],
    class_sizes: np.ndarray,
) -> AnonymizationResult:
    """Every figure of the release of ``partition`` (records not included: ``frame`` is empty).

    ``class_sizes`` are the released classes as counted over the released records (by an
    engine, or :func:`released_class_sizes`); for a full-domain solution they must equal the
    search's, else nothing is released.
    """
    problem, infos = prepared.problem, prepared.infos
    qis = list(config.quasi_identifiers)
    row_class, class_levels = partition.row_class, partition.class_levels
    classes, kept = partition.classes, partition.kept
    suppressed = int(problem.weights[~kept[row_class]].sum())
    sizes = classes.sizes[kept]
    levels, sample = class_levels[kept], class_rows(row_class, len(classes))[kept]
    quality = problem.quality.scores(
        [levels[:, c] for c in range(len(qis))],
        [labels_at(problem, c, levels[:, c], problem.codes[c][sample]) for c in range(len(qis))],
        sizes,
        suppressed,
    )
    outcomes = tuple(
        ModelOutcome(
            m.name,
            m.describe(),
            _holds(m, classes, kept, infos),
            m.achieved(classes, kept, infos.get(getattr(m, "attribute", ""))),
        )
        for m in prepared.models
    )
    if config.search == "optimal":
        _cross_check(class_sizes, sizes, merged=partition.recoded > 0)
    transforms = {name: spec.kind for name, spec in config.transforms.items()}
    removed = suppressed if config.suppressed_records == "remove" else 0
    return AnonymizationResult(
        frame=pd.DataFrame(),
        transformation=transformation,
        hierarchies={
            name: {"height": h.height, "source": h.source, "values": len(h.values)}
            for name, h in zip(qis, prepared.hierarchies, strict=True)
        },
        transforms=transforms,
        classes=ClassStatistics.of(class_sizes),
        class_sizes=np.sort(class_sizes),
        quality=quality,
        models=outcomes,
        suppressed=suppressed,
        rows_in=problem.n,
        rows_out=problem.n - removed,
        search=search,
        columns=column_account(config, columns, qis, list(config.sensitive), transforms),
    )


def _holds(
    model: PrivacyModel, classes: Classes, kept: np.ndarray, infos: dict[str, SensitiveInfo]
) -> bool:
    if model.per_class:
        ok = model.class_ok(classes, infos.get(getattr(model, "attribute", "")))
        return bool(ok[kept].all())
    return model.table_ok(classes, kept)


def _cross_check(engine_sizes: np.ndarray, sizes: np.ndarray, *, merged: bool) -> None:
    """Refuse to release when the engine's count of the classes differs from the search's."""
    # recoded parts may share labels with a released class (they then merge): totals only
    mismatch = (
        int(engine_sizes.sum()) != int(sizes.sum())
        if merged
        else sorted(engine_sizes.tolist()) != sorted(sizes.tolist())
    )
    if mismatch:
        raise RuntimeError(
            "internal error: the released classes counted by the engine differ from the "
            "search's; please report this"
        )
