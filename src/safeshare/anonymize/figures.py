"""What a solution releases, in figures, from the distinct rows and their record counts alone.

The search works on the table's distinct quasi-identifier rows, each with the number of
records it stands for (:class:`~safeshare.anonymize.problem.Problem`).  Every figure of an
anonymization - records suppressed, the released classes and their sizes, quality, the models
reached - is a sum of those counts, so it is the same whether the rows came from records in
memory or from an engine's ``GROUP BY`` over a table larger than memory (:func:`account`).

The models are judged on the table *as written* (:func:`written_classes`): its records grouped
by their released labels, the masked records (``suppressed_records: mask``, every
quasi-identifier ``*``) being one class too.  Masked records that would form a class breaking
a model are removed instead (:func:`settle_suppression`), and the result says so.

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
from safeshare.anonymize.hierarchy import TOP, Hierarchy
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


def written_classes(prepared: Prepared, partition: Partition, *, masked: bool) -> Classes:
    """The equivalence classes of the table as written, from the search's classes.

    Classes are grouped by their released labels (text), as a ``GROUP BY`` over the written
    file would group them: a part that local recoding releases with the labels of a released
    class counts with it, and with ``masked`` the suppressed records, written with every
    quasi-identifier ``*``, are one class (with any released class so labelled).  A class's
    population (k-map) is a lower bound: the largest of its parts' (all of the population for
    the masked records, whom every population record matches).
    """
    problem, classes, kept = prepared.problem, partition.classes, partition.kept
    shown = np.flatnonzero(kept)
    hidden = ~kept
    masking = masked and bool(hidden.any())
    if not masking and partition.one_node:  # (the classes are the written table's already)
        return classes.subset(shown)
    sample = class_rows(partition.row_class, len(classes))[shown]
    levels = partition.class_levels[shown]
    key = np.zeros(len(shown) + masking, dtype=np.int64)
    for c, h in enumerate(prepared.hierarchies):
        position: dict[str, int] = {}  # one id per label text, across the levels used
        labels = np.empty(len(key), dtype=np.int64)
        for level in np.unique(levels[:, c]).tolist():
            at = levels[:, c] == level
            ids = np.array([position.setdefault(t, len(position)) for t in h.labels[level]])
            labels[: len(shown)][at] = ids[h.maps[level][problem.codes[c][sample[at]]]]
        if masking:
            labels[-1] = position.setdefault(TOP, len(position))
        key = pd.factorize(key * (len(position) + 1) + labels)[0].astype(np.int64)
    groups = int(key.max()) + 1 if len(key) else 0

    def summed(per_class: np.ndarray) -> np.ndarray:
        parts = per_class[shown]
        if masking:
            parts = np.concatenate([parts, per_class[hidden].sum(axis=0, keepdims=True)])
        out = np.zeros((groups, *parts.shape[1:]), dtype=np.int64)
        np.add.at(out, key, parts.astype(np.int64))
        return out

    population = None
    if classes.population is not None and problem.population is not None:
        parts = classes.population[shown].astype(np.int64)
        if masking:
            parts = np.append(parts, int(problem.population[1].sum()))
        population = np.zeros(groups, dtype=np.int64)
        np.maximum.at(population, key, parts)
    sensitive = {name: summed(counts) for name, counts in classes.sensitive.items()}
    return Classes(summed(classes.sizes), sensitive, population)


def released_class_sizes(prepared: Prepared, partition: Partition) -> np.ndarray:
    """The sizes of the released (not suppressed) classes as the written table groups them."""
    return written_classes(prepared, partition, masked=False).sizes


def judged_as_written(prepared: Prepared, classes: Classes) -> tuple[ModelOutcome, ...]:
    """Every model of ``prepared`` judged on ``classes``, the classes of the written table."""
    every = np.ones(len(classes), dtype=bool)
    return tuple(
        ModelOutcome(
            m.name,
            m.describe(),
            _holds(m, classes, every, prepared.infos),
            m.achieved(classes, every, prepared.infos.get(getattr(m, "attribute", ""))),
        )
        for m in prepared.models
    )


def settle_suppression(
    config: AnonymizeConfig, prepared: Prepared, partition: Partition
) -> tuple[AnonymizeConfig, tuple[str, ...]]:
    """The config the release is written under, and why it differs from ``config``.

    Masked records are one class of the written table: when the table with that class breaks
    a model (a masked class of fewer than k records, of one sensitive value, ...), the
    suppressed records are removed instead of masked.
    """
    if config.suppressed_records != "mask" or partition.kept[partition.row_class].all():
        return config, ()
    broken = [
        o
        for o in judged_as_written(prepared, written_classes(prepared, partition, masked=True))
        if not o.satisfied
    ]
    if not broken:
        return config, ()
    suppressed = int(prepared.problem.weights[~partition.kept[partition.row_class]].sum())
    models = ", ".join(f"{o.name} ({o.parameters})" for o in broken)
    note = (
        f"suppressed_records: mask would have written the {suppressed:,} suppressed records as "
        f"one class with every quasi-identifier '*', which breaks {models}; they were removed "
        "instead"
    )
    return config.model_copy(update={"suppressed_records": "remove"}), (note,)


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
    problem = prepared.problem
    qis = list(config.quasi_identifiers)
    row_class, class_levels = partition.row_class, partition.class_levels
    classes, kept = partition.classes, partition.kept
    suppressed = int(problem.weights[~kept[row_class]].sum())
    sizes = classes.sizes[kept]
    levels, sample = class_levels[kept], class_rows(row_class, len(classes))[kept]
    target = None if problem.target is None else classes.sensitive[problem.target][kept]
    quality = problem.quality.scores(
        [levels[:, c] for c in range(len(qis))],
        [labels_at(problem, c, levels[:, c], problem.codes[c][sample]) for c in range(len(qis))],
        sizes,
        suppressed,
        target,
    )
    written = written_classes(
        prepared, partition, masked=config.suppressed_records == "mask" and suppressed > 0
    )
    if config.search != "local":
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
        classes=ClassStatistics.of(written.sizes),
        class_sizes=np.sort(written.sizes),
        quality=quality,
        models=judged_as_written(prepared, written),
        suppressed=suppressed,
        rows_in=problem.n,
        rows_out=problem.n - removed,
        search=search,
        columns=column_account(config, columns, qis, list(config.sensitive), transforms),
        suppressed_records=config.suppressed_records,
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
