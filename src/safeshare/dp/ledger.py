"""The privacy ledger: what each dataset has spent, across runs and processes.

One SQLite file records, per dataset (keyed by a SHA-256 of its content), a total
budget and every spend.  A spend is checked and committed in one ``BEGIN
IMMEDIATE`` transaction *before* any noisy result is computed, so two processes
releasing the same data at once cannot both pass the check, and a crash after the
commit can only over-count, never under-count.  Releases compose by basic
composition: their epsilons add up, and so do their deltas.  A spend is refunded
(:meth:`Ledger.refund`) only where a release failed for reasons of the machine, before it
released anything: the refund is recorded next to the spend, which then stops counting.

>>> import tempfile, pathlib
>>> from safeshare.dp.budget import PrivacyBudget
>>> ledger = Ledger(pathlib.Path(tempfile.mkdtemp()) / "ledger.sqlite")
>>> ledger.set_total("ab12", PrivacyBudget(2.0, 1e-8), name="patients.csv")
>>> ledger.spend("ab12", PrivacyBudget(1.0, 1e-9), label="mst").spent_epsilon
1.0
>>> ledger.spend("ab12", PrivacyBudget(1.5, 1e-9), label="mst")
Traceback (most recent call last):
...
safeshare.errors.BudgetExceededError: dataset 'patients.csv' (sha256 ab12...) has spent epsilon=1, delta=1e-09 of its total epsilon=2, delta=1e-08; this release needs epsilon=1.5, delta=1e-09 more. Raise the total with `safeshare ledger set-total patients.csv --epsilon 2.5` if the data owner agrees, or spend less
"""

from __future__ import annotations

import dataclasses
import math
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from safeshare.dp.budget import PrivacyBudget
from safeshare.errors import BudgetExceededError, LedgerError

LEDGER_ENV = "SAFESHARE_LEDGER"
_TOLERANCE = 1e-9
_SCHEMA = """
CREATE TABLE IF NOT EXISTS datasets (
    fingerprint TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    total_epsilon REAL NOT NULL,
    total_delta REAL NOT NULL,
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS spends (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    fingerprint TEXT NOT NULL REFERENCES datasets(fingerprint),
    label TEXT NOT NULL,
    epsilon REAL NOT NULL,
    delta REAL NOT NULL,
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS refunds (
    spend_id INTEGER PRIMARY KEY REFERENCES spends(id),
    reason TEXT NOT NULL,
    created_at TEXT NOT NULL
);
"""


def default_ledger_path() -> Path:
    """``$SAFESHARE_LEDGER`` if set, else ``ledger.sqlite`` in the user's data directory."""
    if os.environ.get(LEDGER_ENV):
        return Path(os.environ[LEDGER_ENV])
    from platformdirs import user_data_dir

    return Path(user_data_dir("safeshare")) / "ledger.sqlite"


@dataclass(frozen=True)
class LedgerStatus:
    """A dataset's total budget and what its releases have spent.

    ``spend_id``: the spend just recorded, in the status :meth:`Ledger.spend` returns.
    """

    fingerprint: str
    name: str
    total: PrivacyBudget
    spent_epsilon: float
    spent_delta: float
    releases: int
    spend_id: int | None = None

    @property
    def remaining_epsilon(self) -> float:
        return max(self.total.epsilon - self.spent_epsilon, 0.0)


