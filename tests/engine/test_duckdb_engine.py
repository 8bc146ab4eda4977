"""The DuckDB engine counts exactly what numpy counts, from files it never loads into pandas."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from safeshare.data import Column, Domain, Kind, Table, read_frame
from safeshare.data.domain import day_number
from safeshare.data.plan import decide_columns, infer_column_unsafe
from safeshare.data.row_order import RowOrder
from safeshare.engine import NumpyEngine, engine_for
from safeshare.errors import EncodingError, InputError
from safeshare.evaluate.split import train_holdout_split
from safeshare.synth.mst import MST
from tests.conftest import SHARED, needs_shared
from tests.engine import EDGE_DATES, edge_dates_domain

duckdb = pytest.importorskip("duckdb")

from safeshare.engine.duckdb_engine import DuckDBEngine  # noqa: E402


@pytest.fixture(scope="module")
def engine() -> DuckDBEngine:
    with DuckDBEngine(memory_limit="1GB", threads=2) as opened:
        yield opened


def inferred_domain(path: Path) -> Domain:
    """A domain read from the file itself (fine for a counting test; releases use DP)."""
    frame = read_frame(path)
    decisions = decide_columns(frame, None, unsafe=True)
    return Domain(tuple(infer_column_unsafe(frame[d.name], d) for d in decisions if d.modelled))


def assert_same_counts(engine: DuckDBEngine, path: Path, domain: Domain) -> None:
    """Every 1-way and 2-way marginal and the class sizes agree with numpy's (or both refuse alike)."""
    try:
        expected, expected_report = Table.from_frame(read_frame(path), domain)
    except (InputError, EncodingError) as refused:
        with pytest.raises(type(refused)) as caught:
            engine.open(path).encode(domain, holdout="FALSE")
        assert str(caught.value) == str(refused)
        return
    encoded = engine.open(path).encode(domain, holdout="FALSE")
    assert len(encoded.train) == len(expected)
    assert encoded.report == expected_report
    sets = [[n] for n in domain.names] + [list(p) for p in itertools.combinations(domain.names, 2)]
    numpy = NumpyEngine()
    for columns, counts in zip(sets, engine.counts_many(encoded.train, sets), strict=True):
        np.testing.assert_array_equal(counts, numpy.counts(expected, columns), err_msg=str(columns))
    names = list(domain.names)
    assert sorted(engine.group_sizes(encoded.train, names).tolist()) == sorted(
        numpy.group_sizes(expected, names).tolist()
    )


def test_counts_equal_numpy_on_the_example(engine: DuckDBEngine, fair_csv: Path, fair) -> None:
    assert_same_counts(engine, fair_csv, fair[1].domain())


@needs_shared
def test_counts_equal_numpy_on_adult(engine: DuckDBEngine) -> None:
    assert SHARED is not None
    path = SHARED / "adult-arx" / "adult.csv"
    assert_same_counts(engine, path, inferred_domain(path))


@needs_shared
def test_counts_equal_numpy_on_adult_as_parquet(engine: DuckDBEngine, tmp_path: Path) -> None:
    assert SHARED is not None
    frame = pd.read_csv(SHARED / "adult-pgm" / "adult.csv")
    path = tmp_path / "adult.parquet"
    frame.to_parquet(path)  # typed columns: integers stay integers
    assert_same_counts(engine, path, inferred_domain(path))


TEXT = st.sampled_from(["a", " b", "c ", "1", "1.0", "2", "", "?", "NA", "x,y", 'q"t', "Ü", "1_0"])
NUMBER = st.one_of(
    st.none(),
    st.integers(-20, 150).map(str),
    st.floats(-20, 150, allow_nan=False).map(repr),
    st.sampled_from(["1_000", "0x10", "+3", ".5"]),
)
DATE = st.one_of(
    st.none(),
    st.dates(pd.Timestamp("1990-01-01").date(), pd.Timestamp("2030-12-31").date()).map(str),
)
RANDOM_DOMAIN = Domain(
    (
        Column("c", Kind.CATEGORICAL, categories=("a", "b", "1", "2")),
        Column("x", Kind.NUMERIC, edges=(0.0, 10.0, 49.5, 100.0)),
        Column(
            "d",
            Kind.DATETIME,
            edges=tuple(day_number(pd.Timestamp(y, 1, 1).date()) for y in (2000, 2010, 2020)),
        ),
    )
)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    rows=st.lists(st.tuples(TEXT, NUMBER, DATE), min_size=1, max_size=40),
    delimiter=st.sampled_from([",", ";", "\t"]),
)
def test_counts_equal_numpy_on_random_csv(
    engine: DuckDBEngine, tmp_path_factory: pytest.TempPathFactory, rows, delimiter: str
) -> None:
    frame = pd.DataFrame(rows, columns=["c", "x", "d"])
    path = tmp_path_factory.mktemp("random") / "t.csv"
    frame.to_csv(path, index=False, sep=delimiter)
    assert_same_counts(engine, path, RANDOM_DOMAIN)


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    values=st.lists(
        st.tuples(
            st.one_of(st.none(), st.sampled_from(["a", "b ", "z"])),
            st.one_of(st.none(), st.floats(-5, 120)),
        ),
        min_size=1,
        max_size=40,
    )
)
def test_counts_equal_numpy_on_random_parquet(
    engine: DuckDBEngine, tmp_path_factory: pytest.TempPathFactory, values
) -> None:
    frame = pd.DataFrame(values, columns=["c", "x"]).astype({"x": float})
    path = tmp_path_factory.mktemp("random") / "t.parquet"
    frame.to_parquet(path)
    assert_same_counts(engine, path, RANDOM_DOMAIN.project(["c", "x"]))


