"""A bigram language-model prior over a tokenizer's ids, trained on public text.

The BeamClean-style attack decodes noisy embeddings with a prior over token sequences; this is
the smallest useful one: interpolated bigram and add-one unigram probabilities over token ids,
counted from texts the attacker may read (never the evaluated ones).

>>> prior = BigramPrior.from_ids([[1, 2, 3], [1, 2, 2]], vocabulary=5)
>>> bool(prior.logprob(1, 2) > prior.logprob(1, 4))
True
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import sparse

from safeshare.errors import InputError


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
