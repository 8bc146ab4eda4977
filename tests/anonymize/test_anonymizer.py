"""The Anonymizer end to end: outputs checked by an independent brute-force checker, bad input."""

import hashlib
import json
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from safeshare.anonymize.anonymizer import Anonymizer
from safeshare.anonymize.config import AnonymizeConfig
from safeshare.anonymize.hierarchy import HierarchyError
from safeshare.anonymize.models import AnonymizationError, NoSolutionError
from safeshare.anonymize.transforms import SecretKey, pseudonymize
from safeshare.data import Column, Domain, Kind, Table
from safeshare.errors import InputError, SchemaError
from tests.conftest import SHARED, needs_shared

KEY = "k" * 32


@pytest.fixture(scope="module")
def adult():
    if SHARED is None:
        pytest.skip("needs ../shared/datasets")
    folder = SHARED / "adult-arx"
    frame = pd.read_csv(folder / "adult.csv", sep=";", dtype=str)
    qis = [c for c in frame.columns if c != "salary-class"]
    hierarchies = {c: {"hierarchy": str(folder / f"adult_hierarchy_{c}.csv")} for c in qis}
    return frame, qis, hierarchies


def brute_force(frame: pd.DataFrame, qis: list[str], sensitive: str, overall: pd.Series):
    """k, distinct l and t (equal distance) of a released frame, by pandas alone."""
    groups = frame.groupby(qis, dropna=False)[sensitive]
    sizes = groups.size()
    distinct = groups.nunique()
    shares = (
        frame.groupby(qis, dropna=False)[sensitive]
        .value_counts(normalize=True)
        .unstack(fill_value=0)
    )
    shares = shares.reindex(columns=overall.index, fill_value=0)
    t = (0.5 * (shares - overall).abs().sum(axis=1)).max()
    return int(sizes.min()), int(distinct.min()), float(t)


@needs_shared
@pytest.mark.parametrize("limit", [0.0, 0.01])
def test_adult_k_l_t_cross_checked(adult, limit):
    frame, qis, hierarchies = adult
    config = {
        "quasi_identifiers": hierarchies,
        "sensitive": ["salary-class"],
        "privacy": {
            "k": 5,
            "l_diversity": {"attribute": "salary-class", "l": 2},
            "t_closeness": {"attribute": "salary-class", "t": 0.25},
        },
        "suppression_limit": limit,
    }
    result = Anonymizer(config).fit(frame)
    assert result.satisfied
    assert result.suppressed <= int(limit * len(frame))
    assert result.rows_out == len(frame) - result.suppressed
    overall = frame["salary-class"].value_counts(normalize=True)
    k, diversity, t = brute_force(result.frame, qis, "salary-class", overall)
    achieved = {m.name: m.achieved for m in result.models}
    assert k >= 5 and diversity >= 2 and t <= 0.25 + 1e-12
    assert achieved["k-anonymity"]["k"] == k
    assert achieved["distinct l-diversity"]["l"] == diversity
    assert achieved["t-closeness"]["t"] == pytest.approx(t)
    assert result.classes.smallest == k


PYCANON = (
    Path(__file__).resolve().parents[2] / "benchmarks" / ".venvs" / "pycanon" / "bin" / "python"
)
CHECK = Path(__file__).resolve().parents[2] / "benchmarks" / "drivers" / "pycanon_check.py"


@needs_shared
@pytest.mark.slow  # (make test-slow sets up pycanon's venv first)
@pytest.mark.skipif(
    not PYCANON.exists(),
    reason="pycanon lives in its own venv (it pins numpy/pandas/scipy): "
    "bash benchmarks/peers/setup_anonymize.sh pycanon",
)
def test_adult_against_pycanon(adult, tmp_path):
    frame, _, hierarchies = adult
    config = {
        "quasi_identifiers": hierarchies,
        "sensitive": ["salary-class"],
        "privacy": {
            "k": 5,
            "l_diversity": {"attribute": "salary-class", "l": 2},
            "t_closeness": {"attribute": "salary-class", "t": 0.25},
        },
        "suppression_limit": 0.01,
    }
    result = Anonymizer(config).fit(frame)
    path = tmp_path / "anonymized.csv"
    result.frame.to_csv(path, index=False)
    done = subprocess.run(
        [str(PYCANON), str(CHECK), str(path)],
        capture_output=True,
        text=True,
        check=True,
        cwd=CHECK.parent,
    )
    checked = json.loads(done.stdout.strip().splitlines()[-1])
    achieved = {m.name: m.achieved for m in result.models}
    assert checked["k"] == achieved["k-anonymity"]["k"]
    assert checked["l"] == achieved["distinct l-diversity"]["l"]
    # pycanon measures t against the released table's distribution, safeshare against the input's
    assert checked["t"] <= 0.25 + 0.01


