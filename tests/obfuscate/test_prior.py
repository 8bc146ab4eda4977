"""Priors over token sequences and the beam search that decodes under them.

A language-model prior's cached, reordered paths must give exactly the log-probabilities a
full forward pass gives on the same sequences, and the beam search, given a wide enough beam,
must find the best sequence by brute force.  The model is the tiny random Llama of the
fine-tuning tests (a byte-level BPE tokenizer); the real SmolLM2 is in the slow tier.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from safeshare.errors import InputError
from safeshare.obfuscate.attacks import BEAM_MODEL_NAME, BEAM_NAME, _beam_decode
from safeshare.obfuscate.audit import NN_NAME, attack_transform
from safeshare.obfuscate.model import FrozenModel, load_model
from safeshare.obfuscate.prior import (
    BigramPrior,
    LanguageModelPrior,
    SequencePrior,
    _log_likelihood,
)
from safeshare.obfuscate.transform import ObfuscationTransform
from tests.train.tiny_causal_lm import SENTENCES, write_tiny_causal_lm


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> FrozenModel:
    folder = write_tiny_causal_lm(tmp_path_factory.mktemp("tiny-prior"), layers=2)
    return load_model(folder, max_length=32)


def _full_logprobs(prior: LanguageModelPrior, path: list[int]) -> torch.Tensor:
    """Log-probabilities of the next token after ``path``, from one forward pass."""
    with torch.no_grad():
        logits = prior.model.network(input_ids=torch.tensor([[prior.context, *path]])).logits
    return torch.log_softmax(logits[0, -1].float(), dim=-1)


def test_cached_paths_equal_a_full_forward_after_reordering(tiny: FrozenModel) -> None:
    prior = LanguageModelPrior.of(tiny, SENTENCES)
    rng = np.random.default_rng(0)
    vocabulary = len(tiny.tokenizer)
    sequences: list[list[int]] = [[], []]
    paths = prior.begin(2)
    for parents in ([0, 0], [1, 0], [1, 1], [0, 1]):  # paths swap, merge and split
        tokens = rng.integers(1, vocabulary, size=2)
        sequences = [[*sequences[p], int(t)] for p, t in zip(parents, tokens, strict=True)]
        paths = paths.extend(np.array(parents), tokens)
        candidates = rng.integers(0, vocabulary, size=(2, 5))
        got = paths.next_logprobs(candidates)
        for row, sequence in enumerate(sequences):
            want = _full_logprobs(prior, sequence)[candidates[row]].numpy()
            np.testing.assert_allclose(got[row], want, atol=1e-4)


def _brute_force(prior: SequencePrior, tokens: np.ndarray) -> list[int]:
    """The sequence of candidates (one per position) the prior finds most likely."""

    def logprob(sequence: tuple[int, ...]) -> float:
        paths, total = prior.begin(1), 0.0
        for token in sequence:
            total += float(paths.next_logprobs(np.array([[token]]))[0, 0])
            paths = paths.extend(np.array([0]), np.array([token]))
        return total

    return list(max(itertools.product(*tokens.tolist()), key=logprob))


@pytest.mark.parametrize("kind", ["bigram", "language model"])
def test_beam_search_finds_the_best_sequence_when_the_beam_holds_them_all(
    tiny: FrozenModel, kind: str
) -> None:
    prior: SequencePrior
    if kind == "bigram":
        prior = BigramPrior.from_texts(tiny.tokenizer, SENTENCES)
    else:
        prior = LanguageModelPrior.of(tiny, SENTENCES)
    assert prior.name == kind
    rng = np.random.default_rng(1)
    texts, positions, width = 3, 4, 3
    tokens = rng.integers(1, len(tiny.tokenizer), size=(texts, positions, width))
    flat = np.zeros((texts, positions, width))  # the emissions tie: the prior alone decides
    lengths = np.array([4, 2, 3])  # texts of several lengths decode together
    decoded = _beam_decode(flat, tokens, lengths, prior, width**positions, 1.0)
    for text in range(texts):
        length = int(lengths[text])
        assert decoded[text, :length].tolist() == _brute_force(prior, tokens[text, :length])
        assert not decoded[text, length:].any()
    emitted = rng.normal(size=(texts, positions, width)) * 1e6  # the emissions dominate
    best = np.take_along_axis(tokens, emitted.argmax(axis=2)[..., None], axis=2)[..., 0]
    decoded = _beam_decode(emitted, tokens, lengths, prior, 2, 1.0)
    for text in range(texts):
        assert decoded[text, : lengths[text]].tolist() == best[text, : lengths[text]].tolist()


def test_the_context_is_the_special_token_public_texts_follow_best(tiny: FrozenModel) -> None:
    prior = LanguageModelPrior.of(tiny, SENTENCES)
    assert prior.context in tiny.tokenizer.all_special_ids

    def one_by_one(context: int) -> float:  # each text alone, no padding
        total = 0.0
        for text in SENTENCES:
            ids = tiny.tokenizer(text, add_special_tokens=True)["input_ids"][: tiny.max_length]
            with torch.no_grad():
                logits = tiny.network(input_ids=torch.tensor([[context, *ids]])).logits[0, :-1]
            total += float(torch.log_softmax(logits.float(), -1)[torch.arange(len(ids)), ids].sum())
        return total

    scores = {c: one_by_one(c) for c in sorted(set(tiny.tokenizer.all_special_ids))}
    assert prior.context == max(scores, key=scores.__getitem__)
    assert _log_likelihood(tiny, prior.context, SENTENCES) == pytest.approx(
        scores[prior.context], rel=1e-5
    )


def test_a_prior_must_be_causal_and_share_the_attacked_tokenizer(
    tiny: FrozenModel, minilm: FrozenModel
) -> None:
    with pytest.raises(InputError, match="needs a causal language model"):
        LanguageModelPrior.of(minilm, SENTENCES)
    with pytest.raises(InputError, match="is not the attacked model's"):
        LanguageModelPrior.of(tiny, SENTENCES, attacked=minilm)
    with pytest.raises(InputError, match="at least one public text"):
        LanguageModelPrior.of(tiny, ["  "])


def test_a_causal_model_is_also_attacked_under_its_own_prior(tiny: FrozenModel) -> None:
    transform = ObfuscationTransform.for_model(tiny, seed=0)
    report = attack_transform(
        tiny,
        transform,
        SENTENCES[:2],
        SENTENCES[2:],
        sigmas=(0.5,),
        plant=False,
        inverter_steps=0,
        beam=2,
        seed=0,
    )
    for condition in report.conditions:
        attacks = [found.attack for found in condition.recoveries]
        assert attacks == [NN_NAME, BEAM_NAME, BEAM_MODEL_NAME]
    assert BEAM_MODEL_NAME in report.markdown()
