"""Console output shared by the commands: progress bars, summaries, one-line errors.

Both consoles print text as it is (no Rich markup): a column named ``[/]`` or a value
holding brackets is data, never a style.  Styles come from :func:`styled` and :func:`warn`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table as RichTable
from rich.text import Text

console = Console(stderr=True, highlight=False, markup=False)
stdout = Console(highlight=False, markup=False)
PROGRESS_MODES = ("auto", "lines", "none")
LINE_STEP = 0.1  # in --progress lines, a line per step and per tenth of the work
# how this invocation shows progress: set by the root command from --progress on every run
_progress = {"mode": "auto"}


def styled(text: object, style: str) -> Text:
    """``text`` in ``style`` (e.g. "yellow"), never read as markup."""
    return Text(str(text), style=style)


def warn(line: object, label: str = "warning") -> None:
    """One ``warning: ...`` line on stderr (the label in yellow, the line as it is)."""
    console.print(Text.assemble(styled(f"{label}:", "yellow"), " ", str(line)))


@contextmanager
def progress_bar(quiet: bool) -> Iterator[Callable[[str, float], None]]:
    """A ``progress(step, fraction)`` callback as ``safeshare --progress`` asks: ``auto`` draws
    one Rich bar on a terminal and nothing when piped; ``lines`` prints a plain line on stderr
    per step and per tenth of the work (for logs); ``none`` and ``--quiet`` print nothing."""
    mode = _progress["mode"]
    if quiet or mode == "none" or (mode == "auto" and not console.is_terminal):
        yield lambda step, done: None
        return
    if mode == "lines":
        yield _progress_lines()
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


def show_progress(mode: str) -> None:
    """Set how this invocation shows progress (``safeshare --progress``), one of
    :data:`PROGRESS_MODES`."""
    _progress["mode"] = mode


def _progress_lines() -> Callable[[str, float], None]:
    """A callback printing ``progress: 12.3 s  45%  attacks`` when the step changes or the work
    passes another tenth."""
    started, last = time.monotonic(), {"step": "", "tenth": -1}

    def report(step: str, done: float) -> None:
        share = min(max(done, 0.0), 1.0)
        tenth = int(share / LINE_STEP)
        if step == last["step"] and tenth == last["tenth"]:
            return
        last["step"], last["tenth"] = step, tenth
        elapsed = time.monotonic() - started
        console.print(f"progress: {elapsed:6.1f} s {100 * share:4.0f}%  {step}")

    return report


def finish(quiet: bool, warnings: Iterable[str], summary: Callable[[], None]) -> None:
    """How every command ends: its ``summary`` (unless ``--quiet``), then its warnings (on
    stderr, even when quiet)."""
    if not quiet:
        summary()
    for line in warnings:
        warn(line)


def release_summary(card: dict[str, Any], out: str) -> None:
    """What a release wrote and what protects it, in a few lines."""
    utility = card["metrics"]["utility"]
    headline = utility.get("tvd_vs_holdout", utility["tvd_vs_train"])
    top = list(headline)[-1]
    risk = card["metrics"]["risk"]
    table = RichTable(show_header=False, box=None, pad_edge=False)
    synthetic = card.get("synthetic_file", "synthetic.csv")
    table.add_row("written", f"{out}/{synthetic}, card.json, report.html")
    table.add_row("guarantee", card["guarantee"])
    table.add_row(
        "noise", "secure" if card["secure_noise"] else styled("seeded: not secure", "yellow")
    )
    table.add_row("domain", card["domain_source"])
    if "engine" in card:
        table.add_row("engine", card["engine"]["name"])
    table.add_row(
        "rows", f"{card['rows_out']} synthetic from {card['rows_train']} training records"
    )
    table.add_row("utility", _utility_line(utility, headline, top))
    for line in risk["readings"]:
        table.add_row("risk", line)
    ledger = card["ledger"]
    table.add_row(
        "ledger",
        f"epsilon {ledger['spent_epsilon']:g} of {ledger['total_epsilon']:g} spent "
        f"on this dataset ({ledger['releases']} release(s))",
    )
    stdout.print(table)


def _utility_line(utility: dict[str, Any], headline: dict[str, Any], top: str) -> str | Text:
    """The release's top TVD, beside the training records with each column shuffled on its
    own where a holdout measured both (flagged where the release is worse)."""
    release = headline[top]["mean"]
    line = f"mean {top} TVD {release:.3f}"
    line += " vs unseen records" if "tvd_vs_holdout" in utility else " vs train"
    shuffled = utility.get("tvd_independent_columns_baseline", {}).get(top)
    if shuffled is None:
        return line
    if release > shuffled["mean"]:
        worse = (
            f"; worse than each column shuffled on its own ({shuffled['mean']:.3f}): see the report"
        )
        return Text.assemble(line, styled(worse, "yellow"))
    return line + f"; each column shuffled on its own: {shuffled['mean']:.3f}"


def error(message: str) -> None:
    """The one ``error: ...`` line of a failed command (a message may name 'safeshare[faiss]')."""
    console.print(Text.assemble(styled("error:", "bold red"), " ", message), soft_wrap=True)