@needs_shared
def test_adult_local_recoding_is_k_anonymous_and_finer(adult):
    frame, qis, hierarchies = adult
    config = {"quasi_identifiers": hierarchies, "privacy": {"k": 5}, "search": "local"}
    result = Anonymizer(config).fit(frame)
    sizes = result.frame.groupby(qis).size()
    assert sizes.min() >= 5 and result.suppressed == 0
    assert result.quality.overall["precision"] < 0.6875  # beats the full-domain optimum


def test_table_input_and_k_map():
    domain = Domain((Column("zip", Kind.CATEGORICAL, categories=("13053", "13068", "14850")),))
    table = Table({"zip": np.array([0, 0, 1, 1, 2, 2])}, domain)
    config = {"quasi_identifiers": {"zip": {"hierarchy": "mask"}}, "privacy": {"k": 2}}
    result = Anonymizer(config).fit(table)
    assert result.transformation == {"zip": 0}
    population = pd.DataFrame({"zip": ["13053"] * 3 + ["13068"] * 3 + ["14850"]})
    config = {
        "quasi_identifiers": {"zip": {"hierarchy": "mask"}},
        "privacy": {"k_map": {"k": 3, "population": "unused.csv"}},
    }
    result = Anonymizer(config, population=population).fit(table)
    assert result.transformation == {"zip": 2}  # 14850 is alone in the population below 1****
    # (the masking levels 1305* and 13*** merge nothing here and are not in the hierarchy)
    assert result.models[0].achieved["k_map"] >= 3


def test_identifier_transforms(monkeypatch, tmp_path):
    monkeypatch.setenv("TEST_KEY", KEY)
    frame = pd.DataFrame(
        {
            "age": ["30", "31", "32", "33"],
            "name": ["a", "b", "c", "d"],
            "email": ["x@y", "x@y", "z@y", None],
            "phone": ["0612345678"] * 4,
            "visit": ["2024-01-01", "2024-01-05", "2024-02-01", "2024-03-01"],
            "patient": ["p1", "p1", "p2", "p3"],
            "income": ["10", "500", "90", "20"],
        }
    )
    config = {
        "quasi_identifiers": {"age": {"hierarchy": {"intervals": [10]}}},
        "privacy": {"k": 2},
        "transforms": {
            "name": "drop",
            "email": {"pseudonymize": {"key_env": "TEST_KEY"}},
            "phone": {"mask": {"keep": 2}},
            "visit": {"date_shift": {"subject": "patient", "key_env": "TEST_KEY", "max_days": 10}},
            "income": {"top_code": 100},
        },
    }
    out = Anonymizer(config).fit(frame).frame
    assert "name" not in out.columns
    assert out["email"][0] == out["email"][1] != out["email"][2] and out["email"][3] is None
    assert out["phone"][0] == "06********"
    shifted = pd.to_datetime(out["visit"])
    assert (shifted[1] - shifted[0]).days == 4  # one subject, one offset
    assert abs((shifted[0] - pd.Timestamp("2024-01-01")).days) <= 10
    assert out["income"].tolist() == ["10", "100", "90", "20"]


@pytest.mark.parametrize("drop_subject", ["transform", "other_columns"])
def test_a_date_shift_reads_its_subject_before_the_subject_is_dropped(monkeypatch, drop_subject):
    monkeypatch.setenv("TEST_KEY", KEY)
    frame = pd.DataFrame(
        {
            "age": ["30", "31", "32", "33"],
            "patient": ["p1", "p1", "p2", "p3"],
            "visit": ["2024-01-01", "2024-01-05", "2024-02-01", "2024-03-01"],
        }
    )
    transforms: dict = {  # (the drop listed first: the release still reads the subject)
        "patient": "drop",
        "visit": {"date_shift": {"subject": "patient", "key_env": "TEST_KEY", "max_days": 10}},
    }
    if drop_subject == "other_columns":
        del transforms["patient"]
    config = {
        "quasi_identifiers": {"age": {"hierarchy": {"intervals": [10]}}},
        "privacy": {"k": 2},
        "transforms": transforms,
        "other_columns": "drop",
    }
    out = Anonymizer(config).fit(frame).frame
    assert list(out.columns) == ["age", "visit"]
    shifted = pd.to_datetime(out["visit"])
    assert (shifted[1] - shifted[0]).days == 4  # one subject, one offset
    assert shifted[0] != pd.Timestamp("2024-01-01") or shifted[2] != pd.Timestamp("2024-02-01")


