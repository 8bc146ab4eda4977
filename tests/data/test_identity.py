"""The ledger's identity of a dataset: its records in any order, however the file is written."""

from pathlib import Path

import pandas as pd
import pytest

from safeshare.data import identity
from safeshare.data.identity import Identity, file_identity, records_identity
from safeshare.data.readers import fingerprint_file

PEOPLE = "age,sex,hours,city\n39,M,40,Lyon\n50,F,13,?\n38,M,40,Paris\n53,F,,Nice\n28,F,40,Lyon\n"


@pytest.fixture
def people(tmp_path: Path) -> Path:
    path = tmp_path / "people.csv"
    path.write_text(PEOPLE, encoding="utf-8")
    return path


def _frame(path: Path) -> pd.DataFrame:
    return pd.read_csv(path, dtype=str, keep_default_na=False)


def _resaved(people: Path, tmp_path: Path, how: str) -> Path:
    frame = _frame(people)
    out = tmp_path / f"resaved-{how}.csv"
    if how == "rows shuffled, columns reversed":
        frame.sample(frac=1, random_state=3)[frame.columns[::-1]].to_csv(out, index=False)
    elif how == "semicolons, CRLF, every field quoted":
        frame.to_csv(out, index=False, sep=";", lineterminator="\r\n", quoting=1)
    elif how == "numbers as floats, missing as NA":
        typed = pd.read_csv(people)  # hours -> float (40.0), '?' and '' -> NaN
        typed.to_csv(out, index=False, na_rep="NA")
    elif how == "header renamed, trailing blank line":
        text = PEOPLE.replace("age,sex,hours,city", "Age,Gender,Hours,Town") + "\n"
        out.write_text(text, encoding="utf-8")
    elif how == "parquet":
        out = tmp_path / "people.parquet"
        pd.read_csv(people).to_parquet(out)
    return out


@pytest.mark.parametrize(
    "how",
    [
        "rows shuffled, columns reversed",
        "semicolons, CRLF, every field quoted",
        "numbers as floats, missing as NA",
        "header renamed, trailing blank line",
        "parquet",
    ],
)
def test_the_same_records_resaved_keep_their_identity(people, tmp_path, how):
    resaved = _resaved(people, tmp_path, how)
    assert fingerprint_file(resaved) != fingerprint_file(people)  # the bytes differ
    assert file_identity(resaved) == file_identity(people)


@pytest.mark.parametrize(
    "edit",
    [
        "one value changed",
        "one record dropped",
        "one record repeated",
        "two values swapped between records",
    ],
)
def test_other_records_get_another_identity(people, tmp_path, edit):
    frame = _frame(people)
    if edit == "one value changed":
        frame.loc[2, "age"] = "37"
    elif edit == "one record dropped":
        frame = frame.drop(index=4)
    elif edit == "one record repeated":
        frame = pd.concat([frame, frame.iloc[[0]]])
    else:  # the sums over all values are unchanged: only the records tell it apart
        frame.loc[0, "age"], frame.loc[1, "age"] = frame.loc[1, "age"], frame.loc[0, "age"]
    edited = tmp_path / "edited.csv"
    frame.to_csv(edited, index=False)
    assert file_identity(edited) != file_identity(people)


def test_a_file_read_in_chunks_has_the_identity_of_the_table_in_memory(
    people, tmp_path, monkeypatch
):
    monkeypatch.setattr(identity, "_CHUNK_ROWS", 2)
    assert file_identity(people) == records_identity(_frame(people))
    folder = tmp_path / "parts"
    folder.mkdir()
    typed = pd.read_csv(people)
    typed.iloc[:3].to_parquet(folder / "part-0.parquet")
    typed.iloc[3:].to_parquet(folder / "part-1.parquet")
    assert file_identity(folder) == file_identity(people)


def test_the_bytes_hash_is_kept_as_what_the_ledger_knew_the_file_by(people):
    known = Identity.of_file(people)
    assert known.formerly == (fingerprint_file(people),)
    assert known.card() == {"sha256": fingerprint_file(people), "records": known.records}
