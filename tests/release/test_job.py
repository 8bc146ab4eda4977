"""The skeleton every paid job shares: its request is checked before anything is read, one
charge per run, refunded only where the machine failed."""

from __future__ import annotations

from pathlib import Path

import pytest

from safeshare.data.identity import Identity
from safeshare.dp.budget import PrivacyBudget
from safeshare.dp.ledger import Ledger
from safeshare.errors import BudgetError, InputError, OutputExistsError, OutputWriteError
from safeshare.release.job import Bill, JobRequest, charge, paid

BUDGET = PrivacyBudget(1.0, 1e-6)


def test_the_default_delta_counts_the_jobs_units_and_an_explicit_one_is_kept() -> None:
    request = JobRequest(Path("data.csv"), Path("out"), epsilon=2.0)
    assert request.budget(units=1_000) == PrivacyBudget(2.0, 1e-4)
    assert request.budget(units=50) == PrivacyBudget(2.0, 2e-3)
    explicit = JobRequest(Path("data.csv"), Path("out"), epsilon=2.0, delta=1e-8)
    assert explicit.budget(units=50) == PrivacyBudget(2.0, 1e-8)


def test_a_bill_carries_the_total_only_when_one_was_asked_for() -> None:
    plain = JobRequest(Path("d.csv"), Path("out"), epsilon=1.0)
    assert plain.bill("ab", "d.csv", BUDGET, "train").default_total is None
    half = JobRequest(Path("d.csv"), Path("out"), epsilon=1.0, total_epsilon=5.0)
    assert half.bill("ab", "d.csv", BUDGET, "train").default_total == PrivacyBudget(5.0, 1e-6)
    both = JobRequest(Path("d.csv"), Path("out"), epsilon=1.0, total_epsilon=5.0, total_delta=1e-5)
    assert both.bill("ab", "d.csv", BUDGET, "train").default_total == PrivacyBudget(5.0, 1e-5)


@pytest.mark.parametrize(
    ("changes", "error", "message"),
    [
        ({"epsilon": 0.0}, BudgetError, "epsilon"),
        ({"epsilon": float("nan")}, BudgetError, "epsilon"),
        ({"delta": 1.5}, BudgetError, "delta"),
        ({"seed": -1}, InputError, "seed"),
    ],
)
def test_a_bad_request_is_refused_before_anything_is_written(
    tmp_path: Path, changes: dict[str, object], error: type[Exception], message: str
) -> None:
    data = tmp_path / "data.csv"
    data.write_text("a,b\n1,2\n", encoding="utf-8")
    fields: dict[str, object] = {"epsilon": 1.0, **changes}
    request = JobRequest(data, tmp_path / "out", **fields)  # type: ignore[arg-type]
    with pytest.raises(error, match=message):
        request.check()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.csv"]


def test_the_output_folder_may_not_hold_the_input(tmp_path: Path) -> None:
    data = tmp_path / "data.csv"
    data.write_text("a,b\n1,2\n", encoding="utf-8")
    with pytest.raises(OutputExistsError, match="holds the input"):
        JobRequest(data, tmp_path, epsilon=1.0, force=True).check()
    assert data.is_file()


def test_paid_refunds_a_failure_of_the_machine_and_keeps_one_of_the_data(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "ledger.sqlite")
    bill = Bill(Identity("ab12"), "people.csv", BUDGET, "train dp-sgd")
    with pytest.raises(OutputWriteError, match="not charged"), paid(ledger, bill):
        raise OSError(28, "No space left on device")
    assert ledger.status("ab12").spent_epsilon == 0.0
    with pytest.raises(InputError), paid(ledger, bill) as payment:
        assert payment.summary()["spent_epsilon"] == 1.0
        raise InputError("a value the domain refuses")
    status = ledger.status("ab12")
    assert (status.spent_epsilon, status.releases) == (1.0, 1)


def test_charge_never_refunds(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "ledger.sqlite")
    payment = charge(ledger, Bill(Identity("ab12"), "texts.csv", BUDGET, "release pe (text)"))
    assert not payment.spend.resumed
    assert payment.summary() == {
        "path": str(ledger.path),
        "total_epsilon": 1.0,
        "total_delta": 1e-6,
        "spent_epsilon": 1.0,
        "spent_delta": 1e-6,
        "releases": 1,
    }
