"""The audit of a model from ``safeshare train``: its training procedure or its weights.

``canaries`` (the default) re-trains at the settings on the model's card (epsilon, delta,
batch, epochs, clipping, MLP size) on the training data plus canaries, half of them
inserted, and turns how much lower the inserted canaries' losses are into an empirical
epsilon lower bound (one-run audit), a membership attack and exposures. ``lira`` trains a
target model and ``shadows`` shadow models at the same settings on random halves of the
data and runs LiRA (Carlini et al. 2022) on every record. Both audit the *procedure*, not
the saved weights. A user-level classifier is audited with canary *users*, each holding
``copies`` copies of one random-label record. A language model takes ``extraction`` (prefix
-> suffix extraction and a loss attack on its saved weights, training texts against the
texts held out at training) or ``canaries`` (re-training on its training texts plus digit
canaries). The output is for the data owner: it reads the data without DP.

>>> AuditSettings(attack="lira", shadows=3).check()
Traceback (most recent call last):
...
safeshare.errors.InputError: --shadows 3 must be even and at least 2 (half IN, half OUT per record)
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from safeshare._progress import Progress, no_progress
from safeshare.errors import InputError, InputFileNotFoundError

ATTACKS = ("canaries", "lira", "extraction")
NOT_DP = "this audit reads the private data without DP; it is for the data owner"
# candidates that estimate a canary's exposure: a fine-tuned base model scores each through
# all its layers, so it gets fewer (its exposures resolve up to log2(1,001) = 10 bits)
EXPOSURE_SAMPLES = 10_000
FINE_TUNED_EXPOSURE_SAMPLES = 1_000


@dataclass(frozen=True, kw_only=True)
class AuditSettings:
    """What the audit runs: the attack and its sizes (each attack reads the ones it uses)."""

    attack: str = "canaries"
    canaries: int = 1000
    copies: int = 8
    digits: int = 6
    prefix: int = 16
    suffix: int = 16
    shadows: int = 8
    offline: bool = False
    kind: str | None = None
    significance: float = 0.05
    seed: int | None = None

    def check(self) -> None:
        """Refuse an unknown attack or sizes no audit can use, before anything is read."""
        if self.attack not in ATTACKS:
            raise InputError(
                f"--attack {self.attack!r} is unknown; use canaries, lira or extraction"
            )
        if self.attack == "lira" and (self.shadows < 2 or self.shadows % 2):
            raise InputError(
                f"--shadows {self.shadows} must be even and at least 2 (half IN, half OUT per "
                "record)"
            )


@dataclass(frozen=True)
class AuditResult:
    """What the audit wrote: ``audit.json``'s content and the readings of ``report.txt``."""

    report: dict[str, Any]
    readings: list[str]


@dataclass(frozen=True)
class _TrainingData:
    """The table a model was trained on, and how training read it."""

    path: Path
    schema: Path | None
    header: bool | None


def audit_model(
    model: Path,
    data: Path,
    out: Path,
    settings: AuditSettings,
    *,
    schema: Path | None = None,
    header: bool | None = None,
    force: bool = False,
    progress: Progress = no_progress,
) -> AuditResult:
    """Audit the model folder ``model`` on its training ``data`` (read with the ``schema`` and
    ``header`` training read it with); write ``out`` atomically."""
    from safeshare.output_folder import check_output
    from safeshare.release.language_model import is_language_model
    from safeshare.release.output import write_release

    settings.check()
    check_output(out, force=force, inputs=(model, data, schema))
    trained_on = _TrainingData(data, schema, header)
    if is_language_model(model):
        report, readings = _language_model_audit(model, trained_on, settings, progress)
    else:
        report, readings = _classifier_audit(model, trained_on, settings, progress)
    text = "\n".join(readings) + "\n"
    files = {"audit.json": json.dumps(report, indent=2) + "\n", "report.txt": text}
    write_release(out, files, force)
    return AuditResult(report, readings)


