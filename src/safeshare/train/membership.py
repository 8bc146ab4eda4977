"""A loss-threshold membership-inference attack on a trained model (Yeom et al. 2018).

Records the model was trained on tend to have lower loss.  Guessing "member" below a
loss threshold gives an ROC curve; what matters for privacy is the true-positive
rate at a *low* false-positive rate (Carlini et al. 2022), reported with a Wilson
interval, next to the AUC.

>>> import numpy as np
>>> attack = loss_threshold_attack(np.array([0.1, 0.2, 0.3, 0.9]), np.array([0.4, 0.5, 0.6, 0.7]))
>>> attack.auc, attack.tpr_at_fpr[0.01].value
(0.75, 0.75)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from safeshare.errors import InputError
from safeshare.evaluate.results import Proportion

LOW_FPRS: tuple[float, ...] = (0.01, 0.001)


@dataclass(frozen=True)
class MembershipAttack:
    """AUC and TPR at low FPR of a threshold attack; 0.5 and TPR = FPR mean it learned nothing."""

    auc: float
    tpr_at_fpr: dict[float, Proportion]
    members: int
    nonmembers: int

    def readings(self) -> list[str]:
        """One plain sentence per low FPR: does the attack beat guessing there?"""
        lines = []
        for fpr, tpr in self.tpr_at_fpr.items():
            low, high = tpr.interval
            verdict = "no better than guessing" if low <= fpr else "better than guessing"
            lines.append(
                f"at FPR {fpr:.1%}: TPR {tpr.value:.2%} (95% interval {low:.2%}-{high:.2%}), "
                f"{verdict}"
            )
        return lines

    def describe(self) -> dict[str, Any]:
        return {
            "attack": "loss threshold",
            "auc": self.auc,
            "members": self.members,
            "nonmembers": self.nonmembers,
            "tpr_at_fpr": {
                str(fpr): {"value": p.value, "interval": list(p.interval)}
                for fpr, p in self.tpr_at_fpr.items()
            },
        }


def _losses(values: Any, name: str) -> np.ndarray:
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1 or array.size == 0:
        raise InputError(f"{name} must be a non-empty 1-d array of losses, got shape {array.shape}")
    if not np.all(np.isfinite(array)):
        raise InputError(f"{name} contains NaN or infinite losses")
    return array


def auc_of(member_scores: np.ndarray, nonmember_scores: np.ndarray) -> float:
    """P(member score > non-member score) + P(tie) / 2 (the Mann-Whitney AUC)."""
    pooled = np.concatenate([member_scores, nonmember_scores])
    from scipy.stats import rankdata

    ranks = rankdata(pooled)
    n_in, n_out = member_scores.size, nonmember_scores.size
    wins = ranks[:n_in].sum() - n_in * (n_in + 1) / 2
    return float(wins / (n_in * n_out))


def tpr_at(member_scores: np.ndarray, nonmember_scores: np.ndarray, fpr: float) -> Proportion:
    """The best TPR of a rule "score >= t" whose false positives are at most ``fpr`` of non-members."""
    allowed = int(np.floor(fpr * nonmember_scores.size + 1e-9))
    ranked = np.sort(nonmember_scores)[::-1]
    # the threshold must sit strictly above the (allowed + 1)-th highest non-member score
    bar = ranked[allowed] if allowed < ranked.size else -np.inf
    hits = int(np.count_nonzero(member_scores > bar))
    return Proportion.of(hits, member_scores.size)


def loss_threshold_attack(
    member_losses: Any, nonmember_losses: Any, *, fprs: Sequence[float] = LOW_FPRS
) -> MembershipAttack:
    """Attack with per-record losses of training records (members) and unseen ones."""
    members = -_losses(member_losses, "member_losses")
    nonmembers = -_losses(nonmember_losses, "nonmember_losses")
    for fpr in fprs:
        if not 0 < fpr < 1:
            raise InputError(f"false-positive rate {fpr!r} must lie in (0, 1); try 0.01")
    return MembershipAttack(
        auc=auc_of(members, nonmembers),
        tpr_at_fpr={fpr: tpr_at(members, nonmembers, fpr) for fpr in fprs},
        members=members.size,
        nonmembers=nonmembers.size,
    )
