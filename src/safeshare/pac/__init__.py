"""pac/: PAC Privacy, black-box noise calibration bounded by mutual information.

``calibrate`` (noise for one black box) -> ``PACRelease.apply()`` (noisy output + bound);
``bounds`` (MI <-> posterior success <-> DP-equivalent epsilon, composition);
``PosteriorTracker`` (adaptive sequences); ``membership_attack`` (the empirical check);
``applications`` / ``models`` (shipped black boxes) and ``dp_baseline`` (their DP twins).

>>> from safeshare.pac import calibrate, posterior_success
>>> round(posterior_success(2**-4), 3)
0.675
"""

from safeshare.pac.attack import AttackResult, membership_attack
from safeshare.pac.bounds import (
    PACBound,
    compose,
    compose_repeated,
    dp_epsilon,
    dp_success,
    kl_bernoulli,
    mi_for_success,
    posterior_success,
)
from safeshare.pac.calibration import CalibrationReport, calibrate
from safeshare.pac.errors import (
    InsufficientSamplesError,
    MechanismOutputError,
    NoiseSwampsOutputError,
    NonDeterministicError,
)
from safeshare.pac.noise import NoiseShape, anisotropic_variances, isotropic_variance
from safeshare.pac.release import PACOutput, PACRelease
from safeshare.pac.tracking import PosteriorTracker

__all__ = [
    "AttackResult",
    "CalibrationReport",
    "InsufficientSamplesError",
    "MechanismOutputError",
    "NoiseShape",
    "NoiseSwampsOutputError",
    "NonDeterministicError",
    "PACBound",
    "PACOutput",
    "PACRelease",
    "PosteriorTracker",
    "anisotropic_variances",
    "calibrate",
    "compose",
    "compose_repeated",
    "dp_epsilon",
    "dp_success",
    "isotropic_variance",
    "kl_bernoulli",
    "membership_attack",
    "mi_for_success",
    "posterior_success",
]
