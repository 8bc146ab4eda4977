"""``safeshare train --language-model --base`` and ``safeshare audit`` on it: a tiny local model."""

import json
from pathlib import Path

import pandas as pd
import pytest

pytest.importorskip("opacus")
pytest.importorskip("transformers")
typer = pytest.importorskip("typer")

from typer.testing import CliRunner  # noqa: E402

from safeshare.cli.audit import audit_command  # noqa: E402
from safeshare.cli.train import train_command  # noqa: E402
from safeshare.dp.ledger import Ledger  # noqa: E402
from safeshare.errors import InputError  # noqa: E402
from safeshare.report.card import HEADER_FIELDS  # noqa: E402
from tests.train.tiny_causal_lm import SENTENCES, write_tiny_causal_lm  # noqa: E402

pytestmark = [
    pytest.mark.filterwarnings("ignore:.*were cut to it"),
    pytest.mark.usefixtures("one_torch_thread"),
]

app = typer.Typer()
app.command("train")(train_command)
app.command("audit")(audit_command)

TINY = ["--context", "48", "--train-layers", "2", "--rank", "4", "--epochs", "2",
        "--batch-size", "8", "--accountant", "rdp"]  # fmt: skip


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    return write_tiny_causal_lm(tmp_path_factory.mktemp("tiny"))


