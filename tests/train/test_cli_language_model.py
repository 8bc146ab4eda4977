"""``safeshare train --language-model`` and ``safeshare audit`` on it: real training, small sizes."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("opacus")
typer = pytest.importorskip("typer")

from typer.testing import CliRunner  # noqa: E402

from safeshare.cli.audit import audit_command  # noqa: E402
from safeshare.cli.train import train_command  # noqa: E402
from safeshare.dp.ledger import Ledger  # noqa: E402
from safeshare.errors import InputError, OutputExistsError, SchemaError  # noqa: E402
from safeshare.report.card import HEADER_FIELDS  # noqa: E402
from tests.conftest import SHARED, needs_shared  # noqa: E402

pytestmark = [
    needs_shared,
    pytest.mark.filterwarnings("ignore:.*were cut to it"),
    pytest.mark.usefixtures("one_torch_thread"),
]

app = typer.Typer()
app.command("train")(train_command)
app.command("audit")(audit_command)

# RDP: calibrating the noise by PLD takes ~30 s on two shared cores, RDP under 1 s
TINY = ["--context", "48", "--width", "32", "--epochs", "2", "--batch-size", "8",
        "--accountant", "rdp"]  # fmt: skip


def sms(rows: int) -> pd.DataFrame:
    assert SHARED is not None
    path = SHARED / "text" / "sms_spam_collection.tsv"
    frame = pd.read_csv(path, sep="\t", header=None, names=["label", "text"], quoting=3)
    return frame.iloc[:rows]


@pytest.fixture(scope="module")
def sms_csv(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("lm") / "sms.csv"
    sms(48).to_csv(path, index=False)
    return path


def run(*args: str):
    result = CliRunner().invoke(app, list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    assert result.exit_code == 0, result.output
    return result


def long_texts(path: Path) -> list[str]:
    """Texts long enough that finding one in an output cannot be chance."""
    return [t for t in pd.read_csv(path)["text"] if len(t) >= 25]


def test_train_then_audit_extraction_then_canaries(sms_csv, tmp_path, _isolated_ledger):
    model = tmp_path / "lm"
    result = run("train", str(sms_csv), "--language-model", "--text-column", "text",
                 "--epsilon", "8", "--out", str(model), "--seed", "0",
                 "--holdout-fraction", "0.25", *TINY)  # fmt: skip
    assert "held out   12 of 48 texts" in result.output
    assert sorted(p.name for p in model.iterdir()) == [
        ".safeshare-output",
        "card.json",
        "holdout.json",
        "model.safetensors",
    ]
    card = json.loads((model / "card.json").read_text())
    assert card.keys() >= set(HEADER_FIELDS) and card["method"] == "dp-sgd (language model)"
    privacy = card["privacy"]
    assert privacy["epsilon"] <= 8.0 and privacy["epsilon_budget"] == 8.0
    assert privacy["delta"] == pytest.approx(1 / 480) == card["budget"]["delta"]
    assert "one text" in privacy["privacy_unit"] and privacy["sampling"] == "poisson"
    assert privacy["accountant"].startswith("rdp") and "ghost" in privacy["clipping"]
    assert card["settings"]["context"] == 48 and card["settings"]["width"] == 32
    assert card["holdout"]["texts"] == 12 and card["holdout"]["training_texts"] == 36
    assert card["training"]["records"] == 36 and "DP for every text" in card["guarantee"]
    assert card["ledger"]["spent_epsilon"] == 8.0
    holdout = json.loads((model / "holdout.json").read_text())
    assert len(holdout["rows"]) == 12 and all(isinstance(r, int) for r in holdout["rows"])
    assert holdout["input_sha256"] == card["input"]["sha256"]

    extraction = tmp_path / "extraction"
    result = run("audit", str(model), "--attack", "extraction", "--data", str(sms_csv),
                 "--out", str(extraction), "--prefix", "8", "--suffix", "8", "--json")  # fmt: skip
    report = json.loads((extraction / "audit.json").read_text())
    assert json.loads(result.output) == report  # --json prints audit.json, nothing else
    assert "exact extraction of 8 bytes after 8" in (extraction / "report.txt").read_text()
    assert report["training_texts"] == 36 and report["held_out_texts"] == 12
    assert "saved weights" in report["audited"]
    rates = report["extraction"]["exact"]
    assert rates["members"]["texts"] + report["extraction"]["too_short"]["members"] == 36
    assert 0 <= rates["members"]["interval"][0] <= rates["members"]["interval"][1] <= 1
    assert 0 <= report["membership"]["auc"] <= 1

    canaries = tmp_path / "canaries"
    result = run("audit", str(model), "--attack", "canaries", "--data", str(sms_csv),
                 "--out", str(canaries), "--canaries", "40", "--digits", "4",
                 "--seed", "1")  # fmt: skip
    assert "empirical epsilon >=" in result.output
    report = json.loads((canaries / "audit.json").read_text())
    assert report["one_run"]["canaries"] == 40 and report["one_run"]["delta"] == privacy["delta"]
    assert report["one_run"]["epsilon_lower_bound"] <= report["claimed_epsilon"] <= 8.0
    assert report["settings"]["epsilon"] == 8.0 and report["training_texts"] == 36
    assert report["exposure_bits"]["space_bits"] == pytest.approx(np.log2(10_000))
    assert "not the saved weights" in report["audited"]

    written = "".join(
        p.read_text()
        for d in (model, extraction, canaries)
        for p in d.iterdir()
        if p.suffix != ".safetensors"
    )
    assert not any(text in written for text in long_texts(sms_csv))
    with pytest.raises(OutputExistsError, match="--force"):
        run("audit", str(model), "--attack", "extraction", "--data", str(sms_csv),
            "--out", str(extraction))  # fmt: skip


def test_audits_refuse_the_wrong_attack_and_other_data(sms_csv, tmp_path):
    model = tmp_path / "lm"
    run("train", str(sms_csv), "--language-model", "--text-column", "text", "--epsilon", "4",
        "--out", str(model), "--seed", "0", *TINY, "--epochs", "0.2")  # fmt: skip
    with pytest.raises(InputError, match="is a language model; LiRA"):
        run("audit", str(model), "--attack", "lira", "--data", str(sms_csv), "--out",
            str(tmp_path / "a"))  # fmt: skip
    changed = tmp_path / "changed.csv"
    frame = pd.read_csv(sms_csv)
    frame.loc[3, "text"] = "an edited message, long enough to notice"
    frame.to_csv(changed, index=False)
    with pytest.raises(InputError, match="not the file this model was trained on") as caught:
        run("audit", str(model), "--attack", "extraction", "--data", str(changed), "--out",
            str(tmp_path / "b"))  # fmt: skip
    assert "edited" not in str(caught.value)

    fair = tmp_path / "fair.csv"
    from safeshare.data.examples import load_example

    load_example("fair")[0].iloc[:400].to_csv(fair, index=False)
    classifier = tmp_path / "mlp"
    run("train", str(fair), "--target", "religious", "--epsilon", "1", "--unsafe-infer",
        "--epochs", "1", "--batch-size", "100", "--accountant", "rdp", "--out", str(classifier))  # fmt: skip
    with pytest.raises(InputError, match="extraction needs a language model"):
        run("audit", str(classifier), "--attack", "extraction", "--data", str(fair), "--out",
            str(tmp_path / "c"))  # fmt: skip
    assert not any((tmp_path / n).exists() for n in "abc")


def refused(*args: str):
    """Run ``safeshare train`` expecting a refusal; return the error."""
    with pytest.raises((InputError, SchemaError)) as caught:
        run("train", *args)
    return caught.value


def test_bad_input_is_refused_before_any_budget_is_spent(sms_csv, tmp_path, _isolated_ledger):
    out = str(tmp_path / "lm")
    base = [str(sms_csv), "--epsilon", "1", "--out", out]
    error = refused(*base, "--language-model", "--text-column", "body")
    assert isinstance(error, SchemaError) and "'body' is not a column" in str(error)
    assert "'text'" in str(error)  # the columns are named, no value
    assert "needs --text-column" in str(refused(*base, "--language-model"))
    assert "--target does not apply" in str(
        refused(*base, "--language-model", "--text-column", "text", "--target", "label")
    )
    assert "--target is required" in str(refused(*base))
    assert "cannot train the language model" in str(
        refused(*base, "--language-model", "--text-column", "text", "--clipping", "hooks")
    )
    assert "--batch-size 64 is more than half the 43 training texts" in str(
        refused(*base, "--language-model", "--text-column", "text")
    )
    # a cap per user without users would train at record level without a word
    assert "add --user-column" in str(
        refused(*base, "--language-model", "--text-column", "text", "--max-records-per-user", "4")
    )

    few = tmp_path / "few.csv"
    sms(12).to_csv(few, index=False)
    lm = ["--epsilon", "1", "--out", out, "--language-model", "--text-column", "text"]
    assert "at least 20 texts" in str(refused(str(few), *lm))
    holes = tmp_path / "holes.csv"
    frame = sms(30).copy()
    frame.loc[[2, 7], "text"] = "   "
    frame.to_csv(holes, index=False)
    error = refused(str(holes), *lm, "--batch-size", "4")
    assert "2 missing or blank text(s) (row positions 2, 7" in str(error)
    assert not any(t in str(error) for t in sms(30)["text"] if len(t) > 10)
    empty = tmp_path / "empty.csv"
    pd.DataFrame({"label": ["ham"] * 30, "text": [""] * 30}).to_csv(empty, index=False)
    assert "is empty" in str(refused(str(empty), *lm))
    assert not Path(out).exists()
    assert Ledger(_isolated_ledger).datasets() == []  # nothing was spent
