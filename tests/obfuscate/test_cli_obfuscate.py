"""``safeshare obfuscate train|attack|serve`` through typer's CliRunner on a tiny data file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from safeshare.cli.obfuscate import obfuscate_app
from safeshare.errors import InputError, OutputExistsError
from safeshare.obfuscate.card import measured
from tests.obfuscate.conftest import TEXTS

PRIVATE = [
    *TEXTS,
    "Meet Alice Smith at 14 Elm Road on Tuesday",
    "Your code is 889213, do not share",
]
PUBLIC = [
    "The battery lasts all day and the screen is bright.",
    "Service was slow but the food was great.",
    "I would not buy this phone again, it broke after a week.",
    "Friendly staff and a nice view of the river.",
]


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("obfuscate-cli")
    data = root / "texts.csv"
    labels = ["ham", "spam", "ham", "ham", "ham", "spam"]
    data.write_text(
        "id,text,label\n"
        + "".join(f'{i},"{t}",{y}\n' for i, (t, y) in enumerate(zip(PRIVATE, labels, strict=True)))
    )
    public = root / "public.txt"
    public.write_text("\n".join(PUBLIC) + "\n\n")
    return {"root": root, "data": data, "public": public}


def test_train_then_attack_writes_the_transform_and_the_report(files: dict[str, Path]) -> None:
    runner = CliRunner()
    transform = files["root"] / "transform"
    common = ["--data", str(files["data"]), "--text-column", "text", "--seed", "0"]
    trained = runner.invoke(
        obfuscate_app,
        [
            "train", *common, "--out", str(transform), "--steps", "2", "--batch-size", "4",
            "--label-column", "label",
        ],
    )  # fmt: skip
    assert trained.exit_code == 0, trained.output
    assert "classes ham, spam" in trained.output
    assert (transform / "head.safetensors").is_file()
    assert "nearest-neighbour token recovery" in trained.output
    for name in ("transform.json", "transform.safetensors", "training.json"):
        assert (transform / name).is_file()
    training = json.loads((transform / "training.json").read_text())
    assert training["curve"] and training["attacker"] == "learned-inverter"
    assert "the inverter trained alongside" in " ".join(trained.output.split())

    again = runner.invoke(obfuscate_app, ["train", *common, "--out", str(transform)])
    assert isinstance(again.exception, OutputExistsError)

    out = files["root"] / "attack"
    attacked = runner.invoke(
        obfuscate_app,
        [
            "attack", "--transform", str(transform), *common, "--public", str(files["public"]),
            "--out", str(out), "--beam", "4", "--label-column", "label", "--sigmas", "0.1,0.3",
            "--inverter-steps", "3",
        ],
    )  # fmt: skip
    assert attacked.exit_code == 0, attacked.output
    report = json.loads((out / "attack.json").read_text())
    assert report["texts"] == len(PRIVATE) and report["public_texts"] == len(PUBLIC)
    rows = {(row["attack"], row["input"]): row for row in report["attacks"]}
    assert rows[("nearest neighbour", "clean")]["recovered"] == 1.0  # the attack works
    beam = rows[("beam search (BeamClean-style)", "obfuscated")]
    low, high = beam["interval"]
    assert 0.0 <= low <= beam["recovered"] <= high + 1e-12 and high <= 1.0 + 1e-12
    assert report["secure_noise"] is False and "empirical, not formal" in report["guarantee"]
    assert ("learned inversion network", "obfuscated") in rows
    assert report["f1_positive_class"] == "spam" and 0.0 <= report["f1"] <= 1.0
    assert 0.0 <= report["clean_f1"] <= 1.0
    assert [c["sigma"] for c in report["conditions"]] == [None, 0.1, 0.3]
    for condition in report["conditions"]:  # every attack on every row, by default
        assert len(condition["attacks"]) == 3
        best = max(condition["attacks"], key=lambda a: a["recovered"])
        assert condition["strongest"] == best["attack"]
        read = condition["information"]
        assert read["bits_per_token"] <= read["prior_bits_per_token"] and "Barber" in read["method"]
    pii = {(row["attack"], row["kind"]): row for row in report["pii"]}
    assert pii[("nearest neighbour", "name")]["entities"] == len(PRIVATE)
    html = (out / "report.html").read_text()
    assert "<svg" in html and "empirical, not formal" in html and "Planted PII" in html
    assert "Gaussian noise σ=0.3" in html and "learned inversion network" in html
    written = (out / "attack.json").read_text() + (out / "report.md").read_text() + html
    assert "Alice" not in written and "889213" not in written  # numbers only, no text
    markdown = (out / "report.md").read_text()
    assert "| nearest neighbour | obfuscated |" in markdown
    assert f"({report['clean_f1']:.3f} on clean inputs)" in markdown  # the F1 to compare with
    assert "| Gaussian noise σ=0.1 | nearest neighbour | name |" in markdown  # every row's PII
    # the report names the transform it measured: a server vouches for it with its figures
    card = measured(out)
    assert card.transform == report["transform"] and len(card.attacks) == 3
    assert f"serve --transform {transform} --attacks {out}" in " ".join(attacked.output.split())


def test_train_under_a_utility_budget_records_it_and_the_weight_it_reached(
    files: dict[str, Path],
) -> None:
    out = files["root"] / "budgeted"
    trained = CliRunner().invoke(
        obfuscate_app,
        [
            "train", "--data", str(files["data"]), "--out", str(out), "--seed", "0", "--steps",
            "2", "--batch-size", "4", "--utility-budget", "5", "--weight", "1",
        ],
    )  # fmt: skip
    assert trained.exit_code == 0, trained.output
    training = json.loads((out / "training.json").read_text())
    assert training["utility_budget"] == 5.0 and training["weight"] > 1.0  # under budget
    assert 1.0 < training["curve"][-1]["weight"] < training["weight"]  # step 2's, then raised
    assert "utility loss held near 5" in " ".join(trained.output.split())


def test_bad_inputs_are_refused_with_the_fix(files: dict[str, Path]) -> None:
    runner = CliRunner()
    wrong = runner.invoke(
        obfuscate_app,
        ["train", "--data", str(files["data"]), "--text-column", "body", "--out", "x"],
    )
    assert isinstance(wrong.exception, InputError)
    assert "--text-column, one of ['id', 'text', 'label']" in str(wrong.exception)
    attacker = runner.invoke(
        obfuscate_app,
        ["train", "--data", str(files["data"]), "--attacker", "oracle", "--out", "x"],
    )
    assert isinstance(attacker.exception, InputError)
    assert "learned-inverter, nearest-neighbour" in str(attacker.exception)
    budget = runner.invoke(
        obfuscate_app,
        [
            "train", "--data", str(files["data"]), "--utility-budget", "0", "--steps", "1",
            "--out", str(files["root"] / "b0"),
        ],
    )  # fmt: skip
    assert isinstance(budget.exception, InputError)
    assert "utility budget must be a finite number > 0" in str(budget.exception)
    assert not (files["root"] / "b0").exists()  # nothing half-written
    missing = runner.invoke(
        obfuscate_app,
        [
            "attack", "--transform", str(files["root"]), "--data", str(files["data"]),
            "--public", str(files["root"] / "none.txt"), "--out", str(files["root"] / "a2"),
        ],
    )  # fmt: skip
    assert isinstance(missing.exception, FileNotFoundError)
    assert "public text file" in str(missing.exception)


def test_a_headerless_text_file_is_read_as_records_and_never_quoted(
    files: dict[str, Path],
) -> None:
    # a labelled text file without a header (as the SMS and review sets are shipped): its
    # first record is a record, and no error quotes it
    headerless = files["root"] / "headerless.tsv"
    headerless.write_text(
        "".join(
            f"{y}\t{t}, said the note\n"
            for y, t in [
                ("ham", PRIVATE[-2]),
                *(("spam" if i % 3 else "ham", t) for i, t in enumerate(PRIVATE * 4)),
            ]
        )
    )
    runner = CliRunner()
    default = runner.invoke(obfuscate_app, ["train", "--data", str(headerless), "--out", "x"])
    assert isinstance(default.exception, InputError)
    assert "one of ['column_1', 'column_2']; no header was detected: pass --header" in str(
        default.exception
    )
    forced = runner.invoke(
        obfuscate_app, ["train", "--data", str(headerless), "--header", "--out", "x"]
    )
    assert isinstance(forced.exception, InputError)
    assert "Alice" not in str(forced.exception) and "pass --no-header" in str(forced.exception)


def test_help_says_what_each_command_needs() -> None:
    runner = CliRunner()
    attack = runner.invoke(obfuscate_app, ["attack", "--help"])
    assert attack.exit_code == 0 and "PUBLIC" in attack.output
    serve = runner.invoke(obfuscate_app, ["serve", "--help"])
    assert "127.0.0.1" in serve.output and "--max-body-bytes" in serve.output


def test_the_summary_reads_each_row_by_the_utility_of_its_model() -> None:
    from safeshare.cli.obfuscate import _kept
    from safeshare.obfuscate.audit import Condition
    from safeshare.obfuscate.utility import NextTokenUtility

    causal = Condition(
        "learned transform", None, 0.98, None, (), (), NextTokenUtility(0.633, 0.288, 40)
    )
    assert _kept(causal) == "next-token KL 0.288 nats, top-1 agreement 63.3%"
    headed = Condition("learned transform", None, 0.91, 0.75, (), ())
    assert _kept(headed, "spam") == "F1 0.750 (spam), mean cosine 0.910 of outputs"
    assert _kept(Condition("x", 0.1, 0.5, None, (), ())) == "mean cosine 0.500 of outputs"
    both = Condition("learned transform", None, 0.98, 0.75, (), (), NextTokenUtility(0.5, 1.2, 9))
    assert _kept(both, "spam") == "F1 0.750 (spam), next-token KL 1.200 nats, top-1 agreement 50.0%"
