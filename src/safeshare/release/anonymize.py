"""The anonymization release: sensitive table in, anonymized table + card + report out.

read -> anonymize (hierarchies, models, search, suppression, identifier transforms) ->
measure (classes, quality, models reached) -> card + report -> one atomic write of
``anonymized.csv``, ``card.json`` and ``report.html``.  A failure at any step writes nothing.

>>> import tempfile, pathlib, pandas as pd
>>> frame = pd.DataFrame({"zip": ["13053", "13068", "13068", "13053", "14850", "14853"],
...                       "disease": ["flu", "cold", "flu", "cold", "flu", "cold"]})
>>> config = {"quasi_identifiers": {"zip": {"hierarchy": "mask"}},
...           "sensitive": ["disease"], "privacy": {"k": 2}}
>>> out = pathlib.Path(tempfile.mkdtemp()) / "release"
>>> result = release_anonymized(frame, config=config, out=out, dataset_name="clinic")
>>> sorted(p.name for p in out.iterdir())
['anonymized.csv', 'card.json', 'report.html']
>>> result.card["method"], result.card["models"][0]["achieved"]
('anonymize', {'k': 2})
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from safeshare import __version__
from safeshare._progress import Progress, no_progress
from safeshare.anonymize.anonymizer import AnonymizationResult, Anonymizer
from safeshare.anonymize.config import AnonymizeConfig
from safeshare.data.readers import fingerprint_file, fingerprint_frame, read_frame
from safeshare.errors import InputError
from safeshare.release.output import check_output, write_release
from safeshare.report.anonymization import render_anonymization_report

GUARANTEE = (
    "none formal: anonymization without differential privacy gives no mathematical guarantee; "
    "the privacy models below hold for the released table as written, and the risk suite "
    "measures what re-identification and inference risk remains"
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
    force: bool = False,
    dataset_name: str | None = None,
    progress: Progress | None = None,
) -> AnonymizedRelease:
    """Anonymize ``source`` under ``config`` and write the release to ``out`` atomically."""
    report = progress or no_progress
    out = Path(out)
    check_output(out, force)
    if isinstance(config, str | Path):
        config = AnonymizeConfig.load(config)
    elif not isinstance(config, AnonymizeConfig):
        config = AnonymizeConfig.from_dict(dict(config))

    report("reading", 0.0)
    frame, fingerprint, name = _read(source, dataset_name)
    anonymizer = Anonymizer(config)
    result = anonymizer.fit(frame, progress=lambda step, done: report(step, 0.05 + 0.75 * done))

    report("writing", 0.85)
    warnings = _warnings(result)
    card = build_anonymization_card(
        result,
        config=config,
        name=name,
        fingerprint=fingerprint,
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        version=__version__,
        notes=warnings,
    )
    html = render_anonymization_report(card)
    write_release(
        out, {"anonymized.csv": result.frame, "card.json": card, "report.html": html}, force
    )
    report("done", 1.0)
    return AnonymizedRelease(out, card, result.frame, result, warnings)


def build_anonymization_card(
    result: AnonymizationResult,
    *,
    config: AnonymizeConfig,
    name: str,
    fingerprint: str,
    created_at: str,
    version: str,
    notes: list[str],
) -> dict[str, Any]:
    """The privacy card of an anonymized release (JSON-ready)."""
    columns: dict[str, Any] = {}
    for column, entry in result.columns.items():
        item = dict(entry)
        if column in result.transformation:
            level = result.transformation[column]
            item["level"] = level
            item["height"] = result.hierarchies[column]["height"]
            item["hierarchy"] = result.hierarchies[column]["source"]
            item["quality"] = result.quality.per_attribute.get(column, {})
        item["dropped"] = entry["transform"] in ("drop",)
        columns[column] = item
    return {
        "safeshare_version": version,
        "created_at": created_at,
        "method": "anonymize",
        "guarantee": GUARANTEE,
        "epsilon": None,
        "delta": None,
        "budget": None,
        "secure_noise": None,
        "domain_source": "public hierarchies from the config",
        "input": {"name": name, "sha256": fingerprint},
        "columns": columns,
        "rows_in": result.rows_in,
        "rows_out": result.rows_out,
        "suppressed": result.suppressed,
        "suppressed_records": config.suppressed_records,
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


def _read(
    source: str | Path | pd.DataFrame, dataset_name: str | None
) -> tuple[pd.DataFrame, str, str]:
    if isinstance(source, pd.DataFrame):
        if source.shape[0] == 0 or source.shape[1] == 0:
            raise InputError("the table is empty; give at least one column and one record")
        frame = source.copy()
        frame.columns = [str(c) for c in frame.columns]
        return frame, fingerprint_frame(frame), dataset_name or "dataframe"
    path = Path(source)
    return read_frame(path), fingerprint_file(path), dataset_name or path.name


def _warnings(result: AnonymizationResult) -> list[str]:
    lines = []
    unprotected = [c for c, e in result.columns.items() if e["transform"].startswith("kept (not")]
    if unprotected:
        lines.append(
            f"columns {unprotected} are neither quasi-identifiers, sensitive nor transformed and "
            "are released as they are; declare them or set other_columns: drop"
        )
    if result.suppressed:
        lines.append(f"{result.suppressed} record(s) were suppressed")
    return lines