def test_the_holdout_is_the_rows_numpy_holds_out(
    engine: DuckDBEngine, fair_csv: Path, fair
) -> None:
    domain = fair[1].domain()
    order = RowOrder.draw(np.random.default_rng(5))
    source = engine.open(fair_csv)
    count = round(len(source) * 0.2)
    threshold = source.rank_threshold(order, count)
    encoded = source.encode(domain, holdout=f"{order.sql('__row')} <= {threshold}")
    table, _ = Table.from_frame(read_frame(fair_csv), domain)
    train_rows, holdout_rows = train_holdout_split(len(table), 0.2, order)
    for part, rows in ((encoded.train, train_rows), (encoded.holdout, holdout_rows)):
        fetched = part.fetch()
        for name in domain.names:
            np.testing.assert_array_equal(fetched.column(name), table.column(name)[rows])


def test_recode_counts_match_the_in_memory_recode(engine: DuckDBEngine, fair_table: Table) -> None:
    stored = engine.store(fair_table)
    forward = {n: np.arange(fair_table.domain[n].size) % 2 for n in fair_table.columns}
    small = Domain.from_sizes(dict.fromkeys(fair_table.columns, 2))
    expected = fair_table.recode(forward, small)
    recoded = stored.recode(forward, small)
    a, b = fair_table.columns[:2]
    np.testing.assert_array_equal(
        engine.counts(recoded, [a, b]), NumpyEngine().counts(expected, [a, b])
    )
    repeated = engine.counts_many(recoded, [[a], [a], [b, a]])
    np.testing.assert_array_equal(repeated[0], repeated[1])
    np.testing.assert_array_equal(repeated[2], NumpyEngine().counts(expected, [b, a]))


def test_mst_through_duckdb_is_the_mst_in_memory(engine: DuckDBEngine, fair_table: Table) -> None:
    stored = engine.store(fair_table)
    assert engine_for(stored) is engine
    in_memory = MST(rho=0.5, rng=11).fit(fair_table)
    on_disk = MST(rho=0.5, rng=11).fit(stored)
    assert in_memory.edges_ == on_disk.edges_
    a, b = in_memory.sample(500), on_disk.sample(500)
    for name in fair_table.columns:
        np.testing.assert_array_equal(a.column(name), b.column(name))


# -- bad input ------------------------------------------------------------------------------


def test_parquet_folder_with_two_schemas_names_the_odd_file(
    engine: DuckDBEngine, tmp_path: Path
) -> None:
    folder = tmp_path / "parts"
    folder.mkdir()
    pd.DataFrame({"age": [30, 40], "sex": ["F", "M"]}).to_parquet(folder / "part-0.parquet")
    pd.DataFrame({"age": ["30"], "sex": ["F"]}).to_parquet(folder / "part-1.parquet")
    with pytest.raises(InputError, match=r"part-1\.parquet differ from part-0\.parquet"):
        engine.open(folder)


def test_a_folder_of_parquet_files_is_one_table(engine: DuckDBEngine, tmp_path: Path) -> None:
    folder = tmp_path / "parts"
    folder.mkdir()
    pd.DataFrame({"sex": ["F", "M"]}).to_parquet(folder / "part-0.parquet")
    pd.DataFrame({"sex": ["M"]}).to_parquet(folder / "part-1.parquet")
    domain = Domain((Column("sex", Kind.CATEGORICAL, categories=("F", "M")),))
    encoded = engine.open(folder).encode(domain, holdout="FALSE")
    assert encoded.train.fetch().column("sex").tolist() == [0, 1, 1]


