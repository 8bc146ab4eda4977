"""Evaluating any release: real train + real holdout + released table in; evaluation.json and a
self-contained report.html out.

read the three files (and an auxiliary one) -> check they fit together -> one domain for all
(from the schema, else read from the training and holdout data *without* DP: this is the data
owner's own evaluation, and the JSON says so) -> encode (generalized released values become
sets of codes) -> run the suite (:func:`safeshare.evaluate.assessment.assess`) -> render ->
write both files atomically.  Any failure writes nothing.

>>> import tempfile, pathlib
>>> from safeshare.data.examples import load_example
>>> frame, schema = load_example("fair")
>>> tmp = pathlib.Path(tempfile.mkdtemp())
>>> for name, rows in (("train", slice(0, 4000)), ("holdout", slice(4000, 6366)), ("release", slice(0, 2000))):
...     frame.iloc[rows].to_csv(tmp / f"{name}.csv", index=False)
>>> files = EvaluationFiles(train=tmp / "train.csv", holdout=tmp / "holdout.csv",
...                         release=tmp / "release.csv", schema=schema)
>>> result = evaluate_files(files, out=tmp / "eval", options=EvaluationOptions(attacks=200, ml=False),
...                         seed=0)
>>> sorted(p.name for p in (tmp / "eval").iterdir())
['.safeshare-output', 'evaluation.json', 'report.html']
>>> "linkage (exact matching)" in result.evaluation["headline"]["risk"]["significant_attacks"]
True
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from safeshare import __version__
from safeshare._progress import Progress, no_progress
from safeshare.data.codec import encode_frame
from safeshare.data.domain import Domain, Kind, Role
from safeshare.data.plan import ColumnDecision, Source, decide_columns, infer_column_unsafe
from safeshare.data.readers import fingerprint_file, read_text
from safeshare.data.schema import Schema
from safeshare.data.table import Table
from safeshare.dp.randomness import Randomness
from safeshare.errors import InputError
from safeshare.evaluate.assessment import NUMERIC_CODES, Assessment, EvaluationOptions, assess
from safeshare.evaluate.generalized import CellSets, cell_sets
from safeshare.evaluate.results import Proportion
from safeshare.output_folder import check_output
from safeshare.release.output import write_release
from safeshare.report.evaluation import render_evaluation_report

MAX_CATEGORIES = 1000
MIXED_SHARE = 0.9
NOT_DP = (
    "the evaluation reads the private data (train and holdout) without differential privacy: "
    "its figures are for the data owner's review"
)


@dataclass(frozen=True)
class EvaluationResult:
    """What an evaluation wrote."""

    out: Path
    evaluation: dict[str, Any]
    assessment: Assessment
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True, kw_only=True)
class EvaluationFiles:
    """The files an evaluation reads: the real train and holdout records and the release, and
    optionally an attacker's auxiliary table, a schema and ARX-style hierarchies (column ->
    file) that explain the release's generalized values.  ``header`` says whether the real
    tables' first row is a header (None: the schema's word, else detected); the release and the
    auxiliary table are read with theirs detected (safeshare writes one).

    >>> EvaluationFiles(train="t.csv", holdout="h.csv", release="r.csv").paths()
    (PosixPath('t.csv'), PosixPath('h.csv'), PosixPath('r.csv'))
    """

    train: str | Path
    holdout: str | Path
    release: str | Path
    auxiliary: str | Path | None = None
    schema: Schema | str | Path | None = None
    hierarchies: Mapping[str, str | Path] = field(default_factory=dict)
    header: bool | None = None

    def paths(self) -> tuple[Path, ...]:
        """Every file named, which the output may not replace."""
        named = (self.train, self.holdout, self.release, self.auxiliary, self.schema)
        return tuple(
            Path(p) for p in (*named, *self.hierarchies.values()) if isinstance(p, str | Path)
        )

    def main(self) -> dict[str, Path]:
        """The three files every evaluation reads, by their role."""
        return {
            "train": Path(self.train),
            "holdout": Path(self.holdout),
            "release": Path(self.release),
        }


@dataclass(frozen=True)
class _Encoded:
    """The evaluation's inputs read, checked and encoded under one domain."""

    frames: dict[str, pd.DataFrame]
    decisions: list[ColumnDecision]
    domain: Domain
    train: Table
    holdout: Table
    released: CellSets
    auxiliary: Table | None
    auxiliary_rows: int


