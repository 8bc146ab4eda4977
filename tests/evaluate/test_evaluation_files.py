"""`safeshare evaluate` end to end, and bad input: clear errors, nothing written."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import typer
from typer.testing import CliRunner

from safeshare.cli.evaluate import evaluate_command
from safeshare.errors import InputError, OutputExistsError, SafeshareError
from safeshare.evaluate.assessment import EvaluationOptions
from safeshare.evaluate.attack_risk import EvaluationInputError
from safeshare.release.evaluation import EvaluationFiles, evaluate_files


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory, fair) -> dict[str, Path]:
    frame, _ = fair
    folder = tmp_path_factory.mktemp("evaluate")
    order = np.random.default_rng(0).permutation(len(frame))
    parts = {"train": order[:3000], "holdout": order[3000:6000], "release": order[:1500]}
    paths = {}
    for name, rows in parts.items():
        paths[name] = folder / f"{name}.csv"
        frame.iloc[rows].to_csv(paths[name], index=False)
    paths["schema"] = folder / "schema.yaml"
    paths["schema"].write_text(
        "columns:\n"
        "  rate_marriage: {kind: ordinal, categories: [1, 2, 3, 4, 5], role: quasi_identifier}\n"
        "  age: {kind: numeric, min: 17, max: 43, role: quasi_identifier}\n"
        "  yrs_married: {kind: numeric, min: 0, max: 23, role: quasi_identifier}\n"
        "  children: {kind: numeric, min: 0, max: 6, role: quasi_identifier}\n"
        "  affairs: {kind: numeric, min: 0, max: 60, role: sensitive}\n"
    )
    return paths


def run(
    files: dict[str, Path], out: Path, schema: Path | None = None, auxiliary: Path | None = None
):
    inputs = EvaluationFiles(
        train=files["train"],
        holdout=files["holdout"],
        release=files["release"],
        schema=schema,
        auxiliary=auxiliary,
    )
    options = EvaluationOptions(attacks=150, ml=False)
    return evaluate_files(inputs, out=out, options=options, seed=0)


def write(frame: pd.DataFrame, path: Path) -> Path:
    frame.to_csv(path, index=False)
    return path


def test_a_copying_release_end_to_end(files, tmp_path):
    result = run(files, tmp_path / "eval")
    written = json.loads((tmp_path / "eval" / "evaluation.json").read_text())
    assert written["headline"]["risk"]["significant_attacks"]
    assert written["memorization"]["dcr_share_closer_to_train"]["value"] > 0.6
    assert written["domain_source"] == "training and holdout data, not DP"
    assert "quasi-identifier" in " ".join(result.warnings)  # none declared without a schema
    html = (tmp_path / "eval" / "report.html").read_text()
    assert "<script" not in html and "http://" not in html.replace("http://www.w3.org", "")


def test_schema_roles_and_an_auxiliary_table(files, tmp_path):
    frame = pd.read_csv(files["train"]).head(300)
    holdout = pd.read_csv(files["holdout"]).head(300)
    aux = pd.concat([frame, holdout])[["rate_marriage", "age", "yrs_married", "children", "educ"]]
    aux.insert(0, "name", [f"person {i}" for i in range(len(aux))])
    path = write(aux, tmp_path / "aux.csv")
    result = run(files, tmp_path / "eval", schema=files["schema"], auxiliary=path)
    assert result.evaluation["quasi_identifiers"]["source"] == "schema"
    linkage = [a for a in result.evaluation["attacks"] if a["name"].startswith("linkage")]
    assert linkage and all(a["details"]["auxiliary"] for a in linkage)


def test_the_cli_command(files, tmp_path):
    app = typer.Typer()
    app.command("evaluate")(evaluate_command)
    app.command("other")(lambda: None)
    out = tmp_path / "cli"
    args = [
        "evaluate",
        "--train",
        str(files["train"]),
        "--holdout",
        str(files["holdout"]),
        "--release",
        str(files["release"]),
        "--out",
        str(out),
        "--attacks",
        "100",
        "--seed",
        "1",
        "--no-ml",
        "--secret",
        "affairs",
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "inference of affairs" in result.output and (out / "report.html").exists()


def test_columns_that_differ_are_named(files, tmp_path):
    release = pd.read_csv(files["release"]).drop(columns=["educ"]).assign(extra=1)
    path = write(release, tmp_path / "release.csv")
    with pytest.raises(InputError, match=r"lacks \['educ'\] and has \['extra'\]"):
        run({**files, "release": path}, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_mixed_types_and_empty_columns(files, tmp_path):
    train = pd.read_csv(files["train"], dtype=str)
    mixed = train.copy()
    mixed.loc[:5, "religious"] = "unknown"
    with pytest.raises(InputError, match="'religious' mixes types in the train file: 6 of"):
        run({**files, "train": write(mixed, tmp_path / "mixed.csv")}, tmp_path / "out")
    empty = train.assign(religious="")
    with pytest.raises(InputError, match="'religious' has no values in the train file"):
        run({**files, "train": write(empty, tmp_path / "empty.csv")}, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_a_release_with_no_rows(files, tmp_path):
    header = pd.read_csv(files["release"]).head(0)
    with pytest.raises(InputError, match="no rows"):
        run({**files, "release": write(header, tmp_path / "none.csv")}, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_overlapping_train_and_holdout_warns(files, tmp_path):
    holdout = pd.read_csv(files["train"]).head(1000)
    result = run({**files, "holdout": write(holdout, tmp_path / "h.csv")}, tmp_path / "out")
    assert any("voids the comparison" in w for w in result.warnings)
    clean = run(files, tmp_path / "clean")
    assert not any("voids" in w for w in clean.warnings)


def test_more_attacks_than_records(files, tmp_path):
    small = pd.read_csv(files["release"]).head(40)
    with pytest.raises(EvaluationInputError, match="at most 40"):
        run({**files, "release": write(small, tmp_path / "r.csv")}, tmp_path / "out")
    assert not (tmp_path / "out").exists()
    assert issubclass(EvaluationInputError, SafeshareError)


def test_an_existing_output_is_refused(files, tmp_path):
    (tmp_path / "out").mkdir()
    with pytest.raises(OutputExistsError):
        run(files, tmp_path / "out")


def _cli(args: list[str], capsys) -> tuple[int, str]:
    from safeshare.cli import main

    code = main(["evaluate", *map(str, args)])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_linkability_sources_neighbours_and_resolution_from_the_cli(files, tmp_path, capsys):
    out = tmp_path / "cli"
    common = ["--train", files["train"], "--holdout", files["holdout"], "--release"]
    common += [files["release"], "--attacks", "100", "--seed", "1", "--no-ml"]
    args = [*map(str, common), "--out", str(out), "--link-columns", "age,children"]
    args += ["--link-columns", "educ,occupation", "--neighbours", "3", "--numeric-codes", "1024"]
    code, output = _cli(args, capsys)
    assert code == 0, output
    evaluation = json.loads((out / "evaluation.json").read_text())
    link = next(a for a in evaluation["attacks"] if a["name"] == "linkability")
    assert link["details"]["columns_a"] == ["age", "children"]
    assert link["details"]["split"] == "given" and link["details"]["neighbors"] == 3
    refusals = {
        ("--link-columns", "age,children"): "given twice, once per source",
        ("--link-columns", "age", "--link-columns", "nowhere"): "names 'nowhere'",
        ("--link-columns", "age", "--link-columns", "age,educ"): "'age' is in both sets",
        ("--neighbours", "0"): "--neighbours must be at least 1",
        ("--numeric-codes", "1"): "--numeric-codes must lie in 2..65,536",
    }
    for extra, message in refusals.items():
        code, output = _cli([*common, "--out", tmp_path / "no", *extra], capsys)
        assert code == 2 and message in " ".join(output.split()), (extra, output)
        assert "Traceback" not in output and not (tmp_path / "no").exists()


def test_a_number_of_few_values_over_a_wide_range_gets_a_code_per_value():
    # ten postcodes between 1301 and 99950: equal-width bins merged 01301, 01302 and 01305
    from safeshare.release.evaluation import evaluation_domain

    codes = ["01301", "01302", "01305", "01310", "01320", "09001", "09002", "02139", "10001"]
    train = pd.DataFrame({"zip": [*codes, "99950"] * 3, "x": list("ab" * 15)})
    domain, _ = evaluation_domain(train, train)
    column = domain["zip"]
    assert column.n_values == 10  # (one per postcode)
    bins = np.searchsorted(np.asarray(column.edges), [int(c) for c in codes], side="right")
    assert len(set(bins.tolist())) == len(codes)
