"""Text Private Evolution as a release: synthetic text, privacy card, report, DP labels."""

from __future__ import annotations

import csv
import json
import math
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

from safeshare.dp.gdp import gdp_epsilon
from safeshare.dp.ledger import Ledger
from safeshare.errors import BudgetError, InputError
from safeshare.release.text import TextSynthesisSettings, release_text
from safeshare.synth.pe.backends import TextBackend
from safeshare.synth.pe.text import MiniLMEmbedder
from tests.conftest import SHARED, needs_shared

NAMES = {"0": "negative", "1": "positive"}


def sentiment(rows: int) -> pd.DataFrame:
    """The first ``rows`` UCI sentiment sentences of Yelp and Amazon, as text and label."""
    assert SHARED is not None
    frames = [
        pd.read_csv(
            SHARED / "text" / f"uci_sentiment_{name}_labelled.tsv",
            sep="\t",
            header=None,
            names=["text", "label"],
            quoting=csv.QUOTE_NONE,
        )
        for name in ("yelp", "amazon_cells")
    ]
    frame = pd.concat(frames, ignore_index=True)
    return frame.iloc[:: max(1, len(frame) // rows)].head(rows).reset_index(drop=True)


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedder:
    """One MiniLM for the module (it loads once, on the first embed)."""
    return MiniLMEmbedder(column="text")


@pytest.fixture(scope="module")
def reviews_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if SHARED is None:
        pytest.skip("needs ../shared/datasets")
    path = tmp_path_factory.mktemp("reviews") / "reviews.csv"
    sentiment(200).to_csv(path, index=False)
    return path


@needs_shared
def test_word_release_with_public_label_names(
    tmp_path: Path, reviews_csv: Path, minilm: MiniLMEmbedder
) -> None:
    ledger = tmp_path / "ledger.sqlite"
    result = release_text(
        reviews_csv,
        out=tmp_path / "out",
        seed=0,
        ledger=ledger,
        settings=TextSynthesisSettings(
            text_column="text",
            label_column="label",
            label_names=NAMES,
            epsilon=4.0,
            delta=1e-5,
            iterations=2,
            samples=40,
            embedder=minilm,
        ),
    )
    card = json.loads((tmp_path / "out" / "card.json").read_text())
    assert result.card == card
    synthetic = pd.read_csv(tmp_path / "out" / "synthetic.csv", dtype=str)
    assert list(synthetic.columns) == ["text", "label"] and set(synthetic["label"]) <= {"0", "1"}
    assert card["rows_out"] == len(synthetic) > 50 and card["rows_train"] == 160
    # exact Gaussian DP: mu^2 = 1/sigma_c^2 + T/sigma^2 gives epsilon = 4 at delta
    budget, model = card["budget"], card["model"]
    mu = math.sqrt(model["label_count_sigma"] ** -2 + 2 / model["sigma"] ** 2)
    assert budget["gdp_mu"] == pytest.approx(mu)
    assert card["epsilon_spent"] == pytest.approx(4.0, rel=1e-6)
    assert gdp_epsilon(mu, 1e-5) == pytest.approx(4.0, rel=1e-6)
    assert budget["epsilon_rdp"] > 4.0  # the looser conversion, for comparison only
    assert [i["step"] for i in budget["items"]] == [
        "pe: label counts",
        "pe: nearest-neighbour histogram 1/2",
        "pe: nearest-neighbour histogram 2/2",
    ]
    assert budget["iterations"] == 2 and budget["samples_per_iteration"] == 40
    assert any("templates" in line for line in model["public"])
    assert any("label values and their names" in line for line in model["public"])
    assert any("Gaussian (DP) count" in line for line in model["private"])
    assert set(model["noisy_label_counts"]) == {"0", "1"}
    metrics = card["metrics"]
    assert 0 <= metrics["copies_of_train"]["value"] <= 1
    assert metrics["classifier"]["accuracy_real"] > 0.6  # MiniLM separates the real reviews
    assert 0 <= metrics["classifier"]["accuracy_synthetic"] <= 1
    # what the votes bought: as many released texts beside iteration 0's (80: 2 labels x 40)
    both, close = metrics["beside_iteration_0"], metrics["embedding"]
    assert close["reference"] == "holdout" and close["texts_compared"] == 40  # the holdout's
    assert both["texts"] == 80 and set(both) == {"texts", "released", "iteration_0"}
    for side in (both["released"], both["iteration_0"]):
        assert (
            side["embedding"]["frechet_distance"] > 0 and side["embedding"]["texts_compared"] == 40
        )
        assert 0 <= side["embedding"]["precision"] <= 1 and 0 <= side["embedding"]["recall"] <= 1
        assert (
            0 <= side["classifier"]["accuracy_synthetic"] <= 1
            and side["words"]["synthetic"]["p50"] > 0
        )
    html = (tmp_path / "out" / "report.html").read_text()
    assert "Gaussian DP" in html and "σ" in html
    assert "What the private votes bought" in html and "iteration 0" in html
    for sentence in sentiment(200)["text"].head(50):  # the report quotes no private text
        assert sentence not in html
    assert Ledger(ledger).find("reviews.csv").spent_epsilon == 4.0


@needs_shared
def test_labels_found_with_dp_and_text_without_labels(
    tmp_path: Path, reviews_csv: Path, minilm: MiniLMEmbedder
) -> None:
    labelled = TextSynthesisSettings(
        text_column="text",
        label_column="label",
        epsilon=4.0,
        delta=1e-5,
        iterations=2,
        samples=20,
        evaluate=False,
        embedder=minilm,
    )
    result = release_text(
        reviews_csv, out=tmp_path / "dp", settings=labelled, seed=1, ledger=tmp_path / "a.sqlite"
    )
    card = result.card
    assert card["domain_source"] == "labels: private data, DP"
    assert card["budget"]["items"][0]["mechanism"].startswith("thresholded")
    assert card["budget"]["delta_thresholds"] == pytest.approx(0.25e-5)
    # noise calibrated for the whole reserve (a quarter of delta), while the threshold's
    # tail spends less of it: the exact GDP figure at what is left is a little below 4
    tails = math.fsum(item.get("delta", 0.0) for item in card["budget"]["items"])
    assert 0 < tails <= 0.25e-5
    exact = gdp_epsilon(card["budget"]["gdp_mu"], 1e-5 - tails)
    assert card["epsilon_spent"] == pytest.approx(exact, rel=1e-9)
    assert 3.9 < card["epsilon_spent"] <= 4.0
    assert card["budget"]["accounting"] == "gdp"
    assert set(card["model"]["label_names"]) == {"0", "1"}
    # "0" and "1" have no sections in the bundled vocabulary: said, not hidden
    assert any("no sections for the label '0'" in n for n in card["notes"])
    assert any("found with DP" in n for n in card["notes"])

    plain = release_text(
        reviews_csv,
        out=tmp_path / "plain",
        settings=replace(labelled, label_column=None),
        seed=2,
        ledger=tmp_path / "b.sqlite",
    )
    assert list(plain.synthetic.columns) == ["text"] and plain.card["rows_out"] > 0
    assert plain.card["epsilon_spent"] == pytest.approx(4.0, rel=1e-6)


def test_bad_settings_fail_before_any_spend(tmp_path: Path) -> None:
    frame = pd.DataFrame({"text": ["good", "bad"] * 50, "label": ["1", "0"] * 50})
    ledger = tmp_path / "ledger.sqlite"
    cases: list[tuple[dict[str, object], type[Exception], str]] = [
        ({"text_column": "body"}, InputError, "no column 'body'"),
        ({"text_column": "text", "backend": TextBackend("local")}, InputError, "--model PATH"),
        ({"text_column": "text", "backend": TextBackend("gpt")}, InputError, "unknown --api"),
        ({"text_column": "text", "label_names": {"1": "a"}}, InputError, "needs --label-column"),
        ({"text_column": "text", "samples": 500}, BudgetError, "use --samples"),
        ({"text_column": "text", "selection": "best"}, InputError, "'rank' or 'sample'"),
        ({"text_column": "text", "selection": "rank", "offspring": 1}, InputError, "at least 2"),
        ({"text_column": "text", "offspring": 3}, InputError, "needs rank selection"),
        (
            {"text_column": "text", "backend": TextBackend("word", prompts=Path("p.txt"))},
            InputError,
            "--prompts applies to --api openai-compatible and local",
        ),
    ]
    for options, kind, message in cases:
        with pytest.raises(kind, match=message):
            release_text(
                frame,
                out=tmp_path / "o",
                ledger=ledger,
                settings=TextSynthesisSettings(epsilon=1.0, **options),
            )
    assert not Ledger(ledger).datasets() and not (tmp_path / "o").exists()
