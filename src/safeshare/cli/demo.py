"""``safeshare demo``: the main job on real example data shipped with statsmodels."""

from __future__ import annotations

import tempfile
from pathlib import Path

import typer

from safeshare.cli._output import console, progress_bar, release_summary


def demo(
    out: Path = typer.Option(
        Path("demo-release"), "--out", "-o", help="Directory to write the release to."
    ),
    dataset: str = typer.Option(
        "fair", help="Example data: fair (affairs survey) or randhie (RAND HIE)."
    ),
    epsilon: float = typer.Option(1.0, help="Privacy budget epsilon."),
    delta: float = typer.Option(1e-9, help="Privacy budget delta."),
    seed: int | None = typer.Option(
        None, help="Reproducible run. NOT private against anyone who knows the seed."
    ),
    force: bool = typer.Option(
        False, "--force", help="Replace an earlier safeshare output at --out."
    ),
    quiet: bool = typer.Option(
        False, "--quiet", "-q", help="No progress bar or summary (warnings still print)."
    ),
) -> None:
    """Release an example survey (real data, offline) and write its card and report."""
    from safeshare.data.examples import EXAMPLES, load_example
    from safeshare.release import release

    frame, schema = load_example(dataset)
    if not quiet:
        console.print(f"demo data: {dataset} — {EXAMPLES[dataset]}; schema {schema.source}")
    # the example data is public: a throwaway ledger keeps it out of the user's real one
    with tempfile.TemporaryDirectory() as scratch, progress_bar(quiet) as progress:
        result = release(
            frame,
            schema=schema,
            out=out,
            epsilon=epsilon,
            delta=delta,
            seed=seed,
            force=force,
            ledger=Path(scratch) / "demo-ledger.sqlite",
            dataset_name=f"{dataset} (example)",
            progress=progress,
        )
    if not quiet:
        release_summary(result.card, str(out), result.warnings)
        console.print(f"open {out}/report.html in a browser to read the report")
