"""Conversions and composition, checked against dp-accounting and closed forms."""

import math

import pytest
from dp_accounting import dp_event
from dp_accounting.pld import PLDAccountant
from dp_accounting.rdp import RdpAccountant

from safeshare.dp import (
    Accountant,
    ComposedEvent,
    ExponentialEvent,
    GaussianEvent,
    PrivacyBudget,
    ThresholdedGaussianEvent,
    ZCDPEvent,
    epsilon_from_rho,
    rho_from_epsilon,
)
from safeshare.errors import BudgetError, BudgetExceededError

POINTS = [(0.001, 1e-9), (0.0149, 1e-9), (0.1, 1e-6), (0.5, 1e-5), (2.0, 1e-3)]


@pytest.mark.parametrize(("rho", "delta"), POINTS)
def test_conversion_against_dp_accounting(rho, delta):
    ours = epsilon_from_rho(rho, delta)
    # dp-accounting's own RDP accountant on its default orders: ours uses a denser grid, so <=
    default = RdpAccountant()
    default.compose(dp_event.ZCDpEvent(rho))
    assert ours <= default.get_epsilon(delta) + 1e-9
    assert ours >= 0.98 * default.get_epsilon(delta)
    # the simple bound of Bun & Steinke (2016) is looser
    assert ours <= rho + 2 * math.sqrt(rho * math.log(1 / delta))
    # a Gaussian with the same rho: the exact PLD epsilon can only be smaller
    pld = PLDAccountant()
    pld.compose(dp_event.GaussianDpEvent(1 / math.sqrt(2 * rho)))
    assert pld.get_epsilon(delta) <= ours + 1e-6


@pytest.mark.parametrize(
    ("epsilon", "delta"), [(0.1, 1e-9), (1.0, 1e-9), (3.0, 1e-6), (10.0, 1e-5)]
)
def test_rho_round_trip(epsilon, delta):
    rho = rho_from_epsilon(epsilon, delta)
    assert epsilon_from_rho(rho, delta) <= epsilon
    assert epsilon_from_rho(rho * 1.000001, delta) > epsilon * (1 - 1e-6)


def test_events_know_their_cost():
    assert GaussianEvent(10.0).rho == pytest.approx(0.005)
    assert GaussianEvent(10.0, l2_sensitivity=2.0).rho == pytest.approx(0.02)
    assert ExponentialEvent(0.4).rho == pytest.approx(0.02)
    threshold = ThresholdedGaussianEvent(5.0, 1.0, "t", threshold=40, tail=1e-10)
    assert threshold.rho == pytest.approx(0.02) and threshold.delta == 1e-10
    both = ComposedEvent((GaussianEvent(10.0), ExponentialEvent(0.4)), "both")
    assert both.rho == pytest.approx(0.025)
    with pytest.raises(BudgetError):
        GaussianEvent(0.0)
    with pytest.raises(BudgetError):
        ExponentialEvent(-1.0)


def test_accountant_composes_through_dp_accounting():
    events = [
        GaussianEvent(10.0, label="a"),
        ExponentialEvent(0.2, label="b"),
        GaussianEvent(20.0, label="c"),
    ]
    accountant = Accountant(events)
    assert accountant.rho == pytest.approx(0.005 + 0.005 + 0.00125)
    assert accountant.epsilon(1e-9) == pytest.approx(
        epsilon_from_rho(accountant.rho, 1e-9), rel=1e-9
    )
    items = accountant.itemize(1.0)
    assert [i["step"] for i in items] == ["a", "b", "c"]
    assert math.fsum(i["epsilon_share"] for i in items) == pytest.approx(1.0)
    assert Accountant().epsilon(1e-9) == 0.0


def test_threshold_delta_comes_out_of_the_budget():
    event = ThresholdedGaussianEvent(10.0, 1.0, "t", threshold=60, tail=4e-10)
    accountant = Accountant([event])
    assert accountant.delta_extra == 4e-10
    assert accountant.epsilon(1e-9) == pytest.approx(epsilon_from_rho(event.rho, 6e-10))
    with pytest.raises(BudgetError, match="does not cover"):
        accountant.epsilon(3e-10)


def test_check_within_budget():
    budget = PrivacyBudget(1.0, 1e-9)
    rho = budget.rho()
    assert Accountant([GaussianEvent(1 / math.sqrt(2 * rho))]).check_within(budget) <= 1.0
    with pytest.raises(BudgetExceededError, match="more than the budget"):
        Accountant([GaussianEvent(1 / math.sqrt(2 * rho * 1.1))]).check_within(budget)


