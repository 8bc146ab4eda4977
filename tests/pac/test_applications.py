"""The shipped black boxes compute what they claim; the DP baselines are calibrated correctly."""

import math

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

from safeshare.data.examples import load_example
from safeshare.errors import BudgetError, InputError
from safeshare.pac import calibrate, posterior_success
from safeshare.pac.applications import Histogram, LinearRegression, LogisticRegression, Mean
from safeshare.pac.bounds import dp_success
from safeshare.pac.dp_baseline import (
    dp_counterpart,
    dp_histogram,
    dp_kmeans,
    dp_linear_regression,
    dp_logistic_regression,
    dp_mean,
    dp_mlp,
    gaussian_sigma,
)
from safeshare.pac.models import KMeans, SmallMLP, kmeans_cost

FEATURES = ("rate_marriage", "age", "yrs_married", "children", "religious", "educ")
RANDHIE_FEATURES = ("lncoins", "idp", "lpi", "fmde", "physlm", "disea", "hlthg", "hlthf", "hlthp")


@pytest.fixture(scope="module")
def fair() -> tuple[pd.DataFrame, dict]:
    frame, schema = load_example("fair")
    domain = schema.domain()
    bounds = {
        c: (float(domain[c].categories[0]), float(domain[c].categories[-1])) for c in FEATURES
    }
    bounds["affairs"] = (0.0, 60.0)  # the schema's public edges
    return frame, bounds


@pytest.fixture(scope="module")
def randhie() -> tuple[pd.DataFrame, dict]:
    frame = load_example("randhie")[0]
    # public bounds from the experiment's design (the packaged schema)
    bounds = {"mdvis": (0, 80), "lncoins": (0, 4.62), "idp": (0, 1), "lpi": (0, 7.2),
              "fmde": (0, 8.4), "physlm": (0, 1), "disea": (0, 60), "hlthg": (0, 1),
              "hlthf": (0, 1), "hlthp": (0, 1)}  # fmt: skip
    return frame, {k: (float(a), float(b)) for k, (a, b) in bounds.items()}


def test_linear_regression_matches_statsmodels(randhie):
    frame, _ = randhie
    model = LinearRegression("mdvis", RANDHIE_FEATURES)
    reference = sm.OLS(frame["mdvis"], sm.add_constant(frame[list(RANDHIE_FEATURES)])).fit()
    assert np.allclose(model(frame).to_numpy(), reference.params.to_numpy(), rtol=1e-8)


def test_logistic_regression_solves_its_objective(fair):
    frame, bounds = fair
    model = LogisticRegression("affairs", FEATURES, bounds, l2=1e-3)
    w = model(frame).to_numpy()
    x, y = model.design(frame)
    assert np.all(np.linalg.norm(x, axis=1) <= 1 + 1e-12)  # what the DP sensitivity assumes
    gradient = -(x.T @ (y / (1 + np.exp(y * (x @ w))))) / len(x) + 1e-3 * w
    assert np.abs(gradient).max() < 1e-9
    assert model.accuracy(w, frame) > (y < 0).mean() + 0.02  # beats the majority class


def test_histogram_and_mean(fair):
    frame, _ = fair
    shares = Histogram("rate_marriage", categories=(1.0, 2.0, 3.0, 4.0, 5.0))(frame)
    assert shares.sum() == pytest.approx(1.0)
    assert shares["5.0"] == pytest.approx((frame["rate_marriage"] == 5).mean())
    assert Mean(("age",))(frame)["age"] == pytest.approx(frame["age"].mean())
    with pytest.raises(InputError, match="either public bin edges or public categories"):
        Histogram("age")


def test_kmeans_is_deterministic_aligned_and_good(fair):
    frame, bounds = fair
    model = KMeans.from_pool(frame, FEATURES, k=4, bounds=bounds, seed=0)
    half = frame.iloc[::2]
    first, again = model(half), model(half)
    assert np.array_equal(first, again)
    assert np.abs(first - model.reference).max() < 0.1  # same cluster order as the reference
    points = model.points(frame)
    assert kmeans_cost(points, model(frame)) < 0.7 * kmeans_cost(
        points, points.mean(0, keepdims=True)
    )


