"""The anonymization release: sensitive table in, anonymized table + card + report out.

read -> anonymize (hierarchies, models, search, suppression, identifier transforms) ->
measure (classes, quality, models reached) -> card + report -> one atomic write of
``anonymized.csv`` (with the input CSV's delimiter), ``card.json`` and ``report.html``.  A
failure at any step writes nothing.

With ``engine="duckdb"`` or ``"spark"`` (or ``"auto"`` on a file over 1 GiB) the table is never
loaded: the engine counts its distinct quasi-identifier rows in one ``GROUP BY``, the search
runs on those counts (:meth:`~safeshare.anonymize.anonymizer.Anonymizer.plan`), and the
records are read back and released one chunk at a time into ``anonymized.csv``.  The files
are byte for byte those of the in-memory release; only the card's ``engine`` line differs.

>>> import tempfile, pathlib, pandas as pd
>>> frame = pd.DataFrame({"zip": ["13053", "13068", "13068", "13053", "14850", "14853"],
...                       "disease": ["flu", "cold", "flu", "cold", "flu", "cold"]})
>>> config = {"quasi_identifiers": {"zip": {"hierarchy": "mask"}},
...           "sensitive": ["disease"], "privacy": {"k": 2}}
>>> out = pathlib.Path(tempfile.mkdtemp()) / "release"
>>> result = release_anonymized(frame, config=config, out=out, reading=Reading(name="clinic"))
>>> sorted(p.name for p in out.iterdir())
['.safeshare-output', 'anonymized.csv', 'card.json', 'report.html']
>>> result.card["method"], result.card["models"][0]["achieved"]
('anonymize', {'k': 2})
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from safeshare._progress import Progress, no_progress
from safeshare.anonymize.anonymizer import AnonymizationResult, Anonymizer
from safeshare.anonymize.config import AnonymizeConfig
from safeshare.anonymize.counted import AnonymizationPlan
from safeshare.anonymize.output import NAMED_IDENTIFIER
from safeshare.data.identity import PARQUET_SUFFIXES
from safeshare.data.readers import sniff_csv
from safeshare.errors import InputError
from safeshare.output_folder import check_output
from safeshare.release.inputs import EngineInput, FrameInput, Reading, ReleaseInput, open_input
from safeshare.release.output import write_csv, write_release
from safeshare.report.anonymization import render_anonymization_report
from safeshare.report.card import card_header


def guarantee_line(t_closeness: bool = False) -> str:
    """The card's guarantee line; with ``t_closeness`` it says what t is measured against.

    >>> "input table's distribution" in guarantee_line(t_closeness=True)
    True
    """
    against = (
        " (t-closeness as ARX measures it: each class against the input table's distribution, "
        "not the released table's)"
        if t_closeness
        else ""
    )
    return (
        "none formal: anonymization without differential privacy gives no mathematical "
        f"guarantee; the privacy models below hold for the released table as written{against}, "
        "and the risk suite measures what re-identification and inference risk remains"
    )


@dataclass(frozen=True)
class AnonymizedRelease:
    """What an anonymization release wrote, its card, and the full result."""

    out: Path
    card: dict[str, Any]
    anonymized: pd.DataFrame
    result: AnonymizationResult
    warnings: list[str] = field(default_factory=list)


def release_anonymized(
    source: str | Path | pd.DataFrame,
    *,
    config: AnonymizeConfig | Mapping[str, Any] | str | Path,
    out: str | Path,
    reading: Reading | None = None,
    force: bool = False,
    progress: Progress | None = None,
) -> AnonymizedRelease:
    """Anonymize ``source`` under ``config`` and write the release to ``out`` atomically.

    ``reading`` names the table and picks who reads it (:class:`Reading`: in memory, or where
    it lies with DuckDB or Spark, for tables larger than memory); the release is the same.
    The config declares the columns, so a schema is refused.
    """
    report = progress or no_progress
    reading = reading or Reading()
    reading.check()
    if reading.schema is not None:
        raise InputError(
            "anonymization reads its columns from the config; drop the schema (--schema)"
        )
    out = check_output(out, force=force, inputs=(source, config))
    if isinstance(config, str | Path):
        config = AnonymizeConfig.load(config)
    elif not isinstance(config, AnonymizeConfig):
        config = AnonymizeConfig.from_dict(dict(config))

    report("reading", 0.0)
    delimiter = _delimiter(source)
    with open_input(source, None, reading) as data:
        result, first, records, described = _anonymized(
            data, Anonymizer(config), out.parent, delimiter, report
        )
        name, fingerprint = data.name, data.identity.card()["sha256"]

    report("writing", 0.9)
    warnings = _warnings(result)
    try:
        card = build_anonymization_card(
            result,
            config=config,
            name=name,
            fingerprint=fingerprint,
            notes=warnings,
            engine=described,
        )
        html = render_anonymization_report(card)
        write_release(
            out, {"anonymized.csv": records, "card.json": card, "report.html": html}, force
        )
    finally:
        records.unlink(missing_ok=True)
    report("done", 1.0)
    return AnonymizedRelease(out, card, first, result, warnings)


def _delimiter(source: str | Path | pd.DataFrame) -> str:
    """The delimiter ``anonymized.csv`` is written with: the input CSV's own (``,`` else)."""
    if isinstance(source, pd.DataFrame):
        return ","
    path = Path(source)
    if not path.is_file() or path.suffix.lower() in PARQUET_SUFFIXES:
        return ","
    return sniff_csv(path)[0]


