import multiprocessing
import sqlite3

import pytest

from safeshare.dp import Ledger, PrivacyBudget
from safeshare.errors import BudgetExceededError, LedgerError

ONE = PrivacyBudget(1.0, 1e-9)


def test_first_release_sets_the_total_and_a_second_is_refused(tmp_path):
    ledger = Ledger(tmp_path / "l.sqlite")
    status = ledger.spend("abc123", ONE, label="release mst", name="patients.csv")
    assert (status.spent_epsilon, status.total.epsilon, status.releases) == (1.0, 1.0, 1)
    with pytest.raises(BudgetExceededError, match=r"set-total patients\.csv --epsilon 2"):
        ledger.spend("abc123", ONE, label="release mst")
    assert ledger.status("abc123").releases == 1  # the refused spend recorded nothing


def test_totals_persist_and_cannot_drop_below_spending(tmp_path):
    path = tmp_path / "l.sqlite"
    Ledger(path).set_total("f00d", PrivacyBudget(3.0, 1e-8), name="data.csv")
    Ledger(path).spend("f00d", ONE, label="a")
    Ledger(path).spend("f00d", PrivacyBudget(2.0, 1e-9), label="b")
    again = Ledger(path)
    status = again.status("f00d")
    assert status.spent_epsilon == pytest.approx(3.0) and status.remaining_epsilon == pytest.approx(
        0.0
    )
    with pytest.raises(BudgetExceededError):
        again.spend("f00d", PrivacyBudget(0.01, 1e-12), label="c")
    with pytest.raises(BudgetExceededError, match="a total below that is impossible"):
        again.set_total("f00d", PrivacyBudget(2.0, 1e-8))
    assert again.find("data.csv").fingerprint == "f00d"
    assert again.find("f0").name == "data.csv"
    assert [s.name for s in again.datasets()] == ["data.csv"]


def test_delta_is_budgeted_too(tmp_path):
    ledger = Ledger(tmp_path / "l.sqlite")
    ledger.set_total("d", PrivacyBudget(10.0, 2e-9))
    ledger.spend("d", ONE, label="a")
    ledger.spend("d", ONE, label="b")
    with pytest.raises(BudgetExceededError, match="--delta 3e-09"):
        ledger.spend("d", ONE, label="c")


def test_unusable_location(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(LedgerError, match="cannot open the privacy ledger"):
        Ledger(blocker / "sub" / "ledger.sqlite")


def _spend_once(path: str) -> str:
    try:
        Ledger(path).spend("shared", ONE, label="race", default_total=PrivacyBudget(1.5, 1e-8))
    except BudgetExceededError:
        return "refused"
    return "spent"


def test_two_processes_cannot_both_overspend(tmp_path):
    path = str(tmp_path / "l.sqlite")
    Ledger(path)
    context = multiprocessing.get_context("spawn")
    with context.Pool(2) as pool:
        outcomes = sorted(pool.map(_spend_once, [path, path, path, path]))
    assert outcomes == ["refused", "refused", "refused", "spent"]
    rows = sqlite3.connect(path).execute("SELECT COUNT(*) FROM spends").fetchone()[0]
    assert rows == 1
