"""``anonymize_command`` and ``release_anonymized``: files, card, report; nothing half-written."""

import json
from pathlib import Path

import pandas as pd
import pytest
import typer
import yaml
from typer.testing import CliRunner

from safeshare.anonymize.models import AnonymizationError
from safeshare.cli.anonymize import anonymize_command
from safeshare.release import Reading
from safeshare.release.anonymize import release_anonymized
from safeshare.report.card import REQUIRED_FIELDS
from tests.conftest import SHARED, needs_shared


def app() -> typer.Typer:
    cli = typer.Typer(pretty_exceptions_enable=False)
    cli.command("anonymize")(anonymize_command)
    cli.command("noop")(lambda: None)  # two commands: the name is given as on the real CLI
    return cli


def adult_config(tmp_path: Path, **extra) -> Path:
    assert SHARED is not None
    folder = SHARED / "adult-arx"
    qis = [
        "sex",
        "age",
        "race",
        "marital-status",
        "education",
        "native-country",
        "workclass",
        "occupation",
    ]
    config = {
        "quasi_identifiers": {
            c: {"hierarchy": str(folder / f"adult_hierarchy_{c}.csv")} for c in qis
        },
        "sensitive": ["salary-class"],
        "privacy": {"k": 5, "l_diversity": {"attribute": "salary-class", "l": 2}},
        "suppression_limit": 0.01,
        **extra,
    }
    path = tmp_path / "anon.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


@needs_shared
def test_cli_writes_release(tmp_path):
    assert SHARED is not None
    data = SHARED / "adult-arx" / "adult.csv"
    out = tmp_path / "out"
    done = CliRunner().invoke(
        app(), ["anonymize", str(data), "--config", str(adult_config(tmp_path)), "--out", str(out)]
    )
    assert done.exit_code == 0, done.output
    assert "k-anonymity (k=5): satisfied" in done.output
    assert sorted(p.name for p in out.iterdir()) == [
        ".safeshare-output",
        "anonymized.csv",
        "card.json",
        "report.html",
    ]
    card = json.loads((out / "card.json").read_text())
    assert card.keys() >= REQUIRED_FIELDS
    assert card["method"] == "anonymize"
    assert "no mathematical guarantee" in card["guarantee"]
    assert card["models"][0]["achieved"]["k"] >= 5 and card["models"][1]["achieved"]["l"] >= 2
    assert card["rows_in"] == 30162 and card["rows_out"] == 30162 - card["suppressed"]
    assert set(card["transformation"]) == set(card["quality"]["per_attribute"])
    assert card["columns"]["age"]["role"] == "quasi_identifier"
    assert card["columns"]["salary-class"]["transform"] == "kept"
    # written with the input's delimiter (adult-arx is ';'-separated), header first
    header = data.read_text().splitlines()[0]
    assert (out / "anonymized.csv").read_text().splitlines()[0] == header
    released = pd.read_csv(out / "anonymized.csv", sep=";", dtype=str)
    assert len(released) == card["rows_out"]
    html = (out / "report.html").read_text()
    assert "<svg" in html and "http://" not in html.replace("http://www.w3.org", "")
    # no record: a raw country generalized away never appears
    assert "Cambodia" not in html and "Cambodia" not in released["native-country"].tolist()


@needs_shared
def test_cli_refuses_existing_output_and_bad_config(tmp_path):
    assert SHARED is not None
    data = SHARED / "adult-arx" / "adult.csv"
    out = tmp_path / "out"
    out.mkdir()
    done = CliRunner().invoke(
        app(), ["anonymize", str(data), "-c", str(adult_config(tmp_path)), "-o", str(out)]
    )
    assert done.exit_code != 0 and "exists" in str(done.exception)
    bad = adult_config(tmp_path, privacy={"k": 40000})
    out = tmp_path / "out2"
    done = CliRunner().invoke(app(), ["anonymize", str(data), "-c", str(bad), "-o", str(out)])
    assert isinstance(done.exception, AnonymizationError)
    assert "larger than the table" in str(done.exception)
    assert not out.exists() and not list(tmp_path.glob(".out2*"))


def test_release_writes_nothing_on_error(tmp_path):
    frame = pd.DataFrame({"zip": ["13053", "13068", "99999"], "x": ["a", "b", "c"]})
    rows = [["13053", "*"], ["13068", "*"]]
    config = {"quasi_identifiers": {"zip": {"hierarchy": rows}}, "privacy": {"k": 2}}
    out = tmp_path / "release"
    with pytest.raises(ValueError, match=r"1 distinct value\(s\), held by 1 record"):
        release_anonymized(frame, config=config, out=out)
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_release_card_lists_unprotected_columns(tmp_path):
    frame = pd.DataFrame({"zip": ["13053", "13068"] * 3, "note": list("abcdef")})
    config = {"quasi_identifiers": {"zip": {"hierarchy": "mask"}}, "privacy": {"k": 2}}
    result = release_anonymized(frame, config=config, out=tmp_path / "r", reading=Reading(name="t"))
    assert any("'note'" in line for line in result.warnings)
    assert result.card["columns"]["note"]["transform"] == "kept (not protected)"