def evaluate_files(
    files: EvaluationFiles,
    *,
    out: str | Path,
    options: EvaluationOptions | None = None,
    guarantee: str | None = None,
    seed: int | None = None,
    force: bool = False,
    progress: Progress = no_progress,
) -> EvaluationResult:
    """Evaluate ``files.release`` against ``files.train`` and ``files.holdout`` with the attacks
    and measures of ``options`` (default :class:`EvaluationOptions`); see the module docstring.
    ``guarantee`` is what the release's maker claims (shown as given)."""
    out = check_output(out, force=force, inputs=files.paths())
    options = options or EvaluationOptions()
    progress("reading", 0.0)
    encoded = _encoded(files, options.numeric_codes)
    rng = Randomness(seed).generator()
    assessment = assess(
        encoded.released,
        encoded.train,
        encoded.holdout,
        rng,
        options,
        auxiliary=encoded.auxiliary,
        progress=lambda step, done: progress(step, 0.05 + 0.85 * done),
    )
    warnings = _warnings(encoded, assessment)
    evaluation = {
        "safeshare_version": __version__,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "kind": "evaluation",
        "guarantee": guarantee or "unknown: the evaluation does not know how the release was made",
        **_described_inputs(files, encoded, assessment, options),
        "seed": seed,
        "not_dp": [NOT_DP],
        **assessment.to_dict(),
        "warnings": warnings,
    }
    progress("writing", 0.9)
    html = render_evaluation_report(
        evaluation, assessment, train=encoded.train, release=encoded.released.impute(rng)
    )
    write_release(out, {"evaluation.json": to_json(evaluation), "report.html": html}, force)
    progress("done", 1.0)
    return EvaluationResult(out, evaluation, assessment, warnings)


def _encoded(files: EvaluationFiles, numeric_codes: int = NUMERIC_CODES) -> _Encoded:
    """Read the files, check they fit together, and encode them under one domain (a numeric
    column the data decide in at most ``numeric_codes`` codes)."""
    schema = Schema.given(files.schema)
    real = Schema.layout_of(schema, files.header)
    written = replace(real, header=None)
    frames = {
        name: (written if name == "release" else real).read(path)
        for name, path in files.main().items()
    }
    aux_frame = written.read(files.auxiliary) if files.auxiliary is not None else None
    _check_columns(frames, aux_frame)
    domain, decisions = evaluation_domain(
        frames["train"], frames["holdout"], schema, numeric_codes=numeric_codes
    )
    nodes = {name: read_hierarchy(path) for name, path in files.hierarchies.items()}
    unknown = [name for name in nodes if name not in domain]
    if unknown:
        raise InputError(
            f"hierarchies given for {unknown}, which the data does not model; check the names"
        )
    released = cell_sets(frames["release"], domain, nodes)
    _check_release(released)
    return _Encoded(
        frames,
        decisions,
        domain,
        encode_frame(frames["train"], domain)[0],
        encode_frame(frames["holdout"], domain)[0],
        released,
        _auxiliary(aux_frame, domain) if aux_frame is not None else None,
        len(aux_frame) if aux_frame is not None else 0,
    )


def _warnings(encoded: _Encoded, assessment: Assessment) -> list[str]:
    """What the reader should know: overlapping holdout, the suite's warnings, odd values."""
    identifiers = [d.name for d in encoded.decisions if d.role is Role.IDENTIFIER]
    warnings = _overlap_warning(encoded.frames, identifiers)
    warnings += list(assessment.warnings)
    released = encoded.released
    if released.is_generalized:
        warnings.append(
            "the release holds generalized values ("
            + ", ".join(f"{k}: {v} cells" for k, v in assessment.generalized.items())
            + "); distance-based measures use one random value inside each generalized cell"
        )
    unexplained = {k: v for k, v in released.unexplained.items() if v}
    if unexplained:
        warnings.append(
            "released values that are neither values, intervals, sets nor masks were read as "
            f"'any value' ({unexplained}); where they are hierarchy nodes (a group's name), "
            "give the hierarchy (--hierarchy COLUMN=FILE), else a schema with their categories"
        )
    return warnings


