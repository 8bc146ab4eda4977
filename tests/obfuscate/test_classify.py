"""Classification through the server: a head saved with the transform, applied on the client."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import torch

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from safeshare.errors import InputError
from safeshare.obfuscate.client import ObfuscatingClient
from safeshare.obfuscate.head import HEAD_CONFIG, ClassificationHead, fit_head
from safeshare.obfuscate.model import FrozenModel
from safeshare.obfuscate.server import create_app, serve_in_thread
from safeshare.obfuscate.transform import ObfuscationTransform, torch_generator

HAM = [
    "Call me when you get home, the meeting moved to Friday at noon.",
    "Sorry I missed your call, can we talk tomorrow morning?",
    "I'll be late, the train is stuck outside the station",
    "Are we still on for lunch tomorrow at one?",
    "Can you pick up milk on the way back?",
    "Happy birthday! See you at dinner tonight",
]
SPAM = [
    "WINNER! You have won a free holiday, reply YES to claim your prize now",
    "URGENT: your prize of 1000 pounds is waiting, call now to claim",
    "Free ringtones! Text STOP to end, 150p per message",
    "Congratulations, you have been selected for a cash award, call 0800 now",
    "Claim your free mobile upgrade today, text WIN to 80082",
    "You won a guaranteed 500 pound voucher, reply CLAIM to collect",
]


@pytest.fixture(scope="module")
def saved(minilm: FrozenModel, tmp_path_factory: pytest.TempPathFactory) -> Path:
    transform = ObfuscationTransform.for_model(minilm, seed=1)
    with torch.no_grad():
        transform.network.log_scale.bias.fill_(-2.0)  # visible noise, utility still high
    transform.head = fit_head(minilm, HAM + SPAM, ["ham"] * 6 + ["spam"] * 6)
    folder = tmp_path_factory.mktemp("classify") / "transform"
    transform.save(folder)
    return folder


@pytest.fixture(scope="module")
def url(minilm: FrozenModel) -> Iterator[str]:
    with serve_in_thread(create_app(minilm, max_texts=4)) as base:
        yield base


def test_classify_through_the_server_matches_the_head_on_clean_inputs(
    minilm: FrozenModel, saved: Path, url: str
) -> None:
    transform = ObfuscationTransform.load(saved, minilm)
    head = transform.head
    assert head is not None and head.classes == ("ham", "spam")
    assert json.loads((saved / HEAD_CONFIG).read_text())["fingerprint"] == minilm.fingerprint
    texts = ["Free entry to win a prize, text WIN now", "See you at the station at six", *HAM[:3]]
    client = ObfuscatingClient(transform, url, model=minilm, generator=torch_generator(3)[0])
    result = client.classify(texts)  # 5 texts: two requests of <= 4
    assert result.classes == ("ham", "spam") and result.probabilities.shape == (5, 2)
    assert np.allclose(result.probabilities.sum(axis=1), 1.0)
    batch = minilm.tokenize(texts)
    with torch.no_grad():
        clean = minilm.pooled(minilm.embed_tokens(batch.input_ids), batch.attention_mask)
    assert result.labels == head.predict(clean.numpy())
    assert result.labels[:2] == ["spam", "ham"]


def test_a_head_for_another_model_or_no_head_is_refused(
    minilm: FrozenModel, saved: Path, url: str
) -> None:
    other = ClassificationHead(np.zeros((2, 384)), np.zeros(2), ["a", "b"], "f" * 64)
    with pytest.raises(InputError, match="trained for the model with embedding table ffff"):
        other.check_model(minilm)
    other.write(saved.parent / "copy")
    for name in ("transform.json", "transform.safetensors"):
        (saved.parent / "copy" / name).write_bytes((saved / name).read_bytes())
    with pytest.raises(InputError, match="classification head was trained"):
        ObfuscationTransform.load(saved.parent / "copy", minilm)
    bare = ObfuscationTransform.for_model(minilm, seed=0)
    client = ObfuscatingClient(bare, url, model=minilm)
    with pytest.raises(InputError, match="--label-column"):
        client.classify(["hello"])
    with pytest.raises(InputError, match="needs at least 2"):
        ClassificationHead.fit(np.zeros((3, 4)), ["a", "a", "a"], fingerprint="0" * 64)


def test_an_attack_refuses_labels_its_f1_cannot_score(minilm: FrozenModel, saved: Path) -> None:
    from safeshare.obfuscate.audit import attack_transform

    transform = ObfuscationTransform.load(saved, minilm)
    texts, public = HAM[:2] + SPAM[:2], HAM[2:] + SPAM[2:]

    def attack(labels: list[str], sigmas: tuple[float, ...] = ()) -> None:
        attack_transform(
            minilm, transform, texts, public, labels=labels, sigmas=sigmas, plant=False,
            inverter_steps=0, beam=1, seed=0,
        )  # fmt: skip

    # labels written another way than the head's classes scored F1 0, as if utility were lost
    with pytest.raises(InputError, match=r"2 of the 4 labels \(2 distinct\) are none of the h"):
        attack(["ham", "Ham", "spam", "SPAM "])
    with pytest.raises(InputError, match="no attacked text is of the class 'spam'"):
        attack(["ham"] * 4)
    with pytest.raises(InputError, match=r"sigmas must be finite numbers > 0, not \[inf\]"):
        attack(["ham", "ham", "spam", "spam"], sigmas=(float("inf"),))