def test_a_malformed_csv_names_the_line_not_the_content(
    engine: DuckDBEngine, tmp_path: Path
) -> None:
    path = tmp_path / "bad.csv"
    path.write_text("a,b\n1,2\n3,4\n5,6,secret-value\n7,8\n")
    with pytest.raises(InputError) as caught:
        engine.open(path).encode(Domain.from_sizes({"a": 9}), holdout="FALSE")
    assert "secret-value" not in str(caught.value)


def test_values_the_domain_cannot_hold_are_refused_with_counts(
    engine: DuckDBEngine, tmp_path: Path
) -> None:
    path = tmp_path / "t.csv"
    path.write_text("c,x\nsecret,abc\nb,\n")
    strict = Column("c", Kind.CATEGORICAL, categories=("a", "b"), other=False)
    with pytest.raises(EncodingError, match=r"'c': 1 value\(s\) are outside") as caught:
        engine.open(path).encode(Domain((strict,)), holdout="FALSE")
    assert "secret" not in str(caught.value)
    number = Column("x", Kind.NUMERIC, edges=(0, 1))
    with pytest.raises(EncodingError, match=r"'x' is declared numeric but 1 of its values"):
        engine.open(path).encode(Domain((number,)), holdout="FALSE")
    required = Column("x", Kind.NUMERIC, edges=(0, 1), missing=False)
    path.write_text("x\n1\n\n0\n")
    with pytest.raises(EncodingError, match=r"'x' has 1 missing value"):
        engine.open(path).encode(Domain((required,)), holdout="FALSE")


def test_header_only_and_missing_files_are_refused(engine: DuckDBEngine, tmp_path: Path) -> None:
    path = tmp_path / "empty.csv"
    path.write_text("a,b\n")
    with pytest.raises(InputError, match="no rows"):
        engine.open(path)
    with pytest.raises(InputError, match="does not exist"):
        engine.open(tmp_path / "absent.parquet")


def test_each_engine_refuses_the_other_ones_tables(engine: DuckDBEngine, fair_table: Table) -> None:
    with pytest.raises(InputError, match="numpy engine counts in-memory tables"):
        NumpyEngine().counts(engine.store(fair_table), ["affairs"])
    with pytest.raises(InputError, match="duckdb engine counts tables it opened"):
        engine.counts(fair_table, ["affairs"])


def test_a_closed_engine_says_so(fair_table: Table) -> None:
    opened = DuckDBEngine()
    stored = opened.store(fair_table)
    opened.close()
    with pytest.raises(InputError, match="closed"):
        opened.counts(stored, ["affairs"])


def test_schema_column_names_apply_to_a_file_without_header(
    engine: DuckDBEngine, tmp_path: Path
) -> None:
    path = tmp_path / "noheader.csv"
    path.write_text("30;F\n40;M\n")
    assert engine.open(path, names=("age", "sex")).names == ("age", "sex")
    assert engine.open(path).names == ("column_1", "column_2")


@pytest.mark.parametrize("date_format", ["", "%d/%m/%Y"])
def test_dates_read_in_their_layout_then_iso_8601_alike(
    engine: DuckDBEngine, tmp_path: Path, date_format: str
) -> None:
    """Every engine reads a date column in its layout, then in the ISO 8601 forms of
    ``ISO_DATE``, and nothing else: numpy no longer guesses layouts DuckDB cannot read."""
    path = tmp_path / "t.csv"
    path.write_text("d\n" + "\n".join(EDGE_DATES) + "\n")
    domain = edge_dates_domain(date_format)
    assert_same_counts(engine, path, domain)
    encoded = engine.open(path).encode(domain, holdout="FALSE")
    read = 5 + (date_format != "")  # the five ISO forms, and 15/03/2013 in its layout
    assert encoded.report.columns["d"].missing == len(EDGE_DATES) - read


def test_strays_in_a_column_whose_kind_dp_measured_are_missing_as_numpy_reads_them(
    engine: DuckDBEngine, tmp_path: Path
) -> None:
    """A numeric or date column with ``strays_missing`` (its kind measured with DP) codes a
    value that is no number (no date) as missing, in DuckDB as in numpy."""
    path = tmp_path / "t.csv"
    path.write_text("x,d\n0.5,2020-01-05\nunknown,2020-02-01\n,soon\n0.9,2020-03-01\n")
    domain = Domain(
        (
            Column("x", Kind.NUMERIC, edges=(0, 0.5, 1), strays_missing=True),
            Column("d", Kind.DATETIME, edges=(18262, 18300, 18400), integer=True,
                   strays_missing=True),
        )
    )  # fmt: skip
    assert_same_counts(engine, path, domain)
    encoded = engine.open(path).encode(domain, holdout="FALSE")
    assert encoded.report.columns["x"].missing == 2 and encoded.report.columns["d"].missing == 1
