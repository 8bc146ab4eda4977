"""``safeshare plan``: batch size, steps and noise for DP-SGD training, before spending compute."""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.text import Text

from safeshare.cli._arguments import command, header_option, option
from safeshare.cli._output import progress_bar, stdout, styled, warn
from safeshare.errors import InputError


def _sizes(text: str | None) -> list[int] | None:
    if not text:
        return None
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise InputError(
            f"--batch-sizes takes whole numbers separated by commas, got {text!r}; "
            "try --batch-sizes 256,1024"
        ) from None


@dataclass(frozen=True, kw_only=True)
class PlanArguments:
    """The options of ``safeshare plan``."""

    records: int | None = option(
        "--records", help="Number of training records (counted from --data if given).", default=None
    )
    users: int | None = option(
        "--users",
        help="Plan user-level DP-SGD (train --user-column): the number of users; batch sizes "
        "then count users.",
        default=None,
    )
    epsilon: float = option("--epsilon", help="Privacy budget epsilon.")
    delta: float = option("--delta", help="Privacy budget delta (below 1/records).", default=1e-6)
    epochs: float | None = option(
        "--epochs", help="Passes over the data (steps = epochs x records / batch).", default=None
    )
    max_steps: int | None = option(
        "--max-steps",
        help="Compute budget: at most this many steps per configuration.",
        default=None,
    )
    batch_sizes: str | None = option(
        "--batch-sizes", help="Comma-separated batch sizes (default 64 ... 8192).", default=None
    )
    compute: float | None = option(
        "--compute",
        help="Compute budget in training FLOPs (6 x parameters x tokens): plans model size, "
        "batch and steps together (with --model-sizes and --tokens-per-record; --epochs then "
        "caps the passes over the data).",
        default=None,
    )
    model_sizes: str | None = option(
        "--model-sizes",
        help="With --compute: comma-separated candidate model sizes in parameters, e.g. "
        "1e8,3e8,1e9.",
        default=None,
    )
    tokens_per_record: int | None = option(
        "--tokens-per-record",
        help="With --compute: tokens in one record (sequence length).",
        default=None,
    )
    accountant: str = option(
        "--accountant",
        help="pld (tight, default), rdp (faster, looser) or prv (Opacus, upper bound).",
        default="pld",
    )
    data: Path | None = option(
        "--data", help="CSV/Parquet to run pilot runs on (NOT private: flagged).", default=None
    )
    target: str | None = option("--target", help="Target column (with --data).", default=None)
    text_column: str | None = option(
        "--text-column",
        help="With --compute and --data: pilot the byte-level language model (train "
        "--language-model) on this column of texts.",
        default=None,
    )
    widths: str | None = option(
        "--widths",
        help="With --text-column: the language model's candidate widths, e.g. 48,96 (the "
        "model sizes follow).",
        default=None,
    )
    layers: int = option(
        "--layers", help="With --text-column: the language model's layers.", default=1
    )
    schema: Path | None = option("--schema", help="Schema YAML (with --data).", default=None)
    header: bool | None = header_option()
    pilots: int | None = option(
        "--pilots",
        help="Pilot runs for the loss model (with --data; default 6); with --text-column, "
        "noise-batch ratios a width (default 4).",
        default=None,
    )
    seed: int | None = option("--seed", help="Seed the pilots (reproducible).", default=None)
    as_json: bool = option("--json", help="Print the plan as JSON.", default=False)
    quiet: bool = option("--quiet", "-q", help="No progress bar.", default=False)


def plan_dp_sgd(given: PlanArguments) -> None:
    """Rank DP-SGD configurations by sigma/B, or with --data by a loss estimate from pilot runs."""
    from safeshare.errors import BudgetError
    from safeshare.train.accounting import ACCOUNTANTS
    from safeshare.train.planner import plan_training

    if given.accountant not in ACCOUNTANTS:
        raise BudgetError(
            f"--accountant {given.accountant!r} is unknown; use one of {list(ACCOUNTANTS)}"
        )
    records, unit = _units(given)
    if given.compute is not None or given.model_sizes or given.tokens_per_record is not None:
        _plan_compute(given, records, unit)
        return
    table = None
    if given.data is not None and given.target is not None:
        pilots = 6 if given.pilots is None else given.pilots
        table = _pilot_table(given.data, given.target, given, pilots)
        records = len(table)
    with progress_bar(given.quiet or given.as_json) as progress:
        plan = plan_training(
            records,
            given.epsilon,
            given.delta,
            epochs=given.epochs,
            batch_sizes=_sizes(given.batch_sizes),
            max_steps=given.max_steps,
            accountant=given.accountant,  # type: ignore[arg-type]
            progress=progress,
            unit=unit,
        )
        study = None
        if table is not None and given.target is not None:
            plan, study = _rank_with_pilots(
                plan, table, given.target, given.pilots or 6, given.seed, progress
            )
    if given.as_json:
        described = plan.describe()
        if study is not None:
            described["pilots"] = study
        stdout.print_json(json.dumps(described))
        return
    _print_plan(plan, given, records, unit)


