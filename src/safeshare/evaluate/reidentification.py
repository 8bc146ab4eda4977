"""Re-identification risk of a table from its equivalence classes on the quasi-identifiers.

Records sharing every quasi-identifier value form a class; an attacker who knows a person's
quasi-identifiers can narrow them down to their class and no further.

* **sample uniqueness**: the share of records alone in their class;
* **prosecutor** risk (the attacker knows the person is in the table): ``1 / f`` for a record
  in a class of ``f`` records; reported as the maximum, the average (classes / records) and the
  share of records above a threshold (0.2 by default: classes smaller than 5);
* **journalist** risk (the attacker picks a person from the population, not knowing whether
  they are in the table): ``1 / F`` with ``F`` the class's size in the population;
* **marketer** risk (the attacker tries everyone): the expected share of records re-identified,
  ``sum(f / F) / n``.

``F`` comes from a population table when one is given; else, with a population size ``N``
larger than the table, from the population model of :mod:`safeshare.evaluate.uniqueness`
(Dankar's choice of Pitman, Zayatz or SNB estimates ``U`` population uniques, of whom
``pi * U`` are expected among the table's ``u`` sample uniques, ``pi = n / N``): a sample
unique is unique in the population with chance ``q = min(1, pi * U / u)`` (risk 1), and
otherwise its class is taken to hold ``1 / pi`` people, at least 2 (risk ``min(1/2, pi)``);
a class of ``f >= 2`` is taken to hold ``f / pi``.  So journalist and marketer risk agree
with the population uniqueness the same result reports (before, ``F ~ f / pi`` for every
class said a sample unique was one in ``1 / pi`` even where the model expected it alone).
The journalist's maximum is 1 when the model expects at least one of the table's records to
be alone in the population (``pi * U >= 1``): that record's risk is 1, though which one it is
cannot be told.  Without either, the table is the whole population (``F = f``).

>>> import numpy as np
>>> from safeshare.data import Column, Domain, Kind, Table
>>> domain = Domain((Column("zip", Kind.CATEGORICAL, categories=("a", "b", "c")),))
>>> table = Table({"zip": np.array([0, 0, 0, 0, 0, 1, 1, 2])}, domain)
>>> r = reidentification_risk(table, ["zip"])
>>> r.sample_uniqueness, r.prosecutor_max, r.prosecutor_average, r.records_at_risk
(0.125, 1.0, 0.375, 0.375)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from safeshare.data.table import Table
from safeshare.engine import CountingEngine, default_engine
from safeshare.evaluate.uniqueness import PopulationUniqueness, population_uniqueness

MAX_POPULATION = 10**12  # the largest population a model estimates for (the world is 8e9)
THREAT = (
    "An attacker who knows a person's quasi-identifiers (age, postcode, ...) looks them up in "
    "the table: a class of one record identifies them."
)


@dataclass(frozen=True)
class ReidentificationResult:
    """Class-based re-identification risks of one table on ``columns``."""

    columns: tuple[str, ...]
    records: int
    classes: int
    sample_uniques: int
    prosecutor_max: float
    prosecutor_average: float
    records_at_risk: float
    threshold: float
    journalist_max: float
    marketer: float
    population_source: str
    population: PopulationUniqueness | None
    class_histogram: dict[str, int]

    @property
    def sample_uniqueness(self) -> float:
        return self.sample_uniques / self.records if self.records else 0.0

    @property
    def reading(self) -> str:
        smallest = round(1 / self.prosecutor_max) if self.prosecutor_max > 0 else 0
        return (
            f"{self.sample_uniqueness:.1%} of records are unique on {len(self.columns)} "
            f"quasi-identifier(s); the smallest class holds {smallest} record(s) "
            f"(highest prosecutor risk {self.prosecutor_max:.0%}); {self.records_at_risk:.1%} of "
            f"records have a risk above {self.threshold:.0%}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "quasi_identifiers": list(self.columns),
            "records": self.records,
            "classes": self.classes,
            "sample_uniques": self.sample_uniques,
            "sample_uniqueness": self.sample_uniqueness,
            "prosecutor": {
                "max": self.prosecutor_max,
                "average": self.prosecutor_average,
                "records_above_threshold": self.records_at_risk,
                "threshold": self.threshold,
            },
            "journalist_max": self.journalist_max,
            "marketer": self.marketer,
            "population_source": self.population_source,
            "population_uniqueness": None if self.population is None else self.population.to_dict(),
            "class_size_histogram": dict(self.class_histogram),
            "reading": self.reading,
            "threat": THREAT,
        }


def reidentification_risk(
    table: Table,
    columns: Sequence[str],
    *,
    population_size: int | None = None,
    population: Table | None = None,
    threshold: float = 0.2,
    engine: CountingEngine | None = None,
) -> ReidentificationResult:
    """Risks of ``table`` on the quasi-identifiers ``columns`` (see the module docstring)."""
    if not columns:
        raise ValueError("re-identification risk needs at least one quasi-identifier column")
    if len(table) == 0:
        raise ValueError("the table has no records")
    if not 0 < threshold <= 1:
        raise ValueError(f"the risk threshold must lie in (0, 1], got {threshold}")
    engine = engine or default_engine()
    sizes = engine.group_sizes(table, list(columns))
    n = int(sizes.sum())
    at_risk = float(sizes[1.0 / sizes > threshold].sum()) / n
    estimate, journalist = None, None
    if population is not None:
        sizes, pop_sizes = _paired_sizes(table, population, list(columns))
        source = "population table"
        population_size = max(population_size or 0, len(population))
        risk = 1.0 / np.maximum(pop_sizes, sizes)
        estimate = population_uniqueness(sizes, population_size) if population_size > n else None
    elif population_size is not None and population_size > n:
        estimate = population_uniqueness(sizes, population_size)
        risk = expected_inverse_sizes(sizes, estimate)
        source = f"the population model ({estimate.dankar_model}) for {population_size:,} people"
        if estimate.sampling_fraction * estimate.dankar >= 1:  # someone here is alone out there
            journalist = 1.0
    else:
        risk, source, population_size = 1.0 / sizes, "the table itself", n
    return ReidentificationResult(
        columns=tuple(columns),
        records=n,
        classes=len(sizes),
        sample_uniques=int((sizes == 1).sum()),
        prosecutor_max=float(1.0 / sizes.min()),
        prosecutor_average=len(sizes) / n,
        records_at_risk=at_risk,
        threshold=threshold,
        journalist_max=float(risk.max()) if journalist is None else journalist,
        marketer=float(np.sum(sizes * risk)) / n,
        population_source=source,
        population=estimate,
        class_histogram=_histogram(sizes),
    )


def expected_inverse_sizes(sizes: np.ndarray, estimate: PopulationUniqueness) -> np.ndarray:
    """Per sample class of ``sizes``, the expected ``1 / F`` (``F``: its population size)
    under the population model of ``estimate`` (see the module docstring).

    >>> from safeshare.evaluate.uniqueness import PopulationUniqueness
    >>> estimate = PopulationUniqueness(100, 10, 4, None, 20.0, None, 20.0, "pitman")
    >>> expected_inverse_sizes(np.array([1, 1, 1, 1, 2, 4]), estimate).round(3).tolist()
    [0.55, 0.55, 0.55, 0.55, 0.05, 0.025]
    """
    sizes = np.asarray(sizes, dtype=np.float64)
    pi = estimate.sampling_fraction
    uniques = max(estimate.sample_uniques, 1)
    unique_in_population = min(1.0, pi * estimate.dankar / uniques)
    shared = min(0.5, pi)
    alone = unique_in_population + (1.0 - unique_in_population) * shared
    return np.where(sizes == 1, alone, np.minimum(1.0 / sizes, pi / sizes))


def record_risks(
    table: Table,
    columns: Sequence[str],
    result: ReidentificationResult,
    population: Table | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Per record of ``table``: its class size and its journalist risk, on the terms of
    ``result`` (its population table, its population model, or the table itself)."""
    mine, in_sample, in_population = _record_classes(table, list(columns), population)
    sizes = in_sample[mine]
    if population is not None:
        return sizes, 1.0 / np.maximum(in_population[mine], sizes)
    if result.population is not None:
        return sizes, expected_inverse_sizes(in_sample, result.population)[mine]
    return sizes, 1.0 / sizes


