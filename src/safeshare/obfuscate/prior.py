"""Priors over token sequences for the BeamClean-style attack, trained or read from public data.

The attack decodes noisy embeddings by beam search; a prior scores each candidate next token
given the path decoded so far.  :class:`BigramPrior` is the smallest useful one: interpolated
bigram and add-one unigram probabilities over token ids, counted from texts the attacker may
read (never the evaluated ones).  :class:`LanguageModelPrior` is the strongest one available
offline: a causal language model that shares the attacked model's tokenizer (for a causal
frozen model, the model itself: the attacker knows the public model the transform was made
for), read with its key-value cache so each beam step costs one token per path.

Both start a decode with :meth:`begin`, which gives :class:`Paths`: the log-probabilities of
candidate next tokens for every kept path, and the paths extended by one token each.

>>> prior = BigramPrior.from_ids([[1, 2, 3], [1, 2, 2]], vocabulary=5)
>>> bool(prior.logprob(1, 2) > prior.logprob(1, 4))
True
>>> paths = prior.begin(1).extend(np.array([0]), np.array([1]))
>>> paths.next_logprobs(np.array([[2, 4]])).shape    # one path, two candidates
(1, 2)
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from scipy import sparse

from safeshare.errors import InputError
from safeshare.obfuscate.model import FrozenModel, require_torch


class Paths(Protocol):
    """The paths a beam keeps, as a prior sees them."""

    def next_logprobs(self, candidates: Any) -> Any:
        """``log p(candidate | path)`` for ``candidates`` ``(paths, k)``: each path's own ids."""
        ...

    def extend(self, parents: Any, tokens: Any) -> Paths:
        """New paths: path ``parents[j]`` followed by ``tokens[j]``, for every ``j``.

        It may reuse these paths' state: extend a :class:`Paths` once."""
        ...


class SequencePrior(Protocol):
    """A prior over token sequences: :meth:`begin` gives a decode's empty paths."""

    @property
    def name(self) -> str:
        """What the prior is, for the attack's name ("bigram", "language model")."""
        ...

    def begin(self, paths: int) -> Paths:
        """``paths`` empty paths (one per text decoded together)."""
        ...


@dataclass(frozen=True)
class BigramPrior:
    """``log p(b | a) = log(lam * c(a, b) / c(a) + (1 - lam) * p_unigram(b))``."""

    bigrams: Any  # csr (vocabulary x vocabulary) counts
    row_totals: Any
    unigram: Any  # add-one smoothed probabilities
    start: Any  # add-one smoothed probabilities of a text's first token
    mixing: float = 0.7

    @classmethod
    def from_ids(
        cls, texts: Iterable[Sequence[int]], *, vocabulary: int, mixing: float = 0.7
    ) -> BigramPrior:
        """Count unigrams and bigrams of token-id sequences (one per public text)."""
        if not 0.0 <= mixing < 1.0:
            raise InputError(f"mixing must be in [0, 1), not {mixing!r}")
        unigram = np.ones(vocabulary)
        start = np.ones(vocabulary)
        first: list[int] = []
        second: list[int] = []
        for ids in texts:
            seq = np.asarray(ids, dtype=np.int64)
            if seq.size == 0:
                continue
            if seq.max() >= vocabulary or seq.min() < 0:
                raise InputError(f"token ids must lie in [0, {vocabulary}); got {seq.max()}")
            np.add.at(unigram, seq, 1.0)
            start[seq[0]] += 1.0
            first.extend(seq[:-1].tolist())
            second.extend(seq[1:].tolist())
        counts = sparse.csr_matrix(
            (np.ones(len(first)), (first, second)), shape=(vocabulary, vocabulary)
        )
        counts.sum_duplicates()
        return cls(
            counts,
            np.asarray(counts.sum(axis=1)).ravel(),
            unigram / unigram.sum(),
            start / start.sum(),
            mixing,
        )

    @classmethod
    def from_texts(
        cls, tokenizer: Any, texts: Iterable[str], *, mixing: float = 0.7
    ) -> BigramPrior:
        """Tokenize public ``texts`` (with special tokens, as the model sees them) and count."""
        ids = [tokenizer(text, add_special_tokens=True)["input_ids"] for text in texts]
        return cls.from_ids(ids, vocabulary=len(tokenizer), mixing=mixing)

    def logprob(self, previous: Any, token: Any) -> Any:
        """``log p(token | previous)``, broadcasting the two id arrays."""
        previous, token = np.broadcast_arrays(np.asarray(previous), np.asarray(token))
        pair = np.asarray(self.bigrams[previous.ravel(), token.ravel()]).reshape(previous.shape)
        totals = self.row_totals[previous]
        conditional = np.divide(pair, totals, out=np.zeros(pair.shape), where=totals > 0)
        lam = np.where(totals > 0, self.mixing, 0.0)
        return np.log(lam * conditional + (1 - lam) * self.unigram[token])

    def start_logprob(self, token: Any) -> Any:
        """``log p(token)`` for a text's first token."""
        return np.log(self.start[np.asarray(token)])

    @property
    def name(self) -> str:
        return "bigram"

    def begin(self, paths: int) -> Paths:
        return _BigramPaths(self, None)


