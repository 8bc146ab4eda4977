"""DP fine-tuning of a pretrained causal LM (a tiny Llama written to a folder, as a local model)."""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("opacus")
pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

from safeshare.errors import InputError  # noqa: E402
from safeshare.train.extraction import extraction_rates  # noqa: E402
from safeshare.train.fine_tune import (  # noqa: E402
    Base,
    FineTunedModel,
    FineTuner,
    FineTuneSettings,
)
from safeshare.train.lm_audit import audit_language_model  # noqa: E402
from tests.train.tiny_causal_lm import SENTENCES, write_tiny_causal_lm  # noqa: E402

pytestmark = [
    pytest.mark.filterwarnings("ignore:.*were cut to it"),
    pytest.mark.usefixtures("one_torch_thread"),
]

TEXTS = [f"{s} {i}" for i in range(8) for s in SENTENCES]  # 40 short texts


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Base:
    return Base.load(write_tiny_causal_lm(tmp_path_factory.mktemp("tiny")))


def tuner(base: Base, **settings: object) -> FineTuner:
    shape = {"context": 48, "trained_layers": 2, "batch_size": 8, "epochs": 2.0,
             "accountant": "rdp", **settings}  # fmt: skip
    return FineTuner(base, FineTuneSettings(**shape))  # type: ignore[arg-type]


def test_the_untrained_adapters_are_the_base_model(base: Base) -> None:
    """The frozen lower layers, the top layers on their output and the head at real tokens
    give the loss the whole network gives."""
    fine = tuner(base)
    ids, labels, cut = fine.tokens(TEXTS[:6])
    assert cut == 0
    with torch.no_grad():
        logits = base.network(input_ids=ids).logits
    expected = torch.nn.functional.cross_entropy(
        logits.transpose(1, 2), labels, ignore_index=-100, reduction="none"
    ).sum(dim=1)
    sums, counts = fine.untrained().token_losses(fine.encode(TEXTS[:6]))
    np.testing.assert_allclose(sums, expected.double().numpy(), rtol=1e-4)
    assert list(counts) == [int(c) for c in (labels != -100).sum(dim=1)]
    assert list(counts) == [len(fine.untrained().units(t)) + 1 for t in TEXTS[:6]]


def test_texts_are_cut_to_the_context_and_counted(base: Base) -> None:
    fine = tuner(base, context=8)
    data = fine.encode(["a " * 30, "the fox"])
    assert data.truncated == 1
    assert (data.labels[0] != -100).sum() == 8  # cut: no end-of-text
    assert (data.labels[1] != -100).sum() == len(fine.untrained().units("the fox")) + 1
    with pytest.warns(UserWarning, match="1 of 2 texts .* were cut"):
        tuner(base, context=8, batch_size=1).train(data, epsilon=None, seed=0)


def test_without_dp_the_training_texts_are_learned_and_at_small_epsilon_hardly(
    base: Base,
) -> None:
    fine = tuner(base, epochs=20.0, learning_rate=3e-2)
    data = fine.encode(TEXTS)
    before = fine.untrained().perplexity(data)
    free = fine.train(data, epsilon=None, seed=1).perplexity(data)
    private = fine.train(data, epsilon=0.5, delta=1e-3, seed=1)
    assert free < before / 3  # memorized
    assert math.log(before / private.perplexity(data)) < 0.5 * math.log(before / free)
    privacy = private.card["privacy"]
    assert privacy["epsilon"] <= 0.5 + 1e-9
    assert privacy["clipping"].startswith("per-sample, flat (linear-ghost")
    assert privacy["privacy_unit"].startswith("record (one text")
    assert private.card["model"]["parameters"] == sum(
        p.numel() for p in private.adapters.parameters()
    )


