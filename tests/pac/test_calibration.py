"""Calibration: the bound holds for the true covariance, the noise is not wasteful, bad input."""

import numpy as np
import pandas as pd
import pytest

from safeshare.data.examples import load_example
from safeshare.errors import BudgetError, InputError
from safeshare.pac import (
    InsufficientSamplesError,
    MechanismOutputError,
    NoiseSwampsOutputError,
    NonDeterministicError,
    calibrate,
)
from safeshare.pac.applications import Histogram, Mean
from safeshare.pac.outputs import flatten_like
from safeshare.pac.sampling import membership_mask, take_rows

SPECTRUM = np.array([10.0, 3.0, 1.0, 0.3, 0.1, 0.03, 0.01, 0.003])


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return load_example("fair")[0]


def gaussian_world(seed: int):
    """A black box whose output is exactly Gaussian with a known covariance."""
    rotation = np.linalg.qr(np.random.default_rng(100 + seed).normal(size=(8, 8)))[0]
    factor = rotation * np.sqrt(SPECTRUM)
    return factor, factor @ factor.T


def test_gaussian_identity_holds_for_the_true_covariance():
    """1/2 log det(I + Sigma_B^-1 Sigma) <= beta with the true Sigma, at the stated confidence."""
    beta, bounds, powers = 0.1, [], []
    for seed in range(20):
        factor, covariance = gaussian_world(seed)
        release = calibrate(
            lambda v: v,
            mi_budget=beta,
            sampler=lambda gen, f=factor: f @ gen.standard_normal(8),
            samples=512,
            rng=seed,
        )
        bounds.append(release.noise.mi_bound(covariance))
        powers.append(release.noise.power)
    # nominal failure rate 5% per calibration; 4 or more failures in 20 has probability < 2%
    assert sum(b > beta for b in bounds) <= 3
    assert np.median(bounds) >= 0.6 * beta  # and the noise is not grossly more than needed
    ideal = np.sqrt(SPECTRUM).sum() ** 2 / (2 * beta)  # the least power with the exact spectrum
    assert ideal <= np.median(powers) <= 1.6 * ideal


def test_anisotropic_noise_beats_isotropic_on_a_skewed_output():
    factor, _ = gaussian_world(0)
    common = {"mi_budget": 0.1, "sampler": lambda gen: factor @ gen.standard_normal(8), "rng": 1}
    shaped = calibrate(lambda v: v, samples=512, **common)
    flat = calibrate(lambda v: v, samples=512, method="isotropic", **common)
    assert shaped.calibration.method == "anisotropic" and flat.calibration.method == "isotropic"
    assert shaped.noise.power < 0.5 * flat.noise.power


def test_membership_mean_on_real_data_holds_on_fresh_runs(frame):
    mean = Mean(("age", "yrs_married", "children", "affairs"))
    release = calibrate(mean, frame, mi_budget=2**-4, samples=512, rng=2)
    assert release.membership and release.calibration.runs <= 512
    generator = np.random.default_rng(3)
    fresh = np.vstack(
        [
            flatten_like(
                release.layout,
                mean(take_rows(frame, membership_mask(len(frame), generator))),
                run=0,
            )
            for _ in range(600)
        ]
    )
    assert release.noise.mi_bound(np.cov(fresh.T)) <= 2**-4 * 1.05
    bound = release.bound
    assert round(bound.success_rate, 3) == 0.675 and bound.dp_epsilon == pytest.approx(
        0.7305, abs=1e-4
    )


def test_apply_releases_in_the_functions_structure_and_composes(frame):
    release = calibrate(Mean(("age", "educ")), frame, mi_budget=0.05, samples=128)
    assert release.secure_noise  # no seed: secure generator
    first, second = release.apply(), release.apply()
    assert list(first.value.index) == ["age", "educ"]
    assert abs(first.value["age"] - frame["age"].mean()) < 2.0
    assert first.bound.mi == pytest.approx(0.05) and second.bound.mi == pytest.approx(0.10)
    assert second.bound.success_rate > first.bound.success_rate
    assert release.to_dict()["bound"]["releases"] == 2


def test_seeded_calibration_is_reproducible_and_flagged(frame):
    runs = [calibrate(Mean(("age",)), frame, mi_budget=0.1, samples=128, rng=5) for _ in range(2)]
    assert runs[0].noise.power == runs[1].noise.power
    assert runs[0].apply().flat.tolist() == runs[1].apply().flat.tolist()
    assert not runs[0].secure_noise
    assert any("NOT private" in line for line in runs[0].caveats())


def test_worker_processes_give_the_same_calibration(frame):
    serial = calibrate(Mean(("age", "educ")), frame, mi_budget=0.1, samples=128, rng=7)
    parallel = calibrate(Mean(("age", "educ")), frame, mi_budget=0.1, samples=128, rng=7, workers=2)
    assert parallel.noise.power == pytest.approx(serial.noise.power, rel=1e-12)


