from pathlib import Path

import pytest

from safeshare.data import read_frame
from safeshare.data.identity import Identity
from safeshare.data.readers import MISSING_TOKENS, Layout, sniff_csv
from safeshare.data.schema import Schema
from safeshare.errors import InputError, InputFileNotFoundError, SchemaError
from tests.conftest import SHARED, needs_shared


def write(tmp_path: Path, text: str, name: str = "t.csv", encoding: str = "utf-8") -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode(encoding))
    return path


@pytest.mark.parametrize("sep", [",", ";", "\t", "|"])
def test_delimiter_is_sniffed(tmp_path, sep):
    path = write(tmp_path, f"a{sep}b{sep}c\n1{sep}x{sep}2.5\n3{sep}y{sep}4\n")
    frame = read_frame(path)
    assert list(frame.columns) == ["a", "b", "c"]
    assert frame["b"].tolist() == ["x", "y"]


def test_bom_quotes_and_missing_tokens(tmp_path):
    text = '\ufeffname,city,age\n"Smith, J",Paris,?\n"O""Brien",,NA\nLee, Rome , 41\n'
    frame = read_frame(write(tmp_path, text))
    assert list(frame.columns) == ["name", "city", "age"]
    assert frame["name"].tolist() == ["Smith, J", 'O"Brien', "Lee"]
    assert frame["city"].isna().tolist() == [False, True, False]
    assert frame["age"].isna().tolist() == [True, True, False]
    assert frame["city"].iloc[2] == "Rome"


def test_headerless_file_takes_given_names(tmp_path):
    path = write(tmp_path, "39, State-gov, 77516\n50, Private, 83311\n")
    assert list(read_frame(path).columns) == ["column_1", "column_2", "column_3"]
    assert list(read_frame(path, names=["age", "work", "w"]).columns) == ["age", "work", "w"]


def test_a_table_of_free_texts_keeps_its_header(tmp_path):
    """No numbers and no column of one value length: the names alone say it is a header."""
    rows = [("ham", "Ok lar... Joking wif u oni"), ("spam", "Free entry in 2 a wkly comp!"),
            ("ham", "U dun say so early hor"), ("ham", "Nah I don't think he goes")]  # fmt: skip
    texts = "".join(f'{label},"{text}"\n' for label, text in rows)
    frame = read_frame(write(tmp_path, "label,text message\n" + texts))
    assert list(frame.columns) == ["label", "text message"] and len(frame) == 4
    headerless = read_frame(write(tmp_path, texts, name="headerless.csv"))
    assert list(headerless.columns) == ["column_1", "column_2"] and len(headerless) == 4
    # a name that reappears below is a value, not a header
    repeated = read_frame(write(tmp_path, "ham,again\n" + texts, name="again.csv"))
    assert list(repeated.columns) == ["column_1", "column_2"] and len(repeated) == 5


def test_names_over_columns_of_one_value_are_a_header(tmp_path):
    """The sniffer votes on value lengths: `x` over `a, a, ...` looked like a value to it."""
    rows = "a,N/A,k\n" * 5
    frame = read_frame(write(tmp_path, "x,y,z\n" + rows))
    assert list(frame.columns) == ["x", "y", "z"] and len(frame) == 5
    headerless = read_frame(write(tmp_path, rows, name="headerless.csv"))
    assert list(headerless.columns) == ["column_1", "column_2", "column_3"]
    assert len(headerless) == 5


def test_parquet(tmp_path):
    import pandas as pd

    path = tmp_path / "t.parquet"
    pd.DataFrame({"a": [1, 2], "b": ["x", "?"]}).to_parquet(path)
    frame = read_frame(path)
    assert frame["b"].isna().tolist() == [False, True]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", "is empty"),
        ("   \n\n", "is empty"),
        ("a,b,c\n", "header but no rows"),
        ("a,b\n1,2\n3,4,5,6\n", "not a well-formed table at line 3"),
        ("a,,c\n1,2,3\n", "without a name"),
        ("a,b,c\n1,2,3\n4,5\n6,7,8\n", "at line 3: 2 field\\(s\\) where the header has 3"),
        ("a,b,c\n1,2,3\n4;5;6\n6,7,8\n", "at line 3: 1 field\\(s\\) .* one delimiter"),
        # a stray delimiter on the first row: read, it would shift every column by one (the
        # first column taken as the index); on every row, the same
        ("visit,ssn,sex\n2024-01-01,513653999,F,\n2024-01-02,378009742,M\n", "at line 2: 4 f"),
        ("a,b\n1,2,\n3,4,\n", "at line 2: 3 field\\(s\\) where the header has 2"),
        ("age,score,sex,score\n30,5,M,5\n40,6,F,6\n", "two columns named 'score'"),
    ],
)
def test_bad_tables_get_one_clear_line(tmp_path, content, message):
    with pytest.raises(InputError, match=message):
        read_frame(write(tmp_path, content))


def test_binary_and_non_utf8_files(tmp_path):
    binary = tmp_path / "x.csv"
    binary.write_bytes(b"PK\x03\x04\x00\x00binary")
    with pytest.raises(InputError, match="binary data"):
        read_frame(binary)
    with pytest.raises(InputError, match="not UTF-8"):
        read_frame(write(tmp_path, "name\nJos\u00e9\n", encoding="latin-1"))


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(InputFileNotFoundError, match="does not exist"):
        read_frame(tmp_path / "nope.csv")
    with pytest.raises(InputError, match="is a directory"):
        read_frame(tmp_path)


