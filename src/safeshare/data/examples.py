"""Real example data that works offline: the demo's input and the core tests' data.

statsmodels ships two real sensitive surveys with its wheel; safeshare pairs each
with a schema of public facts (the questionnaire's answer codes, the experiment's
design), kept in ``safeshare/data/schemas/``.

>>> frame, schema = load_example("fair")
>>> frame.shape, schema.column("affairs").role.value
((6366, 9), 'sensitive')
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pandas as pd

from safeshare.data.schema import Schema
from safeshare.errors import MissingDependencyError, SchemaError

EXAMPLES: dict[str, str] = {
    "fair": "1974 Redbook survey on extramarital affairs (6,366 women)",
    "randhie": "RAND Health Insurance Experiment, medical use (20,190 person-years)",
}


def schema_path(name: str) -> Path:
    """The packaged schema file of an example dataset."""
    _check_name(name)
    return Path(str(resources.files("safeshare.data") / "schemas" / f"{name}.yaml"))


def load_example(name: str = "fair") -> tuple[pd.DataFrame, Schema]:
    """The example table (as statsmodels ships it) and its packaged schema."""
    _check_name(name)
    try:
        from statsmodels import datasets
    except ImportError:
        raise MissingDependencyError(
            "the example data comes with statsmodels; install it with `pip install statsmodels`"
        ) from None
    frame = getattr(datasets, name).load_pandas().data.reset_index(drop=True)
    return frame, Schema.load(schema_path(name))


def _check_name(name: str) -> None:
    if name not in EXAMPLES:
        raise SchemaError(f"unknown example {name!r}; choose one of {sorted(EXAMPLES)}")
