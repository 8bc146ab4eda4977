"""``safeshare audit``: audit a model's training procedure (canaries, LiRA) or its weights.

``--attack canaries`` (the default) re-trains, at the settings on the model's card
(epsilon, delta, batch, epochs, clipping, MLP size), on the training data plus
canaries, half of them inserted, and turns how much lower the inserted canaries'
losses are into an empirical epsilon lower bound (one-run audit), a membership attack
and exposures.  ``--attack lira`` trains a target model and ``--shadows`` shadow models
at the same settings on random halves of the data and runs LiRA (Carlini et al. 2022)
on every record: AUC and TPR at low FPR.  Both audit the *procedure*, not the saved
weights.  A user-level classifier (``--user-column``) is audited with canary *users*, each
holding ``--copies`` copies of one random-label record.  A language model (``safeshare
train --language-model``) takes ``--attack extraction`` (prefix -> suffix extraction and
a loss attack on its saved weights, training texts against the texts held out at training)
or ``--attack canaries`` (re-training at the card's settings on its training texts plus
digit canaries, scored by log-likelihood); LiRA is for the classifiers.  The output is for
the data owner: it reads the data without DP.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from safeshare.cli._output import progress_bar, stdout, warn


def _clipping(described: str) -> str:
    """The clipping name in the card's "per-sample, flat (NAME, ...)"; older cards: Opacus's."""
    from safeshare.train.dpsgd import CLIPPINGS

    return next((name for name in CLIPPINGS if f"({name}," in described), "ghost")


def _accountant(described: str) -> str:
    """The accountant named first in the card's "NAME (source), ..."; unknown: pld."""
    from safeshare.train.accounting import ACCOUNTANTS

    name = described.split(" ", 1)[0]
    return name if name in ACCOUNTANTS else "pld"


def _settings(model: Path) -> dict[str, Any]:
    from safeshare.errors import InputError, InputFileNotFoundError
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
        "accountant": _accountant(str(privacy["accountant"])),
        "learning_rate": float(training["learning_rate"]),
        "hidden": int(layers[1]),
    }


def audit_command(
    model: Path = typer.Argument(..., help="A model directory written by `safeshare train`."),
    data: Path = typer.Option(..., "--data", help="The training data (CSV/TSV or Parquet)."),
    out: Path = typer.Option(..., "--out", "-o", help="Directory to write audit.json, report.txt."),
    attack: str = typer.Option(
        "canaries",
        "--attack",
        help="canaries (one-run audit), lira (shadow models; classifiers) or extraction "
        "(language models: prefix -> suffix on the saved weights).",
    ),
    canaries: int = typer.Option(1000, "--canaries", help="Canaries (about half inserted)."),
    copies: int = typer.Option(
        8,
        "--copies",
        help="User-level classifier: records of each canary user (copies of one canary record).",
    ),
    digits: int = typer.Option(
        6, "--digits", help="Language model: random digits in each canary ('my number is ...')."
    ),
    prefix: int = typer.Option(16, "--prefix", help="Extraction: bytes of each text given."),
    suffix: int = typer.Option(16, "--suffix", help="Extraction: bytes decoded and compared."),
    shadows: int = typer.Option(8, "--shadows", help="LiRA: shadow models (even)."),
    offline: bool = typer.Option(
        False, "--offline", help="LiRA: the offline variant (OUT shadows only)."
    ),
    kind: str | None = typer.Option(
        None, help="Classifier canaries: random-label (default) or out-of-distribution."
    ),
    schema: Path | None = typer.Option(None, help="The YAML schema the model was trained with."),
    significance: float = typer.Option(0.05, help="The audit holds with 1 - significance."),
    seed: int | None = typer.Option(None, help="Reproducible canaries and training."),
    force: bool = typer.Option(
        False, "--force", help="Replace an earlier safeshare output at --out."
    ),
    quiet: bool = typer.Option(
        False, "--quiet", "-q", help="No progress bar or summary (warnings still print)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print audit.json's content (no summary)."),
) -> None:
    """Audit a model's DP training procedure with canaries (an empirical epsilon lower bound)
    or with LiRA (membership inference with shadow models); a language model's weights with
    extraction."""
    import numpy as np

    from safeshare.dp.budget import PrivacyBudget
    from safeshare.dp.randomness import Randomness
    from safeshare.errors import InputError
    from safeshare.output_folder import check_output
    from safeshare.release.training import prepare_table, read_table, split_users
    from safeshare.train.canaries import audit_training, audit_user_training
    from safeshare.train.tabular import train_tabular

    if attack not in ("canaries", "lira", "extraction"):
        raise InputError(f"--attack {attack!r} is unknown; use canaries, lira or extraction")
    check_output(out, force=force, inputs=(model, data, schema))
    from safeshare.release.language_model import is_language_model

    if is_language_model(model):
        if attack == "lira":
            raise InputError(
                f"{str(model)!r} is a language model; LiRA audits the classifiers of "
                "`safeshare train`: use --attack extraction or --attack canaries"
            )
        if kind is not None:
            raise InputError(
                "--kind applies to classifier canaries; a language model's canaries are digit "
                "canaries (--digits): drop --kind"
            )
        _audit_language_model(
            model,
            data,
            out,
            attack=attack,
            schema=schema,
            canaries=canaries,
            digits=digits,
            copies=copies,
            prefix=prefix,
            suffix=suffix,
            significance=significance,
            seed=seed,
            force=force,
            quiet=quiet,
            as_json=as_json,
        )
        return
    if attack == "extraction":
        raise InputError(
            f"--attack extraction needs a language model (`safeshare train --language-model`); "
            f"{str(model)!r} is not one: use --attack canaries or --attack lira"
        )
    kind = "random-label" if kind is None else kind
    settings = _settings(model)
    target = settings.pop("target")
    user_column = settings.get("user_column")
    if user_column is not None and (attack == "lira" or kind != "random-label"):
        raise InputError(
            f"{str(model)!r} is a user-level model (--user-column {user_column}); it is audited "
            "with canary users (--attack canaries, random-label records, --copies each): LiRA "
            "and out-of-distribution canaries attack single records"
        )
    with progress_bar(quiet or as_json) as progress:
        progress("reading", 0.0)
        source, ids = read_table(data, target, schema), None
        if user_column is not None:
            source, ids = split_users(source, user_column, target, unsafe_infer=True)
        prepared = prepare_table(
            source,
            target,
            PrivacyBudget(settings["epsilon"], settings["delta"]),
            unsafe_infer=True,  # the audit's output stays with the data owner
            seed=seed,
        )
        rng = Randomness(seed).generator()

        def procedure(table: Any, users: Any = None) -> Any:
            train_seed = None if seed is None else int(rng.integers(2**62))
            return train_tabular(
                table, target, rng=train_seed, progress=progress, users=users, **settings
            )

        generator = rng if seed is not None else np.random.default_rng()
        result: Any
        if user_column is not None:
            result = audit_user_training(
                prepared.table,
                target,
                ids,
                procedure,
                canaries=canaries,
                copies=copies,
                significance=significance,
                rng=generator,
            )
        elif attack == "lira":
            from safeshare.train.lira import lira_audit

            result = lira_audit(
                prepared.table,
                target,
                procedure,
                shadows=shadows,
                online=not offline,
                rng=generator,
                progress=progress,
            )
        else:
            result = audit_training(
                prepared.table,
                target,
                procedure,
                canaries=canaries,
                kind=kind,
                significance=significance,
                rng=generator,
            )
    report = {
        "audited": (
            "the DP-SGD training procedure at the model's settings (one run on the data plus "
            + ("canary users" if user_column is not None else "canaries")
            + "), not the saved weights"
            if attack == "canaries"
            else f"the DP-SGD training procedure at the model's settings (a target and {shadows} "
            "shadow models, each on a random half of the data), not the saved weights"
        ),
        "model": str(model),
        "settings": {"target": target, **settings},
        "not_dp": "this audit reads the private data without DP; it is for the data owner",
        **result.describe(),
    }
    _write(out, report, result.readings(), force=force, quiet=quiet, as_json=as_json)


