"""``safeshare train``: a DP-SGD model from a CSV/Parquet file, with a card.

The job itself (reading, the domain, the ledger, training, the card) is
:func:`safeshare.release.training.train_release` (an MLP over the table's columns),
with ``--text-column``, :func:`safeshare.release.text_training.train_text_release`
(all-MiniLM-L6-v2's top layer(s) and a head, fine-tuned on the texts), or with
``--language-model --text-column``,
:func:`safeshare.release.language_model.train_language_model_release` (a byte-level
causal language model trained from scratch on the texts, some held out for audits).
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import typer

from safeshare.cli._output import progress_bar, stdout, warn
from safeshare.errors import InputError


def train_command(
    data: Path = typer.Argument(..., help="The sensitive table: a CSV/TSV or Parquet file."),
    target: str | None = typer.Option(
        None,
        "--target",
        help="The column to predict (categorical). Required, except with --language-model "
        "(which takes none).",
    ),
    epsilon: float = typer.Option(..., "--epsilon", help="Privacy budget epsilon of the model."),
    out: Path = typer.Option(
        ..., "--out", "-o", help="Directory to write model.safetensors and card.json."
    ),
    delta: float | None = typer.Option(
        None, "--delta", help="Privacy budget delta (default 1 / (10 x records))."
    ),
    schema: Path | None = typer.Option(
        None, help="YAML schema of public facts (kinds, categories, bounds, roles)."
    ),
    text_column: str | None = typer.Option(
        None,
        "--text-column",
        help="Train a text classifier (all-MiniLM-L6-v2, top layer(s) + head) on this column; "
        "with --language-model, the column the language model learns.",
    ),
    language_model: bool = typer.Option(
        False,
        "--language-model",
        help="Train a byte-level causal language model from scratch on --text-column "
        "(one text = one record); no --target.",
    ),
    epochs: float | None = typer.Option(
        None,
        help="Passes over the data (expected, Poisson sampling); default 5, text 3, "
        "language model 5.",
    ),
    batch_size: int | None = typer.Option(
        None, "--batch-size", help="Expected batch size; default 512, text 256, language model 64."
    ),
    hidden: int = typer.Option(
        64, "--hidden", "--width", help="Hidden units of the MLP; the language model's width."
    ),
    layers: int = typer.Option(1, "--layers", help="Language model: transformer blocks."),
    heads: int = typer.Option(2, "--heads", help="Language model: attention heads per block."),
    holdout_fraction: float = typer.Option(
        0.1,
        "--holdout-fraction",
        help="Language model: share of texts held out of training for audits (their row "
        "positions go to holdout.json).",
    ),
    learning_rate: float | None = typer.Option(
        None,
        "--learning-rate",
        help="Adam's learning rate; default 2e-3, text (the head's) 1e-2, language model 3e-3.",
    ),
    layer_learning_rate: float = typer.Option(
        1e-4, "--layer-learning-rate", help="Text: Adam's learning rate of the trained layers."
    ),
    max_length: int = typer.Option(
        64,
        "--max-length",
        "--context",
        help="Text: tokens kept per text (longer ones are truncated); language model: its "
        "context, bytes kept per text.",
    ),
    train_layers: int = typer.Option(
        1, "--train-layers", help="Text: top transformer layers trained (the rest frozen)."
    ),
    max_grad_norm: float = typer.Option(1.0, "--max-grad-norm", help="Per-record clipping norm."),
    clipping: str | None = typer.Option(
        None,
        help="linear-ghost (MLP default: exact, fastest), ghost (text and language model "
        "default; the language model's only one) or hooks (Opacus's).",
    ),
    accountant: str = typer.Option(
        "pld", help="pld (tight, default), rdp, or prv (Opacus, upper bound)."
    ),
    user_column: str | None = typer.Option(
        None,
        "--user-column",
        help="The privacy unit is a user, all records (texts) sharing this column's value "
        "(clipped per user; not an input; --batch-size counts users; the language model "
        "holds out whole users).",
    ),
    max_records_per_user: int = typer.Option(
        64,
        "--max-records-per-user",
        help="With --user-column: records kept per user (drawn at random; bounds memory).",
    ),
    device: str = typer.Option(
        "auto",
        "--device",
        help="Where training runs: auto (a CUDA GPU when torch sees one, else the CPU), cpu, "
        "cuda or cuda:N.",
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
    force: bool = typer.Option(
        False, "--force", help="Replace an earlier safeshare output at --out."
    ),
    quiet: bool = typer.Option(
        False, "--quiet", "-q", help="No progress bar or summary (warnings still print)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the card as JSON (no summary)."),
) -> None:
    """Train a DP-SGD model (an MLP classifier; a text classifier with --text-column; a
    byte-level language model with --language-model --text-column); write a card."""
    from safeshare.errors import BudgetError
    from safeshare.release.job import JobRequest
    from safeshare.train.accounting import ACCOUNTANTS

    if accountant not in ACCOUNTANTS:
        raise BudgetError(f"--accountant {accountant!r} is unknown; use one of {list(ACCOUNTANTS)}")
    request = JobRequest(
        data,
        out,
        epsilon,
        delta=delta,
        schema_path=schema,
        seed=seed,
        ledger=ledger,
        total_epsilon=total_epsilon,
        total_delta=total_delta,
        force=force,
    )
    users: dict[str, Any] = {
        "user_column": user_column,
        "max_records_per_user": max_records_per_user,
    }
    shared = {"epochs": epochs, "batch_size": batch_size, "learning_rate": learning_rate}
    overrides = {k: v for k, v in shared.items() if v is not None}
    clip: dict[str, Any] = {} if clipping is None else {"clipping": clipping}
    common: dict[str, Any] = {"max_grad_norm": max_grad_norm, "accountant": accountant, **overrides}
    job: Callable[..., Any]
    if language_model:
        _check_language_model_flags(text_column, target, clipping, unsafe_infer)
        from safeshare.release.language_model import train_language_model_release
        from safeshare.train.language_model import LanguageModelSettings

        lm_settings = LanguageModelSettings(
            context=max_length, width=hidden, layers=layers, heads=heads, **common
        )
        job = partial(
            train_language_model_release,
            request,
            str(text_column),
            lm_settings,
            holdout_fraction=holdout_fraction,
            **users,
        )
    elif target is None:
        raise InputError(
            "--target is required: name the column to predict (only --language-model trains "
            "without one)"
        )
    elif text_column is not None:
        from safeshare.release.text_training import train_text_release
        from safeshare.train.text import TextSettings

        text_settings = TextSettings(
            max_length=max_length,
            train_layers=train_layers,
            layer_learning_rate=layer_learning_rate,
            **clip,
            **common,
        )
        job = partial(
            train_text_release,
            request,
            target,
            text_column,
            text_settings,
            unsafe_infer=unsafe_infer,
            **users,
        )
    else:
        from safeshare.release.training import TrainingSettings, train_release

        settings = TrainingSettings(hidden=hidden, **users, **clip, **common)
        job = partial(train_release, request, target, settings, unsafe_infer=unsafe_infer)
    with progress_bar(quiet or as_json) as progress, _warnings_shown():
        card = job(progress=progress, device=device).card
    if as_json:
        stdout.print_json(json.dumps(card))
    elif not quiet:
        _print_summary(card, out, text_column, language_model)


@contextmanager
def _warnings_shown() -> Iterator[None]:
    """Print the job's warnings (e.g. how many texts were truncated; never a text) as it ends."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)
        try:
            yield
        finally:
            for warning in caught:
                warn(warning.message)


