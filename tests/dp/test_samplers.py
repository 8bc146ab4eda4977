"""Statistical tests of the exact samplers against their exact distributions."""

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from safeshare.dp import ExponentialMechanism, Randomness
from safeshare.dp.samplers import bernoulli_exp, sample_discrete_laplace

# seeded runs are deterministic; secure runs fail by chance with probability ~P_MIN
P_MIN = 1e-4


def discrete_gaussian_pmf(sigma: float, support: np.ndarray) -> np.ndarray:
    grid = np.arange(-int(40 * sigma) - 50, int(40 * sigma) + 51)
    normaliser = np.exp(-(grid**2) / (2 * sigma**2)).sum()
    return np.exp(-(support**2) / (2 * sigma**2)) / normaliser


def chi_square_p(samples: np.ndarray, pmf) -> float:
    """Chi-square goodness of fit, bins with expected count >= 5, tails pooled."""
    lo, hi = int(samples.min()), int(samples.max())
    support = np.arange(lo - 5, hi + 6)
    expected = pmf(support) * len(samples)
    observed = np.array([(samples == x).sum() for x in support], dtype=float)
    keep = expected >= 5
    observed_kept = np.append(
        observed[keep], observed[~keep].sum() + (len(samples) - observed.sum())
    )
    expected_kept = np.append(expected[keep], len(samples) - expected[keep].sum())
    if expected_kept[-1] < 5:
        observed_kept[-2] += observed_kept[-1]
        expected_kept[-2] += expected_kept[-1]
        observed_kept, expected_kept = observed_kept[:-1], expected_kept[:-1]
    return float(stats.chisquare(observed_kept, expected_kept).pvalue)


@pytest.mark.parametrize("sigma", [0.7, 3.0, 12.5])
def test_exact_discrete_gaussian_fits_its_pmf(sigma):
    samples = Randomness(11).discrete_gaussian(sigma, 20_000)
    assert chi_square_p(samples, lambda x: discrete_gaussian_pmf(sigma, x)) > P_MIN
    support = np.arange(-int(40 * sigma) - 50, int(40 * sigma) + 51)
    variance = float((support**2 * discrete_gaussian_pmf(sigma, support)).sum())
    standard_error = variance * math.sqrt(2 / len(samples))
    assert abs(samples.var() - variance) < 5 * standard_error
    assert abs(samples.mean()) < 5 * math.sqrt(variance / len(samples))


@pytest.mark.parametrize("sigma", [1.0, 7.5])
def test_secure_opendp_sampler_fits_the_same_pmf(sigma):
    rand = Randomness()
    assert rand.secure
    samples = rand.discrete_gaussian(sigma, 50_000)
    assert samples.dtype == np.int64
    assert chi_square_p(samples, lambda x: discrete_gaussian_pmf(sigma, x)) > P_MIN


def test_discrete_laplace_fits_its_pmf():
    rand = Randomness(5)
    scale = Fraction(5, 2)
    samples = np.array([sample_discrete_laplace(scale, rand.uniform_below) for _ in range(20_000)])
    t = float(scale)

    def pmf(x):
        return (1 - math.exp(-1 / t)) / (1 + math.exp(-1 / t)) * np.exp(-np.abs(x) / t)

    assert chi_square_p(samples, pmf) > P_MIN


@pytest.mark.parametrize("gamma", [Fraction(0), Fraction(3, 10), Fraction(5, 2)])
def test_bernoulli_exp_frequency(gamma):
    rand = Randomness(2)
    n = 20_000
    hits = sum(bernoulli_exp(gamma, rand.uniform_below) for _ in range(n))
    p = math.exp(-float(gamma))
    assert abs(hits / n - p) <= 5 * math.sqrt(p * (1 - p) / n) + 1e-12


def test_exponential_mechanism_selects_in_proportion():
    scores = np.array([0.0, 1.0, 2.0, 4.0])
    mechanism = ExponentialMechanism(epsilon=1.0, sensitivity=1.0)
    rand = Randomness(9)
    picks = np.array([mechanism.select(scores, rand) for _ in range(8000)])
    weights = np.exp(1.0 * scores / 2)
    expected = weights / weights.sum() * len(picks)
    observed = np.bincount(picks, minlength=4)
    assert stats.chisquare(observed, expected).pvalue > P_MIN


def test_seeded_runs_reproduce_and_secure_runs_differ():
    assert (
        Randomness(4).discrete_gaussian(3.0, 50).tolist()
        == Randomness(4).discrete_gaussian(3.0, 50).tolist()
    )
    a, b = Randomness().discrete_gaussian(30.0, 50), Randomness().discrete_gaussian(30.0, 50)
    assert a.tolist() != b.tolist()
    big = 2**100 + 7
    assert 0 <= Randomness(1).uniform_below(big) < big


def test_bad_arguments():
    with pytest.raises(TypeError, match="seed must be"):
        Randomness("7")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="no candidates"):
        ExponentialMechanism(1.0).select([], Randomness(0))