def test_user_sampler_releases_on_the_given_data():
    data = np.full(50, 3.0)
    release = calibrate(
        lambda x: x.mean(),
        data,
        mi_budget=0.5,
        sampler=lambda gen: gen.normal(3.0, 1.0, size=50),
        samples=256,
        rng=0,
    )
    assert not release.membership
    assert release.noise.power == pytest.approx(1 / 50 / (2 * 0.5), rel=0.35)
    assert "user's sampler" in release.caveats()[0]


# --- bad input -------------------------------------------------------------------------


def test_non_deterministic_function_is_detected(frame):
    noise = np.random.default_rng(0)
    with pytest.raises(NonDeterministicError, match=r"not deterministic.*fix its seed"):
        calibrate(lambda d: d["age"].mean() + noise.normal(), frame, mi_budget=0.1, samples=64)


def test_outputs_of_varying_shape_are_refused(frame):
    def unique_ages(d):  # one entry per distinct value: the shape depends on the data
        return d["affairs"].round(1).value_counts().sort_index()

    with pytest.raises(MechanismOutputError, match=r"changed shape.*fixed output shape"):
        calibrate(unique_ages, frame.head(40), mi_budget=0.1, samples=64, rng=0)
    # the fix the message suggests: public bins
    fixed = Histogram("affairs", edges=(0.0, 0.5, 2.0, 60.0))
    assert calibrate(fixed, frame.head(400), mi_budget=0.1, samples=64, rng=0).layout.size == 3


def test_nan_and_inf_outputs_are_refused_without_quoting_values(frame):
    def ratio(d):
        top = d["affairs"].to_numpy().max()
        with np.errstate(divide="ignore"):
            return {"share": (d["affairs"] > 50).mean(), "odd": top / np.sum(d["affairs"] > 50)}

    with pytest.raises(MechanismOutputError, match="NaN or infinity in odd") as caught:
        calibrate(ratio, frame.head(300), mi_budget=0.1, samples=64, rng=0)
    assert "57.6" not in str(caught.value)
    with pytest.raises(MechanismOutputError, match="not numeric"):
        calibrate(lambda d: "text", frame, mi_budget=0.1, samples=64)


def test_too_few_samples_say_how_many(frame):
    with pytest.raises(InsufficientSamplesError, match="at least 64 black-box runs"):
        calibrate(Mean(("age",)), frame, mi_budget=0.1, samples=20)


def test_unstable_estimate_says_how_many_runs_are_needed():
    def heavy(gen):  # Student t with 2.5 degrees of freedom: the spread is hard to pin down
        return gen.standard_t(2.5, size=3)

    with pytest.raises(InsufficientSamplesError, match=r"not stable.*pass samples=\d+") as caught:
        calibrate(
            lambda x: x.sum(), mi_budget=0.1, sampler=heavy, samples=128, max_margin=0.3, rng=0
        )
    needed = int(str(caught.value).rsplit("samples=", 1)[1])
    assert needed > 2 * 128  # the margin shrinks as 1 / sqrt(runs)
    release = calibrate(lambda x: x.sum(), mi_budget=0.1, sampler=heavy, samples=128, rng=0)
    assert not release.calibration.converged  # within max_margin: released, with the caveat
    assert any("did not converge" in line for line in release.caveats())


def test_constant_output_is_refused(frame):
    with pytest.raises(MechanismOutputError, match="identical on all 64"):
        calibrate(lambda d: 1.0, frame, mi_budget=0.1, samples=64, rng=0)


def test_budget_so_small_the_noise_swamps_the_output_is_reported_not_released(frame):
    release = calibrate(Mean(("affairs",)), frame, mi_budget=1e-6, samples=128, rng=0)
    assert release.swamped and release.mi_needed > 1e-6
    with pytest.raises(NoiseSwampsOutputError, match=r"swamp the output.*nothing was released"):
        release.apply()
    assert release.releases == 0
    assert release.apply(allow_swamped=True).bound.mi == pytest.approx(1e-6)


def test_bad_arguments(frame):
    with pytest.raises(BudgetError, match="positive number of nats"):
        calibrate(Mean(("age",)), frame, mi_budget=0)
    with pytest.raises(InputError, match="not in the data"):
        calibrate(Mean(("nope",)), frame, mi_budget=0.1, samples=64)
    with pytest.raises(InputError, match="give the data"):
        calibrate(Mean(("age",)), mi_budget=0.1)
    with pytest.raises(InputError, match="method"):
        calibrate(Mean(("age",)), frame, mi_budget=0.1, method="fancy")