def _record_classes(
    sample: Table, columns: list[str], population: Table | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each sample record's class (matched by value across both tables), and each class's
    size in the sample and in the population."""
    rows = sample.matrix(columns)
    if population is not None:
        rows = np.concatenate([rows, population.matrix(columns)])
    _, inverse = np.unique(rows, axis=0, return_inverse=True)
    inverse = inverse.ravel()
    groups = int(inverse.max()) + 1 if len(inverse) else 0
    mine = inverse[: len(sample)]
    in_sample = np.bincount(mine, minlength=groups)
    in_population = np.bincount(inverse[len(sample) :], minlength=groups)
    return mine, in_sample, in_population


def _paired_sizes(
    sample: Table, population: Table, columns: list[str]
) -> tuple[np.ndarray, np.ndarray]:
    """Each sample class's size in the sample and in the population (matched by value)."""
    _, in_sample, in_population = _record_classes(sample, columns, population)
    present = in_sample > 0
    return in_sample[present], in_population[present].astype(float)


def _histogram(sizes: np.ndarray) -> dict[str, int]:
    bands = [(1, 1, "1"), (2, 2, "2"), (3, 4, "3-4"), (5, 9, "5-9"), (10, 19, "10-19")]
    out = {label: int(((sizes >= lo) & (sizes <= hi)).sum()) for lo, hi, label in bands}
    out["20+"] = int((sizes >= 20).sum())
    return out
