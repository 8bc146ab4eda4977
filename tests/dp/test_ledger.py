import multiprocessing
import random
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


def _two_datasets(path):
    ledger = Ledger(path)
    ledger.set_total("f00d", PrivacyBudget(3.0, 1e-8), name="data.csv")
    spent = ledger.spend("f00d", ONE, label="a")
    ledger.spend("beef", ONE, label="b", name="other.csv")
    ledger.refund(spent.spend_id, "engine job failed")
    return [(s.fingerprint, s.spent_epsilon, s.total.epsilon) for s in ledger.datasets()]


def test_a_truncated_foreign_or_folder_ledger_is_refused(tmp_path):
    path = tmp_path / "l.sqlite"
    _two_datasets(path)
    path.write_bytes(b"")
    with pytest.raises(LedgerError, match="empty"):
        Ledger(path)
    foreign = tmp_path / "notes.sqlite"
    sqlite3.connect(foreign).execute("CREATE TABLE notes (text TEXT)").connection.commit()
    with pytest.raises(LedgerError, match="not a safeshare privacy ledger"):
        Ledger(foreign)
    (tmp_path / "text.sqlite").write_text("hello, not a database\n" * 100)
    with pytest.raises(LedgerError):
        Ledger(tmp_path / "text.sqlite")
    with pytest.raises(LedgerError, match="no privacy ledger"):
        Ledger(tmp_path / "missing.sqlite", create=False)
    assert not (tmp_path / "missing.sqlite").exists()


@pytest.mark.parametrize(
    "tamper",
    [
        "UPDATE spends SET epsilon = 0.1",
        "UPDATE datasets SET total_epsilon = 99",
        "DELETE FROM refunds",
        "DELETE FROM spends WHERE label = 'b'",
        "DELETE FROM log WHERE seq = (SELECT MAX(seq) FROM log)",
        "UPDATE log SET entry = replace(entry, '1.0', '0.5')",
        "DELETE FROM meta",
    ],
)
def test_an_altered_or_lost_record_is_detected(tamper, tmp_path):
    path = tmp_path / "l.sqlite"
    _two_datasets(path)
    db = sqlite3.connect(path)
    db.execute(tamper)
    db.commit()
    db.close()
    with pytest.raises(LedgerError, match=r"altered or damaged|lost its log"):
        Ledger(path).datasets()


def test_random_byte_corruptions_never_give_silently_wrong_totals(tmp_path):
    path = tmp_path / "l.sqlite"
    truth = _two_datasets(path)
    original = path.read_bytes()
    written = [i for i, byte in enumerate(original) if byte]  # not the pages' free space
    rng = random.Random(0)
    detected = unchanged = 0
    for _ in range(40):
        data = bytearray(original)
        data[rng.choice(written)] ^= 1 << rng.randrange(8)
        path.write_bytes(bytes(data))
        try:
            seen = [
                (s.fingerprint, s.spent_epsilon, s.total.epsilon) for s in Ledger(path).datasets()
            ]
        except LedgerError:
            detected += 1
            continue
        assert sorted(seen) == sorted(truth)  # an undetected flip changed no figure
        unchanged += 1
    assert detected + unchanged == 40 and detected > 0


def test_lookups_are_exact(tmp_path):
    ledger = Ledger(tmp_path / "l.sqlite")
    ledger.set_total("f00d", PrivacyBudget(3.0, 1e-8), name="data.csv")
    assert ledger.find("%") is None and ledger.find("_") is None and ledger.find("f0%") is None
    assert ledger.find("f00").name == "data.csv" and ledger.find("data.csv").fingerprint == "f00d"
    with pytest.raises(LedgerError, match="give a dataset"):
        ledger.find("")


def test_a_ledger_of_an_earlier_version_starts_its_log(tmp_path):
    path = tmp_path / "old.sqlite"
    db = sqlite3.connect(path)
    db.executescript(
        "CREATE TABLE datasets (fingerprint TEXT PRIMARY KEY, name TEXT NOT NULL, "
        "total_epsilon REAL NOT NULL, total_delta REAL NOT NULL, created_at TEXT NOT NULL);"
        "CREATE TABLE spends (id INTEGER PRIMARY KEY AUTOINCREMENT, fingerprint TEXT NOT NULL, "
        "label TEXT NOT NULL, epsilon REAL NOT NULL, delta REAL NOT NULL, created_at TEXT NOT NULL);"
        "CREATE TABLE refunds (spend_id INTEGER PRIMARY KEY, reason TEXT NOT NULL, "
        "created_at TEXT NOT NULL);"
        "INSERT INTO datasets VALUES ('ab', 'd.csv', 2.0, 1e-8, '2026-01-01');"
        "INSERT INTO spends VALUES (1, 'ab', 'mst', 1.0, 1e-9, '2026-01-01');"
    )
    db.commit()
    db.close()
    ledger = Ledger(path)
    assert ledger.status("ab").spent_epsilon == 1.0
    assert ledger.spend("ab", ONE, label="aim").spent_epsilon == 2.0
    db = sqlite3.connect(path)
    db.execute("UPDATE spends SET epsilon = 0.0")
    db.commit()
    db.close()
    with pytest.raises(LedgerError, match="altered"):
        Ledger(path)


def test_spends_under_former_identities_are_carried_over_and_the_log_replays(tmp_path):
    """A dataset the ledger knew by two file hashes (a file and a re-saved copy of it, each
    given a budget of its own before identities were by records) has every spend counted under
    its records' identity, the first one's total kept; the carry is logged and replays."""
    path = tmp_path / "l.sqlite"
    ledger = Ledger(path)
    ledger.set_total("bytes-a", PrivacyBudget(2.0, 1e-8), name="data.csv")
    ledger.spend("bytes-a", ONE, label="mst")
    ledger.spend("bytes-b", ONE, label="aim", name="copy.csv")
    ledger.spend("other", ONE, label="mst", name="other.csv")
    carried = ledger.carry_over("records", ["bytes-a", "bytes-b"])
    assert (carried.name, carried.total.epsilon) == ("data.csv", 2.0)
    assert (carried.spent_epsilon, carried.releases) == (2.0, 2)
    assert ledger.status("bytes-a") is None and ledger.status("bytes-b") is None
    assert ledger.carry_over("records", ["bytes-a"]) == carried  # nothing left to carry
    reopened = Ledger(path)  # the log, replayed, agrees with the tables
    assert reopened.status("records") == carried
    assert reopened.status("other").spent_epsilon == 1.0
    with pytest.raises(BudgetExceededError):
        reopened.spend("records", ONE, label="mst")
