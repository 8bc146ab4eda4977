"""``safeshare risk``: the risk of a table on its quasi-identifiers, recounted by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from safeshare.cli import main
from safeshare.report.card import HEADER_FIELDS


def run(argv: list[object], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def people(tmp_path: Path) -> Path:
    frame = pd.DataFrame(
        {
            "zip": ["13053"] * 4 + ["14850"] * 2 + ["02139"],
            "age": ["30", "30", "30", "30", "41", "41", "77"],
            "diagnosis": ["flu", "cold", "flu", "flu", "cold", "flu", "gout"],
        }
    )
    path = tmp_path / "people.csv"
    frame.to_csv(path, index=False)
    return path


def test_risk_of_a_table_as_the_whole_population(tmp_path, people, capsys) -> None:
    code, out, _ = run(
        ["risk", people, "--quasi-identifiers", "zip,age", "--out", tmp_path / "r"], capsys
    )
    assert code == 0 and "14.3% of records are unique" in out
    measured = json.loads((tmp_path / "r" / "risk.json").read_text())
    assert set(HEADER_FIELDS) <= measured.keys() and measured["method"] == "risk"
    assert measured["classes"] == 3 and measured["sample_uniques"] == 1
    assert measured["prosecutor"]["max"] == 1.0
    assert measured["prosecutor"]["average"] == pytest.approx(3 / 7)
    assert measured["marketer"] == pytest.approx(3 / 7)  # F = f: one per class
    records = pd.read_csv(tmp_path / "r" / "records.csv")
    assert records["row"].tolist() == list(range(1, 8))
    assert records["class_size"].tolist() == [4, 4, 4, 4, 2, 2, 1]
    assert records["prosecutor"].tolist() == pytest.approx([0.25] * 4 + [0.5] * 2 + [1.0])
    html = (tmp_path / "r" / "report.html").read_text()
    assert "14.3% unique" in html and "<svg" in html and "<script" not in html
    written = "".join((tmp_path / "r" / f).read_text() for f in ("risk.json", "records.csv"))
    assert "02139" not in written + html and "gout" not in written + html  # no value of the data


def test_risk_against_a_population_table(tmp_path, people, capsys) -> None:
    register = pd.DataFrame(
        {
            "zip": ["13053"] * 10 + ["14850"] * 2 + ["02139"] * 3,
            "age": ["30"] * 10 + ["41"] * 2 + ["77"] * 3,
        }
    )
    register.to_csv(tmp_path / "register.csv", index=False)
    argv = ["risk", people, "--quasi-identifiers", "zip,age", "--out", tmp_path / "r"]
    code, _, _ = run([*argv, "--population", tmp_path / "register.csv"], capsys)
    assert code == 0
    measured = json.loads((tmp_path / "r" / "risk.json").read_text())
    assert measured["journalist_max"] == pytest.approx(1 / 2)  # the 14850 class: 2 in the register
    assert measured["marketer"] == pytest.approx((4 / 10 + 2 / 2 + 1 / 3) / 7)
    records = pd.read_csv(tmp_path / "r" / "records.csv")
    assert records["journalist"].tolist() == pytest.approx(
        [0.1] * 4 + [0.5] * 2 + [1 / 3], abs=1e-6
    )


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--quasi-identifiers", "zip,height"], "no column 'height'"),
        (["--quasi-identifiers", "zip,zip"], "twice"),
        (["--quasi-identifiers", "zip", "--population-size", "3"], "smaller than the table"),
        (["--quasi-identifiers", "zip", "--population", "FEW"], "population table (1 records)"),
        (["--quasi-identifiers", "zip", "--threshold", "0"], "--threshold"),
    ],
)
def test_bad_input_is_one_line_and_writes_nothing(tmp_path, people, capsys, extra, message):
    extra = [str(tmp_path / "few.csv") if a == "FEW" else a for a in extra]
    (tmp_path / "few.csv").write_text("zip\n13053\n")  # (a population of one)
    code, _, err = run(["risk", people, "--out", tmp_path / "r", *extra], capsys)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "r").exists()
