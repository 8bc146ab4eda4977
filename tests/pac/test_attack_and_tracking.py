"""Empirical membership attacks stay under the PAC bound, and only because of the noise."""

import numpy as np
import pandas as pd
import pytest

from safeshare.data.examples import load_example
from safeshare.errors import InputError
from safeshare.evaluate import Proportion
from safeshare.pac import calibrate, posterior_success
from safeshare.pac.applications import Mean
from safeshare.pac.attack import membership_attack, most_outlying
from safeshare.pac.noise import gaussian_mi_bound
from safeshare.pac.tracking import PosteriorTracker


@pytest.fixture(scope="module")
def pool() -> pd.DataFrame:
    """40 real respondents plus the survey's most extreme one, at row 0."""
    frame = load_example("fair")[0]
    sample = frame.sample(40, random_state=3).reset_index(drop=True)
    sample.loc[0] = frame.loc[frame["affairs"].idxmax()]
    return sample


@pytest.mark.parametrize("beta", [2**-4, 0.25])
def test_membership_attack_stays_under_the_bound(pool, beta):
    release = calibrate(Mean(("affairs", "age")), pool, mi_budget=beta, samples=512, rng=0)
    result = membership_attack(release, pool, trials=1500, shadows=200, rng=1)
    assert result.target == 0 == most_outlying(pool)
    bound = posterior_success(beta)
    assert result.bound == pytest.approx(bound)
    assert result.success.value <= bound and result.under_bound
    assert result.noise_free.value >= 0.95  # the same attack wins without the noise
    assert result.success.value >= 0.55  # and is no straw man with it
    assert "the PAC bound is" in result.reading() and result.to_dict()["under_bound"]


def test_the_check_can_fail_when_the_noise_is_too_small(pool):
    release = calibrate(Mean(("affairs", "age")), pool, mi_budget=2**-4, samples=512, rng=0)
    release.noise = release.noise.scaled(1e-3)  # what an under-calibrated mechanism would do
    result = membership_attack(release, pool, trials=400, shadows=200, rng=1)
    assert not result.under_bound and result.success.interval[0] > release.bound.success_rate


def test_attack_needs_membership_secrets():
    release = calibrate(
        lambda x: x.mean(),
        np.zeros(5),
        mi_budget=0.1,
        sampler=lambda g: g.normal(size=5),
        samples=64,
        rng=0,
    )
    with pytest.raises(InputError, match="membership"):
        membership_attack(release, np.zeros(5))


def test_posterior_tracking_first_query_meets_the_gaussian_identity_exactly(pool):
    tracker = PosteriorTracker(
        pool[["affairs", "age"]].to_numpy(), mi_per_query=0.1, worlds=32, rng=0
    )
    assert np.all(tracker.masks.sum(axis=0) == 16)  # every record in exactly half the worlds
    _, answers = tracker.answers(lambda rows: rows.mean(axis=0))
    noise = tracker.noise_for(answers)
    covariance = np.cov(answers.T, bias=True)  # uniform posterior: the exact covariance
    lam = np.linalg.eigvalsh(covariance)[::-1][: len(noise)]
    assert gaussian_mi_bound(lam, np.sort(noise.variances)[::-1]) <= 0.1
    assert np.sum(lam / np.sort(noise.variances)[::-1]) == pytest.approx(0.2)


def test_posterior_tracking_attack_stays_under_the_composed_bound(pool):
    rows = pool[["age", "affairs", "yrs_married"]].to_numpy()
    queries = [
        lambda r: r[:, 1].mean(),
        lambda r: r[:, 0].mean(),
        lambda r: r.mean(axis=0),
        lambda r: r[:, 1].max(),
        lambda r: np.median(r, axis=0),
    ]
    games, hits = 200, 0
    for game in range(games):
        tracker = PosteriorTracker(rows, mi_per_query=0.05, worlds=16, rng=game)
        for query in queries:
            tracker.release(query)
        guess = tracker.membership_posterior()[0] > 0.5  # the adversary's own posterior
        hits += guess == tracker.masks[tracker._secret][0]
    bound = posterior_success(5 * 0.05)
    assert tracker.bound.mi == pytest.approx(0.25) and tracker.queries == 5
    assert tracker.bound.success_rate == pytest.approx(bound)
    share = Proportion.of(hits, games)
    assert share.value <= bound and share.interval[0] <= bound


def test_posterior_concentrates_as_queries_add_up(pool):
    tracker = PosteriorTracker(pool[["affairs"]].to_numpy(), mi_per_query=0.2, worlds=16, rng=3)
    for _ in range(12):
        tracker.release(lambda r: r.mean(axis=0))
    assert tracker.posterior.max() > 1 / 16
    assert abs(tracker.posterior.sum() - 1) < 1e-12
    assert tracker.bound.mi == pytest.approx(2.4)
    with pytest.raises(InputError, match="even number"):
        PosteriorTracker(pool, mi_per_query=0.1, worlds=5)