@pytest.fixture(scope="module")
def texts_csv(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("texts") / "texts.csv"
    texts = [f"{s}, message number {i}" for i in range(10) for s in SENTENCES]
    pd.DataFrame({"id": range(len(texts)), "text": texts}).to_csv(path, index=False)
    return path


def run(*args: str):
    result = CliRunner().invoke(app, list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    assert result.exit_code == 0, result.output
    return result


def test_fine_tune_then_audit_extraction_and_canaries(base, texts_csv, tmp_path, _isolated_ledger):
    model = tmp_path / "tuned"
    result = run("train", str(texts_csv), "--language-model", "--base", str(base),
                 "--text-column", "text", "--epsilon", "8", "--out", str(model), "--seed", "0",
                 "--holdout-fraction", "0.2", "--generate", "7", *TINY)  # fmt: skip
    printed = " ".join(result.output.split())  # the console wraps long lines
    assert "held out 10 of 50 texts" in printed and "low-rank adapters (rank 4" in printed
    assert sorted(p.name for p in model.iterdir()) == [
        ".safeshare-output",
        "card.json",
        "holdout.json",
        "model.safetensors",
        "synthetic.csv",
    ]
    card = json.loads((model / "card.json").read_text())
    assert card.keys() >= set(HEADER_FIELDS) and card["method"] == "dp-sgd (fine-tuning)"
    sampled = pd.read_csv(model / "synthetic.csv", keep_default_na=False)
    assert list(sampled.columns) == ["text"] and len(sampled) == 7
    assert card["synthetic"]["texts"] == 7 and "same guarantee" in card["synthetic"]["privacy"]
    assert card["model"]["kind"] == "fine-tuned causal language model"
    assert card["model"]["base"] == str(base) and len(card["model"]["base_fingerprint"]) == 64
    assert any("base model" in line and "tokenizer" in line for line in card["public"])
    privacy = card["privacy"]
    assert privacy["epsilon"] <= 8.0 and "DP for every text" in card["guarantee"]
    assert "linear-ghost" in privacy["clipping"] and card["ledger"]["spent_epsilon"] == 8.0
    assert card["settings"]["rank"] == 4 and card["settings"]["trained_layers"] == 2

    extraction = tmp_path / "extraction"
    run("audit", str(model), "--attack", "extraction", "--data", str(texts_csv),
        "--out", str(extraction), "--prefix", "3", "--suffix", "3")  # fmt: skip
    report = json.loads((extraction / "audit.json").read_text())
    assert "exact extraction of 3 tokens after 3" in (extraction / "report.txt").read_text()
    assert report["extraction"]["prefix_tokens"] == 3 and report["held_out_texts"] == 10

    canaries = tmp_path / "canaries"
    result = run("audit", str(model), "--attack", "canaries", "--data", str(texts_csv),
                 "--out", str(canaries), "--canaries", "40", "--digits", "4",
                 "--seed", "1")  # fmt: skip
    report = json.loads((canaries / "audit.json").read_text())
    assert report["one_run"]["canaries"] == 40 and report["training_texts"] == 40
    assert report["one_run"]["epsilon_lower_bound"] <= report["claimed_epsilon"] <= 8.0
    assert "1000 sampled candidates" in report["exposure_bits"]["method"] or (
        "exact rank among all 10000" in report["exposure_bits"]["method"]
    )
    written = "".join(
        p.read_text() for d in (model, extraction, canaries) for p in d.iterdir()
        if p.suffix != ".safetensors" and p.name != "synthetic.csv"
    )  # fmt: skip
    assert not any(t in written for t in pd.read_csv(texts_csv)["text"])


def test_user_level_fine_tuning_holds_out_users_and_audits_canary_users(
    base, texts_csv, tmp_path, _isolated_ledger
):
    frame = pd.read_csv(texts_csv)
    frame["sender"] = [f"Zanzibar-{i % 10}" for i in range(len(frame))]  # 10 users of 5
    data = tmp_path / "users.csv"
    frame.to_csv(data, index=False)
    model = tmp_path / "tuned"
    tiny = [*TINY[: TINY.index("--batch-size")], "--batch-size", "3", "--accountant", "rdp"]
    result = run("train", str(data), "--language-model", "--base", str(base), "--text-column",
                 "text", "--user-column", "sender", "--epsilon", "8", "--out", str(model),
                 "--seed", "0", "--holdout-fraction", "0.2", *tiny)  # fmt: skip
    card = json.loads((model / "card.json").read_text())
    privacy = card["privacy"]
    assert privacy["privacy_unit"] == "user (column sender)" and privacy["users"] == 8
    assert privacy["epsilon"] <= 8.0 and "for every user (column sender)" in card["guarantee"]
    assert "per-user" in privacy["clipping"] and privacy["expected_batch_unit"] == "users"
    assert card["holdout"]["users"] == 2 and card["training"]["records"] == 40
    assert card["model"]["kind"] == "fine-tuned causal language model"
    # the procedure audited as trained: user-level again, with canary users of 2 copies
    canaries = tmp_path / "canaries"
    result = run("audit", str(model), "--attack", "canaries", "--data", str(data), "--out",
                 str(canaries), "--canaries", "20", "--copies", "2", "--digits", "4",
                 "--seed", "1")  # fmt: skip
    report = json.loads((canaries / "audit.json").read_text())
    assert report["canary_unit"] == "user (2 copies of one canary text)"
    assert report["one_run"]["epsilon_lower_bound"] <= report["claimed_epsilon"] <= 8.0
    written = "".join(p.read_text() for d in (model, canaries) for p in d.iterdir()
                      if p.suffix != ".safetensors")  # fmt: skip
    assert "Zanzibar" not in written + result.output


def refused(*args: str) -> str:
    with pytest.raises(InputError) as caught:
        run("train", *args)
    return str(caught.value)


def test_bad_input_is_refused_before_any_budget_is_spent(
    base, texts_csv, tmp_path, _isolated_ledger
):
    out = str(tmp_path / "tuned")
    common = [str(texts_csv), "--epsilon", "1", "--out", out, "--text-column", "text"]
    assert "add --language-model" in refused(*common, "--base", str(base), "--target", "id")
    tuned = [*common, "--language-model", "--base", str(base), *TINY]
    assert "has its own value in the user column" in refused(*tuned, "--user-column", "id")
    assert "--width, --heads shape the byte-level model" in refused(
        *tuned, "--width", "128", "--heads", "4"
    )
    assert "exceeds the model's 3 decoder layers" in refused(*tuned, "--train-layers", "5")
    assert "exceeds the model's 64 positions" in refused(*tuned, "--context", "80")
    assert "no local model" in refused(*common, "--language-model", "--base", str(tmp_path / "x"))
    assert "--rank sizes the adapters of --base" in refused(
        *common, "--language-model", "--rank", "4"
    )
    assert "add --base" in refused(*common, "--language-model", "--generate", "5")
    assert not Path(out).exists()
    assert Ledger(_isolated_ledger).datasets() == []