def test_columns_named_like_identifiers_are_dropped_unless_kept_on_purpose(tmp_path):
    frame = pd.DataFrame(
        {
            "name": ["Ann Lee", "Bo Ray"] * 4,
            "first": ["Ann", "Bo"] * 4,
            "last": ["Lee", "Ray"] * 4,
            "id": [str(i) for i in range(8)],
            "zip": ["13053", "13068"] * 4,
            "note": ["a", "b"] * 4,
        }
    )
    config = {"quasi_identifiers": {"zip": {"hierarchy": "mask"}}, "privacy": {"k": 2}}
    done = release_anonymized(frame, config=config, out=tmp_path / "a", reading=Reading(name="t"))
    written = pd.read_csv(tmp_path / "a" / "anonymized.csv", dtype=str)
    assert list(written.columns) == ["zip", "note"]
    assert all(done.card["columns"][c]["dropped"] for c in ("name", "first", "last", "id"))
    assert not done.card["columns"]["note"]["dropped"]
    assert any("named like direct identifiers" in w for w in done.warnings)
    kept = {**config, "transforms": {"id": "keep"}}
    done = release_anonymized(frame, config=kept, out=tmp_path / "b", reading=Reading(name="t"))
    written = pd.read_csv(tmp_path / "b" / "anonymized.csv", dtype=str)
    assert list(written.columns) == ["id", "zip", "note"]
    assert written["id"].tolist() == frame["id"].tolist()
    assert done.card["columns"]["id"]["transform"] == "keep"


def test_labels_a_spreadsheet_would_run_are_written_quoted_and_read_back(tmp_path):
    # interval labels of negative values ('-40--21') start like a formula: the categorical
    # column is written with a leading ', and evaluate's reader takes it off again
    from safeshare.data.domain import Column, Domain, Kind
    from safeshare.evaluate.generalized import cell_sets

    temperatures = [str(t) for t in range(-30, 30, 2)]
    frame = pd.DataFrame({"temp": temperatures, "disease": ["=flu", "cold"] * 15})
    config = {
        "quasi_identifiers": {"temp": {"hierarchy": {"intervals": [10, 20]}}},
        "sensitive": ["disease"],
        "privacy": {"k": 5},
    }
    release_anonymized(frame, config=config, out=tmp_path / "r", reading=Reading(name="t"))
    written = pd.read_csv(tmp_path / "r" / "anonymized.csv", dtype=str)
    negative = sorted(set(written["temp"]) - {"0-19", "20-39", "0-9", "10-19", "20-29"})
    assert negative and all(label.startswith("'-") for label in negative), negative
    assert set(written["disease"]) == {"'=flu", "cold"}
    domain = Domain((Column("temp", Kind.NUMERIC, edges=tuple(range(-40, 41)), integer=True),))
    cells = cell_sets(written, domain)
    assert cells.unexplained == {"temp": 0}
    for row, value in enumerate(frame["temp"]):  # each record's value lies in its label
        assert cells.mask("temp", row)[int(value) + 40]


def test_the_guarantee_says_what_t_is_measured_against(tmp_path):
    # recounted on the released file alone, after suppression, t can differ: the line says so
    frame = pd.DataFrame({"q": ["111", "112"] * 10, "s": ["1", "2", "3", "2"] * 5})
    config = {
        "quasi_identifiers": {"q": {"hierarchy": "mask"}},
        "sensitive": {"s": {"order": ["1", "2", "3"]}},
        "privacy": {"k": 2, "t_closeness": {"attribute": "s", "t": 0.3}},
    }
    done = release_anonymized(frame, config=config, out=tmp_path / "t", reading=Reading(name="t"))
    assert "each class against the input table's distribution" in done.card["guarantee"]
    del config["privacy"]["t_closeness"]
    done = release_anonymized(frame, config=config, out=tmp_path / "k", reading=Reading(name="t"))
    assert "t-closeness" not in done.card["guarantee"]


def test_the_report_says_how_many_suppressed_records_were_recoded(tmp_path):
    frame = pd.DataFrame({"zip": ["11111"] * 10 + ["22222"] * 10 + ["33331", "33332"]})
    config = {
        "quasi_identifiers": {"zip": {"hierarchy": "mask"}},
        "privacy": {"k": 2},
        "suppression_limit": 0.1,
        "recode_suppressed": True,
    }
    done = release_anonymized(frame, config=config, out=tmp_path / "r", reading=Reading(name="t"))
    assert done.card["search"]["recoded_records"] == 2
    html = " ".join((tmp_path / "r" / "report.html").read_text().split())
    assert "of which recoded" in html and "counts the 2 recoded records as suppressed" in html
