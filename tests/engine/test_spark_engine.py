"""The Spark engine counts exactly what numpy counts, from files it reads where they lie."""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from safeshare.data import Column, Domain, Kind, Table, read_frame
from safeshare.data.domain import day_number
from safeshare.data.plan import decide_columns, infer_column_unsafe
from safeshare.data.row_order import RowOrder
from safeshare.engine import CountingEngine, NumpyEngine, engine_for
from safeshare.errors import EncodingError, InputError, MissingDependencyError
from safeshare.evaluate.split import train_holdout_split
from safeshare.synth.mst import MST
from tests.conftest import SHARED, needs_shared
from tests.engine import EDGE_DATES, edge_dates_domain

pytest.importorskip("pyspark")

from safeshare.engine import spark_files, spark_source
from safeshare.engine.spark_engine import SparkEngine, SparkTable
from safeshare.engine.spark_session import SparkJobError, require_java
from safeshare.engine.spark_source import Encoded, SparkSource

pytestmark = [  # a Spark session per worker: the slow tier
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas"),
]

# small data, many short jobs: few partitions, no UI or adaptive re-planning, and a JVM that
# compiles quickly (C1 only) rather than well
FAST = {
    "spark.sql.shuffle.partitions": "4",
    "spark.ui.enabled": "false",
    "spark.sql.adaptive.enabled": "false",
    "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
}


@pytest.fixture(scope="session")
def engine() -> Iterator[SparkEngine]:
    with SparkEngine("local[2]", "safeshare-tests", **FAST) as started:
        yield started


@pytest.fixture(scope="module")
def fair_source(engine: SparkEngine, fair_csv: Path) -> SparkSource:
    return engine.open(fair_csv)


ORDER = RowOrder.draw(np.random.default_rng(5))
HOLDOUT = 0.2


@pytest.fixture(scope="module")
def fair_split(fair_csv: Path) -> tuple[np.ndarray, np.ndarray]:
    """numpy's train and holdout row positions of the example."""
    return train_holdout_split(len(read_frame(fair_csv)), HOLDOUT, ORDER)


@pytest.fixture(scope="module")
def fair_encoded(fair_source: SparkSource, fair) -> Encoded:
    """The example encoded by Spark, holding out the rows numpy holds out (one encoding for all)."""
    threshold = fair_source.rank_threshold(ORDER, round(len(fair_source) * HOLDOUT))
    return fair_source.encode(fair[1].domain(), holdout=f"{ORDER.sql('__row')} <= {threshold}")


@pytest.fixture(scope="module")
def fair_train(fair_csv: Path, fair, fair_split: tuple[np.ndarray, np.ndarray]) -> Table:
    """numpy's train part of the example, encoded in memory."""
    frame = read_frame(fair_csv).iloc[fair_split[0]].reset_index(drop=True)
    return Table.from_frame(frame, fair[1].domain())[0]


def inferred_domain(path: Path) -> Domain:
    """A domain read from the file itself (fine for a counting test; releases use DP)."""
    frame = read_frame(path)
    decisions = decide_columns(frame, None, unsafe=True)
    return Domain(tuple(infer_column_unsafe(frame[d.name], d) for d in decisions if d.modelled))


def assert_counts_match(
    engine: SparkEngine, encoded: Encoded, expected: Table, pairs: bool = True
) -> None:
    """Every 1-way (and 2-way) marginal and the class sizes agree with numpy's."""
    names = list(expected.columns)
    assert len(encoded.train) == len(expected)
    sets = [[n] for n in names] + ([list(p) for p in itertools.combinations(names, 2)] * pairs)
    numpy = NumpyEngine()
    for columns, counts in zip(sets, engine.counts_many(encoded.train, sets), strict=True):
        np.testing.assert_array_equal(counts, numpy.counts(expected, columns), err_msg=str(columns))
    assert sorted(engine.group_sizes(encoded.train, names).tolist()) == sorted(
        numpy.group_sizes(expected, names).tolist()
    )


