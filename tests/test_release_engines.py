"""A release is the same whichever engine counts: only the card's engine line differs."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from safeshare import release
from safeshare.dp.ledger import Ledger
from safeshare.errors import EngineJobError, InputError
from safeshare.release import Reading, SynthesisSettings, inputs, output
from safeshare.release.anonymize import release_anonymized

pytest.importorskip("duckdb")

DIFFERENT = ("created_at", "engine", "ledger")


def release_with(
    engine: str,
    path: Path,
    out: Path,
    *,
    rows: int | None = None,
    output_format: str = "csv",
    spark_master: str | None = None,
) -> dict:
    release(
        path,
        out=out,
        settings=SynthesisSettings(epsilon=1.0, rows=rows, output_format=output_format),
        reading=Reading(engine=engine, name="fair", spark_master=spark_master),
        ledger=out.parent / f"{engine}-ledger.sqlite",
        seed=3,
    )
    return json.loads((out / "card.json").read_text())


def assert_same_release(tmp_path: Path, path: Path, rows: int | None = None) -> tuple[dict, dict]:
    numpy = release_with("numpy", path, tmp_path / "numpy", rows=rows)
    duck = release_with("duckdb", path, tmp_path / "duckdb", rows=rows)
    synthetic = [(tmp_path / e / "synthetic.csv").read_bytes() for e in ("numpy", "duckdb")]
    assert synthetic[0] == synthetic[1]
    assert {k: v for k, v in numpy.items() if k not in DIFFERENT} == {
        k: v for k, v in duck.items() if k not in DIFFERENT
    }
    return numpy, duck


@pytest.mark.slow  # an engine end to end on a large input: the slow tier
def test_duckdb_and_numpy_release_the_same_records_with_dp_discovery(tmp_path, fair_csv):
    numpy, duck = assert_same_release(tmp_path, fair_csv)
    assert numpy["engine"] == {"name": "numpy"}
    assert duck["engine"]["name"] == "duckdb"
    assert "counted by" in (tmp_path / "duckdb" / "report.html").read_text()


@pytest.mark.slow  # an engine end to end on a large input: the slow tier
def test_large_inputs_sample_and_stream_identically(tmp_path, fair_csv, monkeypatch):
    """Beyond the sample and chunk sizes (shrunk here), both engines still agree row for row."""
    monkeypatch.setattr(inputs, "SAMPLE_ROWS", 2000)
    monkeypatch.setattr(inputs, "EVALUATION_ROWS", 1000)
    monkeypatch.setattr(output, "CHUNK_ROWS", 1500)
    from safeshare.release import pipeline

    monkeypatch.setattr(pipeline, "EVALUATION_ROWS", 1000)
    numpy, _ = assert_same_release(tmp_path, fair_csv, rows=4000)
    written = pd.read_csv(tmp_path / "duckdb" / "synthetic.csv")
    assert len(written) == 4000 == numpy["rows_out"]
    assert any("uniform sample of 2,000" in n for n in numpy["notes"])
    assert any("samples of at most 1,000" in n for n in numpy["notes"])
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]
    assert leftovers == []


def test_a_parquet_folder_releases_like_its_csv(tmp_path, fair):
    frame = fair[0]
    folder = tmp_path / "parts"
    folder.mkdir()
    half = len(frame) // 2
    frame.iloc[:half].to_parquet(folder / "part-0.parquet")
    frame.iloc[half:].to_parquet(folder / "part-1.parquet")
    card = release_with("duckdb", folder, tmp_path / "out")
    assert card["rows_in"] == len(frame)
    assert card["input"]["name"] == "fair"


def test_engine_choices_are_checked(tmp_path, fair, fair_csv):
    with pytest.raises(InputError, match="unknown engine 'spark-ish'"):
        release(fair_csv, out=tmp_path / "a", reading=Reading(engine="spark-ish"))
    with pytest.raises(InputError, match="duckdb engine reads files"):
        release(fair[0], out=tmp_path / "b", reading=Reading(engine="duckdb"))
    config = {"quasi_identifiers": {"age": {"hierarchy": "auto"}}, "privacy": {"k": 2}}
    with pytest.raises(InputError, match="unknown engine 'duck'"):  # anonymize checks them too
        release_anonymized(
            fair_csv, out=tmp_path / "c", config=config, reading=Reading(engine="duck")
        )
    with pytest.raises(InputError, match="anonymization is not DP synthesis"):
        release(fair_csv, out=tmp_path / "d", settings=SynthesisSettings(method="anonymize"))
    assert not (tmp_path / "a").exists()


@pytest.mark.slow  # an engine end to end on a large input: the slow tier
def test_auto_picks_duckdb_above_the_size_threshold(tmp_path, fair_csv, monkeypatch):
    monkeypatch.setattr(inputs, "AUTO_DUCKDB_BYTES", 1000)
    card = release_with("auto", fair_csv, tmp_path / "auto")
    assert card["engine"]["name"] == "duckdb"


def test_cli_engine_option(tmp_path, fair_csv):
    from typer.testing import CliRunner

    from safeshare.cli import app

    result = CliRunner().invoke(
        app,
        [
            "release",
            str(fair_csv),
            "--out",
            str(tmp_path / "cli"),
            "--engine",
            "duckdb",
            "--memory-limit",
            "1GB",
            "--seed",
            "1",
            "--ledger",
            str(tmp_path / "ledger.sqlite"),
        ],
    )
    assert result.exit_code == 0, result.output
    card = json.loads((tmp_path / "cli" / "card.json").read_text())
    assert card["engine"] == {"name": "duckdb", "memory_limit": "1GB"}
    assert "duckdb" in result.output


@pytest.mark.slow  # a Spark session: the slow tier
@pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning")
def test_spark_releases_the_same_records(tmp_path, fair_csv):
    pytest.importorskip("pyspark")
    numpy = release_with("numpy", fair_csv, tmp_path / "numpy")
    spark = release_with("spark", fair_csv, tmp_path / "spark", spark_master="local[2]")
    synthetic = [(tmp_path / e / "synthetic.csv").read_bytes() for e in ("numpy", "spark")]
    assert synthetic[0] == synthetic[1]
    assert {k: v for k, v in numpy.items() if k not in DIFFERENT} == {
        k: v for k, v in spark.items() if k not in DIFFERENT
    }
    assert spark["engine"] == {"name": "spark", "master": "local[2]"}


def test_parquet_output_holds_the_csv_records(tmp_path, fair_csv, monkeypatch):
    """--output-format parquet streams the same records, typed, in chunks."""
    monkeypatch.setattr(output, "CHUNK_ROWS", 1500)
    release_with("numpy", fair_csv, tmp_path / "numpy", rows=4000)
    card = release_with("duckdb", fair_csv, tmp_path / "duckdb", rows=4000, output_format="parquet")
    assert card["synthetic_file"] == "synthetic.parquet"
    assert sorted(p.name for p in (tmp_path / "duckdb").iterdir()) == [
        ".safeshare-output",
        "card.json",
        "report.html",
        "synthetic.parquet",
    ]
    as_csv = pd.read_csv(tmp_path / "numpy" / "synthetic.csv")
    as_parquet = pd.read_parquet(tmp_path / "duckdb" / "synthetic.parquet")
    assert list(as_parquet.columns) == list(as_csv.columns)
    pd.testing.assert_frame_equal(
        as_parquet.astype(str), as_csv.astype(as_parquet.dtypes.to_dict()).astype(str)
    )
    with pytest.raises(InputError, match="unknown output format 'xlsx'"):
        release(fair_csv, out=tmp_path / "x", settings=SynthesisSettings(output_format="xlsx"))


def test_a_failed_run_leaves_no_streamed_file(tmp_path, fair_csv, monkeypatch):
    from safeshare.release import pipeline

    monkeypatch.setattr(output, "CHUNK_ROWS", 1500)

    def broken(*args: object, **kwargs: object) -> str:
        raise RuntimeError("report could not be drawn")

    monkeypatch.setattr(pipeline, "render_report", broken)
    with pytest.raises(RuntimeError, match="report could not be drawn"):
        release_with("duckdb", fair_csv, tmp_path / "out", rows=4000)
    assert not (tmp_path / "out").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


@pytest.mark.slow  # a Spark session: the slow tier
@pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning")
def test_a_failed_spark_job_releases_nothing_and_refunds_the_ledger(tmp_path, fair_csv):
    """The Spark session dies while the model is fitted: no output, the spend refunded."""
    pyspark_sql = pytest.importorskip("pyspark.sql")
    ledger_path = tmp_path / "ledger.sqlite"

    def stop_spark(step: str, done: float) -> None:
        if step == "synthesizing":
            session = pyspark_sql.SparkSession.getActiveSession()
            if session is not None:
                session.stop()

    with pytest.raises(EngineJobError, match="ledger was not charged") as caught:
        release(
            fair_csv,
            out=tmp_path / "out",
            ledger=ledger_path,
            progress=stop_spark,
            settings=SynthesisSettings(epsilon=1.0),
            reading=Reading(engine="spark", spark_master="local[1]"),
        )
    assert "Spark" in str(caught.value)
    assert not (tmp_path / "out").exists()
    (status,) = Ledger(ledger_path).datasets()
    assert (status.spent_epsilon, status.releases) == (0.0, 0)
    # the dataset's total is this release's own budget: only a refund lets it run again
    release(
        fair_csv,
        out=tmp_path / "again",
        ledger=ledger_path,
        settings=SynthesisSettings(epsilon=1.0),
    )
    assert Ledger(ledger_path).datasets()[0].spent_epsilon == pytest.approx(1.0)


def test_a_headerless_file_is_read_as_its_owner_says_by_every_engine(tmp_path):
    """Its first record looks like names, so detection would take it for a header; with
    --no-header (Reading(header=False)) or a schema's ``header: false`` both engines read it
    as a record and release the same rows."""
    rows = [f"{r},{c}" for r, c in [("north", "red"), ("south", "blue"), ("east", "red")] * 200]
    path = tmp_path / "regions.csv"
    path.write_text("\n".join(["Zeta Quadrant,Mauve", *rows]) + "\n")
    synthetic = {}
    for engine in ("numpy", "duckdb"):
        out = tmp_path / engine
        release(
            path,
            out=out,
            reading=Reading(engine=engine, header=False),
            ledger=tmp_path / f"{engine}.sqlite",
            seed=3,
        )
        card = json.loads((out / "card.json").read_text())
        assert card["rows_in"] == 601
        synthetic[engine] = (out / "synthetic.csv").read_bytes()
    assert synthetic["numpy"] == synthetic["duckdb"]
    assert synthetic["numpy"].startswith(b"column_1,column_2\n")
    schema = tmp_path / "schema.yaml"
    schema.write_text("header: false\ncolumns:\n  region: {}\n  colour: {}\n")
    release(path, out=tmp_path / "named", reading=Reading(schema=schema, engine="duckdb"), seed=3,
            ledger=tmp_path / "named.sqlite")  # fmt: skip
    assert (tmp_path / "named" / "synthetic.csv").read_text().startswith("region,colour\n")
    assert json.loads((tmp_path / "named" / "card.json").read_text())["rows_in"] == 601


def _raw_admissions(path: Path) -> Path:
    """3,000 admissions: sex, a job ('?' where missing) and a day-first date."""
    import numpy as np

    rng = np.random.default_rng(0)
    days = pd.to_datetime("2012-01-01") + pd.to_timedelta(rng.integers(0, 1500, 3000), "D")
    frame = pd.DataFrame(
        {
            "sex": rng.choice(["F", "M"], 3000),
            "job": rng.choice(["nurse", "clerk", "?"], 3000, p=[0.5, 0.3, 0.2]),
            "admitted": days.strftime("%d/%m/%Y"),
        }
    )
    frame.to_csv(path, index=False)
    return path


def test_raw_files_release_alike_dates_in_the_files_layout_and_missing_as_spelled(tmp_path):
    """A raw file DP discovery reads whole: day-first dates (``25/12/2013``) are read day first
    by both engines (a month-first reading fails on days after the 12th) and written back so;
    ``?`` for a missing job is counted by both (so both draw the same noise) and written back;
    the two engines release the same bytes."""
    path = _raw_admissions(tmp_path / "admissions.csv")
    cards = [release_with(engine, path, tmp_path / engine) for engine in ("numpy", "duckdb")]
    written = [(tmp_path / e / "synthetic.csv").read_bytes() for e in ("numpy", "duckdb")]
    assert written[0] == written[1]
    released = pd.read_csv(tmp_path / "numpy" / "synthetic.csv", dtype=str, keep_default_na=False)
    dates = released["admitted"][released["admitted"] != ""]  # the missing code, drawn rarely
    assert len(dates) > 0.95 * len(released) and dates.str.fullmatch(r"\d{2}/\d{2}/\d{4}").all()
    read = pd.to_datetime(dates, format="%d/%m/%Y")
    assert pd.Timestamp("2011-12-01") <= read.min() < read.max() < pd.Timestamp("2017-01-01")
    # the data run to 2016-02-09, past the range found (2012-2015): the records beyond it
    # decode into the tail the year counts show, at a year's resolution
    assert 0 < (read >= pd.Timestamp("2016-01-01")).mean() < 0.06
    assert read.dt.day.max() > 12  # not misread month first
    assert 0.1 < (released["job"] == "?").mean() < 0.3
    assert "given the column kinds" not in cards[0]["guarantee"]  # measured with DP
    assert cards[0]["columns"]["admitted"]["kind_measured_with_dp"]


@pytest.mark.slow  # a Spark session: the slow tier
@pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning")
def test_spark_reads_a_raw_files_dates_and_missing_spellings_as_numpy_does(tmp_path):
    pytest.importorskip("pyspark")
    path = _raw_admissions(tmp_path / "admissions.csv")
    release_with("numpy", path, tmp_path / "numpy")
    release_with("spark", path, tmp_path / "spark", spark_master="local[2]")
    written = [(tmp_path / e / "synthetic.csv").read_bytes() for e in ("numpy", "spark")]
    assert written[0] == written[1]
