import pandas as pd

from safeshare.data import Kind
from safeshare.data.inference import infer_columns


def guesses(frame: pd.DataFrame) -> dict:
    return {g.name: g for g in infer_columns(frame)}


def test_direct_identifiers_are_spotted():
    n = 40
    frame = pd.DataFrame(
        {
            "email": [f"user{i}@example.org" for i in range(n)],
            "phone": [f"+44 20 7946 {1000 + i}" for i in range(n)],
            "patientID": [f"P{i:05d}" for i in range(n)],
            "full_name": [f"Person {i}" for i in range(n)],
            "row": [str(i) for i in range(n)],
            "notes": [f"patient reported pain in the {i} knee after a fall" for i in range(n)],
            "token": [f"zq{i * 7919}" for i in range(n)],
            "sex": ["F", "M"] * (n // 2),
            "age": [str(20 + i % 30) for i in range(n)],
            "visit": [f"2021-03-{1 + i % 28:02d}" for i in range(n)],
        }
    )
    found = guesses(frame)
    for name in ["email", "phone", "patientID", "full_name", "row", "notes", "token"]:
        assert found[name].identifier, name
    assert found["email"].identifier == "e-mail addresses"
    assert found["row"].identifier == "every value distinct (a record number)"
    assert found["notes"].identifier == "free text"
    assert found["token"].identifier == "near-unique values"
    assert found["sex"].identifier is None and found["sex"].kind is Kind.CATEGORICAL
    assert (
        found["age"].kind is Kind.NUMERIC
        and found["age"].integer
        and found["age"].identifier is None
    )
    assert found["visit"].kind is Kind.DATETIME and found["visit"].identifier is None


def test_ordinary_columns_are_kept():
    frame = pd.DataFrame(
        {"idp": ["0", "1"] * 30, "income": [str(1000.5 * (i % 7)) for i in range(60)]}
    )
    found = guesses(frame)
    assert found["idp"].identifier is None  # not an "id" column
    assert found["income"].kind is Kind.NUMERIC and not found["income"].integer
