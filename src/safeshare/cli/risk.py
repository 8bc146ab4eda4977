"""``safeshare risk``: the re-identification risk of a table on its quasi-identifiers."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from safeshare.cli._arguments import (
    argument,
    command,
    force_option,
    header_option,
    option,
    quiet_option,
)
from safeshare.cli._output import finish, progress_bar, stdout

if TYPE_CHECKING:
    from safeshare.release.risk import RiskMeasurement


@dataclass(frozen=True, kw_only=True)
class RiskArguments:
    """The options of ``safeshare risk``."""

    data: Path = argument("The table to measure: a CSV/TSV or Parquet file.")
    quasi_identifiers: str = option(
        "--quasi-identifiers",
        help="Comma-separated columns an attacker may know (age, zip, sex, ...).",
    )
    out: Path = option(
        "--out", "-o", help="Directory to write risk.json, report.html and records.csv."
    )
    population_size: int | None = option(
        "--population-size",
        help="How many people the records were drawn from (journalist and marketer risk from "
        "the population model; default: the table is the whole population).",
        default=None,
    )
    population: Path | None = option(
        "--population",
        help="A population table (the same quasi-identifiers) to count each class in.",
        default=None,
    )
    threshold: float = option(
        "--threshold", help="A record is at risk above this prosecutor risk.", default=0.2
    )
    header: bool | None = header_option()
    force: bool = force_option()
    quiet: bool = quiet_option()


def measure(given: RiskArguments) -> None:
    """Measure how identifiable the table's records are from their quasi-identifiers."""
    from safeshare.release.risk import measure_risk

    names = [n.strip() for n in given.quasi_identifiers.split(",") if n.strip()]
    with progress_bar(given.quiet) as progress:
        done = measure_risk(
            given.data,
            names,
            out=given.out,
            population_size=given.population_size,
            population=given.population,
            threshold=given.threshold,
            force=given.force,
            progress=progress,
            header=given.header,
        )
    finish(given.quiet, [], partial(_summary, done))


def _summary(done: RiskMeasurement) -> None:
    from rich.table import Table as RichTable

    risk = done.risk
    table = RichTable(show_header=False, box=None, pad_edge=False)
    table.add_row("written", f"{done.out}/risk.json, report.html, records.csv")
    table.add_row("prosecutor", risk.reading)
    table.add_row(
        "journalist",
        f"highest {risk.journalist_max:.0%}; marketer {risk.marketer:.1%} of the records "
        f"re-identified on average ({risk.population_source})",
    )
    if risk.population is not None:
        estimate = risk.population
        table.add_row(
            "population uniques",
            f"{estimate.dankar:,.0f} ({estimate.share:.1%} of {estimate.population_size:,}; "
            f"{estimate.dankar_model})",
        )
    stdout.print(table)


risk_command = command(RiskArguments, measure)
