"""release/: the main job. One call turns a sensitive table into a safe artifact, a privacy
card and a report; see :func:`safeshare.release.pipeline.release`.

The pipeline loads on first use, so ``safeshare.release.anonymize`` alone stays light.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from safeshare.release.inputs import Reading
    from safeshare.release.pipeline import METHODS, ReleaseResult, SynthesisSettings, release

__all__ = ["METHODS", "Reading", "ReleaseResult", "SynthesisSettings", "release"]


def __getattr__(name: str) -> Any:
    """Load the pipeline's public names on first use."""
    if name not in __all__:
        raise AttributeError(f"module 'safeshare.release' has no attribute {name!r}")
    home = "safeshare.release.inputs" if name == "Reading" else "safeshare.release.pipeline"
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value
