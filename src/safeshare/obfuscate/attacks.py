"""Token inversion attacks on (obfuscated) embeddings, scored as token recovery with intervals.

:func:`nearest_neighbour_attack` maps each received embedding to the token whose table row is
closest in cosine.  :func:`beam_attack` is BeamClean-style: it estimates the obfuscation's noise
(a per-dimension Gaussian shift and scale, from public texts the attacker obfuscates with the
released transform), scores every token by its likelihood under that noise, and decodes each
text by beam search under a prior over token sequences: a bigram model counted from public
text (:class:`~safeshare.obfuscate.prior.BigramPrior`), or a causal language model with the
attacked model's tokenizer (:class:`~safeshare.obfuscate.prior.LanguageModelPrior`).  Both
return a :class:`TokenRecovery`: the share of real tokens (special tokens excluded) recovered
exactly, with its Wilson interval.

>>> from safeshare.evaluate import Proportion
>>> print(TokenRecovery("nearest neighbour", Proportion.of(30, 100)))
nearest neighbour: 30.0% of 100 tokens recovered (95% interval 21.9%-39.6%)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from safeshare.evaluate import Proportion
from safeshare.obfuscate.model import FrozenModel, require_torch
from safeshare.obfuscate.prior import SequencePrior


@dataclass(frozen=True)
class TokenRecovery:
    """The share of a text's real tokens an attack recovered exactly."""

    attack: str
    recovered: Proportion

    def __str__(self) -> str:
        low, high = self.recovered.interval
        return (
            f"{self.attack}: {self.recovered.value:.1%} of {self.recovered.trials} tokens "
            f"recovered (95% interval {low:.1%}-{high:.1%})"
        )


def scored_positions(model: FrozenModel, input_ids: Any, attention_mask: Any) -> Any:
    """Mask of positions that count: real tokens that are not special ([CLS], [SEP], ...)."""
    ids = np.asarray(input_ids)
    keep = np.asarray(attention_mask).astype(bool)
    special = np.asarray(sorted(set(model.tokenizer.all_special_ids)))
    return keep & ~np.isin(ids, special)


def recovery(
    model: FrozenModel, guessed: Any, input_ids: Any, attention_mask: Any, attack: str
) -> TokenRecovery:
    """Score guessed token ids against the true ones over the real, non-special tokens."""
    scored = scored_positions(model, input_ids, attention_mask)
    hits = (np.asarray(guessed) == np.asarray(input_ids)) & scored
    return TokenRecovery(attack, Proportion.of(int(hits.sum()), int(scored.sum())))


def nearest_neighbour_tokens(embeds: Any, table: Any, *, chunk: int = 4096) -> Any:
    """For every vector of ``embeds`` (``(..., dim)``), the index of the closest table row."""
    torch = require_torch()
    with torch.no_grad():
        flat = torch.nn.functional.normalize(embeds.reshape(-1, embeds.shape[-1]), dim=-1)
        rows = torch.nn.functional.normalize(table, dim=-1)
        best = torch.cat([(part @ rows.T).argmax(dim=1) for part in flat.split(chunk)])
    return best.reshape(embeds.shape[:-1]).numpy()


def nearest_neighbour_attack(
    model: FrozenModel, embeds: Any, input_ids: Any, attention_mask: Any
) -> TokenRecovery:
    """Invert each received embedding to its nearest token (cosine) and score the recovery."""
    guessed = nearest_neighbour_tokens(embeds, model.table)
    return recovery(model, guessed, input_ids, attention_mask, "nearest neighbour")


@dataclass(frozen=True)
class NoiseEstimate:
    """A per-dimension Gaussian model of the obfuscation: ``o = e + shift + scale * z``."""

    shift: Any
    scale: Any

    @classmethod
    def fit(cls, clean: Any, obfuscated: Any, attention_mask: Any) -> NoiseEstimate:
        """Estimate from pairs (clean, obfuscated) of public texts' real tokens."""
        keep = np.asarray(attention_mask).astype(bool)
        delta = (np.asarray(obfuscated) - np.asarray(clean))[keep]
        floor = 1e-3 * float(np.abs(np.asarray(clean)[keep]).mean())
        return cls(delta.mean(axis=0), np.maximum(delta.std(axis=0), floor))


BEAM_NAME = "beam search (BeamClean-style)"
#: the same decoding under a causal language model's prior instead of public bigrams
BEAM_MODEL_NAME = "beam search (BeamClean-style, language-model prior)"


