"""The privacy ledger: what each dataset has spent, across runs and processes.

One SQLite file records, per dataset (keyed by a SHA-256 of its content), a total
budget and every spend.  A spend is checked and committed in one ``BEGIN
IMMEDIATE`` transaction *before* any noisy result is computed, so two processes
releasing the same data at once cannot both pass the check, and a crash after the
commit can only over-count, never under-count.  Releases compose by basic
composition: their epsilons add up, and so do their deltas.  A spend is refunded
(:meth:`Ledger.refund`) only where a release failed for reasons of the machine, before it
released anything: the refund is recorded next to the spend, which then stops counting.

A dataset once recorded under another identity (the SHA-256 of its file's bytes, before the
ledger knew datasets by their records: :mod:`safeshare.data.identity`) is carried over to its
new one by :meth:`Ledger.carry_over`, its total and spends with it, so no upgrade and no re-saved
copy of a file starts its budget anew.

Every change (a total, a spend, a refund, a carry-over) is also appended to a log whose entries are chained
by SHA-256, its head kept beside it; each use of the ledger replays the log and refuses a
ledger whose tables, log or head disagree (an altered, lost or corrupted record), an empty
file (a truncated ledger is never silently started anew) and a file that is not a ledger.

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

import contextlib
import dataclasses
import hashlib
import json
import math
import os
import sqlite3
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

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
CREATE TABLE IF NOT EXISTS log (
    seq INTEGER PRIMARY KEY,
    entry TEXT NOT NULL,
    digest TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
"""
_TABLES = {"datasets", "spends", "refunds", "log", "meta"}
_GENESIS = "0" * 64


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

    def __init__(self, path: str | Path | None = None, *, create: bool = True) -> None:
        """Open the ledger at ``path``; a missing one is created (unless ``create`` is False:
        then a missing ledger is a :class:`LedgerError`, and nothing is written)."""
        self.path = Path(path) if path is not None else default_ledger_path()
        try:
            if not self.path.exists():
                if not create:
                    raise LedgerError(f"there is no privacy ledger at {str(self.path)!r}")
                self._create()
            if self.path.is_dir() or self.path.stat().st_size == 0:
                raise LedgerError(
                    f"the privacy ledger at {str(self.path)!r} is "
                    + ("a folder" if self.path.is_dir() else "empty (truncated?)")
                    + "; restore it from a backup: a new ledger would forget every spend"
                )
            with self._connect() as db:
                self._check_file(db)
            with self._reading():
                pass
        except (OSError, sqlite3.Error) as err:
            raise LedgerError(
                f"cannot open the privacy ledger at {str(self.path)!r} ({err}); "
                f"pass --ledger PATH or set {LEDGER_ENV}"
            ) from None

    def _create(self) -> None:
        """A new, complete ledger file, put in place atomically: no process sees it empty."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=f".{self.path.name}.", dir=self.path.parent)
        os.close(handle)
        try:
            db = sqlite3.connect(temporary, isolation_level=None)
            try:
                db.executescript(_SCHEMA)
                db.execute("INSERT INTO meta VALUES ('head', ?), ('count', '0')", (_GENESIS,))
            finally:
                db.close()
            with contextlib.suppress(FileExistsError):  # another process made it first
                os.link(temporary, self.path)
        finally:
            os.unlink(temporary)

    def _check_file(self, db: sqlite3.Connection) -> None:
        if db.execute("PRAGMA integrity_check").fetchone()[0] != "ok":  # indexes too
            raise LedgerError(
                f"the privacy ledger at {str(self.path)!r} is corrupted (SQLite's integrity "
                "check failed); restore it from a backup"
            )
        names = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not {"datasets", "spends", "refunds"} <= names:
            raise LedgerError(
                f"{str(self.path)!r} is not a safeshare privacy ledger (tables "
                f"{sorted(names)}); pass the ledger's path with --ledger"
            )
        if not names >= _TABLES:  # a ledger of an earlier version: its log starts now
            db.executescript(_SCHEMA)
            with _immediate(db):
                if db.execute("SELECT 1 FROM meta WHERE key = 'head'").fetchone() is None:
                    self._adopt(db)

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        db = sqlite3.connect(self.path, timeout=60, isolation_level=None)
        try:
            yield db
        except (sqlite3.DatabaseError, UnicodeDecodeError) as err:  # a damaged file
            raise self._altered(f"SQLite: {err}") from None
        finally:
            db.close()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._connect() as db, _immediate(db):
            self._verify(db)
            yield db

    def _append(self, db: sqlite3.Connection, entry: dict[str, object]) -> None:
        """Chain ``entry`` onto the log and move the head (inside the caller's transaction)."""
        head, count = _head(db)
        text = json.dumps(entry, sort_keys=True, separators=(",", ":"))
        digest = _digest(head, text)
        db.execute("INSERT INTO log VALUES (?, ?, ?)", (count + 1, text, digest))
        db.execute("UPDATE meta SET value = ? WHERE key = 'head'", (digest,))
        db.execute("UPDATE meta SET value = ? WHERE key = 'count'", (str(count + 1),))

    def _verify(self, db: sqlite3.Connection) -> None:
        """Refuse a ledger whose log chain, head or tables disagree, or that cannot be read."""
        try:
            self._replay(db)
        except (UnicodeDecodeError, ValueError, KeyError, TypeError, sqlite3.DataError):
            raise self._altered("a record cannot be read") from None

    def _replay(self, db: sqlite3.Connection) -> None:
        head, count = _head(db)
        digest, replayed = _GENESIS, _Replay()
        rows = db.execute("SELECT seq, entry, digest FROM log ORDER BY seq").fetchall()
        for expected, (seq, entry, stored) in enumerate(rows, start=1):
            digest = _digest(digest, entry)
            if seq != expected or stored != digest:
                raise self._altered(f"log entry {expected} does not follow the one before")
            replayed.apply(json.loads(entry))
        if (digest, len(rows)) != (head, count):
            raise self._altered("the log's head is not the one recorded: an entry was lost")
        if replayed.tables() != _tables(db):
            raise self._altered("its tables disagree with its log")

    def _adopt(self, db: sqlite3.Connection) -> None:
        """Start the log of a ledger written before the log existed, from its tables."""
        db.execute("INSERT INTO meta VALUES ('head', ?), ('count', '0')", (_GENESIS,))
        datasets, spends, refunds = _tables(db)
        for fingerprint, (name, epsilon, delta) in sorted(datasets.items()):
            self._append(db, _total_entry(fingerprint, name, epsilon, delta))
        for spend_id, (fingerprint, label, epsilon, delta) in sorted(spends.items()):
            entry = {"op": "spend", "id": spend_id, "fingerprint": fingerprint, "label": label}
            self._append(db, {**entry, "epsilon": epsilon, "delta": delta})
        for spend_id in sorted(refunds):
            self._append(db, {"op": "refund", "spend_id": spend_id})

    def _altered(self, what: str) -> LedgerError:
        return LedgerError(
            f"the privacy ledger at {str(self.path)!r} was altered or damaged ({what}); restore "
            "it from a backup: safeshare spends nothing against it"
        )

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
            kept = db.execute("SELECT name FROM datasets WHERE fingerprint = ?", (fingerprint,))
            self._append(
                db, _total_entry(fingerprint, kept.fetchone()[0], total.epsilon, total.delta)
            )

    def carry_over(self, fingerprint: str, formerly: Sequence[str]) -> LedgerStatus | None:
        """Move what the ledger holds under the identities ``formerly`` to ``fingerprint``
        (their spends count there; a dataset new under ``fingerprint`` takes the first one's
        total and name); the dataset's status after it (None when it is unknown).

        >>> import tempfile, pathlib
        >>> ledger = Ledger(pathlib.Path(tempfile.mkdtemp()) / "ledger.sqlite")
        >>> _ = ledger.spend("bytes-sha", PrivacyBudget(1.0, 1e-9), label="mst")
        >>> ledger.carry_over("records-sha", ["bytes-sha"]).spent_epsilon
        1.0
        >>> ledger.status("bytes-sha") is None
        True
        """
        former = [f for f in dict.fromkeys(formerly) if f != fingerprint]
        with self._transaction() as db:
            for old in former:
                if self._status(db, old) is None:
                    continue
                if self._status(db, fingerprint) is None:
                    db.execute(
                        "UPDATE datasets SET fingerprint = ? WHERE fingerprint = ?",
                        (fingerprint, old),
                    )
                else:
                    db.execute("DELETE FROM datasets WHERE fingerprint = ?", (old,))
                db.execute(
                    "UPDATE spends SET fingerprint = ? WHERE fingerprint = ?", (fingerprint, old)
                )
                self._append(db, {"op": "carry", "from": old, "to": fingerprint})
            return self._status(db, fingerprint)

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
                first = _total_entry(
                    fingerprint, name or fingerprint[:12], total.epsilon, total.delta
                )
                self._append(db, first)
                status = LedgerStatus(fingerprint, name or fingerprint[:12], total, 0.0, 0.0, 0)
            _check(status, cost)
            recorded = db.execute(
                "INSERT INTO spends (fingerprint, label, epsilon, delta, created_at) "
                "VALUES (?, ?, ?, ?, ?)",
                (fingerprint, label, cost.epsilon, cost.delta, _now()),
            )
            entry = {"op": "spend", "id": recorded.lastrowid, "fingerprint": fingerprint}
            self._append(
                db, {**entry, "label": label, "epsilon": cost.epsilon, "delta": cost.delta}
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
            self._append(db, {"op": "refund", "spend_id": spend_id})
            after = self._status(db, row[0])
        if after is None:
            raise LedgerError("the ledger lost a dataset inside a transaction")
        return after

    def status(self, fingerprint: str) -> LedgerStatus | None:
        with self._reading() as db:
            return self._status(db, fingerprint)

    def datasets(self) -> list[LedgerStatus]:
        with self._reading() as db:
            rows = db.execute("SELECT fingerprint FROM datasets ORDER BY created_at").fetchall()
            found = [self._status(db, r[0]) for r in rows]
        return [s for s in found if s is not None]

    def find(self, key: str) -> LedgerStatus | None:
        """A dataset by its exact name, or by its fingerprint or a unique prefix of it (a
        string compared as it is: no pattern)."""
        if not key:
            raise LedgerError("give a dataset's name, fingerprint or the data file's path")
        with self._reading() as db:
            rows = db.execute(
                "SELECT fingerprint FROM datasets WHERE substr(fingerprint, 1, ?) = ? OR name = ?",
                (len(key), key, key),
            ).fetchall()
            if len(rows) > 1:
                raise LedgerError(
                    f"{key!r} matches {len(rows)} datasets; give more of the fingerprint"
                )
            return self._status(db, rows[0][0]) if rows else None

    @contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection]:
        """A consistent, verified view (one read transaction)."""
        with self._connect() as db:
            db.execute("BEGIN")
            try:
                self._verify(db)
                yield db
            finally:
                db.execute("ROLLBACK")

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


@contextmanager
def _immediate(db: sqlite3.Connection) -> Iterator[None]:
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def _digest(previous: str, entry: str) -> str:
    return hashlib.sha256(f"{previous}\n{entry}".encode()).hexdigest()


def _head(db: sqlite3.Connection) -> tuple[str, int]:
    meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
    if "head" not in meta or not str(meta.get("count", "")).isdigit():
        raise LedgerError("the privacy ledger lost its log's head; restore it from a backup")
    return str(meta["head"]), int(meta["count"])


def _total_entry(fingerprint: str, name: str, epsilon: float, delta: float) -> dict[str, object]:
    return {"op": "total", "fingerprint": fingerprint, "name": name, "epsilon": epsilon,
            "delta": delta}  # fmt: skip


_Tables = tuple[
    dict[str, tuple[str, float, float]], dict[int, tuple[str, str, float, float]], set[int]
]


def _tables(db: sqlite3.Connection) -> _Tables:
    """The ledger's tables as the log describes them: totals, spends and refunds."""
    datasets = {
        r[0]: (r[1], r[2], r[3])
        for r in db.execute("SELECT fingerprint, name, total_epsilon, total_delta FROM datasets")
    }
    spends = {
        r[0]: (r[1], r[2], r[3], r[4])
        for r in db.execute("SELECT id, fingerprint, label, epsilon, delta FROM spends")
    }
    refunds = {r[0] for r in db.execute("SELECT spend_id FROM refunds")}
    return datasets, spends, refunds


class _Replay:
    """The tables a log's entries build, entry by entry."""

    def __init__(self) -> None:
        self.datasets: dict[str, tuple[str, float, float]] = {}
        self.spends: dict[int, tuple[str, str, float, float]] = {}
        self.refunds: set[int] = set()

    def apply(self, entry: dict[str, Any]) -> None:
        op = entry.get("op")
        if op == "total":
            self.datasets[entry["fingerprint"]] = (entry["name"], entry["epsilon"], entry["delta"])
        elif op == "spend":
            spend = (entry["fingerprint"], entry["label"], entry["epsilon"], entry["delta"])
            self.spends[int(entry["id"])] = spend
        elif op == "refund":
            self.refunds.add(int(entry["spend_id"]))
        elif op == "carry":
            self.carry(entry["from"], entry["to"])
        else:
            raise LedgerError(f"the privacy ledger's log holds an unknown entry {op!r}")

    def carry(self, old: str, new: str) -> None:
        kept = self.datasets.pop(old)
        self.datasets.setdefault(new, kept)
        for spend_id, (fingerprint, *rest) in list(self.spends.items()):
            if fingerprint == old:
                self.spends[spend_id] = (new, *rest)  # type: ignore[assignment]

    def tables(self) -> _Tables:
        return self.datasets, self.spends, self.refunds
