"""The one-run audit reproduces jax_privacy's golden values; the loss attack reads ROC right."""

import numpy as np
import pytest
from scipy.stats import binom, norm

from safeshare.errors import InputError
from safeshare.train.accounting import dpsgd_epsilon
from safeshare.train.audit import canaries_needed, one_run_audit, one_run_p_value, roc_hull
from safeshare.train.membership import loss_threshold_attack


def deterministic_normal(shift: float, n: int) -> np.ndarray:
    """Scores at the n mid-quantiles of N(shift, 1): the published test's canary scores."""
    return norm.ppf((np.arange(n) + 0.5) / n) + shift


@pytest.mark.parametrize(("shift", "expected"), [(1, 1.13346), (2, 2.31195), (4, 4.39557)])
def test_golden_values_of_the_issue(shift, expected):
    n = 10_000
    audit = one_run_audit(
        deterministic_normal(shift, n), deterministic_normal(0, n), significance=0.05, delta=1e-6
    )
    assert audit.epsilon == pytest.approx(expected, abs=1e-5)
    assert audit.canaries == 2 * n and 0 < audit.correct <= audit.guesses


def test_indistinguishable_canaries_bound_nothing():
    scores = deterministic_normal(0, 1000)
    assert one_run_audit(scores, scores).epsilon == 0.0


def test_the_bound_never_exceeds_the_true_epsilon_of_a_gaussian_mechanism():
    """Scores of a Gaussian mechanism with sigma=1/mu: the audit must stay below its epsilon."""
    rng = np.random.default_rng(7)
    for mu in (0.5, 1.0, 2.0):
        truth = dpsgd_epsilon(1.0 / mu, 1.0, 1, 1e-6)
        audit = one_run_audit(rng.normal(mu, 1, 5000), rng.normal(0, 1, 5000), delta=1e-6)
        assert 0 < audit.epsilon < truth


def test_p_value_matches_the_binomial_tail_without_delta():
    q = np.exp(1.0) / (1 + np.exp(1.0))
    assert one_run_p_value(200, 50, 40, 1.0, 0.0) == pytest.approx(binom.sf(39, 50, q))
    # the delta term only adds
    assert one_run_p_value(200, 50, 40, 1.0, 1e-3) > one_run_p_value(200, 50, 40, 1.0, 0.0)


def test_hull_keeps_only_undominated_thresholds():
    thresholds, tp, fp = roc_hull(np.array([0.0, 4, 6, 7]), np.array([1.0, 2, 3, 5]))
    # ROC points (fp, tp) on the upper hull: (4,4), (1,3), (0,2), (0,0)
    assert list(zip(fp.tolist(), tp.tolist(), strict=True)) == [(4, 4), (1, 3), (0, 2), (0, 0)]
    assert thresholds[-1] == np.inf


def test_too_few_canaries_say_how_many_are_needed():
    with pytest.raises(InputError, match=r"at least 5.*at least 20 canaries"):
        one_run_audit([1.0, 2.0, 3.0], [0.0, 0.5, 1.0])
    assert canaries_needed(1.0) == 20 and canaries_needed(4.0) > canaries_needed(1.0) / 4


@pytest.mark.parametrize("bad", [[], [np.nan, 1.0], [[1.0, 2.0]]])
def test_bad_scores_are_refused(bad):
    with pytest.raises(InputError, match="in_scores"):
        one_run_audit(bad, [0.0, 1.0])


def test_loss_attack_on_separated_losses():
    members = np.linspace(0.0, 1.0, 1000)
    nonmembers = np.linspace(2.0, 3.0, 1000)
    attack = loss_threshold_attack(members, nonmembers)
    assert attack.auc == 1.0
    assert attack.tpr_at_fpr[0.01].value == 1.0 and attack.tpr_at_fpr[0.001].value == 1.0
    assert all("better than guessing" in line and "no better" not in line
               for line in attack.readings())  # fmt: skip


def test_loss_attack_on_identical_distributions_is_chance():
    rng = np.random.default_rng(3)
    attack = loss_threshold_attack(rng.exponential(size=20_000), rng.exponential(size=20_000))
    assert attack.auc == pytest.approx(0.5, abs=0.01)
    one = attack.tpr_at_fpr[0.01]
    assert one.contains(0.01) and one.value == pytest.approx(0.01, abs=0.004)
    assert "no better than guessing" in attack.readings()[0]


def test_loss_attack_auc_matches_the_gaussian_formula():
    # member loss ~ N(0,1), non-member ~ N(1,1): AUC = Phi(1 / sqrt 2)
    attack = loss_threshold_attack(deterministic_normal(0, 4000), deterministic_normal(1, 4000))
    assert attack.auc == pytest.approx(norm.cdf(1 / np.sqrt(2)), abs=2e-3)
    assert attack.describe()["tpr_at_fpr"]["0.01"]["value"] == attack.tpr_at_fpr[0.01].value
