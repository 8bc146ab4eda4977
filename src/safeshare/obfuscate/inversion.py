"""A learned inversion attack: a network trained to read tokens back from obfuscated embeddings.

The attacker holds the released transform, so it can obfuscate **public** text as often as it
likes and learn the way back: :func:`train_inverter` samples fresh obfuscations of public texts
(never the evaluated ones) and trains a small network over the obfuscated sequence, a residual
per-position MLP plus one transformer layer for context, whose output is scored against the
model's embedding table by cosine (tied to the table, so tokens never seen in the public text
can still be named).  The network starts as the identity, so before any training it is exactly
the nearest-neighbour attack; of its checkpoints (the start, then every tenth of the training)
it keeps the one that reads most tokens back from public texts held out of its training, so
training that goes astray (a few steps of Adam can undo the identity) never leaves it weaker
there than nearest neighbour.
:func:`inversion_attack` scores it on held-out embeddings as a
:class:`~safeshare.obfuscate.attacks.TokenRecovery` with a Wilson interval, and
:func:`information_estimate` gives the bits a token it reads (:class:`InformationEstimate`).
The same network, trained alongside a transform, is the :class:`Adversary` its training hides
from.

>>> config = InverterConfig(dim=384)
>>> config.hidden, config.heads
(256, 4)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

from safeshare._progress import Progress, no_progress
from safeshare.errors import InputError
from safeshare.obfuscate.attacks import TokenRecovery, recovery, scored_positions
from safeshare.obfuscate.model import Batch, FrozenModel, require_torch
from safeshare.obfuscate.transform import torch_generator

ATTACK_NAME = "learned inversion network"
#: the adversary's updates before each of the transform's training steps
ADVERSARY_STEPS = 2
#: the adversary's exposure is log(1 - (1 - floor) p) / log(floor): its slope at p = 1 is
#: bounded by 1 / floor (here 20), where the log-probability's slope would vanish
EXPOSURE_FLOOR = 0.05

#: public texts held out of the inverter's training to choose its checkpoint on (at most)
CHECKPOINT_TEXTS = 64
#: checkpoints compared: the start and every this share of the training steps
CHECKPOINT_EVERY = 0.1

#: ``obfuscate(embeds, attention_mask, generator) -> obfuscated embeds``: what the attacker can run
Obfuscator = Callable[[Any, Any, Any], Any]


@dataclass(frozen=True)
class InverterConfig:
    """The inversion network's shape (public)."""

    dim: int
    hidden: int = 256
    heads: int = 4

    def __post_init__(self) -> None:
        if self.dim < 1 or self.hidden < 1 or self.hidden % self.heads:
            raise InputError(
                f"dim={self.dim}, hidden={self.hidden}, heads={self.heads}: need positive sizes "
                "and hidden divisible by heads"
            )


@cache
def _network_class() -> Any:
    torch = require_torch()
    nn = torch.nn

    class _Inverter(nn.Module):  # type: ignore[misc, name-defined]
        def __init__(self, config: InverterConfig, table: Any) -> None:
            super().__init__()
            self.register_buffer("rows", nn.functional.normalize(table.detach(), dim=-1))
            self.local_in = nn.Linear(config.dim, config.hidden)
            self.local_out = nn.Linear(config.hidden, config.dim)
            self.context_in = nn.Linear(config.dim, config.hidden)
            self.context = nn.TransformerEncoderLayer(
                config.hidden,
                config.heads,
                dim_feedforward=2 * config.hidden,
                dropout=0.0,
                batch_first=True,
            )
            self.context_out = nn.Linear(config.hidden, config.dim)
            self.log_temperature = nn.Parameter(torch.tensor(math.log(20.0)))

        def denoise(self, embeds: Any, attention_mask: Any) -> Any:
            local = self.local_out(nn.functional.gelu(self.local_in(embeds)))
            mixed = self.context(self.context_in(embeds), src_key_padding_mask=attention_mask == 0)
            return embeds + local + self.context_out(mixed)

        def forward(self, embeds: Any, attention_mask: Any, candidates: Any = None) -> Any:
            """Cosine logits over the table (or over the rows ``candidates`` only)."""
            guess = nn.functional.normalize(self.denoise(embeds, attention_mask), dim=-1)
            rows = self.rows if candidates is None else self.rows[candidates]
            return self.log_temperature.exp() * guess @ rows.T

    return _Inverter


