"""A learned inversion attack: a network trained to read tokens back from obfuscated embeddings.

The attacker holds the released transform, so it can obfuscate **public** text as often as it
likes and learn the way back: :func:`train_inverter` samples fresh obfuscations of public texts
(never the evaluated ones) and trains a small network over the obfuscated sequence, a residual
per-position MLP plus one transformer layer for context, whose output is scored against the
model's embedding table by cosine (tied to the table, so tokens never seen in the public text
can still be named).  The network starts as the identity, so before any training it is exactly
the nearest-neighbour attack; training can only teach it the obfuscation's way back.
:func:`inversion_attack` scores it on held-out embeddings as a
:class:`~safeshare.obfuscate.attacks.TokenRecovery` with a Wilson interval.

>>> config = InverterConfig(dim=384)
>>> config.hidden, config.heads
(256, 4)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from safeshare._progress import Progress, no_progress
from safeshare.errors import InputError
from safeshare.obfuscate.attacks import TokenRecovery, recovery
from safeshare.obfuscate.model import FrozenModel, require_torch
from safeshare.obfuscate.transform import torch_generator

ATTACK_NAME = "learned inversion network"

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

    def tokens(self, embeds: Any, attention_mask: Any, *, chunk: int = 16) -> Any:
        """The most likely token id at every position of ``embeds`` ``(n, length, dim)``."""
        torch = require_torch()
        self.network.eval()
        with torch.no_grad():
            parts = [
                self.network(e, m).argmax(dim=-1)
                for e, m in zip(embeds.split(chunk), attention_mask.split(chunk), strict=True)
            ]
        return torch.cat(parts).numpy()


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
    30k tokens costs about six times as much CPU a step).
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
    batches = [
        model.tokenize(texts[start : start + batch_size])
        for start in range(0, len(texts), batch_size)
    ]
    optimizer = torch.optim.Adam(inverter.network.parameters(), lr=learning_rate)
    vocabulary = int(model.table.shape[0])
    order = torch.randperm(len(batches), generator=order_rng)
    for step in range(steps):
        batch = batches[int(order[step % len(batches)])]
        mask = batch.attention_mask
        with torch.no_grad():
            sent = obfuscate(model.embed_tokens(batch.input_ids), mask, generator)
        real = mask.bool()
        truth = batch.input_ids[real]
        drawn = torch.randint(vocabulary, (negatives,), generator=generator)
        candidates, target = torch.unique(torch.cat([truth, drawn]), return_inverse=True)
        inverter.network.train()
        logits = inverter.network(sent, mask, candidates)[real]
        loss = torch.nn.functional.cross_entropy(logits, target[: truth.shape[0]])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        report("training the inversion attack", (step + 1) / steps)
    inverter.network.eval()
    return inverter


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
