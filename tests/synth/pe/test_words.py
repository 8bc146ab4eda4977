"""The word-level text APIs: public material only, label conditioning, edits by degree."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from safeshare.errors import InputError
from safeshare.synth.pe.words import Vocabulary, WordAPI

TOY = """
[templates]
The {noun} was {adj}.
{Adj} {noun}.
[noun]
soup
film
[adj@positive]
great
lovely
[adj@negative]
awful
bland
[insert]
very
"""


def test_random_fills_every_slot_from_the_labels_sections() -> None:
    api = WordAPI(Vocabulary.parse(TOY), label="positive")
    texts = api.random(200, np.random.default_rng(0))["text"]
    assert not texts.str.contains(r"[{}]").any()
    words = {w.lower() for t in texts for w in re.findall(r"\w+", t)}
    assert {"great", "lovely", "soup", "film"} <= words
    assert not words & {"awful", "bland"}  # the other label's words never appear
    assert texts.str.match(r"^[A-Z]").all()  # {Adj} capitalizes


def test_without_a_label_both_labels_sections_fill_the_slot() -> None:
    texts = WordAPI(Vocabulary.parse(TOY)).random(300, np.random.default_rng(1))["text"]
    words = {w.lower() for t in texts for w in re.findall(r"\w+", t)}
    assert {"great", "awful"} <= words


def test_the_bundled_vocabulary_serves_both_sentiment_labels() -> None:
    vocabulary = Vocabulary.bundled("reviews")
    assert vocabulary.labels() == ["negative", "positive"]
    api = WordAPI(vocabulary)
    for label in vocabulary.labels():
        texts = api.for_label(label).random(50, np.random.default_rng(2))["text"]
        assert texts.str.len().min() > 3


def test_variation_edits_a_share_of_words_that_grows_with_degree() -> None:
    api = WordAPI(Vocabulary.bundled("reviews"), label="negative")
    texts = pd.DataFrame({"text": ["the food was cold and the service was slow and rude"] * 300})

    def changed(degree: float) -> float:
        varied = api.vary(texts, degree, np.random.default_rng(3))["text"]
        before = texts["text"][0].split()
        return float(
            np.mean([sum(a != b for a, b in zip(before, v.split(), strict=False)) for v in varied])
        )

    low, high = changed(0.1), changed(0.6)
    assert 0 < low < high
    varied = api.vary(texts, 0.1, np.random.default_rng(4))["text"]
    assert (varied != texts["text"]).mean() > 0.95  # every text changes (one edit at least)
    assert varied.str.len().min() > 0


def test_replacements_keep_the_kind_of_word() -> None:
    api = WordAPI(Vocabulary.parse(TOY), label="negative")
    texts = pd.DataFrame({"text": ["The soup was awful."] * 200})
    varied = api.vary(texts, 0.25, np.random.default_rng(5))["text"]  # one word of four
    adjectives = {t.split()[-1].rstrip(".") for t in varied if t.startswith("The soup was ")}
    assert adjectives <= {"awful", "bland", "very"}  # a negative adjective, or an insert


def test_same_generator_same_output() -> None:
    api = WordAPI(Vocabulary.bundled("reviews"), label="positive")
    a = api.vary(api.random(20, np.random.default_rng(6)), 0.3, np.random.default_rng(7))
    b = api.vary(api.random(20, np.random.default_rng(6)), 0.3, np.random.default_rng(7))
    assert a.equals(b)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[noun]\ncat\n", "no \\[templates\\]"),
        ("[templates]\nA {dog}.\n", "uses \\{dog\\}"),
        ("cat\n[templates]\nA.\n", "line 1"),
    ],
)
def test_bad_vocabularies_say_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        Vocabulary.parse(text)


def test_unknown_label_and_bad_degree_are_refused() -> None:
    vocabulary = Vocabulary.parse(TOY)
    with pytest.raises(InputError, match="no section for the label 'neutral'"):
        WordAPI(vocabulary, label="neutral")
    with pytest.raises(InputError, match="degree"):
        WordAPI(vocabulary).vary(pd.DataFrame({"text": ["a b"]}), 0.0, np.random.default_rng(0))
    with pytest.raises(InputError, match="no bundled vocabulary 'poems'"):
        Vocabulary.bundled("poems")
