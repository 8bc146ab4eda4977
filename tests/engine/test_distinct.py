"""Distinct rows with counts, and rows in chunks, as DuckDB reads a file: what pandas reads."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from safeshare.data.readers import read_frame
from safeshare.errors import InputError

pytest.importorskip("duckdb")

from safeshare.engine.duckdb_engine import DuckDBEngine


def pandas_counts(frame: pd.DataFrame, columns: list[str]) -> tuple[pd.DataFrame, np.ndarray]:
    """The distinct rows of ``columns`` in the order each first appears, and their counts."""
    grouped = frame.groupby(columns, dropna=False, sort=False).size()
    rows = grouped.index.to_frame(index=False)
    for name in columns:
        rows[name] = rows[name].astype(frame[name].dtype)
    return rows, grouped.to_numpy(dtype=np.int64)


def assert_reads_like_pandas(path: Path, columns: list[str], chunk: int) -> None:
    expected = read_frame(path)
    with DuckDBEngine() as engine:
        source = engine.open(path)
        rows, counts = source.value_counts(columns)
        chunks = list(source.chunks(chunk))
    want_rows, want_counts = pandas_counts(expected, columns)
    pd.testing.assert_frame_equal(rows, want_rows)
    np.testing.assert_array_equal(counts, want_counts)
    assert all(len(c) <= chunk for c in chunks)
    pd.testing.assert_frame_equal(pd.concat(chunks, ignore_index=True), expected)


def test_the_example_counts_and_chunks_like_pandas(fair_csv: Path, tmp_path: Path, fair) -> None:
    assert_reads_like_pandas(fair_csv, ["religious", "age", "rate_marriage"], 2048)
    path = tmp_path / "fair.parquet"
    typed = fair[0].assign(children=fair[0]["children"].round().astype("int32"))
    typed.to_parquet(path)
    assert_reads_like_pandas(path, ["children", "age"], 4096)


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["a", " a", "b ", "?", "", "NA", "c,d", '"q"']),
            st.sampled_from(["1", "2", " 2", "N/A", "10"]),
        ),
        min_size=1,
        max_size=60,
    ),
    st.integers(1, 5),
)
def test_random_csv_counts_like_pandas(tmp_path_factory, rows, chunk) -> None:
    path = tmp_path_factory.mktemp("distinct") / "t.csv"
    pd.DataFrame(rows, columns=["x", "y"]).assign(z="k").to_csv(path, index=False)
    assert_reads_like_pandas(path, ["x", "y"], chunk * 2048)


def test_an_absent_column_is_refused_by_name(fair_csv: Path) -> None:
    with DuckDBEngine() as engine, pytest.raises(InputError, match=r"no columns \['nope'\]"):
        engine.open(fair_csv).value_counts(["age", "nope"])