def _anonymized(
    data: ReleaseInput, anonymizer: Anonymizer, workdir: Path, delimiter: str, report: Progress
) -> tuple[AnonymizationResult, pd.DataFrame, Path, dict[str, Any]]:
    """The search and the released records, written with ``delimiter`` into a file in
    ``workdir`` (from an engine's counts, a chunk at a time); the first records, the file, and
    what the input was."""
    steps = _scaled(report, 0.05, 0.75)
    described = data.describe()
    if isinstance(data, FrameInput):
        result = anonymizer.fit(data.frame, progress=steps)
        return result, result.frame, _written(result.frame, workdir, delimiter), described
    if not isinstance(data, EngineInput):  # (open_input gives one of the two)
        raise TypeError(f"unexpected input {type(data).__name__}")
    anonymizer.check_columns(data.source.names, len(data.source))
    counts, weights = data.source.value_counts(anonymizer.counted_columns())
    described["distinct_rows"] = len(weights)  # what its GROUP BY gave the search
    plan = anonymizer.plan(counts, weights, data.source.names, progress=steps)
    report("writing", 0.85)
    first, records = _write_chunks(plan, data, workdir, delimiter)
    return plan.result, first, records, described


def _scratch(workdir: Path) -> Path:
    """A new empty file in ``workdir`` (beside the output) for the released records."""
    workdir.mkdir(parents=True, exist_ok=True)
    handle, name = tempfile.mkstemp(prefix=".anonymized-", suffix=".csv", dir=workdir)
    os.close(handle)
    return Path(name)


def _written(frame: pd.DataFrame, workdir: Path, delimiter: str) -> Path:
    """``frame`` written as CSV with ``delimiter`` into a new file in ``workdir``."""
    path = _scratch(workdir)
    try:
        with path.open("w", encoding="utf-8", newline="") as stream:
            write_csv(frame, stream, delimiter=delimiter)
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    return path


def _write_chunks(
    plan: AnonymizationPlan, data: EngineInput, workdir: Path, delimiter: str
) -> tuple[pd.DataFrame, Path]:
    """Release the records a chunk at a time into a CSV file beside the output; the first
    chunk released, and the file.  Refuses when the records written are not those counted."""
    path = _scratch(workdir)
    first: pd.DataFrame | None = None
    written = 0
    try:
        with path.open("w", encoding="utf-8", newline="") as stream:
            for chunk in data.source.chunks():
                released = plan.apply(chunk)
                write_csv(released, stream, header=first is None, delimiter=delimiter)
                written += len(released)
                first = released if first is None else first
        if written != plan.result.rows_out or first is None:
            raise RuntimeError(
                f"internal error: {written} records were released but the counts promised "
                f"{plan.result.rows_out}; please report this"
            )
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    return first, path


def _scaled(report: Progress, start: float, share: float) -> Progress:
    """``report`` for a step that covers ``share`` of the run from ``start``."""
    return lambda step, done: report(step, start + share * done)


def build_anonymization_card(
    result: AnonymizationResult,
    *,
    config: AnonymizeConfig,
    name: str,
    fingerprint: str,
    notes: list[str],
    engine: Mapping[str, object] | None = None,
) -> dict[str, Any]:
    """The privacy card of an anonymized release (JSON-ready); ``engine`` is the card's line
    on who read the table (default: numpy, in memory)."""
    columns: dict[str, Any] = {}
    for column, entry in result.columns.items():
        item = dict(entry)
        if column in result.transformation:
            level = result.transformation[column]
            item["level"] = level
            item["height"] = result.hierarchies[column]["height"]
            item["hierarchy"] = result.hierarchies[column]["source"]
            item["quality"] = result.quality.per_attribute.get(column, {})
        item["dropped"] = entry["transform"] in ("drop", NAMED_IDENTIFIER)
        columns[column] = item
    header = card_header(
        "anonymize",
        guarantee_line(any(m.name == "t-closeness" for m in result.models)),
        budget=None,
        secure_noise=None,
        source={"name": name, "sha256": fingerprint},
    )
    return {
        **header,
        "budget": None,
        "domain_source": "public hierarchies from the config",
        "engine": dict(engine) if engine is not None else {"name": "numpy"},
        "columns": columns,
        "rows_in": result.rows_in,
        "rows_out": result.rows_out,
        "suppressed": result.suppressed,
        "suppressed_records": result.suppressed_records,
        "suppression_limit": config.suppression_limit,
        "transformation": result.transformation,
        "models": [m.to_dict() for m in result.models],
        "models_satisfied": result.satisfied,
        "quality": result.quality.to_dict(),
        "classes": result.classes.to_dict(),
        "search": result.search,
        "metrics": {
            "quality": result.quality.overall,
            "classes": result.classes.to_dict(),
        },
        "not_dp": [
            "nothing in this release is differentially private: the transformation, the "
            "suppression and every figure here were computed from the private data",
            "rows_in, rows_out, the suppressed count and the class sizes are exact counts",
        ],
        "notes": notes,
    }


def _warnings(result: AnonymizationResult) -> list[str]:
    lines = []
    unprotected = [c for c, e in result.columns.items() if e["transform"].startswith("kept (not")]
    if unprotected:
        lines.append(
            f"columns {unprotected} are neither quasi-identifiers, sensitive nor transformed and "
            "are released as they are; declare them or set other_columns: drop"
        )
    named = [c for c, e in result.columns.items() if e["transform"] == NAMED_IDENTIFIER]
    if named:
        lines.append(
            f"columns {named} are named like direct identifiers and were dropped; release one "
            "on purpose with transforms: {name: keep}"
        )
    if result.suppressed:
        lines.append(f"{result.suppressed} record(s) were suppressed")
    lines.extend(result.notes)
    return lines
