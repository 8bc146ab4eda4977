"""``safeshare train``: a DP-SGD classifier from a CSV/Parquet file, with a card.

The job itself (reading, the domain, the ledger, training, the card) is
:func:`safeshare.release.training.train_release`.
"""

from __future__ import annotations

from pathlib import Path

import typer

from safeshare.cli._output import console, progress_bar, stdout


def train_command(
    data: Path = typer.Argument(..., help="The sensitive table: a CSV/TSV or Parquet file."),
    target: str = typer.Option(..., "--target", help="The column to predict (categorical)."),
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
    epochs: float = typer.Option(5.0, help="Passes over the data (expected, Poisson sampling)."),
    batch_size: int = typer.Option(512, "--batch-size", help="Expected batch size."),
    hidden: int = typer.Option(64, help="Hidden units of the MLP."),
    learning_rate: float = typer.Option(2e-3, "--learning-rate", help="Adam's learning rate."),
    max_grad_norm: float = typer.Option(1.0, "--max-grad-norm", help="Per-record clipping norm."),
    clipping: str = typer.Option(
        "linear-ghost",
        help="linear-ghost (default: exact for the MLP, fastest), ghost or hooks (Opacus's).",
    ),
    accountant: str = typer.Option("pld", help="pld (tight, default) or rdp."),
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
    force: bool = typer.Option(False, "--force", help="Replace the output directory if it exists."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar or summary."),
) -> None:
    """Train a DP-SGD MLP classifier on a table; write the weights and a privacy card."""
    from safeshare.errors import BudgetError
    from safeshare.release.training import TrainingSettings, train_release
    from safeshare.train.accounting import ACCOUNTANTS

    if accountant not in ACCOUNTANTS:
        raise BudgetError(f"--accountant {accountant!r} is unknown; use one of {list(ACCOUNTANTS)}")
    settings = TrainingSettings(
        epochs=epochs,
        batch_size=batch_size,
        hidden=hidden,
        learning_rate=learning_rate,
        max_grad_norm=max_grad_norm,
        clipping=clipping,
        accountant=accountant,  # type: ignore[arg-type]
    )
    with progress_bar(quiet) as progress:
        model = train_release(
            data,
            target,
            out,
            epsilon=epsilon,
            delta=delta,
            schema_path=schema,
            settings=settings,
            unsafe_infer=unsafe_infer,
            seed=seed,
            ledger=ledger,
            total_epsilon=total_epsilon,
            total_delta=total_delta,
            force=force,
            progress=progress,
        )
    card = model.card
    if quiet:
        return
    privacy = card["privacy"]
    stdout.print(f"written    {out}/model.safetensors, card.json")
    stdout.print(f"guarantee  {card['guarantee']}")
    stdout.print(
        f"training   {privacy['steps']} steps, noise multiplier {privacy['noise_multiplier']:.4g}, "
        f"Poisson rate {privacy['sampling_rate']:.4g}, clipping {privacy['clipping_norm']:g}"
    )
    stdout.print(f"domain     {card['domain_source']}")
    for line in card["notes"]:
        console.print(f"[yellow]note:[/] {line}")
