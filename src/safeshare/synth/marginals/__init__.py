"""The marginal engine: graphical models fitted to noisy marginals, and sampling from them."""

from safeshare.synth.marginals.estimation import (
    Estimate,
    Measurement,
    estimate,
    estimate_total,
    noise_loss,
)
from safeshare.synth.marginals.junction_tree import JunctionTree
from safeshare.synth.marginals.model import GraphicalModel
from safeshare.synth.marginals.sampling import sample_records

__all__ = [
    "Estimate",
    "GraphicalModel",
    "JunctionTree",
    "Measurement",
    "estimate",
    "estimate_total",
    "noise_loss",
    "sample_records",
]