def test_a_seed_reproduces_the_adapters_and_the_saved_model_reloads(base: Base, tmp_path) -> None:
    fine = tuner(base)
    data = fine.encode(TEXTS)
    first = fine.train(data, epsilon=4.0, delta=1e-3, seed=7)
    again = fine.train(data, epsilon=4.0, delta=1e-3, seed=7)
    for a, b in zip(first.adapters.parameters(), again.adapters.parameters(), strict=True):
        assert torch.equal(a, b)
    assert first.card["training"]["seeded"] is True
    first.save(tmp_path / "model")
    loaded = FineTunedModel.load(tmp_path / "model", base)
    np.testing.assert_allclose(
        loaded.log_likelihoods(TEXTS[:5]), first.log_likelihoods(TEXTS[:5]), rtol=1e-5
    )
    assert not np.allclose(
        loaded.log_likelihoods(TEXTS[:5]), fine.untrained().log_likelihoods(TEXTS[:5])
    )


def test_adapters_are_refused_on_another_base(base: Base, tmp_path) -> None:
    fine = tuner(base)
    fine.train(fine.encode(TEXTS), epsilon=None, seed=0).save(tmp_path / "model")
    other = Base.load(write_tiny_causal_lm(tmp_path / "other", seed=1))
    with pytest.raises(InputError, match="fingerprints differ"):
        FineTunedModel.load(tmp_path / "model", other)


def test_generation_is_seeded_and_greedy_decoding_continues_prompts(base: Base) -> None:
    fine = tuner(base, epochs=30.0, learning_rate=1e-2)
    model = fine.train(fine.encode(SENTENCES), epsilon=None, seed=2)
    drawn = model.generate(5, seed=3)
    assert drawn == model.generate(5, seed=3)
    assert len(drawn) == 5 and all(isinstance(t, str) for t in drawn)
    assert model.generate(5, seed=4) != drawn
    # a memorized text comes back from its first tokens
    units = model.units(SENTENCES[0])
    (decoded,) = model.greedy([units[:3]], 4)
    assert decoded == units[3:7]
    with pytest.raises(InputError, match="context"):
        model.greedy([units[:3]], model.context)
    rates = extraction_rates(
        model, SENTENCES, ["a held out text of some length here"], prefix=2, suffix=2
    )
    assert rates.unit == "tokens" and rates.exact_members.trials == len(SENTENCES)


def test_the_canary_audit_takes_the_base_model(base: Base) -> None:
    settings = FineTuneSettings(
        context=48, trained_layers=2, batch_size=8, epochs=8.0, learning_rate=3e-2, accountant="rdp"
    )
    free = audit_language_model(
        TEXTS,
        None,
        settings,
        canaries=40,
        digits=4,
        base=base,
        exposure_samples=200,
        rng=np.random.default_rng(0),
    )
    assert free.claimed_epsilon is None
    assert free.exposure.inserted_mean > free.exposure.held_out_mean
    assert free.membership.auc > 0.7


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"trained_layers": 4}, "exceeds the model's 3 decoder layers"),
        ({"context": 65}, "exceeds the model's 64 positions"),
        ({"context": 2}, "--context must lie in"),
        ({"rank": 0}, "--rank must be a positive"),
        ({"learning_rate": float("nan")}, "--learning-rate"),
    ],
)
def test_settings_the_base_cannot_take_are_refused(base: Base, settings, message) -> None:
    with pytest.raises(InputError, match=message):
        tuner(base, **settings)


def test_a_model_that_is_not_a_causal_lm_is_refused(tmp_path) -> None:
    with pytest.raises(InputError, match=r"no local model"):
        Base.load(tmp_path / "missing")


def test_dp_steps_on_empty_poisson_batches_add_noise_alone(base: Base) -> None:
    """Batch 1 of 12 texts: about a third of the Poisson draws hold no text at all."""
    fine = tuner(base, batch_size=1, epochs=3.0)
    data = fine.encode(TEXTS[:12])
    model = fine.train(data, epsilon=2.0, delta=1e-3, seed=5)
    assert model.card["privacy"]["steps"] == 36
    moved = [float(p.abs().sum()) for p in model.adapters.parameters()]
    assert all(np.isfinite(moved)) and any(m > 0 for m in moved)