class Ledger:
    """A persistent per-dataset budget, safe under concurrent processes."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else default_ledger_path()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self._connect() as db:
                db.executescript(_SCHEMA)
        except (OSError, sqlite3.Error) as err:
            raise LedgerError(
                f"cannot open the privacy ledger at {str(self.path)!r} ({err}); "
                f"pass --ledger PATH or set {LEDGER_ENV}"
            ) from None

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        db = sqlite3.connect(self.path, timeout=60, isolation_level=None)
        try:
            yield db
        finally:
            db.close()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._connect() as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")

    def set_total(self, fingerprint: str, total: PrivacyBudget, name: str | None = None) -> None:
        """Set (or change) a dataset's total budget; it may not go below what is spent."""
        with self._transaction() as db:
            status = self._status(db, fingerprint)
            if status is not None and (
                total.epsilon < status.spent_epsilon - _TOLERANCE
                or total.delta < status.spent_delta * (1 - _TOLERANCE)
            ):
                raise BudgetExceededError(
                    f"dataset {status.name!r} has already spent epsilon={status.spent_epsilon:g}, "
                    f"delta={status.spent_delta:g}; a total below that is impossible"
                )
            now = _now()
            db.execute(
                "INSERT INTO datasets VALUES (?, ?, ?, ?, ?) ON CONFLICT(fingerprint) DO UPDATE SET "
                "total_epsilon = excluded.total_epsilon, total_delta = excluded.total_delta, "
                "name = COALESCE(?, datasets.name)",
                (fingerprint, name or fingerprint[:12], total.epsilon, total.delta, now, name),
            )

    def spend(
        self,
        fingerprint: str,
        cost: PrivacyBudget,
        label: str,
        name: str | None = None,
        default_total: PrivacyBudget | None = None,
    ) -> LedgerStatus:
        """Record a spend, or raise :class:`BudgetExceededError` and record nothing.

        A dataset seen for the first time gets ``default_total`` (by default the
        cost itself: one release, until the owner raises the total).
        """
        with self._transaction() as db:
            status = self._status(db, fingerprint)
            if status is None:
                total = default_total or cost
                db.execute(
                    "INSERT INTO datasets VALUES (?, ?, ?, ?, ?)",
                    (fingerprint, name or fingerprint[:12], total.epsilon, total.delta, _now()),
                )
                status = LedgerStatus(fingerprint, name or fingerprint[:12], total, 0.0, 0.0, 0)
            _check(status, cost)
            recorded = db.execute(
                "INSERT INTO spends (fingerprint, label, epsilon, delta, created_at) "
                "VALUES (?, ?, ?, ?, ?)",
                (fingerprint, label, cost.epsilon, cost.delta, _now()),
            )
            after = self._status(db, fingerprint)
        if after is None:
            raise LedgerError("the ledger lost a dataset inside a transaction")
        return dataclasses.replace(after, spend_id=recorded.lastrowid)

    def refund(self, spend_id: int, reason: str) -> LedgerStatus:
        """Stop counting a spend whose release failed before releasing anything.

        Only for failures of the machine (an engine's job, memory), whose message says
        nothing about the data: a refusal of the data itself keeps its spend.

        >>> import tempfile, pathlib
        >>> ledger = Ledger(pathlib.Path(tempfile.mkdtemp()) / "ledger.sqlite")
        >>> spent = ledger.spend("ab12", PrivacyBudget(1.0, 1e-9), label="mst")
        >>> ledger.refund(spent.spend_id, "spark job failed").spent_epsilon
        0.0
        """
        with self._transaction() as db:
            row = db.execute("SELECT fingerprint FROM spends WHERE id = ?", (spend_id,)).fetchone()
            if row is None:
                raise LedgerError(f"the ledger has no spend {spend_id} to refund")
            if db.execute("SELECT 1 FROM refunds WHERE spend_id = ?", (spend_id,)).fetchone():
                raise LedgerError(f"spend {spend_id} was refunded already")
            db.execute("INSERT INTO refunds VALUES (?, ?, ?)", (spend_id, reason, _now()))
            after = self._status(db, row[0])
        if after is None:
            raise LedgerError("the ledger lost a dataset inside a transaction")
        return after

    def status(self, fingerprint: str) -> LedgerStatus | None:
        with self._connect() as db:
            return self._status(db, fingerprint)

    def datasets(self) -> list[LedgerStatus]:
        with self._connect() as db:
            rows = db.execute("SELECT fingerprint FROM datasets ORDER BY created_at").fetchall()
            found = [self._status(db, r[0]) for r in rows]
        return [s for s in found if s is not None]

    def find(self, key: str) -> LedgerStatus | None:
        """A dataset by fingerprint (or a unique prefix of it) or by name."""
        with self._connect() as db:
            rows = db.execute(
                "SELECT fingerprint FROM datasets WHERE fingerprint LIKE ? OR name = ?",
                (f"{key}%", key),
            ).fetchall()
            if len(rows) > 1:
                raise LedgerError(
                    f"{key!r} matches {len(rows)} datasets; give more of the fingerprint"
                )
            return self._status(db, rows[0][0]) if rows else None

    @staticmethod
    def _status(db: sqlite3.Connection, fingerprint: str) -> LedgerStatus | None:
        row = db.execute(
            "SELECT name, total_epsilon, total_delta FROM datasets WHERE fingerprint = ?",
            (fingerprint,),
        ).fetchone()
        if row is None:
            return None
        spends = db.execute(
            "SELECT epsilon, delta FROM spends WHERE fingerprint = ? "
            "AND id NOT IN (SELECT spend_id FROM refunds)",
            (fingerprint,),
        ).fetchall()
        return LedgerStatus(
            fingerprint=fingerprint,
            name=row[0],
            total=PrivacyBudget(row[1], row[2]),
            spent_epsilon=math.fsum(s[0] for s in spends),
            spent_delta=math.fsum(s[1] for s in spends),
            releases=len(spends),
        )


def _check(status: LedgerStatus, cost: PrivacyBudget) -> None:
    epsilon_after = status.spent_epsilon + cost.epsilon
    delta_after = status.spent_delta + cost.delta
    over_epsilon = epsilon_after > status.total.epsilon * (1 + _TOLERANCE)
    over_delta = delta_after > status.total.delta * (1 + _TOLERANCE)
    if not (over_epsilon or over_delta):
        return
    spent = f"epsilon={status.spent_epsilon:g}, delta={status.spent_delta:g}"
    total = f"epsilon={status.total.epsilon:g}, delta={status.total.delta:g}"
    raise_to = f"--epsilon {max(epsilon_after, status.total.epsilon):g}"
    if over_delta:
        raise_to += f" --delta {delta_after:g}"
    raise BudgetExceededError(
        f"dataset {status.name!r} (sha256 {status.fingerprint[:12]}...) has spent {spent} of its "
        f"total {total}; this release needs epsilon={cost.epsilon:g}, delta={cost.delta:g} more. "
        f"Raise the total with `safeshare ledger set-total {status.name} {raise_to}` if the data "
        "owner agrees, or spend less"
    )


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
