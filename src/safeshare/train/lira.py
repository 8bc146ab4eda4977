"""LiRA, the likelihood-ratio membership attack (Carlini et al. 2022, "Membership Inference
Attacks From First Principles"), against a training procedure, with shadow models.

A *target* model is trained on a random half of a data pool; ``shadows`` more models are
trained at the same settings on other random halves, each record falling in exactly half
of them.  Every model scores every record by its logit-scaled confidence in the true
class, ``phi = log(p / (1 - p))``, which is close to Gaussian over training runs.  Per
record, the shadows give a Gaussian for "trained on" (IN) and one for "not trained on"
(OUT); the target's confidence is then scored

* online: ``log N(phi; mu_in, s_in) - log N(phi; mu_out, s_out)`` (a likelihood ratio);
* offline (OUT shadows only): ``log P[Z <= phi]`` for ``Z ~ N(mu_out, s_out)``.

With few shadows the variances are pooled over all records (the paper's "global
variance", better below ~64 shadows).  The records of the target's half are the
members; AUC and TPR at low FPR (Wilson intervals) come from
:mod:`safeshare.train.membership`.

>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> shadow_in = balanced_membership(4, 6, rng)
>>> shadow_in.sum(axis=0).tolist()  # each record in exactly half of the shadows
[2, 2, 2, 2, 2, 2]
>>> phi = np.where(shadow_in, 3.0, 0.0) + rng.normal(0, 0.1, (4, 6))
>>> scores = lira_scores(np.array([3.0, 0.0, 3.0, 0.0, 3.0, 0.0]), phi, shadow_in)
>>> bool((scores[::2] > 0).all()), bool((scores[1::2] < 0).all())
(True, True)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from safeshare.data import Table
from safeshare.errors import InputError, SchemaError
from safeshare.train.membership import LOW_FPRS, MembershipAttack, auc_of, tpr_at

if TYPE_CHECKING:
    from safeshare.train.tabular import TabularModel

_MIN_STD = 1e-3  # a floor on the Gaussians' standard deviations (confidences can tie)


def logit_confidence(logits: Any, labels: Any) -> np.ndarray:
    """``log(p_y / (1 - p_y))`` of the true class y, computed stably from the logits.

    >>> import numpy as np
    >>> logit_confidence(np.array([[2.0, 0.0], [0.0, 0.0]]), np.array([0, 1])).round(3).tolist()
    [2.0, 0.0]
    """
    values = np.asarray(logits, dtype=np.float64)
    labels = np.asarray(labels, dtype=np.int64)
    rows = np.arange(values.shape[0])
    true = values[rows, labels]
    others = values.copy()
    others[rows, labels] = -np.inf
    top = others.max(axis=1, keepdims=True)
    rest = top[:, 0] + np.log(np.exp(others - top).sum(axis=1))
    return np.asarray(true - rest, dtype=np.float64)


def balanced_membership(models: int, records: int, rng: np.random.Generator) -> np.ndarray:
    """``(models, records)`` booleans: each record IN exactly ``models / 2`` models."""
    if models < 2 or models % 2:
        raise InputError(f"the number of shadow models must be even and >= 2, got {models!r}")
    ranks = np.argsort(rng.random((models, records)), axis=0)
    return np.asarray(ranks < models // 2)


def _gaussian_log_pdf(x: np.ndarray, mean: np.ndarray, std: np.ndarray) -> np.ndarray:
    z = (x - mean) / std
    return np.asarray(-0.5 * z * z - np.log(std), dtype=np.float64)


def lira_scores(
    target_phi: np.ndarray,
    shadow_phi: np.ndarray,
    shadow_in: np.ndarray,
    *,
    online: bool = True,
    global_variance: bool = True,
) -> np.ndarray:
    """One score per record (higher = more likely a member) from the shadows' confidences.

    ``shadow_phi`` and ``shadow_in`` are ``(shadows, records)``; every record needs at
    least one OUT shadow (and, online, one IN shadow).
    """
    from scipy.stats import norm

    phi = np.asarray(shadow_phi, dtype=np.float64)
    member = np.asarray(shadow_in, dtype=bool)
    if phi.shape != member.shape or phi.shape[1:] != np.shape(target_phi):
        raise InputError("shadow confidences, shadow membership and the target's must align")
    n_in, n_out = member.sum(axis=0), (~member).sum(axis=0)
    if (n_out == 0).any() or (online and (n_in == 0).any()):
        raise InputError("every record needs IN and OUT shadow models; use balanced_membership")
    mean_out = np.where(~member, phi, 0.0).sum(axis=0) / n_out
    std_out = _spread(phi, member, ~member, mean_out, global_variance)
    if not online:
        return np.asarray(norm.logcdf(target_phi, mean_out, std_out), dtype=np.float64)
    mean_in = np.where(member, phi, 0.0).sum(axis=0) / np.maximum(n_in, 1)
    std_in = _spread(phi, member, member, mean_in, global_variance)
    return _gaussian_log_pdf(target_phi, mean_in, std_in) - _gaussian_log_pdf(
        target_phi, mean_out, std_out
    )


def _spread(
    phi: np.ndarray, member: np.ndarray, side: np.ndarray, mean: np.ndarray, pooled: bool
) -> np.ndarray:
    """Standard deviations of ``phi`` on one side (IN or OUT), per record or pooled."""
    deviations = np.where(side, phi - mean, 0.0) ** 2
    counts = side.sum(axis=0)
    if pooled or (counts < 2).any():
        std = np.sqrt(deviations.sum() / max(int(counts.sum()) - int((counts > 0).sum()), 1))
        return np.full(mean.shape, max(float(std), _MIN_STD))
    return np.asarray(np.maximum(np.sqrt(deviations.sum(axis=0) / (counts - 1)), _MIN_STD))


@dataclass(frozen=True)
class LiRAAudit:
    """A LiRA attack's result: the membership metrics and how it was run."""

    membership: MembershipAttack
    shadows: int
    online: bool
    claimed_epsilon: float | None

    def readings(self) -> list[str]:
        """Plain sentences: the AUC and the TPR at each low FPR."""
        kind = "online" if self.online else "offline"
        claim = (
            "the model claims no DP guarantee"
            if self.claimed_epsilon is None
            else f"claimed epsilon={self.claimed_epsilon:.4g}"
        )
        return [
            f"LiRA ({kind}, {self.shadows} shadow models; {claim}): AUC "
            f"{self.membership.auc:.3f} (0.5 = guessing)",
            *self.membership.readings(),
        ]

    def describe(self) -> dict[str, Any]:
        """JSON-ready fields (aggregates only: no record, no single record's score)."""
        membership = self.membership.describe()
        membership["attack"] = f"LiRA ({'online' if self.online else 'offline'})"
        return {
            "method": "LiRA (Carlini et al. 2022), shadow models on random halves of the data",
            "shadows": self.shadows,
            "variance": "global (pooled over records)",
            "claimed_epsilon": self.claimed_epsilon,
            "membership": membership,
            "readings": self.readings(),
        }


