"""The noise formulas: the Gaussian MI identity, optimality, and the noise shape's sampler."""

import numpy as np
import pytest
from scipy import stats

from safeshare.errors import BudgetError
from safeshare.pac.noise import (
    NoiseShape,
    anisotropic_variances,
    gaussian_mi_bound,
    isotropic_variance,
)

SPECTRA = [
    np.array([1.0]),
    np.array([5.0, 1.0, 0.2, 1e-4]),
    np.geomspace(100.0, 1e-6, 30),
    np.array([2.0, 2.0, 2.0]),
]


@pytest.mark.parametrize("lam", SPECTRA)
@pytest.mark.parametrize("beta", [2**-12, 2**-4, 0.5, 3.0])
def test_gaussian_identity_holds_for_the_anisotropic_noise(lam, beta):
    e = anisotropic_variances(lam, beta)
    assert np.sum(lam / e) == pytest.approx(2 * beta, rel=1e-12)  # the constraint is tight
    assert gaussian_mi_bound(lam, e) <= beta  # 1/2 sum log(1 + l/e) <= 1/2 sum l/e = beta
    assert gaussian_mi_bound(lam, np.full_like(lam, isotropic_variance(lam, beta))) <= beta


@pytest.mark.parametrize("lam", SPECTRA)
def test_anisotropic_is_the_least_power_for_the_constraint(lam):
    beta = 0.1
    e = anisotropic_variances(lam, beta)
    assert e.sum() == pytest.approx(np.sqrt(lam).sum() ** 2 / (2 * beta))
    assert e.sum() <= lam.size * isotropic_variance(lam, beta) * (1 + 1e-12)
    # any other feasible allocation costs more: perturb and rescale to the constraint
    other = e * np.random.default_rng(0).uniform(0.5, 2.0, size=e.size)
    other *= np.sum(lam / other) / (2 * beta)
    assert np.sum(lam / other) == pytest.approx(2 * beta)
    assert other.sum() >= e.sum() * (1 - 1e-12)


def test_noise_shape_samples_its_covariance():
    rng = np.random.default_rng(1)
    basis = np.linalg.qr(rng.normal(size=(5, 5)))[0][:2]  # 2 shaped directions in 5-d
    shape = NoiseShape(basis, np.array([9.0, 0.25]), residual=1.0)
    draws = np.vstack([shape.sample(rng) for _ in range(20000)])
    expected = shape.covariance()
    assert np.trace(expected) == pytest.approx(shape.power)
    assert np.allclose(np.cov(draws.T), expected, atol=0.25)
    # each shaped direction: its variance lies in a 99.9% chi-square interval
    for row, var in zip(basis, shape.variances, strict=True):
        sample_var = (draws @ row).var(ddof=1)
        low, high = stats.chi2.ppf([0.0005, 0.9995], len(draws) - 1) / (len(draws) - 1)
        assert var * low <= sample_var <= var * high


def test_quadratic_and_mi_bound_agree_with_dense_algebra():
    rng = np.random.default_rng(2)
    basis = np.linalg.qr(rng.normal(size=(4, 4)))[0][:3]
    shape = NoiseShape(basis, np.array([3.0, 1.0, 0.5]), residual=0.1)
    dense = shape.covariance()
    points = rng.normal(size=(7, 4))
    expected = np.einsum("ij,jk,ik->i", points, np.linalg.inv(dense), points)
    assert np.allclose(shape.quadratic(points), expected)
    cov = np.diag([2.0, 1.0, 0.5, 0.1])
    value = 0.5 * np.linalg.slogdet(np.eye(4) + np.linalg.solve(dense, cov))[1]
    assert shape.mi_bound(cov) == pytest.approx(value)
    assert np.allclose(shape.diagonal(), np.diag(dense))
    assert shape.scaled(2.0).power == pytest.approx(2 * shape.power)


def test_a_direction_without_noise_that_moves_leaks_everything():
    shape = NoiseShape(np.eye(2)[:1], np.array([1.0]), residual=0.0)
    assert np.isinf(shape.quadratic(np.array([[0.0, 1.0]]))[0])
    assert shape.quadratic(np.array([[2.0, 0.0]]))[0] == pytest.approx(4.0)
    assert gaussian_mi_bound(np.array([1.0]), np.array([0.0])) == np.inf


def test_bad_noise_parameters():
    with pytest.raises(BudgetError):
        anisotropic_variances(np.array([1.0, -1.0]), 0.1)
    with pytest.raises(BudgetError):
        anisotropic_variances(np.array([1.0]), 0.0)
    with pytest.raises(BudgetError):
        NoiseShape(np.eye(2), np.array([1.0]), 0.0)
    with pytest.raises(BudgetError):
        NoiseShape.isotropic(3, 1.0).scaled(-1.0)