def _write(
    out: Path,
    report: dict[str, Any],
    readings: list[str],
    *,
    force: bool,
    quiet: bool,
    as_json: bool,
) -> None:
    """``audit.json`` and ``report.txt`` atomically, then the readings (or the JSON)."""
    from safeshare.release.output import write_release

    text = "\n".join(readings) + "\n"
    write_release(
        out, {"audit.json": json.dumps(report, indent=2) + "\n", "report.txt": text}, force
    )
    if as_json:
        stdout.print_json(json.dumps(report))
    elif not quiet:
        stdout.print(f"written  {out}/audit.json, report.txt")
        for line in readings:
            stdout.print(line)


def _audit_language_model(
    model: Path,
    data: Path,
    out: Path,
    *,
    attack: str,
    schema: Path | None,
    canaries: int,
    digits: int,
    copies: int,
    prefix: int,
    suffix: int,
    significance: float,
    seed: int | None,
    force: bool,
    quiet: bool,
    as_json: bool,
) -> None:
    """A language model: extraction on its weights, or canaries on its training procedure."""
    import warnings

    import numpy as np

    from safeshare.dp.randomness import Randomness
    from safeshare.errors import InputError
    from safeshare.release.language_model import read_audit_texts
    from safeshare.train.language_model import LanguageModel
    from safeshare.train.lm_audit import audit_language_model, extraction_audit

    result: Any
    with progress_bar(quiet or as_json) as progress, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)
        progress("reading", 0.0)
        texts = read_audit_texts(model, data, schema)
        privacy = texts.card.get("privacy", {})
        common = {
            "model": str(model),
            "text_column": texts.text_column,
            "training_texts": len(texts.members),
            "held_out_texts": len(texts.held_out),
            "not_dp": "this audit reads the private data without DP; it is for the data owner",
        }
        if attack == "extraction":
            progress("extracting", 0.5)
            result = extraction_audit(
                LanguageModel.load(model),
                texts.members,
                texts.held_out,
                prefix=prefix,
                suffix=suffix,
            )
            audited = (
                "the saved weights (model.safetensors): greedy prefix -> suffix extraction and "
                "a loss-threshold attack, training texts against the texts held out at training"
            )
            report = {"audited": audited, **common, **result.describe()}
        else:
            if privacy.get("epsilon_budget") is None:
                raise InputError(
                    f"{str(model)!r}'s card has no privacy.epsilon_budget: it is not a DP "
                    "language model from `safeshare train --language-model`"
                )
            rng = Randomness(seed).generator() if seed is not None else np.random.default_rng()
            result = audit_language_model(
                texts.members,
                float(privacy["epsilon_budget"]),
                texts.settings,
                canaries=canaries,
                digits=digits,
                delta=float(privacy["delta"]),
                significance=significance,
                text_column=texts.text_column,
                rng=rng,
                progress=progress,
                users=texts.member_users,
                copies=copies,
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
    if not as_json:
        for warning in caught:  # e.g. how many texts were cut to the context (never a text)
            warn(warning.message)
    _write(out, report, result.readings(), force=force, quiet=quiet, as_json=as_json)