def _check_language_model_flags(
    text_column: str | None, target: str | None, clipping: str | None, unsafe_infer: bool
) -> None:
    """Refuse the flags ``--language-model`` cannot honour, naming the fix."""
    if text_column is None:
        raise InputError(
            "--language-model needs --text-column: name the column of texts it should learn"
        )
    if target is not None:
        raise InputError(
            "--target does not apply to --language-model (it learns the texts themselves, "
            "no label); drop --target, or drop --language-model to train a text classifier"
        )
    if clipping not in (None, "ghost"):
        raise InputError(
            f"--clipping {clipping!r} cannot train the language model; it takes ghost (the "
            "default), which clips each text's whole gradient"
        )
    if unsafe_infer:
        raise InputError(
            "--unsafe-infer does not apply to --language-model: its vocabulary (bytes) is "
            "public and no domain is read; drop it"
        )


def _print_summary(
    card: dict[str, Any], out: Path, text_column: str | None, language_model: bool
) -> None:
    """What was written and what protects it, in a few lines."""
    if language_model:
        spec, holdout = card["model"], card["holdout"]
        stdout.print(f"written    {out}/model.safetensors, card.json, holdout.json")
        _print_guarantee(card)
        stdout.print(f"model      {spec['architecture']}; {spec['parameters']} parameters")
        users = f", {holdout['users']} whole users" if "users" in holdout else ""
        stdout.print(
            f"held out   {holdout['texts']} of {card['input']['rows']} texts{users} for audits "
            "(row positions in holdout.json)"
        )
        return
    stdout.print(f"written    {out}/model.safetensors, card.json")
    _print_guarantee(card)
    if text_column is not None:
        spec = card["model"]
        stdout.print(f"model      {spec['trained']}; max {spec['max_length']} tokens per text")
    stdout.print(f"domain     {card['domain_source']}")
    for line in card["notes"]:
        warn(line, label="note")


def _print_guarantee(card: dict[str, Any]) -> None:
    """The card's guarantee and how the DP-SGD run was made, for the summary."""
    privacy = card["privacy"]
    stdout.print(f"guarantee  {card['guarantee']}")
    stdout.print(
        f"training   {privacy['steps']} steps, noise multiplier {privacy['noise_multiplier']:.4g}, "
        f"Poisson rate {privacy['sampling_rate']:.4g}, clipping {privacy['clipping_norm']:g}, "
        f"on {card['training']['device']}"
    )
