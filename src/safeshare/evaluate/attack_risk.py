"""The risk an attack measures: its success on training records beyond its success on a control.

An attack (singling out, linkability, inference) is run against records the release was made
from (the *main* targets) and against as many records it was not made from (the *control*).
Success on the control is what the attacker gets from population patterns alone; the privacy
risk is the excess, normalised by what was left to gain:

    risk = (main - control) / (1 - control)

Main and control use the **same number of records** (the larger set is subsampled), so that an
attack whose success depends on the size of the data set (singling out does) has the same
chance on both: with unequal sizes, a null release would read as a risk.  The interval is
Newcombe's hybrid score interval for a difference of two proportions (built from the two
Wilson intervals), divided by ``1 - control``; a negative excess (the attack does better on
unseen records) is no risk, so the risk and its interval are cut at 0 (the raw excess is kept
in ``details``).  A random-guessing *baseline* says whether the
attack is any good at all: an attack no better than guessing measures nothing.

An evaluation runs many attacks on one release, and each 95% interval misses 0 by chance in
2.5% of harmless releases: with eight attacks, one harmless release in six would show a red
tile.  :func:`family_wise` widens every interval of a family of ``m`` tests to confidence
``1 - 0.05 / m`` (Bonferroni), so that all of them hold together with 95% confidence and a
harmless release is flagged by any of them at most 2.5% of the time.

>>> r = attack_risk("inference on income", "threat", main=300, control=100, baseline=90, attacks=500)
>>> round(r.risk, 3), r.significant
(0.5, True)
>>> r.reading
'50.0% risk (95% interval 42.8%-56.7%): the attack succeeds on 60.0% of training records vs 20.0% of unseen ones'
>>> r.at_family(8).reading.split(":")[:2]
['50.0% risk (95% family-wise interval, 8 tests', ' 39.9%-59.1%)']
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from safeshare.data.table import Table
from safeshare.errors import SafeshareError
from safeshare.evaluate.results import Proportion

FAMILY_CONFIDENCE = 0.95


class EvaluationInputError(SafeshareError, ValueError):
    """An evaluation cannot run on the tables given (too few records, no columns, ...)."""


@dataclass(frozen=True)
class AttackResult:
    """One attack's success on training records, on a control set and by random guessing."""

    name: str
    threat: str
    main: Proportion
    control: Proportion
    baseline: Proportion
    risk: float
    interval: tuple[float, float]
    reading: str
    warnings: tuple[str, ...] = ()
    details: dict[str, Any] = field(default_factory=dict, compare=False)
    family: int = 1
    """How many tests the interval holds together with (see :func:`family_wise`)."""
    overdispersion: float = 1.0
    """How much the successes vary beyond binomial trials (the interval is widened by its root)."""

    @property
    def significant(self) -> bool:
        """Whether the risk's interval excludes 0."""
        return bool(self.interval[0] > 0)

    @property
    def confidence(self) -> float:
        """The interval's own confidence level: 95% shared among the family's tests."""
        return confidence_in_family(self.family)

    def at_family(self, tests: int) -> AttackResult:
        """The same counts with the interval of one test in a family of ``tests``."""
        if self.main.trials == 0:
            return replace(self, family=tests)
        return attack_risk(
            self.name,
            self.threat,
            main=_successes(self.main),
            control=_successes(self.control),
            baseline=_successes(self.baseline),
            attacks=self.main.trials,
            control_attacks=self.control.trials,
            baseline_attacks=self.baseline.trials,
            details={k: v for k, v in self.details.items() if k != "excess"},
            family=tests,
            overdispersion=self.overdispersion,
        )

    @property
    def beats_baseline(self) -> bool:
        """Whether the attack does better than random guessing on the training records (or
        guessing found nothing either: then a low risk is not the attack's weakness)."""
        return self.main.value > self.baseline.value or self.baseline.value == 0

    def to_dict(self) -> dict[str, Any]:
        def prop(p: Proportion) -> dict[str, Any]:
            return {"value": p.value, "interval": list(p.interval), "trials": p.trials}

        return {
            "name": self.name,
            "threat": self.threat,
            "risk": self.risk,
            "interval": list(self.interval),
            "significant": self.significant,
            "confidence": self.confidence,
            "family": self.family,
            "success_on_train": prop(self.main),
            "success_on_control": prop(self.control),
            "success_of_random_baseline": prop(self.baseline),
            "reading": self.reading,
            "warnings": list(self.warnings),
            **({"details": self.details} if self.details else {}),
        }


def strongest(attacks: Sequence[AttackResult]) -> AttackResult | None:
    """The attack that surely succeeds most: among the significant ones, the largest lower
    bound of the risk (then the largest risk); None when none is significant.  (The widest
    interval is no measure of strength: a harmless release's weakest attack can span 0 to 1.)
    """
    significant = [a for a in attacks if a.significant]
    if not significant:
        return None
    return max(significant, key=lambda a: (a.interval[0], a.risk))


def confidence_in_family(tests: int) -> float:
    """Each test's confidence when ``tests`` intervals hold together with 95% (Bonferroni).

    >>> confidence_in_family(1), confidence_in_family(10)
    (0.95, 0.995)
    """
    if tests < 1:
        raise ValueError(f"a family holds at least one test, got {tests}")
    return 1 - (1 - FAMILY_CONFIDENCE) / tests


