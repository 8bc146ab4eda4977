import pytest

from safeshare.data import Kind, Role, Schema
from safeshare.data.examples import EXAMPLES, load_example, schema_path
from safeshare.errors import SchemaError

YAML = """
missing_values: ["", "?"]
columns:
  patient_id: {role: identifier}
  age: {kind: numeric, min: 0, max: 100, bins: 10, integer: true, role: quasi_identifier}
  sex: {kind: categorical, categories: [F, M], role: quasi_identifier}
  admitted: {kind: datetime, min: 2020-01-01, max: 2024-12-31, bins: 6}
  diagnosis: {kind: categorical, role: sensitive}
  children: {kind: numeric, min: 0, max: 5, integer: true}
  notes: {kind: text}
"""


def test_load_yaml(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(YAML)
    schema = Schema.load(path)
    assert schema.names == (
        "patient_id",
        "age",
        "sex",
        "admitted",
        "diagnosis",
        "children",
        "notes",
    )
    assert schema.missing_values == ("", "?")
    assert schema.column("sex").size == 4
    age = schema.column("age")
    assert age.role is Role.QUASI_IDENTIFIER and age.bounds == (0.0, 100.0) and age.n_values <= 10
    assert schema.column("children").n_values == 6  # small integer range: one bin per value
    assert schema.column("admitted").kind is Kind.DATETIME
    assert not schema.column("patient_id").encodable
    assert not schema.is_complete()  # diagnosis has no categories
    with pytest.raises(SchemaError, match=r"\['diagnosis'\] have no public domain"):
        schema.domain()


@pytest.mark.parametrize(
    ("columns", "message"),
    [
        ({"a": {"kind": "numerical"}}, "columns.a.kind"),
        ({"a": {"kind": "numeric", "min": 5, "max": 1}}, "above max"),
        ({"a": {"kind": "numeric", "categories": ["x"]}}, "takes no categories"),
        ({"a": {"kind": "categorical", "bins": 3}}, "takes no min/max/bins"),
        ({"a": {"kind": "numeric", "bins": 0}}, r"bins must lie in \[1, 100000\], got 0"),
        ({"a": {"kind": "numeric", "colour": "red"}}, "columns.a.colour"),
    ],
)
def test_invalid_schemas_name_the_field(columns, message):
    with pytest.raises(SchemaError, match=message):
        Schema.from_dict({"columns": columns})


def test_not_a_schema(tmp_path):
    with pytest.raises(SchemaError, match="top-level 'columns:'"):
        Schema.from_dict(["a"])
    bad = tmp_path / "bad.yaml"
    bad.write_text("columns: [unclosed")
    with pytest.raises(SchemaError, match="not valid YAML"):
        Schema.load(bad)
    with pytest.raises(SchemaError, match="does not exist"):
        Schema.load(tmp_path / "none.yaml")


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_packaged_example_schemas_cover_their_data(name):
    frame, schema = load_example(name)
    assert schema_path(name).is_file()
    domain = schema.domain()
    assert set(domain.names) == set(frame.columns)
    from safeshare.data import Table

    _, report = Table.from_frame(frame, domain)
    assert not any(c.other or c.clipped_low or c.clipped_high for c in report.columns.values())


def test_a_date_columns_layout_is_declared_with_format(tmp_path):
    from safeshare.data import Column

    path = tmp_path / "s.yaml"
    path.write_text(
        "columns:\n  admitted: {kind: datetime, min: 2012-01-01, max: 2016-12-31, format: '%d/%m/%Y'}\n"
    )
    admitted = Schema.load(path).column("admitted")
    assert admitted.date_format == "%d/%m/%Y"
    assert Column.from_dict(admitted.to_dict()) == admitted
    for wrong in (
        "{kind: numeric, min: 0, max: 9, format: '%d'}",
        "{kind: datetime, format: dd/mm}",
    ):
        path.write_text(f"columns:\n  x: {wrong}\n")
        with pytest.raises(SchemaError, match="format"):
            Schema.load(path)
