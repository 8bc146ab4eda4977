"""The released records: generalized labels, suppression, identifier transforms, account.

>>> import numpy as np
>>> import pandas as pd
>>> from safeshare.anonymize.config import AnonymizeConfig
>>> from safeshare.anonymize.hierarchy import Hierarchy
>>> from safeshare.anonymize.models import KAnonymity
>>> config = AnonymizeConfig.from_dict({"quasi_identifiers": ["a"], "privacy": {"k": 2}})
>>> h = Hierarchy.from_rows("a", [["1", "1-2", "*"], ["2", "1-2", "*"], ["3", "3-4", "*"]])
>>> frame = pd.DataFrame({"a": ["1", "2", "3"], "note": ["x", "y", "z"]})
>>> problem = Problem.build([h], [h.encode(frame["a"])], models=[KAnonymity(2)])
>>> record_class, levels = np.array([0, 0, 1]), np.array([[1], [1]])
>>> kept = np.array([True, True, False])  # the third record is suppressed
>>> out, table = release_records(config, frame, problem, [h], ["a"], record_class, levels, kept)
>>> out["a"].tolist(), out["note"].tolist(), len(table)
(['1-2', '1-2'], ['x', 'y'], 2)
>>> column_account(config, list(frame.columns), ["a"], [], {})["note"]["transform"]
'kept (not protected)'
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from safeshare.anonymize.config import AnonymizeConfig
from safeshare.anonymize.hierarchy import TOP, Hierarchy
from safeshare.anonymize.problem import Problem
from safeshare.anonymize.recoding import record_labels
from safeshare.anonymize.transforms import (
    SecretKey,
    code_extremes,
    date_shift,
    mask,
    microaggregate,
    pseudonymize,
)
from safeshare.data.domain import Column, Domain, Kind, Role
from safeshare.data.inference import identifier_by_name
from safeshare.data.table import Table


def release_records(
    config: AnonymizeConfig,
    frame: pd.DataFrame,
    problem: Problem,
    hierarchies: list[Hierarchy],
    qis: list[str],
    record_class: np.ndarray,
    class_levels: np.ndarray,
    record_kept: np.ndarray,
    record_rows: np.ndarray | None = None,
) -> tuple[pd.DataFrame, Table]:
    """The released frame (labels at each record's levels; suppressed records removed or
    masked; identifiers transformed) and the table of its quasi-identifiers (kept records).

    ``record_rows`` is each record's distinct row of ``problem`` (default: the problem's own
    ``record_rows``; give it for a chunk of the records).
    """
    columns: dict[str, np.ndarray] = {}
    categories: dict[str, list[str]] = {}
    released: dict[str, Any] = {}
    keep = record_kept
    masking = config.suppressed_records == "mask" and not keep.all()
    removing = config.suppressed_records == "remove" and not keep.all()
    sample = np.zeros(len(class_levels), dtype=np.intp)  # one record of each class
    sample[record_class] = np.arange(len(record_class), dtype=np.intp)
    rows = record_rows if record_rows is not None else problem.record_rows
    rows = rows if rows is not None else np.arange(len(keep))
    for c, (name, h) in enumerate(zip(qis, hierarchies, strict=True)):
        labels, index, label_codes = _labels(
            h, problem.codes[c], rows, class_levels[:, c], record_class, sample
        )
        columns[name] = label_codes
        categories[name] = labels
        shown = label_codes
        if masking:
            if TOP not in labels:
                labels = [*labels, TOP]
                index = pd.Index(labels)
            shown = np.where(keep, label_codes, labels.index(TOP))
        shown = shown[keep] if removing else shown
        released[name] = pd.Categorical.from_codes(shown, categories=index, validate=False)
    dropped = _dropped(config, list(frame.columns))
    written = [name for name in frame.columns if name not in dropped]
    for name in written:
        if name not in released:
            values = frame[name].array
            released[name] = values[keep] if removing else values
    out = pd.DataFrame({name: released[name] for name in written})
    # a date shift reads its subject as given: dropped, masked or pseudonymized in the output
    subjects = {s.date_shift.subject for s in config.transforms.values() if s.date_shift}
    given = {
        name: _subject_keys(frame, name)[keep if removing else slice(None)] for name in subjects
    }
    domain = Domain(
        tuple(
            Column(
                name,
                Kind.CATEGORICAL,
                Role.QUASI_IDENTIFIER,
                tuple(categories[name]),
                other=False,
                missing=False,
            )
            for name in qis
        )
    )
    table = Table({name: columns[name][keep] for name in qis}, domain)
    _transform_identifiers(config, out, qis, given)
    return out, table


def _labels(
    h: Hierarchy,
    level0: np.ndarray,
    rows: np.ndarray,
    levels: np.ndarray,
    record_class: np.ndarray,
    sample: np.ndarray,
) -> tuple[list[str], pd.Index, np.ndarray]:
    """One column's labels (a list and an index) and each record's label code: the records'
    distinct ``rows`` have ``level0`` codes, their classes lie at ``levels`` (``sample``: one
    record of each class)."""
    if len(levels) and levels.min() == levels.max():  # full-domain: labels per class
        level = int(levels[0])
        labels: list[str] = list(h.labels[level])
        per_class = h.maps[level][level0[rows[sample]]]
        codes = per_class.astype(np.min_scalar_type(len(labels)))[record_class]
        return labels, h.label_index(level), codes
    labels, codes = record_labels(h, level0[rows], levels[record_class])
    return labels, pd.Index(labels), codes


def _subject_keys(frame: pd.DataFrame, name: str) -> np.ndarray:
    """Column ``name`` as the key of each record's date shift: its value, or for a record
    without one the record itself (all its values), so that such records are not linked by
    one shared offset, and a record's dates keep their intervals."""
    keys = np.array(frame[name].astype("string").astype(object), dtype=object)  # (a copy)
    missing = np.flatnonzero(pd.isna(keys))
    if len(missing):
        records = frame.iloc[missing].astype("string").fillna("")
        keys[missing] = ["\x1erecord\x1f" + "\x1f".join(row) for row in records.itertuples(False)]
    return keys


