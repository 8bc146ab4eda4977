"""The byte-level causal LM: memorization without DP, none at small epsilon, cards, errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("opacus")

from safeshare.errors import InputError
from safeshare.train.dpsgd import check_opacus_layers
from safeshare.train.extraction import (
    canary_exposure,
    edit_similarity,
    extraction_rates,
    make_digit_canaries,
)
from safeshare.train.language_model import (
    LanguageModel,
    LanguageModelSettings,
    build_network,
    sequences,
    train_language_model,
)
from tests.conftest import SHARED, needs_shared

pytestmark = [
    needs_shared,
    pytest.mark.filterwarnings("ignore:.*were cut to it"),
    pytest.mark.usefixtures("one_torch_thread"),
]


def sms_texts() -> list[str]:
    assert SHARED is not None
    path = SHARED / "text" / "sms_spam_collection.tsv"
    frame = pd.read_csv(path, sep="\t", header=None, names=["label", "text"], quoting=3)
    return [str(t) for t in frame["text"]]


SMALL = LanguageModelSettings(context=48, width=48, layers=1, heads=2, batch_size=20)


@pytest.fixture(scope="module")
def memorizer() -> tuple[LanguageModel, list[str], list[str], object]:
    """A non-private model trained 200 epochs on 16 SMS texts plus 4 of 8 canaries."""
    import torch

    torch.set_num_threads(1)
    texts = sms_texts()
    canaries = make_digit_canaries(4, 4, digits=4, rng=np.random.default_rng(0))
    settings = LanguageModelSettings(**{**SMALL.__dict__, "epochs": 200.0})
    model = train_language_model(
        texts[:16] + canaries.training_texts(), epsilon=None, settings=settings, seed=0
    )
    return model, texts[:16], texts[100:140], canaries


def test_the_network_is_one_opacus_trains() -> None:
    check_opacus_layers(build_network(SMALL, None))


def test_sequences_are_begin_token_then_bytes_with_padding_ignored() -> None:
    ids, labels, cut = sequences(["ab", "", "abcdefghijk"], 8)
    assert ids[0, :3].tolist() == [256, 97, 0] and labels[0, :3].tolist() == [97, 98, -100]
    assert labels[1].tolist() == [-100] * 8 and ids[1, 0] == 256
    assert cut == 1 and labels[2].tolist() == list(b"abcdefgh")


def test_without_dp_training_texts_are_extracted_and_canaries_exposed(memorizer) -> None:
    model, members, nonmembers, canaries = memorizer
    result = extraction_rates(model, members, nonmembers, prefix=12, suffix=16)
    assert result.exact_members.interval[0] > result.exact_nonmembers.interval[1]
    assert result.approximate_members.value >= result.exact_members.value > 0.8
    assert result.exact_nonmembers.value < 0.1
    assert "memorization (intervals apart)" in result.readings()[0]
    exposure = canary_exposure(model, canaries, rng=np.random.default_rng(1))
    assert exposure.space_bits == pytest.approx(np.log2(10_000))
    assert exposure.inserted_mean > 9.0 and exposure.held_out_mean < 4.0
    assert "exact rank" in exposure.describe()["method"]
    sampled = canary_exposure(
        model, canaries, enumerate_up_to=10, samples=2000, rng=np.random.default_rng(2)
    )
    assert sampled.inserted_mean > 8.0  # at most log2(2001) = 10.97 can be resolved
    assert np.all(sampled.exposures <= np.log2(10_000) + 1e-9)


def test_save_load_and_the_card(memorizer, tmp_path: Path) -> None:
    model, members, _, _ = memorizer
    folder = model.save(tmp_path / "lm")
    assert sorted(p.name for p in folder.iterdir()) == [
        ".safeshare-output",
        "card.json",
        "model.safetensors",
    ]
    card = json.loads((folder / "card.json").read_text())
    assert card["model"]["kind"] == "causal language model"
    assert "public" in card["model"]["vocabulary"] and card["model"]["context"] == 48
    assert card["privacy"] == {"guarantee": "none (not differentially private)", "epsilon": None}
    again = LanguageModel.load(folder)
    np.testing.assert_allclose(
        again.log_likelihoods(members[:4]), model.log_likelihoods(members[:4])
    )


def test_dp_at_small_epsilon_does_not_memorize_canaries(tmp_path: Path) -> None:
    texts = sms_texts()
    canaries = make_digit_canaries(6, 6, digits=4, rng=np.random.default_rng(3))
    settings = LanguageModelSettings(**{**SMALL.__dict__, "epochs": 1.0, "batch_size": 40})
    model = train_language_model(
        texts[:300] + canaries.training_texts(), epsilon=1.0, settings=settings, seed=0
    )
    privacy = model.card["privacy"]
    assert privacy["epsilon"] <= 1.0 and privacy["sampling"] == "poisson"
    assert "one text" in privacy["privacy_unit"] and privacy["steps"] == 8
    assert privacy["noise_multiplier"] > 0.5
    exposure = canary_exposure(model, canaries, rng=np.random.default_rng(4))
    assert exposure.inserted_mean < 4.0  # a memorized canary scores ~13 bits
    assert abs(exposure.inserted_mean - exposure.held_out_mean) < 2.5
    model.save(tmp_path / "dp")
    card = json.loads((tmp_path / "dp" / "card.json").read_text())
    assert card["privacy"]["guarantee"].endswith("-DP") and card["training"]["seeded"] is True


def test_a_learning_curve_scores_every_step_and_leaves_the_training_as_it_was() -> None:
    import torch

    texts = sms_texts()[:200]
    settings = LanguageModelSettings(**{**SMALL.__dict__, "epochs": 1.0, "batch_size": 40})
    plain = train_language_model(texts, epsilon=4.0, settings=settings, seed=5)
    seen: list[tuple[int, float, bool]] = []

    def score(taken: int, model: LanguageModel) -> None:
        seen.append((taken, float(model.losses(texts[:20]).mean()), model.module.training))

    curved = train_language_model(texts, epsilon=4.0, settings=settings, seed=5, after_step=score)
    assert [t for t, _, _ in seen] == list(range(1, curved.card["privacy"]["steps"] + 1))
    assert not any(training for _, _, training in seen)  # scored in evaluation mode
    # scoring neither draws randomness nor leaves the module out of training mode
    for a, b in zip(plain.module.parameters(), curved.module.parameters(), strict=True):
        assert torch.equal(a, b)
    assert seen[-1][1] == pytest.approx(float(curved.losses(texts[:20]).mean()), rel=1e-6)
    assert seen[0][1] > seen[-1][1]  # the held texts' loss falls from the first step
    with pytest.raises(InputError, match="record-level DP"):
        train_language_model(texts, epsilon=None, settings=settings, after_step=score)


def test_bad_texts_name_the_column_never_a_text() -> None:
    with pytest.raises(InputError, match="'body' is empty"):
        train_language_model([None, None], epsilon=None, text_column="body")
    with pytest.raises(InputError, match="'body' is empty"):
        train_language_model(["", "  "], epsilon=None, text_column="body")
    with pytest.raises(InputError, match="'body' has 1 missing") as caught:
        train_language_model(["secret text 42", None], epsilon=1.0, text_column="body")
    assert "secret" not in str(caught.value)
    with pytest.raises(InputError, match="multiple of heads"):
        LanguageModelSettings(width=30, heads=4)


def test_sequence_labels_refuse_other_clippings() -> None:
    import torch

    from safeshare.train.dpsgd import DPSGDSettings, run_dpsgd

    settings = DPSGDSettings(
        records=10, batch_size=2, epochs=1, epsilon=1, delta=1e-3, clipping="hooks"
    )
    with pytest.raises(InputError, match="clipping='ghost'"):
        run_dpsgd(
            build_network(SMALL, None),
            torch.zeros((10, 4), dtype=torch.long),
            torch.zeros((10, 4), dtype=torch.long),
            settings,
            make_optimizer=torch.optim.Adam,
            generator=torch.Generator(),
            seeded=True,
        )


def test_extraction_checks_its_arguments(memorizer) -> None:
    model, members, nonmembers, _ = memorizer
    with pytest.raises(InputError, match="exceed the model's context"):
        extraction_rates(model, members, nonmembers, prefix=40, suffix=16)
    with pytest.raises(InputError, match="no training or no held-out"):
        extraction_rates(model, ["short"], nonmembers, prefix=8, suffix=8)
    assert edit_similarity(b"", b"") == 1.0 and edit_similarity(b"abc", b"xyz") == 0.0
    with pytest.raises(InputError, match="at most 50"):
        make_digit_canaries(40, 40, digits=2, rng=np.random.default_rng(0))
