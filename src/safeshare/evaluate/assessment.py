"""The full evaluation of a release: every risk and utility measure, with readings and a headline.

:func:`assess` runs, on integer-coded tables of one domain:

* utility: k-way marginal TVD (vs train, vs holdout, and the train-vs-holdout floor), the
  k-marginal score calibrated on subsamples, association differences, ML efficacy and the
  detection score;
* memorization: DCR share, exact copies, copies of outliers;
* attacks: singling out (univariate and multivariate), linkability, inference of each secret
  column, linkage (exact and error-tolerant), membership inference (distance and DOMIAS);
* re-identification risk of the release (and, for reference, of the raw training data) on the
  quasi-identifiers, and per-record uniqueness from a Gaussian copula.

>>> import numpy as np
>>> from safeshare.data.examples import load_example
>>> from safeshare.data import Table
>>> frame, schema = load_example("fair")
>>> table, _ = Table.from_frame(frame, schema.domain())
>>> train, holdout = table.take(np.arange(0, 4000)), table.take(np.arange(4000, 6366))
>>> options = EvaluationOptions(attacks=100, ml=False, copula_records=100)
>>> result = assess(holdout, train, holdout, np.random.default_rng(0), options)
>>> result.headline()["risk"]["significant_attacks"]    # real records, but none of train's
[]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np

from safeshare._progress import Progress, no_progress
from safeshare.data.domain import Column, Domain, Kind, Role
from safeshare.data.table import Table
from safeshare.engine import CountingEngine, default_engine
from safeshare.evaluate.attack_risk import (
    AttackResult,
    EvaluationInputError,
    confidence_in_family,
    family_wise,
    strongest,
)
from safeshare.evaluate.copula import CopulaResult, copula_uniqueness
from safeshare.evaluate.fidelity import (
    AssociationDifferences,
    KMarginalScore,
    association_differences,
    kmarginal_score,
)
from safeshare.evaluate.generalized import CellSets, from_table
from safeshare.evaluate.inference import inference
from safeshare.evaluate.linkability import check_split, linkability
from safeshare.evaluate.linkage import linkage
from safeshare.evaluate.membership import MembershipResult, membership_inference
from safeshare.evaluate.memorization import MemorizationResult, memorization
from safeshare.evaluate.ml_efficacy import DetectionResult, EfficacyResult, detection, ml_efficacy
from safeshare.evaluate.reidentification import (
    MAX_POPULATION,
    ReidentificationResult,
    reidentification_risk,
)
from safeshare.evaluate.results import UtilityResult
from safeshare.evaluate.singling_out import singling_out
from safeshare.evaluate.utility import marginal_tvd

MAX_SECRETS = 3
NONE_DECLARED = "all columns (none declared)"
MAX_TARGETS = 2


NUMERIC_CODES = 256
"""The default cap on a numeric column's codes in an evaluation."""
MAX_CODES = 65_536


@dataclass(frozen=True)
class EvaluationOptions:
    """What to measure; ``None`` picks from the domain's roles (see :func:`assess`).

    ``link_columns``: linkability's two sources (default: a split balanced by entropy,
    :func:`~safeshare.evaluate.linkability.balanced_split`); ``neighbours``: released records
    each source looks up.  ``numeric_codes``: at most this many codes for a numeric column the
    data's values decide (one per value below it, equal-width bins above): the attacks'
    resolution, and the memory of singling out's bitsets (``3 x codes x records / 8`` bytes).
    """

    attacks: int = 500
    quasi_identifiers: tuple[str, ...] | None = None
    secrets: tuple[str, ...] | None = None
    targets: tuple[str, ...] | None = None
    population_size: int | None = None
    ml: bool = True
    copula_records: int = 1000
    link_columns: tuple[tuple[str, ...], ...] | None = None
    neighbours: int = 1
    numeric_codes: int = NUMERIC_CODES

    def __post_init__(self) -> None:
        size = self.population_size
        if size is not None and (not isinstance(size, int) or not 1 <= size <= MAX_POPULATION):
            raise EvaluationInputError(
                f"--population-size must lie in 1..{MAX_POPULATION:,}, got {size!r}"
            )
        if not isinstance(self.neighbours, int) or self.neighbours < 1:
            raise EvaluationInputError(f"--neighbours must be at least 1, got {self.neighbours!r}")
        if not isinstance(self.numeric_codes, int) or not 2 <= self.numeric_codes <= MAX_CODES:
            raise EvaluationInputError(
                f"--numeric-codes must lie in 2..{MAX_CODES:,}, got {self.numeric_codes!r}"
            )
        if self.link_columns is not None and len(self.link_columns) != 2:
            raise EvaluationInputError(
                f"--link-columns is given twice, once per source (--link-columns A,B "
                f"--link-columns C,D), not {len(self.link_columns)} time(s)"
            )


