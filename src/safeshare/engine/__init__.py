"""engine/: counting backends behind one interface (numpy by default)."""

from safeshare.engine.base import CountingEngine
from safeshare.engine.numpy_engine import NumpyEngine

__all__ = ["CountingEngine", "NumpyEngine", "default_engine"]


def default_engine() -> CountingEngine:
    """The engine used when none is given."""
    return NumpyEngine()