def test_a_date_shift_keys_by_the_subject_as_given_whatever_else_transforms_it(monkeypatch):
    monkeypatch.setenv("TEST_KEY", KEY)
    subjects = [f"P{i:04d}" for i in range(12)]
    frame = pd.DataFrame(
        {
            "age": ["30", "31"] * 12,
            "patient": subjects * 2,
            "visit": [f"2024-01-{d:02d}" for d in range(1, 25)],
        }
    )
    shift = {"date_shift": {"subject": "patient", "key_env": "TEST_KEY", "max_days": 30}}
    qi = {"age": {"hierarchy": {"intervals": [10]}}}

    def offsets(transforms: dict, data: pd.DataFrame = frame) -> list[int]:
        config = {"quasi_identifiers": qi, "privacy": {"k": 2}, "transforms": transforms}
        out = Anonymizer(config).fit(data).frame
        moved = pd.to_datetime(out["visit"]) - pd.to_datetime(data["visit"])
        return moved.dt.days.tolist()

    plain = offsets({"visit": shift})
    assert len(set(plain)) > 4  # (12 subjects: offsets of their own)
    # masked first ('P0******' for every one), the offsets were one for all; pseudonymized
    # first, they followed the pseudonym key
    assert offsets({"patient": {"mask": {"keep": 2}}, "visit": shift}) == plain
    monkeypatch.setenv("OTHER_KEY", "f" * 64)
    assert offsets({"patient": {"pseudonymize": {"key_env": "OTHER_KEY"}}, "visit": shift}) == plain
    # records without a subject are not linked by one shared offset
    unknown = frame.assign(patient=[None] * 24)
    assert len(set(offsets({"visit": shift}, unknown))) > 4
    # a date with a time of day keeps it (one read as days only refused it)
    timed = frame.assign(visit=["2024-01-01 10:30:00", *frame["visit"][1:]])
    config = {"quasi_identifiers": qi, "privacy": {"k": 2}, "transforms": {"visit": shift}}
    first = Anonymizer(config).fit(timed).frame["visit"][0]
    assert first.endswith(" 10:30:00")
    assert (pd.Timestamp(first) - pd.Timestamp("2024-01-01 10:30")).days == plain[0]


def test_editing_the_released_frame_leaves_the_input_as_it_was():
    frame = pd.DataFrame({"age": ["30", "31", "32", "33"], "note": list("abcd"), "n": [1.0] * 4})
    before = frame.copy()
    config = {"quasi_identifiers": {"age": {"hierarchy": {"intervals": [10]}}}, "privacy": {"k": 2}}
    out = Anonymizer(config).fit(frame).frame
    out.loc[0, "note"] = "changed"
    out.loc[0, "n"] = 99.0
    pd.testing.assert_frame_equal(frame, before)


def test_pseudonyms_keyed_stable_and_not_reversible_by_hashing():
    domain = [f"{i:04d}" for i in range(10_000)]  # a small identifier domain (PINs)
    values = pd.Series(["0042", "1234", "0042"])
    one = pseudonymize(values, SecretKey(b"a" * 32))
    assert one[0] == one[2] != one[1]
    assert pseudonymize(values, SecretKey(b"a" * 32)).tolist() == one.tolist()
    assert set(pseudonymize(values, SecretKey(b"b" * 32))).isdisjoint(one)
    # a dictionary attack hashes the whole domain: no pseudonym appears among the hashes
    for algorithm in ("sha256", "sha1", "md5"):
        hashes = {hashlib.new(algorithm, v.encode()).hexdigest()[:16] for v in domain}
        assert hashes.isdisjoint(one)
    with pytest.raises(SchemaError, match="at least 16"):
        SecretKey(b"short")
    assert "a" * 32 not in repr(SecretKey(b"a" * 32))


