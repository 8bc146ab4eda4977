"""MI <-> posterior success <-> DP-equivalent epsilon, against the published table."""

import math

import pytest

from safeshare.errors import BudgetError
from safeshare.pac.bounds import (
    PACBound,
    compose,
    compose_repeated,
    dp_epsilon,
    dp_success,
    kl_bernoulli,
    mi_for_success,
    posterior_success,
    table,
)


@pytest.mark.parametrize(
    ("releases", "mi", "published"),
    [
        (1, 2**-4, 0.675),  # one release at MI 2^-4 -> 67.5%
        (10**3, 2**-12, 0.834),  # 10^3 releases at 2^-12 -> 83.4%
        (10**6, 2**-32, 0.5108),  # 10^6 releases at 2^-32 -> 51.08%
    ],
)
def test_published_posterior_success_table_prior_one_half(releases, mi, published):
    success = posterior_success(compose_repeated(mi, releases))
    decimals = len(str(published).split(".")[1])
    assert round(success, decimals) == published


def test_published_dp_equivalent_epsilon():
    success = posterior_success(compose_repeated(2**-32, 10**6))
    # the paper's formula with its rounded success rate: ln((1 - 1e-5) / (1 - 0.5108) - 1)
    assert math.log((1 - 1e-5) / (1 - 0.5108) - 1) == pytest.approx(dp_epsilon(0.5108, 1e-5))
    assert round(dp_epsilon(success, 1e-5), 4) == 0.0431


def test_table_helper_matches_one_by_one():
    rows = table([(1, 2**-4), (1000, 2**-12)])
    assert [round(r.success_rate, 3) for r in rows] == [0.675, 0.834]
    assert rows[1].releases == 1000 and rows[1].mi == pytest.approx(1000 * 2**-12)


def test_success_is_the_kl_boundary():
    for mi in (1e-6, 1e-3, 0.05, 0.3, 0.6):
        p = posterior_success(mi)
        assert kl_bernoulli(p, 0.5) == pytest.approx(mi, rel=1e-9)
        assert mi_for_success(p) == pytest.approx(mi, rel=1e-9)
    assert posterior_success(math.log(2)) == 1.0  # KL(Bern(1) || Bern(1/2)) = ln 2


def test_other_priors_and_monotonicity():
    assert posterior_success(0.01, prior=0.1) > 0.1
    assert kl_bernoulli(posterior_success(0.01, prior=0.1), 0.1) == pytest.approx(0.01)
    values = [posterior_success(m) for m in (0.001, 0.01, 0.1, 0.5)]
    assert values == sorted(values)


def test_dp_success_inverts_dp_epsilon():
    for p in (0.51, 0.6, 0.9, 0.99):
        assert dp_success(dp_epsilon(p, 1e-6), 1e-6) == pytest.approx(p, abs=1e-12)
    assert dp_epsilon(0.5, 1e-5) == 0.0
    assert dp_epsilon(1.0) == math.inf


def test_composition_adds_up():
    assert compose(0.1, 0.2, 0.3) == pytest.approx(0.6)
    bound = PACBound.of(0.01, releases=7)
    assert bound.mi == pytest.approx(0.07) and "7 release(s)" in bound.reading()
    assert bound.to_dict()["posterior_success"] == bound.success_rate


@pytest.mark.parametrize("bad", [-1, float("nan"), float("inf"), "0.1"])
def test_bad_budgets_are_refused(bad):
    with pytest.raises(BudgetError, match="positive number of nats"):
        posterior_success(bad)
    with pytest.raises(BudgetError, match="releases must be >= 0"):
        PACBound.of(0.1, releases=-1)


def test_bad_prior_and_success():
    with pytest.raises(BudgetError, match="prior"):
        posterior_success(0.1, prior=1.0)
    with pytest.raises(BudgetError, match="below the prior"):
        mi_for_success(0.4)
