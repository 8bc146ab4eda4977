"""``safeshare train --text-column``'s job: a DP text classifier from a table of texts and labels.

The table is read as for the tabular classifier (:mod:`safeshare.release.training`); only
the target and the text column are used.  The target's classes come from the public schema,
from DP discovery (a share of the budget) or, with ``unsafe_infer``, from the records
without DP (flagged).  The texts are checked before any budget is spent; the whole budget
is committed to the ledger before training.  The card names columns and sources, never a
text.  With ``user_column`` the privacy unit is a user (all texts sharing that column's
value): the column is neither input nor target, must not be in the schema, and the target's
classes must come from the schema (or ``unsafe_infer``): DP discovery protects records, not
users.
"""

from __future__ import annotations

from typing import Any

from safeshare._progress import Progress, no_progress
from safeshare.data.readers import shown_columns
from safeshare.data.schema import Schema
from safeshare.dp.budget import PrivacyBudget
from safeshare.errors import InputError, SchemaError
from safeshare.release.job import JobRequest
from safeshare.release.training import (
    Prepared,
    SensitiveTable,
    check_reachable_budget,
    check_training_job,
    prepare_table,
    read_table,
    split_users,
    training_card,
)
from safeshare.train.accounting import Accounting
from safeshare.train.text import TextModel, TextSettings, check_texts, train_text
from safeshare.train.user_level import check_user_batch, count_users


def text_source(source: SensitiveTable, target: str, text_column: str) -> SensitiveTable:
    """Only the target and the text column (and their schema entries, if any)."""
    frame = source.frame
    if text_column not in frame.columns:
        raise SchemaError(
            f"--text-column {text_column!r} is not a column of {source.name}; columns: "
            f"{shown_columns(frame.columns)}"
        )
    if text_column == target:
        raise SchemaError("--text-column and --target name the same column; give two columns")
    schema = source.schema
    if schema is not None:
        specs = {n: spec for n in (target, text_column) if (spec := schema.spec(n)) is not None}
        schema = Schema(specs, schema.missing_values, schema.source)
    return SensitiveTable(frame[[target, text_column]], schema, source.identity, source.name)


def user_ids(
    table: SensitiveTable, user_column: str, target: str, text_column: str, unsafe_infer: bool
) -> Any:
    """The user column's ids (one per text), refused as :func:`split_users` refuses them."""
    frame = table.frame
    if user_column not in frame.columns or user_column in (target, text_column):
        raise SchemaError(
            f"--user-column {user_column!r} is not a column of the data besides the target and "
            f"the text column; columns: {shown_columns(frame.columns)}"
        )
    schema = table.schema
    if schema is not None:  # only the target's and the user column's entries, if any
        specs = {n: spec for n in (target, user_column) if (spec := schema.spec(n)) is not None}
        schema = Schema(specs, schema.missing_values, schema.source)
    narrowed = SensitiveTable(frame[[target, user_column]], schema, table.identity, table.name)
    return split_users(narrowed, user_column, target, unsafe_infer)[1]


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
    request: JobRequest,
    target: str,
    text_column: str,
    settings: TextSettings | None = None,
    *,
    unsafe_infer: bool = False,
    user_column: str | None = None,
    max_records_per_user: int = 64,
    progress: Progress | None = None,
    device: str = "auto",
) -> TextModel:
    """Fine-tune MiniLM's top layer(s) + a head with DP-SGD to predict ``target`` from texts.

    Without a delta, the budget's is 1 / (10 x records), with ``user_column`` 1 / (10 x
    users).  DP discovery of the target's classes (when the schema leaves them open) and
    DP-SGD compose sequentially, as for the tabular classifier.  ``device``: auto, cpu,
    cuda or cuda:N.
    """
    settings = settings or TextSettings()
    report = progress or no_progress
    check_training_job(request, device)
    report("reading", 0.0)
    table = read_table(request.data, target, request.schema_path, request.header)
    source = text_source(table, target, text_column)
    texts = check_texts(source.frame[text_column].tolist(), text_column)
    check_target(source, target)
    ids, units = None, len(source.frame)
    if user_column is not None:  # checked before any budget is spent
        ids, units = _user_units(
            table, target, text_column, settings, user_column, max_records_per_user, unsafe_infer
        )
    check_reachable_budget(units, settings, request.budget(units))
    with request.paid(source, units, "train dp-sgd text") as (budget, payment):
        prepared = prepare_table(
            source, target, budget, unsafe_infer=unsafe_infer, seed=request.seed
        )
        model = train_text(
            texts,
            prepared.table.column(target),
            prepared.table.domain[target].labels(),
            epsilon=budget.epsilon - prepared.discovery_epsilon,
            delta=budget.delta - prepared.discovery_delta,
            settings=settings,
            text_column=text_column,
            target=target,
            seed=request.seed,
            progress=report,
            user_column=user_column,
            users=ids,
            max_records_per_user=max_records_per_user,
            device=device,
        )
        card = _card(prepared, model.card, budget, target, text_column, settings.accountant)
        card["ledger"] = payment.summary()
        model = TextModel(model.module, model.frozen, model.frozen_layers, model.classes, card)
        report("writing", 1.0)
        model.save(request.out, force=request.force)
    return model


def _user_units(
    table: Any,
    target: str,
    text_column: str,
    settings: TextSettings,
    user_column: str,
    max_records_per_user: int,
    unsafe_infer: bool,
) -> tuple[Any, int]:
    """Each record's user and the number of users (the privacy unit), checked before the
    spend: clipping is per user, and the batch must fit the users."""
    ids = user_ids(table, user_column, target, text_column, unsafe_infer)
    units = count_users(ids, max_records_per_user)
    if settings.clipping != TextSettings.clipping:
        raise InputError(
            f"--clipping {settings.clipping!r} clips per record; with --user-column the "
            "gradient is clipped per user (its own method): leave --clipping out"
        )
    check_user_batch(settings.batch_size, units)
    return ids, units


def _card(
    prepared: Prepared,
    model_card: dict[str, Any],
    budget: PrivacyBudget,
    target: str,
    text_column: str,
    accounting: Accounting,
) -> dict[str, Any]:
    """The training card, plus where the classes came from and what the text column is."""
    card = training_card(
        prepared, model_card, budget.epsilon, "dp-sgd (text classifier)", accounting
    )
    card["model"]["class_labels_source"] = str(
        next(d.source for d in prepared.decisions if d.name == target)
    )
    card["columns"][text_column] = {
        "kind": "text",
        "source": "the model's input: tokenized, truncated to max_length tokens",
        "dropped": False,
    }
    return card