@dataclass(frozen=True)
class _BigramPaths:
    prior: BigramPrior
    last: Any  # each path's last token; None for the empty path

    def next_logprobs(self, candidates: Any) -> Any:
        if self.last is None:
            return self.prior.start_logprob(candidates)
        return self.prior.logprob(self.last[:, None], candidates)

    def extend(self, parents: Any, tokens: Any) -> Paths:
        return _BigramPaths(self.prior, np.asarray(tokens))


@dataclass(frozen=True)
class LanguageModelPrior:
    """``log p(token | path)`` from a causal language model that shares the attacked tokenizer.

    Every path follows ``context``, one of the tokenizer's special tokens, as a text follows the
    one before it in the model's training stream: the one under which public texts are most
    likely (SmolLM2-Instruct: ``<|endoftext|>``, not its chat-turn ``<|im_start|>``).
    """

    model: FrozenModel
    context: int

    @classmethod
    def of(
        cls, model: FrozenModel, public: Sequence[str], *, attacked: FrozenModel | None = None
    ) -> LanguageModelPrior:
        """The prior ``model`` gives for decoding embeddings sent to ``attacked`` (itself)."""
        if not model.causal:
            raise InputError(
                "a language-model prior needs a causal language model (a `...ForCausalLM`); "
                "for an encoder such as MiniLM use BigramPrior.from_texts on public texts"
            )
        if attacked is not None and attacked.tokenizer.get_vocab() != model.tokenizer.get_vocab():
            raise InputError(
                f"the prior's tokenizer ({len(model.tokenizer)} ids) is not the attacked "
                f"model's ({len(attacked.tokenizer)} ids): a prior must score the attacked "
                "model's token ids; use BigramPrior.from_texts(attacked.tokenizer, public)"
            )
        specials = sorted(set(model.tokenizer.all_special_ids))
        texts = [text for text in public if text.strip()][:CONTEXT_TEXTS]
        if not specials or not texts:
            raise InputError(
                "a language-model prior needs a tokenizer with special tokens and at least one "
                "public text to choose the context its paths start from"
            )
        scores = [_log_likelihood(model, context, texts) for context in specials]
        return cls(model, specials[int(np.argmax(scores))])

    @property
    def name(self) -> str:
        return "language model"

    def begin(self, paths: int) -> Paths:
        torch = require_torch()
        network = self.model.network
        # transformers 5 names the cache `cache`; 4.x names it `past_key_values`
        key = "cache" if "cache" in inspect.signature(network.forward).parameters else None
        empty = _ModelPaths(network, key or "past_key_values", None, None)
        return empty.after(torch.full((paths,), self.context))


#: public texts that choose a language-model prior's context token
CONTEXT_TEXTS = 32


def _log_likelihood(model: FrozenModel, context: int, texts: Sequence[str]) -> float:
    """The log-likelihood of ``texts`` (each after ``context``) under the causal model: one
    forward pass over them all, padded at the end (a causal model's earlier positions never
    see the padding)."""
    torch = require_torch()
    encoded = [
        model.tokenizer(text, add_special_tokens=True)["input_ids"][: model.max_length]
        for text in texts
    ]
    ids = torch.full((len(encoded), 1 + max(map(len, encoded))), context)
    real = torch.zeros(ids.shape, dtype=torch.bool)
    for row, tokens in enumerate(encoded):
        ids[row, 1 : 1 + len(tokens)] = torch.tensor(tokens, dtype=torch.long)
        real[row, : 1 + len(tokens)] = True
    with torch.no_grad():
        logits = model.network(input_ids=ids, attention_mask=real.long()).logits[:, :-1]
    chosen = torch.log_softmax(logits.float(), dim=-1).gather(2, ids[:, 1:, None])[..., 0]
    return float(chosen[real[:, 1:]].sum())


@dataclass(frozen=True)
class _ModelPaths:
    network: Any
    cache_keyword: str  # what the network's forward calls its key-value cache
    cache: Any  # the key-value cache of every path (a transformers Cache; None: empty paths)
    logprobs: Any  # (paths, vocabulary) log-probabilities of the next token

    def after(self, tokens: Any) -> _ModelPaths:
        """These paths, each followed by its token of ``tokens``."""
        torch = require_torch()
        with torch.no_grad():
            out = self.network(
                input_ids=tokens[:, None], use_cache=True, **{self.cache_keyword: self.cache}
            )
        logprobs = torch.log_softmax(out.logits[:, -1].float(), dim=-1)
        return _ModelPaths(self.network, self.cache_keyword, out[self.cache_keyword], logprobs)

    def next_logprobs(self, candidates: Any) -> Any:
        torch = require_torch()
        return self.logprobs.gather(1, torch.as_tensor(np.asarray(candidates))).numpy()

    def extend(self, parents: Any, tokens: Any) -> Paths:
        torch = require_torch()
        self.cache.reorder_cache(torch.as_tensor(np.asarray(parents)))  # in place: used once
        return self.after(torch.as_tensor(np.asarray(tokens)))
