"""Errors of PAC calibration, in the one family of :mod:`safeshare.errors`.

Each names what went wrong and the fix, never a value of the private data.

>>> issubclass(NonDeterministicError, ValueError), issubclass(NoiseSwampsOutputError, ValueError)
(True, True)
"""

from __future__ import annotations

from safeshare.errors import BudgetError, SafeshareError


class MechanismOutputError(SafeshareError, ValueError):
    """The black-box function returned something calibration cannot use.

    Outputs of varying shape, non-numeric values, NaN or infinity.
    """


class MechanismFailedError(SafeshareError, RuntimeError):
    """The black-box function raised; its message is not repeated (it may hold records)."""


class NonDeterministicError(MechanismOutputError):
    """The function gave different outputs for the same input (it has its own randomness)."""


class InsufficientSamplesError(SafeshareError, ValueError):
    """Too few black-box runs for a stable estimate of how the output varies."""


class NoiseSwampsOutputError(BudgetError):
    """The budget is so small that the calibrated noise would swamp the output."""