def assert_same_as_numpy(engine: SparkEngine, path: Path, domain: Domain) -> None:
    """Spark's codes, report and errors are numpy's, for the file at ``path``."""
    try:
        expected, expected_report = Table.from_frame(read_frame(path), domain)
    except EncodingError as numpy_error:
        with pytest.raises(EncodingError) as caught:
            engine.open(path).encode(domain, holdout="FALSE")
        assert str(caught.value) == str(numpy_error)
        return
    encoded = engine.open(path).encode(domain, holdout="FALSE")
    assert encoded.report == expected_report
    assert_counts_match(engine, encoded, expected)


# -- the same counts as numpy ---------------------------------------------------------------


def test_counts_equal_numpy_on_the_example(
    engine: SparkEngine,
    fair_csv: Path,
    fair,
    fair_split: tuple[np.ndarray, np.ndarray],
    fair_encoded: Encoded,
) -> None:
    train = read_frame(fair_csv).iloc[fair_split[0]].reset_index(drop=True)
    expected, report = Table.from_frame(train, fair[1].domain())
    assert isinstance(engine, CountingEngine) and engine.name == "spark"
    assert engine_for(fair_encoded.train) is engine
    assert fair_encoded.report == report  # counted over the train rows, as numpy counts them
    assert_counts_match(engine, fair_encoded, expected)
    assert engine.counts(fair_encoded.train, []).tolist() == len(expected)


@needs_shared
def test_counts_equal_numpy_on_adult(engine: SparkEngine) -> None:
    assert SHARED is not None
    path = SHARED / "adult-arx" / "adult.csv"
    assert_same_as_numpy(engine, path, inferred_domain(path))


# "1d" and "0x1p1" are 1.0 and 2.0 to Spark's (Java's) number parser, and text to pandas'
TEXT = st.sampled_from(
    ["a", " b", "c ", "1", "1.0", "2", "", "?", "NA", "x,y", 'q"t', "Ü", "1d", "0x1p1"]
)
NUMBER = st.one_of(
    st.none(),
    st.integers(-20, 150).map(str),
    st.floats(-20, 150, allow_nan=False).map(repr),
    st.sampled_from(["1e1", " 7 ", "+3"]),
)
DATE = st.one_of(
    st.none(),
    st.dates(pd.Timestamp("1990-01-01").date(), pd.Timestamp("2030-12-31").date()).map(str),
    # ISO 8601 forms every engine reads, and near-ISO text none does (not dates: an error)
    st.sampled_from(["2013-3-5", "2013-03-15 1:00:00", "2013-03-15T10:00:00.5", "20130315",
                     "2013.03.15", "2013-03-15 10"]),
)  # fmt: skip
RANDOM_DOMAIN = Domain(
    (
        Column("c", Kind.CATEGORICAL, categories=("a", "b", "1", "2")),
        Column("n", Kind.ORDINAL, categories=("1", "2", "10")),
        Column("x", Kind.NUMERIC, edges=(0.0, 10.0, 49.5, 100.0)),
        Column(
            "d",
            Kind.DATETIME,
            edges=tuple(day_number(pd.Timestamp(y, 1, 1).date()) for y in (2000, 2010, 2020)),
        ),
    )
)


@pytest.mark.parametrize("date_format", ["", "%d/%m/%Y"])
def test_dates_read_in_their_layout_then_iso_8601_as_numpy_reads_them(
    engine: SparkEngine, tmp_path: Path, date_format: str
) -> None:
    path = tmp_path / "t.csv"
    path.write_text("d\n" + "\n".join(EDGE_DATES) + "\n")
    assert_same_as_numpy(engine, path, edge_dates_domain(date_format))