def _parameters(text: str | None) -> list[int]:
    """``--model-sizes``: parameter counts, e.g. ``1e8,3e8,1e9``."""
    try:
        sizes = [float(part) for part in (text or "").split(",") if part.strip()]
    except ValueError:
        sizes = []
    if not sizes or any(not (1 <= s < 1e15 and s == int(s)) for s in sizes):
        raise InputError(
            f"--model-sizes takes parameter counts separated by commas, got {text!r}; try "
            "--model-sizes 1e8,3e8,1e9"
        )
    return [int(s) for s in sizes]


def _plan_compute(given: PlanArguments, records: int, unit: str) -> None:
    """``--compute``: model size, batch and steps under a compute budget (not ranked)."""
    from safeshare.train.planner import plan_compute

    missing = [
        flag
        for flag, value in (
            ("--compute", given.compute),
            ("--model-sizes", given.model_sizes or given.widths),
            ("--tokens-per-record", given.tokens_per_record),
        )
        if value is None
    ]
    if missing:
        raise InputError(
            f"a compute-aware plan needs --compute, --model-sizes (or --widths) and "
            f"--tokens-per-record; add {', '.join(missing)}"
        )
    if given.max_steps is not None or given.target is not None:
        raise InputError(
            "--compute sets the steps of each configuration: drop --max-steps; its pilot runs "
            "train the byte-level language model on --data's --text-column, not a classifier "
            "of --target"
        )
    texts = None
    if given.data is not None:
        texts = _pilot_texts(given)
        records = len(texts)
    widths = _widths(given)
    with progress_bar(given.quiet or given.as_json) as progress:
        plan = plan_compute(
            records,
            given.epsilon,
            given.delta,
            tokens_per_record=int(given.tokens_per_record or 0),
            flops=float(given.compute or 0.0),
            model_sizes=list(widths) if widths else _parameters(given.model_sizes),
            batch_sizes=_sizes(given.batch_sizes),
            max_epochs=given.epochs,
            accountant=given.accountant,  # type: ignore[arg-type]
            progress=progress,
        )
        study = None
        if texts is not None:
            plan, study = _rank_with_language_model_pilots(plan, texts, widths, given, progress)
    if given.as_json:
        described = plan.describe()
        if study is not None:
            described["pilots"] = study
        stdout.print_json(json.dumps(described))
        return
    _print_plan(plan, given, records, unit)


def _widths(given: PlanArguments) -> dict[int, int]:
    """``--widths``: each width's parameter count under the byte-level model's shape
    (--tokens-per-record bytes of context, --layers); empty without --widths."""
    if given.widths is None:
        if given.data is not None:
            raise InputError("pilots of the language model need --widths, e.g. --widths 48,96")
        return {}
    if given.model_sizes is not None:
        raise InputError("give --widths or --model-sizes, not both: widths set the sizes")
    try:
        widths = sorted({int(part) for part in given.widths.split(",") if part.strip()})
    except ValueError:
        widths = []
    if not widths or widths[0] < 2:
        raise InputError(
            f"--widths takes whole numbers of at least 2 separated by commas, got "
            f"{given.widths!r}; try --widths 48,96"
        )
    from safeshare.train.language_model import LanguageModelSettings, count_parameters

    context = int(given.tokens_per_record or 64)
    return {
        count_parameters(LanguageModelSettings(context=context, width=w, layers=given.layers)): w
        for w in widths
    }


# texts the language-model pilots score on, not train on: at most this many, a fifth at most
PILOT_HELD_OUT_TEXTS = 300


