"""Audits of the byte-level language model: what its weights give back, what its training leaks.

* :func:`extraction_audit` attacks a *trained model*: prefix -> suffix extraction
  (:func:`~safeshare.train.extraction.extraction_rates`, exact and approximate, Wilson
  intervals) and the loss-threshold membership attack, on its training texts against
  texts it never saw.
* :func:`audit_language_model` audits the *training procedure* with secret canaries
  (Steinke, Nasr & Jagielski 2023, one run): ``canaries`` texts ``"my number is d d d d d d"``
  with random digits, each inserted independently with probability 1/2, are added to the
  texts; the model is trained once at the given settings, and every canary is scored by
  its log-likelihood (higher = more likely trained on).  The scores give the one-run
  epsilon lower bound (at the claim's delta), the loss-threshold attack's AUC and each
  canary's exposure in bits (Carlini et al. 2019).  A DP procedure must never audit above
  its claimed epsilon; a non-private one that memorizes audits far above 1, up to the
  cap that ``canaries`` perfect guesses allow (:func:`~safeshare.train.audit.perfect_guess_bound`).

Results hold aggregates only: no text, no canary's secret.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from safeshare.errors import InputError
from safeshare.train.audit import OneRunAudit, against_claim, one_run_audit, perfect_guess_bound
from safeshare.train.canaries import UNSEEN_EXPOSURE
from safeshare.train.extraction import (
    DEFAULT_TEMPLATE,
    Decoder,
    DigitCanaries,
    Exposure,
    Extraction,
    canary_exposure,
    draw_digit_canaries,
    extraction_rates,
)
from safeshare.train.fine_tune import Base, FineTunedModel, FineTuner, FineTuneSettings
from safeshare.train.language_model import (
    LanguageModel,
    LanguageModelSettings,
    train_language_model,
)
from safeshare.train.membership import LOW_FPRS, MembershipAttack, loss_threshold_attack
from safeshare.train.text import check_texts
from safeshare.train.user_level import UserColumn, user_codes, with_canary_users


def _resolvable(nonmembers: int) -> tuple[float, ...]:
    """The low false-positive rates that ``nonmembers`` scores can resolve (>= 1 of them)."""
    return tuple(f for f in LOW_FPRS if f * nonmembers >= 1)


@dataclass(frozen=True)
class ExtractionAudit:
    """Extraction rates and a loss-threshold attack on a trained language model."""

    extraction: Extraction
    membership: MembershipAttack

    def readings(self) -> list[str]:
        return [
            *self.extraction.readings(),
            f"loss-threshold attack, training vs held-out texts: AUC {self.membership.auc:.3f} "
            f"({self.membership.members} vs {self.membership.nonmembers} texts; 0.5 = guessing)",
            *self.membership.readings(),
        ]

    def describe(self) -> dict[str, Any]:
        return {
            "extraction": self.extraction.describe(),
            "membership": self.membership.describe(),
            "readings": self.readings(),
        }


def extraction_audit(
    model: Decoder,
    members: Sequence[str],
    nonmembers: Sequence[str],
    *,
    prefix: int = 16,
    suffix: int = 16,
    approximate: float = 0.9,
) -> ExtractionAudit:
    """Extraction and membership on ``members`` (trained on) against ``nonmembers`` (never)."""
    members, nonmembers = check_texts(members), check_texts(nonmembers)
    extraction = extraction_rates(
        model, members, nonmembers, prefix=prefix, suffix=suffix, approximate=approximate
    )
    membership = loss_threshold_attack(
        model.losses(members), model.losses(nonmembers), fprs=_resolvable(len(nonmembers))
    )
    return ExtractionAudit(extraction, membership)


@dataclass(frozen=True)
class LanguageModelAudit:
    """What one training run with digit canaries showed: bound, attack, exposure."""

    audit: OneRunAudit
    membership: MembershipAttack
    exposure: Exposure
    claimed_epsilon: float | None
    cap: float  # the bound if every inserted canary outscored every held-out one
    inserted: int
    digits: int
    training_texts: int
    copies: int | None = None  # canary users (user-level audits): texts per canary user

    def readings(self) -> list[str]:
        """Plain sentences: the bound against the claim and the cap, the attack, the exposure."""
        bound = self.audit.epsilon
        claim = against_claim(
            bound, self.claimed_epsilon, unclaimed="the procedure claims no DP guarantee"
        )
        canaries = f"{self.audit.canaries} digit canaries, {self.inserted} inserted"
        if self.copies is not None:
            canaries = (
                f"{self.audit.canaries} canary users, each {self.copies} copies of a digit "
                f"canary, {self.inserted} inserted"
            )
        return [
            f"empirical epsilon >= {bound:.3g} at {1 - self.audit.significance:.0%} confidence "
            f"({canaries}; perfect guesses would show {self.cap:.3g}): {claim}",
            f"loss-threshold attack on the canaries (log-likelihood): AUC "
            f"{self.membership.auc:.3f}",
            *self.membership.readings(),
            *self.exposure.readings(),
        ]

    def describe(self) -> dict[str, Any]:
        """JSON-ready aggregates (no text, no secret, no single canary's score)."""
        exposures = self.exposure.exposures
        inserted = self.exposure.inserted
        return {
            "audits": "the training procedure at these settings, one run with digit canaries",
            "canary_kind": f"digit canaries ({self.digits} random digits in a fixed template)",
            "canary_unit": "text (record)"
            if self.copies is None
            else f"user ({self.copies} copies of one canary text)",
            "score": "log-likelihood of the canary text (higher = more likely trained on)",
            "training_texts": self.training_texts,
            "claimed_epsilon": self.claimed_epsilon,
            "one_run": self.audit.describe(),
            "perfect_guess_bound": self.cap,
            "membership": self.membership.describe(),
            "exposure_bits": {
                "method": self.exposure.method,
                "space_bits": self.exposure.space_bits,
                "inserted_mean": self.exposure.inserted_mean,
                "inserted_median": float(np.median(exposures[inserted])),
                "inserted_max": float(exposures[inserted].max()),
                "held_out_mean": self.exposure.held_out_mean,
                "unseen_mean": UNSEEN_EXPOSURE,
            },
            "readings": self.readings(),
        }


def audit_language_model(
    texts: Sequence[str],
    target_epsilon: float | None,
    settings: LanguageModelSettings | FineTuneSettings | None = None,
    *,
    canaries: int = 1000,
    digits: int = 6,
    template: str = DEFAULT_TEMPLATE,
    delta: float | None = None,
    significance: float = 0.05,
    text_column: str = "text",
    rng: np.random.Generator,
    progress: Callable[[str, float], None] | None = None,
    users: Any = None,
    copies: int = 8,
    max_records_per_user: int = 64,
    base: Base | None = None,
    exposure_samples: int = 10_000,
) -> LanguageModelAudit:
    """Audit :func:`train_language_model` (or, with ``base``, fine-tuning that base model:
    :mod:`safeshare.train.fine_tune`) at ``target_epsilon`` (None: without DP) and
    ``settings`` with ``canaries`` digit canaries, each inserted with probability 1/2.

    ``delta`` is the claim's delta and the training's (default 1 / (10 x records), as
    training uses; a non-private run is audited at the same delta).  ``rng`` draws the
    canaries, the coins and the training's seed.  With ``users`` (one id per text) the
    procedure is user-level training (``max_records_per_user``) and each canary is a
    canary *user* holding ``copies`` copies of its text, a new user beside the texts'.
    ``exposure_samples``: candidates that estimate each canary's exposure.
    """
    texts = check_texts(texts, text_column)
    if isinstance(copies, bool) or not isinstance(copies, int) or copies < 1:
        raise InputError(f"copies must be a whole number >= 1, got {copies!r}")
    coded = None if users is None else user_codes(users, len(texts))
    drawn = draw_digit_canaries(canaries, digits=digits, template=template, rng=rng)
    _check_both_sides(drawn)  # before any training
    owners = None
    if coded is None:
        data = texts + drawn.training_texts()
    else:
        data = texts + drawn.training_texts(copies)
        owners = with_canary_users(*coded, int(drawn.inserted.sum()), copies)
    delta = 1.0 / (10 * len(data)) if delta is None else delta
    seed = int(rng.integers(2**62))
    # without DP there is no unit to protect: the copies train as plain texts
    unit = None if owners is None or target_epsilon is None else "user"
    model: LanguageModel | FineTunedModel
    if base is not None:
        if settings is not None and not isinstance(settings, FineTuneSettings):
            raise InputError("fine-tuning a base model takes FineTuneSettings")
        tuner = FineTuner(base, settings)
        model = tuner.train(
            tuner.encode(data, progress),
            epsilon=target_epsilon,
            delta=delta,
            seed=seed,
            progress=progress,
            text_column=text_column,
            users=None if unit is None else UserColumn(owners, unit, max_records_per_user),
        )
    else:
        if settings is not None and not isinstance(settings, LanguageModelSettings):
            raise InputError("the byte-level language model takes LanguageModelSettings")
        model = train_language_model(
            data,
            epsilon=target_epsilon,
            delta=delta,
            settings=settings,
            text_column=text_column,
            seed=seed,
            progress=progress,
            user_column=unit,
            users=None if unit is None else owners,
            max_records_per_user=max_records_per_user,
        )
    if progress is not None:
        progress("scoring canaries", 1.0)
    return canary_readout(
        model,
        drawn,
        delta=delta,
        significance=significance,
        training_texts=len(texts),
        copies=None if users is None else copies,
        exposure_samples=exposure_samples,
        rng=rng,
    )


def canary_readout(
    model: LanguageModel | FineTunedModel,
    drawn: DigitCanaries,
    *,
    delta: float,
    significance: float = 0.05,
    training_texts: int,
    copies: int | None = None,
    exposure_samples: int = 10_000,
    rng: np.random.Generator,
) -> LanguageModelAudit:
    """What a model trained with ``drawn``'s inserted canaries (and ``training_texts``
    others) shows: the one-run bound at ``delta``, the loss attack and each exposure."""
    inserted = _check_both_sides(drawn)
    scores = model.log_likelihoods(drawn.texts)
    inside, outside = scores[drawn.inserted], scores[~drawn.inserted]
    claimed = model.card["privacy"].get("epsilon")
    return LanguageModelAudit(
        audit=one_run_audit(inside, outside, significance=significance, delta=delta),
        membership=loss_threshold_attack(-inside, -outside, fprs=_resolvable(outside.size)),
        exposure=canary_exposure(model, drawn, samples=exposure_samples, rng=rng, scores=scores),
        claimed_epsilon=None if claimed is None else float(claimed),
        cap=perfect_guess_bound(
            inserted, drawn.inserted.size - inserted, significance=significance, delta=delta
        ),
        inserted=inserted,
        digits=drawn.digits,
        training_texts=training_texts,
        copies=copies,
    )


def _check_both_sides(drawn: DigitCanaries) -> int:
    """The inserted canaries' number; refuse a draw with none on one side."""
    inserted = int(drawn.inserted.sum())
    if inserted in (0, drawn.inserted.size):
        raise InputError("every canary fell on one side; use more canaries (at least 20)")
    return inserted
