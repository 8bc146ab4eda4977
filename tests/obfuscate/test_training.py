"""Training: the loss moves the transform the chosen way, and a curve is recorded."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
import torch

from safeshare.errors import InputError
from safeshare.obfuscate.audit import f1_score
from safeshare.obfuscate.head import fit_head
from safeshare.obfuscate.inversion import Adversary
from safeshare.obfuscate.model import FrozenModel
from safeshare.obfuscate.training import BUDGET_RATE, train_transform
from safeshare.obfuscate.transform import torch_generator
from tests.conftest import SHARED, needs_shared
from tests.obfuscate.conftest import TEXTS


def test_training_records_a_curve_and_raises_the_noise(minilm: FrozenModel) -> None:
    seen: list[float] = []
    result = train_transform(
        minilm,
        TEXTS * 2,
        weight=1.0,
        steps=6,
        batch_size=4,
        record_every=3,
        probe_size=4,
        seed=0,
        progress=lambda step, done: seen.append(done),
    )
    assert [point.step for point in result.curve] == [3, 6]
    assert result.seeded and seen[-1] == 1.0
    assert result.curve[-1].noise_level > result.curve[0].noise_level - 1e-6
    assert 0.0 <= result.curve[-1].recovery <= 1.0
    assert result.attacker == "learned-inverter"  # the default: an adversary that learns
    assert all(0.0 <= point.inverter_recovery <= 1.0 for point in result.curve)  # type: ignore[operator]


def test_training_against_nearest_neighbour_has_no_inverter_on_its_curve(
    minilm: FrozenModel,
) -> None:
    result = train_transform(
        minilm, TEXTS, steps=2, batch_size=2, probe_size=4, attacker="nearest-neighbour", seed=0
    )
    assert result.attacker == "nearest-neighbour"
    assert [point.inverter_recovery for point in result.curve] == [None]


def test_bad_training_arguments_are_refused(minilm: FrozenModel) -> None:
    with pytest.raises(InputError, match="weight"):
        train_transform(minilm, TEXTS, weight=-1.0)
    with pytest.raises(InputError, match="at least 2"):
        train_transform(minilm, TEXTS[:1])
    with pytest.raises(InputError, match="'oracle' is not one of learned-inverter"):
        train_transform(minilm, TEXTS, attacker="oracle")
    for budget in (0.0, -1.0, float("inf"), float("nan")):
        with pytest.raises(InputError, match="utility budget must be a finite number > 0"):
            train_transform(minilm, TEXTS, utility_budget=budget)
    # (each names the option a user of the command line gave, and only the one at fault)
    with pytest.raises(InputError, match=r"^steps \(--steps\) is 0; it must be at least 1 and"):
        train_transform(minilm, TEXTS, steps=0)
    with pytest.raises(InputError, match=r"^batch_size \(--batch-size\) is -2; it must be at"):
        train_transform(minilm, TEXTS, batch_size=-2)


def test_a_utility_budget_raises_the_weight_below_it_and_lowers_it_above(
    minilm: FrozenModel,
) -> None:
    def trained(budget: float) -> tuple[float, list[float | None]]:
        result = train_transform(
            minilm,
            TEXTS,
            weight=1.0,
            utility_budget=budget,
            steps=4,
            batch_size=4,
            record_every=1,
            probe_size=4,
            seed=0,
        )
        assert result.utility_budget == budget
        return result.weight, [point.weight for point in result.curve]

    # 1 - cos is at most 2, far below a budget of 100: every step raises the weight
    loose, loose_curve = trained(100.0)
    assert loose_curve[0] == 1.0 and loose == pytest.approx(math.exp(4 * BUDGET_RATE), rel=1e-3)
    assert loose_curve == sorted(loose_curve) and len(set(loose_curve)) == 4
    # a budget no batch meets: the excess is capped at 1, so each step divides by exp(rate)
    tight, tight_curve = trained(1e-9)
    assert tight == pytest.approx(math.exp(-4 * BUDGET_RATE)) and tight_curve[-1] < 1.0


def test_steps_over_the_budget_train_on_the_utility_alone(minilm: FrozenModel) -> None:
    def curve(budget: float | None) -> tuple[list[float], list[float]]:
        result = train_transform(
            minilm, TEXTS, weight=4.0, utility_budget=budget, steps=4, batch_size=4,
            record_every=1, probe_size=4, seed=0,
        )  # fmt: skip
        points = result.curve
        return [p.noise_level for p in points], [p.utility_loss or 0.0 for p in points]

    # with the obfuscation term at weight 4 the noise climbs; over budget (every batch) only
    # the utility trains: the noise stays where it started and the utility loss falls
    noise, _ = curve(None)
    assert noise[-1] - noise[0] > 0.1
    noise, loss = curve(1e-9)
    assert abs(noise[-1] - noise[0]) < 0.02 and loss[-1] < loss[0] / 2


@pytest.mark.slow
@needs_shared
def test_trained_transform_is_stochastic_yet_keeps_utility_on_held_out_texts(
    minilm: FrozenModel,
) -> None:
    assert SHARED is not None
    path = Path(SHARED) / "text" / "sms_spam_collection.tsv"
    texts = pd.read_csv(path, sep="\t", header=None, names=["label", "text"], quoting=3)["text"]
    train, held_out = texts.iloc[:160].tolist(), texts.iloc[1000:1040].tolist()
    result = train_transform(minilm, train, weight=0.05, steps=40, seed=0)
    batch = minilm.tokenize(held_out)
    generator = torch_generator(2)[0]
    with torch.no_grad():
        clean = minilm.embed_tokens(batch.input_ids)
        target = minilm.pooled(clean, batch.attention_mask)
        first = result.transform.sample(clean, batch.attention_mask, generator)
        second = result.transform.sample(clean, batch.attention_mask, generator)
        cosine = torch.nn.functional.cosine_similarity(
            minilm.pooled(first, batch.attention_mask), target
        )
    assert not torch.equal(first, second)
    assert float(cosine.mean()) > 0.6  # the benchmark's probe: 0.72-0.77 after 40 steps


def test_the_task_loss_needs_a_head_and_one_known_label_per_text(minilm: FrozenModel) -> None:
    labels = ["ham", "spam", "ham", "ham"]
    head = fit_head(minilm, TEXTS, labels)
    with pytest.raises(InputError, match="both a classification head and the texts' labels"):
        train_transform(minilm, TEXTS, head=head, steps=1)
    with pytest.raises(InputError, match="both a classification head and the texts' labels"):
        train_transform(minilm, TEXTS, labels=labels, steps=1)
    with pytest.raises(InputError, match="3 labels for 4 texts"):
        train_transform(minilm, TEXTS, head=head, labels=labels[:3], steps=1)
    with pytest.raises(InputError, match="1 label\\(s\\) are not among the head's 2 classes"):
        train_transform(minilm, TEXTS, head=head, labels=[*labels[:3], "other"], steps=1)
    result = train_transform(minilm, TEXTS, head=head, labels=labels, steps=2, batch_size=2)
    assert result.task_loss and not train_transform(minilm, TEXTS, steps=1).task_loss


@pytest.mark.slow
@needs_shared
def test_the_task_loss_keeps_the_heads_predictions_where_the_cosine_alone_does_not(
    minilm: FrozenModel,
) -> None:
    """Same weight, seed and steps; F1 of the spam head on obfuscated held-out texts."""
    assert SHARED is not None
    path = Path(SHARED) / "text" / "sms_spam_collection.tsv"
    sms = pd.read_csv(path, sep="\t", header=None, names=["label", "text"], quoting=3)
    train, held_out = sms.iloc[:240], sms.iloc[1000:1200]
    texts, labels = train["text"].tolist(), train["label"].tolist()
    head = fit_head(minilm, texts, labels)
    batch = minilm.tokenize(held_out["text"].tolist())
    truth = held_out["label"].tolist()
    scores = {}
    for task in (False, True):
        chosen = {"head": head, "labels": labels} if task else {}
        result = train_transform(minilm, texts, weight=0.6, steps=20, seed=0, **chosen)
        with torch.no_grad():
            clean = minilm.embed_tokens(batch.input_ids)
            sent = result.transform.sample(clean, batch.attention_mask, torch_generator(1)[0])
            pooled = minilm.pooled(sent, batch.attention_mask).numpy()
        scores[task] = f1_score(truth, head.predict(pooled), "spam")
    assert scores[True] > scores[False] + 0.15  # measured 0.95 against 0.39


def test_the_adversary_learns_what_nearest_neighbour_misses_and_its_exposure_follows(
    minilm: FrozenModel,
) -> None:
    """Negated embeddings hide every token from nearest neighbour; the adversary, trained on
    fresh draws of them, learns the way back, and its exposure (the privacy term) rises."""
    batch = minilm.tokenize(TEXTS)
    generator = torch_generator(0)[0]
    with torch.no_grad():
        sent = -minilm.embed_tokens(batch.input_ids)
    adversary = Adversary(minilm, seed=0)
    before = float(adversary.exposure(sent, batch, generator))
    for _ in range(40):
        adversary.learn(lambda: sent, batch, generator)
    after = float(adversary.exposure(sent, batch, generator))
    assert 0.0 <= before < 0.05 and after > 0.5


def test_the_exposure_still_pushes_where_the_adversary_is_sure(minilm: FrozenModel) -> None:
    """On clean embeddings the adversary (as nearest neighbour) is sure of every token: the
    mean log-probability's slope has all but vanished there, the exposure's has not."""
    batch = minilm.tokenize(TEXTS)
    generator = torch_generator(0)[0]
    adversary = Adversary(minilm, seed=0)
    slopes = []
    for score in (
        lambda sent: adversary.exposure(sent, batch, generator),
        lambda sent: adversary.inverter.log_likelihood(sent, batch, generator, 4096)[0].mean(),
    ):
        sent = minilm.embed_tokens(batch.input_ids).detach().requires_grad_(True)
        score(sent).backward()
        slopes.append(float(sent.grad.norm()))
    assert slopes[0] > 10 * slopes[1]