def beam_attack(
    model: FrozenModel,
    embeds: Any,
    attention_mask: Any,
    input_ids: Any,
    noise: NoiseEstimate,
    prior: SequencePrior,
    *,
    beam: int = 8,
    candidates: int = 16,
    prior_weight: float = 1.0,
) -> TokenRecovery:
    """BeamClean-style decoding: Gaussian likelihood of each token times the prior's."""
    guessed = beam_tokens(
        model,
        embeds,
        attention_mask,
        noise,
        prior,
        beam=beam,
        candidates=candidates,
        prior_weight=prior_weight,
    )
    return recovery(model, guessed, input_ids, attention_mask, BEAM_NAME)


def beam_tokens(
    model: FrozenModel,
    embeds: Any,
    attention_mask: Any,
    noise: NoiseEstimate,
    prior: SequencePrior,
    *,
    beam: int = 8,
    candidates: int = 16,
    prior_weight: float = 1.0,
) -> Any:
    """The token ids :func:`beam_attack` decodes (``(n, length)``; 0 at padding).

    Texts are decoded together, :data:`TEXTS_PER_DECODE` at a time (a language-model prior
    then reads every path of the group in one batch).
    """
    torch = require_torch()
    table = model.table.detach()
    shift = torch.as_tensor(noise.shift, dtype=table.dtype)
    scale = torch.as_tensor(noise.scale, dtype=table.dtype)
    rows = table / scale
    row_norms = (rows**2).sum(dim=1)
    guessed = np.zeros(tuple(attention_mask.shape), dtype=np.int64)
    lengths = np.asarray(attention_mask).sum(axis=1)
    with torch.no_grad():
        groups = max(1, -(-len(lengths) // TEXTS_PER_DECODE))
        for group in np.array_split(np.arange(len(lengths)), groups):
            if not len(group):
                continue
            longest = int(lengths[group].max())
            whitened = (embeds[group, :longest] - shift) / scale
            # log N(o; e_t + shift, scale^2) up to a constant: -|x - e_t/scale|^2 / 2
            loglik = whitened @ rows.T - 0.5 * row_norms
            top = loglik.topk(min(candidates, table.shape[0]), dim=-1)
            decoded = _beam_decode(
                top.values.numpy(), top.indices.numpy(), lengths[group], prior, beam, prior_weight
            )
            guessed[group, :longest] = decoded
    return guessed


#: texts one beam search decodes together
TEXTS_PER_DECODE = 16


def _beam_decode(
    scores: Any, tokens: Any, lengths: Any, prior: SequencePrior, beam: int, weight: float
) -> Any:
    """Each text's best path through its per-position candidates (``scores``, ``tokens``:
    ``(texts, positions, candidates)``) under emission + ``weight`` x prior log-probabilities;
    0 past a text's length."""
    texts, positions, width = scores.shape
    paths = prior.begin(texts)
    totals = np.zeros((texts, 1))
    chosen: list[Any] = []
    history: list[Any] = []
    best_at_end = np.zeros(texts, dtype=np.int64)
    for position in range(positions):
        kept = totals.shape[1]
        offered = np.repeat(tokens[:, position], kept, axis=0)  # each path's candidates
        step = weight * paths.next_logprobs(offered).reshape(texts, kept, width)
        joint = (totals[:, :, None] + scores[:, position, None, :] + step).reshape(texts, -1)
        best = np.argsort(-joint, axis=1, kind="stable")[:, :beam]
        parents, choices = np.unravel_index(best, (kept, width))
        totals = np.take_along_axis(joint, best, axis=1)
        chosen.append(np.take_along_axis(tokens[:, position], choices, axis=1))
        history.append(parents)
        ending = lengths == position + 1
        best_at_end[ending] = np.argmax(totals[ending], axis=1)
        if position + 1 < positions:
            flat_parents = (np.arange(texts)[:, None] * kept + parents).ravel()
            paths = paths.extend(flat_parents, chosen[-1].ravel())
    decoded = np.zeros((texts, positions), dtype=np.int64)
    for text in range(texts):
        path = int(best_at_end[text])
        for position in range(int(lengths[text]) - 1, -1, -1):
            decoded[text, position] = chosen[position][text, path]
            path = int(history[position][text, path])
    return decoded