def lira_audit(
    table: Table,
    target: str,
    train: Callable[[Table], TabularModel],
    *,
    shadows: int = 8,
    online: bool = True,
    fprs: Sequence[float] = LOW_FPRS,
    rng: np.random.Generator,
    progress: Callable[[str, float], None] | None = None,
) -> LiRAAudit:
    """Attack the procedure ``train`` (Table -> model) with LiRA on the records of ``table``.

    The target model is trained on a random half of ``table`` (its members); each of
    ``shadows`` models (even) on a random half in which every record is IN exactly half the
    time.  Only false-positive rates the non-members can resolve (at least one) are kept.
    """
    run = _shadow_run(table, target, train, shadows, rng, progress)
    return run.audit(online, fprs)


def lira_audit_both(
    table: Table,
    target: str,
    train: Callable[[Table], TabularModel],
    *,
    shadows: int = 8,
    fprs: Sequence[float] = LOW_FPRS,
    rng: np.random.Generator,
    progress: Callable[[str, float], None] | None = None,
) -> tuple[LiRAAudit, LiRAAudit]:
    """The online and the offline attack (in that order) from one target and one set of
    shadow models: :func:`lira_audit`'s training, done once."""
    run = _shadow_run(table, target, train, shadows, rng, progress)
    return run.audit(True, fprs), run.audit(False, fprs)


@dataclass(frozen=True)
class _ShadowRun:
    """Every model's confidences: the shadows' (and who was IN), the target's."""

    phi: np.ndarray
    shadow_in: np.ndarray
    victim_phi: np.ndarray
    target_in: np.ndarray
    claimed: float | None

    def audit(self, online: bool, fprs: Sequence[float]) -> LiRAAudit:
        scores = lira_scores(self.victim_phi, self.phi, self.shadow_in, online=online)
        members, nonmembers = scores[self.target_in], scores[~self.target_in]
        kept = tuple(f for f in fprs if f * nonmembers.size >= 1)
        return LiRAAudit(
            membership=MembershipAttack(
                auc=auc_of(members, nonmembers),
                tpr_at_fpr={f: tpr_at(members, nonmembers, f) for f in kept},
                members=members.size,
                nonmembers=nonmembers.size,
            ),
            shadows=int(self.phi.shape[0]),
            online=online,
            claimed_epsilon=self.claimed,
        )


def _shadow_run(
    table: Table,
    target: str,
    train: Callable[[Table], TabularModel],
    shadows: int,
    rng: np.random.Generator,
    progress: Callable[[str, float], None] | None,
) -> _ShadowRun:
    """Train the shadows and the target; every model scores every record."""
    if target not in table.columns:
        raise SchemaError(f"target column {target!r} is not in the table; columns: {table.columns}")
    if len(table) < 20:
        raise InputError(f"LiRA needs at least 20 records to split in halves; got {len(table)}")
    shadow_in = balanced_membership(shadows, len(table), rng)
    target_in = np.zeros(len(table), dtype=bool)
    target_in[rng.permutation(len(table))[: len(table) // 2]] = True
    labels = table.column(target)
    phi = np.empty((shadows, len(table)))
    for index in range(shadows):
        if progress is not None:
            progress("LiRA shadow models", index / (shadows + 1))
        model = train(table.take(np.flatnonzero(shadow_in[index])))
        phi[index] = logit_confidence(model.logits(table), labels)
    victim = train(table.take(np.flatnonzero(target_in)))
    if progress is not None:
        progress("LiRA shadow models", 1.0)
    claimed = victim.card.get("privacy", {}).get("epsilon")
    return _ShadowRun(
        phi,
        shadow_in,
        logit_confidence(victim.logits(table), labels),
        target_in,
        None if claimed is None else float(claimed),
    )
