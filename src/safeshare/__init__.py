"""safeshare: turn sensitive tables into artifacts that are safe to share, and measure how safe.

>>> from safeshare import release, read_table, Schema
>>> callable(release)
True
"""

__version__ = "0.1.0"

from safeshare.data import Column, Domain, Kind, Role, Schema, Table, read_frame, read_table
from safeshare.dp import Ledger, PrivacyBudget
from safeshare.release import ReleaseResult, release
from safeshare.synth import MST

__all__ = [
    "MST",
    "Column",
    "Domain",
    "Kind",
    "Ledger",
    "PrivacyBudget",
    "ReleaseResult",
    "Role",
    "Schema",
    "Table",
    "__version__",
    "read_frame",
    "read_table",
    "release",
]
