"""``safeshare evaluate``: measure the risk and utility of any released table (ours or another tool's)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from safeshare.cli._arguments import command, force_option, option, quiet_option
from safeshare.cli._output import finish, progress_bar, stdout, styled

if TYPE_CHECKING:
    from safeshare.release.evaluation import EvaluationResult


def _names(text: str | None) -> list[str] | None:
    return [n.strip() for n in text.split(",") if n.strip()] if text else None


def _sources(items: list[str]) -> tuple[tuple[str, ...], ...] | None:
    """``--link-columns A,B --link-columns C,D`` as column sets (none given: None); the
    options refuse any count but two."""
    return tuple(tuple(_names(item) or ()) for item in items) if items else None


def _pairs(items: list[str]) -> dict[str, str]:
    from safeshare.errors import InputError

    out = {}
    for item in items:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise InputError(f"--hierarchy takes COLUMN=FILE, got {item!r}")
        out[name.strip()] = path.strip()
    return out


@dataclass(frozen=True, kw_only=True)
class EvaluateArguments:
    """The options of ``safeshare evaluate``."""

    train: Path = option("--train", help="The real records the release was made from.")
    holdout: Path = option(
        "--holdout", help="Real records of the same population the release never saw."
    )
    release: Path = option(
        "--release", help="The released table (synthetic or anonymized), CSV or Parquet."
    )
    out: Path = option("--out", "-o", help="Directory to write evaluation.json and report.html.")
    aux: Path | None = option(
        "--aux",
        help="Auxiliary table of known people (quasi-identifiers, names) to link.",
        default=None,
    )
    schema: Path | None = option(
        "--schema", "-s", help="YAML schema: kinds, domains, quasi-identifier roles.", default=None
    )
    header: bool | None = option(
        "--header/--no-header",
        help="Whether --train's and --holdout's first row is a header. Default: detected (or the "
        "schema's header:); the release's is always detected.",
        default=None,
    )
    attacks: int = option("--attacks", help="Attacks per privacy attack.", default=500)
    quasi_identifiers: str | None = option(
        "--quasi-identifiers",
        help="Comma-separated quasi-identifiers (default: schema roles).",
        default=None,
    )
    secrets: str | None = option(
        "--secret",
        help="Comma-separated columns to infer (default: sensitive columns).",
        default=None,
    )
    population_size: int | None = option(
        "--population-size", help="Size of the population the records come from.", default=None
    )
    guarantee: str | None = option(
        "--guarantee",
        help="The release's formal guarantee, if known (shown in the report).",
        default=None,
    )
    hierarchy: list[str] = option(
        "--hierarchy",
        help="COLUMN=FILE: an ARX-style hierarchy, so released nodes match the values under them.",
        default=(),
    )
    link_columns: list[str] = option(
        "--link-columns",
        help="Linkability's two sources, given twice: --link-columns A,B --link-columns C,D "
        "(default: two sets balanced by the release's entropy).",
        default=(),
    )
    neighbours: int = option(
        "--neighbours", help="Linkability: released records each source looks up.", default=1
    )
    numeric_codes: int = option(
        "--numeric-codes",
        help="At most this many codes for a numeric column the data decide (the attacks' "
        "resolution; more costs memory).",
        default=256,
    )
    no_ml: bool = option("--no-ml", help="Skip ML efficacy and the detection score.", default=False)
    seed: int | None = option("--seed", help="Seed the attacks (reproducible runs).", default=None)
    force: bool = force_option()
    quiet: bool = quiet_option()


def evaluate_release(given: EvaluateArguments) -> None:
    """Measure what a release exposes (attacks with intervals) and how useful it is."""
    from safeshare.evaluate.assessment import EvaluationOptions
    from safeshare.release.evaluation import EvaluationFiles, evaluate_files

    files = EvaluationFiles(
        train=given.train,
        holdout=given.holdout,
        release=given.release,
        auxiliary=given.aux,
        schema=given.schema,
        hierarchies=_pairs(given.hierarchy),
        header=given.header,
    )
    quasi_identifiers, secrets = _names(given.quasi_identifiers), _names(given.secrets)
    options = EvaluationOptions(
        attacks=given.attacks,
        quasi_identifiers=tuple(quasi_identifiers) if quasi_identifiers else None,
        secrets=tuple(secrets) if secrets else None,
        population_size=given.population_size,
        ml=not given.no_ml,
        link_columns=_sources(given.link_columns),
        neighbours=given.neighbours,
        numeric_codes=given.numeric_codes,
    )
    with progress_bar(given.quiet) as progress:
        result = evaluate_files(
            files,
            out=given.out,
            options=options,
            guarantee=given.guarantee,
            seed=given.seed,
            force=given.force,
            progress=progress,
        )
    finish(given.quiet, result.warnings, partial(_summary, result, given.out))


def _summary(result: EvaluationResult, out: Path) -> None:
    """What an evaluation wrote and found, one line per attack."""
    from rich.table import Table as RichTable

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


evaluate_command = command(EvaluateArguments, evaluate_release)
