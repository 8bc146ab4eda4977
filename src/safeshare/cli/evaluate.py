"""``safeshare evaluate``: measure the risk and utility of any released table (ours or another tool's)."""

from __future__ import annotations

from pathlib import Path

import typer

from safeshare.cli._output import progress_bar, stdout, styled, warn


def _names(text: str | None) -> list[str] | None:
    return [n.strip() for n in text.split(",") if n.strip()] if text else None


def _pairs(items: list[str]) -> dict[str, str]:
    from safeshare.errors import InputError

    out = {}
    for item in items:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise InputError(f"--hierarchy takes COLUMN=FILE, got {item!r}")
        out[name.strip()] = path.strip()
    return out


def evaluate_command(
    train: Path = typer.Option(..., "--train", help="The real records the release was made from."),
    holdout: Path = typer.Option(
        ..., "--holdout", help="Real records of the same population the release never saw."
    ),
    release: Path = typer.Option(
        ..., "--release", help="The released table (synthetic or anonymized), CSV or Parquet."
    ),
    out: Path = typer.Option(
        ..., "--out", "-o", help="Directory to write evaluation.json and report.html."
    ),
    aux: Path | None = typer.Option(
        None, "--aux", help="Auxiliary table of known people (quasi-identifiers, names) to link."
    ),
    schema: Path | None = typer.Option(
        None, "--schema", "-s", help="YAML schema: kinds, domains, quasi-identifier roles."
    ),
    attacks: int = typer.Option(500, "--attacks", help="Attacks per privacy attack."),
    quasi_identifiers: str | None = typer.Option(
        None,
        "--quasi-identifiers",
        help="Comma-separated quasi-identifiers (default: schema roles).",
    ),
    secrets: str | None = typer.Option(
        None, "--secret", help="Comma-separated columns to infer (default: sensitive columns)."
    ),
    population_size: int | None = typer.Option(
        None, "--population-size", help="Size of the population the records come from."
    ),
    guarantee: str | None = typer.Option(
        None, "--guarantee", help="The release's formal guarantee, if known (shown in the report)."
    ),
    hierarchy: list[str] = typer.Option(
        [],
        "--hierarchy",
        help="COLUMN=FILE: an ARX-style hierarchy, so released nodes match the values under them.",
    ),
    no_ml: bool = typer.Option(False, "--no-ml", help="Skip ML efficacy and the detection score."),
    seed: int | None = typer.Option(None, "--seed", help="Seed the attacks (reproducible runs)."),
    force: bool = typer.Option(
        False, "--force", help="Replace an earlier safeshare output at --out."
    ),
    quiet: bool = typer.Option(
        False, "--quiet", "-q", help="No progress bar or summary (warnings still print)."
    ),
) -> None:
    """Measure what a release exposes (attacks with intervals) and how useful it is."""
    from rich.table import Table as RichTable

    from safeshare.release.evaluation import evaluate_files

    with progress_bar(quiet) as progress:
        result = evaluate_files(
            train,
            holdout,
            release,
            out=out,
            auxiliary=aux,
            schema=schema,
            attacks=attacks,
            population_size=population_size,
            quasi_identifiers=_names(quasi_identifiers),
            secrets=_names(secrets),
            ml=not no_ml,
            seed=seed,
            guarantee=guarantee,
            hierarchies=_pairs(hierarchy),
            force=force,
            progress=progress,
        )
    if quiet:  # no summary; warnings still print (on stderr)
        for line in result.warnings:
            warn(line)
        return
    headline = result.evaluation["headline"]
    table = RichTable(show_header=False, box=None, pad_edge=False)
    table.add_row("written", f"{out}/evaluation.json, report.html")
    table.add_row("guarantee", result.evaluation["guarantee"])
    for attack in result.assessment.attacks:
        table.add_row(attack.name, styled(attack.reading, "red" if attack.significant else ""))
    for member in result.assessment.membership:
        table.add_row(member.name, member.reading)
    table.add_row("memorization", result.assessment.memorization.readings[0])
    table.add_row("utility", headline["utility"]["reading"])
    stdout.print(table)
    for line in result.warnings:
        warn(line)