@dataclass(frozen=True)
class Assessment:
    """Everything measured on one release."""

    rows: dict[str, int]
    quasi_identifiers: tuple[str, ...]
    quasi_identifier_source: str
    utility: UtilityResult
    kmarginal: KMarginalScore
    associations: AssociationDifferences
    efficacy: tuple[EfficacyResult, ...]
    detection: DetectionResult | None
    memorization: MemorizationResult
    attacks: tuple[AttackResult, ...]
    membership: tuple[MembershipResult, ...]
    reidentification: dict[str, ReidentificationResult]
    copula: CopulaResult | None
    warnings: tuple[str, ...] = ()
    generalized: dict[str, int] = field(default_factory=dict)

    @property
    def tests(self) -> int:
        """How many tests share the 95% family-wise confidence (see :func:`family_size`)."""
        return family_size(self.attacks, self.membership)

    def headline(self) -> dict[str, Any]:
        """The few figures a person reads first."""
        worst = strongest(self.attacks)
        significant = [a for a in self.attacks if a.significant]
        mia = max(self.membership, key=lambda m: m.auc) if self.membership else None
        return {
            "risk": {
                "worst_attack": None if worst is None else worst.name,
                "worst_risk": None if worst is None else worst.risk,
                "worst_interval": None if worst is None else list(worst.interval),
                "significant_attacks": [a.name for a in significant],
                "tests": self.tests,
                "confidence_of_each_test": confidence_in_family(self.tests),
                "membership_auc": None if mia is None else mia.auc,
                "dcr_share_closer_to_train": self.memorization.closer_to_train.value,
                "reading": (
                    f"{len(significant)} of {len(self.attacks)} attacks do better on training "
                    "records than on unseen ones"
                    + (f"; the strongest: {worst.name}, {worst.reading}" if worst else "")
                ),
            },
            "utility": {
                "equivalent_subsample_fraction": self.kmarginal.equivalent_fraction,
                "kmarginal_score": self.kmarginal.score,
                "ml_efficacy_ratio": (
                    float(np.mean([e.ratio for e in self.efficacy])) if self.efficacy else None
                ),
                "reading": self.kmarginal.reading,
            },
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "headline": self.headline(),
            "rows": dict(self.rows),
            "quasi_identifiers": {
                "columns": list(self.quasi_identifiers),
                "source": self.quasi_identifier_source,
            },
            "utility": {
                **self.utility.to_dict(),
                "kmarginal": self.kmarginal.to_dict(),
                "associations": self.associations.to_dict(),
                "ml_efficacy": [e.to_dict() for e in self.efficacy],
                "detection": None if self.detection is None else self.detection.to_dict(),
            },
            "memorization": self.memorization.to_dict(),
            "attacks": [a.to_dict() for a in self.attacks],
            "membership": [m.to_dict() for m in self.membership],
            "reidentification": {k: v.to_dict() for k, v in self.reidentification.items()},
            "copula": None if self.copula is None else self.copula.to_dict(),
            "generalized_cells": dict(self.generalized),
            "warnings": list(self.warnings),
        }


