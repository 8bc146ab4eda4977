"""PE's GDP accounting: published noise multipliers, dp-accounting's PLD, and round trips."""

from __future__ import annotations

import math

import pytest
from dp_accounting import dp_event, pld

from safeshare.dp.accountant import Accountant
from safeshare.dp.gdp import gdp_delta, gdp_epsilon, gdp_mu
from safeshare.errors import BudgetError
from safeshare.synth.pe.accounting import histogram_events, noise_from_rho, noise_multiplier

# Aug-PE (Xie et al., ICML 2024), Yelp: delta = 1 / (N log N) with N = 1,939,290 training
# reviews, T = 10 iterations; the noise multipliers the issue pins for epsilon 1, 2, 4.
YELP_N = 1_939_290
YELP_DELTA = 1 / (YELP_N * math.log(YELP_N))
PUBLISHED = {1.0: 15.40, 2.0: 8.04, 4.0: 4.25}


@pytest.mark.parametrize(("epsilon", "sigma"), sorted(PUBLISHED.items()))
def test_aug_pe_yelp_noise_multipliers(epsilon: float, sigma: float) -> None:
    assert noise_multiplier(epsilon, YELP_DELTA, 10) == pytest.approx(sigma, abs=0.005)


def test_calibrated_sigma_meets_epsilon_exactly() -> None:
    sigma = noise_multiplier(1.0, YELP_DELTA, 10)
    assert gdp_epsilon(math.sqrt(10) / sigma, YELP_DELTA) == pytest.approx(1.0, rel=1e-9)
    # a little less noise spends more than the budget
    assert gdp_epsilon(math.sqrt(10) / (sigma * 0.999), YELP_DELTA) > 1.0


def _pld_epsilon(sigma: float, iterations: int, delta: float) -> float:
    accountant = pld.PLDAccountant(value_discretization_interval=1e-4)
    accountant.compose(dp_event.GaussianDpEvent(sigma), iterations)
    return float(accountant.get_epsilon(delta))


@pytest.mark.parametrize(
    ("sigma", "iterations", "delta"),
    [(15.40, 10, YELP_DELTA), (4.25, 10, YELP_DELTA), (3.0, 1, 1e-5), (20.0, 25, 1e-9)],
)
def test_against_dp_accounting_pld(sigma: float, iterations: int, delta: float) -> None:
    exact = gdp_epsilon(math.sqrt(iterations) / sigma, delta)
    pessimistic = _pld_epsilon(sigma, iterations, delta)  # PLD rounds up: never below exact
    assert exact <= pessimistic + 1e-9
    assert pessimistic == pytest.approx(exact, rel=2e-3)


def test_round_trips() -> None:
    for mu in (0.05, 0.3, 1.0, 3.0):
        for delta in (1e-9, 1e-5, 0.01):
            epsilon = gdp_epsilon(mu, delta)
            if epsilon > 0:
                assert gdp_delta(epsilon, mu) == pytest.approx(delta, rel=1e-8)
                assert gdp_mu(epsilon, delta) == pytest.approx(mu, rel=1e-8)


def test_events_compose_to_mu_squared_over_two() -> None:
    sigma, iterations = 8.04, 10
    events = histogram_events(sigma, iterations)
    mu = math.sqrt(iterations) / sigma
    assert Accountant(events).rho == pytest.approx(mu**2 / 2)
    # the project's accountant converts through RDP, which is looser than the exact GDP curve
    assert Accountant(events).epsilon(YELP_DELTA) > gdp_epsilon(mu, YELP_DELTA)


def test_rho_share_noise() -> None:
    sigma = noise_from_rho(0.01497, 10)
    assert Accountant(histogram_events(sigma, 10)).rho == pytest.approx(0.01497)


@pytest.mark.parametrize(
    "call",
    [
        lambda: noise_multiplier(0.0, 1e-9, 10),
        lambda: noise_multiplier(1.0, 0.0, 10),
        lambda: noise_multiplier(1.0, 1.0, 10),
        lambda: noise_multiplier(1.0, 1e-9, 0),
        lambda: noise_from_rho(-1.0, 3),
        lambda: gdp_delta(-1.0, 1.0),
        lambda: histogram_events(float("nan"), 3),
    ],
)
def test_bad_budgets_are_refused(call) -> None:
    with pytest.raises(BudgetError):
        call()