@settings(
    max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    rows=st.lists(st.tuples(TEXT, TEXT, NUMBER, DATE), min_size=1, max_size=40),
    delimiter=st.sampled_from([",", ";", "\t"]),
)
@example(  # Java's number forms, never numbers to pandas (and so not to safeshare)
    rows=[("1d", "1d", "5", "2001-02-03"), ("a", "0x1p1", "1e1", None), ("2", "10", "+3", None)],
    delimiter=",",
)
def test_codes_reports_and_errors_equal_numpy_on_random_csv(
    engine: SparkEngine, tmp_path_factory: pytest.TempPathFactory, rows, delimiter: str
) -> None:
    frame = pd.DataFrame(rows, columns=["c", "n", "x", "d"])
    path = tmp_path_factory.mktemp("random") / "t.csv"
    frame.to_csv(path, index=False, sep=delimiter)
    assert_same_as_numpy(engine, path, RANDOM_DOMAIN)


@settings(
    max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    sizes=st.lists(st.integers(1, 6), min_size=1, max_size=4),
    rows=st.integers(0, 120),
    seed=st.integers(0, 10_000),
)
def test_counts_equal_numpy_on_random_tables(
    engine: SparkEngine, sizes: list[int], rows: int, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    domain = Domain.from_sizes({f"c{i}": s for i, s in enumerate(sizes)})
    table = Table({n: rng.integers(0, domain[n].size, rows) for n in domain.names}, domain)
    stored = engine.store(table)
    names = list(domain.names)
    sets = [[], names, names[::-1], [names[0]], [names[0]]]
    numpy = NumpyEngine()
    for columns, counts in zip(sets, engine.counts_many(stored, sets), strict=True):
        np.testing.assert_array_equal(counts, numpy.counts(table, columns))
    assert sorted(engine.group_sizes(stored, names).tolist()) == sorted(
        numpy.group_sizes(table, names).tolist()
    )


def test_a_folder_of_parquet_files_is_one_table_in_name_order(
    engine: SparkEngine, tmp_path: Path
) -> None:
    """Given as a URI (as on a cluster: hdfs://, s3a://), listed and read through Hadoop."""
    folder = tmp_path / "parts"
    (folder / "b").mkdir(parents=True)
    parts = [
        pd.DataFrame({"sex": ["F", "M", None], "age": [30.0, np.nan, 71.5]}),
        pd.DataFrame({"sex": ["M"], "age": [12.0]}),
        pd.DataFrame({"sex": ["F ", "X"], "age": [40.0, 200.0]}),
    ]
    for name, part in zip(["a 0.parquet", "a1.parquet", "b/x.parquet"], parts, strict=True):
        part.to_parquet(folder / name)
    domain = Domain(
        (
            Column("sex", Kind.CATEGORICAL, categories=("F", "M")),
            Column("age", Kind.NUMERIC, edges=(0, 50, 100)),
        )
    )
    expected, report = Table.from_frame(pd.concat(parts, ignore_index=True), domain)
    source = engine.open(folder.as_uri())
    assert len(source) == 6 and source.names == ("sex", "age")
    encoded = source.encode(domain, holdout="FALSE")
    assert encoded.report == report
    fetched = encoded.train.fetch()
    for name in domain.names:
        np.testing.assert_array_equal(fetched.column(name), expected.column(name))
    assert source.frame("__row >= 4")["sex"].tolist() == ["F", "X"]


# -- the same rows as numpy -----------------------------------------------------------------


def test_rows_keep_their_file_order_across_many_splits(
    engine: SparkEngine,
    fair_csv: Path,
    tmp_path: Path,
    fair,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A CSV read in 6 KiB splits (tasks in parallel) still numbers rows in file order."""
    path = tmp_path / "fair.csv"
    path.write_bytes(fair_csv.read_bytes()[: 24 * 1024].rsplit(b"\n", 1)[0] + b"\n")
    monkeypatch.setattr(spark_files, "INLINE_SPLITS", 2)  # many splits: shifts joined
    monkeypatch.setattr(spark_source, "SPREAD_ROWS", 1)  # and the codes spread out
    engine.spark.conf.set("spark.sql.files.maxPartitionBytes", "6144")
    try:
        source = engine.open(path)
        assert source.n_splits >= 4
        pd.testing.assert_frame_equal(source.frame(), read_frame(path))
        fetched = source.encode(fair[1].domain(), holdout="FALSE").train.fetch()
    finally:
        engine.spark.conf.unset("spark.sql.files.maxPartitionBytes")
    expected, _ = Table.from_frame(read_frame(path), fair[1].domain())
    for name in expected.columns:
        np.testing.assert_array_equal(fetched.column(name), expected.column(name))


def test_the_holdout_is_the_rows_numpy_holds_out(
    fair_source: SparkSource,
    fair_csv: Path,
    fair,
    fair_split: tuple[np.ndarray, np.ndarray],
    fair_encoded: Encoded,
) -> None:
    domain = fair[1].domain()
    frame = read_frame(fair_csv)
    table, _ = Table.from_frame(frame, domain)
    train_rows, holdout_rows = fair_split
    assert (len(fair_encoded.train), len(fair_encoded.holdout)) == (
        len(train_rows),
        len(holdout_rows),
    )
    for part, rows in ((fair_encoded.train, train_rows), (fair_encoded.holdout, holdout_rows)):
        fetched = part.fetch()
        for name in domain.names:
            np.testing.assert_array_equal(fetched.column(name), table.column(name)[rows])
    threshold = fair_source.rank_threshold(ORDER, len(holdout_rows))
    assert threshold == ORDER.thresholds(len(table), [len(holdout_rows)])[0]
    assert fair_source.rank_threshold(ORDER, 0) == -1
    sample = fair_source.frame(f"{ORDER.sql('__row')} <= {threshold}")
    pd.testing.assert_frame_equal(sample, frame.iloc[holdout_rows].reset_index(drop=True))


def test_mst_through_spark_is_the_mst_in_memory(fair_train: Table, fair_encoded: Encoded) -> None:
    table = fair_train
    in_memory = MST(rho=0.5, rng=11).fit(table)
    on_spark = MST(rho=0.5, rng=11).fit(fair_encoded.train)
    assert in_memory.edges_ == on_spark.edges_
    a, b = in_memory.sample(500), on_spark.sample(500)
    for name in table.columns:
        np.testing.assert_array_equal(a.column(name), b.column(name))


def test_recode_counts_match_the_in_memory_recode(engine: SparkEngine) -> None:
    table = Table(
        {"a": np.array([0, 1, 2, 2, 1]), "b": np.array([1, 1, 0, 2, 2])},
        Domain.from_sizes({"a": 3, "b": 3}),
    )
    forward = {"a": np.array([1, 0, 1]), "b": np.array([0, 0, 1])}
    small = Domain.from_sizes({"a": 2, "b": 2})
    recoded = engine.store(table).recode(forward, small)
    assert isinstance(recoded, SparkTable)
    np.testing.assert_array_equal(
        engine.counts(recoded, ["b", "a"]),
        NumpyEngine().counts(table.recode(forward, small), ["b", "a"]),
    )


def test_quoted_line_breaks_are_read_as_pandas_reads_them(
    engine: SparkEngine, tmp_path: Path
) -> None:
    path = tmp_path / "notes.csv"
    path.write_text('id;note;sex\n1;"two\nlines";F\n2;plain;M\n3;"a ""quote""";F\n')
    source = engine.open(path.as_uri())  # a URI: the line breaks are found by a Spark job
    assert len(source) == 3
    pd.testing.assert_frame_equal(source.frame(), read_frame(path))


# -- errors ---------------------------------------------------------------------------------


def test_a_malformed_csv_names_the_row_not_the_content(engine: SparkEngine, tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    path.write_text("a,b\n1,2\n3,4\n5,6,secret-value\n7,8\n")
    with pytest.raises(InputError, match="data row 3") as caught:
        engine.open(path)
    assert "secret-value" not in str(caught.value)


def test_values_the_domain_cannot_hold_are_refused_as_numpy_refuses_them(
    engine: SparkEngine, tmp_path: Path
) -> None:
    path = tmp_path / "t.csv"
    path.write_text("c,x\nsecret,abc\n,\n")  # columns both missing and outside their domain
    source = engine.open(path)
    strict = Column("c", Kind.CATEGORICAL, categories=("a", "b"), other=False, missing=False)
    number = Column("x", Kind.NUMERIC, edges=(0, 1), missing=False)
    for column in (strict, number, Column("x", Kind.NUMERIC, edges=(0, 1))):
        with pytest.raises(EncodingError) as numpy_error:
            Table.from_frame(read_frame(path), Domain((column,)))
        with pytest.raises(EncodingError) as caught:
            source.encode(Domain((column,)), holdout="FALSE")
        assert str(caught.value) == str(numpy_error.value)
        assert "secret" not in str(caught.value) and "abc" not in str(caught.value)


def test_bad_files_are_refused(engine: SparkEngine, tmp_path: Path) -> None:
    empty = tmp_path / "empty.csv"
    empty.write_text("a,b\n")
    with pytest.raises(InputError, match="no rows"):
        engine.open(empty)
    with pytest.raises(InputError, match="does not exist"):
        engine.open(tmp_path / "absent.parquet")
    folder = tmp_path / "parts"
    folder.mkdir()
    pd.DataFrame({"age": [30, 40]}).to_parquet(folder / "part-0.parquet")
    pd.DataFrame({"age": ["30"]}).to_parquet(folder / "part-1.parquet")
    with pytest.raises(InputError, match=r"part-1\.parquet differ from part-0\.parquet"):
        engine.open(folder)
    headerless = tmp_path / "noheader.csv"
    headerless.write_text("30;F\n40;M\n")
    assert engine.open(headerless, names=("age", "sex")).names == ("age", "sex")


def test_a_failed_job_names_the_step_not_the_data(
    engine: SparkEngine, fair_encoded: Encoded
) -> None:
    failing = fair_encoded.train.where("raise_error('secret-value') IS NULL", 1)
    with pytest.raises(SparkJobError, match="while counting marginals") as caught:
        engine.counts(failing, ["age"])
    assert "secret-value" not in str(caught.value)
    assert "Py4J" not in str(caught.value) and caught.value.__cause__ is None


def test_tables_of_other_engines_and_closed_engines_are_refused(
    engine: SparkEngine, fair_table: Table
) -> None:
    with pytest.raises(InputError, match="spark engine counts tables it opened"):
        engine.counts(fair_table, ["affairs"])
    borrowed = SparkEngine(session=engine.spark)  # a session it did not start: left running
    stored = borrowed.store(fair_table)
    with pytest.raises(InputError, match="numpy engine counts in-memory tables"):
        NumpyEngine().counts(stored, ["affairs"])
    borrowed.close()
    with pytest.raises(InputError, match="closed"):
        borrowed.counts(stored, ["affairs"])
    assert engine.counts(engine.store(fair_table), []).tolist() == len(fair_table)


def test_without_pyspark_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyspark", None)
    with pytest.raises(MissingDependencyError, match=r"pip install 'safeshare\[spark\]'"):
        SparkEngine()


def test_without_java_the_error_names_java_17(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from pyspark import SparkContext

    monkeypatch.setenv("JAVA_HOME", str(tmp_path))  # a JAVA_HOME without bin/java
    with pytest.raises(MissingDependencyError, match="Java 17"):
        require_java()
    # as a user would meet it: no JAVA_HOME, no java on PATH, no JVM running yet
    monkeypatch.delenv("JAVA_HOME")
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(SparkContext, "_active_spark_context", None)
    with pytest.raises(MissingDependencyError, match="Java 17"):
        SparkEngine()
