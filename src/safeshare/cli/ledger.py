"""``safeshare ledger``: what each dataset has spent, and its total budget."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table as RichTable

from safeshare.cli._output import stdout

ledger_app = typer.Typer(
    help="List datasets' privacy spending, or set a dataset's total budget.", no_args_is_help=True
)


@ledger_app.command("list")
def list_datasets(
    ledger: Path | None = typer.Option(
        None, help="Ledger file (default: $SAFESHARE_LEDGER or user data dir)."
    ),
) -> None:
    """Every dataset in the ledger with its spent and total budget (creates nothing)."""
    from safeshare.dp.ledger import Ledger, default_ledger_path

    path = ledger or default_ledger_path()
    if not path.exists():
        stdout.print(f"there is no ledger at {path}: nothing was released with it")
        return
    book = Ledger(path, create=False)
    rows = book.datasets()
    if not rows:
        stdout.print(f"the ledger at {book.path} records no release yet")
        return
    table = RichTable(title=f"privacy ledger {book.path}")
    for header in (
        "dataset",
        "identity",
        "releases",
        "epsilon spent / total",
        "delta spent / total",
    ):
        table.add_column(header)
    for s in rows:
        table.add_row(
            s.name,
            s.fingerprint[:12],
            str(s.releases),
            f"{s.spent_epsilon:g} / {s.total.epsilon:g}",
            f"{s.spent_delta:g} / {s.total.delta:g}",
        )
    stdout.print(table)


@ledger_app.command("set-total")
def set_total(
    dataset: str = typer.Argument(
        ..., help="The data file, or a dataset's name or sha256 prefix in the ledger."
    ),
    epsilon: float = typer.Option(..., help="The dataset's total epsilon over all releases."),
    delta: float = typer.Option(1e-8, help="The dataset's total delta over all releases."),
    ledger: Path | None = typer.Option(
        None, help="Ledger file (default: $SAFESHARE_LEDGER or user data dir)."
    ),
    header: bool | None = typer.Option(
        None,
        "--header/--no-header",
        help="Whether the data file's first row is a header, as its releases read it "
        "(default: detected).",
    ),
) -> None:
    """Set a dataset's total budget (never below what it has spent)."""
    from safeshare.data.identity import Identity
    from safeshare.dp.budget import PrivacyBudget
    from safeshare.dp.ledger import Ledger
    from safeshare.errors import LedgerError

    book = Ledger(ledger)
    path = Path(dataset)
    if path.is_file():
        identity = Identity.of_file(path, header)
        fingerprint = identity.records
        known = book.carry_over(fingerprint, identity.formerly)
        name = known.name if known else path.name
    else:
        found = book.find(dataset)
        if found is None:
            raise LedgerError(
                f"no dataset {dataset!r} in the ledger at {book.path}; give the data file's path"
            )
        fingerprint, name = found.fingerprint, found.name
    book.set_total(fingerprint, PrivacyBudget(epsilon, delta), name=name)
    stdout.print(f"{name}: total budget set to epsilon={epsilon:g}, delta={delta:g}")
