"""synth/: DP synthesizers (fit once, sample freely) and the marginal engine they share."""

from safeshare.synth.aim import AIM
from safeshare.synth.base import Synthesizer
from safeshare.synth.constraints import Constraint
from safeshare.synth.mst import MST
from safeshare.synth.pe import PrivateEvolution
from safeshare.synth.workload import Workload

__all__ = ["AIM", "MST", "Constraint", "PrivateEvolution", "Synthesizer", "Workload"]
