"""Resumable releases: charge the ledger once per checkpoint folder, not once per attempt.

A Private Evolution run that stops (an unreachable model server, a killed process) keeps its
finished iterations in a checkpoint folder; running the same command again resumes there
and measures only what was not measured yet, so the release as a whole costs its budget
once.  :func:`spend_once` commits the spend to the ledger on the first attempt and writes a
``spend.json`` receipt into the folder (the dataset's fingerprint, the budget and whatever
DP results the run must reuse, e.g. discovered labels); a later attempt with the same
dataset and budget finds the receipt and charges nothing more.  A receipt of another
dataset or budget is refused: the folder belongs to another release.

:func:`refund_on_failure` gives a spend back where a job fails for a reason of the machine
(a Spark job, DuckDB's memory, a full disk, an interrupt) before anything was released: an
output is written at its very end, and the error names only the failing step, so the failed
attempt released nothing.  A failure that depends on the data (an encoding error, a value
the domain refuses) keeps its spend: whether it happens tells something of the data, so a
free retry would let anyone probe the data at no cost.  A spend kept by a checkpoint receipt
is kept too.

>>> import tempfile, pathlib
>>> from safeshare.dp.budget import PrivacyBudget
>>> from safeshare.dp.ledger import Ledger
>>> tmp = pathlib.Path(tempfile.mkdtemp())
>>> ledger = Ledger(tmp / "ledger.sqlite")
>>> first = spend_once(ledger, "ab12", PrivacyBudget(1.0, 1e-9), "pe", tmp / "run")
>>> again = spend_once(ledger, "ab12", PrivacyBudget(1.0, 1e-9), "pe", tmp / "run")
>>> first.resumed, again.resumed, again.status.spent_epsilon, again.status.releases
(False, True, 1.0, 1)
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from safeshare.dp.budget import PrivacyBudget
from safeshare.dp.ledger import Ledger, LedgerStatus
from safeshare.errors import (
    EngineJobError,
    InputError,
    OutOfMemoryError,
    OutputWriteError,
    SafeshareError,
)
from safeshare.synth.pe.checkpoint import measured_in

RECEIPT = "spend.json"
MEASURED = "measured_histograms"  # the receipt's count of the histograms the run measured


@dataclass(frozen=True)
class Spend:
    """The ledger after the spend, whether this attempt resumed, and the receipt's extras."""

    status: LedgerStatus
    resumed: bool
    saved: dict[str, Any] = field(default_factory=dict)


def spend_once(
    ledger: Ledger,
    fingerprint: str,
    budget: PrivacyBudget,
    label: str,
    folder: str | Path | None,
    *,
    name: str | None = None,
    default_total: PrivacyBudget | None = None,
    formerly: Sequence[str] = (),
) -> Spend:
    """Spend ``budget`` on the dataset, unless ``folder`` holds this release's receipt.  What
    the ledger holds under the identities the dataset had ``formerly`` is carried over first."""
    if formerly:
        ledger.carry_over(fingerprint, formerly)
    receipt = Path(folder) / RECEIPT if folder is not None else None
    if receipt is not None and receipt.is_file():
        try:
            saved = json.loads(receipt.read_text(encoding="utf-8"))
        except json.JSONDecodeError:
            raise InputError(f"{receipt} is not valid JSON; use a new checkpoint folder") from None
        mine = {"fingerprint": fingerprint, "epsilon": budget.epsilon, "delta": budget.delta}
        theirs = {k: saved.get(k) for k in mine}
        if theirs["fingerprint"] in formerly:  # a receipt written before the identity changed
            theirs["fingerprint"] = fingerprint
        if theirs != mine:
            raise InputError(
                f"the checkpoint folder {str(folder)!r} belongs to another release (another "
                "dataset or budget); resume with the same data and --epsilon/--delta, or give a "
                "new --checkpoint folder"
            )
        status = ledger.status(fingerprint)
        if status is None:
            raise InputError(
                f"the checkpoint folder {str(folder)!r} was paid for in another ledger than "
                f"{str(ledger.path)!r}; resume with the same --ledger"
            )
        return Spend(status, True, dict(saved.get("saved", {})))
    status = ledger.spend(fingerprint, budget, label=label, name=name, default_total=default_total)
    if receipt is not None:
        write_receipt(receipt, fingerprint, budget, {})
    return Spend(status, False)