@pytest.mark.parametrize(
    ("epsilon", "delta", "message"),
    [
        (0, 1e-9, "epsilon must be a positive"),
        (-1, 1e-9, "epsilon"),
        (float("nan"), 1e-9, "epsilon"),
        (1, 0, "delta must lie"),
        (1, 1, "delta must lie"),
        (1, -0.1, "delta"),
    ],
)
def test_invalid_budgets(epsilon, delta, message):
    with pytest.raises(BudgetError, match=message):
        PrivacyBudget(epsilon, delta)


GAUSSIAN_STEPS = [
    GaussianEvent(4.0, label="1-way"),
    GaussianEvent(6.0, l2_sensitivity=2.0, label="2-way"),
    ComposedEvent((GaussianEvent(9.0), GaussianEvent(12.0)), "two more"),
]


@pytest.mark.parametrize("delta", [1e-9, 1e-6, 1e-3])
def test_the_three_accountings_agree_where_each_is_exact(delta):
    from safeshare.dp.gdp import gdp_epsilon

    # Gaussian steps: GDP is exact, PLD matches it to its discretization, RDP is looser
    mu = math.sqrt(sum((l2 / s) ** 2 for s, l2 in [(4, 1), (6, 2), (9, 1), (12, 1)]))
    gdp = Accountant(GAUSSIAN_STEPS, "gdp").epsilon(delta)
    assert gdp == pytest.approx(gdp_epsilon(mu, delta), rel=1e-9)
    assert Accountant(GAUSSIAN_STEPS, "gdp").gdp_mu() == pytest.approx(mu)
    pld = Accountant(GAUSSIAN_STEPS, "pld").epsilon(delta)
    assert pld == pytest.approx(gdp, abs=2e-3)
    assert gdp < Accountant(GAUSSIAN_STEPS, "rdp").epsilon(delta)


def test_dp_sgd_composes_with_the_other_steps_under_pld_and_rdp():
    from safeshare.train.accounting import DPSGDEvent, dpsgd_epsilon

    sgd = DPSGDEvent(1.0, 256 / 50_000, 196)
    for accounting in ("pld", "rdp"):
        alone = Accountant([sgd], accounting).epsilon(1e-5)
        assert alone == pytest.approx(
            dpsgd_epsilon(1.0, 256 / 50_000, 196, 1e-5, accountant=accounting)
        )
        discovery = GaussianEvent(30.0, label="discovery")
        both = Accountant([discovery, sgd], accounting).epsilon(1e-5)
        sequential = Accountant([discovery], accounting).epsilon(5e-6) + dpsgd_epsilon(
            1.0, 256 / 50_000, 196, 5e-6, accountant=accounting
        )
        assert alone < both < sequential


@pytest.mark.parametrize(
    ("accounting", "event", "message"),
    [
        ("pld", ExponentialEvent(0.5, "tree edge"), "pld accounting cannot compose 'tree edge'"),
        ("pld", ZCDPEvent(0.1, "aim rounds"), "pld accounting cannot compose 'aim rounds'"),
        ("gdp", ExponentialEvent(0.5, "tree edge"), "Gaussian steps only, not 'tree edge'"),
        ("gdp", ZCDPEvent(0.1, "aim rounds"), "Gaussian steps only, not 'aim rounds'"),
    ],
)
def test_an_accounting_refuses_the_events_it_cannot_represent(accounting, event, message):
    with pytest.raises(BudgetError, match=message):
        Accountant([GaussianEvent(5.0), event], accounting).epsilon(1e-9)
    assert Accountant([GaussianEvent(5.0), event], "rdp").epsilon(1e-9) > 0


def test_gdp_refuses_a_sampled_step_and_an_unknown_accounting_is_refused():
    from safeshare.train.accounting import DPSGDEvent

    with pytest.raises(BudgetError, match="Gaussian steps only, not 'dp-sgd'"):
        Accountant([DPSGDEvent(1.0, 0.01, 10)], "gdp").epsilon(1e-5)
    with pytest.raises(BudgetError, match="accounting 'prv' is unknown"):
        Accountant([], "prv")  # type: ignore[arg-type]


@pytest.mark.parametrize("accounting", ["rdp", "pld", "gdp"])
def test_every_accounting_takes_the_thresholds_delta_first_and_keeps_its_name(accounting):
    event = ThresholdedGaussianEvent(10.0, 1.0, "t", threshold=60, tail=4e-10)
    accountant = Accountant([GaussianEvent(8.0)], accounting).compose(event)
    assert accountant.accounting == accounting
    plain = Accountant([GaussianEvent(8.0), GaussianEvent(10.0)], accounting)
    assert accountant.epsilon(1e-9) == pytest.approx(plain.epsilon(6e-10), rel=1e-9)
    with pytest.raises(BudgetError, match="does not cover"):
        accountant.epsilon(3e-10)
    assert accountant.describe()["neighbouring"] == "ADD_OR_REMOVE_ONE"
    assert accountant.describe()["accounting"] == accounting