def test_small_model_is_deterministic_and_learns(fair):
    frame, bounds = fair
    model = SmallMLP("affairs", FEATURES, bounds, hidden=4, steps=150)
    sample = frame.iloc[::3]  # the file is sorted by the target: take every third row
    params = model(sample)
    assert params.size == model.size and np.array_equal(params, model(sample))
    x, y = model.design(sample)
    assert model.accuracy(params, sample) > max(y.mean(), 1 - y.mean())
    # per-example gradients add up to the full-batch gradient the trainer uses
    grads = model.gradients(model.initial(), x, y)
    assert grads.shape == (len(x), model.size)


def test_pac_calibrates_every_application(fair):
    frame, bounds = fair
    small = frame.iloc[::4]  # sorted by the target: take every fourth row
    boxes = [
        Mean(("age", "affairs")),
        Histogram("rate_marriage", categories=(1.0, 2.0, 3.0, 4.0, 5.0)),
        LogisticRegression("affairs", FEATURES, bounds),
        KMeans.from_pool(small, FEATURES, k=3, bounds=bounds, seed=0),
        SmallMLP("affairs", FEATURES[:3], bounds, hidden=2, steps=40),
    ]
    for box in boxes:
        release = calibrate(box, small, mi_budget=0.25, samples=128, rng=0)
        assert release.noise.power > 0 and release.layout.size >= 2
        output = release.apply(allow_swamped=True)
        assert np.all(np.isfinite(output.flat))


# --- the DP side ------------------------------------------------------------------------


def test_analytic_gaussian_matches_its_definition():
    from scipy.stats import norm

    for epsilon, delta in [(0.1, 1e-5), (1.0, 1e-5), (4.0, 1e-9)]:
        sigma = gaussian_sigma(epsilon, delta, 2.0)
        a, b = 2.0 / (2 * sigma), epsilon * sigma / 2.0
        achieved = norm.cdf(a - b) - math.exp(epsilon) * norm.cdf(-a - b)
        assert achieved == pytest.approx(delta, rel=1e-6)
        classical = 2.0 * math.sqrt(2 * math.log(1.25 / delta)) / epsilon
        assert sigma < classical or epsilon > 1  # tighter than the classical bound where it holds
    assert round(gaussian_sigma(1.0, 1e-5, 1.0), 2) == 3.73  # Balle & Wang (2018)
    with pytest.raises(BudgetError):
        gaussian_sigma(0.0, 1e-5, 1.0)


def test_dp_counterpart_has_the_same_posterior_success():
    for beta in (2**-8, 2**-4, 0.25):
        epsilon = dp_counterpart(beta, 1e-5)
        assert dp_success(epsilon, 1e-5) == pytest.approx(posterior_success(beta), abs=1e-12)


def test_dp_baselines_release_the_same_layout(fair, randhie):
    frame, bounds = fair
    generator = np.random.default_rng(0)
    epsilon = dp_counterpart(0.25)
    mean = dp_mean(Mean(("age", "affairs")), frame, bounds, epsilon, 1e-5, generator)
    assert mean.value.shape == (2,) and abs(mean.value[0] - frame["age"].mean()) < 0.5
    hist = dp_histogram(
        Histogram("rate_marriage", categories=(1.0, 2.0, 3.0, 4.0, 5.0)),
        frame,
        epsilon,
        1e-5,
        generator,
    )
    assert hist.value.shape == (5,) and hist.noise_power > 0
    logistic = LogisticRegression("affairs", FEATURES, bounds)
    noisy = dp_logistic_regression(logistic, frame, epsilon, 1e-5, generator)
    assert noisy.value.shape == (len(FEATURES) + 1,)
    model = KMeans.from_pool(frame, FEATURES, k=3, bounds=bounds)
    start = np.linspace(0.2, 0.8, 3)[:, None] * np.ones((3, len(FEATURES)))
    centres = dp_kmeans(model, frame, start, epsilon, 1e-5, generator).value
    assert centres.shape == (3, len(FEATURES)) and np.all((centres >= 0) & (centres <= 1))
    mlp = SmallMLP("affairs", FEATURES[:3], bounds, hidden=2, steps=20)
    assert dp_mlp(mlp, frame, epsilon, 1e-5, generator).value.shape == (mlp.size,)
    data, public = randhie
    ols = LinearRegression("mdvis", RANDHIE_FEATURES)
    coef = dp_linear_regression(ols, data, public, 2.0, 1e-5, generator).value
    assert coef.shape == (len(RANDHIE_FEATURES) + 1,) and np.all(np.isfinite(coef))