def test_pseudonymize_needs_a_key():
    with pytest.raises(SchemaError, match="exactly one of key_file or key_env"):
        AnonymizeConfig.from_dict(
            {
                "quasi_identifiers": {"a": {"hierarchy": "auto"}},
                "privacy": {"k": 2},
                "transforms": {"email": {"pseudonymize": {}}},
            }
        )
    frame = pd.DataFrame({"a": ["1", "1"], "email": ["x", "y"]})
    config = {
        "quasi_identifiers": {"a": {"hierarchy": "auto"}},
        "privacy": {"k": 2},
        "transforms": {"email": {"pseudonymize": {"key_env": "SAFESHARE_NO_SUCH_KEY"}}},
    }
    with pytest.raises(SchemaError, match=r"'SAFESHARE_NO_SUCH_KEY'.*is not set"):
        Anonymizer(config).fit(frame)


SMALL = pd.DataFrame(
    {
        "zip": ["13053", "13068", "13068", "13053", "14850", "14853"],
        "age": ["21", "25", "31", "33", "45", "48"],
        "disease": ["flu", "flu", "flu", "flu", "cold", "flu"],
    }
)


def test_quasi_identifier_without_hierarchy():
    config = {"quasi_identifiers": ["zip"], "privacy": {"k": 2}}
    with pytest.raises(HierarchyError, match=r"'zip' has no hierarchy.*hierarchy: auto"):
        Anonymizer(config).fit(SMALL)
    config = {"quasi_identifiers": {"zip": {"hierarchy": "auto"}}, "privacy": {"k": 2}}
    assert Anonymizer(config).fit(SMALL).satisfied


def test_hierarchy_missing_a_value_counts_it_and_names_no_value():
    rows = [["13053", "*"], ["13068", "*"], ["14850", "*"]]
    config = {"quasi_identifiers": {"zip": {"hierarchy": rows}}, "privacy": {"k": 2}}
    with pytest.raises(HierarchyError) as err:
        Anonymizer(config).fit(SMALL)
    message = str(err.value)
    assert "1 distinct value(s)" in message and "'zip'" in message
    assert (
        "14853" not in message
        and "13053" not in message
        and "flu" not in message
        and "21" not in message
    )


def test_k_larger_than_the_table():
    config = {"quasi_identifiers": {"zip": {"hierarchy": "mask"}}, "privacy": {"k": 7}}
    with pytest.raises(AnonymizationError, match="k=7 is larger than the table"):
        Anonymizer(config).fit(SMALL)


def test_l_diversity_with_too_few_values():
    config = {
        "quasi_identifiers": {"zip": {"hierarchy": "mask"}},
        "sensitive": ["disease"],
        "privacy": {"k": 2, "l_diversity": {"attribute": "disease", "l": 3}},
    }
    with pytest.raises(AnonymizationError, match="has only 2"):
        Anonymizer(config).fit(SMALL)


def test_no_solution_within_the_limit_reports_the_best_k():
    config = {
        "quasi_identifiers": {"zip": {"hierarchy": "mask", "max_level": 2}},
        "privacy": {"k": 3},
        "suppression_limit": 0.2,
    }
    with pytest.raises(NoSolutionError, match="best achievable k within that limit is 2") as err:
        Anonymizer(config).fit(SMALL)
    assert err.value.best_k == 2


def test_an_l_diversity_no_class_can_reach_is_refused_before_the_search():
    # 30 'a' and 10 'b': one zip holds 10 of each, the other 20 'a'
    frame = pd.DataFrame({"zip": ["11101"] * 20 + ["22202"] * 20, "s": list("ab" * 10 + "a" * 20)})

    def fit(limit: float, **model: object) -> None:
        config = {
            "quasi_identifiers": {"zip": {"hierarchy": "mask"}},
            "sensitive": ["s"],
            "privacy": {"k": 2, "l_diversity": {"attribute": "s", "l": 2, **model}},
            "suppression_limit": limit,
        }
        Anonymizer(config).fit(frame)

    with pytest.raises(AnonymizationError, match=r"r1 / \(r2 \+ \.\.\. \+ rm\) is 3 "):
        fit(0.0, variant="recursive", c=2)
    # with suppression the search decides; here the other zip (20 records) is too many to drop
    with pytest.raises(NoSolutionError, match=r"k=2 alone is reachable \(up to k=40\), so s: rec"):
        fit(0.1, variant="recursive", c=2)
    with pytest.raises(AnonymizationError, match=r"even the whole table reaches only l=1\.75"):
        fit(0.0, variant="entropy")
    with pytest.raises(AnonymizationError, match=r"with 4 records suppressed reaches only l=1\.8"):
        fit(0.1, variant="entropy")
    fit(0.5, variant="entropy")  # the whole table is at l=1.75, yet dropping the other zip works
    fit(1.0, variant="entropy")  # (all may be suppressed: the bound is every value alike)