class Inverter:
    """A trained inversion network for one model: obfuscated embeddings in, token ids out."""

    def __init__(self, model: FrozenModel, config: InverterConfig, *, seed: int | None = None):
        torch = require_torch()
        self.config = config
        self.fingerprint = model.fingerprint
        init, _ = torch_generator(seed)
        self.network = _network_class()(config, model.table)
        with torch.no_grad():  # identity at the start: exactly the nearest-neighbour attack
            for name, parameter in self.network.named_parameters():
                if name == "log_temperature":
                    continue
                if parameter.dim() >= 2:
                    torch.nn.init.xavier_uniform_(parameter, generator=init)
                elif "norm" in name and name.endswith("weight"):
                    parameter.fill_(1.0)
                else:
                    parameter.zero_()
            self.network.local_out.weight.zero_()
            self.network.context_out.weight.zero_()
        self.network.eval()

    def log_likelihood(
        self, sent: Any, batch: Batch, generator: Any, negatives: int
    ) -> tuple[Any, int]:
        """``(log-probability of each true token, candidates)`` over ``batch``'s real
        positions, in a sampled softmax: the true tokens and ``negatives`` random table rows
        (a full softmax over 30k tokens costs about six times as much CPU).  Differentiable in
        ``sent`` and in the network."""
        torch = require_torch()
        real = batch.attention_mask.bool()
        truth = batch.input_ids[real]
        drawn = torch.randint(int(self.network.rows.shape[0]), (negatives,), generator=generator)
        candidates, target = torch.unique(torch.cat([truth, drawn]), return_inverse=True)
        logits = self.network(sent, batch.attention_mask, candidates)[real]
        found = torch.log_softmax(logits, dim=-1).gather(1, target[: truth.shape[0], None])
        return found[:, 0], int(candidates.shape[0])

    def true_log_probabilities(
        self, embeds: Any, attention_mask: Any, input_ids: Any, *, chunk: int = 16
    ) -> Any:
        """``log q(true token | obfuscated sequence)`` at every position (full softmax over the
        table), ``(n, length)`` in nats."""
        torch = require_torch()
        parts = [
            torch.log_softmax(logits, dim=-1).gather(-1, ids[..., None])[..., 0]
            for logits, ids in zip(
                self._logits(embeds, attention_mask, chunk), input_ids.split(chunk), strict=True
            )
        ]
        return torch.cat(parts).numpy()

    def tokens(self, embeds: Any, attention_mask: Any, *, chunk: int = 16) -> Any:
        """The most likely token id at every position of ``embeds`` ``(n, length, dim)``."""
        torch = require_torch()
        parts = [logits.argmax(dim=-1) for logits in self._logits(embeds, attention_mask, chunk)]
        return torch.cat(parts).numpy()

    def _logits(self, embeds: Any, attention_mask: Any, chunk: int) -> Iterator[Any]:
        """The network's logits over the whole table, ``chunk`` texts at a time, no gradient."""
        torch = require_torch()
        self.network.eval()
        for e, m in zip(embeds.split(chunk), attention_mask.split(chunk), strict=True):
            with torch.no_grad():
                logits = self.network(e, m)
            yield logits


