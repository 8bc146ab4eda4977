"""Anonymization of a table larger than memory: the search on counts, the release in chunks.

An engine (DuckDB, Spark) reads the table where it lies and answers one ``GROUP BY``: the
distinct rows of the quasi-identifiers (and of the sensitive attributes a model reads) with
the number of records of each - the counts of the lattice's finest node.  Only those rows
reach Python.  :meth:`~safeshare.anonymize.anonymizer.Anonymizer.plan` runs the in-memory
search on them unchanged (every coarser node is rolled up from them, and every figure is a
sum of their counts: :mod:`safeshare.anonymize.figures`), and returns an
:class:`AnonymizationPlan`: the result, and :meth:`AnonymizationPlan.apply`, which releases
the records one chunk at a time, exactly as :meth:`~safeshare.anonymize.anonymizer.Anonymizer.fit`
releases them all at once.

>>> import pandas as pd
>>> from safeshare.anonymize.anonymizer import Anonymizer
>>> config = {"quasi_identifiers": {"zip": {"hierarchy": "mask"}}, "privacy": {"k": 2}}
>>> counts = pd.DataFrame({"zip": ["13053", "13068", "14850", "14853"]})
>>> plan = Anonymizer(config).plan(counts, [2, 2, 1, 1], columns=["zip", "note"])
>>> plan.result.transformation, plan.result.class_sizes.tolist()
({'zip': 1}, [2, 2, 2])
>>> chunk = pd.DataFrame({"zip": ["14853", "13068"], "note": ["a", "b"]})
>>> plan.apply(chunk)["zip"].tolist()
['1485*', '1306*']
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from safeshare.anonymize.config import AnonymizeConfig
from safeshare.anonymize.figures import (
    Prepared,
    account,
    released_class_sizes,
    settle_suppression,
)
from safeshare.anonymize.grouping import KEY_LIMIT
from safeshare.anonymize.output import release_records
from safeshare.anonymize.recoding import Partition
from safeshare.anonymize.result import AnonymizationResult
from safeshare.errors import InputError


@dataclass(frozen=True)
class AnonymizationPlan:
    """A solution found from counts: its result (every figure; ``frame`` is empty) and the
    means to release the records it was found for, one chunk at a time."""

    result: AnonymizationResult
    config: AnonymizeConfig
    prepared: Prepared
    partition: Partition
    _finder: _RowFinder = field(repr=False, compare=False)

    def apply(self, chunk: pd.DataFrame) -> pd.DataFrame:
        """The released records of ``chunk`` (records of the table the plan was made for, as
        read; chunks in table order give the in-memory release, record for record)."""
        qis = list(self.config.quasi_identifiers)
        hierarchies = self.prepared.hierarchies
        codes = [h.encode(chunk[name]) for h, name in zip(hierarchies, qis, strict=True)]
        rows = self._finder.find(codes)
        partition = self.partition
        record_class = partition.row_class[rows]
        record_kept = partition.kept[record_class]
        out, _ = release_records(
            self.config,
            chunk,
            self.prepared.problem,
            hierarchies,
            qis,
            record_class,
            partition.class_levels,
            record_kept,
            record_rows=rows,
        )
        return out


def plan_release(
    config: AnonymizeConfig,
    prepared: Prepared,
    partition: Partition,
    transformation: dict[str, int | None],
    search: dict[str, Any],
    columns: Sequence[str],
) -> AnonymizationPlan:
    """The plan of releasing ``partition`` (found by the search over ``prepared``)."""
    config, notes = settle_suppression(config, prepared, partition)
    sizes = released_class_sizes(prepared, partition)
    result = account(config, prepared, partition, transformation, search, columns, sizes)
    result = dataclasses.replace(result, notes=notes)
    return AnonymizationPlan(result, config, prepared, partition, _RowFinder(prepared))


class _RowFinder:
    """Each record's distinct row of the problem, from its quasi-identifiers' level-0 codes."""

    def __init__(self, prepared: Prepared) -> None:
        problem = prepared.problem
        self.sizes = [len(h.values) for h in prepared.hierarchies]
        self.packed = math.prod(self.sizes) < KEY_LIMIT
        if self.packed:
            keys = self._keys(problem.codes)
            self.order = np.argsort(keys, kind="stable")
            self.sorted = keys[self.order]
        else:
            self.index = pd.MultiIndex.from_arrays(problem.codes)

    def _keys(self, codes: Sequence[np.ndarray]) -> np.ndarray:
        key = np.zeros(len(codes[0]) if codes else 0, dtype=np.int64)
        for array, size in zip(codes, self.sizes, strict=True):
            key *= size
            key += array
        return key

    def find(self, codes: Sequence[np.ndarray]) -> np.ndarray:
        if self.packed:
            keys = self._keys(codes)
            at = np.minimum(np.searchsorted(self.sorted, keys), max(len(self.sorted) - 1, 0))
            found = self.sorted[at] == keys if len(self.sorted) else np.zeros(len(keys), bool)
            rows = np.where(found, self.order[at], -1)
        else:
            rows = self.index.get_indexer(pd.MultiIndex.from_arrays(list(codes)))
        if (rows < 0).any():
            raise InputError(
                f"{int((rows < 0).sum())} record(s) have quasi-identifiers the counts did not "
                "hold: the table changed after it was counted; keep it unchanged while it is "
                "anonymized and run again"
            )
        return np.asarray(rows, dtype=np.int64)
