"""Small immutable results that the report renders and the privacy card serializes.

Every figure carries what it was measured against (a baseline), an interval when
it is an estimate, and a one-line reading for people.

>>> share = Proportion.of(successes=40, trials=100)
>>> round(share.value, 2), [round(x, 3) for x in share.interval]
(0.4, [0.309, 0.498])
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from statistics import NormalDist
from typing import Any

import numpy as np

_Z95 = 1.959963984540054


def z_of(confidence: float) -> float:
    """The normal quantile of a two-sided ``confidence`` level (1.96 for 0.95).

    >>> round(z_of(0.95), 3), round(z_of(1 - 0.05 / 8), 3)
    (1.96, 2.734)
    """
    if not 0 < confidence < 1:
        raise ValueError(f"a confidence level is between 0 and 1, got {confidence}")
    return _Z95 if confidence == 0.95 else NormalDist().inv_cdf(0.5 + confidence / 2)


@dataclass(frozen=True)
class Proportion:
    """A share of trials, with its Wilson score interval (95% unless ``confidence`` says)."""

    value: float
    interval: tuple[float, float]
    trials: int

    @classmethod
    def of(cls, successes: float, trials: int, confidence: float = 0.95) -> Proportion:
        if trials <= 0:
            return cls(float("nan"), (0.0, 1.0), 0)
        p = successes / trials
        z = z_of(confidence)
        z2 = z**2
        centre = (p + z2 / (2 * trials)) / (1 + z2 / trials)
        half = z * math.sqrt(p * (1 - p) / trials + z2 / (4 * trials**2)) / (1 + z2 / trials)
        return cls(p, (max(0.0, centre - half), min(1.0, centre + half)), trials)

    def contains(self, x: float) -> bool:
        return self.interval[0] <= x <= self.interval[1]


DCR_MEMORIZATION = 0.6  # share of released records closer to train read as memorization


def dcr_verdict(
    closer: Proportion, copies: Proportion | None = None, chance: Proportion | None = None
) -> tuple[str, str]:
    """The risk class (good / warn / bad) and reading of a DCR share (ideal 0.5).

    Released records that equal training records more often than unseen ones (``copies``
    against ``chance``, intervals apart) are copies, whatever the distances say.  Otherwise a
    share whose interval reaches 0.5 shows nothing; a share significantly above 0.5 but
    under :data:`DCR_MEMORIZATION` is what any model fitted closely to its training sample
    gives (it follows that sample's quirks more than the population's); from 0.6 on,
    released records sit so much closer to training records that they are copying.

    >>> dcr_verdict(Proportion.of(500, 1000))[0], dcr_verdict(Proportion.of(535, 1000))[0]
    ('good', 'warn')
    >>> dcr_verdict(Proportion.of(700, 1000))
    ('bad', 'a sign of memorization')
    >>> dcr_verdict(Proportion.of(500, 1000), Proportion.of(250, 1000), Proportion.of(190, 1000))
    ('bad', 'released records copy training records more often than chance')
    """
    if copies is not None and chance is not None and copies.interval[0] > chance.interval[1]:
        return "bad", "released records copy training records more often than chance"
    if not closer.interval[0] > 0.5:
        return "good", "no sign of memorization"
    if closer.value < DCR_MEMORIZATION:
        return "warn", (
            "slightly closer to training records, with no excess of exact copies: the release "
            "follows its training sample more than the population, as a closely fitted model "
            "does, but some released records may be near-copies"
        )
    return "bad", "a sign of memorization"


@dataclass(frozen=True)
class MarginalDistance:
    """Total-variation distances between two tables over k-way marginals."""

    ways: int
    mean: float
    max: float
    marginals: int
    sampled: bool = False


@dataclass(frozen=True)
class UtilityResult:
    """How close the release is to the real data, per marginal order.

    ``vs_holdout`` compares with records the generator never saw; ``baseline`` is
    the distance between train and holdout themselves: what a perfect generator
    would score against the holdout, given sampling noise alone; ``independent`` is the
    training records with each column shuffled on its own against the holdout: what a
    release that keeps every column's values and none of their relations scores (a
    release above it learned less than nothing); ``vs_input`` compares with every record
    of the input as read (train and holdout together: what anyone holding the input file
    and the release would measure).
    """

    vs_train: tuple[MarginalDistance, ...]
    vs_holdout: tuple[MarginalDistance, ...] = ()
    baseline: tuple[MarginalDistance, ...] = ()
    vs_input: tuple[MarginalDistance, ...] = ()
    independent: tuple[MarginalDistance, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        def table(rows: tuple[MarginalDistance, ...]) -> dict[str, Any]:
            return {
                f"{r.ways}way": {k: v for k, v in asdict(r).items() if k != "ways"} for r in rows
            }

        out = {"tvd_vs_train": table(self.vs_train)}
        if self.vs_holdout:
            out["tvd_vs_holdout"] = table(self.vs_holdout)
            out["tvd_train_vs_holdout_baseline"] = table(self.baseline)
        if self.independent:
            out["tvd_independent_columns_baseline"] = table(self.independent)
        if self.vs_input:
            out["tvd_vs_input"] = table(self.vs_input)
        return out


@dataclass(frozen=True)
class RiskResult:
    """Memorization measured on the release: exact copies and distance to closest record."""

    copies_of_train: Proportion
    copies_of_holdout: Proportion | None
    closer_to_train: Proportion | None
    readings: list[str] = field(default_factory=list)
    distances: dict[str, np.ndarray] = field(default_factory=dict, compare=False, repr=False)
    """Per released record (sampled): distance to the closest train / holdout record."""

    def verdict(self) -> tuple[str, str]:
        """Risk class and reading (see :func:`dcr_verdict`); "warn" without a holdout."""
        if self.closer_to_train is None:
            return "warn", "not measured: no holdout records to compare with"
        return dcr_verdict(self.closer_to_train, self.copies_of_train, self.copies_of_holdout)

    def to_dict(self) -> dict[str, Any]:
        def prop(p: Proportion | None) -> dict[str, Any] | None:
            return (
                None
                if p is None
                else {"value": p.value, "interval": list(p.interval), "trials": p.trials}
            )

        return {
            "exact_copies": {
                "share_of_release_in_train": prop(self.copies_of_train),
                "share_of_release_in_holdout_baseline": prop(self.copies_of_holdout),
            },
            "dcr": {
                "share_closer_to_train": prop(self.closer_to_train),
                "ideal": 0.5,
            },
            "readings": list(self.readings),
        }