def train_inverter(
    model: FrozenModel,
    obfuscate: Obfuscator,
    public: Sequence[str],
    *,
    steps: int = 300,
    batch_size: int = 16,
    learning_rate: float = 1e-3,
    negatives: int = 4096,
    hidden: int = 256,
    seed: int | None = None,
    progress: Progress | None = None,
) -> Inverter:
    """Train an inverter on fresh obfuscations of ``public`` texts (the attacker's own data).

    Every step obfuscates a batch of public texts anew with ``obfuscate`` (the released
    transform's sampler, or a baseline's) and minimises the cross-entropy of the true tokens
    against themselves and ``negatives`` random table rows (a sampled softmax: a full one over
    30k tokens costs about six times as much CPU a step).  A fifth of the texts, up to
    :data:`CHECKPOINT_TEXTS`, are held out: the checkpoint returned is the one of the start
    (nearest neighbour) and every tenth of the steps that reads most of their tokens back
    (from one obfuscation of them, the same for every checkpoint).
    """
    torch = require_torch()
    if steps < 0 or batch_size < 1 or negatives < 0 or not learning_rate > 0:
        raise InputError(
            f"steps={steps}, batch_size={batch_size}, negatives={negatives}, learning_rate="
            f"{learning_rate}: need steps >= 0, batch_size >= 1, negatives >= 0 and "
            "learning_rate > 0"
        )
    texts = [text for text in public if text.strip()]
    if len(texts) < 2:
        raise InputError(
            f"need at least 2 public texts to train the inversion attack, got {len(texts)}; "
            "pass a public text file"
        )
    report = progress or no_progress
    generator, _ = torch_generator(seed)
    order_rng, _ = torch_generator(None if seed is None else seed + 1)
    inverter = Inverter(
        model,
        InverterConfig(int(model.table.shape[1]), hidden),
        seed=None if seed is None else seed + 2,
    )
    held = min(CHECKPOINT_TEXTS, len(texts) // 5)  # (too few texts: checked on those trained)
    chosen_on, texts = (texts[:held], texts[held:]) if held >= 2 else (texts, texts)
    checking = _Checkpoints(inverter, model, obfuscate, chosen_on, seed)
    batches = [
        model.tokenize(texts[start : start + batch_size])
        for start in range(0, len(texts), batch_size)
    ]
    optimizer = torch.optim.Adam(inverter.network.parameters(), lr=learning_rate)
    order = torch.randperm(len(batches), generator=order_rng)
    every = max(1, round(steps * CHECKPOINT_EVERY))
    for step in range(steps):
        batch = batches[int(order[step % len(batches)])]
        with torch.no_grad():
            sent = obfuscate(model.embed_tokens(batch.input_ids), batch.attention_mask, generator)
        inverter.network.train()
        loss = -inverter.log_likelihood(sent, batch, generator, negatives)[0].mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if (step + 1) % every == 0 or step + 1 == steps:
            checking.compare()
        report("training the inversion attack", (step + 1) / steps)
    checking.keep_best()
    inverter.network.eval()
    return inverter


class _Checkpoints:
    """The inverter's checkpoints scored on held-out public texts: how many of their tokens
    each reads back from one obfuscation of them; the best is kept (ties: the later)."""

    def __init__(
        self,
        inverter: Inverter,
        model: FrozenModel,
        obfuscate: Obfuscator,
        texts: Sequence[str],
        seed: int | None,
    ) -> None:
        torch = require_torch()
        self.inverter = inverter
        batch = model.tokenize(list(texts))
        generator, _ = torch_generator(None if seed is None else seed + 3)
        with torch.no_grad():
            embeds = model.embed_tokens(batch.input_ids)
            self.sent = obfuscate(embeds, batch.attention_mask, generator)
        self.mask = batch.attention_mask
        self.truth = np.asarray(batch.input_ids)
        self.scored = scored_positions(model, batch.input_ids, batch.attention_mask)
        self.best = -1
        self.best_state: dict[str, Any] = {}
        self.compare()  # (the start: nearest neighbour)

    def compare(self) -> None:
        """Score the network as it is now; remember it if it reads at least as many tokens."""
        guessed = self.inverter.tokens(self.sent, self.mask)
        read = int(((guessed == self.truth) & self.scored).sum())
        if read >= self.best:
            network = self.inverter.network
            self.best = read
            self.best_state = {k: v.detach().clone() for k, v in network.state_dict().items()}

    def keep_best(self) -> None:
        self.inverter.network.load_state_dict(self.best_state)


INFORMATION_METHOD = (
    "variational (Barber-Agakov) estimate: the attacked tokens' cross-entropy under a unigram "
    "model of the public texts (add-one) minus their cross-entropy under the trained inverter, "
    "in bits per token; a lower bound on I(token; obfuscated sequence) when the unigram model "
    "is the tokens' true distribution, an estimate otherwise"
)


@dataclass(frozen=True)
class InformationEstimate:
    """What the inverter reads about the tokens from the obfuscated sequence, in bits a token.

    ``extracted`` = ``prior_bits`` (cross-entropy under the public unigram model) minus the
    cross-entropy under the inverter: 0 when it knows no more than word frequencies, about
    ``prior_bits`` when it names every token surely.

    >>> InformationEstimate(extracted=2.0, prior_bits=10.0, tokens=50).share
    0.2
    """

    extracted: float
    prior_bits: float
    tokens: int

    @property
    def share(self) -> float:
        """The extracted bits over the bits a token carries under the unigram model."""
        return self.extracted / self.prior_bits if self.prior_bits > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "bits_per_token": self.extracted,
            "prior_bits_per_token": self.prior_bits,
            "share": self.share,
            "tokens": self.tokens,
            "method": INFORMATION_METHOD,
        }


