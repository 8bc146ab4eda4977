"""Membership inference against a release: was this person's record used to make it?

The attacker scores each candidate record; a high score says "member".  Two scores:

* **distance**: minus the distance to the closest released record (a generator that copies
  puts released records on top of its training records);
* **density ratio** (DOMIAS, van Breugel et al., AISTATS 2023): the release's density at the
  record over a reference density of the population, both kernel estimates under the Gower
  distance.  It detects over-fitting to *local* regions, not only copies.

Members are training records; non-members are holdout records; a disjoint half of the holdout
is the attacker's reference sample.  The attack's power is the AUC (0.5 is guessing), with
DeLong's interval (its variance from the two samples' structural components, so that it holds
at any confidence, as a family of tests needs), and the true-positive rate at a 1%
false-positive rate (1% is guessing), with a bootstrap 95% interval.

>>> import numpy as np
>>> from safeshare.data import Column, Domain, Kind, Table
>>> domain = Domain(tuple(Column(c, Kind.CATEGORICAL, categories=tuple("abcdefgh")) for c in "uvwxyz"))
>>> def table(seed, n): return Table({c: np.random.default_rng(seed + i).integers(0, 8, n)
...                                   for i, c in enumerate("uvwxyz")}, domain)
>>> train, holdout = table(0, 300), table(10, 600)
>>> results = membership_inference(train, train, holdout, np.random.default_rng(0))
>>> [(r.name, r.auc > 0.9) for r in results]
[('membership: distance to closest record', True), ('membership: density ratio (DOMIAS)', True)]
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from scipy import stats

from safeshare.data.table import Table
from safeshare.evaluate.attack_risk import EvaluationInputError, confidence_in_family, level_words
from safeshare.evaluate.neighbors import GowerIndex
from safeshare.evaluate.results import z_of

THREAT = (
    "An attacker who holds a person's record and the release asks whether the record was "
    "used to make it (membership alone can be sensitive: a clinic's patient list)."
)
TARGET_FPR = 0.01
BANDWIDTH = 0.3  # the kernel's scale, in columns: one full mismatch weighs exp(-1 / 0.3)


@dataclass(frozen=True)
class MembershipResult:
    """The power of one membership score: its AUC with DeLong's standard error, and the
    true-positive rate at a low false-positive rate with a bootstrap interval."""

    name: str
    auc: float
    auc_standard_error: float
    tpr_at_low_fpr: float
    tpr_interval: tuple[float, float]
    members: int
    non_members: int
    family: int = 1
    """How many tests the AUC's interval holds together with (see ``attack_risk.family_wise``)."""

    @property
    def auc_interval(self) -> tuple[float, float]:
        """The AUC's interval at the family's confidence (95% for a test on its own)."""
        half = z_of(confidence_in_family(self.family)) * self.auc_standard_error
        return max(0.0, self.auc - half), min(1.0, self.auc + half)

    @property
    def significant(self) -> bool:
        return self.auc_interval[0] > 0.5

    def at_family(self, tests: int) -> MembershipResult:
        """The same score with the interval of one test in a family of ``tests``."""
        return replace(self, family=tests)

    @property
    def reading(self) -> str:
        low, high = self.auc_interval
        level = level_words(self.family)
        if not self.significant:
            return (
                f"no better than guessing: AUC {self.auc:.3f} ({level} {low:.3f}-{high:.3f}; "
                "guessing gives 0.5)"
            )
        return (
            f"AUC {self.auc:.3f} ({level} {low:.3f}-{high:.3f}); "
            f"at a 1% false-positive rate it finds {self.tpr_at_low_fpr:.1%} of the members"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "threat": THREAT,
            "auc": self.auc,
            "auc_interval": list(self.auc_interval),
            "auc_standard_error": self.auc_standard_error,
            "confidence": confidence_in_family(self.family),
            "family": self.family,
            "tpr_at_1pct_fpr": self.tpr_at_low_fpr,
            "tpr_interval": list(self.tpr_interval),
            "baseline": {"auc": 0.5, "tpr_at_1pct_fpr": TARGET_FPR},
            "members": self.members,
            "non_members": self.non_members,
            "significant": self.significant,
            "reading": self.reading,
        }


