"""The risk job: a table and its quasi-identifiers in, its re-identification risk out.

No holdout, no release and no attack suite: what a data owner asks before choosing how to
share a table.  The table's records are grouped by their quasi-identifiers, as written
(:mod:`safeshare.evaluate.reidentification`): prosecutor risk from the class sizes; journalist
and marketer risk from a population table (``population``), else from the population model
for ``population_size`` people (Pitman, Zayatz, SNB and Dankar's choice among them), else
with the table as the whole population.  Written to ``out``: ``risk.json`` (the figures),
``report.html`` (the same for a person) and ``records.csv`` (per record, in the input's
order: its class size and its prosecutor and journalist risk), so the riskiest records can be
found.  None holds a value of the data.

>>> import tempfile, pathlib, pandas as pd
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> frame = pd.DataFrame({"zip": ["13053"] * 3 + ["14850"], "age": ["30", "30", "30", "41"]})
>>> frame.to_csv(folder / "people.csv", index=False)
>>> done = measure_risk(folder / "people.csv", ["zip", "age"], out=folder / "risk")
>>> done.risk.sample_uniques, done.risk.prosecutor_max
(1, 1.0)
>>> pd.read_csv(folder / "risk" / "records.csv")["class_size"].tolist()
[3, 3, 3, 1]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from safeshare._progress import Progress, no_progress
from safeshare.data.codec import encode_frame
from safeshare.data.domain import Column, Domain, Kind, Role
from safeshare.data.readers import fingerprint_file, read_frame
from safeshare.data.table import Table
from safeshare.errors import InputError
from safeshare.evaluate.reidentification import (
    MAX_POPULATION,
    ReidentificationResult,
    record_risks,
    reidentification_risk,
)
from safeshare.output_folder import check_output
from safeshare.release.evaluation import to_json
from safeshare.release.output import write_release
from safeshare.report.card import card_header
from safeshare.report.risk import render_risk_report

GUARANTEE = (
    "none: a measurement of the table as given, not a release; its figures read the private "
    "data without differential privacy and are for the data owner's review"
)


@dataclass(frozen=True)
class RiskMeasurement:
    """What the risk job wrote (``out``), its figures (``measurement``) and the result."""

    out: Path
    measurement: dict[str, Any]
    risk: ReidentificationResult


def measure_risk(
    source: str | Path,
    quasi_identifiers: Sequence[str],
    *,
    out: str | Path,
    population_size: int | None = None,
    population: str | Path | None = None,
    threshold: float = 0.2,
    force: bool = False,
    progress: Progress = no_progress,
    header: bool | None = None,
) -> RiskMeasurement:
    """Measure the re-identification risk of the table at ``source`` on ``quasi_identifiers``
    and write ``risk.json`` and ``records.csv`` to ``out`` (see the module docstring).
    ``header``: whether the table's first row is a header (None detects it; the population
    table's is always detected)."""
    out = check_output(out, force=force, inputs=[p for p in (source, population) if p])
    _check_settings(quasi_identifiers, population_size, threshold)
    progress("reading", 0.0)
    qis = list(quasi_identifiers)
    table, people = _read_tables(source, population, qis, header)
    if population_size is not None and population_size < len(table):
        raise InputError(
            f"--population-size {population_size:,} is smaller than the table's "
            f"{len(table):,} records; give the size of the population the records come from"
        )
    if people is not None and len(people) < len(table):
        raise InputError(
            f"the population table ({len(people):,} records) is smaller than the table's "
            f"{len(table):,} records; give the population the records were drawn from"
        )
    progress("measuring", 0.3)
    risk = reidentification_risk(
        table, qis, population_size=population_size, population=people, threshold=threshold
    )
    measurement = _measurement(source, population, risk)
    progress("writing", 0.9)
    html = render_risk_report(measurement)
    files: dict[str, pd.DataFrame | str] = {
        "risk.json": to_json(measurement),
        "records.csv": _record_risks(table, people, qis, risk),
        "report.html": html,
    }
    write_release(out, files, force)
    progress("done", 1.0)
    return RiskMeasurement(out, measurement, risk)


def _read_tables(
    source: str | Path, population: str | Path | None, qis: list[str], header: bool | None
) -> tuple[Table, Table | None]:
    """The table's quasi-identifiers encoded with every value its own code, and the
    population table's on the same codes (None without one)."""
    frame = read_frame(source, header=header)
    _check_columns(frame, qis, "the table")
    domain = _exact_domain(frame, qis)
    table = encode_frame(frame[qis], domain)[0]
    if population is None:
        return table, None
    known = read_frame(population)
    _check_columns(known, qis, "the population table")
    return table, encode_frame(known[qis], domain)[0]


def _measurement(
    source: str | Path, population: str | Path | None, risk: ReidentificationResult
) -> dict[str, Any]:
    """``risk.json``: the card header (no guarantee: a measurement), then the figures."""
    return {
        **card_header(
            "risk",
            GUARANTEE,
            budget=None,
            secure_noise=None,
            source={"name": Path(source).name, "sha256": fingerprint_file(source)},
        ),
        "kind": "risk",
        "population": None if population is None else Path(population).name,
        **risk.to_dict(),
        "not_dp": [
            "every figure here is an exact count of the private data (no differential privacy)"
        ],
        "records_file": "records.csv: per record, in the input's order, its class size and its "
        "prosecutor and journalist risk (no value of the data)",
    }


def _check_settings(
    quasi_identifiers: Sequence[str], population_size: int | None, threshold: float
) -> None:
    if not quasi_identifiers:
        raise InputError("name the quasi-identifiers: --quasi-identifiers age,zip,sex")
    repeated = sorted({q for q in quasi_identifiers if list(quasi_identifiers).count(q) > 1})
    if repeated:
        raise InputError(f"--quasi-identifiers names {repeated} twice; name each column once")
    if population_size is not None and not 1 <= population_size <= MAX_POPULATION:
        raise InputError(
            f"--population-size must be a count in 1..{MAX_POPULATION:,}, got {population_size}"
        )
    if not 0 < threshold <= 1:
        raise InputError(f"--threshold is a risk in (0, 1], got {threshold}")


def _check_columns(frame: pd.DataFrame, qis: list[str], what: str) -> None:
    absent = [q for q in qis if q not in frame.columns]
    if absent:
        raise InputError(
            f"{what} has no column {absent[0]!r}; its columns are {list(frame.columns)}"
        )
    if frame.empty:
        raise InputError(f"{what} has no records")


def _exact_domain(frame: pd.DataFrame, qis: list[str]) -> Domain:
    """Every value of each quasi-identifier its own category (the classes as written)."""
    return Domain(
        tuple(
            Column(
                name,
                Kind.CATEGORICAL,
                Role.QUASI_IDENTIFIER,
                categories=tuple(sorted(frame[name].dropna().astype(str).unique())),
            )
            for name in qis
        )
    )


def _record_risks(
    table: Table, population: Table | None, qis: list[str], risk: ReidentificationResult
) -> pd.DataFrame:
    """Per record of ``table``: its row number, class size, prosecutor and journalist risk."""
    sizes, journalist = record_risks(table, qis, risk, population)
    return pd.DataFrame(
        {
            "row": np.arange(1, len(sizes) + 1),
            "class_size": sizes,
            "prosecutor": np.round(1.0 / sizes, 6),
            "journalist": np.round(journalist, 6),
        }
    )
