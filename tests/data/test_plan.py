import pandas as pd
import pytest

from safeshare.data import Kind, Role, Schema
from safeshare.data.plan import Source, decide_columns, infer_column_unsafe
from safeshare.errors import SchemaError


def frame() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "name": [f"Person {i}" for i in range(30)],
            "sex": ["F", "M", "F"] * 10,
            "age": [str(20 + i) for i in range(30)],
            "notes": ["x"] * 30,
        }
    )


def test_sources_follow_the_schema():
    schema = Schema.from_dict(
        {
            "columns": {
                "sex": {
                    "kind": "categorical",
                    "categories": ["F", "M"],
                    "role": "quasi_identifier",
                },
                "age": {"kind": "numeric"},
                "notes": {"kind": "text"},
            }
        }
    )
    decisions = {d.name: d for d in decide_columns(frame(), schema)}
    assert decisions["sex"].source is Source.SCHEMA and not decisions["sex"].kind_guessed
    assert decisions["age"].source is Source.DP
    assert (
        decisions["notes"].source is Source.DROPPED
        and decisions["notes"].reason == "free text: not modelled"
    )
    assert decisions["name"].source is Source.DROPPED and decisions["name"].role is Role.IDENTIFIER
    unsafe = {d.name: d for d in decide_columns(frame(), schema, unsafe=True)}
    assert unsafe["age"].source is Source.NOT_DP


def test_schema_columns_absent_from_data():
    schema = Schema.from_dict({"columns": {"zip": {"kind": "categorical"}}})
    with pytest.raises(SchemaError, match=r"\['zip'\] are declared .* but absent"):
        decide_columns(frame(), schema)


def test_nothing_left_to_release():
    with pytest.raises(SchemaError, match="nothing is left"):
        decide_columns(pd.DataFrame({"email": [f"a{i}@b.com" for i in range(30)]}))


def test_unsafe_inference_reads_values_directly():
    decision = next(d for d in decide_columns(frame(), unsafe=True) if d.name == "age")
    column = infer_column_unsafe(frame()["age"], decision)
    assert column.kind is Kind.NUMERIC and column.bounds[0] == 20
    sex = next(d for d in decide_columns(frame(), unsafe=True) if d.name == "sex")
    assert infer_column_unsafe(frame()["sex"], sex).categories == ("F", "M")