def _pilot_texts(given: PlanArguments) -> list[str]:
    """``--data``'s --text-column, the texts the pilots run on; says, before they run, that
    they are not private."""
    from safeshare.release.language_model import read_texts
    from safeshare.train.dpsgd import require_torch
    from safeshare.train.pilots import NOT_PRIVATE

    if given.data is None or given.text_column is None:
        raise InputError(
            "--compute with --data pilots a language model: name its texts with --text-column"
        )
    require_torch()
    source = read_texts(given.data, given.text_column, given.schema, header=given.header)
    texts = [str(t) for t in source.texts]
    warn(f"language-model pilot runs on {given.data.name}: {NOT_PRIVATE}")
    return texts


def _rank_with_language_model_pilots(
    plan: Any, texts: list[str], widths: dict[int, int], given: PlanArguments, progress: Any
) -> tuple[Any, dict[str, Any]]:
    """Noise-batch pilots at each candidate size, read off their curves, re-rank."""
    import numpy as np

    from safeshare.train.pilot_curves import PilotCurves
    from safeshare.train.pilots import noise_batch_pilot_grid, run_language_model_pilots
    from safeshare.train.planner import rank_by_loss

    rng = np.random.default_rng(given.seed)
    order = rng.permutation(len(texts))
    held = min(PILOT_HELD_OUT_TEXTS, len(texts) // 5)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)
        study = run_language_model_pilots(
            [texts[i] for i in order[held:]],
            noise_batch_pilot_grid(
                plan, widths, ratios=4 if given.pilots is None else given.pilots
            ),
            held_out=[texts[i] for i in order[:held]],
            context=int(given.tokens_per_record or 64),
            layers=given.layers,
            rng=rng,
            progress=progress,
        )
    for message in dict.fromkeys(str(w.message) for w in caught):  # each pilot says the same
        warn(message)
    return rank_by_loss(plan, PilotCurves.fit(study.points())), study.describe()


def _units(given: PlanArguments) -> tuple[int, str]:
    """How many privacy units the plan is for (0 while --data is still to be counted), and
    which unit; refuses flags that do not go together."""
    if given.users is not None and (given.records is not None or given.data is not None):
        raise InputError(
            "give --users alone: --records and --data plan record-level training (their "
            "pilot runs clip per record), --users plans user-level training"
        )
    if given.data is not None:
        if given.records is not None:
            raise InputError(
                "give --records or --data, not both: with --data the records are counted"
            )
        if given.text_column is not None:
            if given.target is not None:
                raise InputError(
                    "give --target (a classifier's pilots) or --text-column (a language "
                    "model's), not both"
                )
            if given.compute is None:
                raise InputError(
                    "--text-column pilots a language model for a compute-aware plan: add "
                    "--compute, --widths and --tokens-per-record"
                )
            return 0, "record"
        if given.target is None:
            raise InputError(
                "--data needs --target (the column the classifier predicts), or --text-column "
                "with --compute (the texts a language model trains on)"
            )
        return 0, "record"
    for flag, value in (
        ("--pilots", given.pilots),
        ("--target", given.target),
        ("--schema", given.schema),
        ("--text-column", given.text_column),
    ):
        if value is not None:
            raise InputError(f"{flag} needs --data (the table the pilot runs train on)")
    if given.users is not None:
        return given.users, "user"
    if given.records is None:
        raise InputError("give --records (how many training records) or --data")
    return given.records, "record"


def _print_plan(plan: Any, given: PlanArguments, records: int, unit: str) -> None:
    """The ranked configurations as a table, with what ranked them."""
    from rich.table import Table as RichTable

    table = RichTable(
        title=f"DP-SGD plans for {records} {unit}s at epsilon={given.epsilon:g}, "
        f"delta={given.delta:g} ({given.accountant.upper()}, Poisson sampling, privacy unit = "
        f"{unit}" + (": batch sizes count users)" if unit == "user" else ")"),
        title_justify="left",
    )
    sized = plan.compute is not None
    names = ["rank" if plan.ranked else "#"] + (["params"] if sized else [])
    names += ["batch", "q", "steps", "epochs", "noise σ", "σ/B", "epsilon spent"]
    names += ["tokens", "FLOPs"] if sized else []
    if plan.predictions:
        names.append("loss est.")
    for name in names:
        table.add_column(name, justify="right", min_width=11 if name == "loss est." else None)
    for rank, c in enumerate(plan.candidates, start=1):
        extra = [] if c.compute is None else [f"{c.compute.tokens:.3g}", f"{c.compute.flops:.3g}"]
        if plan.predictions:
            guess = plan.predictions[rank - 1]
            mark = ("" if guess.within_pilot_ratios else "*") + (
                "" if guess.within_pilot_steps else "†"
            )
            mark = f" {mark}" if mark else ""
            extra.append(f"{guess.loss:.3f}±{guess.error:.3f}{mark}")
        table.add_row(
            str(rank),
            *([f"{c.compute.parameters:.3g}"] if c.compute is not None else []),
            str(c.batch_size),
            f"{c.sampling_rate:.4g}",
            str(c.steps),
            f"{c.epochs:.3g}",
            f"{c.noise_multiplier:.4g}",
            f"{c.noise_batch_ratio:.3g}",
            f"{c.epsilon:.4f}",
            *extra,
        )
    stdout.print(table)
    if plan.refused is not None:
        warn(f"not ranked by the loss estimates: {plan.refused}")
    if plan.predictions and plan.loss_model is not None and plan.refused is None:
        from safeshare.train.pilots import NOT_PRIVATE

        m = plan.loss_model
        how = (
            f"{m['method']}, from {m['pilots']} pilot runs"
            if "method" in m
            else f"{m['formula']}, T = {m['T']}, fitted to {m['pilots']} pilot runs "
            f"(a={m['a']:.3g}, b={m['b']:.3g}, c={m['c']:.3g}, d={m['d']:.3g}, e={m['e']:.3g}, "
            f"r0={m['r0']:.3g})"
        )
        stdout.print(
            f"ranked by predicted held-out loss, an ESTIMATE (loss est.): {how}; ± is its "
            "leave-one-out RMS error; * marks a σ/B outside the pilots' range, † steps outside "
            "theirs (extrapolated). The privacy figures are exact."
        )
        stdout.print(styled(f"pilot runs: {NOT_PRIVATE}", "yellow"))
    elif sized:
        stdout.print(
            "not ranked: at a fixed compute a larger batch takes fewer steps, which σ/B does not "
            "weigh; pilot runs across model sizes rank them by a loss estimate. FLOPs count "
            "6 x parameters per token (forward and backward); the privacy figures are exact."
        )
    else:
        stdout.print(
            "ranked by σ/B, the noise on the averaged gradient (lower is better at equal steps); "
            "the privacy figures are exact, no loss is predicted"
        )
    for size, why in plan.skipped.items():
        what = size if isinstance(size, str) else f"batch {size}"
        stdout.print(Text.assemble(styled(f"{what} left out:", "yellow"), " ", why))


plan_command = command(PlanArguments, plan_dp_sgd)


def _pilot_table(data: Path, target: str, given: PlanArguments, pilots: int) -> Any:
    """The table the pilots run on (``data``, read with ``given``'s --schema and --header); says,
    before they run, that they are not private."""
    from safeshare.dp.budget import PrivacyBudget
    from safeshare.release.training import prepare_table, read_table
    from safeshare.train.dpsgd import require_torch
    from safeshare.train.loss_model import MIN_PILOTS
    from safeshare.train.pilots import NOT_PRIVATE

    if pilots < MIN_PILOTS:
        raise InputError(
            f"--pilots {pilots} is too few: the loss model has 4 parameters and a leave-one-out "
            f"error, so it needs at least {MIN_PILOTS}"
        )
    require_torch()
    warn(f"{pilots} pilot runs on {data.name}: {NOT_PRIVATE}")
    source = read_table(data, target, given.schema, given.header)
    # the domain is read without DP too (the pilots are non-private tuning; nothing is released)
    prepared = prepare_table(source, target, PrivacyBudget(1.0, 1e-6), unsafe_infer=True)
    return prepared.table


def _rank_with_pilots(
    plan: Any, table: Any, target: str, pilots: int, seed: int | None, progress: Any
) -> tuple[Any, dict[str, Any]]:
    """Run the pilots over the candidates' sigma/B range, fit the loss model, re-rank."""
    import numpy as np

    from safeshare.train.loss_model import LossModel
    from safeshare.train.pilots import pilot_ratios, run_pilots
    from safeshare.train.planner import rank_by_loss

    ratios = [c.noise_batch_ratio for c in plan.candidates]
    study = run_pilots(
        table,
        target,
        # a little wider than the candidates': calibration lands just above a target ratio
        pilot_ratios(min(ratios) / 1.1, max(ratios) * 1.1, pilots),
        rng=np.random.default_rng(seed),
        progress=progress,
    )
    return rank_by_loss(plan, LossModel.fit(study.points())), study.describe()
