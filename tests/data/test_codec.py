import numpy as np
import pandas as pd
import pytest

from safeshare.data import Column, Domain, Kind, Table
from safeshare.data.codec import integer_edges, singleton_edges
from safeshare.errors import EncodingError


def domain() -> Domain:
    return Domain(
        (
            Column("sex", Kind.CATEGORICAL, categories=("F", "M")),
            Column("grade", Kind.ORDINAL, categories=("1", "2", "3")),
            Column("age", Kind.NUMERIC, edges=(0, 18, 65, 100), integer=True),
            Column("score", Kind.NUMERIC, edges=(0.0, 0.5, 1.0)),
            Column(
                "day", Kind.DATETIME, edges=(18262, 18628, 18993), integer=True
            ),  # 2020-01-01 .. 2022-01-01
        )
    )


def frame() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "sex": ["F", "M", "X", None],
            "grade": ["1", "2.0", "3", "2"],
            "age": ["10", "40", "120", ""],
            "score": ["0.1", "0.9", "0.5", "-3"],
            "day": ["2020-03-01", "2021-06-30", None, "2020-12-31"],
        }
    )


def test_encode_maps_unseen_to_other_and_clips_numbers():
    table, report = Table.from_frame(frame(), domain())
    assert table.column("sex").tolist() == [0, 1, 2, 3]
    assert table.column("grade").tolist() == [0, 1, 2, 1]  # '2.0' matches the category '2'
    assert table.column("age").tolist() == [0, 1, 2, 3]
    assert table.column("score").tolist() == [0, 1, 1, 0]
    assert table.column("day").tolist() == [0, 1, 2, 0]
    assert report.columns["sex"].other == 1
    assert report.columns["age"].clipped_high == 1
    assert report.columns["score"].clipped_low == 1
    assert len(report.warnings()) == 3
    assert all("X" not in line for line in report.warnings())


def test_decode_stays_inside_bins_and_categories():
    table, _ = Table.from_frame(frame(), domain())
    rng = np.random.default_rng(1)
    out = table.decode(rng)
    assert out["sex"].tolist() == ["F", "M", "(other)", None]
    assert (
        0 <= out["age"].iloc[0] < 18
        and 18 <= out["age"].iloc[1] < 65
        and pd.isna(out["age"].iloc[3])
    )
    assert 0.5 <= out["score"].iloc[1] <= 1.0
    assert out["day"].iloc[0].startswith("2020") and out["day"].iloc[2] is None
    recoded, _ = Table.from_frame(out, domain())
    for name in ["grade", "age", "score", "day"]:
        assert recoded.column(name).tolist() == table.column(name).tolist()


def test_integer_decoding_hits_every_integer_of_a_bin():
    column = Column("n", Kind.NUMERIC, edges=singleton_edges(0, 3), integer=True, missing=False)
    table = Table({"n": np.repeat(np.arange(4), 50)}, Domain((column,)))
    values = table.decode(np.random.default_rng(0))["n"].to_numpy()
    assert values.tolist() == np.repeat(np.arange(4), 50).tolist()
    wide = Column("w", Kind.NUMERIC, edges=(0, 10, 20), integer=True, missing=False)
    decoded = Table({"w": np.ones(2000, dtype=int)}, Domain((wide,))).decode(
        np.random.default_rng(0)
    )["w"]
    assert set(decoded.tolist()) == set(range(10, 21))  # last bin closed: 20 included


def test_text_in_numeric_column_is_an_error_without_values():
    bad = frame().assign(age=["10", "forty-two", "5", "7"])
    with pytest.raises(
        EncodingError, match="'age' is declared numeric but 1 of its values are not numbers"
    ) as e:
        Table.from_frame(bad, domain())
    assert "forty" not in str(e.value)


def test_missing_without_missing_code_and_absent_columns():
    strict = Domain((Column("sex", Kind.CATEGORICAL, categories=("F", "M"), missing=False),))
    with pytest.raises(EncodingError, match="missing: false"):
        Table.from_frame(pd.DataFrame({"sex": ["F", None]}), strict)
    closed = Domain((Column("sex", Kind.CATEGORICAL, categories=("F", "M"), other=False),))
    with pytest.raises(EncodingError, match="no 'other'"):
        Table.from_frame(pd.DataFrame({"sex": ["F", "Q"]}), closed)
    with pytest.raises(EncodingError, match=r"columns \['sex'\] are declared but absent"):
        Table.from_frame(pd.DataFrame({"age": [1]}), strict)


def test_table_rejects_out_of_range_codes_and_is_read_only():
    dom = Domain((Column("sex", Kind.CATEGORICAL, categories=("F", "M")),))
    with pytest.raises(EncodingError, match=r"codes must lie in \[0, 4\)"):
        Table({"sex": np.array([0, 4])}, dom)
    table = Table({"sex": np.array([0, 1])}, dom)
    with pytest.raises(ValueError, match="read-only"):
        table.column("sex")[0] = 1


def test_edge_helpers():
    assert integer_edges(0, 10, 5) == (0.0, 3.0, 6.0, 9.0, 10.0)
    assert singleton_edges(2, 4) == (2.0, 3.0, 4.0, 4.5)


def test_a_column_whose_kind_dp_measured_reads_its_strays_as_missing():
    """Strays in a column the schema did not declare (``strays_missing``) are missing values,
    counted as such; declared, the same column refuses them."""
    age = Column("age", Kind.NUMERIC, edges=(0, 50, 100), integer=True, strays_missing=True)
    table, report = Table.from_frame(
        pd.DataFrame({"age": ["10", "forty-two", "", "70"]}), Domain((age,))
    )
    assert table.column("age").tolist() == [0, age.missing_code, age.missing_code, 1]
    assert report.columns["age"].missing == 2
    assert Column.from_dict(age.to_dict()) == age