def _classifier_audit(
    model: Path, data: _TrainingData, settings: AuditSettings, progress: Progress
) -> tuple[dict[str, Any], list[str]]:
    """An MLP classifier's training procedure: canaries (records or users) or LiRA."""
    from safeshare.dp.budget import PrivacyBudget
    from safeshare.release.training import prepare_table, read_table, split_users

    if settings.attack == "extraction":
        raise InputError(
            f"--attack extraction needs a language model (`safeshare train --language-model`); "
            f"{str(model)!r} is not one: use --attack canaries or --attack lira"
        )
    trained = model_settings(model)
    target = trained.pop("target")
    user_column = trained.get("user_column")
    kind = settings.kind or "random-label"
    if user_column is not None and (settings.attack == "lira" or kind != "random-label"):
        raise InputError(
            f"{str(model)!r} is a user-level model (--user-column {user_column}); it is audited "
            "with canary users (--attack canaries, random-label records, --copies each): LiRA "
            "and out-of-distribution canaries attack single records"
        )
    progress("reading", 0.0)
    source, ids = read_table(data.path, target, data.schema, data.header), None
    if user_column is not None:
        source, ids = split_users(source, user_column, target, unsafe_infer=True)
    prepared = prepare_table(
        source,
        target,
        PrivacyBudget(trained["epsilon"], trained["delta"]),
        unsafe_infer=True,  # the audit's output stays with the data owner
        seed=settings.seed,
    )
    result = _run_classifier_attack(prepared.table, target, ids, trained, settings, progress)
    if settings.attack == "canaries":
        canaries = "canary users" if user_column is not None else "canaries"
        audited = (
            "the DP-SGD training procedure at the model's settings (one run on the data plus "
            f"{canaries}), not the saved weights"
        )
    else:
        audited = (
            f"the DP-SGD training procedure at the model's settings (a target and "
            f"{settings.shadows} shadow models, each on a random half of the data), not the "
            "saved weights"
        )
    report = {
        "audited": audited,
        "model": str(model),
        "settings": {"target": target, **trained},
        "not_dp": NOT_DP,
        **result.describe(),
    }
    return report, result.readings()


def _run_classifier_attack(
    table: Any,
    target: str,
    ids: Any,
    trained: dict[str, Any],
    settings: AuditSettings,
    progress: Progress,
) -> Any:
    """The attack on the procedure ``train_tabular`` at the model's settings."""
    from safeshare.dp.randomness import Randomness
    from safeshare.train.canaries import audit_training, audit_user_training
    from safeshare.train.tabular import train_tabular

    rng = Randomness(settings.seed).generator()

    def procedure(data: Any, users: Any = None) -> Any:
        train_seed = None if settings.seed is None else int(rng.integers(2**62))
        return train_tabular(
            data, target, seed=train_seed, progress=progress, users=users, **trained
        )

    if ids is not None:
        return audit_user_training(
            table,
            target,
            ids,
            procedure,
            canaries=settings.canaries,
            copies=settings.copies,
            significance=settings.significance,
            rng=rng,
        )
    if settings.attack == "lira":
        from safeshare.train.lira import lira_audit

        return lira_audit(
            table,
            target,
            procedure,
            shadows=settings.shadows,
            online=not settings.offline,
            rng=rng,
            progress=progress,
        )
    return audit_training(
        table,
        target,
        procedure,
        canaries=settings.canaries,
        kind=settings.kind or "random-label",
        significance=settings.significance,
        rng=rng,
    )


def _language_model_audit(
    model: Path, data: _TrainingData, settings: AuditSettings, progress: Progress
) -> tuple[dict[str, Any], list[str]]:
    """A language model: extraction on its weights, or canaries on its training procedure."""
    from safeshare.release.language_model import read_audit_texts

    if settings.attack == "lira":
        raise InputError(
            f"{str(model)!r} is a language model; LiRA audits the classifiers of "
            "`safeshare train`: use --attack extraction or --attack canaries"
        )
    if settings.kind is not None:
        raise InputError(
            "--kind applies to classifier canaries; a language model's canaries are digit "
            "canaries (--digits): drop --kind"
        )
    progress("reading", 0.0)
    texts = read_audit_texts(model, data.path, data.schema, data.header)
    common = {
        "model": str(model),
        "text_column": texts.text_column,
        "training_texts": len(texts.members),
        "held_out_texts": len(texts.held_out),
        "not_dp": NOT_DP,
    }
    if settings.attack == "extraction":
        from safeshare.train.fine_tune import FineTunedModel
        from safeshare.train.language_model import LanguageModel
        from safeshare.train.lm_audit import extraction_audit

        progress("extracting", 0.5)
        extraction = extraction_audit(
            LanguageModel.load(model) if texts.base is None else FineTunedModel.load(model),
            texts.members,
            texts.held_out,
            prefix=settings.prefix,
            suffix=settings.suffix,
        )
        audited = (
            "the saved weights (model.safetensors): greedy prefix -> suffix extraction and "
            "a loss-threshold attack, training texts against the texts held out at training"
        )
        return {"audited": audited, **common, **extraction.describe()}, extraction.readings()
    return _language_model_canaries(model, texts, common, settings, progress)


