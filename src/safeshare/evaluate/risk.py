"""Memorization risk of a release: exact copies and distance to closest record (DCR).

Both compare the release with the training records *and* with holdout records the
generator never saw, of the same number: a generator that generalises is as close
to unseen people as to the ones it trained on.  Distances between coded records
are Gower-style: per column 0/1 for a categorical mismatch, the rank distance
(scaled to [0, 1]) for ordered columns, then averaged over columns (one search,
:func:`safeshare.evaluate.neighbors.nearest_distances`, serves every measure).

>>> import numpy as np
>>> from safeshare.data import Column, Domain, Kind, Table
>>> domain = Domain((Column("a", Kind.CATEGORICAL, categories=tuple("abcdefgh")),))
>>> rng = np.random.default_rng(0)
>>> train = Table({"a": rng.integers(0, 8, 400)}, domain)
>>> holdout = Table({"a": rng.integers(0, 8, 400)}, domain)
>>> result = memorization_risk(train.take(np.arange(200)), train, holdout, rng)
>>> result.copies_of_train.value
1.0
"""

from __future__ import annotations

import numpy as np

from safeshare.data.table import Table
from safeshare.evaluate.memorization import MemorizationResult, dcr_share
from safeshare.evaluate.neighbors import nearest_distances, row_keys
from safeshare.evaluate.results import Proportion, RiskResult, dcr_verdict

MAX_RELEASE_SAMPLE = 2000


def memorization_risk(
    release: Table,
    train: Table,
    holdout: Table | None,
    rng: np.random.Generator,
    *,
    max_release_sample: int = MAX_RELEASE_SAMPLE,
) -> RiskResult:
    """Exact-copy shares and the DCR share, each with a 95% interval."""
    if len(release) == 0:
        raise ValueError("the release has no rows: nothing to measure")
    if holdout is None or len(holdout) == 0:
        copies = Proportion.of(_copies(release, train), len(release))
        reading = f"{copies.value:.1%} of released records equal a training record (no holdout to compare)"
        return RiskResult(copies, None, None, [reading])
    reference = train.take(
        rng.choice(len(train), size=min(len(holdout), len(train)), replace=False)
    )
    copies_train = Proportion.of(_copies(release, reference), len(release))
    copies_holdout = Proportion.of(_copies(release, holdout), len(release))
    sample = release
    if len(release) > max_release_sample:
        sample = release.take(rng.choice(len(release), size=max_release_sample, replace=False))
    to_train = nearest_distances(sample, reference)
    to_holdout = nearest_distances(sample, holdout)
    share = dcr_share(to_train, to_holdout)
    readings = _readings(copies_train, copies_holdout, share)
    distances = {"train": to_train, "holdout": to_holdout}
    return RiskResult(copies_train, copies_holdout, share, readings, distances)


def risk_from_memorization(memorized: MemorizationResult) -> RiskResult:
    """The same measures read off :func:`~safeshare.evaluate.memorization.memorization`'s result.

    A release that runs the full evaluation takes its risk from there: one distance search.
    """
    train, holdout = memorized.copies_of_train, memorized.copies_of_holdout
    share = memorized.closer_to_train
    readings = _readings(train, holdout, share)
    return RiskResult(train, holdout, share, readings, dict(memorized.distances))


def _readings(train: Proportion, holdout: Proportion, closer: Proportion) -> list[str]:
    _, verdict = dcr_verdict(closer, train, holdout)
    lines = [
        f"{closer.value:.1%} of released records sit closer to a training record than to an "
        f"unseen one (95% interval {closer.interval[0]:.1%}-{closer.interval[1]:.1%}; "
        f"ideal 50%): {verdict}."
    ]
    lines.append(
        f"{train.value:.1%} of released records equal a training record, against {holdout.value:.1%} "
        "that equal an unseen record (what chance alone gives on this domain)."
    )
    return lines


def _copies(release: Table, reference: Table) -> int:
    """How many released rows equal some reference row on every column."""
    return int(np.isin(row_keys(release), row_keys(reference)).sum())