def assess(
    release: Table | CellSets,
    train: Table,
    holdout: Table,
    rng: np.random.Generator,
    options: EvaluationOptions | None = None,
    *,
    auxiliary: Table | None = None,
    engine: CountingEngine | None = None,
    progress: Progress = no_progress,
) -> Assessment:
    """Run every measure (see the module docstring).

    Quasi-identifiers default to the columns declared ``quasi_identifier`` (else every column,
    the worst case); inference secrets to the ``sensitive`` columns (else the last column).
    """
    options = options or EvaluationOptions()
    engine = engine or default_engine()
    cells = release if isinstance(release, CellSets) else from_table(release)
    coded = release if isinstance(release, Table) else cells.impute(rng)
    _check(coded, train, holdout, options)
    quasi, quasi_source = _quasi_identifiers(train.domain, options)
    secrets = _secrets(train.domain, options)
    warnings: list[str] = []

    progress("utility", 0.0)
    utility = UtilityResult(
        marginal_tvd(coded, train, engine=engine, rng=rng),
        marginal_tvd(coded, holdout, engine=engine, rng=rng),
        marginal_tvd(train, holdout, engine=engine, rng=rng),
    )
    kmarginal = kmarginal_score(coded, train, rng, engine=engine)
    associations = association_differences(coded, train, engine)
    efficacy: list[EfficacyResult] = []
    found = None
    if options.ml:
        progress("machine learning", 0.15)
        targets = options.targets or secrets[:MAX_TARGETS]
        efficacy = [ml_efficacy(coded, train, holdout, t, rng) for t in targets]
        found = detection(coded, holdout, rng)

    progress("memorization", 0.35)
    memorized = memorization(coded, train, holdout, rng, engine=engine)

    progress("attacks", 0.45)
    family = run_attacks(
        coded, train, holdout, rng, options, cells=cells, auxiliary=auxiliary,
        progress=lambda step, done: progress(step, 0.45 + 0.35 * done),
    )  # fmt: skip

    progress("re-identification", 0.8)
    # the population: --population-size, else the owner's records (train + holdout)
    population = options.population_size or len(train) + len(holdout)
    reid = {
        "release": reidentification_risk(
            _classes_of(cells, quasi), list(quasi), population_size=population, engine=engine
        ),
        "train": reidentification_risk(
            train, list(quasi), population_size=population, engine=engine
        ),
    }
    copula = copula_uniqueness(
        train,
        list(quasi),
        rng,
        population_size=population,
        max_records=options.copula_records,
        engine=engine,
    )
    for attack in family.attacks:
        warnings.extend(attack.warnings)
    if quasi_source == NONE_DECLARED:
        warnings.append(
            "no column is declared a quasi-identifier: every column is treated as one (the worst "
            "case); declare them in the schema (role: quasi_identifier)"
        )
    progress("done", 1.0)
    return Assessment(
        rows={"train": len(train), "holdout": len(holdout), "release": len(coded)},
        quasi_identifiers=tuple(quasi),
        quasi_identifier_source=quasi_source,
        utility=utility,
        kmarginal=kmarginal,
        associations=associations,
        efficacy=tuple(efficacy),
        detection=found,
        memorization=memorized,
        attacks=family.attacks,
        membership=family.membership,
        reidentification=reid,
        copula=copula,
        warnings=tuple(warnings),
        generalized={k: v for k, v in cells.generalized.items() if v},
    )


def family_size(attacks: Sequence[AttackResult], membership: Sequence[MembershipResult]) -> int:
    """The tests whose intervals hold together with 95%: the attacks that could run and the
    membership scores.  A harmless release is flagged by any of them at most 2.5% of the time.
    """
    return sum(1 for a in attacks if a.main.trials) + len(membership)


@dataclass(frozen=True)
class AttackFamily:
    """Every attack on one release, their intervals holding together with 95% (Bonferroni)."""

    attacks: tuple[AttackResult, ...]
    membership: tuple[MembershipResult, ...]

    @property
    def flagged(self) -> list[str]:
        """The attacks and membership scores whose risk is significant."""
        attacks = [a.name for a in self.attacks if a.significant]
        return attacks + [m.name for m in self.membership if m.significant]


