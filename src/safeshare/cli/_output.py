"""Console output shared by the commands: progress bars, summaries, one-line errors."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table as RichTable

console = Console(stderr=True, highlight=False)
stdout = Console(highlight=False)


@contextmanager
def progress_bar(quiet: bool) -> Iterator[Callable[[str, float], None]]:
    """A ``progress(step, fraction)`` callback drawn as one Rich bar (silent when quiet or piped)."""
    if quiet or not console.is_terminal:
        yield lambda step, done: None
        return
    with Progress(
        TextColumn("[bold]{task.description:<28}"),
        BarColumn(),
        TextColumn("{task.percentage:>3.0f}%"),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    ) as bar:
        task = bar.add_task("starting", total=1.0)
        yield lambda step, done: bar.update(
            task, description=step, completed=min(max(done, 0.0), 1.0)
        )


def release_summary(card: dict[str, Any], out: str, warnings: list[str]) -> None:
    """What a release wrote and what protects it, in a few lines."""
    utility = card["metrics"]["utility"]
    headline = utility.get("tvd_vs_holdout", utility["tvd_vs_train"])
    top = list(headline)[-1]
    risk = card["metrics"]["risk"]
    table = RichTable(show_header=False, box=None, pad_edge=False)
    synthetic = card.get("synthetic_file", "synthetic.csv")
    table.add_row("written", f"{out}/{synthetic}, card.json, report.html")
    table.add_row("guarantee", card["guarantee"])
    table.add_row("noise", "secure" if card["secure_noise"] else "[yellow]seeded: not secure[/]")
    table.add_row("domain", card["domain_source"])
    if "engine" in card:
        table.add_row("engine", card["engine"]["name"])
    table.add_row(
        "rows", f"{card['rows_out']} synthetic from {card['rows_train']} training records"
    )
    table.add_row(
        "utility",
        f"mean {top} TVD {headline[top]['mean']:.3f}"
        + (" vs unseen records" if "tvd_vs_holdout" in utility else " vs train"),
    )
    for line in risk["readings"]:
        table.add_row("risk", line)
    ledger = card["ledger"]
    table.add_row(
        "ledger",
        f"epsilon {ledger['spent_epsilon']:g} of {ledger['total_epsilon']:g} spent "
        f"on this dataset ({ledger['releases']} release(s))",
    )
    stdout.print(table)
    for line in warnings:
        console.print(f"[yellow]warning:[/] {line}")


def error(message: str) -> None:
    # escaped: a message may name an extra, e.g. 'safeshare[faiss]', which is not markup
    console.print(f"[bold red]error:[/] {escape(message)}", soft_wrap=True)
