"""What every paid job shares: its request, one charge to the ledger, and the refund rule.

Every job that spends privacy budget follows one skeleton: check the request (before any
value is read) -> read -> plan the privacy events -> **one charge** to the ledger -> run ->
write atomically.  :class:`JobRequest` is what every training job is asked whatever it
trains (the input, the output folder, the budget and the ledger that pays); a :class:`Bill`
is what one run charges; :func:`paid` charges it and refunds it where the run then fails
for a reason of the machine (see :func:`safeshare.release.resume.refund_on_failure`).

>>> import tempfile, pathlib
>>> from safeshare.data.identity import Identity
>>> from safeshare.dp.budget import PrivacyBudget
>>> tmp = pathlib.Path(tempfile.mkdtemp())
>>> bill = Bill(Identity("ab12"), "people.csv", PrivacyBudget(1.0, 1e-9), "train dp-sgd")
>>> with paid(tmp / "ledger.sqlite", bill) as payment:
...     summary = payment.summary()
>>> summary["spent_epsilon"], summary["releases"]
(1.0, 1)
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from safeshare.data.identity import Identity
from safeshare.dp.budget import PrivacyBudget, check_delta, check_epsilon
from safeshare.dp.ledger import Ledger
from safeshare.dp.randomness import check_seed
from safeshare.output_folder import check_output
from safeshare.release.resume import Spend, refund_on_failure, spend_once


class Fingerprinted(Protocol):
    """An input the ledger knows by its records' identity, and calls by its name."""

    @property
    def identity(self) -> Identity: ...

    @property
    def name(self) -> str: ...


@dataclass(frozen=True)
class Bill:
    """What one run charges: the dataset (identity, name), the budget, the ledger's label
    for the run, and the dataset's total when the ledger meets it for the first time."""

    identity: Identity
    name: str
    budget: PrivacyBudget
    label: str
    default_total: PrivacyBudget | None = None

    @property
    def fingerprint(self) -> str:
        """The dataset's key in the ledger."""
        return self.identity.records


@dataclass(frozen=True)
class Job:
    """Where a release is written and who pays: the checked output folder, the ledger, the
    seed (reproducible, and *not* private against whoever knows it) and whether an earlier
    release in the folder may be replaced."""

    out: Path
    ledger: Ledger | str | Path | None = None
    seed: int | None = None
    force: bool = False


@dataclass(frozen=True)
class Payment:
    """The ledger a run was charged in and the spend (resumed or new)."""

    ledger: Ledger
    spend: Spend

    def summary(self) -> dict[str, Any]:
        """The ledger's state after the spend, for the card."""
        status = self.spend.status
        return {
            "path": str(self.ledger.path),
            "total_epsilon": status.total.epsilon,
            "total_delta": status.total.delta,
            "spent_epsilon": status.spent_epsilon,
            "spent_delta": status.spent_delta,
            "releases": status.releases,
        }


def charge(
    ledger: Ledger | str | Path | None, bill: Bill, checkpoint: str | Path | None = None
) -> Payment:
    """Charge ``bill`` once (a ``checkpoint`` folder's receipt makes a retry free), no refund.

    For jobs whose failures cannot be refunded: Private Evolution's model server sees
    samples chosen by DP votes, so a failure after the first vote has released something.
    """
    book = ledger if isinstance(ledger, Ledger) else Ledger(ledger)
    spend = spend_once(
        book,
        bill.fingerprint,
        bill.budget,
        bill.label,
        checkpoint,
        name=bill.name,
        default_total=bill.default_total,
        formerly=bill.identity.formerly,
    )
    return Payment(book, spend)


@contextmanager
def paid(
    ledger: Ledger | str | Path | None, bill: Bill, checkpoint: str | Path | None = None
) -> Iterator[Payment]:
    """Charge ``bill`` and run the block; a failure of the machine in it refunds the charge."""
    payment = charge(ledger, bill, checkpoint)
    with refund_on_failure(payment.ledger, payment.spend, checkpoint):
        yield payment


@dataclass(frozen=True)
class JobRequest:
    """What a training job is asked, whatever it trains: the input, the output folder, the
    budget, the ledger that pays for it and the seed.

    ``header``: whether a CSV's first row is a header (None: the schema's word, else detected).
    ``delta=None`` means 1 / (10 x units), where the job counts its privacy units (records,
    texts or users; the count is public, as the card says).  ``total_epsilon`` /
    ``total_delta``: the dataset's total in the ledger when it is seen for the first time
    (default: this run's budget).  ``seed`` makes the run reproducible and *not* private
    against whoever knows it.

    >>> request = JobRequest(Path("people.csv"), Path("model"), epsilon=2.0)
    >>> request.budget(units=500)
    PrivacyBudget(epsilon=2.0, delta=0.0002)
    """

    data: Path
    out: Path
    epsilon: float
    delta: float | None = None
    schema_path: Path | None = None
    seed: int | None = None
    ledger: Ledger | Path | None = None
    total_epsilon: float | None = None
    total_delta: float | None = None
    force: bool = False
    header: bool | None = None

    def check(self) -> None:
        """Refuse a bad output folder, seed or budget before anything is read or spent."""
        check_output(self.out, force=self.force, inputs=(self.data, self.schema_path, self.ledger))
        check_seed(self.seed)
        check_epsilon(self.epsilon)
        if self.delta is not None:
            check_delta(self.delta)

    def budget(self, units: int) -> PrivacyBudget:
        """This run's budget; without a delta, 1 / (10 x ``units``)."""
        delta = 1.0 / (10 * units) if self.delta is None else self.delta
        return PrivacyBudget(self.epsilon, delta)

    def bill(self, identity: Identity, name: str, budget: PrivacyBudget, label: str) -> Bill:
        """What this run charges for ``budget`` on the dataset ``identity``."""
        total = None
        if self.total_epsilon is not None or self.total_delta is not None:
            total = PrivacyBudget(
                self.total_epsilon or budget.epsilon, self.total_delta or budget.delta
            )
        return Bill(identity, name, budget, label, total)

    @contextmanager
    def paid(
        self, source: Fingerprinted, units: int, label: str
    ) -> Iterator[tuple[PrivacyBudget, Payment]]:
        """Charge this run's budget for ``units`` privacy units of ``source`` under ``label``;
        yields the budget and the payment.  A crash of the machine in the block refunds it."""
        budget = self.budget(units)
        with paid(self.ledger, self.bill(source.identity, source.name, budget, label)) as payment:
            yield budget, payment
