"""``safeshare release``: the main job on a CSV or Parquet file."""

from __future__ import annotations

from pathlib import Path

import typer

from safeshare.cli._output import progress_bar, release_summary, warn
from safeshare.errors import InputError


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
        "mst",
        help="mst (fast DP baseline), aim (workload-aware DP), pe (Private Evolution: tables, or "
        "text with --text-column) or anonymize (needs --config).",
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
    iterations: int | None = typer.Option(
        None, help="pe: iterations T (default 10 for tables, 5 for text)."
    ),
    samples: int | None = typer.Option(
        None,
        help="pe: samples per iteration (per label for text; default 1000 for tables, 400 with "
        "--api word, 100 with a language model).",
    ),
    checkpoint: Path | None = typer.Option(
        None, help="pe: folder keeping finished iterations; run the same command again to resume."
    ),
    lookahead: int | None = typer.Option(
        None,
        help="pe: vote with the mean embedding of this many variations of each sample (public "
        "work: no privacy cost; default 0, off).",
    ),
    neighbour_search: str | None = typer.Option(
        None,
        help="pe: the neighbour search for the votes: auto (default), numpy or faiss (pip "
        "install 'safeshare[faiss]'); all give the same neighbours.",
    ),
    text_column: str | None = typer.Option(
        None, help="pe: synthesize this text column (text PE) instead of the table."
    ),
    label_column: str | None = typer.Option(
        None, help="pe text: the label column; each label gets its own PE run."
    ),
    label_names: str | None = typer.Option(
        None,
        help="pe text: public label values and names, e.g. 0=negative,1=positive (else the "
        "labels are found with DP).",
    ),
    api: str = typer.Option(
        "word", help="pe text: word (public templates, no model), openai-compatible or local."
    ),
    base_url: str | None = typer.Option(
        None, help="pe text, openai-compatible: the server, e.g. http://localhost:8000/v1."
    ),
    model: str | None = typer.Option(
        None, help="pe text: the served model's name, or with --api local a model folder/.gguf."
    ),
    api_key_env: str = typer.Option(
        "OPENAI_API_KEY", help="pe text: the environment variable holding the API key."
    ),
    max_new_tokens: int = typer.Option(64, help="pe text: longest reply, in tokens."),
    vocabulary: Path | None = typer.Option(
        None, help="pe text: a public vocabulary file (templates, words; default: reviews)."
    ),
    force: bool = typer.Option(
        False, "--force", help="Replace an earlier safeshare output at --out."
    ),
    quiet: bool = typer.Option(
        False, "--quiet", "-q", help="No progress bar or summary (warnings still print)."
    ),
) -> None:
    """Release a sensitive table as DP synthetic data, with a privacy card and a report."""
    from safeshare.dp.budget import PrivacyBudget
    from safeshare.release import release

    total = None
    if total_epsilon is not None or total_delta is not None:
        total = PrivacyBudget(total_epsilon or epsilon, total_delta or delta)
    if text_column is not None:
        from safeshare.cli._pe import release_text_command
        from safeshare.synth.pe.backends import TextBackend

        if method != "pe":
            raise InputError(f"--text-column needs --method pe (got --method {method})")
        release_text_command(
            data,
            out=out,
            text_column=text_column,
            label_column=label_column,
            label_names=label_names,
            backend=TextBackend(
                api,
                base_url=base_url,
                model=model,
                api_key_env=api_key_env,
                max_new_tokens=max_new_tokens,
                vocabulary=vocabulary,
            ),
            epsilon=epsilon,
            delta=delta,
            iterations=iterations,
            samples=samples,
            lookahead=lookahead,
            neighbour_search=neighbour_search,
            holdout_fraction=holdout_fraction,
            rows=rows,
            seed=seed,
            ledger=ledger,
            total=total,
            force=force,
            checkpoint=checkpoint,
            quiet=quiet,
        )
        return
    if method == "anonymize":  # no DP: no budget, no ledger; the config says what to reach
        _anonymize(data, out, config, force, quiet, engine, memory_limit, spark_master)
        return
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
            progress=progress,
            engine=engine,
            memory_limit=memory_limit,
            spark_master=spark_master,
            output_format=output_format,
            pe_options=_pe_options(
                method, iterations, samples, checkpoint, lookahead, neighbour_search
            ),
        )
    if quiet:  # no summary; warnings still print (on stderr)
        for line in result.warnings:
            warn(line)
        return
    release_summary(result.card, str(out), result.warnings)


def _anonymize(
    data: str,
    out: Path,
    config: Path | None,
    force: bool,
    quiet: bool,
    engine: str,
    memory_limit: str | None,
    spark_master: str | None,
) -> None:
    """``--method anonymize``: the config's models reached by generalization, not DP."""
    from safeshare.cli.anonymize import anonymization_summary
    from safeshare.release.anonymize import release_anonymized

    if config is None:
        raise InputError("--method anonymize needs --config anon.yaml (see docs/anonymize.md)")
    with progress_bar(quiet) as progress:
        result = release_anonymized(
            data,
            config=config,
            out=out,
            force=force,
            progress=progress,
            engine=engine,
            memory_limit=memory_limit,
            spark_master=spark_master,
        )
    if quiet:
        for line in result.warnings:
            warn(line)
        return
    anonymization_summary(result.card, str(out), result.warnings)


_PE_FLAGS = {
    "iterations": "--iterations",
    "samples_per_iteration": "--samples",
    "checkpoint": "--checkpoint",
    "lookahead": "--lookahead",
    "neighbour_search": "--neighbour-search",
}


def _pe_options(
    method: str,
    iterations: int | None,
    samples: int | None,
    checkpoint: Path | None,
    lookahead: int | None,
    neighbour_search: str | None = None,
) -> dict[str, object]:
    """Tabular PE's settings; refused with another method."""
    given: dict[str, object] = {
        "iterations": iterations,
        "samples_per_iteration": samples,
        "checkpoint": checkpoint,
        "lookahead": lookahead,
        "neighbour_search": neighbour_search,
    }
    options: dict[str, object] = {k: v for k, v in given.items() if v is not None}
    if options and method != "pe":
        flags = ", ".join(_PE_FLAGS[k] for k in options)
        raise InputError(f"{flags} apply to --method pe only (this run uses --method {method})")
    return options