def test_no_solution_under_a_level_cap_still_says_to_allow_higher_levels():
    zips = [f"1110{i}" for i in range(1, 6)] * 2 + [f"1111{i}" for i in range(1, 6)] * 2
    frame = pd.DataFrame({"zip": zips, "s": ["a"] * 10 + ["b"] * 10})
    config = {
        "quasi_identifiers": {"zip": {"hierarchy": "mask", "max_level": 1}},
        "sensitive": ["s"],
        "privacy": {"k": 2, "l_diversity": {"attribute": "s", "l": 2}},
        "suppression_limit": 0.1,
    }
    with pytest.raises(NoSolutionError, match=r"Allow higher levels \(a max_level lowers the top"):
        Anonymizer(config).fit(frame)
    del config["quasi_identifiers"]["zip"]["max_level"]
    assert Anonymizer(config).fit(frame).transformation == {"zip": 2}  # (which higher levels do)


def test_config_errors_are_one_line():
    with pytest.raises(SchemaError, match="'disease' is used by a privacy model"):
        AnonymizeConfig.from_dict(
            {
                "quasi_identifiers": {"zip": {}},
                "privacy": {"l_diversity": {"attribute": "disease", "l": 2}},
            }
        )
    with pytest.raises(SchemaError, match="at least one privacy model"):
        AnonymizeConfig.from_dict({"quasi_identifiers": {"zip": {}}, "privacy": {}})
    with pytest.raises(SchemaError, match="both quasi-identifier and sensitive"):
        AnonymizeConfig.from_dict(
            {"quasi_identifiers": ["a"], "sensitive": ["a"], "privacy": {"k": 2}}
        )
    with pytest.raises(ValueError, match="do not have"):
        Anonymizer({"quasi_identifiers": {"nope": {"hierarchy": "auto"}}, "privacy": {"k": 2}}).fit(
            SMALL
        )


def test_suppressed_records_masked_or_removed():
    base = {
        "quasi_identifiers": {"zip": {"hierarchy": "mask", "max_level": 0}},
        "privacy": {"k": 2},
        "suppression_limit": 0.5,
    }
    removed = Anonymizer(base).fit(SMALL)
    assert removed.suppressed == 2 and removed.rows_out == 4
    masked = Anonymizer({**base, "suppressed_records": "mask"}).fit(SMALL)
    assert masked.rows_out == 6 and (masked.frame["zip"] == "*").sum() == 2


@needs_shared
def test_adult_recoding_the_suppressed_records(adult):
    frame, qis, hierarchies = adult
    config = {
        "quasi_identifiers": hierarchies,
        "sensitive": ["salary-class"],
        "privacy": {"k": 5, "l_diversity": {"attribute": "salary-class", "l": 2}},
        "suppression_limit": 0.01,
    }
    plain = Anonymizer(config).fit(frame)
    recoded = Anonymizer({**config, "recode_suppressed": True}).fit(frame)
    assert recoded.transformation == plain.transformation
    assert recoded.suppressed < plain.suppressed
    assert recoded.search["recoded_records"] == plain.suppressed - recoded.suppressed
    assert recoded.rows_out == len(frame) - recoded.suppressed
    overall = frame["salary-class"].value_counts(normalize=True)
    k, diversity, _ = brute_force(recoded.frame, qis, "salary-class", overall)
    assert k >= 5 and diversity >= 2
    assert recoded.quality.overall["precision"] <= plain.quality.overall["precision"] + 1e-12