def test_errors_never_quote_values(tmp_path):
    secret = "Alice-Secret-Diagnosis"
    path = write(tmp_path, f"a,b\n{secret},2\n{secret},3,4\n")
    with pytest.raises(InputError) as caught:
        read_frame(path)
    assert secret not in str(caught.value)


@needs_shared
def test_uci_adult_raw_file():
    frame = read_frame(SHARED / "adult-uci" / "adult.data")
    assert frame.shape == (32561, 15)
    assert frame["column_2"].isna().sum() == 1836  # '?' workclass values are missing
    assert frame["column_1"].iloc[0] == "39"


@needs_shared
def test_arx_adult_semicolons():
    frame = read_frame(SHARED / "adult-arx" / "adult.csv")
    assert frame.shape == (30162, 9)
    assert frame.columns[0] == "sex"


def test_a_numeric_looking_header_is_a_header(tmp_path):
    frame = read_frame(write(tmp_path, "id,2019,2020\n1,5,6\n2,7,8\n3,9,1\n"))
    assert list(frame.columns) == ["id", "2019", "2020"] and len(frame) == 3


def _words_without_header(tmp_path: Path) -> tuple[Path, str]:
    """A headerless file whose first record looks like names (it never recurs below): the
    detection takes it for a header, which only the owner's word can correct."""
    rows = "".join(f"{a},{b}\n" for a, b in [("north", "red"), ("south", "blue")] * 4)
    return write(tmp_path, "Zeta Quadrant,Mauve\n" + rows, name="words.csv"), rows


def test_the_owners_word_on_the_header_is_not_guessed(tmp_path):
    path, _ = _words_without_header(tmp_path)
    detected = read_frame(path)
    assert list(detected.columns) == ["Zeta Quadrant", "Mauve"] and len(detected) == 8
    assert sniff_csv(path) == (",", True)
    headerless = read_frame(path, header=False)
    assert list(headerless.columns) == ["column_1", "column_2"] and len(headerless) == 9
    assert headerless["column_1"].iloc[0] == "Zeta Quadrant"
    assert sniff_csv(path, header=False) == (",", False)
    named = Layout(header=False, names=("region", "colour")).read(path)
    assert list(named.columns) == ["region", "colour"] and len(named) == 9
    # the other way: a first row the detection reads as a record, declared a header
    numbers = write(tmp_path, "1,2\n3,4\n5,6\n", name="numbers.csv")
    assert list(read_frame(numbers).columns) == ["column_1", "column_2"]
    declared = read_frame(numbers, header=True)
    assert list(declared.columns) == ["1", "2"] and len(declared) == 2


def test_a_headerless_file_read_as_one_is_the_dataset_of_its_copy_with_a_header(tmp_path):
    """The ledger charges records: --no-header reads the same records as the file with a
    header row added; the misread (first record as names) is another dataset, one record short."""
    path, rows = _words_without_header(tmp_path)
    with_header = write(tmp_path, "region,colour\nZeta Quadrant,Mauve\n" + rows, name="h.csv")
    assert Identity.of_file(path, header=False).records == Identity.of_file(with_header).records
    assert Identity.of_file(path).records != Identity.of_file(with_header).records


def test_a_schema_declares_the_header_and_the_command_line_overrides_it():
    columns = {"columns": {"region": {}, "colour": {}}}
    assert Schema.layout_of(Schema.from_dict(columns)).header is None
    declared = Schema.from_dict({"header": False, **columns})
    assert Schema.layout_of(declared) == Layout(False, ("region", "colour"), MISSING_TOKENS)
    assert Schema.layout_of(declared, True).header is True
    with pytest.raises(SchemaError, match="header"):
        Schema.from_dict({"header": "sometimes", **columns})


def test_a_carriage_return_in_a_field_is_one_clear_line_when_sniffed_too(tmp_path):
    # (anonymize sniffs the delimiter it writes with before reading the table)
    path = tmp_path / "cr.csv"
    path.write_bytes(b"a,b,c\n1,x\ry,3\n2,z,4\n")
    for read in (read_frame, sniff_csv):
        with pytest.raises(InputError, match=r"not a well-formed table .*quote fields"):
            read(path)


@needs_shared
def test_a_headerless_file_of_labels_and_texts_is_detected_as_such():
    # the standard library's sniffer, left to guess the dialect of texts, split them at spaces
    # and took the SMS spam collection's first record for a header
    assert SHARED is not None
    for name in ("sms_spam_collection.tsv", "uci_sentiment_imdb_labelled.tsv"):
        path = SHARED / "text" / name
        assert sniff_csv(path) == ("\t", False)
        assert list(read_frame(path).columns) == ["column_1", "column_2"]


@pytest.mark.parametrize(
    ("content", "header"),
    [
        # a name over values of its own length but of another kind is a name
        ("visit_date\n" + "".join(f"2024-01-{d:02d}\n" for d in range(1, 29)), True),
        ("admit_date,discharge_date\n" + "".join(f"2024-01-{d:02d},2024-02-{d:02d}\n" for d in range(1, 29)), True),
        ("text,tag\n" + "".join(f'"loved it, would buy {i}",{"pos" if i % 2 else "neg"}\n' for i in range(30)), True),
        ("id|text\n" + "".join(f"x{i}|this is the text number {i} here\n" for i in range(10)), True),
        # a first record whose values recur below is a record
        ("".join(f"{['pos', 'neg'][i % 2]},{['red', 'tan'][i % 2]}\n" for i in range(30)), False),
    ],
    ids=["dates", "two-dates", "text-and-tag", "id-and-text", "labels-no-header"],
)  # fmt: skip
def test_a_header_of_names_over_values_of_another_kind_is_detected(tmp_path, content, header):
    assert sniff_csv(write(tmp_path, content))[1] is header
