"""An anonymized (5-anonymous, generalized) release through the evaluation: planted answers."""

import numpy as np
import pandas as pd

from safeshare.evaluate.assessment import EvaluationOptions
from safeshare.release import Reading
from safeshare.release.anonymize import release_anonymized
from safeshare.release.evaluation import EvaluationFiles, evaluate_files, read_hierarchy

QUASI = ["age", "yrs_married", "children", "rate_marriage"]


def test_a_five_anonymous_release(tmp_path, fair):
    frame, _ = fair
    order = np.random.default_rng(0).permutation(len(frame))
    train, holdout = frame.iloc[order[:3000]], frame.iloc[order[3000:6000]]
    train.to_csv(tmp_path / "train.csv", index=False)
    holdout.to_csv(tmp_path / "holdout.csv", index=False)
    config = {
        "quasi_identifiers": {c: {"hierarchy": "auto"} for c in QUASI},
        "sensitive": ["affairs"],
        "privacy": {"k": 5},
    }
    release_anonymized(train, config=config, out=tmp_path / "anon", reading=Reading(name="fair"))
    released = pd.read_csv(tmp_path / "anon" / "anonymized.csv", dtype=str)
    assert released[QUASI].apply(lambda c: c.str.contains(r"[\[\-*|]", regex=True)).any().any()
    schema = tmp_path / "schema.yaml"
    schema.write_text(
        "columns:\n"
        + "".join(f"  {c}: {{role: quasi_identifier}}\n" for c in QUASI)
        + "  affairs: {role: sensitive}\n"
    )
    files = EvaluationFiles(
        train=tmp_path / "train.csv",
        holdout=tmp_path / "holdout.csv",
        release=tmp_path / "anon" / "anonymized.csv",
        schema=schema,
    )
    options = EvaluationOptions(attacks=200, ml=False)
    result = evaluate_files(files, out=tmp_path / "eval", options=options, seed=0)
    reid = result.assessment.reidentification["release"]
    assert reid.prosecutor_max <= 0.2 and reid.sample_uniques == 0
    assert result.assessment.generalized  # generalized cells were read as sets
    assert not any("'any value'" in w for w in result.warnings)
    exact = next(a for a in result.assessment.attacks if a.name == "linkage (exact matching)")
    assert exact.main.value <= 0.2  # classes of 5: no unique match to claim
    # given on the command line instead of in a schema, the roles are reported as used
    options = EvaluationOptions(
        attacks=50, ml=False, quasi_identifiers=tuple(QUASI), secrets=("affairs",)
    )
    files = EvaluationFiles(
        train=files.train, holdout=files.holdout, release=files.release, schema=None
    )
    given = evaluate_files(files, out=tmp_path / "given", options=options, seed=0)
    roles = {name: c["role"] for name, c in given.evaluation["columns"].items()}
    assert all(roles[c] == "quasi_identifier" for c in QUASI) and roles["affairs"] == "sensitive"


def test_hierarchy_files(tmp_path):
    path = tmp_path / "h.csv"
    path.write_text(
        "Married;spouse present;*\nDivorced;spouse not present;*\nNever;spouse not present;*\n"
    )
    nodes = read_hierarchy(path)
    assert nodes["spouse not present"] == {"Divorced", "Never"}
    assert nodes["*"] == {"Married", "Divorced", "Never"}