REFUNDED = "Nothing was released and the ledger was not charged for this run"


@contextmanager
def refund_on_failure(ledger: Ledger, spend: Spend, folder: str | Path | None) -> Iterator[None]:
    """Run a job's work after its spend; where it fails for a reason of the machine, not of
    the data (an engine's job, the file system, memory, an interrupt), refund ``spend``.

    Only a spend made by this attempt without a checkpoint folder is refunded.

    >>> import tempfile, pathlib
    >>> from safeshare.dp.budget import PrivacyBudget
    >>> ledger = Ledger(pathlib.Path(tempfile.mkdtemp()) / "ledger.sqlite")
    >>> spend = spend_once(ledger, "ab12", PrivacyBudget(1.0, 1e-9), "mst", None)
    >>> try:
    ...     with refund_on_failure(ledger, spend, None):
    ...         raise EngineJobError("Spark failed while counting (ExecutorLostFailure)")
    ... except EngineJobError as err:
    ...     print(err)  # doctest: +ELLIPSIS
    Spark failed while counting (ExecutorLostFailure). Nothing was released and the ledger...
    >>> ledger.status("ab12").spent_epsilon
    0.0
    """
    try:
        yield
    except (EngineJobError, OSError, MemoryError, KeyboardInterrupt) as err:
        spend_id = spend.status.spend_id
        if spend.resumed or folder is not None or spend_id is None:
            raise
        ledger.refund(spend_id, f"{type(err).__name__} before the output was in place")
        if isinstance(err, SafeshareError):  # its own line, and that nothing was charged
            raise type(err)(f"{err}. {REFUNDED}") from None
        if isinstance(err, OSError):
            reason = err.strerror or type(err).__name__
            raise OutputWriteError(
                f"the run failed on the machine ({reason}). {REFUNDED}; free some space or "
                "choose another --out, then run it again"
            ) from None
        if isinstance(err, MemoryError):
            raise OutOfMemoryError(
                f"the run ran out of memory. {REFUNDED}; free memory, or ask for less (a "
                "smaller table, fewer synthetic rows, a smaller model or batch), then run "
                "it again"
            ) from None
        raise


def measurement_recorder(folder: str | Path) -> Callable[[object], None]:
    """A Private Evolution callback (run after each histogram is measured and its population
    saved) that keeps in the receipt how many histograms the folder's populations hold: what
    :func:`check_kept` compares a resumed folder with."""
    return lambda _measured: save_results(folder, {MEASURED: measured_in(folder)})


def check_kept(folder: str | Path | None, spend: Spend) -> None:
    """Refuse to resume from a folder whose receipt records more measured histograms than its
    populations hold (they were deleted or lost): the run would measure them again without a
    charge, spending the budget twice."""
    if folder is None or not spend.resumed:
        return
    recorded, kept = int(spend.saved.get(MEASURED, 0)), measured_in(folder)
    if kept < recorded:
        raise InputError(
            f"the checkpoint folder {str(folder)!r} paid for {recorded} measured histogram(s) "
            f"but keeps the populations of {kept}: measuring the rest again would spend the "
            "budget twice without a charge; restore its populations, or give a new --checkpoint "
            "folder (a new spend)"
        )


def save_results(folder: str | Path | None, saved: Mapping[str, Any]) -> None:
    """Add DP results a resumed attempt must reuse (never recompute) to the receipt."""
    if folder is None:
        return
    receipt = Path(folder) / RECEIPT
    current = json.loads(receipt.read_text(encoding="utf-8"))
    budget = PrivacyBudget(current["epsilon"], current["delta"])
    write_receipt(receipt, current["fingerprint"], budget, {**current.get("saved", {}), **saved})


def write_receipt(
    receipt: Path, fingerprint: str, budget: PrivacyBudget, saved: Mapping[str, Any]
) -> None:
    """Write the receipt atomically (a temporary file renamed into place)."""
    receipt.parent.mkdir(parents=True, exist_ok=True)
    content = {
        "fingerprint": fingerprint,
        "epsilon": budget.epsilon,
        "delta": budget.delta,
        "saved": dict(saved),
    }
    handle, temporary = tempfile.mkstemp(prefix=".spend.", dir=receipt.parent)
    with os.fdopen(handle, "w", encoding="utf-8") as stream:
        json.dump(content, stream, indent=2)
    Path(temporary).replace(receipt)
