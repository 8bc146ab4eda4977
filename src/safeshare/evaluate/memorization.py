"""Memorization: distance to closest record, exact copies, and copies of the rarest records.

Released records are compared with the training records and with as many holdout records the
generator never saw.  A generator that generalises sits as close to unseen people as to its
training records (the share of released records closer to train is 0.5) and copies training
records no more often than it "copies" unseen ones by chance.  Synthetic data leaks first
where records are rare: the **outliers** (the rarest of *all* training records under the
product of the columns' marginal frequencies, :func:`rare_count` of them) are checked
separately, against as large a share of the rarest holdout records as their baseline: their
copies, and their **near copies** (a released record within one column's distance, see
:func:`near_copy_distance`), make the verdict red on their own.  Beside them, for the data
owner's reading: the low quantiles of the distance to closest record (1% and 5%, to train and
to unseen records) and the **nearest-neighbour distance ratio** (NNDR: a released record's
distance to its closest training record over that to the second closest; a ratio under
:data:`NNDR_LOW` sits on one person rather than between several), against the same ratio to
unseen records.

>>> import numpy as np
>>> from safeshare.data import Column, Domain, Kind, Table
>>> domain = Domain(tuple(Column(c, Kind.CATEGORICAL, categories=tuple("abcdefgh")) for c in "vwxyz"))
>>> def table(seed, n): return Table({c: np.random.default_rng(seed + i).integers(0, 8, n)
...                                   for i, c in enumerate("vwxyz")}, domain)
>>> train, holdout = table(0, 2000), table(10, 1000)
>>> copied = memorization(train.take(np.arange(1000)), train, holdout, np.random.default_rng(0))
>>> copied.closer_to_train.value > 0.7, copied.outlier_copies.value > copied.outlier_baseline.value
(True, True)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from safeshare.data.table import Table
from safeshare.engine import CountingEngine, default_engine
from safeshare.evaluate.attack_risk import EvaluationInputError
from safeshare.evaluate.neighbors import nearest_distances, nearest_neighbors
from safeshare.evaluate.results import Proportion, dcr_verdict

THREAT = (
    "Someone compares the release with real records: released records that copy, or sit "
    "unusually close to, the people the generator trained on expose those people."
)
OUTLIER_SHARE = 0.01
MAX_RARE = 500
NNDR_LOW = 0.5  # a released record this much closer to one record than to the next sits on it
NNDR_RECORDS = 2_000  # released records whose NNDR is measured, at most
LOW_QUANTILES = (0.01, 0.05)


@dataclass(frozen=True)
class MemorizationResult:
    """DCR share, exact copies, copies and near copies of the rarest records, and low NNDRs, each
    against its holdout baseline; the DCR's low quantiles (``low_dcr``: to train and holdout)."""

    closer_to_train: Proportion
    copies_of_train: Proportion
    copies_of_holdout: Proportion
    outlier_copies: Proportion
    outlier_baseline: Proportion
    near_copies: Proportion
    near_baseline: Proportion
    low_nndr: Proportion
    low_nndr_baseline: Proportion
    low_dcr: dict[str, dict[str, float]]
    distances: dict[str, np.ndarray] = field(default_factory=dict, compare=False, repr=False)

    def verdict(self) -> tuple[str, str]:
        """Risk class and reading: red on its own when the release holds more of the rarest
        training records than of the rarest unseen ones (intervals apart); else the DCR share
        with the copies (see :func:`dcr_verdict`)."""
        rare, chance = self.outlier_copies, self.outlier_baseline
        if _apart(rare, chance):
            return "bad", (
                f"the release copies rare training records: {rare.value:.0%} of the "
                f"{rare.trials} rarest appear in it, against {chance.value:.0%} of the rarest "
                "unseen records"
            )
        near, chance = self.near_copies, self.near_baseline
        if _apart(near, chance):
            return "bad", (
                f"the release holds near copies of rare training records: {near.value:.0%} of "
                f"the {near.trials} rarest have a released record within one column of them, "
                f"against {chance.value:.0%} of the rarest unseen records"
            )
        return dcr_verdict(self.closer_to_train, self.copies_of_train, self.copies_of_holdout)

    @property
    def readings(self) -> list[str]:
        c = self.closer_to_train
        lines = [
            (
                f"{c.value:.1%} of released records sit closer to a training record than to an "
                f"unseen one (95% interval {c.interval[0]:.1%}-{c.interval[1]:.1%}; 50% is ideal)"
            )
            + f": {self.verdict()[1]}",
            f"{self.copies_of_train.value:.1%} of released records copy a training record; "
            f"{self.copies_of_holdout.value:.1%} equal an unseen record by chance",
            f"{self.outlier_copies.value:.1%} of the {self.outlier_copies.trials} rarest training "
            f"records appear in the release, against {self.outlier_baseline.value:.1%} of the "
            "rarest unseen records",
            f"{self.near_copies.value:.1%} of them have a released record within one column, "
            f"against {self.near_baseline.value:.1%} of the rarest unseen records",
            f"{self.low_nndr.value:.1%} of released records sit on one training record (NNDR under "
            f"{NNDR_LOW:g}), against {self.low_nndr_baseline.value:.1%} on one unseen record",
            f"the closest 5% of released records lie within {self.low_dcr['train']['0.05']:.3f} "
            f"of a training record and {self.low_dcr['holdout']['0.05']:.3f} of an unseen one",
        ]
        return lines

    def to_dict(self) -> dict[str, Any]:
        def prop(p: Proportion) -> dict[str, Any]:
            return {"value": p.value, "interval": list(p.interval), "trials": p.trials}

        return {
            "dcr_share_closer_to_train": prop(self.closer_to_train),
            "dcr_ideal": 0.5,
            "exact_copies_of_train": prop(self.copies_of_train),
            "exact_copies_of_holdout_baseline": prop(self.copies_of_holdout),
            "outlier_copies": prop(self.outlier_copies),
            "outlier_copies_holdout_baseline": prop(self.outlier_baseline),
            "outlier_near_copies": prop(self.near_copies),
            "outlier_near_copies_holdout_baseline": prop(self.near_baseline),
            "near_copy_distance": "within one column: a released record at a Gower distance of "
            "at most 1 / (number of columns)",
            "low_nndr": prop(self.low_nndr),
            "low_nndr_holdout_baseline": prop(self.low_nndr_baseline),
            "nndr_threshold": NNDR_LOW,
            "dcr_low_quantiles": self.low_dcr,
            "readings": self.readings,
            "threat": THREAT,
        }


