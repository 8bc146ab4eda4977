"""A release's spend is refunded only where an engine's job failed; anything else keeps it."""

from __future__ import annotations

from pathlib import Path

import pytest

from safeshare.dp.budget import PrivacyBudget
from safeshare.dp.ledger import Ledger
from safeshare.errors import EncodingError, EngineJobError, LedgerError
from safeshare.release.resume import refund_on_failure, spend_once

BUDGET = PrivacyBudget(1.0, 1e-9)


def test_an_engine_failure_refunds_and_says_so(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "ledger.sqlite")
    spend = spend_once(ledger, "ab12", BUDGET, "release mst", None)
    assert ledger.status("ab12").spent_epsilon == 1.0
    with (
        pytest.raises(EngineJobError, match="Nothing was released and the ledger was not charged"),
        refund_on_failure(ledger, spend, None),
    ):
        raise EngineJobError("DuckDB ran out of memory under its limit of 2GB")
    status = ledger.status("ab12")
    assert (status.spent_epsilon, status.spent_delta, status.releases) == (0.0, 0.0, 0)
    with pytest.raises(LedgerError, match="refunded already"):
        ledger.refund(spend.status.spend_id, "again")
    with pytest.raises(LedgerError, match="no spend 99"):
        ledger.refund(99, "unknown")


def test_a_refusal_of_the_data_keeps_its_spend(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "ledger.sqlite")
    spend = spend_once(ledger, "ab12", BUDGET, "release mst", None)
    with (
        pytest.raises(EncodingError, match="declared numeric"),
        refund_on_failure(ledger, spend, None),
    ):
        raise EncodingError("column 'age' is declared numeric but 1 of its values are not numbers")
    assert ledger.status("ab12").spent_epsilon == 1.0


def test_a_spend_kept_by_a_checkpoint_is_not_refunded(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "ledger.sqlite")
    folder = tmp_path / "checkpoint"
    first = spend_once(ledger, "ab12", BUDGET, "release pe", folder)
    with pytest.raises(EngineJobError) as caught, refund_on_failure(ledger, first, folder):
        raise EngineJobError("Spark failed while counting (ExecutorLostFailure)")
    assert "not charged" not in str(caught.value)
    resumed = spend_once(ledger, "ab12", BUDGET, "release pe", folder)
    with pytest.raises(EngineJobError), refund_on_failure(ledger, resumed, folder):
        raise EngineJobError("Spark failed while counting (ExecutorLostFailure)")
    assert ledger.status("ab12").spent_epsilon == 1.0
