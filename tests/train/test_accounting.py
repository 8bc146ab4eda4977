"""DP-SGD accounting: the issue's golden values, calibration, the event in the project's accountant."""

import math

import pytest

from safeshare.dp import Accountant, GaussianEvent, PrivacyEvent
from safeshare.errors import BudgetError
from safeshare.train.accounting import DPSGDEvent, calibrate_noise, dpsgd_epsilon

Q = 256 / 50_000  # the classic MNIST-style setting: batch 256 of 50,000 records


@pytest.mark.parametrize(
    ("steps", "accountant", "expected"),
    [(196, "rdp", 0.9755), (1960, "rdp", 1.4762), (196, "pld", 0.4478), (1960, "pld", 1.2273)],
)
def test_golden_values_of_the_issue(steps, accountant, expected):
    epsilon = dpsgd_epsilon(1.0, Q, steps, 1e-5, accountant=accountant)
    assert round(epsilon, 4) == expected


def test_pld_is_tighter_than_rdp_and_both_grow_with_steps():
    pld = [dpsgd_epsilon(1.0, Q, t, 1e-5) for t in (50, 196, 1960)]
    rdp = [dpsgd_epsilon(1.0, Q, t, 1e-5, accountant="rdp") for t in (50, 196, 1960)]
    assert pld == sorted(pld) and rdp == sorted(rdp)
    assert all(p < r for p, r in zip(pld, rdp, strict=True))


def test_pld_agrees_with_opacus_prv_accountant():
    """Cross-check with an independent implementation (Opacus's PRV accountant)."""
    accountants = pytest.importorskip("opacus.accountants")
    for steps in (196, 1960):
        prv = accountants.PRVAccountant()
        prv.history = [(1.0, Q, steps)]
        assert prv.get_epsilon(1e-5) == pytest.approx(dpsgd_epsilon(1.0, Q, steps, 1e-5), rel=0.03)


def test_full_batch_is_the_plain_gaussian_mechanism():
    composed = dpsgd_epsilon(4.0, 1.0, 4, 1e-5)
    single = dpsgd_epsilon(2.0, 1.0, 1, 1e-5)  # 4 steps at sigma 4 = one step at sigma 2
    assert composed == pytest.approx(single, rel=1e-3)


@pytest.mark.parametrize("accountant", ["rdp", "pld", "prv"])
def test_calibration_meets_the_budget_and_is_tight(accountant):
    sigma = calibrate_noise(1.0, 1e-5, Q, 1960, accountant=accountant, tolerance=1e-3)
    assert dpsgd_epsilon(sigma, Q, 1960, 1e-5, accountant=accountant) <= 1.0
    # 0.2% less noise already overspends: the answer is within the tolerance of the optimum
    assert dpsgd_epsilon(sigma / 1.002, Q, 1960, 1e-5, accountant=accountant) > 0.998


def test_calibration_of_the_golden_point_recovers_sigma_one():
    sigma = calibrate_noise(1.4762, 1e-5, Q, 1960, accountant="rdp", tolerance=1e-4)
    assert sigma == pytest.approx(1.0, abs=2e-3)


def test_unreachable_epsilon_says_what_to_change():
    with pytest.raises(BudgetError, match=r"cannot be reached.*fewer steps"):
        calibrate_noise(1e-3, 1e-5, 1.0, 100_000, accountant="rdp")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((0.0, Q, 10, 1e-5), "noise multiplier"),
        ((1.0, 0.0, 10, 1e-5), "sampling rate"),
        ((1.0, 1.5, 10, 1e-5), "sampling rate"),
        ((1.0, Q, 0, 1e-5), "steps"),
        ((1.0, Q, 2.5, 1e-5), "steps"),
        ((1.0, Q, 10, 0.0), "delta"),
    ],
)
def test_bad_parameters_are_named(args, message):
    with pytest.raises(BudgetError, match=message):
        dpsgd_epsilon(*args)
    with pytest.raises(BudgetError, match="accountant"):
        dpsgd_epsilon(1.0, Q, 10, 1e-5, accountant="moments")  # type: ignore[arg-type]


def test_event_follows_the_privacy_event_protocol():
    from dp_accounting.rdp import RdpAccountant

    event = DPSGDEvent(1.0, Q, 196)
    assert isinstance(event, PrivacyEvent)
    assert event.rho == pytest.approx(196 / 2)  # the unamplified zCDP bound: loose but valid
    assert event.describe()["sampling"] == "poisson"
    rdp = RdpAccountant()
    rdp.compose(event.to_dp_accounting())
    assert rdp.get_epsilon(1e-5) == pytest.approx(0.9755, abs=1e-4)
    assert event.epsilon(1e-5) == pytest.approx(0.4478, abs=1e-4)


