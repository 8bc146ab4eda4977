"""The one exception family of safeshare.

Every error a user can cause derives from :class:`SafeshareError` and from the
builtin it refines, so ``except ValueError`` keeps working for callers that do not
know safeshare.  Messages name the bad input and the fix, never a private value.

>>> try:
...     raise SchemaError("column 'age': bounds [9, 3] are reversed; write [3, 9]")
... except ValueError as err:
...     print(err)
column 'age': bounds [9, 3] are reversed; write [3, 9]
"""

from __future__ import annotations


class SafeshareError(Exception):
    """Base of every error safeshare raises on purpose."""


class InputError(SafeshareError, ValueError):
    """The input table cannot be read or has the wrong shape."""


class InputFileNotFoundError(InputError, FileNotFoundError):
    """The input file does not exist."""


class SchemaError(SafeshareError, ValueError):
    """A schema file or a column declaration is invalid."""


class EncodingError(SafeshareError, ValueError):
    """A table's values do not fit its domain (e.g. text in a numeric column)."""


class BudgetError(SafeshareError, ValueError):
    """A privacy parameter is invalid or too small to measure anything."""


class BudgetExceededError(BudgetError):
    """A release would spend more than the dataset's total budget in the ledger."""


class LedgerError(SafeshareError, RuntimeError):
    """The privacy ledger cannot be opened or is inconsistent."""


class NotFittedError(SafeshareError, RuntimeError):
    """An estimator was used before ``fit``."""


class RefitError(SafeshareError, RuntimeError):
    """A DP estimator was fitted twice (a second fit would spend budget again)."""


class OutputExistsError(SafeshareError, FileExistsError):
    """The output directory exists and ``force`` was not given."""


class OutputWriteError(SafeshareError, OSError):
    """The output could not be written (a full disk, a lost mount); the message says whether
    the run's budget was refunded."""


class OutOfMemoryError(SafeshareError, MemoryError):
    """A run ran out of memory; the message says whether its budget was refunded and how
    to need less."""


class MissingDependencyError(SafeshareError, ImportError):
    """An optional dependency is not installed; the message names the extra."""


class EngineJobError(SafeshareError, RuntimeError):
    """An engine's job failed for reasons of the machine (a Spark job, memory), not of the
    data's values; the message names the step, never the data."""


class ModelAPIError(SafeshareError, ConnectionError):
    """A model's server failed or could not be reached (after retries).

    ``answered`` maps the position of each request of the failed call that was answered
    before the failure to its reply, so what was paid for can be kept."""

    answered: dict[int, str] = {}  # noqa: RUF012 (set per instance; read-only here)