def _described_inputs(
    files: EvaluationFiles, encoded: _Encoded, assessment: Assessment, options: EvaluationOptions
) -> dict[str, Any]:
    """The JSON's account of what was read: files, domain source, columns kept and dropped,
    each column's role as the attacks used it (given or inferred)."""
    kept = [d for d in encoded.decisions if d.modelled]
    roles = {d.name: str(d.role) for d in kept}
    roles |= {name: str(Role.SENSITIVE) for name in options.secrets or ()}
    roles |= {name: str(Role.QUASI_IDENTIFIER) for name in assessment.quasi_identifiers}
    return {
        "inputs": {
            name: {
                "name": path.name,
                "sha256": fingerprint_file(path),
                "rows": len(encoded.frames[name]),
            }
            for name, path in files.main().items()
        },
        "auxiliary": None
        if files.auxiliary is None
        else {"name": Path(files.auxiliary).name, "rows": encoded.auxiliary_rows},
        "domain_source": "schema"
        if all(d.source is Source.SCHEMA for d in kept)
        else "training and holdout data, not DP",
        "columns": {
            d.name: {
                "kind": str(d.kind),
                "role": roles[d.name],
                "codes": encoded.domain[d.name].size,
            }
            for d in kept
        },
        "dropped_columns": [f"{d.name} ({d.reason})" for d in encoded.decisions if not d.modelled],
    }


def read_hierarchy(path: str | Path) -> dict[str, set[str]]:
    """An ARX-style hierarchy file (one row per value: the value, then its node at each level)
    as node label -> the values under it."""
    text = read_text(path, "hierarchy file", encoding="utf-8-sig")
    delimiter = ";" if text.count(";") >= text.count(",") else ","
    nodes: dict[str, set[str]] = {}
    for row in csv.reader(io.StringIO(text), delimiter=delimiter):
        cells = [c.strip() for c in row if c.strip()]
        for label in cells[1:]:
            nodes.setdefault(label, set()).add(cells[0])
    if not nodes:
        raise InputError(f"hierarchy file {str(path)!r} holds no levels; give one row per value")
    return nodes


def to_json(value: dict[str, Any]) -> str:
    """JSON text with NaN and infinities written as null."""
    return json.dumps(_finite(value), indent=2, default=_default, allow_nan=False) + "\n"


def _finite(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    if isinstance(value, float | np.floating):
        return float(value) if math.isfinite(float(value)) else None
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.bool_):
        return bool(value)
    return value


