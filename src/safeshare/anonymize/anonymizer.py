"""The Anonymizer: a config in, an anonymized table and its account out.

``Anonymizer(config).fit(frame_or_table)`` reads the quasi-identifiers through their
hierarchies, checks the problem can be solved, searches for the optimal transformation (or
partitions locally), applies it, suppresses what still violates the models, transforms the
identifier columns, and returns an immutable :class:`AnonymizationResult`.

>>> import pandas as pd
>>> frame = pd.DataFrame({"zip": ["13053", "13068", "13068", "13053", "14850", "14853"],
...                       "disease": ["flu", "cold", "flu", "cold", "flu", "cold"]})
>>> config = {"quasi_identifiers": {"zip": {"hierarchy": "mask"}},
...           "sensitive": ["disease"], "privacy": {"k": 2}}
>>> result = Anonymizer(config).fit(frame)
>>> result.transformation, result.frame["zip"].tolist()
({'zip': 1}, ['1305*', '1306*', '1306*', '1305*', '1485*', '1485*'])
>>> result.models[0].achieved
{'k': 2}
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from safeshare._progress import Progress, no_progress
from safeshare.anonymize.config import AnonymizeConfig
from safeshare.anonymize.hierarchy import Hierarchy
from safeshare.anonymize.inputs import (
    MISSING_SENSITIVE,
    check_solvable,
    hierarchy_for,
    level_bounds,
    population_codes,
    sensitive_columns,
)
from safeshare.anonymize.models import Classes, KMap, PrivacyModel, SensitiveInfo
from safeshare.anonymize.mondrian import mondrian
from safeshare.anonymize.output import column_account, release_records
from safeshare.anonymize.problem import Problem
from safeshare.anonymize.recoding import (
    Partition,
    class_rows,
    full_domain,
    labels_at,
    recode_suppressed,
)
from safeshare.anonymize.result import AnonymizationResult, ClassStatistics, ModelOutcome
from safeshare.anonymize.search import optimal_search
from safeshare.data.table import Table
from safeshare.engine import default_engine
from safeshare.errors import InputError

__all__ = [
    "MISSING_SENSITIVE",
    "AnonymizationResult",
    "Anonymizer",
    "ClassStatistics",
    "ModelOutcome",
]


class Anonymizer:
    """Anonymize a table under a config (see :mod:`safeshare.anonymize.config`).

    ``hierarchies`` gives :class:`Hierarchy` objects directly (they win over the config's);
    ``population`` is the k-map population table when the config does not name a file.
    """

    def __init__(
        self,
        config: AnonymizeConfig | Mapping[str, Any] | str | Path,
        *,
        hierarchies: Mapping[str, Hierarchy] | None = None,
        population: pd.DataFrame | None = None,
    ) -> None:
        if isinstance(config, str | Path):
            config = AnonymizeConfig.load(config)
        elif not isinstance(config, AnonymizeConfig):
            config = AnonymizeConfig.from_dict(dict(config))
        self.config = config
        self.hierarchies = dict(hierarchies or {})
        self.population = population

    # ---- the job ----------------------------------------------------------------------

    def fit(
        self, data: pd.DataFrame | Table, progress: Progress | None = None
    ) -> AnonymizationResult:
        """Anonymize ``data`` (a fresh copy is released; ``progress`` hears of each step)."""
        report = progress or no_progress
        config = self.config
        frame = _as_frame(data)
        self._check_columns(frame)
        qis = list(config.quasi_identifiers)
        report("reading hierarchies", 0.05)
        hierarchies = [hierarchy_for(config, name, frame[name], self.hierarchies) for name in qis]
        codes = [h.encode(frame[name]) for h, name in zip(hierarchies, qis, strict=True)]
        lo, hi = level_bounds(config, hierarchies)
        infos, sens_codes = sensitive_columns(config, frame)
        models = config.privacy.models()
        population = None
        k_map = config.privacy.k_map
        if k_map is not None:
            models.append(KMap(k_map.k))
            population = population_codes(config, hierarchies, k_map, self.population)
        check_solvable(models, len(frame), infos, population)

        report("searching", 0.2)
        started = time.perf_counter()
        problem = Problem.build(
            hierarchies,
            codes,
            models=models,
            # only the sensitive columns a model reads are carried through the search
            sensitive={
                name: codes_
                for name, codes_ in sens_codes.items()
                if any(getattr(m, "attribute", None) == name for m in models)
            },
            infos=infos,
            suppression_limit=config.suppression_limit,
            lo=lo,
            hi=hi,
            population=population,
        )
        partition, transformation, search = self._search(problem)
        search["seconds"] = time.perf_counter() - started

        report("applying", 0.7)
        result = self._result(
            frame, problem, hierarchies, models, infos, partition, transformation, search
        )
        report("done", 1.0)
        return result

    # ---- steps ------------------------------------------------------------------------

    def _check_columns(self, frame: pd.DataFrame) -> None:
        """Refuse a table without records, or without a column the config names."""
        config = self.config
        if len(frame) == 0:
            raise InputError("the table has no records; give at least one")
        needed = [*config.quasi_identifiers, *config.sensitive, *config.transforms]
        for spec in config.transforms.values():
            if spec.date_shift is not None:
                needed.append(spec.date_shift.subject)
        absent = [c for c in dict.fromkeys(needed) if c not in frame.columns]
        if absent:
            raise InputError(
                f"the config names columns {absent} that the data do not have; "
                f"the data have {list(frame.columns)}"
            )

    def _search(self, problem: Problem) -> tuple[Partition, dict[str, int | None], dict[str, Any]]:
        """The released classes, the transformation (levels per column), the search's account."""
        config = self.config
        qis = list(config.quasi_identifiers)
        if config.search == "optimal":
            found = optimal_search(problem, config.quality)
            partition = full_domain(problem, found.node)
            if config.recode_suppressed and not partition.kept.all():
                partition = recode_suppressed(problem, found.node, partition)
            search: dict[str, Any] = {
                "method": "optimal full-domain generalization (lattice search, exact)",
                "quality_model": config.quality,
                "score": found.score,
                "transformations_checked": found.checked,
                "lattice_size": found.lattice_size,
                "ties": [dict(zip(qis, node, strict=True)) for node in found.ties],
            }
            if config.recode_suppressed:
                search["recoded_records"] = partition.recoded
            return partition, dict(zip(qis, found.node, strict=True)), search
        recoding = mondrian(problem)
        class_levels = recoding.class_levels
        partition = Partition(
            recoding.row_class,
            class_levels,
            recoding.classes,
            np.ones(len(recoding.classes), dtype=bool),
        )
        search = {
            "method": "local recoding (Mondrian top-down partitioning on the hierarchies)",
            "quality_model": config.quality,
            "partitions": len(recoding.classes),
            "splits": recoding.splits,
        }
        transformation = {
            name: (int(class_levels[0, c]) if len(set(class_levels[:, c].tolist())) == 1 else None)
            for c, name in enumerate(qis)
        }
        return partition, transformation, search

    def _result(
        self,
        frame: pd.DataFrame,
        problem: Problem,
        hierarchies: list[Hierarchy],
        models: list[PrivacyModel],
        infos: Mapping[str, SensitiveInfo],
        partition: Partition,
        transformation: dict[str, int | None],
        search: dict[str, Any],
    ) -> AnonymizationResult:
        """Apply the partition: the released frame and table, their quality and models."""
        config = self.config
        qis = list(config.quasi_identifiers)
        row_class, class_levels = partition.row_class, partition.class_levels
        classes, kept = partition.classes, partition.kept
        record_class = row_class[problem.record_rows]
        record_kept = kept[record_class]
        suppressed = int((~record_kept).sum())
        out, table = release_records(
            config, frame, problem, hierarchies, qis, record_class, class_levels, record_kept
        )
        sizes = classes.sizes[kept]
        levels, sample = class_levels[kept], class_rows(row_class, len(classes))[kept]
        quality = problem.quality.scores(
            [levels[:, c] for c in range(len(qis))],
            [
                labels_at(problem, c, levels[:, c], problem.codes[c][sample])
                for c in range(len(qis))
            ],
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
            for m in models
        )
        engine_sizes = _engine_class_sizes(table, qis)
        if config.search == "optimal":
            _cross_check(engine_sizes, sizes, merged=partition.recoded > 0)
        transforms = {name: spec.kind for name, spec in config.transforms.items()}
        columns = column_account(config, frame, qis, list(config.sensitive), transforms)
        return AnonymizationResult(
            frame=out,
            transformation=transformation,
            hierarchies={
                name: {"height": h.height, "source": h.source, "values": len(h.values)}
                for name, h in zip(qis, hierarchies, strict=True)
            },
            transforms=transforms,
            classes=ClassStatistics.of(engine_sizes),
            class_sizes=np.sort(engine_sizes),
            quality=quality,
            models=outcomes,
            suppressed=suppressed,
            rows_in=len(frame),
            rows_out=len(out),
            search=search,
            columns=columns,
            table=table,
        )


# ---- helpers ------------------------------------------------------------------------------


def _as_frame(data: pd.DataFrame | Table) -> pd.DataFrame:
    if isinstance(data, pd.DataFrame):
        frame = data.copy()
        frame.columns = [str(c) for c in frame.columns]
        return frame
    if isinstance(data, Table):
        out = {}
        for column in data.domain:
            labels = np.array(column.labels(), dtype=object)
            values = labels[data.column(column.name).astype(np.int64)]
            if column.missing_code is not None:
                values[data.column(column.name) == column.missing_code] = None
            out[column.name] = values
        return pd.DataFrame(out)
    raise InputError(
        f"anonymize a pandas DataFrame or a safeshare Table, not {type(data).__name__}"
    )


def _holds(
    model: PrivacyModel, classes: Classes, kept: np.ndarray, infos: Mapping[str, SensitiveInfo]
) -> bool:
    if model.per_class:
        ok = model.class_ok(classes, infos.get(getattr(model, "attribute", "")))
        return bool(ok[kept].all())
    return model.table_ok(classes, kept)


def _engine_class_sizes(table: Table, qis: list[str]) -> np.ndarray:
    """The class sizes of the released records, counted by the engine (a cross-check)."""
    return default_engine().group_sizes(table, qis)


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
