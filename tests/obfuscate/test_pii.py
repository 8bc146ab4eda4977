"""Planted PII: where the entities land in the tokens, and how their recovery is scored."""

from __future__ import annotations

import numpy as np
import pytest

from safeshare.errors import InputError
from safeshare.obfuscate.model import FrozenModel
from safeshare.obfuscate.pii import (
    FIRST_NAMES,
    SURNAMES,
    PlantedText,
    pii_positions,
    plant_pii,
    score_pii,
)
from tests.obfuscate.conftest import TEXTS


def test_planted_entities_are_found_in_the_tokens(minilm: FrozenModel) -> None:
    planted = plant_pii(TEXTS, np.random.default_rng(3))
    assert planted == plant_pii(TEXTS, np.random.default_rng(3))  # seeded generator only
    for item, original in zip(planted, TEXTS, strict=True):
        (a, b, _), (c, d, _) = item.spans
        first, last = item.text[a:b].split(" ")
        assert first in FIRST_NAMES and last in SURNAMES
        number = item.text[c:d]
        assert len(number) == 11 and number.isdigit()
        assert item.text.replace(f"{item.text[a:d]} ", "").replace(f" {item.text[a:d]}", "") in (
            original,
            original.strip(),
        )
    entity, kinds = pii_positions(minilm, planted)
    batch = minilm.tokenize([p.text for p in planted])
    assert entity.shape == tuple(batch.input_ids.shape) and kinds == ["name", "number"] * 4
    for index in range(len(kinds)):
        row = index // 2
        ids = batch.input_ids[row][entity[row] == index].tolist()
        start, end, _ = planted[row].spans[index % 2]
        expected = planted[row].text[start:end].lower()
        assert minilm.tokenizer.decode(ids).replace(" ", "") == expected.replace(" ", "")


def test_pii_scores_tokens_and_whole_entities(minilm: FrozenModel) -> None:
    planted = plant_pii(TEXTS, np.random.default_rng(0))
    entity, kinds = pii_positions(minilm, planted)
    ids = minilm.tokenize([p.text for p in planted]).input_ids.numpy()
    exact = {r.kind: r for r in score_pii(ids, ids, entity, kinds, "oracle")}
    assert exact["name"].tokens.value == 1.0 and exact["number"].entities.value == 1.0
    assert exact["name"].entities.trials == len(TEXTS)
    wrong = ids.copy()
    for index in range(len(kinds)):
        first = np.argwhere(entity == index)[0]
        wrong[tuple(first)] = 0  # one token of every entity wrong
    missed = {r.kind: r for r in score_pii(wrong, ids, entity, kinds, "one off")}
    assert missed["name"].entities.value == 0.0 and missed["number"].entities.value == 0.0
    assert 0.0 < missed["number"].tokens.value < 1.0
    low, high = missed["number"].tokens.interval
    assert low < missed["number"].tokens.value < high
    with pytest.raises(InputError, match="do not match"):
        score_pii(ids[:, :3], ids, entity, kinds, "bad")
    with pytest.raises(InputError, match="numpy Generator"):
        plant_pii(TEXTS, 0)  # type: ignore[arg-type]


def test_truncated_entities_are_not_counted(minilm: FrozenModel) -> None:
    head = "James Smith on 01234567890"
    text = head + " " + " ".join(["word"] * 100) + " Mary Jones"
    tail = len(text) - len("Mary Jones")
    item = PlantedText(text, ((0, 11, "name"), (15, 26, "number"), (tail, len(text), "name")))
    entity, kinds = pii_positions(minilm, [item])  # 64 tokens: the last name is cut off
    assert kinds == ["name", "number"]
    assert set(entity[0].tolist()) == {-1, 0, 1}
