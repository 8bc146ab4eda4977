"""safeshare: turn sensitive tables into artifacts that are safe to share, and measure how safe.

>>> from safeshare import release, read_table, Schema, SynthesisSettings, Reading
>>> callable(release), SynthesisSettings(epsilon=2.0).method
(True, 'mst')

The names below load on first use, so a command that needs only one technique (say
``safeshare anonymize``) does not import every other.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# the subpackage first (it is light: its pipeline loads on first use), so that importing
# one of its modules later never rebinds ``safeshare.release`` away from the function below
importlib.import_module("safeshare.release")

if TYPE_CHECKING:
    from safeshare.data import Column, Domain, Kind, Role, Schema, Table, read_frame, read_table
    from safeshare.dp import Ledger, PrivacyBudget
    from safeshare.release import Reading, ReleaseResult, SynthesisSettings, release
    from safeshare.synth import MST
else:

    def release(source: Any, **options: Any) -> Any:
        """The main job; see :func:`safeshare.release.pipeline.release` (loaded on first call)."""
        from safeshare.release.pipeline import release as run

        return run(source, **options)


_HOMES = {
    "Column": "safeshare.data",
    "Domain": "safeshare.data",
    "Kind": "safeshare.data",
    "Role": "safeshare.data",
    "Schema": "safeshare.data",
    "Table": "safeshare.data",
    "read_frame": "safeshare.data",
    "read_table": "safeshare.data",
    "Ledger": "safeshare.dp",
    "PrivacyBudget": "safeshare.dp",
    "Reading": "safeshare.release",
    "ReleaseResult": "safeshare.release",
    "SynthesisSettings": "safeshare.release",
    "MST": "safeshare.synth",
}

__all__ = [
    "MST",
    "Column",
    "Domain",
    "Kind",
    "Ledger",
    "PrivacyBudget",
    "Reading",
    "ReleaseResult",
    "Role",
    "Schema",
    "SynthesisSettings",
    "Table",
    "__version__",
    "read_frame",
    "read_table",
    "release",
]


def __getattr__(name: str) -> Any:
    """Load a public name from its module on first use."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'safeshare' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value