def _default(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return _finite(value.tolist())
    raise TypeError(f"cannot write {type(value).__name__} to JSON")


def _check_columns(frames: dict[str, pd.DataFrame], aux: pd.DataFrame | None) -> None:
    reference = list(frames["train"].columns)
    for name in ("holdout", "release"):
        columns = list(frames[name].columns)
        missing = [c for c in reference if c not in columns]
        extra = [c for c in columns if c not in reference]
        if missing or extra:
            parts = []
            if missing:
                parts.append(f"lacks {missing}")
            if extra:
                parts.append(f"has {extra}, which train lacks")
            raise InputError(
                f"the {name} file's columns differ from train's: it {' and '.join(parts)}; "
                "give the three files the same columns"
            )
    if aux is not None and not any(c in reference for c in aux.columns):
        raise InputError(
            f"the auxiliary file shares no column with train (it has {list(aux.columns)}); it must "
            "hold some quasi-identifiers under the same names"
        )


def _check_values(frames: dict[str, pd.DataFrame], kept: list[ColumnDecision]) -> None:
    """All-missing and mixed-type columns of train and holdout are errors that name the column."""
    for d in kept:
        for name in ("train", "holdout"):
            values = frames[name][d.name]
            present = values.dropna()
            if present.empty:
                raise InputError(
                    f"column {d.name!r} has no values in the {name} file (all missing); drop it "
                    "from the three files"
                )
            if d.kind in (Kind.CATEGORICAL, Kind.ORDINAL, Kind.NUMERIC) and d.spec is None:
                numeric = pd.to_numeric(present, errors="coerce").notna().mean()
                if MIXED_SHARE <= numeric < 1:
                    bad = int(pd.to_numeric(present, errors="coerce").isna().sum())
                    raise InputError(
                        f"column {d.name!r} mixes types in the {name} file: {bad} of its "
                        f"{len(present)} values are not numbers while the rest are; clean them or "
                        "declare the column's kind in a schema"
                    )


def _check_release(released: Any) -> None:
    if len(released) == 0:
        raise InputError("the release has no rows: nothing to evaluate")


def evaluation_domain(
    train: pd.DataFrame,
    holdout: pd.DataFrame,
    schema: Schema | None = None,
    *,
    numeric_codes: int = NUMERIC_CODES,
) -> tuple[Domain, list[ColumnDecision]]:
    """One domain for the evaluation: the schema where it fixes a column, else train + holdout
    (a numeric column: one code per value where it holds at most ``numeric_codes``, else
    ``numeric_codes`` bins).

    Reading the domain from the data is not DP; the evaluation is the data owner's own review.
    Identifiers and free text are dropped (the decisions say why).
    """
    decisions = decide_columns(train, schema, unsafe=True)
    kept = [d for d in decisions if d.modelled]
    _check_values({"train": train, "holdout": holdout}, kept)
    both = pd.concat([train, holdout], ignore_index=True)
    columns = []
    for d in kept:
        if d.source is Source.SCHEMA and d.spec is not None:
            columns.append(d.spec.to_column(d.name))
        else:
            columns.append(
                infer_column_unsafe(
                    both[d.name],
                    d,
                    max_categories=MAX_CATEGORIES,
                    max_singletons=numeric_codes,
                    bins=numeric_codes,
                    per_value=True,
                )
            )
    return Domain(tuple(columns)), decisions


def _auxiliary(frame: pd.DataFrame, domain: Domain) -> Table:
    """The auxiliary table on the columns it shares with the domain (names and the like dropped)."""
    shared = [c.name for c in domain if c.name in frame.columns]
    table, _ = encode_frame(frame[shared], domain.project(shared))
    return table


def _overlap_warning(frames: dict[str, pd.DataFrame], identifiers: list[str]) -> list[str]:
    """Warn when holdout records are also training records.

    With an identifier column, a shared identifier is an overlap.  Without one, identical rows
    may be different people with the same values, so rows of the holdout found in train are
    compared with rows of one part of train found in the rest: an overlap shows as clearly more.
    """
    train, holdout = frames["train"], frames["holdout"]
    for name in identifiers:
        if name in holdout.columns:
            shared = int(holdout[name].dropna().isin(set(train[name].dropna())).sum())
            if shared:
                return [_overlap_text(shared, f"share an identifier ({name!r}) with train")]
            return []
    keys_train = pd.util.hash_pandas_object(train.astype("string"), index=False).to_numpy()
    keys_holdout = pd.util.hash_pandas_object(holdout.astype("string"), index=False).to_numpy()
    shared = int(np.isin(keys_holdout, keys_train).sum())
    if not shared:
        return []
    part = min(len(keys_holdout), len(keys_train) // 2)
    if part == 0:
        return []
    keys_train = keys_train[np.random.default_rng(0).permutation(len(keys_train))]  # not private
    chance = Proportion.of(int(np.isin(keys_train[:part], keys_train[part:]).sum()), part)
    found = Proportion.of(shared, len(keys_holdout))
    if found.interval[0] <= chance.interval[1] * len(keys_train) / max(len(keys_train) - part, 1):
        return []
    return [_overlap_text(shared, "also appear in train, more than identical values explain")]


def _overlap_text(shared: int, how: str) -> str:
    return (
        f"{shared} holdout record(s) {how}: the holdout is not unseen data, which voids the "
        "comparison of distances to train and to holdout (DCR) and the attacks' control; split "
        "the data so that no record is in both"
    )
