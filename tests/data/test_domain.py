import pytest

from safeshare.data import Column, Domain, Kind, Role
from safeshare.errors import SchemaError


def test_codes_count_categories_other_and_missing():
    column = Column("sex", Kind.CATEGORICAL, categories=("F", "M"))
    assert column.size == 4
    assert (column.other_code, column.missing_code) == (2, 3)
    assert (
        Column("sex", Kind.CATEGORICAL, categories=("F", "M"), other=False, missing=False).size == 2
    )


def test_numeric_bins_and_labels():
    column = Column("age", Kind.NUMERIC, edges=(0, 18, 65, 100), integer=True)
    assert column.n_values == 3 and column.size == 4 and column.other_code is None
    assert column.labels() == ("0-17", "18-64", "65-100", "(missing)")
    assert Column("x", Kind.NUMERIC, edges=(0, 0.5, 1)).labels()[:2] == ("[0, 0.5)", "[0.5, 1]")


def test_datetime_labels_are_dates():
    column = Column("d", Kind.DATETIME, edges=(0, 31, 59), integer=True, missing=False)
    assert column.labels() == ("[1970-01-01, 1970-02-01)", "[1970-02-01, 1970-03-01]")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"kind": Kind.NUMERIC, "edges": (1,)}, "at least two bin edges"),
        ({"kind": Kind.NUMERIC, "edges": (0, 5, 5)}, "increase strictly"),
        ({"kind": Kind.NUMERIC, "edges": (0, float("inf"))}, "finite"),
        ({"kind": Kind.CATEGORICAL, "categories": ("a", "a")}, "repeat"),
        ({"kind": Kind.CATEGORICAL, "categories": (), "other": False}, "no categories"),
    ],
)
def test_invalid_columns_name_the_problem(kwargs, message):
    with pytest.raises(SchemaError, match=message):
        Column("c", **kwargs)


def test_identifier_and_text_columns_are_not_encodable():
    assert not Column("id", Kind.NUMERIC, role=Role.IDENTIFIER).encodable
    assert not Column("notes", Kind.TEXT).encodable


def test_domain_is_ordered_and_immutable():
    domain = Domain(
        (Column("a", Kind.CATEGORICAL, categories=("x",)), Column("b", Kind.NUMERIC, edges=(0, 1)))
    )
    assert domain.names == ("a", "b")
    assert domain.shape() == (3, 2) and domain.size(["a", "b"]) == 6
    assert domain.project(["b"]).names == ("b",)
    assert domain.drop(["a"]).names == ("b",)
    with pytest.raises(AttributeError):
        domain.columns = ()  # type: ignore[misc]
    with pytest.raises(SchemaError, match="unknown column 'zz'"):
        domain["zz"]


def test_duplicate_names_are_refused():
    with pytest.raises(SchemaError, match="declared twice"):
        Domain((Column("a", Kind.NUMERIC, edges=(0, 1)), Column("a", Kind.NUMERIC, edges=(0, 1))))


def test_round_trip_through_dict():
    domain = Domain(
        (
            Column("a", Kind.ORDINAL, Role.QUASI_IDENTIFIER, categories=("lo", "hi")),
            Column("b", Kind.NUMERIC, Role.SENSITIVE, edges=(0, 1, 2), integer=True, missing=False),
        )
    )
    assert Domain.from_dict(domain.to_dict()) == domain
