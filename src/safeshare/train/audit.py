"""The one-run privacy audit (Steinke, Nasr & Jagielski 2023): canary guesses -> epsilon lower bound.

``m`` canaries are each put into the training data or left out; after training an
attack scores every canary (higher = "looks trained on").  Guessing "in" for the
canaries scoring at least a threshold, ``r`` guesses of which ``v`` are right,
falsifies an (epsilon, delta)-DP claim at significance ``alpha`` when the paper's
p-value (Theorem 5.2 with its delta term) is at most ``alpha``:

    p = P[Binom(r, e^eps / (1 + e^eps)) >= v]
        + 2 m delta * max_i P[v - i <= Binom(r, ...) < v] / i

The audit reports the largest epsilon so falsified, over the thresholds on the upper
convex hull of the ROC counts, with a Bonferroni correction over those thresholds.
It is a *lower* bound: a DP model must never audit above its claimed epsilon.

>>> import numpy as np
>>> from scipy.stats import norm
>>> out = norm.ppf((np.arange(1000) + 0.5) / 1000)
>>> audit = one_run_audit(out + 4.0, out, significance=0.05, delta=1e-6)
>>> round(audit.epsilon, 2), audit.canaries
(4.75, 2000)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from safeshare.errors import InputError


@dataclass(frozen=True)
class OneRunAudit:
    """The result of a one-run audit: an empirical epsilon lower bound and how it was found."""

    epsilon: float
    significance: float
    delta: float
    canaries: int
    guesses: int
    correct: int
    threshold: float
    thresholds_tested: int

    def describe(self) -> dict[str, Any]:
        """JSON-ready fields for a card or report."""
        return {
            "method": "one-run audit (Steinke, Nasr & Jagielski 2023)",
            "epsilon_lower_bound": self.epsilon,
            "significance": self.significance,
            "delta": self.delta,
            "canaries": self.canaries,
            "guesses": self.guesses,
            "correct": self.correct,
            # no guess at all: +inf, which JSON cannot hold
            "threshold": self.threshold if math.isfinite(self.threshold) else None,
            "thresholds_tested": self.thresholds_tested,
        }


def _scores(values: Any, name: str) -> np.ndarray:
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1 or array.size == 0:
        raise InputError(f"{name} must be a non-empty 1-d array of scores, got shape {array.shape}")
    if not np.all(np.isfinite(array)):
        raise InputError(f"{name} contains NaN or infinite scores; score every canary")
    return array


def roc_hull(in_scores: np.ndarray, out_scores: np.ndarray) -> tuple[np.ndarray, ...]:
    """Thresholds on the upper convex hull of the ROC, with true and false positives at each.

    A threshold t guesses "in" for scores >= t.  Thresholds run over the distinct
    scores and +inf (no guess); points strictly below the hull (or on a straight
    edge of it) are dominated by a mix of their neighbours and are dropped.
    """
    thresholds = np.concatenate([np.union1d(in_scores, out_scores), [np.inf]])
    false_neg = np.searchsorted(np.sort(in_scores), thresholds, side="left")
    true_neg = np.searchsorted(np.sort(out_scores), thresholds, side="left")
    keep: list[int] = []
    for index in range(len(thresholds)):
        while len(keep) >= 2:
            a, b = keep[-2], keep[-1]
            cross = (false_neg[b] - false_neg[a]) * (true_neg[index] - true_neg[a]) - (
                true_neg[b] - true_neg[a]
            ) * (false_neg[index] - false_neg[a])
            if cross < 0:
                break
            keep.pop()
        keep.append(index)
    chosen = np.array(keep)
    true_pos = len(in_scores) - false_neg[chosen]
    false_pos = len(out_scores) - true_neg[chosen]
    return thresholds[chosen], true_pos, false_pos


def one_run_p_value(
    canaries: int, guesses: int, correct: int, epsilon: float, delta: float
) -> float:
    """The p-value of ``correct`` right guesses out of ``guesses`` under an (epsilon, delta) claim.

    >>> round(one_run_p_value(1000, 100, 100, 2.0, 0.0), 6)  # 100 of 100 right at eps=2
    3e-06
    """
    from scipy.stats import binom

    q = 1.0 / (1.0 + math.exp(-epsilon))
    beta = float(binom.sf(correct - 1, guesses, q))
    if delta == 0 or correct == 0:
        return beta
    shifts = np.arange(1, correct + 1)
    between = binom.sf(correct - shifts - 1, guesses, q) - beta
    alpha = float(np.max(between / shifts))
    return min(beta + 2 * canaries * delta * alpha, 1.0)


def _largest_falsified(
    floor: float, canaries: int, guesses: int, correct: int, significance: float, delta: float
) -> float:
    """The largest epsilon whose claim these guesses falsify, or ``floor`` if none above it."""
    from scipy.optimize import brentq

    def margin(epsilon: float) -> float:
        return significance - one_run_p_value(canaries, guesses, correct, epsilon, delta)

    if one_run_p_value(canaries, guesses, correct, floor, 0.0) > significance or margin(floor) <= 0:
        return floor
    low, high = floor, max(1.0, 2 * floor)
    while margin(high) > 0:
        low, high = high, 2 * high
    return float(brentq(margin, low, high, xtol=1e-7))


def one_run_audit(
    in_scores: Any, out_scores: Any, *, significance: float = 0.05, delta: float = 1e-6
) -> OneRunAudit:
    """An epsilon lower bound from attack scores of canaries trained on (in) and left out (out).

    Higher scores must mean "more likely trained on" (negate a loss).  Holds with
    probability at least ``1 - significance``; ``delta`` is the claim's delta.
    """
    inside = _scores(in_scores, "in_scores")
    outside = _scores(out_scores, "out_scores")
    if not 0 < significance < 1:
        raise InputError(f"significance must lie in (0, 1), got {significance!r}; try 0.05")
    if not 0 <= delta < 1:
        raise InputError(f"delta must lie in [0, 1), got {delta!r}")
    if 0.5**inside.size > significance:
        raise InputError(
            f"{inside.size} canaries trained on cannot bound anything at significance "
            f"{significance:g}: even perfect guesses need at least "
            f"{math.ceil(math.log(significance) / math.log(0.5))}; to show epsilon=1, use at "
            f"least {canaries_needed(1.0, significance=significance)} canaries (half in)"
        )
    thresholds, true_pos, false_pos = roc_hull(inside, outside)
    canaries = inside.size + outside.size
    level = significance / len(thresholds)  # Bonferroni over the thresholds tried
    guesses = true_pos + false_pos
    order = np.argsort(-(true_pos / np.maximum(guesses, 1)), kind="stable")
    best, best_index = 0.0, -1
    for index in order:
        r, v = int(guesses[index]), int(true_pos[index])
        if r == 0 or v / r <= 1.0 / (1.0 + math.exp(-best)):
            continue  # raw precision below the best bound's: cannot beat it
        found = _largest_falsified(best, canaries, r, v, level, delta)
        if found > best:
            best, best_index = found, int(index)
    return OneRunAudit(
        epsilon=best,
        significance=significance,
        delta=delta,
        canaries=canaries,
        guesses=int(guesses[best_index]) if best_index >= 0 else 0,
        correct=int(true_pos[best_index]) if best_index >= 0 else 0,
        threshold=float(thresholds[best_index]) if best_index >= 0 else math.inf,
        thresholds_tested=len(thresholds),
    )


def canaries_needed(epsilon: float, *, significance: float = 0.05) -> int:
    """The fewest canaries whose all-correct guesses could show ``epsilon`` (with delta = 0).

    With every guess right, r guesses falsify epsilon when (e^eps/(1+e^eps))^r <= alpha
    and half the canaries are in, so m = 2r canaries are needed at the very least.

    >>> canaries_needed(1.0)
    20
    """
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise InputError(f"epsilon must be a positive number, got {epsilon!r}")
    q = 1.0 / (1.0 + math.exp(-epsilon))
    return 2 * math.ceil(math.log(significance) / math.log(q))


def perfect_guess_bound(
    inserted: int, held_out: int, *, significance: float = 0.05, delta: float = 1e-6
) -> float:
    """The most a one-run audit can show with these canaries: every inserted one scored
    above every held-out one.  A leaky procedure's bound is read against this cap.

    >>> round(perfect_guess_bound(500, 500), 2)
    4.8
    """
    for name, value in (("inserted", inserted), ("held_out", held_out)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InputError(f"{name} must be a positive whole number of canaries, got {value!r}")
    return one_run_audit(
        np.ones(inserted), np.zeros(held_out), significance=significance, delta=delta
    ).epsilon


def against_claim(bound: float, claimed: float | None, *, unclaimed: str) -> str:
    """How an empirical lower bound reads against a claimed epsilon (``unclaimed``: none).

    >>> against_claim(0.4, 1.0, unclaimed="no claim")
    'consistent with the claimed epsilon=1'
    """
    if claimed is None:
        return unclaimed
    if bound <= claimed:
        return f"consistent with the claimed epsilon={claimed:.4g}"
    return (
        f"ABOVE the claimed epsilon={claimed:.4g}: the training does not deliver its guarantee "
        "(a bug); report it"
    )