def family_wise(attacks: Sequence[AttackResult], tests: int | None = None) -> list[AttackResult]:
    """Every attack's interval at the confidence that makes ``tests`` of them (default: the
    attacks that could run) hold together with 95%; see the module docstring."""
    ran = sum(1 for a in attacks if a.main.trials)
    return [a.at_family(max(tests or ran, 1)) for a in attacks]


def newcombe_difference(a: Proportion, b: Proportion) -> tuple[float, float]:
    """95% interval of ``a - b`` (Newcombe 1998, method 10: hybrid Wilson score)."""
    d = a.value - b.value
    low = d - math.hypot(a.value - a.interval[0], b.interval[1] - b.value)
    high = d + math.hypot(a.interval[1] - a.value, b.value - b.interval[0])
    return max(-1.0, low), min(1.0, high)


def attack_risk(
    name: str,
    threat: str,
    *,
    main: int,
    control: int,
    baseline: int,
    attacks: int,
    control_attacks: int | None = None,
    baseline_attacks: int | None = None,
    details: dict[str, Any] | None = None,
    family: int = 1,
    overdispersion: float = 1.0,
) -> AttackResult:
    """The risk of an attack from its success counts (see the module docstring); the interval
    is one of ``family`` tests that hold together with 95%, widened by the root of
    ``overdispersion`` (the variance of the trials' successes over a binomial one's, where the
    trials are not independent of one another)."""
    if attacks < 1:  # e.g. no predicate singles out any released record
        nothing = Proportion.of(0, 0)
        reading = "no attack could be made on this release (nothing to exploit): no measurable risk"
        return AttackResult(
            name, threat, nothing, nothing, nothing, 0.0, (0.0, 0.0), reading, (), details or {},
            family, overdispersion,
        )  # fmt: skip
    level = confidence_in_family(family)
    p_main = Proportion.of(main, attacks, level)
    p_control = Proportion.of(control, control_attacks or attacks, level)
    p_base = Proportion.of(baseline, baseline_attacks or attacks)
    details = dict(details or {})
    if p_control.value >= 1:
        risk, interval = float("nan"), (float("nan"), float("nan"))
    else:
        scale = 1 - p_control.value
        low, high = newcombe_difference(p_main, p_control)
        difference, widen = p_main.value - p_control.value, math.sqrt(max(overdispersion, 1.0))
        low = max(-1.0, difference - (difference - low) * widen)
        high = min(1.0, difference + (high - difference) * widen)
        excess = difference / scale
        details["excess"] = {"value": excess, "interval": [low / scale, high / scale]}
        # a risk is not negative: less success on training records than on unseen ones is none
        risk, interval = max(0.0, excess), (max(0.0, low / scale), min(1.0, max(0.0, high / scale)))
    if overdispersion > 1:
        details["overdispersion"] = overdispersion
    result = AttackResult(
        name, threat, p_main, p_control, p_base, risk, interval, "", (), details, family,
        overdispersion,
    )  # fmt: skip
    warnings = []
    if not result.beats_baseline:
        warnings.append(
            f"{name}: the attack does no better than random guessing ({p_main.value:.1%} vs "
            f"{p_base.value:.1%}); a low risk here may mean a weak attack, not a safe release"
        )
    return AttackResult(
        name,
        threat,
        p_main,
        p_control,
        p_base,
        risk,
        interval,
        _reading(result),
        tuple(warnings),
        details,
        family,
        overdispersion,
    )


def _successes(p: Proportion) -> int:
    return round(p.value * p.trials)


_TOO_WIDE = 0.5  # an interval wider than this, not significant, measured nothing


def level_words(family: int) -> str:
    """How a reading names an interval of one test in a family of ``family``."""
    return "95% interval" if family == 1 else f"95% family-wise interval, {family} tests:"


def _reading(r: AttackResult) -> str:
    if math.isnan(r.risk):
        return "undefined: the attack succeeds on every unseen record"
    rates = (
        f"the attack succeeds on {r.main.value:.1%} of training records vs "
        f"{r.control.value:.1%} of unseen ones"
    )
    level, (low, high) = level_words(r.family), r.interval
    if not r.significant and high - low > _TOO_WIDE:  # (a handful of attacks: it says nothing)
        return (
            f"not measured: {r.main.trials} attack(s) could be made, too few ({level} "
            f"{low:.1%} to {high:.1%}): {rates}"
        )
    if not r.significant:
        return f"no measurable risk ({level} {low:.1%} to {high:.1%}): {rates}"
    return f"{r.risk:.1%} risk ({level} {low:.1%}-{high:.1%}): {rates}"


def equal_sizes(train: Table, control: Table, rng: np.random.Generator) -> tuple[Table, Table]:
    """Both sets cut to the smaller one's size, by a uniform subsample of the larger."""
    n = min(len(train), len(control))
    if n == 0:
        raise EvaluationInputError(
            "an attack needs training and control records; one of the sets is empty"
        )
    return _subsample(train, n, rng), _subsample(control, n, rng)


def check_attacks(attacks: int, available: int, what: str) -> None:
    """Refuse more attacks than there are records to attack."""
    if attacks < 1:
        raise EvaluationInputError(f"the number of attacks must be at least 1, got {attacks}")
    if attacks > available:
        raise EvaluationInputError(
            f"{attacks} attacks requested but {what} holds only {available} records; "
            f"ask for at most {available} (e.g. --attacks {available})"
        )


def _subsample(table: Table, n: int, rng: np.random.Generator) -> Table:
    if len(table) == n:
        return table
    return table.take(np.sort(rng.choice(len(table), size=n, replace=False)))