def _transform_identifiers(
    config: AnonymizeConfig, out: pd.DataFrame, qis: list[str], subjects: dict[str, Any]
) -> None:
    """Apply each column's transform to the released frame ``out``, in place: pseudonyms,
    masks, microaggregation (per released class), date shifts (by the ``subjects`` as given,
    one value per released record), top and bottom coding."""
    for name, spec in config.transforms.items():
        if spec.drop or spec.keep:
            continue
        if spec.pseudonymize is not None:
            key = SecretKey.load(
                key_file=config.resolve(spec.pseudonymize.key_file)
                if spec.pseudonymize.key_file
                else None,
                key_env=spec.pseudonymize.key_env,
            )
            out[name] = pseudonymize(
                out[name], key, length=spec.pseudonymize.length, prefix=spec.pseudonymize.prefix
            )
        elif spec.mask is not None:
            out[name] = mask(
                out[name], keep=spec.mask.keep, keep_end=spec.mask.keep_end, char=spec.mask.char
            )
        elif spec.microaggregate is not None:  # (per class of the released table)
            classes = out.groupby(qis, dropna=False, sort=False, observed=True).ngroup()
            out[name] = microaggregate(
                out[name], pd.Series(classes.to_numpy()), spec.microaggregate
            )
        elif spec.date_shift is not None:
            shift = spec.date_shift
            key = SecretKey.load(
                key_file=config.resolve(shift.key_file) if shift.key_file else None,
                key_env=shift.key_env,
            )
            subject = pd.Series(subjects[shift.subject], index=out.index, name=shift.subject)
            out[name] = date_shift(out[name], subject, key, max_days=shift.max_days)
        else:
            out[name] = code_extremes(out[name], top=spec.top_code, bottom=spec.bottom_code)


NAMED_IDENTIFIER = "drop (named like a direct identifier)"


def unnamed_identifiers(config: AnonymizeConfig, columns: Iterable[object]) -> list[str]:
    """The columns the config names nowhere whose names mark direct identifiers: dropped even
    under ``other_columns: keep`` (``transforms: {name: keep}`` releases one on purpose)."""
    return [c for c in _unnamed(config, columns) if identifier_by_name(c) is not None]


def _dropped(config: AnonymizeConfig, columns: list[str]) -> set[str]:
    """The columns the release leaves out: those a transform drops, and those the config
    names nowhere (every one, or under ``other_columns: keep`` the direct identifiers)."""
    dropped = {name for name, spec in config.transforms.items() if spec.drop}
    named_nowhere = (
        unnamed_identifiers(config, columns)
        if config.other_columns == "keep"
        else _unnamed(config, columns)
    )
    return dropped.union(named_nowhere)


def _unnamed(config: AnonymizeConfig, columns: Iterable[object]) -> list[str]:
    """The columns the config names nowhere (neither quasi-identifier, sensitive nor
    transformed)."""
    named = {*config.quasi_identifiers, *config.sensitive, *config.transforms}
    return [str(c) for c in columns if str(c) not in named]


def column_account(
    config: AnonymizeConfig,
    columns: Sequence[str],
    qis: list[str],
    sensitive: list[str],
    transforms: dict[str, str],
) -> dict[str, dict[str, Any]]:
    """Per input column, its kind, role and what was done to it (for the privacy card)."""
    account: dict[str, dict[str, Any]] = {}
    identifiers = set(unnamed_identifiers(config, columns))
    for name in columns:
        if name in qis:
            entry = {
                "kind": "categorical",
                "role": "quasi_identifier",
                "transform": "generalized",
            }
        elif name in sensitive:
            entry = {"kind": "categorical", "role": "sensitive", "transform": "kept"}
        elif name in transforms and transforms[name].startswith("microaggregate"):
            entry = {"kind": "numeric", "role": "other", "transform": transforms[name]}
        elif name in transforms:
            entry = {"kind": "text", "role": "identifier", "transform": transforms[name]}
        elif config.other_columns == "drop":
            entry = {"kind": "unknown", "role": "other", "transform": "drop"}
        elif name in identifiers:
            entry = {"kind": "unknown", "role": "identifier", "transform": NAMED_IDENTIFIER}
        else:
            entry = {"kind": "unknown", "role": "other", "transform": "kept (not protected)"}
        account[str(name)] = entry
    return account