def memorization(
    release: Table,
    train: Table,
    holdout: Table,
    rng: np.random.Generator,
    *,
    max_release: int = 20_000,
    engine: CountingEngine | None = None,
) -> MemorizationResult:
    """All memorization measures of ``release`` (see the module docstring)."""
    if len(release) == 0 or len(train) == 0 or len(holdout) == 0:
        raise EvaluationInputError("memorization needs released, training and holdout records")
    engine = engine or default_engine()
    n = min(len(train), len(holdout))
    reference = train.take(np.sort(rng.choice(len(train), size=n, replace=False)))
    unseen = (
        holdout
        if len(holdout) == n
        else holdout.take(np.sort(rng.choice(len(holdout), n, replace=False)))
    )
    sample = release
    if len(release) > max_release:
        sample = release.take(np.sort(rng.choice(len(release), size=max_release, replace=False)))
    to_train = nearest_distances(sample, reference)
    to_holdout = nearest_distances(sample, unseen)
    copies_train = int(np.sum(to_train == 0))
    copies_holdout = int(np.sum(to_holdout == 0))
    rare = _rare_records(release, train, holdout, engine)
    few = sample
    if len(sample) > NNDR_RECORDS:
        few = sample.take(np.sort(rng.choice(len(sample), size=NNDR_RECORDS, replace=False)))
    return MemorizationResult(
        dcr_share(to_train, to_holdout),
        Proportion.of(copies_train, len(sample)),
        Proportion.of(copies_holdout, len(sample)),
        *rare,
        _low_nndr(few, reference),
        _low_nndr(few, unseen),
        {"train": _quantiles(to_train), "holdout": _quantiles(to_holdout)},
        {"train": to_train, "holdout": to_holdout},
    )


