"""``safeshare plan``: batch size, steps and noise for DP-SGD training, before spending compute."""

from __future__ import annotations

import json

import typer

from safeshare.cli._output import progress_bar, stdout


def _sizes(text: str | None) -> list[int] | None:
    from safeshare.errors import InputError

    if not text:
        return None
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise InputError(
            f"--batch-sizes takes whole numbers separated by commas, got {text!r}; "
            "try --batch-sizes 256,1024"
        ) from None


def plan_command(
    records: int = typer.Option(..., "--records", help="Number of training records."),
    epsilon: float = typer.Option(..., "--epsilon", help="Privacy budget epsilon."),
    delta: float = typer.Option(1e-6, "--delta", help="Privacy budget delta (below 1/records)."),
    epochs: float | None = typer.Option(
        None, "--epochs", help="Passes over the data (steps = epochs x records / batch)."
    ),
    max_steps: int | None = typer.Option(
        None, "--max-steps", help="Compute budget: at most this many steps per configuration."
    ),
    batch_sizes: str | None = typer.Option(
        None, "--batch-sizes", help="Comma-separated batch sizes (default 64 ... 8192)."
    ),
    accountant: str = typer.Option(
        "pld", "--accountant", help="pld (tight, default) or rdp (faster, looser)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the plan as JSON."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
) -> None:
    """Rank DP-SGD configurations by noise-batch ratio sigma/B (privacy exact, no loss model)."""
    from rich.table import Table as RichTable

    from safeshare.errors import BudgetError
    from safeshare.train.accounting import ACCOUNTANTS
    from safeshare.train.planner import plan_training

    if accountant not in ACCOUNTANTS:
        raise BudgetError(f"--accountant {accountant!r} is unknown; use one of {list(ACCOUNTANTS)}")
    with progress_bar(quiet or as_json) as progress:
        plan = plan_training(
            records,
            epsilon,
            delta,
            epochs=epochs,
            batch_sizes=_sizes(batch_sizes),
            max_steps=max_steps,
            accountant=accountant,  # type: ignore[arg-type]
            progress=progress,
        )
    if as_json:
        stdout.print_json(json.dumps(plan.describe()))
        return
    table = RichTable(
        title=f"DP-SGD plans for {records} records at epsilon={epsilon:g}, delta={delta:g} "
        f"({accountant.upper()}, Poisson sampling, privacy unit = record)",
        title_justify="left",
    )
    for name in ("rank", "batch", "q", "steps", "epochs", "noise σ", "σ/B", "epsilon spent"):
        table.add_column(name, justify="right")
    for rank, c in enumerate(plan.candidates, start=1):
        table.add_row(
            str(rank),
            str(c.batch_size),
            f"{c.sampling_rate:.4g}",
            str(c.steps),
            f"{c.epochs:.3g}",
            f"{c.noise_multiplier:.4g}",
            f"{c.noise_batch_ratio:.3g}",
            f"{c.epsilon:.4f}",
        )
    stdout.print(table)
    stdout.print(
        "ranked by σ/B, the noise on the averaged gradient (lower is better at equal steps); "
        "the privacy figures are exact, no loss is predicted"
    )
    for size, why in plan.skipped.items():
        stdout.print(f"[yellow]batch {size} left out:[/] {why}")