@pytest.mark.slow
def test_event_composes_in_the_projects_accountant():
    """The Accountant's dense grid of 4000 orders takes ~20 s on a subsampled event."""
    event = DPSGDEvent(1.0, Q, 196)
    # composing through the project's accountant uses the exact subsampled event
    alone = Accountant().compose(event).epsilon(1e-5)
    assert alone == pytest.approx(dpsgd_epsilon(1.0, Q, 196, 1e-5, accountant="rdp"), rel=1e-3)
    both = Accountant().compose(event, GaussianEvent(10.0)).epsilon(1e-5)
    assert both > alone
    assert math.isfinite(both)


@pytest.mark.parametrize(
    ("epsilon", "rate", "steps"), [(1.0, Q, 1960), (0.5, 0.01, 300), (4.0, 0.05, 60), (1.0, 1.0, 3)]
)
def test_rdp_calibration_gives_the_sigma_of_a_bisection_on_the_full_accountant(
    epsilon, rate, steps
):
    """Calibration evaluates only the RDP orders that can still meet the budget: same answer."""
    from safeshare.train.accounting import _bisect

    def cost(sigma):
        return dpsgd_epsilon(sigma, rate, steps, 1e-5, accountant="rdp")

    full = _bisect(epsilon, cost, lambda s: cost(s) <= epsilon, 1e-3, rate, steps)
    assert calibrate_noise(epsilon, 1e-5, rate, steps, accountant="rdp") == full


# PRV (Opacus): its upper bound is the estimate at delta - delta/1000 plus eps_error = 0.01.
# Measured on the golden configs: the estimate agrees with PLD to 2e-5 (0.44777 vs 0.44776,
# 1.22733 vs 1.22735) and the upper bound lies 0.0100 / 0.0101 above PLD.  So PRV must lie
# above PLD (it is a guarantee, PLD is tight) by at most eps_error plus 5e-4 of slack for
# the delta shift and discretization: both independent implementations agree.
@pytest.mark.parametrize(("steps", "pld", "prv"), [(196, 0.4478, 0.4578), (1960, 1.2273, 1.2374)])
def test_prv_is_an_upper_bound_just_above_pld(steps, pld, prv):
    pytest.importorskip("opacus")
    from safeshare.train.accounting import PRV_EPS_ERROR

    tight = dpsgd_epsilon(1.0, Q, steps, 1e-5, accountant="pld")
    upper = dpsgd_epsilon(1.0, Q, steps, 1e-5, accountant="prv")
    assert round(tight, 4) == pld and round(upper, 4) == prv
    assert tight < upper <= tight + PRV_EPS_ERROR + 5e-4
    assert upper < dpsgd_epsilon(1.0, Q, steps, 1e-5, accountant="rdp")
    assert DPSGDEvent(1.0, Q, steps).epsilon(1e-5, accountant="prv") == upper


def test_prv_calibration_round_trip_recovers_sigma_one():
    pytest.importorskip("opacus")
    sigma = calibrate_noise(1.2374, 1e-5, Q, 1960, accountant="prv", tolerance=1e-4)
    assert sigma == pytest.approx(1.0, abs=2e-3)
    assert dpsgd_epsilon(sigma, Q, 1960, 1e-5, accountant="prv") <= 1.2374


def test_prv_full_batch_and_out_of_range_configurations():
    pytest.importorskip("opacus")
    single = dpsgd_epsilon(2.0, 1.0, 1, 1e-5, accountant="pld")
    assert single < dpsgd_epsilon(4.0, 1.0, 4, 1e-5, accountant="prv") <= single + 0.0105
    # sigma 1/16 over 1,960 steps: a grid of billions of points; refused, not attempted
    with pytest.raises(BudgetError, match=r"PRV accountant cannot evaluate.*accountant='pld'"):
        dpsgd_epsilon(1 / 16, Q, 1960, 1e-5, accountant="prv")
    with pytest.raises(BudgetError, match=r"cannot be reached.*fewer steps"):
        calibrate_noise(1e-3, 1e-5, 1.0, 100, accountant="prv")


def test_unknown_accountant_names_the_three():
    with pytest.raises(BudgetError, match=r"\['pld', 'rdp', 'prv'\]"):
        dpsgd_epsilon(1.0, Q, 10, 1e-5, accountant="moments")  # type: ignore[arg-type]
