"""evaluate/: utility and risk measured on a release (the minimum the privacy card needs)."""

from safeshare.evaluate.neighbors import nearest_distances
from safeshare.evaluate.results import MarginalDistance, Proportion, RiskResult, UtilityResult
from safeshare.evaluate.risk import memorization_risk
from safeshare.evaluate.split import train_holdout_split
from safeshare.evaluate.suite import evaluate_release
from safeshare.evaluate.utility import marginal_tvd, tvd

__all__ = [
    "MarginalDistance",
    "Proportion",
    "RiskResult",
    "UtilityResult",
    "evaluate_release",
    "marginal_tvd",
    "memorization_risk",
    "nearest_distances",
    "train_holdout_split",
    "tvd",
]