def information_estimate(
    inverter: Inverter, embeds: Any, attention_mask: Any, input_ids: Any, scored: Any, unigram: Any
) -> InformationEstimate:
    """:class:`InformationEstimate` of ``inverter`` on ``embeds`` over the ``scored`` positions
    (a boolean mask: real, non-special tokens); ``unigram``: the public token probabilities."""
    found = inverter.true_log_probabilities(embeds, attention_mask, input_ids)[scored]
    ids = np.asarray(input_ids)[scored]
    prior = -np.log2(np.asarray(unigram)[ids]).mean() if ids.size else 0.0
    posterior = -(found / math.log(2)).mean() if ids.size else 0.0
    return InformationEstimate(float(prior - posterior), float(prior), int(ids.size))


class Adversary:
    """An inverter trained alongside a transform: the privacy term of its training.

    Before each of the transform's steps, :meth:`learn` trains the inverter for ``steps`` steps
    on fresh obfuscations of the batch by the transform as it is now; :meth:`exposure` then
    scores, differentiably in the obfuscated embeddings, how surely it names the true tokens.
    It starts as the identity (the nearest-neighbour attack) and follows the transform as it
    changes, so the transform cannot hide from one fixed attack only.

    >>> ADVERSARY_STEPS
    2
    """

    def __init__(
        self,
        model: FrozenModel,
        *,
        steps: int = ADVERSARY_STEPS,
        learning_rate: float = 1e-3,
        negatives: int = 4096,
        seed: int | None = None,
    ) -> None:
        torch = require_torch()
        if steps < 1 or negatives < 0 or not learning_rate > 0:
            raise InputError(
                f"adversary steps={steps}, negatives={negatives}, learning_rate="
                f"{learning_rate}: need steps >= 1, negatives >= 0 and learning_rate > 0"
            )
        self.inverter = Inverter(model, InverterConfig(int(model.table.shape[1])), seed=seed)
        self.steps = steps
        self.negatives = negatives
        self.optimizer = torch.optim.Adam(self.inverter.network.parameters(), lr=learning_rate)

    def learn(self, draw: Callable[[], Any], batch: Batch, generator: Any) -> None:
        """``steps`` updates, each on a fresh ``draw()`` of the batch's obfuscation."""
        torch = require_torch()
        self.inverter.network.train()
        for _ in range(self.steps):
            with torch.no_grad():
                sent = draw()
            loss = -self.inverter.log_likelihood(sent, batch, generator, self.negatives)[0].mean()
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()

    def exposure(self, sent: Any, batch: Batch, generator: Any) -> Any:
        """How exposed the true tokens are, in [0, 1]: the mean of ``log(1 - (1 - f) p)`` over
        ``log f``, ``p`` the inverter's probability of each true token and ``f``
        :data:`EXPOSURE_FLOOR`; 1 when it is sure of every token, 0 when it gives them none.

        Not the mean log-probability: that one saturates where it matters (its gradient
        vanishes as ``p`` nears 1, so a transform the inverter reads surely is not pushed to
        hide; at weight 0.25 the inverter kept reading 99.8% of the tokens), and it pushes
        hardest on the tokens already hidden."""
        torch = require_torch()
        found, _ = self.inverter.log_likelihood(sent, batch, generator, self.negatives)
        kept = torch.log1p(-(1 - EXPOSURE_FLOOR) * found.exp())
        return (kept / math.log(EXPOSURE_FLOOR)).mean()


def inversion_attack(
    model: FrozenModel, inverter: Inverter, embeds: Any, input_ids: Any, attention_mask: Any
) -> TokenRecovery:
    """Read tokens back with a trained ``inverter`` and score them (special tokens excluded)."""
    if inverter.fingerprint != model.fingerprint:
        raise InputError(
            f"this inverter was trained for the model with embedding table "
            f"{inverter.fingerprint[:16]}…, not {model.fingerprint[:16]}…; train it for this model"
        )
    guessed = inverter.tokens(embeds, attention_mask)
    return recovery(model, guessed, input_ids, attention_mask, ATTACK_NAME)