def _language_model_canaries(
    model: Path, texts: Any, common: dict[str, Any], settings: AuditSettings, progress: Progress
) -> tuple[dict[str, Any], list[str]]:
    """Re-training at the card's settings on the training texts plus digit canaries."""
    from safeshare.dp.randomness import Randomness
    from safeshare.train.lm_audit import audit_language_model

    privacy = texts.card.get("privacy", {})
    if privacy.get("epsilon_budget") is None:
        raise InputError(
            f"{str(model)!r}'s card has no privacy.epsilon_budget: it is not a DP "
            "language model from `safeshare train --language-model`"
        )
    base = None
    if texts.base is not None:
        from safeshare.train.fine_tune import Base

        progress("loading the base model", 0.0)
        base = Base.load(texts.base)
    result = audit_language_model(
        texts.members,
        float(privacy["epsilon_budget"]),
        texts.settings,
        base=base,
        exposure_samples=EXPOSURE_SAMPLES if base is None else FINE_TUNED_EXPOSURE_SAMPLES,
        canaries=settings.canaries,
        digits=settings.digits,
        delta=float(privacy["delta"]),
        significance=settings.significance,
        text_column=texts.text_column,
        rng=Randomness(settings.seed).generator(),
        progress=progress,
        users=texts.member_users,
        copies=settings.copies,
        max_records_per_user=int(privacy.get("max_records_per_user", 64)),
    )
    canaries_of = "digit canaries" if texts.member_users is None else "digit canary users"
    audited = (
        "the DP-SGD training procedure at the model's settings (one run on its training "
        f"texts plus {canaries_of}), not the saved weights"
    )
    report = {
        "audited": audited,
        **common,
        "settings": {"epsilon": float(privacy["epsilon_budget"]), **texts.card["settings"]},
        **result.describe(),
    }
    return report, result.readings()


def _clipping(described: str) -> str:
    """The clipping name in the card's "per-sample, flat (NAME, ...)"; older cards: Opacus's."""
    from safeshare.train.dpsgd import CLIPPINGS

    return next((name for name in CLIPPINGS if f"({name}," in described), "ghost")


def accountant_of(described: str) -> str:
    """The accountant named first in the card's "NAME (source), ..."; unknown: pld."""
    from safeshare.train.accounting import ACCOUNTANTS

    name = described.split(" ", 1)[0]
    return name if name in ACCOUNTANTS else "pld"


def model_settings(model: Path) -> dict[str, Any]:
    """The training settings on a model's card, to re-train it at them."""
    from safeshare.output_folder import read_json

    path = model / "card.json"
    if not path.is_file():
        raise InputFileNotFoundError(
            f"{str(path)!r} does not exist; give the directory `safeshare train` wrote"
        )
    card = read_json(path, "a model's card")
    if not isinstance(card.get("model"), dict):
        raise InputError(f"{str(path)!r} is not the card of a model from `safeshare train`")
    if card.get("model", {}).get("kind") == "text classifier":
        raise InputError(
            f"{str(path)!r} is a text classifier's card; `safeshare audit` audits the MLP "
            "classifiers of `safeshare train` without --text-column"
        )
    privacy, training, layers = card.get("privacy", {}), card.get("training", {}), None
    layers = card.get("model", {}).get("layers")
    if privacy.get("epsilon_budget") is None or not layers:
        raise InputError(
            f"{str(path)!r} is not the card of a DP model from `safeshare train`: it lacks "
            "privacy.epsilon_budget or model.layers"
        )
    user_level: dict[str, Any] = {}
    if str(privacy.get("privacy_unit", "record")).startswith("user"):
        user_level = {
            "user_column": str(privacy["user_column"]),
            "max_records_per_user": int(privacy["max_records_per_user"]),
        }
    return {
        **user_level,
        "target": card["model"]["target"],
        "epsilon": float(privacy["epsilon_budget"]),
        "delta": float(privacy["delta"]),
        "epochs": float(training["epochs"]),
        "batch_size": int(privacy["expected_batch_size"]),
        "max_grad_norm": float(privacy["clipping_norm"]),
        # a user-level run clips per user, by its own method (train_tabular's default)
        "clipping": "linear-ghost" if user_level else _clipping(str(privacy["clipping"])),
        "accountant": accountant_of(str(privacy["accountant"])),
        "learning_rate": float(training["learning_rate"]),
        "hidden": int(layers[1]),
    }