def run_attacks(
    release: Table,
    train: Table,
    holdout: Table,
    rng: np.random.Generator,
    options: EvaluationOptions,
    *,
    cells: CellSets | None = None,
    auxiliary: Table | None = None,
    progress: Progress = no_progress,
) -> AttackFamily:
    """Singling out, linkability, inference, linkage and membership inference on ``release``
    (``cells``: the release as written, where its values are generalized), as one family;
    ``progress`` hears each attack's name as it starts.

    >>> import numpy as np
    >>> from safeshare.data.examples import load_example
    >>> from safeshare.data import Table
    >>> frame, schema = load_example("fair")
    >>> table, _ = Table.from_frame(frame, schema.domain())
    >>> train, holdout = table.take(np.arange(0, 3000)), table.take(np.arange(3000, 6366))
    >>> options = EvaluationOptions(attacks=200)
    >>> copied = run_attacks(train, train, holdout, np.random.default_rng(0), options)
    >>> copied.flagged[:3]
    ['singling out (3 columns)', 'linkability', 'inference of affairs']
    >>> copied.attacks[0].reading        # no value of this survey is held by one record
    'no attack could be made on this release (nothing to exploit): no measurable risk'
    >>> copied.attacks[1].family         # the attacks that ran and two membership scores
    7
    """
    cells = cells or from_table(release)
    quasi, _ = _quasi_identifiers(train.domain, options)
    n = options.attacks
    wide = min(3, len(train.columns))
    covers = cells.covers()  # generalized cells, read as the codes they cover
    steps: list[tuple[str, Callable[[], AttackResult]]] = [
        ("singling out (1 column)",
         partial(singling_out, release, train, holdout, rng, attacks=n, width=1, covers=covers)),
        (f"singling out ({wide} columns)",
         partial(singling_out, release, train, holdout, rng, attacks=n, width=wide,
                 covers=covers)),
    ]  # fmt: skip
    if len(train.columns) >= 2:
        sources = options.link_columns or (None, None)
        steps.append(("linkability", partial(
            linkability, release, train, holdout, rng, attacks=n, columns_a=sources[0],
            columns_b=sources[1], neighbors=options.neighbours, covers=covers,
        )))  # fmt: skip
        steps += [
            (f"inference of {secret}",
             partial(inference, release, train, holdout, secret, rng, attacks=n, covers=covers))
            for secret in _secrets(train.domain, options)
        ]  # fmt: skip
    steps += [
        (f"linkage{' (error-tolerant)' if tolerant else ''}",
         partial(linkage, cells, train, holdout, quasi, rng, attacks=n, tolerant=tolerant,
                 auxiliary=auxiliary))
        for tolerant in (False, True)
    ]  # fmt: skip
    attacks = []
    for done, (name, attack) in enumerate(steps):  # in this order: they share rng's stream
        progress(name, done / (len(steps) + 1))
        attacks.append(attack())
    progress("membership inference", len(steps) / (len(steps) + 1))
    members = membership_inference(release, train, holdout, rng)
    tests = family_size(attacks, members)
    return AttackFamily(
        tuple(family_wise(attacks, tests)), tuple(m.at_family(tests) for m in members)
    )


def _check(release: Table, train: Table, holdout: Table, options: EvaluationOptions) -> None:
    if release.columns != train.columns or holdout.columns != train.columns:
        raise EvaluationInputError(
            "release, train and holdout must share one domain (same columns)"
        )
    if len(release) == 0:
        raise EvaluationInputError("the release has no rows: nothing to evaluate")
    if len(train) < 10 or len(holdout) < 10:
        raise EvaluationInputError(
            f"the evaluation needs at least 10 training and 10 holdout records; got {len(train)} "
            f"and {len(holdout)}"
        )
    smallest = min(len(train), len(holdout), len(release))
    if options.attacks > smallest:
        raise EvaluationInputError(
            f"{options.attacks} attacks requested but the smallest of train, holdout and release "
            f"holds {smallest} records; ask for at most {smallest} (e.g. --attacks {smallest})"
        )
    if options.link_columns is not None:
        check_split(train, *options.link_columns)


def _quasi_identifiers(domain: Domain, options: EvaluationOptions) -> tuple[list[str], str]:
    if options.quasi_identifiers:
        for name in options.quasi_identifiers:
            domain[name]
        return list(options.quasi_identifiers), "given"
    declared = [c.name for c in domain if c.role is Role.QUASI_IDENTIFIER]
    if declared:
        return declared, "schema"
    others = [c.name for c in domain if c.role is not Role.SENSITIVE]
    return (others or list(domain.names)), NONE_DECLARED


def _secrets(domain: Domain, options: EvaluationOptions) -> list[str]:
    if options.secrets:
        for name in options.secrets:
            domain[name]
        return list(options.secrets)
    declared = [c.name for c in domain if c.role is Role.SENSITIVE]
    return declared[:MAX_SECRETS] if declared else [domain.names[-1]]


def _classes_of(cells: CellSets, quasi: list[str]) -> Table:
    """The release's equivalence classes as written (generalized values kept distinct)."""
    columns = tuple(
        Column(
            n,
            Kind.CATEGORICAL,
            categories=tuple(str(i) for i in range(max(len(cells.masks[n]), 1))),
            other=False,
            missing=False,
        )
        for n in quasi
    )
    return Table({n: cells.rows[n] for n in quasi}, Domain(columns))
