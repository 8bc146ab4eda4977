"""``safeshare demo``: the main job on real example data shipped with statsmodels."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from safeshare.cli._arguments import command, force_option, option, quiet_option, seed_option
from safeshare.cli._output import console, finish, progress_bar, release_summary


@dataclass(frozen=True, kw_only=True)
class DemoArguments:
    """The options of ``safeshare demo``."""

    out: Path = option(
        "--out", "-o", help="Directory to write the release to.", default=Path("demo-release")
    )
    dataset: str = option(
        help="Example data: fair (affairs survey) or randhie (RAND HIE).", default="fair"
    )
    epsilon: float = option(help="Privacy budget epsilon.", default=1.0)
    delta: float = option(help="Privacy budget delta.", default=1e-9)
    seed: int | None = seed_option()
    force: bool = force_option()
    quiet: bool = quiet_option()


def release_example(given: DemoArguments) -> None:
    """Release an example survey (real data, offline) and write its card and report."""
    from safeshare.data.examples import EXAMPLES, load_example
    from safeshare.release import Reading, SynthesisSettings, release

    frame, schema = load_example(given.dataset)
    if not given.quiet:
        console.print(
            f"demo data: {given.dataset} — {EXAMPLES[given.dataset]}; schema {schema.source}"
        )
    # the example data is public: a throwaway ledger keeps it out of the user's real one
    with tempfile.TemporaryDirectory() as scratch, progress_bar(given.quiet) as progress:
        result = release(
            frame,
            out=given.out,
            settings=SynthesisSettings(epsilon=given.epsilon, delta=given.delta),
            reading=Reading(schema=schema, name=f"{given.dataset} (example)"),
            ledger=Path(scratch) / "demo-ledger.sqlite",
            seed=given.seed,
            force=given.force,
            progress=progress,
        )

    def summary() -> None:
        release_summary(result.card, str(given.out))
        console.print(f"open {given.out}/report.html in a browser to read the report")

    finish(given.quiet, result.warnings, summary)


demo = command(DemoArguments, release_example)
