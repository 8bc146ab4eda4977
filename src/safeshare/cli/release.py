"""``safeshare release``: the main job on a CSV or Parquet file."""

from __future__ import annotations

from pathlib import Path

import typer

from safeshare.cli._output import progress_bar, release_summary


def release_command(
    data: str = typer.Argument(
        ...,
        help="The sensitive table: a CSV/TSV or Parquet file, a folder of Parquet files, or "
        "with --engine spark a URI (hdfs://, s3a://).",
    ),
    out: Path = typer.Option(
        ..., "--out", "-o", help="Directory to write synthetic.csv, card.json, report.html."
    ),
    epsilon: float = typer.Option(1.0, help="Privacy budget epsilon for this release."),
    delta: float = typer.Option(1e-9, help="Privacy budget delta for this release."),
    schema: Path | None = typer.Option(
        None, help="YAML schema of public facts (kinds, categories, bounds, roles)."
    ),
    method: str = typer.Option(
        "mst", help="mst (fast DP baseline), aim (workload-aware DP) or anonymize (needs --config)."
    ),
    config: Path | None = typer.Option(
        None, "--config", "-c", help="anonymize: YAML config (quasi-identifiers, models)."
    ),
    workload: str | None = typer.Option(
        None, help="aim: the marginals to optimize for: 2way, 3way (default) or a YAML file."
    ),
    max_model_size: float = typer.Option(80.0, help="aim: cap on the model's size in MB."),
    time_limit: float | None = typer.Option(
        None, help="aim: seconds of selection before the rest of the budget is spent at once."
    ),
    holdout_fraction: float = typer.Option(
        0.2, help="Share of records kept out of synthesis, for evaluation."
    ),
    rows: int | None = typer.Option(
        None, help="Synthetic records to write (default: a DP estimate of the input size)."
    ),
    seed: int | None = typer.Option(
        None, help="Reproducible run. NOT private against anyone who knows the seed."
    ),
    unsafe_infer: bool = typer.Option(
        False, "--unsafe-infer", help="Read categories/bounds without DP (flagged)."
    ),
    ledger: Path | None = typer.Option(
        None, help="Privacy ledger file (default: $SAFESHARE_LEDGER or user data dir)."
    ),
    total_epsilon: float | None = typer.Option(
        None, help="Total epsilon of this dataset, if the ledger has none yet."
    ),
    total_delta: float | None = typer.Option(
        None, help="Total delta of this dataset, if the ledger has none yet."
    ),
    engine: str = typer.Option(
        "auto",
        help="Who counts: numpy (in memory), duckdb (files larger than memory), spark (a "
        "cluster; DATA may be a URI) or auto (duckdb above 1 GiB when installed). "
        "The release is the same.",
    ),
    output_format: str = typer.Option(
        "csv", help="csv or parquet (streamed in chunks: the better choice for large releases)."
    ),
    spark_master: str | None = typer.Option(
        None, help="spark: the master URL (default: what spark-submit gives, else local[2])."
    ),
    memory_limit: str | None = typer.Option(
        None, help="duckdb: memory cap, e.g. 2GB (default: $SAFESHARE_DUCKDB_MEMORY or 2GB)."
    ),
    force: bool = typer.Option(False, "--force", help="Replace the output directory if it exists."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar or summary."),
) -> None:
    """Release a sensitive table as DP synthetic data, with a privacy card and a report."""
    from safeshare.dp.budget import PrivacyBudget
    from safeshare.release import release

    total = None
    if total_epsilon is not None or total_delta is not None:
        total = PrivacyBudget(total_epsilon or epsilon, total_delta or delta)
    with progress_bar(quiet) as progress:
        result = release(
            data,
            out=out,
            method=method,
            epsilon=epsilon,
            delta=delta,
            schema=schema,
            holdout_fraction=holdout_fraction,
            rows=rows,
            workload=workload,
            max_model_size=max_model_size,
            time_limit=time_limit,
            seed=seed,
            unsafe_infer=unsafe_infer,
            ledger=ledger,
            total_budget=total,
            force=force,
            config=config,
            progress=progress,
            engine=engine,
            memory_limit=memory_limit,
            spark_master=spark_master,
            output_format=output_format,
        )
    if quiet:
        return
    if method == "anonymize":
        from safeshare.cli.anonymize import anonymization_summary

        anonymization_summary(result.card, str(out), result.warnings)
    else:
        release_summary(result.card, str(out), result.warnings)
