"""``safeshare train``: the domain resolved as release does, the card honest, the output atomic."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("torch")
pytest.importorskip("opacus")
typer = pytest.importorskip("typer")

from typer.testing import CliRunner  # noqa: E402

from safeshare.cli.train import train_command  # noqa: E402
from safeshare.data.examples import load_example  # noqa: E402
from safeshare.dp.ledger import Ledger  # noqa: E402
from safeshare.errors import InputError, OutputExistsError, SchemaError  # noqa: E402
from safeshare.report.card import HEADER_FIELDS  # noqa: E402

app = typer.Typer()
app.command("train")(train_command)
app.command("unused")(lambda: None)  # two commands: the first argument names the command


@pytest.fixture(scope="module")
def fair_small(tmp_path_factory) -> tuple[Path, Path]:
    frame, schema = load_example("fair")
    path = tmp_path_factory.mktemp("train") / "fair.csv"
    frame.iloc[:1500].to_csv(path, index=False)
    assert schema.source is not None
    return path, Path(schema.source)


def train(*args: str):
    result = CliRunner().invoke(app, ["train", *args, "--epochs", "1", "--batch-size", "100"])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result


def test_train_with_a_public_schema_spends_everything_on_dp_sgd(fair_small, tmp_path):
    data, schema = fair_small
    out = tmp_path / "model"
    result = train(str(data), "--target", "religious", "--epsilon", "1", "--schema", str(schema),
                   "--out", str(out), "--seed", "0")  # fmt: skip
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.iterdir()) == [
        ".safeshare-output",
        "card.json",
        "model.safetensors",
    ]
    card = json.loads((out / "card.json").read_text())
    assert card.keys() >= set(HEADER_FIELDS) and card["method"] == "dp-sgd (tabular MLP)"
    assert card["secure_noise"] is False and card["input"]["name"] == "fair.csv"
    assert card["domain_source"] == "schema"
    assert card["budget"]["items"][0]["epsilon"] == 0.0
    assert card["privacy"]["epsilon"] == card["budget"]["epsilon_spent"] <= 1.0
    assert card["budget"]["delta"] == pytest.approx(1 / 15_000)
    assert all(c["source"] == "schema" for c in card["columns"].values())
    assert "the domains of the columns whose source is 'schema'" in card["public"]
    assert card["model"]["classes"] >= 4 and card["model"]["target"] == "religious"
    with pytest.raises(OutputExistsError, match="--force"):
        train(str(data), "--target", "religious", "--epsilon", "1", "--schema", str(schema),
              "--out", str(out))  # fmt: skip


def test_without_a_schema_discovery_spends_a_share_and_no_value_leaks(fair_small, tmp_path):
    frame = pd.read_csv(fair_small[0])
    rng = np.random.default_rng(0)
    frame["city"] = rng.choice(["Zanzibar-North", "Quixote-Falls", "Yarrowby"], len(frame))
    data = tmp_path / "fair_city.csv"
    frame.to_csv(data, index=False)
    out = tmp_path / "model"
    result = train(str(data), "--target", "city", "--epsilon", "3", "--delta", "1e-6",
                   "--out", str(out), "--seed", "1", "--accountant", "rdp")  # fmt: skip
    assert result.exit_code == 0, result.output
    card = json.loads((out / "card.json").read_text())
    assert card["domain_source"] == "private data, DP"
    discovery, dpsgd = card["budget"]["items"]
    assert 0 < discovery["epsilon"] <= 0.3 and discovery["delta"] == pytest.approx(1e-7)
    # one accountant composes both steps (RDP): no more than their epsilons added up
    spent = card["budget"]["epsilon_spent"]
    assert 0.5 * (discovery["epsilon"] + dpsgd["epsilon"]) < spent
    assert spent <= discovery["epsilon"] + dpsgd["epsilon"]
    assert (card["budget"]["accounting"], card["budget"]["neighbouring"]) == (
        "rdp",
        "ADD_OR_REMOVE_ONE",
    )
    assert spent <= 3.0 and card["budget"]["delta"] <= 1e-6
    assert f"({spent:.4g}, " in card["guarantee"]
    # the kinds were measured with DP inside the first step: the guarantee is not conditioned
    assert card["guarantee"].endswith(
        "DP for every training record, for anyone who does not know the seed"
    )
    assert not any("column kinds" in line for line in card["not_dp"])
    # 1,500 records are too few to tell the kinds at this share: the note says from where
    (note,) = [n for n in card["notes"] if "show from about --epsilon" in n]
    assert float(note.split("--epsilon ")[1].split(" ")[0]) > 3
    city = card["columns"]["city"]
    assert city.pop("codes") <= 3 + 2  # the cities DP kept, "(other)" and "(missing)"
    assert city == {"kind": "categorical", "role": "other", "source": "dp", "dropped": False,
                    "kind_inferred": True, "kind_measured_with_dp": True}  # fmt: skip
    text = (out / "card.json").read_text()
    assert not any(city in text for city in ("Zanzibar", "Quixote", "Yarrowby"))


def test_unsafe_infer_is_flagged_as_no_guarantee(fair_small, tmp_path):
    data, _ = fair_small
    out = tmp_path / "model"
    train(str(data), "--target", "religious", "--epsilon", "1", "--out", str(out), "--seed", "2",
          "--unsafe-infer", "--quiet")  # fmt: skip
    card = json.loads((out / "card.json").read_text())
    assert card["guarantee"].startswith("none") and card["budget"]["items"][0]["epsilon"] == 0
    assert any("--unsafe-infer" in line for line in card["not_dp"])


def test_a_single_class_target_is_a_clear_error(tmp_path):
    rng = np.random.default_rng(0)
    data = tmp_path / "one.csv"
    pd.DataFrame({"x": rng.integers(0, 4, 400), "y": ["yes"] * 400}).to_csv(data, index=False)
    schema = tmp_path / "one.yaml"
    schema.write_text(
        "columns:\n  x: {kind: categorical, categories: [0, 1, 2, 3]}\n"
        "  y: {kind: categorical, categories: ['yes', 'no']}\n"
    )
    with pytest.raises(InputError, match="'y' has a single class") as err:
        train(str(data), "--target", "y", "--epsilon", "1", "--schema", str(schema),
              "--out", str(tmp_path / "m"), "--seed", "0")  # fmt: skip
    assert "yes" not in str(err.value)
    assert not (tmp_path / "m").exists()


def test_an_unknown_target_names_the_columns(fair_small, tmp_path):
    data, _ = fair_small
    with pytest.raises(SchemaError, match="'income' is not a column"):
        train(str(data), "--target", "income", "--epsilon", "1", "--out", str(tmp_path / "m"))


def test_audit_retrains_at_the_cards_settings_and_stays_below_the_claim(fair_small, tmp_path):
    from safeshare.cli.audit import audit_command

    audit_app = typer.Typer()
    audit_app.command("audit")(audit_command)
    audit_app.command("unused")(lambda: None)
    data, schema = fair_small
    model = tmp_path / "model"
    train(str(data), "--target", "religious", "--epsilon", "1", "--schema", str(schema),
          "--out", str(model), "--seed", "0", "--accountant", "rdp", "--quiet")  # fmt: skip
    out = tmp_path / "audit"
    args = ["audit", str(model), "--data", str(data), "--schema", str(schema), "--canaries",
            "300", "--out", str(out), "--seed", "0"]  # fmt: skip
    result = CliRunner().invoke(audit_app, args)
    assert result.exit_code == 0, result.output
    report = json.loads((out / "audit.json").read_text())
    assert report["settings"]["batch_size"] == 100 and report["settings"]["epochs"] == 1.0
    assert report["one_run"]["canaries"] == 300
    assert report["one_run"]["epsilon_lower_bound"] <= report["claimed_epsilon"] <= 1.0
    assert "not the saved weights" in report["audited"]
    assert (out / "report.txt").read_text().startswith("empirical epsilon >= ")
    assert isinstance(CliRunner().invoke(audit_app, args).exception, OutputExistsError)


def test_training_spends_the_ledger_and_a_spent_budget_is_refused(fair_small, tmp_path):
    from safeshare.errors import BudgetExceededError

    data, schema = fair_small
    ledger = tmp_path / "ledger.sqlite"
    common = ["--target", "religious", "--schema", str(schema), "--ledger", str(ledger)]
    first = train(str(data), *common, "--epsilon", "1", "--total-epsilon", "1.5",
                  "--out", str(tmp_path / "one"), "--seed", "0")  # fmt: skip
    assert first.exit_code == 0, first.output
    card = json.loads((tmp_path / "one" / "card.json").read_text())
    assert card["ledger"]["spent_epsilon"] == pytest.approx(1.0)
    assert card["ledger"]["total_epsilon"] == pytest.approx(1.5)
    with pytest.raises(BudgetExceededError):
        train(str(data), *common, "--epsilon", "1", "--out", str(tmp_path / "two"))
    assert not (tmp_path / "two").exists()


def test_the_prv_accountant_trains_and_the_card_names_it(fair_small, tmp_path):
    from safeshare.release.audit import accountant_of

    data, schema = fair_small
    out = tmp_path / "model"
    result = train(str(data), "--target", "religious", "--epsilon", "1", "--schema", str(schema),
                   "--out", str(out), "--seed", "0", "--accountant", "prv")  # fmt: skip
    assert result.exit_code == 0, result.output
    privacy = json.loads((out / "card.json").read_text())["privacy"]
    assert privacy["accountant"].startswith("prv (Opacus)")
    assert 0.9 < privacy["epsilon"] <= 1.0
    # `safeshare audit` replays the run with the card's accountant
    assert accountant_of(privacy["accountant"]) == "prv"
    assert accountant_of("rdp (dp-accounting), Poisson-subsampled Gaussian") == "rdp"
    assert accountant_of("something else") == "pld"


def test_user_column_makes_the_user_the_privacy_unit(fair_small, tmp_path):
    from safeshare.release.audit import model_settings

    data, schema = fair_small
    frame = pd.read_csv(data)
    frame["household"] = [f"Zanzibar-{i // 3}" for i in range(len(frame))]  # 500 users of 3
    path = tmp_path / "fair_users.csv"
    frame.to_csv(path, index=False)
    out = tmp_path / "model"
    result = train(str(path), "--target", "religious", "--epsilon", "1", "--schema", str(schema),
                   "--out", str(out), "--seed", "0", "--user-column", "household",
                   "--accountant", "rdp")  # fmt: skip
    assert result.exit_code == 0, result.output
    text = (out / "card.json").read_text()
    card = json.loads(text)
    privacy = card["privacy"]
    assert privacy["privacy_unit"] == "user (column household)" and privacy["users"] == 500
    assert privacy["sampling_rate"] == pytest.approx(100 / 500)  # train(): 100 users a batch
    assert privacy["delta"] == pytest.approx(1 / 5000) and privacy["epsilon"] <= 1.0
    assert "for every user" in card["guarantee"] and "the number of users" in card["public"]
    assert any("number of users" in line for line in card["not_dp"])
    assert "household" not in card["model"]["feature_columns"] and "Zanzibar" not in text
    assert model_settings(out)["user_column"] == "household"
    # the audit replays user-level training with canary users (copies of one canary record)
    from safeshare.cli.audit import audit_command

    audit_app = typer.Typer()
    audit_app.command("audit")(audit_command)
    audit_app.command("unused")(lambda: None)
    args = ["audit", str(out), "--data", str(path), "--schema", str(schema), "--canaries", "200",
            "--copies", "4", "--seed", "0"]  # fmt: skip
    result = CliRunner().invoke(audit_app, [*args, "--out", str(tmp_path / "audit")])
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "audit" / "audit.json").read_text())
    assert report["canary_unit"] == "user (4 copies of one canary record)"
    assert report["settings"]["user_column"] == "household" and "canary users" in report["audited"]
    assert report["one_run"]["epsilon_lower_bound"] <= report["claimed_epsilon"] <= 1.0
    assert "200 canary users, each 4 copies" in result.output and "Zanzibar" not in result.output
    refused = CliRunner().invoke(
        audit_app, [*args, "--attack", "lira", "--out", str(tmp_path / "l")]
    )
    assert isinstance(refused.exception, InputError) and "canary users" in str(refused.exception)
    # without a schema, DP discovery (record-level) would set the domains: refused up front
    with pytest.raises(InputError, match="every domain must come from the schema"):
        train(str(path), "--target", "religious", "--epsilon", "1", "--out",
              str(tmp_path / "other"), "--user-column", "household")  # fmt: skip
    # the text classifier takes --user-column too (tests/train/test_user_level_models.py)
    with pytest.raises(SchemaError, match="--text-column 'x'"):
        train(str(path), "--target", "religious", "--epsilon", "1", "--out",
              str(tmp_path / "other"), "--user-column", "household", "--text-column", "x")  # fmt: skip


def test_the_device_is_chosen_before_any_budget_is_spent(fair_small, tmp_path):
    data, schema = fair_small
    ledger = tmp_path / "ledger.sqlite"
    common = ["--target", "religious", "--schema", str(schema), "--ledger", str(ledger),
              "--epsilon", "1", "--accountant", "rdp", "--seed", "0"]  # fmt: skip
    with pytest.raises(InputError, match="device 'gpu' is unknown; use auto, cpu, cuda"):
        train(str(data), *common, "--device", "gpu", "--out", str(tmp_path / "no"))
    assert not ledger.exists() and not (tmp_path / "no").exists()
    result = train(str(data), *common, "--device", "cpu", "--out", str(tmp_path / "cpu"))
    assert result.exit_code == 0, result.output
    assert "on cpu" in result.output
    card = json.loads((tmp_path / "cpu" / "card.json").read_text())
    assert card["training"]["device"] == "cpu"


def test_a_user_batch_over_half_the_users_is_refused_before_the_ledger(fair_small, tmp_path):
    data, schema = fair_small
    frame = pd.read_csv(data)
    frame["household"] = [f"h{i // 3}" for i in range(len(frame))]  # 500 users of 3
    path = tmp_path / "fair_users.csv"
    frame.to_csv(path, index=False)
    ledger = tmp_path / "ledger.sqlite"
    args = ["train", str(path), "--target", "religious", "--epsilon", "1", "--schema",
            str(schema), "--user-column", "household", "--batch-size", "400", "--ledger",
            str(ledger), "--out", str(tmp_path / "no")]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert isinstance(result.exception, InputError)
    assert "half the users, 500" in str(result.exception)
    assert not ledger.exists() and not (tmp_path / "no").exists()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--learning-rate", "nan"], "--learning-rate must be a positive, finite number"),
        (["--learning-rate", "-1"], "--learning-rate must be a positive, finite number"),
        (["--epochs", "inf"], "--epochs must be a positive, finite number"),
        (["--seed", "-1"], "--seed must be a whole number"),
        (["--epsilon", "1e308"], "protects no one"),
        # found by the hostile corpus (tests/test_hostile_corpus.py): each was charged, then failed
        (["--epsilon", "1e-300"], "even noise multiplier 1024 spends"),
        (["--delta", "1e-300"], "even noise multiplier 1024 spends"),
        (["--batch-size", "5000"], "must lie in [1, 750]"),
        (["--clipping", "x"], "--clipping 'x' is unknown"),
        (["--hidden", "4294967297"], "--hidden must be a whole number in [1, 65536]"),
        (["--learning-rate", "1e308"], "of at most 10"),
    ],
)
def test_bad_settings_are_refused_before_the_ledger(extra, message, fair_small, tmp_path, capsys):
    from safeshare.cli import main

    data, schema = fair_small
    ledger = tmp_path / "ledger.sqlite"
    argv = ["train", str(data), "--target", "religious", "--epsilon", "1", "--schema", str(schema)]
    code = main([*argv, "--out", str(tmp_path / "m"), "--ledger", str(ledger), *extra])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error:") and message in err and "Traceback" not in err
    assert not ledger.exists() or Ledger(ledger).datasets() == []
    assert not (tmp_path / "m").exists()


def test_a_machine_failure_while_training_is_refunded(fair_small, tmp_path, monkeypatch, capsys):
    from safeshare.cli import main
    from safeshare.release import training

    def full_disk(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(training.TabularModel, "save", full_disk)
    data, schema = fair_small
    ledger = tmp_path / "ledger.sqlite"
    argv = ["train", str(data), "--target", "religious", "--epsilon", "1", "--schema", str(schema)]
    code = main([*argv, "--out", str(tmp_path / "m"), "--ledger", str(ledger), "--epochs", "1"])
    err = capsys.readouterr().err
    assert code == 2 and "not charged" in err and "Traceback" not in err
    assert sum(s.releases for s in Ledger(ledger).datasets()) == 0