def membership_inference(
    release: Table,
    train: Table,
    holdout: Table,
    rng: np.random.Generator,
    *,
    max_targets: int = 1000,
    bootstrap: int = 200,
    bandwidth: float = BANDWIDTH,
) -> list[MembershipResult]:
    """Distance and DOMIAS scores, each evaluated on equal numbers of members and non-members."""
    m = min(len(train), len(holdout) // 2, max_targets)
    if m < 10:
        raise EvaluationInputError(
            f"membership inference needs at least 20 holdout records and 10 training records; "
            f"got {len(holdout)} and {len(train)}"
        )
    order = rng.permutation(len(holdout))
    non_members = holdout.take(order[:m])
    reference = holdout.take(order[m : m + max(m, min(len(holdout) - m, 4 * m))])
    members = train.take(rng.choice(len(train), size=m, replace=False))
    labels = np.concatenate([np.ones(m, dtype=bool), np.zeros(m, dtype=bool)])
    synthetic = GowerIndex(release)
    candidates = [members, non_members]
    distance = -np.concatenate([synthetic.nearest(t) for t in candidates]).astype(float)
    bandwidth = bandwidth * synthetic.unit  # in shares of one column's full mismatch
    log_release = np.concatenate([_log_density(synthetic, t, bandwidth) for t in candidates])
    ref_index = GowerIndex(reference)
    log_reference = np.concatenate([_log_density(ref_index, t, bandwidth) for t in candidates])
    ratio = log_release - log_reference
    return [
        _evaluate("membership: distance to closest record", distance, labels, rng, bootstrap),
        _evaluate("membership: density ratio (DOMIAS)", ratio, labels, rng, bootstrap),
    ]


def _log_density(index: GowerIndex, queries: Table, bandwidth: float) -> np.ndarray:
    """log of the mean of exp(-distance / bandwidth) over the index's rows (a Gower kernel)."""
    codes = index.encode(queries.matrix(index.columns))
    out = np.empty(len(codes))
    step = max(1, (1 << 21) // max(index.block, 1))
    for q0 in range(0, len(codes), step):
        chunk = codes[q0 : q0 + step]
        total = np.full(len(chunk), -np.inf)
        for r0 in range(0, index.size, index.block):
            d = (
                -index.distances(chunk, r0, min(r0 + index.block, index.size)).astype(float)
                / bandwidth
            )
            top = d.max(axis=1)
            block = top + np.log(np.exp(d - top[:, None]).sum(axis=1))
            total = np.logaddexp(total, block)
        out[q0 : q0 + step] = total - np.log(index.size)
    return out


def auc_score(scores: np.ndarray, labels: np.ndarray) -> float:
    """Area under the ROC curve (ties count one half), from ranks."""
    ranks = stats.rankdata(scores)
    positives = int(labels.sum())
    negatives = len(labels) - positives
    return float((ranks[labels].sum() - positives * (positives + 1) / 2) / (positives * negatives))


def delong_standard_error(scores: np.ndarray, labels: np.ndarray) -> float:
    """The AUC's standard error by DeLong et al. (1988), ties counting one half.

    Each positive's structural component is the share of negatives it outranks, each
    negative's the share of positives that outrank it; the AUC's variance is the sum of their
    variances over the two sample sizes.

    Two samples alike give about the null value sqrt((m + n + 1) / 12mn), 0.058 here:

    >>> labels = np.array([True] * 50 + [False] * 50)
    >>> round(delong_standard_error(np.r_[np.arange(50.0), np.arange(50.0)], labels), 4)
    0.0583
    """
    positives, negatives = scores[labels], scores[~labels]
    everything = stats.rankdata(scores)
    above = (everything[labels] - stats.rankdata(positives)) / len(negatives)
    below = 1 - (everything[~labels] - stats.rankdata(negatives)) / len(positives)
    variance = above.var(ddof=1) / len(positives) + below.var(ddof=1) / len(negatives)
    return float(np.sqrt(variance))


def tpr_at_fpr(scores: np.ndarray, labels: np.ndarray, fpr: float = TARGET_FPR) -> float:
    """The true-positive rate at false-positive rate ``fpr`` on the ROC curve.

    Tied scores make the curve jump; between its points the rate is interpolated (a
    randomised threshold), so ties never hide an attack's power or inflate it.
    """
    order = np.argsort(-scores, kind="stable")
    ranked, positive = scores[order], labels[order]
    last = np.r_[np.flatnonzero(np.diff(ranked) != 0), len(ranked) - 1]
    tp = np.r_[0, np.cumsum(positive)[last]]
    fp = np.r_[0, np.cumsum(~positive)[last]]
    return float(np.interp(fpr, fp / max(fp[-1], 1), tp / max(tp[-1], 1)))


def _evaluate(
    name: str, scores: np.ndarray, labels: np.ndarray, rng: np.random.Generator, bootstrap: int
) -> MembershipResult:
    pos, neg = np.flatnonzero(labels), np.flatnonzero(~labels)
    tprs = []
    for _ in range(bootstrap):
        rows = np.concatenate([rng.choice(pos, len(pos)), rng.choice(neg, len(neg))])
        tprs.append(tpr_at_fpr(scores[rows], labels[rows]))
    return MembershipResult(
        name,
        auc_score(scores, labels),
        delong_standard_error(scores, labels),
        tpr_at_fpr(scores, labels),
        (float(np.quantile(tprs, 0.025)), float(np.quantile(tprs, 0.975))),
        len(pos),
        len(neg),
    )
