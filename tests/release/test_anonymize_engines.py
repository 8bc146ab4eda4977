"""An anonymization release is the same whichever engine reads the table: only ``engine`` differs.

numpy reads the table into memory and searches its records; DuckDB and Spark count its
distinct quasi-identifier rows in one GROUP BY, the search runs on those counts, and the
records are released a chunk at a time.  ``anonymized.csv`` must be byte for byte the same,
and the card the same apart from its engine line, creation time and the search's seconds.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from safeshare.anonymize.hierarchy import HierarchyError
from safeshare.engine import distinct
from safeshare.errors import InputError
from safeshare.release import Reading
from safeshare.release.anonymize import release_anonymized
from tests.conftest import SHARED, needs_shared

pytest.importorskip("duckdb")

FAIR_QIS = ("age", "yrs_married", "children", "religious", "educ", "occupation")
FAIR_CONFIG = {
    "quasi_identifiers": {name: {"hierarchy": "auto"} for name in FAIR_QIS},
    "sensitive": ["rate_marriage"],
    "privacy": {"k": 10, "l_diversity": {"attribute": "rate_marriage", "l": 2}},
    "suppression_limit": 0.02,
    "suppressed_records": "mask",
    "transforms": {"affairs": {"mask": {"keep": 1}}},
}
FAST = {
    "spark.sql.shuffle.partitions": "4",
    "spark.ui.enabled": "false",
    "spark.sql.adaptive.enabled": "false",
    "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
}


@pytest.fixture(scope="module")
def spark() -> Iterator[object]:
    """A running Spark session the releases reuse (each would otherwise start its own JVM)."""
    pytest.importorskip("pyspark")
    from safeshare.engine.spark_engine import SparkEngine
    from safeshare.engine.spark_session import require_java
    from safeshare.errors import MissingDependencyError

    try:
        require_java()
    except MissingDependencyError:
        pytest.skip("needs Java 17+")
    with SparkEngine("local[2]", "safeshare-anonymize-tests", **FAST) as engine:
        yield engine


@pytest.fixture(autouse=True)
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks of 1,000 records: the example is released in several."""
    monkeypatch.setattr(distinct, "CHUNK_ROWS", 1000)


def config_file(tmp_path: Path, config: dict) -> Path:
    path = tmp_path / "anon.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def anonymize_with(engine: str, data: Path, out: Path, config: dict | Path) -> dict:
    release_anonymized(data, out=out, config=config, reading=Reading(engine=engine, name="t"))
    return json.loads((out / "card.json").read_text())


def comparable(card: dict) -> dict:
    out = {k: v for k, v in card.items() if k not in ("created_at", "engine")}
    out["search"] = {k: v for k, v in card["search"].items() if k != "seconds"}
    return out


def assert_same_release(
    tmp_path: Path, data: Path, config: dict | Path, engines: tuple[str, ...]
) -> dict[str, dict]:
    cards = {e: anonymize_with(e, data, tmp_path / e, config) for e in ("numpy", *engines)}
    expected = (tmp_path / "numpy" / "anonymized.csv").read_bytes()
    for engine in engines:
        assert (tmp_path / engine / "anonymized.csv").read_bytes() == expected, engine
        assert comparable(cards[engine]) == comparable(cards["numpy"]), engine
        assert cards[engine]["engine"]["name"] == engine
        assert cards[engine]["engine"]["distinct_rows"] <= cards[engine]["rows_in"]
    assert cards["numpy"]["engine"] == {"name": "numpy"}
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]  # no leftovers
    return cards


@pytest.mark.slow  # a Spark session: the slow tier
def test_fair_csv_releases_alike_on_numpy_duckdb_and_spark(tmp_path, fair_csv, spark):
    cards = assert_same_release(tmp_path, fair_csv, FAIR_CONFIG, ("duckdb", "spark"))
    assert cards["numpy"]["suppressed"] > 0 and cards["numpy"]["models_satisfied"]
    assert cards["spark"]["engine"]["distinct_rows"] < cards["spark"]["rows_in"]


def test_typed_parquet_releases_alike(tmp_path, fair, spark):
    """Parquet keeps its types; an integer column missing a value in one chunk only is still
    written as the whole table's reader types it (floats) in every chunk."""
    frame = fair[0].copy()
    frame["children"] = frame["children"].round().astype("int64")
    frame["tally"] = pd.array(range(len(frame)), dtype="Int64")
    frame.loc[4000, "tally"] = None
    frame["note"] = [f" text {i % 7} " for i in range(len(frame))]
    path = tmp_path / "fair.parquet"
    frame.to_parquet(path)
    import pyarrow.parquet as pq

    schema = pq.read_schema(path).remove_metadata()  # (a file without pandas' own types)
    pq.write_table(pq.read_table(path).cast(schema).replace_schema_metadata(None), path)
    config = {**FAIR_CONFIG, "transforms": {}, "privacy": {"k": 5}}
    assert_same_release(tmp_path / "out", path, config, ("duckdb", "spark"))
    written = (tmp_path / "out" / "duckdb" / "anonymized.csv").read_text().splitlines()
    assert written[1].split(",")[-2] == "0.0"  # the tally column, as floats


def adult_config() -> dict:
    assert SHARED is not None
    folder = SHARED / "adult-arx"
    qis = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass"]
    return {
        "quasi_identifiers": {
            c: {"hierarchy": str(folder / f"adult_hierarchy_{c}.csv")} for c in qis
        },
        "sensitive": ["salary-class"],
        "privacy": {"k": 10, "t_closeness": {"attribute": "salary-class", "t": 0.2}},
        "suppression_limit": 0.01,
        "recode_suppressed": True,
    }


