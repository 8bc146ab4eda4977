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


def test_columns_named_as_parts_of_a_name_are_dropped():
    """Given and family names are direct identifiers even when their values repeat."""
    n = 60
    names = ["ann", "bob", "cy"]
    frame = pd.DataFrame(
        {
            column: [names[i % 3] for i in range(n)]
            for column in ["first", "Last", "given_name", "surname", "fname", "first_visit"]
        }
    )
    found = guesses(frame)
    for name in ["first", "Last", "given_name", "surname", "fname"]:
        assert found[name].identifier == "name of a direct identifier", name
    assert found["first_visit"].identifier is None


def test_a_date_column_with_a_stray_value_stays_dates_not_phone_numbers():
    """ISO dates pass the phone-number pattern; one value that is not a date must not make the
    column "phone numbers" (dropped): it stays a date column, and the stray value is refused
    by name before any spend (see test_release)."""
    dates = [f"2013-{1 + i % 12:02d}-{1 + i % 28:02d}" for i in range(200)]
    found = guesses(pd.DataFrame({"c_jail_in": [*dates, "unknown"]}))
    assert found["c_jail_in"].kind is Kind.DATETIME and found["c_jail_in"].identifier is None


def test_a_numeric_column_with_a_stray_text_value_stays_numeric():
    """One "unknown" among 200 ages must not turn the column categorical (its ages folded by
    the category threshold): it stays numeric, and the stray value is refused by name before
    any spend (see test_release)."""
    ages = [str(20 + i % 50) for i in range(200)]
    found = guesses(pd.DataFrame({"age": [*ages, "unknown"], "code": [*map(str, range(200)), "x"]}))
    assert found["age"].kind is Kind.NUMERIC and found["age"].integer
    assert found["code"].identifier == "every value distinct (a record number)"