def near_copy_distance(columns: int) -> float:
    """The Gower distance of a near copy: at most one column's worth of difference (one
    category changed, or ordered values apart by at most their whole span in one column).

    >>> near_copy_distance(10)
    0.1
    """
    return 1.0 / columns


def _rare_records(
    release: Table, train: Table, holdout: Table, engine: CountingEngine
) -> tuple[Proportion, Proportion, Proportion, Proportion]:
    """Copies and near copies in the release of the rarest of *all* training records, and of
    as many of the rarest unseen records per record (their baseline)."""
    k = rare_count(len(train))
    k_unseen = min(len(holdout), max(1, round(k * len(holdout) / len(train))))
    rare_train = _rarest(train, train, k, engine)
    rare_holdout = _rarest(holdout, train, k_unseen, engine)
    released = set(_rows(release))  # exact copies: a lookup, not a distance search
    in_release_train = sum(row in released for row in _rows(rare_train))
    in_release_holdout = sum(row in released for row in _rows(rare_holdout))
    near = near_copy_distance(len(train.columns)) + 1e-9  # distances are float32 means
    both = Table(  # one search of the release for both sets of rare records
        {c: np.concatenate([rare_train.column(c), rare_holdout.column(c)]) for c in train.columns},
        train.domain,
    )
    close = nearest_distances(both, release) <= near
    near_train, near_holdout = int(close[:k].sum()), int(close[k:].sum())
    return (
        Proportion.of(in_release_train, k),
        Proportion.of(in_release_holdout, k_unseen),
        Proportion.of(near_train, k),
        Proportion.of(near_holdout, k_unseen),
    )


def _low_nndr(released: Table, reference: Table) -> Proportion:
    """The share of ``released`` records whose nearest-neighbour distance ratio to
    ``reference`` is under :data:`NNDR_LOW` (two records at distance 0 give 1: a record shared
    by several people sits on none of them)."""
    if len(reference) < 2 or len(released) == 0:
        return Proportion.of(0, 0)
    _, distances = nearest_neighbors(released, reference, k=2)
    first, second = distances[:, 0].astype(float), distances[:, 1].astype(float)
    ratio = np.divide(first, second, out=np.ones_like(first), where=second > 0)
    return Proportion.of(int(np.sum(ratio < NNDR_LOW)), len(released))


def _quantiles(distances: np.ndarray) -> dict[str, float]:
    """The low quantiles (:data:`LOW_QUANTILES`) of distances to closest records."""
    return {f"{q:g}": float(np.quantile(distances, q)) for q in LOW_QUANTILES}


def _apart(share: Proportion, chance: Proportion) -> bool:
    """Whether ``share``'s interval lies wholly above ``chance``'s."""
    return share.trials > 0 and share.interval[0] > chance.interval[1]


def rare_count(records: int) -> int:
    """How many of the rarest training records are checked for copies: 1% of them, at least
    20 (all of a table under 20) and at most :data:`MAX_RARE`.

    >>> rare_count(2400), rare_count(12), rare_count(1_000_000)
    (24, 12, 500)
    """
    return int(np.clip(round(OUTLIER_SHARE * records), min(20, records), MAX_RARE))


def dcr_share(to_train: np.ndarray, to_holdout: np.ndarray) -> Proportion:
    """The share of records closer to train than to holdout (a tie counts half)."""
    closer = float(np.sum(to_train < to_holdout) + 0.5 * np.sum(to_train == to_holdout))
    return Proportion.of(closer, len(to_train))


def rarity(table: Table, model: Table, engine: CountingEngine) -> np.ndarray:
    """Minus the log-probability of each record under ``model``'s independent column frequencies."""
    score = np.zeros(len(table))
    for name in table.columns:
        counts = engine.counts(model, [name]).astype(float) + 0.5
        score -= np.log(counts / counts.sum())[table.column(name)]
    return score


def _rows(table: Table) -> list[tuple[int, ...]]:
    """The table's records, each as the tuple of its codes."""
    return list(zip(*(table.column(name).tolist() for name in table.columns), strict=True))


def _rarest(table: Table, model: Table, k: int, engine: CountingEngine) -> Table:
    order = np.argsort(-rarity(table, model, engine), kind="stable")
    return table.take(order[:k])