def _zip_population(seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    zips = [f"{a}{b}{c}" for a in ("13", "14", "15") for b in "0123" for c in ("11", "27", "53")]
    return pd.DataFrame({"zip": rng.choice(zips, size=600), "age": rng.integers(18, 80, 600)})


def test_delta_presence_holds_on_the_written_table():
    population = _zip_population(0)
    sample = population.sample(frac=0.3, random_state=1).astype(str).reset_index(drop=True)
    config = {
        "quasi_identifiers": {"zip": {"hierarchy": "mask"}},
        "privacy": {"delta_presence": {"delta_max": 0.35, "population": "unused.csv"}},
        "suppression_limit": 0.05,
    }
    result = Anonymizer(config, population=population.astype(str)).fit(sample)
    written = result.frame["zip"]
    for label, held in written.value_counts().items():  # recounted from the written file
        prefix = label.rstrip("*")
        matched = population["zip"].str.startswith(prefix).sum()
        assert held / matched <= 0.35 + 1e-12, (label, held, matched)
    outcome = next(m for m in result.models if m.name == "delta-presence")
    assert outcome.satisfied and outcome.achieved["delta_max"] <= 0.35
    assert result.transformation["zip"] >= 1  # the raw ZIP codes break it somewhere


def test_delta_presence_refuses_data_that_are_not_a_sample_of_the_population():
    population = _zip_population(0)
    everyone = population[population["zip"] == population["zip"][0]].astype(str)
    sample = pd.concat([everyone, everyone.head(1)])  # one person more than the population has
    config = {
        "quasi_identifiers": {"zip": {"hierarchy": "mask"}},
        "privacy": {"delta_presence": {"delta_max": 0.5, "population": "unused.csv"}},
    }
    with pytest.raises(InputError, match=r"match no record left in the delta-presence population"):
        Anonymizer(config, population=population.astype(str)).fit(sample)
    with pytest.raises(SchemaError, match=r"delta_min .* is above delta_max"):
        AnonymizeConfig.from_dict({**config, "privacy": {"delta_presence": {
            "delta_min": 0.6, "delta_max": 0.5, "population": "p.csv"}}})  # fmt: skip
    with pytest.raises(SchemaError, match="different population tables"):
        AnonymizeConfig.from_dict({**config, "privacy": {
            "k_map": {"k": 2, "population": "a.csv"},
            "delta_presence": {"delta_max": 0.5, "population": "b.csv"}}})  # fmt: skip


def test_microaggregation_gives_each_written_class_its_mean():
    rng = np.random.default_rng(5)
    frame = pd.DataFrame(
        {
            "zip": rng.choice(["13053", "13068", "14850", "14853"], 200),
            "age": rng.integers(20, 70, 200).astype(str),
            "hours": rng.integers(10, 60, 200).astype(str),
            "job": rng.choice(["a", "b", "c"], 200),
        }
    )
    config = {
        "quasi_identifiers": {"zip": {"hierarchy": "mask"}, "age": {"hierarchy": "auto"}},
        "transforms": {"hours": {"microaggregate": "mean"}, "job": {"microaggregate": "mode"}},
        "privacy": {"k": 5},
        "suppression_limit": 0.05,
        "suppressed_records": "mask",
    }
    result = Anonymizer(config).fit(frame)
    out = result.frame
    for _, written in out.groupby(["zip", "age"]):  # recounted from the written table
        original = frame.loc[written.index]
        assert written["hours"].nunique() == 1 and len(written) >= 5
        assert float(written["hours"].iloc[0]) == pytest.approx(
            original["hours"].astype(float).mean(), abs=1e-4
        )
        counts = original["job"].value_counts()
        assert written["job"].iloc[0] == min(counts[counts == counts.max()].index)
    assert result.columns["hours"]["transform"] == "microaggregate (mean)"
    frame.loc[3, "hours"] = "forty"
    with pytest.raises(InputError, match="microaggregate: mean needs numbers, but column 'hours'"):
        Anonymizer(config).fit(frame)
    with pytest.raises(InputError, match="use --engine numpy"):
        Anonymizer(config).plan(frame, np.ones(len(frame), dtype=np.int64), list(frame.columns))


def test_the_classification_model_keeps_the_target_predictable(adult):
    frame, qis, hierarchies = adult
    base = {
        "quasi_identifiers": hierarchies,
        "sensitive": ["salary-class"],
        "privacy": {"k": 5},
        "suppression_limit": 0.01,
    }
    by_precision = Anonymizer({**base, "target": "salary-class"}).fit(frame)  # (reported)
    config = {**base, "quality": "classification", "target": "salary-class"}
    by_class = Anonymizer(config).fit(frame)
    score = by_class.quality.overall["classification"]
    assert score == pytest.approx(by_class.search["score"])
    assert score < by_precision.quality.overall["classification"]
    # recounted from the written table: records off their class's majority, plus suppressed
    written = by_class.frame.groupby(qis, dropna=False)["salary-class"]
    minority = int((written.size() - written.agg(lambda v: v.value_counts().max())).sum())
    assert score == pytest.approx((minority + by_class.suppressed) / len(frame))
    with pytest.raises(SchemaError, match="needs target"):
        AnonymizeConfig.from_dict({**base, "quality": "classification"})
    with pytest.raises(SchemaError, match="must be listed under sensitive"):
        AnonymizeConfig.from_dict({**base, "sensitive": [], "target": "salary-class"})
