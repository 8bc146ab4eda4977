"""``safeshare train --text-column``'s job: a DP text classifier from a table of texts and labels.

The table is read as for the tabular classifier (:mod:`safeshare.release.training`); only
the target and the text column are used.  The target's classes come from the public schema,
from DP discovery (a share of the budget) or, with ``unsafe_infer``, from the records
without DP (flagged).  The texts are checked before any budget is spent; the whole budget
is committed to the ledger before training.  The card names columns and sources, never a
text.
"""

from __future__ import annotations

from pathlib import Path

from safeshare._progress import Progress, no_progress
from safeshare.data.schema import Schema
from safeshare.dp.budget import PrivacyBudget, check_delta, check_epsilon
from safeshare.dp.ledger import Ledger
from safeshare.errors import InputError, SchemaError
from safeshare.release.output import check_output
from safeshare.release.pipeline import ledger_summary
from safeshare.release.training import SensitiveTable, prepare_table, read_table, training_card
from safeshare.train.dpsgd import require_torch
from safeshare.train.text import TextModel, TextSettings, check_texts, train_text


def text_source(source: SensitiveTable, target: str, text_column: str) -> SensitiveTable:
    """Only the target and the text column (and their schema entries, if any)."""
    frame = source.frame
    if text_column not in frame.columns:
        raise SchemaError(
            f"--text-column {text_column!r} is not a column of {source.name}; columns: "
            f"{list(frame.columns)}"
        )
    if text_column == target:
        raise SchemaError("--text-column and --target name the same column; give two columns")
    schema = source.schema
    if schema is not None:
        specs = {n: spec for n in (target, text_column) if (spec := schema.spec(n)) is not None}
        schema = Schema(specs, schema.missing_values, schema.source)
    return SensitiveTable(frame[[target, text_column]], schema, source.fingerprint, source.name)


def check_target(source: SensitiveTable, target: str) -> None:
    """Refuse a target with fewer than two classes (before any budget is spent)."""
    values = source.frame[target].dropna()
    if values.nunique() < 2:
        raise InputError(
            f"target column {target!r} has {'no value' if values.empty else 'a single class'} in "
            "the training records; a classifier needs at least two: choose another target or "
            "more data"
        )


def train_text_release(
    data: Path,
    target: str,
    text_column: str,
    out: Path,
    *,
    epsilon: float,
    delta: float | None = None,
    schema_path: Path | None = None,
    settings: TextSettings | None = None,
    unsafe_infer: bool = False,
    seed: int | None = None,
    ledger: Ledger | Path | None = None,
    total_epsilon: float | None = None,
    total_delta: float | None = None,
    force: bool = False,
    progress: Progress | None = None,
) -> TextModel:
    """Fine-tune MiniLM's top layer(s) + a head with DP-SGD to predict ``target`` from texts.

    ``delta=None`` means 1 / (10 x records).  The budget is split as for the tabular
    classifier: DP discovery of the target's classes (when the schema leaves them open)
    and DP-SGD compose sequentially.
    """
    settings = settings or TextSettings()
    report = progress or no_progress
    check_output(out, force)
    check_epsilon(epsilon)
    if delta is not None:
        check_delta(delta)
    require_torch()  # before any budget is spent
    report("reading", 0.0)
    source = text_source(read_table(data, target, schema_path), target, text_column)
    texts = check_texts(source.frame[text_column].tolist(), text_column)
    check_target(source, target)
    delta = 1.0 / (10 * len(source.frame)) if delta is None else delta
    total = None
    if total_epsilon is not None or total_delta is not None:
        total = PrivacyBudget(total_epsilon or epsilon, total_delta or delta)
    book = ledger if isinstance(ledger, Ledger) else Ledger(ledger)
    status = book.spend(
        source.fingerprint,
        PrivacyBudget(epsilon, delta),
        label="train dp-sgd text",
        name=source.name,
        default_total=total,
    )
    prepared = prepare_table(source, target, epsilon, delta, unsafe_infer=unsafe_infer, seed=seed)
    column = prepared.table.domain[target]
    model = train_text(
        texts,
        prepared.table.column(target),
        column.labels(),
        epsilon=epsilon - prepared.discovery_epsilon,
        delta=delta - prepared.discovery_delta,
        settings=settings,
        text_column=text_column,
        target=target,
        rng=seed,
        progress=report,
    )
    card = training_card(prepared, model.card, epsilon)
    card["model"]["class_labels_source"] = str(
        next(d.source for d in prepared.decisions if d.name == target)
    )
    card["columns"][text_column] = {
        "kind": "text",
        "source": "the model's input: tokenized, truncated to max_length tokens",
        "dropped": False,
    }
    card["ledger"] = ledger_summary(book, status)
    model = TextModel(model.module, model.frozen, model.frozen_layers, model.classes, card)
    report("writing", 1.0)
    model.save(out, force=force)
    return model
