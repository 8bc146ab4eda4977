"""``safeshare synthesize --method pe --text-column ...``: text Private Evolution from the CLI."""

from __future__ import annotations

import shlex
from pathlib import Path

from rich.table import Table as RichTable

from safeshare.cli._output import progress_bar, stdout, styled, warn
from safeshare.dp.budget import PrivacyBudget
from safeshare.synth.pe.backends import TextBackend


def resume_command(data: str, options: dict[str, object]) -> str:
    """The command line that runs this release again (to resume from its checkpoint).

    >>> resume_command("r.csv", {"--out": Path("o"), "--seed": None, "--force": True})
    'safeshare synthesize r.csv --method pe --out o --force'
    """
    words = ["safeshare", "synthesize", data, "--method", "pe"]
    for flag, value in options.items():
        if value is None or value is False:
            continue
        words += [flag] if value is True else [flag, str(value)]
    return shlex.join(words)


def release_text_command(
    data: str,
    *,
    out: Path,
    text_column: str,
    label_column: str | None,
    label_names: str | None,
    backend: TextBackend,
    epsilon: float,
    delta: float,
    iterations: int | None,
    samples: int | None,
    lookahead: int | None,
    neighbour_search: str | None,
    holdout_fraction: float,
    rows: int | None,
    seed: int | None,
    ledger: Path | None,
    total: PrivacyBudget | None,
    force: bool,
    checkpoint: Path | None,
    quiet: bool,
) -> None:
    """Run :func:`safeshare.release.text.release_text` and print what it wrote."""
    from safeshare.release.text import DEFAULT_ITERATIONS, parse_label_names, release_text

    again = resume_command(
        data,
        {
            "--text-column": text_column,
            "--label-column": label_column,
            "--label-names": label_names,
            "--api": backend.kind,
            "--base-url": backend.base_url,
            "--model": backend.model,
            "--api-key-env": backend.api_key_env if backend.kind == "openai-compatible" else None,
            "--max-new-tokens": backend.max_new_tokens if backend.kind != "word" else None,
            "--vocabulary": backend.vocabulary,
            "--epsilon": epsilon,
            "--delta": delta,
            "--iterations": iterations,
            "--samples": samples,
            "--lookahead": lookahead,
            "--neighbour-search": neighbour_search,
            "--holdout-fraction": holdout_fraction,
            "--rows": rows,
            "--seed": seed,
            "--ledger": ledger,
            "--checkpoint": checkpoint,
            "--out": out,
            "--force": force,
        },
    )
    with progress_bar(quiet) as progress:
        result = release_text(
            data,
            out=out,
            text_column=text_column,
            label_column=label_column,
            label_names=parse_label_names(label_names),
            backend=backend,
            epsilon=epsilon,
            delta=delta,
            iterations=iterations or DEFAULT_ITERATIONS,
            samples=samples,
            lookahead=lookahead or 0,
            neighbour_search=neighbour_search or "auto",
            holdout_fraction=holdout_fraction,
            rows=rows,
            seed=seed,
            ledger=ledger,
            total_budget=total,
            force=force,
            checkpoint=checkpoint,
            resume_command=again,
            progress=progress,
        )
    if quiet:  # no summary; warnings still print (on stderr)
        for line in result.warnings:
            warn(line)
        return
    card = result.card
    table = RichTable(show_header=False, box=None, pad_edge=False)
    table.add_row("written", f"{out}/synthetic.csv, card.json, report.html")
    table.add_row("guarantee", card["guarantee"])
    table.add_row(
        "noise", "secure" if card["secure_noise"] else styled("seeded: not secure", "yellow")
    )
    budget = card["budget"]
    table.add_row(
        "accounting",
        f"Gaussian DP mu={budget['gdp_mu']:.4g}: T={budget['iterations']} histograms, "
        f"sigma={budget['sigma']:.4g}, {budget['samples_per_iteration']} samples per iteration",
    )
    table.add_row("rows", f"{card['rows_out']} synthetic texts from {card['rows_train']} records")
    classifier = card["metrics"].get("classifier")
    if classifier:
        table.add_row(
            "utility",
            f"classifier accuracy on unseen records {classifier['accuracy_synthetic']:.3f} "
            f"(trained on real text: {classifier['accuracy_real']:.3f})",
        )
    copies = card["metrics"].get("copies_of_train")
    if copies:
        table.add_row("copies", f"{copies['value']:.1%} of texts equal a training text")
    ledger_card = card["ledger"]
    table.add_row(
        "ledger",
        f"epsilon {ledger_card['spent_epsilon']:g} of {ledger_card['total_epsilon']:g} spent "
        f"on this dataset ({ledger_card['releases']} release(s))",
    )
    stdout.print(table)
    for line in result.warnings:
        warn(line)
