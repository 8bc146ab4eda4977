"""``safeshare anonymize``: generalize and suppress a table until it satisfies its privacy models."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from rich.text import Text

from safeshare.cli._arguments import (
    argument,
    command,
    force_option,
    header_option,
    option,
    quiet_option,
)
from safeshare.cli._output import finish, progress_bar, stdout, styled


@dataclass(frozen=True, kw_only=True)
class AnonymizeArguments:
    """The options of ``safeshare anonymize``."""

    data: Path = argument("The sensitive table: a CSV/TSV or Parquet file.")
    config: Path = option(
        "--config",
        "-c",
        help="YAML config: quasi-identifiers with hierarchies, sensitive columns, privacy models.",
    )
    out: Path = option(
        "--out", "-o", help="Directory to write anonymized.csv, card.json, report.html."
    )
    header: bool | None = header_option()
    force: bool = force_option()
    quiet: bool = quiet_option()


def anonymize_table(given: AnonymizeArguments) -> None:
    """Anonymize a table (k-anonymity, l-diversity, t-closeness, ...) with an optimal search."""
    from safeshare.release.anonymize import release_anonymized
    from safeshare.release.inputs import Reading

    with progress_bar(given.quiet) as progress:
        result = release_anonymized(
            given.data,
            config=given.config,
            out=given.out,
            force=given.force,
            progress=progress,
            reading=Reading(header=given.header),
        )
    finish(
        given.quiet, result.warnings, partial(anonymization_summary, result.card, str(given.out))
    )


anonymize_command = command(AnonymizeArguments, anonymize_table)


def anonymization_summary(card: dict[str, Any], out: str) -> None:
    """What an anonymized release wrote and what it reached, in a few lines."""
    from rich.table import Table as RichTable

    table = RichTable(show_header=False, box=None, pad_edge=False)
    table.add_row("written", f"{out}/anonymized.csv, card.json, report.html")
    table.add_row(
        "guarantee",
        Text.assemble(
            styled("none formal", "yellow"), ": anonymization without DP; run the risk suite"
        ),
    )
    for model in card["models"]:
        reached = ", ".join(f"{k}={v:.4g}" for k, v in model["achieved"].items())
        state = "satisfied" if model["satisfied"] else "NOT satisfied"
        table.add_row("model", f"{model['model']} ({model['parameters']}): {state}; {reached}")
    levels = ", ".join(
        f"{name} {level if level is not None else 'varies'}"
        for name, level in card["transformation"].items()
    )
    table.add_row("levels", levels)
    table.add_row(
        "rows",
        f"{card['rows_out']} released of {card['rows_in']} ({card['suppressed']} suppressed)",
    )
    quality = card["quality"]["overall"]
    table.add_row(
        "quality",
        f"precision loss {quality['precision']:.4f}, {card['classes']['count']} classes "
        f"(smallest {card['classes']['smallest']})",
    )
    stdout.print(table)
