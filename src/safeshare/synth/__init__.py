"""synth/: DP synthesizers (fit once, sample freely) and the marginal engine they share."""

from safeshare.synth.base import Synthesizer
from safeshare.synth.mst import MST

__all__ = ["MST", "Synthesizer"]
