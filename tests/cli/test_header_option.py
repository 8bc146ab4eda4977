"""``--header/--no-header``: a headerless table is read as its owner says by every command that
reads one.  Its first record looks like names (values that never recur below), so detection
alone takes it for a header and loses the record."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from safeshare.cli import main
from safeshare.data.identity import Identity
from safeshare.dp.ledger import Ledger

ROWS = 240
FIRST = "Zeta Quadrant,Mauve,Gigantic"


def run(argv: list[object], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def headerless(path: Path, rows: int = ROWS) -> Path:
    cycle = [("north", "red", "small"), ("south", "blue", "large"), ("east", "red", "large")]
    body = [",".join(cycle[i % 3]) for i in range(rows)]
    path.write_text("\n".join([FIRST, *body]) + "\n")
    return path


@pytest.fixture
def table(tmp_path: Path) -> Path:
    return headerless(tmp_path / "regions.csv")


def test_release_and_ledger_read_the_first_record_as_a_record(tmp_path, table, capsys):
    ledger = tmp_path / "ledger.sqlite"
    release = ["release", table, "--seed", "1", "--ledger", ledger, "-q"]
    code, output = run([*release, "--out", tmp_path / "read", "--no-header"], capsys)
    assert code == 0, output
    card = json.loads((tmp_path / "read" / "card.json").read_text())
    assert card["rows_in"] == ROWS + 1
    synthetic = (tmp_path / "read" / "synthetic.csv").read_text()
    assert synthetic.startswith("column_1,column_2,column_3\n")
    code, output = run([*release, "--out", tmp_path / "guessed"], capsys)  # detection: a header
    assert code == 0, output
    assert json.loads((tmp_path / "guessed" / "card.json").read_text())["rows_in"] == ROWS
    # the ledger finds the dataset --no-header released, not the one the guess released
    code, output = run(["ledger", "set-total", table, "--epsilon", "5", "--no-header",
                        "--ledger", ledger], capsys)  # fmt: skip
    assert code == 0, output
    totals = {s.fingerprint: s.total.epsilon for s in Ledger(ledger).datasets()}
    assert totals[card["input"]["records"]] == 5.0
    assert sorted(totals.values()) == [1.0, 5.0]


def test_risk_and_anonymize_count_the_first_record(tmp_path, table, capsys):
    code, output = run(["risk", table, "--quasi-identifiers", "column_1,column_2", "--no-header",
                        "--out", tmp_path / "risk"], capsys)  # fmt: skip
    assert code == 0, output
    measured = json.loads((tmp_path / "risk" / "risk.json").read_text())
    assert measured["records"] == ROWS + 1 and measured["sample_uniques"] == 1
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({
        "quasi_identifiers": {"column_1": {"hierarchy": "auto"}, "column_2": {"hierarchy": "auto"}},
        "privacy": {"k": 2}, "suppression_limit": 0.01,
    }))  # fmt: skip
    code, output = run(["anonymize", table, "--config", config, "--no-header",
                        "--out", tmp_path / "anon"], capsys)  # fmt: skip
    assert code == 0, output
    card = json.loads((tmp_path / "anon" / "card.json").read_text())
    assert card["rows_in"] == ROWS + 1 and card["suppressed"] == 1  # the lone record


def test_evaluate_reads_the_real_tables_headerless_and_the_release_as_written(
    tmp_path, table, capsys
):
    holdout = headerless(tmp_path / "holdout.csv", rows=120)
    code, output = run(["release", table, "--no-header", "--seed", "2", "--out", tmp_path / "rel",
                        "--ledger", tmp_path / "l.sqlite", "-q"], capsys)  # fmt: skip
    assert code == 0, output
    code, output = run(["evaluate", "--train", table, "--holdout", holdout, "--no-header",
                        "--release", tmp_path / "rel" / "synthetic.csv", "--attacks", "20",
                        "--no-ml", "--seed", "1", "--out", tmp_path / "eval", "-q"], capsys)  # fmt: skip
    assert code == 0, output
    inputs = json.loads((tmp_path / "eval" / "evaluation.json").read_text())["inputs"]
    assert inputs["train"]["rows"] == ROWS + 1 and inputs["holdout"]["rows"] == 121
    written = len((tmp_path / "rel" / "synthetic.csv").read_text().splitlines()) - 1
    assert inputs["release"]["rows"] == written


def test_train_reads_the_first_record_and_a_declared_header_is_kept(tmp_path, table, capsys):
    pytest.importorskip("torch")
    code, output = run(["train", table, "--target", "column_3", "--no-header", "--epsilon", "3",
                        "--epochs", "1", "--batch-size", "64", "--seed", "1", "--out",
                        tmp_path / "model", "--ledger", tmp_path / "l.sqlite", "-q"], capsys)  # fmt: skip
    assert code == 0, output
    card = json.loads((tmp_path / "model" / "card.json").read_text())
    assert card["input"]["records"] == Identity.of_file(table, header=False).records
    # --header on a file detection reads as headerless: its first row names the columns
    numbers = tmp_path / "numbers.csv"
    numbers.write_text("".join(f"{i % 7 + 10},{i % 3}\n" for i in range(ROWS)))
    code, output = run(["risk", numbers, "--quasi-identifiers", "10", "--header",
                        "--out", tmp_path / "declared"], capsys)  # fmt: skip
    assert code == 0, output
    assert json.loads((tmp_path / "declared" / "risk.json").read_text())["records"] == ROWS - 1
