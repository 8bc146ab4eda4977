"""The Anonymizer: a config in, an anonymized table and its account out.

``Anonymizer(config).fit(frame_or_table)`` reads the quasi-identifiers through their
hierarchies, checks the problem can be solved, searches for the optimal transformation (or
partitions locally), applies it, suppresses what still violates the models, transforms the
identifier columns, and returns an immutable :class:`AnonymizationResult`.
``Anonymizer(config).plan(counts, weights, columns)`` does the same from a table's distinct
rows and their record counts (what an engine's ``GROUP BY`` gives for a table larger than
memory; see :mod:`safeshare.anonymize.counted`).

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

import dataclasses
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from safeshare._progress import Progress, no_progress
from safeshare.anonymize.config import AnonymizeConfig
from safeshare.anonymize.counted import AnonymizationPlan, plan_release
from safeshare.anonymize.figures import Prepared, account, settle_suppression
from safeshare.anonymize.heuristic import heuristic_search
from safeshare.anonymize.hierarchy import Hierarchy
from safeshare.anonymize.inputs import (
    MISSING_SENSITIVE,
    check_sample_of,
    check_solvable,
    hierarchy_for,
    hierarchy_values,
    level_bounds,
    read_population,
    sensitive_columns,
)
from safeshare.anonymize.models import KMap
from safeshare.anonymize.mondrian import mondrian
from safeshare.anonymize.output import release_records
from safeshare.anonymize.problem import Problem
from safeshare.anonymize.recoding import Partition, full_domain, recode_suppressed
from safeshare.anonymize.result import AnonymizationResult, ClassStatistics, ModelOutcome
from safeshare.anonymize.search import optimal_search
from safeshare.data.readers import shown_columns
from safeshare.data.table import Table
from safeshare.engine import default_engine
from safeshare.errors import InputError

__all__ = [
    "MISSING_SENSITIVE",
    "AnonymizationPlan",
    "AnonymizationResult",
    "Anonymizer",
    "ClassStatistics",
    "ModelOutcome",
]


class Anonymizer:
    """Anonymize a table under a config (see :mod:`safeshare.anonymize.config`).

    ``hierarchies`` gives :class:`Hierarchy` objects directly, for quasi-identifiers and
    sensitive attributes (they win over the config's);
    ``population`` is the population table (k-map, delta-presence) when the config does not name
    a file.
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
        frame = _as_frame(data)
        self.check_columns(list(frame.columns), len(frame))
        prepared = self.prepare(frame, None, report)
        partition, transformation, search = self.search(prepared.problem)
        report("applying", 0.7)
        result = self._result(frame, prepared, partition, transformation, search)
        report("done", 1.0)
        return result

    def plan(
        self,
        counts: pd.DataFrame,
        weights: np.ndarray,
        columns: Sequence[str],
        progress: Progress | None = None,
    ) -> AnonymizationPlan:
        """The same anonymization from a table's distinct rows and their record counts.

        ``counts`` holds the distinct rows of :meth:`counted_columns` (as an engine's
        ``GROUP BY`` returns them, in the order each first appears in the table), ``weights``
        the number of records of each, ``columns`` every column of the table.  The plan's
        result has every figure :meth:`fit` gives for those records; its
        :meth:`~safeshare.anonymize.counted.AnonymizationPlan.apply` releases them a chunk
        at a time.
        """
        report = progress or no_progress
        weights = np.asarray(weights)
        aggregated = [n for n, spec in self.config.transforms.items() if spec.microaggregate]
        if aggregated:
            raise InputError(
                f"microaggregate on {aggregated[0]!r} needs every record of a class at once, "
                "which the counted (engine) path does not hold; use --engine numpy"
            )
        self.check_columns(list(columns), int(weights.sum()))
        prepared = self.prepare(counts, weights, report)
        partition, transformation, search = self.search(prepared.problem)
        report("applying", 0.7)
        plan = plan_release(self.config, prepared, partition, transformation, search, columns)
        report("done", 1.0)
        return plan

    def counted_columns(self) -> list[str]:
        """The columns :meth:`plan` needs the distinct rows of: the quasi-identifiers and the
        sensitive attributes a privacy model reads."""
        read = {getattr(m, "attribute", None) for m in self.config.privacy.models()}
        read.add(self.config.target)
        sensitive = [name for name in self.config.sensitive if name in read]
        return list(dict.fromkeys([*self.config.quasi_identifiers, *sensitive]))

    def prepare(
        self, frame: pd.DataFrame, weights: np.ndarray | None, report: Progress = no_progress
    ) -> Prepared:
        """Hierarchies, models and the problem of the search, from records (or distinct rows
        of the counted columns with ``weights`` records each)."""
        config = self.config
        qis = list(config.quasi_identifiers)
        report("reading hierarchies", 0.05)
        people = read_population(config, self.population)
        hierarchies = [
            hierarchy_for(config, name, hierarchy_values(frame[name], people), self.hierarchies)
            for name in qis
        ]
        codes = [
            h.encode(frame[name], weights=weights) for h, name in zip(hierarchies, qis, strict=True)
        ]
        lo, hi = level_bounds(config, hierarchies)
        models = config.privacy.models()
        read = {getattr(m, "attribute", None) for m in models} | {config.target}
        # (from counts, only the sensitive columns a model reads were counted)
        only = None if weights is None else [c for c in config.sensitive if c in read]
        infos, sens_codes = sensitive_columns(
            config, frame, weights, only=only, given=self.hierarchies
        )
        k_map = config.privacy.k_map
        if k_map is not None:
            models.append(KMap(k_map.k))
        population = None if people is None else [h.encode(people[h.column]) for h in hierarchies]
        if population is not None and config.privacy.delta_presence is not None:
            check_sample_of(codes, weights, population)

        report("searching", 0.2)
        problem = Problem.build(
            hierarchies,
            codes,
            models=models,
            # only the sensitive columns a model reads are carried through the search
            sensitive={name: codes_ for name, codes_ in sens_codes.items() if name in read},
            infos=infos,
            suppression_limit=config.suppression_limit,
            lo=lo,
            hi=hi,
            population=population,
            weights=weights,
            importance=[spec.weight for spec in config.quasi_identifiers.values()],
            target=config.target,
        )
        check_solvable(models, problem.n, infos, population, problem.max_suppressed)
        return Prepared(hierarchies, models, infos, problem)

    # ---- steps ------------------------------------------------------------------------

    def check_columns(self, columns: Sequence[str], n: int) -> None:
        """Refuse a table (``n`` records of ``columns``) without records, or without a column
        the config names."""
        config = self.config
        if n == 0:
            raise InputError("the table has no records; give at least one")
        needed = [*config.quasi_identifiers, *config.sensitive, *config.transforms]
        for spec in config.transforms.values():
            if spec.date_shift is not None:
                needed.append(spec.date_shift.subject)
        absent = [c for c in dict.fromkeys(needed) if c not in columns]
        if absent:
            raise InputError(
                f"the config names columns {absent} that the data do not have; "
                f"the data have {shown_columns(columns)}"
            )

    def search(self, problem: Problem) -> tuple[Partition, dict[str, int | None], dict[str, Any]]:
        """The released classes, the transformation (levels per column), the search's account."""
        started = time.perf_counter()
        partition, transformation, search = self._search(problem)
        search["seconds"] = time.perf_counter() - started
        return partition, transformation, search

    def _search(self, problem: Problem) -> tuple[Partition, dict[str, int | None], dict[str, Any]]:
        config = self.config
        qis = list(config.quasi_identifiers)
        if config.search != "local":
            if config.search == "optimal":
                found = optimal_search(problem, config.quality)
                method = "optimal full-domain generalization (lattice search, exact)"
            else:
                genetic = config.search == "genetic"
                found = heuristic_search(
                    problem, config.quality, seconds=config.time_limit, genetic=genetic
                )
                method = (
                    "full-domain generalization (heuristic lattice search within "
                    f"{config.time_limit:g} s: {'a genetic' if genetic else 'local'} search and "
                    "a best-first proof)"
                )
            partition = full_domain(problem, found.node)
            if config.recode_suppressed and not partition.kept.all():
                partition = recode_suppressed(problem, found.node, partition)
            search: dict[str, Any] = {
                "method": method,
                "quality_model": config.quality,
                "score": found.score,
                "transformations_checked": found.checked,
                "lattice_size": found.lattice_size,
                "ties": [dict(zip(qis, node, strict=True)) for node in found.ties],
            }
            if config.search != "optimal":
                search["proven_optimal"] = found.bound is None
                search["lower_bound"] = found.score - found.gap
                search["gap"] = found.gap
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
        prepared: Prepared,
        partition: Partition,
        transformation: dict[str, int | None],
        search: dict[str, Any],
    ) -> AnonymizationResult:
        """Apply the partition: the released frame and table, their quality and models."""
        config, notes = settle_suppression(self.config, prepared, partition)
        problem, hierarchies = prepared.problem, prepared.hierarchies
        qis = list(config.quasi_identifiers)
        record_class = partition.row_class[problem.record_rows]
        record_kept = partition.kept[record_class]
        out, table = release_records(
            config, frame, problem, hierarchies, qis, record_class, partition.class_levels,
            record_kept,
        )  # fmt: skip
        engine_sizes = _engine_class_sizes(table, qis)
        figures = account(
            config, prepared, partition, transformation, search, list(frame.columns), engine_sizes
        )
        return dataclasses.replace(figures, frame=out, table=table, rows_out=len(out), notes=notes)


# ---- helpers ------------------------------------------------------------------------------


def _as_frame(data: pd.DataFrame | Table) -> pd.DataFrame:
    if isinstance(data, pd.DataFrame):
        # (a shallow copy: nothing here writes into a column, and renaming the copy's columns
        # leaves the caller's frame as it was)
        frame = data.copy(deep=False)
        if not all(isinstance(c, str) for c in frame.columns):
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


def _engine_class_sizes(table: Table, qis: list[str]) -> np.ndarray:
    """The class sizes of the released records, counted by the engine (a cross-check)."""
    return default_engine().group_sizes(table, qis)