@needs_shared
def test_adult_releases_alike_on_duckdb(tmp_path, monkeypatch):
    monkeypatch.setattr(distinct, "CHUNK_ROWS", 7000)
    assert SHARED is not None
    data = SHARED / "adult-arx" / "adult.csv"
    cards = assert_same_release(tmp_path, data, adult_config(), ("duckdb",))
    assert cards["duckdb"]["rows_in"] == 30162 and cards["duckdb"]["suppressed"] > 0


@needs_shared
@pytest.mark.slow
def test_adult_releases_alike_on_spark(tmp_path, monkeypatch, spark):
    monkeypatch.setattr(distinct, "CHUNK_ROWS", 7000)
    assert SHARED is not None
    assert_same_release(tmp_path, SHARED / "adult-arx" / "adult.csv", adult_config(), ("spark",))


def test_the_cli_releases_through_an_engine(tmp_path, fair_csv):
    from safeshare.cli import app

    config = config_file(tmp_path, FAIR_CONFIG)
    out = tmp_path / "out"
    args = ["release", str(fair_csv), "--method", "anonymize", "-c", str(config), "-o", str(out)]
    result = CliRunner().invoke(app, [*args, "--engine", "duckdb", "--memory-limit", "1GB"])
    assert result.exit_code == 0, result.output
    card = json.loads((out / "card.json").read_text())
    assert card["engine"]["name"] == "duckdb" and card["engine"]["memory_limit"] == "1GB"
    auto = anonymize_with("auto", fair_csv, tmp_path / "auto", FAIR_CONFIG)
    assert auto["engine"] == {"name": "numpy"}  # a small file stays in memory
    # options of DP synthesis would be silently dropped: they are refused, nothing written
    for extra, named in (
        (["--output-format", "parquet"], "--output-format does nothing"),
        (["--epsilon", "0.5", "--seed", "3"], "--epsilon, --seed do nothing"),
    ):
        refused = CliRunner().invoke(app, [*args[:-1], str(tmp_path / "x"), *extra])
        assert isinstance(refused.exception, InputError) and named in str(refused.exception)
        assert not (tmp_path / "x").exists()


def test_errors_name_the_column_and_the_fix(tmp_path, fair_csv):
    absent = {**FAIR_CONFIG, "sensitive": ["rate"], "privacy": {"k": 2}}
    qi = {**FAIR_CONFIG, "quasi_identifiers": {"agee": {"hierarchy": "auto"}}}
    for engine in ("numpy", "duckdb"):
        with pytest.raises(InputError, match=r"columns \['rate'\].*the data have"):
            anonymize_with(engine, fair_csv, tmp_path / engine, absent)
        with pytest.raises(InputError, match=r"columns \['agee'\].*the data have"):
            anonymize_with(engine, fair_csv, tmp_path / engine, qi)
    rows = [["1.0", "*"], ["2.0", "*"]]  # religious also takes 3.0 and 4.0
    uncovered = {**FAIR_CONFIG, "quasi_identifiers": {"religious": {"hierarchy": {"rows": rows}}}}
    messages = []
    for engine in ("numpy", "duckdb"):
        with pytest.raises(HierarchyError) as caught:
            anonymize_with(engine, fair_csv, tmp_path / f"h-{engine}", uncovered)
        messages.append(str(caught.value))
    assert messages[0] == messages[1] and "'religious'" in messages[0]
    with pytest.raises(InputError, match="reads files"):
        release_anonymized(
            pd.read_csv(fair_csv),
            out=tmp_path / "x",
            config=FAIR_CONFIG,
            reading=Reading(engine="duckdb"),
        )
    assert not (tmp_path / "duckdb").exists()


@st.composite
def csv_tables(draw: st.DrawFn) -> tuple[str, dict]:
    n = draw(st.integers(5, 120))
    columns = {}
    for c in range(draw(st.integers(1, 3))):
        values = draw(st.lists(st.integers(10, 40), min_size=n, max_size=n))
        spaced = draw(st.booleans())
        columns[f"q{c}"] = [f" {v}" if spaced and v % 3 == 0 else str(v) for v in values]
    columns["s"] = draw(st.lists(st.sampled_from(["a", "b", "?", "c,d"]), min_size=n, max_size=n))
    text = pd.DataFrame(columns).to_csv(index=False)
    config = {
        "quasi_identifiers": {name: {"hierarchy": "auto"} for name in columns if name != "s"},
        "sensitive": ["s"],
        "privacy": {"k": draw(st.integers(2, 5))},
        "suppression_limit": draw(st.sampled_from([0.0, 0.1])),
        "quality": draw(st.sampled_from(["precision", "loss"])),
    }
    return text, config


@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(csv_tables())
def test_random_csv_tables_release_alike(tmp_path_factory, case):
    text, config = case
    folder = tmp_path_factory.mktemp("random")
    data = folder / "t.csv"
    data.write_text(text, encoding="utf-8")
    try:
        anonymize_with("numpy", data, folder / "probe", config)
    except (InputError, ValueError) as in_memory:
        with pytest.raises(type(in_memory)) as caught:
            anonymize_with("duckdb", data, folder / "duckdb", config)
        assert str(caught.value) == str(in_memory)
        return
    assert_same_release(folder / "both", data, config, ("duckdb",))
